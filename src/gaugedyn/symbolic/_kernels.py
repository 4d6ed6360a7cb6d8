"""The pair and self kernels of each activation, as sympy expressions, taken from the derivations."""

from __future__ import annotations

from functools import cache

ACTIVATIONS = ("relu", "erf", "linear")


def check_activation(activation: str) -> None:
    from .._errors import InputError

    if activation not in ACTIVATIONS:
        raise InputError(f"activation {activation!r} is not supported; allowed: {ACTIVATIONS}")


def _module(activation: str):
    check_activation(activation)
    from importlib import import_module

    return import_module(f"gaugedyn.symbolic._gaussian_{activation}")


@cache
def kernel_symbols():
    """Canonical symbols ``(q1, q2, c, q)``: q's positive, c real."""
    import sympy as sp

    q1, q2, q = sp.symbols("q1 q2 q", positive=True)
    c = sp.Symbol("c", real=True)
    return q1, q2, c, q


@cache
def kernel_expressions(activation: str):
    """``(F(q1, q2, c), S(q))`` with F = E[g(x1) g(x2)] and S = E[g(x)^2], in the canonical symbols."""
    d = _module(activation).derive()
    s = d["symbols"]
    q1, q2, c, q = kernel_symbols()
    pair = d["pair"].xreplace({s["q1"]: q1, s["q2"]: q2, s["c"]: c})
    self_ = d["self"].xreplace({s["q"]: q})
    return pair, self_
