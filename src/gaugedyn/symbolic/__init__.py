"""Symbolic derivations (sympy): the homogeneous flow and its gauge, reaction-transport
coordinates, Gaussian expectations, the order-parameter flow, the Adam series, code generation.

Importing this package is light; sympy loads when a name below is first used.
"""

from __future__ import annotations

_LAZY = {
    "compile_order_parameter_flow": "._order_parameters",
    "OrderParameterFlow": "._order_parameters",
    "DERIVATIONS": "._registry",
    "derive": "._registry",
    "DeriveReport": "._registry",
    "mobilities": "._reaction_transport",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
