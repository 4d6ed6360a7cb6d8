"""Continuous-time Adam: the normalized update m / sqrt(v) to second order in the memory times.

``dm/dt = (g - m)/tau1``, ``dv/dt = (g^2 - v)/tau2``. On the slow manifold (after transients of
duration ~tau) ``m = g - tau1 m'`` and ``v = g^2 - tau2 v'``; iterating gives the series
``m = sum_k (-tau1 d/dt)^k g``, ``v = sum_k (-tau2 d/dt)^k g^2``.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, is_zero, latex

NAME = "adam_series"
ORDER = 2


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    t = sp.Symbol("t", real=True)
    tau1, tau2, eps = sp.symbols("tau1 tau2 epsilon", positive=True)
    g = sp.Function("g", positive=True)(t)

    def slow(source, tau, order):
        m = source
        for _ in range(order):
            m = source - tau * sp.diff(m, t)
        return sp.expand(m)

    def truncate(expr, order):
        e = sp.expand(expr.subs({tau1: eps * tau1, tau2: eps * tau2}))
        return sp.expand(sum(e.coeff(eps, k) for k in range(order + 1)))

    m = truncate(slow(g, tau1, ORDER + 1), ORDER + 1)
    v = truncate(slow(g**2, tau2, ORDER + 1), ORDER + 1)
    # residuals of the moment equations: O(tau^(ORDER + 2)) on the truncated series
    res_m = truncate(sp.expand(tau1 * sp.diff(m, t) - (g - m)), ORDER + 1)
    res_v = truncate(sp.expand(tau2 * sp.diff(v, t) - (g**2 - v)), ORDER + 1)
    u = (m / sp.sqrt(v)).subs({tau1: eps * tau1, tau2: eps * tau2})
    ser = sp.expand(sp.series(u, eps, 0, ORDER + 1).removeO().subs(eps, 1))
    g1, g2 = sp.diff(g, t), sp.diff(g, t, 2)
    r, k = sp.symbols("r k", real=True)  # r = g'/g, k = g''/g
    ser_rk = sp.expand(sp.simplify(ser.subs(g2, k * g).subs(g1, r * g)))
    lag = ser_rk.coeff(r, 1).coeff(k, 0) * r
    curvature = ser_rk.coeff(k, 1) * k
    nonlinear = ser_rk.coeff(r, 2) * r**2
    sign = ser_rk.subs({r: 0, k: 0})
    return dict(
        t=t,
        tau1=tau1,
        tau2=tau2,
        g=g,
        r=r,
        k=k,
        m=m,
        v=v,
        res_m=res_m,
        res_v=res_v,
        series=ser_rk,
        sign=sign,
        lag=sp.factor(lag),
        curvature=sp.factor(curvature),
        nonlinear=sp.factor(nonlinear),
    )


def terms():
    """Numpy callable ``(g, dg, ddg, tau1, tau2) -> dict`` of the series terms of m / sqrt(v).

    Keys ``sign``, ``lag``, ``curvature``, ``nonlinear``; valid where ``g`` keeps its sign over
    the memory window. ``sign(g) * (1 + lag + curvature + nonlinear)`` with ``r = g'/g``,
    ``k = g''/g``; the lag term equals ``(tau2 - tau1) g'/|g|`` after the sign factor.
    """
    import numpy as np
    import sympy as sp

    d = derive()
    args = (d["r"], d["k"], d["tau1"], d["tau2"])
    f = {key: sp.lambdify(args, d[key], "numpy") for key in ("lag", "curvature", "nonlinear")}

    def evaluate(g, dg, ddg, tau1, tau2):
        g, dg, ddg = (np.asarray(x, dtype=np.float64) for x in (g, dg, ddg))
        r, k = dg / g, ddg / g
        out = {key: np.sign(g) * fn(r, k, tau1, tau2) for key, fn in f.items()}
        out["sign"] = np.sign(g)
        return out

    return evaluate


def verify() -> None:
    import sympy as sp

    d = derive()
    tau1, tau2, r, k = d["tau1"], d["tau2"], d["r"], d["k"]
    check(d["sign"] == 1, "zeroth order must be sign(g) = 1 for g > 0")
    check(is_zero(d["lag"] - (tau2 - tau1) * r), "lag term must be (tau2 - tau1) g'/g")
    check(is_zero(d["lag"].subs(tau2, tau1)), "lag coefficient must vanish at tau1 = tau2")
    check(
        is_zero(d["curvature"] - (tau1**2 - tau2**2) * k), "curvature term (tau1^2 - tau2^2) g''/g"
    )
    check(
        is_zero(d["nonlinear"] - (tau2**2 / 2 - tau1 * tau2) * r**2),
        "nonlinear-ratio term (tau2^2/2 - tau1 tau2)(g'/g)^2",
    )
    check(
        is_zero(d["series"] - (d["sign"] + d["lag"] + d["curvature"] + d["nonlinear"])),
        "terms must sum to the series",
    )
    check(d["res_m"] == 0 and d["res_v"] == 0, "truncated m, v must solve the moment ODEs to order")
    tied = sp.simplify(d["series"].subs(tau2, tau1))
    check(is_zero(tied - (1 - tau1**2 * r**2 / 2)), "tied betas: 1 - tau^2 (g'/g)^2 / 2")


def build() -> str:
    import sympy as sp

    d = derive()
    g, t = d["g"], d["t"]
    gs = sp.Symbol("g")
    rep = {
        sp.diff(g, t, 3): sp.Symbol("g'''"),
        sp.diff(g, t, 2): sp.Symbol("g''"),
        sp.diff(g, t): sp.Symbol("g'"),
        g: gs,
    }

    def show(e):
        for old in (sp.diff(g, t, 3), sp.diff(g, t, 2), sp.diff(g, t), g):
            e = e.subs(old, rep[old])
        return latex(e)

    return document(
        "Continuous-time Adam: the series of m / sqrt(v) in the memory times",
        r"Adam's moments in continuous time follow $\dot m = (g - m)/\tau_1$, "
        r"$\dot v = (g^2 - v)/\tau_2$, $\tau_k = 1/(1 - \beta_k)$ steps. For a slowly varying "
        r"gradient that keeps its sign, the normalized update $u = m / \sqrt{v}$ is a series in "
        "the memory times; to second order it splits into a sign term, a magnitude-lag term with "
        r"coefficient $\tau_2 - \tau_1$, a curvature term and a nonlinear-ratio term. The lag "
        r"coefficient vanishes exactly when $\tau_1 = \tau_2$ (tied betas).",
        [
            ("First moment (slow manifold, to third order)", "m = " + show(d["m"])),
            ("Second moment (slow manifold, to third order)", "v = " + show(d["v"])),
            (
                "Normalized update, $r = g'/g$, $k = g''/g$",
                r"\frac{m}{\sqrt v} = \operatorname{sign}(g)\Big["
                + latex(d["series"])
                + r"\Big] + O(\tau^3)",
            ),
            ("Sign term", latex(d["sign"])),
            ("Magnitude-lag term", latex(d["lag"]) + r" \;=\; (\tau_2 - \tau_1)\,\frac{g'}{g}"),
            ("Curvature term", latex(d["curvature"])),
            ("Nonlinear-ratio term", latex(d["nonlinear"])),
            (
                r"Tied betas, $\tau_1 = \tau_2 = \tau$",
                r"\frac{m}{\sqrt v} = \operatorname{sign}(g)\Big["
                + latex(sp.simplify(d["series"].subs(d["tau2"], d["tau1"])))
                + r"\Big] + O(\tau^3)",
            ),
        ],
        [
            "$g$ smooth and of one sign over the memory window (no transition); shown for "
            r"$g > 0$, the general case multiplies by $\operatorname{sign}(g)$, so the lag term "
            r"reads $(\tau_2 - \tau_1)\, g'/|g|$.",
            r"Transients of the initial moments have decayed (times $\gg \tau_1, \tau_2$).",
            r"$\epsilon$ (`eps`) of `torch.optim.Adam` is neglected (it sits outside the root).",
        ],
        [
            r"The slow solution of $\tau \dot m = s - m$ is the fixed point of "
            r"$m \mapsto s - \tau \dot m$; iterating three times and keeping orders up to "
            r"$\tau^3$ gives $m$ ($s = g$) and $v$ ($s = g^2$).",
            r"Scale $\tau_k \to \varepsilon \tau_k$ and expand $m / \sqrt{v}$ to "
            r"$\varepsilon^2$.",
            "Substitute $g' = r g$, $g'' = k g$ and collect: order 0 is sign, order 1 the lag, "
            "order 2 splits into the $k$ term (curvature) and the $r^2$ term (nonlinear ratio).",
        ],
        [
            "`verify()` checks each term's closed form, that the lag vanishes identically at "
            r"$\tau_1 = \tau_2$, that the terms sum to the series and that the truncated $m$, $v$ "
            "solve the moment ODEs to their order.",
            "tests/test_symbolic_adam.py integrates the moment ODEs with `solve_ivp` (rtol 1e-12) "
            "on a smooth signal and fits the log-log slope of the truncation error against "
            r"$\tau$: about 2 after the first-order truncation and about 3 after the second-order "
            "one.",
        ],
    )
