"""Reaction-transport coordinates of one homogeneous neuron: rho = a |w|, u = w / |w|.

With ``L(a, w) = Lt(rho(a, w), u(w))`` and the chain rule ``grad_(a,w) L = J^T (dLt/drho, grad_u Lt)``,
``J = d(rho, u)/d(a, w)``, gradient flow maps to ``d(rho, u)/dt = -J J^T (dLt/drho, grad_u Lt)``.
sympy computes ``J J^T`` and reads off the mobilities.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, is_zero, latex

NAME = "reaction_transport"
D = 3


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    a = sp.Symbol("a", real=True)
    w = sp.Matrix(sp.symbols(f"w1:{D + 1}", real=True))
    G_rho = sp.Symbol("G_rho", real=True)
    G_u = sp.Matrix(sp.symbols(f"G_u1:{D + 1}", real=True))
    delta, rho = sp.symbols("delta rho", real=True)
    nw = sp.sqrt((w.T * w)[0])
    rho_aw = a * nw
    u_aw = w / nw
    coords = sp.Matrix([rho_aw, *u_aw])
    params = sp.Matrix([a, *w])
    J = coords.jacobian(params)
    JJt = (J * J.T).applyfunc(sp.simplify)
    G = sp.Matrix([G_rho, *G_u])
    grad = J.T * G
    velocity = -(JJt * G)
    P = sp.eye(D) - u_aw * u_aw.T
    mu_R_aw = sp.simplify(JJt[0, 0])
    mu_T_aw = sp.simplify(1 / (w.T * w)[0])
    dissipation = sp.expand((grad.T * grad)[0])
    split = mu_R_aw * G_rho**2 + mu_T_aw * ((P * G_u).T * (P * G_u))[0]
    # mobilities as functions of (delta, rho): solve a^2 - |w|^2 = delta, a |w| = rho for |w|^2
    n2, A2 = sp.symbols("n2 A2", positive=True)
    sols = sp.solve([A2 - n2 - delta, A2 * n2 - rho**2], [A2, n2], dict=True)
    n2_val = next(s[n2] for s in sols if sp.simplify(s[n2].subs({delta: 1, rho: 1})) > 0)
    A2_val = n2_val + delta
    mu_R = sp.simplify(sp.sqrt(sp.expand((A2_val + n2_val) ** 2)))
    mu_T = sp.simplify(1 / n2_val)
    ratio = sp.simplify(mu_T / mu_T.subs(delta, -delta))
    big = sp.Symbol("Delta", positive=True)
    ratio_series = sp.series(ratio.subs(delta, big), big, sp.oo, 2).removeO()
    return dict(
        symbols=dict(a=a, w=w, G_rho=G_rho, G_u=G_u, delta=delta, rho=rho, Delta=big),
        J=J,
        JJt=JJt,
        P=P,
        velocity=velocity,
        mu_R_aw=mu_R_aw,
        mu_T_aw=mu_T_aw,
        dissipation=dissipation,
        split=split,
        mu_R=mu_R,
        mu_T=mu_T,
        ratio=ratio,
        ratio_series=ratio_series,
        nw=nw,
    )


def mobilities():
    r"""Numpy callables of the two mobilities, lambdified from the derived expressions.

    Returns
    -------
    tuple of callable
        ``(mu_R, mu_T)``, each taking ``(delta, rho)``: the reaction mobility
        $\mu_R = a^2 + \lVert w \rVert^2$ and the transport mobility
        $\mu_T = 1/\lVert w \rVert^2$ of a neuron with gauge $\delta = a^2 - \lVert w \rVert^2$
        and coefficient $\rho = a \lVert w \rVert$.
    """
    import sympy as sp

    d = derive()
    s = d["symbols"]
    args = (s["delta"], s["rho"])
    return sp.lambdify(args, d["mu_R"], "numpy"), sp.lambdify(args, d["mu_T"], "numpy")


def verify() -> None:
    import sympy as sp

    d = derive()
    s = d["symbols"]
    a, w = s["a"], s["w"]
    delta, rho = s["delta"], s["rho"]
    JJt, P = d["JJt"], d["P"]
    check(is_zero(JJt[0, 0] - (a**2 + (w.T * w)[0])), "reaction mobility must be a^2 + |w|^2")
    for k in range(1, D + 1):
        check(is_zero(JJt[0, k]), "reaction and transport must decouple (J J^T off-diagonal)")
    check(
        all(
            is_zero(JJt[1 + i, 1 + j] - P[i, j] / (w.T * w)[0]) for i in range(D) for j in range(D)
        ),
        "transport block of J J^T must be P / |w|^2",
    )
    check(is_zero(d["dissipation"] - d["split"]), "dissipation split -dL/dt = reaction + transport")
    check(is_zero(d["mu_R"] - sp.sqrt(delta**2 + 4 * rho**2)), "mu_R = sqrt(delta^2 + 4 rho^2)")
    check(
        is_zero(d["mu_T"] - 2 / (sp.sqrt(delta**2 + 4 * rho**2) - delta)),
        "mu_T = 2 / (sqrt(delta^2 + 4 rho^2) - delta)",
    )
    sub = {delta: a**2 - (w.T * w)[0], rho: a * d["nw"]}
    check(  # both sides are positive, compare squares
        sp.expand(d["mu_R"].subs(sub) ** 2 - d["mu_R_aw"] ** 2) == 0,
        "mu_R(delta, rho) must equal a^2 + |w|^2",
    )
    check(is_zero(d["mu_R"] - d["mu_R"].subs(delta, -delta)), "opposite gauges: equal mu_R")
    root = sp.sqrt(delta**2 + 4 * rho**2)
    check(is_zero(d["ratio"] - (root + delta) / (root - delta)), "transport-mobility ratio")
    big = s["Delta"]
    check(is_zero(d["ratio_series"] - (big**2 / rho**2 + 2)), "ratio ~ delta^2 / rho^2 + 2")


def build() -> str:
    import sympy as sp

    d = derive()
    s = d["symbols"]
    G_rho = s["G_rho"]
    return document(
        "Reaction-transport coordinates, mobilities and the dissipation split",
        r"For one neuron of a homogeneous two-layer network, $\rho = a \lVert w \rVert$ (its "
        r"signed coefficient) and $u = w / \lVert w \rVert$ (its direction) carry the function; "
        r"$\delta = a^2 - \lVert w \rVert^2$ is the gauge. Gradient flow in $(a, w)$ is exactly a "
        r"reaction flow for $\rho$ and a transport flow on the sphere for $u$, with mobilities "
        "that depend on the gauge (the per-neuron analogue of the Wasserstein-Fisher-Rao form of "
        "Chizat & Bach 2018).",
        [
            (
                r"Mobility matrix $J J^\top$, $J = \partial(\rho, u)/\partial(a, w)$ (first row)",
                r"(J J^\top)_{\rho\,\cdot} = " + latex(d["JJt"][0, :]),
            ),
            (
                "Reaction",
                r"\dot\rho = -\mu_R\,\partial_\rho\tilde L,\quad \mu_R = a^2 + |w|^2 = "
                + latex(d["mu_R"]),
            ),
            (
                "Transport",
                r"\dot u = -\mu_T\,P_u\nabla_u\tilde L,\quad \mu_T = \frac{1}{|w|^2} = "
                + latex(d["mu_T"])
                + r",\quad P_u = I - u u^\top",
            ),
            (
                "Dissipation split",
                r"-\frac{dL}{dt} = |\nabla_{(a,w)}L|^2 = \mu_R\,(\partial_\rho\tilde L)^2 + "
                r"\mu_T\,|P_u\nabla_u\tilde L|^2",
            ),
            (
                r"Opposite gauges at one function: $\mu_T(\delta) / \mu_T(-\delta)$",
                latex(d["ratio"])
                + r"\;\sim\; "
                + latex(d["ratio_series"].subs(s["Delta"], sp.Symbol(r"\delta")))
                + r"\quad (\delta\to\infty)",
            ),
            ("Reaction mobility is gauge-even", r"\mu_R(\delta,\rho) = \mu_R(-\delta,\rho)"),
        ],
        [
            r"Homogeneous activation, so $L(a, w) = \tilde L(a \lVert w \rVert, w / \lVert w "
            r"\rVert)$; $\lVert w \rVert > 0$.",
            rf"Shown for $D = {D}$; $J J^\top$ has the same block form in every dimension.",
            r"$\nabla_u \tilde L$ is any extension of the gradient off the sphere; only "
            r"$P_u \nabla_u \tilde L$ enters.",
            rf"Symbols: $G_\rho = \partial \tilde L / \partial \rho$ (${latex(G_rho)}$), "
            r"$G_u = \nabla_u \tilde L$.",
        ],
        [
            r"sympy forms $J = \partial(\rho, u)/\partial(a, w)$ and $J J^\top$; gradient flow "
            r"$d(a, w)/dt = -J^\top G$ gives $d(\rho, u)/dt = -J J^\top G$, "
            r"$G = (\partial \tilde L / \partial \rho, \nabla_u \tilde L)$.",
            r"$J J^\top = \operatorname{diag}(a^2 + \lVert w \rVert^2, P_u / \lVert w \rVert^2)$: "
            "reaction and transport decouple.",
            r"$-dL/dt = G^\top J J^\top G$, with $P_u$ idempotent, is the dissipation split.",
            r"Solving $a^2 - \lVert w \rVert^2 = \delta$, $a^2 \lVert w \rVert^2 = \rho^2$ for the "
            r"positive root $\lVert w \rVert^2 = (\sqrt{\delta^2 + 4 \rho^2} - \delta)/2$ gives "
            r"both mobilities in $(\delta, \rho)$.",
            "The ratio of transport mobilities of opposite gauges and its large-$\\delta$ series "
            "follow by substitution.",
        ],
        [
            "`verify()` checks every identity with sympy (differences simplify to zero).",
            "tests/test_symbolic_flow.py checks the reaction and transport velocities and the "
            "dissipation split numerically on random states of the population loss, to 1e-10.",
        ],
    )
