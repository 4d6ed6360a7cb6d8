"""Adam on the 1-D loss ``L = |x|^n / n`` linearised about its period-2 oscillating state.

The stationary map (bias corrections have decayed), with ``a = 1 - beta1``, ``c = 1 - beta2``,
``g(x) = sign(x) |x|^(n-1)``::

    m' = (1 - a) m + a g(x),   v' = (1 - c) v + c g(x)^2,   x' = x - eta m' / (sqrt(v') + eps).

The map commutes with ``S = diag(-1, -1, 1)`` on ``(x, m, v)``, so a period-2 oscillation
``x = +A, -A, +A, ...`` is a fixed point of ``S F`` and its Floquet multipliers (over two steps)
are the squares of the eigenvalues of ``S J`` at that point. The eigenvalues solve a cubic whose
coefficients depend only on ``a``, ``c``, ``n`` and the eps share ``r = eps / (sqrt(V) + eps)``
of the denominator on the oscillation: the step size and eps enter through ``r`` and the
amplitude ``A = eta a (1 - r) / (2 (2 - a))``.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, is_zero, latex

NAME = "adam_stability"


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    x, m, v, eta, eps = sp.symbols("x m v eta epsilon", positive=True)
    a, c, n, r, lam = sp.symbols("a c n r lambda", positive=True)
    A, G, h = sp.symbols("A G h", positive=True)
    gf = sp.Function("g")
    m1 = (1 - a) * m + a * gf(x)
    v1 = (1 - c) * v + c * gf(x) ** 2
    x1 = x - eta * m1 / (sp.sqrt(v1) + eps)
    SF = sp.Matrix([-x1, -m1, v1])
    # the oscillating state: S F(z) = z with x = A, g(A) = G, v = G^2
    on = {gf(x): G, x: A, v: G**2}
    M_star = sp.solve(sp.Eq(SF[1].subs(on), m), m)[0]
    amp_eq = sp.simplify(SF[0].subs(on).subs(m, M_star) - A)
    A_star = sp.solve(sp.Eq(amp_eq, 0), A)[0]
    J = SF.jacobian(sp.Matrix([x, m, v])).subs(sp.Derivative(gf(x), x), h).subs(on)
    J = J.subs(m, M_star)
    # eta from the amplitude condition, eps from its share r, h = g'(A) = (n - 1) G / A
    eta_of = sp.solve(sp.Eq(A_star, A), eta)[0]
    J = sp.simplify(J.subs(eta, eta_of).subs(eps, r * G / (1 - r)).subs(h, (n - 1) * G / A))
    poly = sp.Poly(sp.expand(sp.simplify((lam * sp.eye(3) - J).det())), lam)
    p3, p2, p1, p0 = (sp.expand(cf) for cf in poly.all_coeffs())
    P = lam**3 + p2 * lam**2 + p1 * lam + p0
    # small c on the quadratic: lambda = 1 + s mu1 + s^2 mu2 with c = gamma s^2
    s, gam, mu1, mu2 = sp.symbols("s gamma mu1 mu2", positive=True)
    Q = sp.expand(P.subs(n, 2).subs(lam, 1 + s * mu1 + s**2 * mu2).subs(c, gam * s**2))
    q2 = sp.Symbol("q2")
    omega2 = sp.factor(-sp.solve(Q.coeff(s, 2).subs(mu1**2, q2), q2)[0]).subs(gam, c)
    mu1_val = sp.I * sp.sqrt(omega2.subs(c, gam))
    delta = sp.factor(sp.solve(sp.expand(Q.coeff(s, 3).subs(mu1, mu1_val)), mu2)[0]).subs(gam, c)
    return dict(
        a=a,
        c=c,
        n=n,
        r=r,
        lam=lam,
        eta=eta,
        eps=eps,
        A=A,
        G=G,
        M_star=M_star,
        A_star=A_star,
        J=J,
        P=P,
        p3=p3,
        p2=p2,
        p1=p1,
        p0=p0,
        omega2=sp.factor(omega2),
        delta=delta,
        SF=SF,
        m1=m1,
        v1=v1,
        x1=x1,
    )


def coefficients_text() -> dict:
    """The cubic's coefficients as sympy expressions (keys ``p2``, ``p1``, ``p0``)."""
    d = derive()
    return {k: d[k] for k in ("p2", "p1", "p0")}


