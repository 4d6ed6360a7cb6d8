"""Gradient flow of a two-layer network with a positively homogeneous activation; the gauge.

``f(x) = sum_i a_i sigma(w_i . x)`` with ``sigma(c z) = c sigma(z)`` for ``c > 0``. For any loss
``L = E[l(f(x), y)]`` the gradient is an average of per-sample terms ``e = dl/df``:
``dL/da_i = E[e sigma(z_i)]``, ``dL/dw_i = E[e a_i sigma'(z_i) x]``, ``z_i = w_i . x``.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, latex

NAME = "homogeneous_flow"
D = 3


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    sigma = sp.Function("sigma")
    lam = sp.Symbol("lambda", positive=True)
    z = sp.Symbol("z", real=True)
    a, e, eta, ga = sp.symbols("a e eta g_a", real=True)
    w = sp.Matrix(sp.symbols(f"w1:{D + 1}", real=True))
    x = sp.Matrix(sp.symbols(f"x1:{D + 1}", real=True))
    gw = sp.Matrix(sp.symbols(f"g_w1:{D + 1}", real=True))
    # Euler's identity from homogeneity: d/dlambda sigma(lambda z) = d/dlambda (lambda sigma(z)) at 1
    euler = sp.Eq(sp.diff(sigma(lam * z), lam).subs(lam, 1).doit(), sp.diff(lam * sigma(z), lam))
    dsig = sp.solve(euler, sp.Derivative(sigma(z), z))[0]

    def apply_euler(expr):
        def is_dsig(s):
            return (
                isinstance(s, sp.Subs)
                and s.expr.func == sp.Derivative
                and s.expr.expr.func == sigma
            )

        return expr.replace(is_dsig, lambda s: dsig.subs(z, s.point[0]))

    f = a * sigma((w.T * x)[0])
    grad_a = e * sp.diff(f, a)  # per-sample gradient, e = dl/df
    grad_w = e * sp.Matrix([sp.diff(f, wk) for wk in w])
    ddelta_dt = 2 * a * (-grad_a) - 2 * (w.T * (-grad_w))[0]  # delta = a^2 - |w|^2
    flow_rate = sp.simplify(apply_euler(ddelta_dt))
    balance = sp.simplify(apply_euler(a * grad_a - (w.T * grad_w)[0]))
    # one GD step with generic gradients (g_a, g_w)
    delta = a**2 - (w.T * w)[0]
    a1, w1 = a - eta * ga, w - eta * gw
    step = sp.expand(a1**2 - (w1.T * w1)[0] - delta)
    first_order = sp.expand(-2 * eta * (a * ga - (w.T * gw)[0]))
    exact_step = sp.expand(step - first_order)
    return dict(
        euler=euler,
        dsig=dsig,
        z=z,
        sigma=sigma,
        ddelta_dt=ddelta_dt,
        flow_rate=flow_rate,
        balance=balance,
        step=step,
        first_order=first_order,
        exact_step=exact_step,
        symbols=dict(a=a, eta=eta, g_a=ga, g_w=gw, w=w, e=e),
    )


def verify() -> None:
    import sympy as sp

    d = derive()
    s = d["symbols"]
    check(d["flow_rate"] == 0, f"d delta/dt should vanish under the flow, got {d['flow_rate']}")
    check(d["balance"] == 0, "a dL/da - w . dL/dw should vanish (Euler)")
    expected = s["eta"] ** 2 * (s["g_a"] ** 2 - (s["g_w"].T * s["g_w"])[0])
    check(
        sp.expand(d["exact_step"] - expected) == 0, "one-step drift must be eta^2 (g_a^2 - |g_w|^2)"
    )
    check(
        sp.simplify(d["dsig"] - d["sigma"](d["z"]) / d["z"]) == 0, "Euler: sigma'(z) = sigma(z)/z"
    )


def build() -> str:
    d = derive()
    return document(
        "Homogeneous two-layer gradient flow and the conservation of delta",
        r"For a positively homogeneous activation (ReLU, linear) the rescaling $(a_i, w_i) \to "
        r"(a_i / c, c\, w_i)$ leaves the network unchanged. Gradient flow conserves each "
        r"$\delta_i = a_i^2 - \lVert w_i \rVert^2$ (Du, Hu & Lee 2018); one gradient-descent step "
        r"changes it by exactly $\eta^2 (g_a^2 - \lVert g_w \rVert^2)$.",
        [
            (
                r"Euler's identity (from $\sigma(\lambda z) = \lambda \sigma(z)$)",
                latex(d["euler"]),
            ),
            (
                r"Per-sample rate of $\delta$ under the flow, before Euler's identity",
                r"\frac{d\delta}{dt}\Big|_{x} = " + latex(d["ddelta_dt"]),
            ),
            ("After Euler's identity", r"\frac{d\delta}{dt} = " + latex(d["flow_rate"])),
            (
                "Balance identity (for every sample, hence for every loss)",
                r"a\,\partial_a L - w\cdot\nabla_w L = 0",
            ),
            (
                r"One gradient-descent step, $a' = a - \eta g_a$, $w' = w - \eta g_w$ (exact)",
                r"\delta' - \delta = "
                + latex(d["first_order"])
                + " + "
                + latex(d["exact_step"])
                + r" \overset{\text{balance}}{=} \eta^{2}\left(g_a^{2} - |g_w|^{2}\right)",
            ),
        ],
        [
            r"$\sigma$ positively homogeneous of degree 1; differentiable at $z \neq 0$ (the kink "
            "of ReLU has measure zero under a Gaussian input).",
            f"Shown for $D = {D}$ input components; nothing depends on $D$.",
            r"Loss $L = \mathbb{E}[\ell(f(x), y)]$ for any per-sample loss $\ell$; "
            r"$e = \partial \ell / \partial f$ at the sample.",
        ],
        [
            r"Differentiate $\sigma(\lambda z) = \lambda \sigma(z)$ in $\lambda$ at $\lambda = 1$: "
            r"$z \sigma'(z) = \sigma(z)$.",
            r"The gradients are averages of $e\, \sigma(z)$ and $e\, a\, \sigma'(z)\, x$; "
            r"$d\delta/dt = -2 a\, \partial_a L + 2 w \cdot \nabla_w L$ is the average of "
            r"$2 a e (z \sigma'(z) - \sigma(z)) = 0$.",
            r"For GD, expand $(a - \eta g_a)^2 - \lVert w - \eta g_w \rVert^2 - \delta$: the "
            r"$O(\eta)$ term is $-2 \eta (a g_a - w \cdot g_w)$, zero by the balance identity, "
            r"leaving $\eta^2 (g_a^2 - \lVert g_w \rVert^2)$.",
        ],
        [
            "`verify()` checks with sympy that the flow rate simplifies to 0 after Euler's identity, "
            r"that the balance identity holds, and that the exact one-step change minus the "
            r"$O(\eta)$ term equals $\eta^2 (g_a^2 - \lVert g_w \rVert^2)$.",
            "tests/test_symbolic_flow.py checks the conservation law numerically on random states "
            "of the population flow, to 1e-10.",
        ],
    )
