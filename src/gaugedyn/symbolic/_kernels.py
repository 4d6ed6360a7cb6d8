"""The pair and self kernels of each activation, as sympy expressions, taken from the derivations.

An activation has closed-form kernels when this folder holds its derivation,
``_gaussian_<name>.py`` (``NAME = "gaussian_<name>"``, ``derive()`` returning the kernels,
``verify()``, ``build()``): that file is the one declaration. The derivations are found by their
file names (`gaussian_names()`, nothing imported); the activations with a closed form are
those of `gaugedyn.theory.ACTIVATIONS` that have one, in that registry's order
(`closed_form_activations()`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

PREFIX = "_gaussian_"
"""File-name prefix of an activation's kernel derivation in this folder."""

FOLDER = Path(__file__).resolve().parent


def gaussian_names() -> tuple[str, ...]:
    """The activation names of every ``_gaussian_<name>.py`` in this folder, sorted."""
    return tuple(sorted(p.stem[len(PREFIX) :] for p in FOLDER.glob(f"{PREFIX}*.py")))


def closed_form_activations() -> tuple[str, ...]:
    """The registered activations (`gaugedyn.theory.ACTIVATIONS`) with a kernel
    derivation, in the registry's order: the kernels ``gaugedyn derive`` generates."""
    from ..theory import ACTIVATIONS

    found = set(gaussian_names())
    return tuple(name for name in ACTIVATIONS if name in found)


def check_activation(activation: str) -> None:
    """Refuse (`InputError`) an activation without closed-form kernels."""
    from .._errors import InputError

    allowed = closed_form_activations()
    if activation not in allowed:
        raise InputError(f"activation {activation!r} is not supported; allowed: {allowed}")


def _module(activation: str) -> ModuleType:
    check_activation(activation)
    from importlib import import_module

    return import_module(f"gaugedyn.symbolic.{PREFIX}{activation}")


@cache
def kernel_symbols() -> tuple[Any, Any, Any, Any]:
    """Canonical symbols ``(q1, q2, c, q)``: q's positive, c real."""
    import sympy as sp

    q1, q2, q = sp.symbols("q1 q2 q", positive=True)
    c = sp.Symbol("c", real=True)
    return q1, q2, c, q


@cache
def kernel_expressions(activation: str) -> tuple[Any, Any]:
    """``(F(q1, q2, c), S(q))`` with F = E[g(x1) g(x2)] and S = E[g(x)^2], in the canonical symbols."""
    d = _module(activation).derive()
    s = d["symbols"]
    q1, q2, c, q = kernel_symbols()
    pair = d["pair"].xreplace({s["q1"]: q1, s["q2"]: q2, s["c"]: c})
    self_ = d["self"].xreplace({s["q"]: q})
    return pair, self_