def verify() -> None:
    import sympy as sp

    from ..adam import cubic_coefficients

    d = derive()
    a, c, n, r, lam = d["a"], d["c"], d["n"], d["r"], d["lam"]
    check(d["p3"] == 1, "the characteristic polynomial must be monic")
    check(is_zero(d["M_star"] + a * d["G"] / (2 - a)), "oscillation momentum M = -a G / (2 - a)")
    eta, eps, G = d["eta"], d["eps"], d["G"]
    check(
        is_zero(d["A_star"] - eta * a * G / (2 * (2 - a) * (G + eps))),
        "amplitude A = eta a G / (2 (2 - a) (G + eps)) = eta a (1 - r) / (2 (2 - a))",
    )
    ours = cubic_coefficients(a, c, n, r)
    for got, want, name in zip(ours, (d["p2"], d["p1"], d["p0"]), ("p2", "p1", "p0")):
        check(is_zero(sp.expand(got - want)), f"gaugedyn.adam cubic coefficient {name} differs")
    P = d["P"]
    check(
        is_zero(P.subs(lam, 1) - 2 * c * (2 - a) * (1 - (n - 1) * r)),
        "P(1) = 2 c (2 - a) (1 - (n - 1) r)",
    )
    check(
        is_zero(P.subs(lam, -1) + 2 * (n - 1) * (4 - 2 * a - 2 * c + a * c * r)),
        "P(-1) = -2 (n - 1) (4 - 2a - 2c + a c r)",
    )
    frozen = (lam - 1) * (lam**2 - (2 - a) * (2 * n - 3) * lam + (1 - a))
    check(is_zero(P.subs(c, 0) - frozen), "c = 0 factorises into the frozen v and the (x, m) pair")
    check(is_zero(d["omega2"] - 2 * c * (2 - a) * (1 - r) / a), "omega^2 = 2 c (2 - a)(1 - r) / a")
    want_delta = c * ((1 - r) * (4 - 8 * a) + a**2 * (1 - 2 * r)) / (2 * a**2)
    check(is_zero(d["delta"] - want_delta), "delta = c ((1-r)(4-8a) + a^2 (1-2r)) / (2 a^2)")


def _equations(d: dict, ratio) -> list[tuple[str, str]]:
    """The document's ``(title, LaTeX)`` results from `derive()`'s expressions."""
    return [
        (
            "Oscillating state (period 2, fixed point of $S F$)",
            r"A = "
            + latex(d["A_star"])
            + r",\quad M = "
            + latex(d["M_star"])
            + r",\quad V = G^2,\quad G = A^{n-1}",
        ),
        (
            r"Amplitude through the $\epsilon$ share $r$",
            r"A = \frac{\eta\, a\, (1 - r)}{2 (2 - a)},\quad "
            r"r = \frac{\epsilon}{G + \epsilon}",
        ),
        ("Characteristic polynomial of $S J$", r"P(\lambda) = " + latex(d["P"])),
        (
            "Real crossings",
            r"P(1) = 2 c (2 - a)\,(1 - (n - 1) r),\qquad "
            r"P(-1) = -2 (n - 1)(4 - 2a - 2c + a c r)",
        ),
        (
            "Frozen second moment ($c = 0$)",
            r"P = (\lambda - 1)\big(\lambda^2 - (2 - a)(2n - 3)\lambda + 1 - a\big)",
        ),
        (
            r"Quadratic ($n = 2$), small $c$: leading pair $1 + \delta \pm i \omega$",
            r"\omega^2 = " + latex(d["omega2"]) + r",\quad \delta = " + latex(d["delta"]),
        ),
        (
            r"Quadratic, $\epsilon \to 0$: spiral ratio",
            r"\frac{\delta}{\omega} \simeq "
            + latex(ratio)
            + r"\,\frac{1 - 2a + a^2/4}{\sqrt{1 - a/2}}",
        ),
        (
            "Theory curve drawn on the spike maps (growth by $e$ per slow turn, $r = 0$)",
            r"2\pi\,\frac{\delta}{\omega} = 1 \;\Rightarrow\; 1 - \beta_2 \simeq "
            r"\frac{(1 - \beta_1)^3}{4\pi^2}",
        ),
    ]


