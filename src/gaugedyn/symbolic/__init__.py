"""Symbolic derivations (sympy): the homogeneous flow and its gauge, reaction-transport
coordinates, Gaussian expectations, the order-parameter flow, the Adam series, code generation.

Importing this package is light; sympy loads when a name below is first used.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "_order_parameters": ["compile_order_parameter_flow", "OrderParameterFlow"],
        "_registry": ["DERIVATIONS", "derive", "DeriveReport"],
        "_reaction_transport": ["mobilities"],
    },
)
