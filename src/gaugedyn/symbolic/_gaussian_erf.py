"""Gaussian expectations of erf features, g(z) = erf(z / sqrt 2) (Saad & Solla 1995; Goldt et al. 2019).

``J2`` is a Gaussian integral of exponentials; ``I2`` follows from it by Price's theorem
(``dE[g(x1) g(x2)]/dC12 = E[g'(x1) g'(x2)]``), ``I3`` by Stein's lemma and Price's theorem.
``I4`` is stated as a lemma: sympy checks Price's equation ``dI4/dC34 = E[g'g'g'g']`` and its
boundary value, the tests check it by Monte Carlo.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, is_zero, latex, pair_partials

NAME = "gaussian_erf"


def _cov_symbols(n: int) -> dict:
    import sympy as sp

    C = {}
    for i in range(1, n + 1):
        for j in range(i, n + 1):
            C[i, j] = C[j, i] = sp.Symbol(f"C{i}{j}", positive=(i == j), real=True)
    return C


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    q, q1, q2 = sp.symbols("q q1 q2", positive=True)
    c, t = sp.symbols("c t", real=True)
    A = sp.Symbol("A", positive=True)
    # g'(z) = sqrt(2/pi) exp(-z^2/2); E[exp(-|x|^2/2)] over N(0, C) is det(I + C)^(-1/2)
    C2 = sp.Matrix([[q1, c], [c, q2]])
    j2 = sp.simplify((2 / sp.pi) / sp.sqrt((sp.eye(2) + C2).det()))
    # Price: dI2/dc = J2, I2(c = 0) = 0 (g odd, x1 and x2 independent)
    det_c = sp.expand((sp.eye(2) + C2).det())
    a_val = det_c + c**2  # (1 + q1)(1 + q2)
    i2_int = sp.integrate((2 / sp.pi) / sp.sqrt(A - t**2), (t, 0, c), conds="none")
    i2 = sp.simplify(i2_int.subs(A, sp.factor(a_val)))
    i2_grad = tuple(sp.simplify(sp.diff(i2, v)) for v in (q1, q2, c))
    self_ = sp.simplify(i2.subs({q2: q, c: q}).subs(q1, q))
    # Stein + Price for I3 = E[g'(x1) x2 g(x3)]: C12 E[g''(x1) g(x3)] + C23 E[g'(x1) g'(x3)],
    # E[g''(x1) g(x3)] = 2 dI2/dC11
    C = _cov_symbols(4)
    sub13 = {q1: C[1, 1], q2: C[3, 3], c: C[1, 3]}
    i3 = sp.simplify(C[1, 2] * 2 * i2_grad[0].subs(sub13) + C[2, 3] * i2_grad[2].subs(sub13))
    return dict(
        symbols=dict(q=q, q1=q1, q2=q2, c=c),
        C=C,
        j2=j2,
        i2=i2,
        pair=i2,
        i2_grad=i2_grad,
        self=self_,
        i3=i3,
        i4=i4_lemma(C),
    )


def i4_lemma(C):
    """Saad & Solla / Goldt et al.: E[g'(x1) g'(x2) g(x3) g(x4)], x ~ N(0, C), 4x4."""
    import sympy as sp

    L4 = (1 + C[1, 1]) * (1 + C[2, 2]) - C[1, 2] ** 2
    L0 = (
        L4 * C[3, 4]
        - C[2, 3] * C[2, 4] * (1 + C[1, 1])
        - C[1, 3] * C[1, 4] * (1 + C[2, 2])
        + C[1, 2] * C[1, 3] * C[2, 4]
        + C[1, 2] * C[1, 4] * C[2, 3]
    )
    L1 = (
        L4 * (1 + C[3, 3])
        - C[2, 3] ** 2 * (1 + C[1, 1])
        - C[1, 3] ** 2 * (1 + C[2, 2])
        + 2 * C[1, 2] * C[1, 3] * C[2, 3]
    )
    L2 = (
        L4 * (1 + C[4, 4])
        - C[2, 4] ** 2 * (1 + C[1, 1])
        - C[1, 4] ** 2 * (1 + C[2, 2])
        + 2 * C[1, 2] * C[1, 4] * C[2, 4]
    )
    return 4 / (sp.pi**2 * sp.sqrt(L4)) * sp.asin(L0 / sp.sqrt(L1 * L2))


def _i3_stated(C):
    import sympy as sp

    L3 = (1 + C[1, 1]) * (1 + C[3, 3]) - C[1, 3] ** 2
    return 2 / sp.pi * (C[2, 3] * (1 + C[1, 1]) - C[1, 2] * C[1, 3]) / ((1 + C[1, 1]) * sp.sqrt(L3))


def _random_covariances(n: int, count: int, seed: int):
    """Exact rational SPD matrices B B^T / n (deterministic), for high-precision checks."""
    import numpy as np
    import sympy as sp

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        B = sp.Matrix(n, n, lambda i, j: sp.Rational(int(rng.integers(-9, 10)), 7))
        out.append(B * B.T + sp.eye(n) / 5)
    return out


def verify() -> None:
    import sympy as sp

    d = derive()
    s = d["symbols"]
    q, q1, q2, c = s["q"], s["q1"], s["q2"], s["c"]
    C = d["C"]
    stated_i2 = 2 / sp.pi * sp.asin(c / sp.sqrt((1 + q1) * (1 + q2)))
    check(is_zero(d["i2"] - stated_i2), "I2 differs from (2/pi) asin(c/sqrt((1+q1)(1+q2)))")
    check(is_zero(d["self"] - 2 / sp.pi * sp.asin(q / (1 + q))), "self kernel (2/pi) asin(q/(1+q))")
    stated_j2 = 2 / sp.pi / sp.sqrt(1 + q1 + q2 + q1 * q2 - c**2)
    check(is_zero(d["j2"] - stated_j2), "J2 differs from Goldt et al.")
    check(is_zero(d["i3"] - _i3_stated(C)), "I3 differs from Goldt et al.")
    # I4 lemma: Price's equation and boundary value, at exact rational covariances
    i4 = d["i4"]
    gp4 = (2 / sp.pi) ** 2
    syms = [C[i, j] for i in range(1, 5) for j in range(i, 5)]
    di4 = sp.diff(i4, C[3, 4])
    for M in _random_covariances(4, 4, seed=11):
        vals = {C[i, j]: M[i - 1, j - 1] for i in range(1, 5) for j in range(i, 5)}
        lhs = di4.subs(vals).evalf(40)
        rhs = (gp4 / sp.sqrt((sp.eye(4) + M).det())).evalf(40)
        check(abs(lhs - rhs) < 1e-30 * abs(rhs), f"I4 fails Price's equation at {vals}")
    zero = {C[1, 3]: 0, C[1, 4]: 0, C[2, 3]: 0, C[2, 4]: 0, C[3, 4]: 0}
    check(
        sp.simplify(i4.subs(zero)) == 0, "I4 must vanish when (x3, x4) is independent of (x1, x2)"
    )
    check(len(syms) == 10, "I4 takes the 10 upper-triangular entries")


def build() -> str:
    d = derive()
    E = r"\mathbb{E}"
    return document(
        "Gaussian expectations of erf features",
        r"The Saad-Solla / Goldt et al. integrals for $g(z) = \operatorname{erf}(z / \sqrt 2)$, "
        r"written as plain expectations over $x \sim \mathcal{N}(0, C)$ (no factor $1/2$ folded "
        "in). $I_2$, $J_2$ and $I_3$ are derived; $I_4$ is a lemma whose defining differential "
        "equation sympy checks.",
        [
            ("$J_2$", E + r"[g'(x_1)g'(x_2)] = " + latex(d["j2"])),
            (
                "$I_2$ = pair kernel $F(q_1, q_2, c)$",
                E + r"[g(x_1)g(x_2)] = " + latex(d["i2"]),
            ),
            (
                "Partial derivatives of $I_2$",
                pair_partials(d["i2_grad"]),
            ),
            ("Self kernel", E + r"[g(x)^2] = " + latex(d["self"]) + r",\quad x\sim N(0,q)"),
            (
                r"$I_3$ ($3 \times 3$ covariance $C$)",
                E + r"[g'(x_1)\,x_2\,g(x_3)] = " + latex(d["i3"]),
            ),
            (
                r"$I_4$ (lemma, $4 \times 4$ covariance $C$)",
                E + r"[g'(x_1)g'(x_2)g(x_3)g(x_4)] = " + latex(d["i4"]),
            ),
        ],
        [
            r"$g(z) = \operatorname{erf}(z / \sqrt 2)$, so "
            r"$g'(z) = \sqrt{2/\pi}\, e^{-z^2/2}$ and $g$ is odd.",
            r"$x \sim \mathcal{N}(0, C)$ with $C$ symmetric positive definite; $I_3$ uses $C$ "
            r"indexed $1..3$, $I_4$ $1..4$.",
        ],
        [
            r"$J_2$: $\mathbb{E}[\exp(-(x_1^2 + x_2^2)/2)] = \det(I + C)^{-1/2}$ (Gaussian "
            r"integral of an exponential of a quadratic form), times $2/\pi$ from $g'$.",
            r"$I_2$: by Price's theorem $\partial I_2 / \partial C_{12} = J_2$; $I_2 = 0$ at "
            r"$C_{12} = 0$ because $g$ is odd and $x_1$, $x_2$ are then independent; sympy "
            r"integrates $(2/\pi)(A - t^2)^{-1/2}$ from $0$ to $c$.",
            r"$I_3$: Stein's lemma, $\mathbb{E}[x_2 h(x_1, x_3)] = C_{12} \mathbb{E}[\partial_1 h] "
            r"+ C_{23} \mathbb{E}[\partial_3 h]$, and Price's theorem for the diagonal, "
            r"$\mathbb{E}[g''(x_1) g(x_3)] = 2\, \partial I_2 / \partial C_{11}$.",
            r"$I_4$: lemma (Saad & Solla 1995). Price's theorem gives "
            r"$\partial I_4 / \partial C_{34} = \mathbb{E}[g'(x_1)g'(x_2)g'(x_3)g'(x_4)] "
            r"= (2/\pi)^2 \det(I + C)^{-1/2}$; with $I_4 = 0$ when $(x_3, x_4)$ is independent of "
            r"$(x_1, x_2)$ this fixes $I_4$ along each line in $C_{34}$ from a point where it is "
            "known.",
        ],
        [
            "`verify()` checks $I_2$, $J_2$, $I_3$ and the self kernel against the forms of Goldt "
            "et al. with sympy, and $I_4$'s Price equation at 4 exact rational covariances to 30 "
            "digits, plus its boundary value.",
            "tests/test_expectations_mc.py checks $I_2$, $I_3$, $I_4$, $J_2$ against Monte Carlo on "
            r"$\geq 20$ random covariances within 4 standard errors.",
        ],
    )
