"""Gaussian expectations of linear features, from the moment-generating function."""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, latex

NAME = "gaussian_linear"


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    q, q1, q2 = sp.symbols("q q1 q2", positive=True)
    c, t1, t2 = sp.symbols("c t1 t2", real=True)
    mgf = sp.exp((q1 * t1**2 + 2 * c * t1 * t2 + q2 * t2**2) / 2)
    at0 = {t1: 0, t2: 0}
    pair = sp.simplify(sp.diff(mgf, t1, t2).subs(at0))
    mgf1 = sp.exp(q * t1**2 / 2)
    return dict(
        symbols=dict(q=q, q1=q1, q2=q2, c=c),
        pair=pair,
        pair_grad=tuple(sp.diff(pair, v) for v in (q1, q2, c)),
        self=sp.simplify(sp.diff(mgf1, t1, 2).subs(t1, 0)),
        mean=sp.diff(mgf1, t1).subs(t1, 0),
        dkernel=sp.Integer(1),
    )


def verify() -> None:
    d = derive()
    s = d["symbols"]
    check(d["pair"] == s["c"], "E[x1 x2] must be C12")
    check(d["self"] == s["q"], "E[x^2] must be q")
    check(d["mean"] == 0, "E[x] must vanish")


def build() -> str:
    d = derive()
    return document(
        "Gaussian expectations of linear features",
        "The linear activation $g(z) = z$, the classical reference: the pair kernel is the "
        "covariance.",
        [
            ("Pair kernel", r"\mathbb{E}[x_1 x_2] = " + latex(d["pair"])),
            ("Self kernel", r"\mathbb{E}[x^2] = " + latex(d["self"])),
            ("Derivative kernel", r"\mathbb{E}[g'(x_1)g'(x_2)] = " + latex(d["dkernel"])),
        ],
        [
            r"$(x_1, x_2)$ centred Gaussian with $\mathbb{E}[x_1^2] = q_1$, "
            r"$\mathbb{E}[x_2^2] = q_2$, $\mathbb{E}[x_1 x_2] = c$; $x \sim \mathcal{N}(0, q)$."
        ],
        [
            r"Moment-generating function $M(t) = \exp(t^\top C t / 2)$; "
            r"$\mathbb{E}[x_1 x_2] = \partial^2 M / \partial t_1 \partial t_2$ at $t = 0$.",
        ],
        [
            "`verify()` checks the derived moments with sympy; the Monte Carlo tests check the pair "
            "kernel numerically.",
        ],
    )