def build() -> str:
    import sympy as sp

    d = derive()
    a, c = d["a"], d["c"]
    ratio = sp.sqrt(c / a**3)
    return document(
        "Adam on |x|^n / n: the period-2 oscillating state and its Floquet multipliers",
        r"Adam on the 1-D loss $L = |x|^n / n$ does not settle at the minimum for "
        r"$\epsilon \to 0$: the normalised step keeps the iterate oscillating at the scale of the "
        "step size. Its oscillating state is a period-2 orbit $x = +A, -A$ with $v = g(A)^2$; "
        r"linearising the exact map about it gives a cubic for the eigenvalues $\lambda$ of "
        r"$S J$ (the multipliers over two steps are $\lambda^2$). The cubic depends on "
        r"$a = 1 - \beta_1$, $c = 1 - \beta_2$, $n$ and the $\epsilon$ share "
        r"$r = \epsilon / (\sqrt{V} + \epsilon)$ only; the step size sets the amplitude. The "
        r"stability boundary is where the largest $|\lambda|$ crosses 1 (Schur-Cohn); on the "
        r"quadratic at small $c$ the leading pair is $1 + \delta \pm i \omega$, whose spiral "
        r"ratio $\delta / \omega$ depends on $c / a^3$ alone when $r = 0$: the level curves of "
        r"the instability are cubic in the $(1 - \beta_1, 1 - \beta_2)$ plane.",
        _equations(d, ratio),
        [
            r"Late times: the bias corrections $1/(1 - \beta^t)$ have decayed to 1.",
            "The oscillation is symmetric (period 2, $x$ alternating $+A, -A$); asymmetric orbits "
            "are not linearised here.",
            "The stability boundary is the Schur-Cohn condition on the cubic: $P(1) > 0$, "
            "$P(-1) < 0$, $|p_0| < 1$ and $1 - p_0^2 > |p_0 p_2 - p_1|$.",
            r"Multipliers of the two-step map are $\lambda^2$; $|\lambda| < 1$ is stability.",
        ],
        [
            "Write the map $F$ on $(x, m, v)$; with $g$ odd, $F(S z) = S F(z)$, so the period-2 "
            "orbit is a fixed point of $S F$ and the two-step Jacobian is $(S J)^2$.",
            "Solve the $m$-component of $S F(z) = z$ for $M$, then the $x$-component for $A$ "
            "(sympy solve).",
            "Differentiate $S F$ with $g'(A) = h = (n - 1) G / A$; eliminate $\\eta$ by the "
            r"amplitude condition and $\epsilon$ by its share $r$; the determinant "
            r"$\det(\lambda - S J)$ is the cubic.",
            "Evaluate $P$ at $+1$ and $-1$, and at $c = 0$ (factorises); for $n = 2$ set "
            r"$c = \gamma s^2$, $\lambda = 1 + s \mu_1 + s^2 \mu_2$ and solve order by order in $s$ "
            r"for $\mu_1^2 = -\omega^2$ and $\mu_2 = \delta$.",
            r"At $r = 0$ and small $c$ the leading pair grows when $\delta > 0$, i.e. "
            r"$4 - 8a + a^2 > 0$, $a < 4 - 2 \sqrt{3} = 0.536$ ($\beta_1 > 0.464$); numerically the "
            r"multipliers exceed 1 over the whole scanned plane $1 - \beta_1 \leq 0.63$ (tests), "
            r"and its growth per slow turn $2 \pi \delta / \omega$ is a function of $c / a^3$; a "
            r"share $r$ of $\epsilon$ near 1 turns $\delta$ negative and creates a stable region "
            "whose edge the Schur-Cohn test locates.",
        ],
        [
            "`verify()` re-derives the orbit and the cubic and checks every closed form above, "
            "and that `gaugedyn.adam.cubic_coefficients` (the numpy form used by the experiments) "
            "equals the sympy coefficients identically.",
            "tests/test_adam_stability.py checks the multipliers against a finite-difference "
            "Jacobian of the exact numpy map and against the growth rate of a perturbation of "
            "the simulated orbit; the spike_boundary experiment's check locates the Schur-Cohn "
            "boundary on the quadratic by bisection on the simulated growth rate and compares.",
        ],
    )
