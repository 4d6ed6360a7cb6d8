"""Every setting of the population theory's engines, by name.

Each engine declares its own settings beside its code (`._problem.PARAMS`,
`._flows.PARAMS`, `._observables.PARAMS`, `._solve.PARAMS`) and checks its
arguments with them; `PARAMS` is their union, read-only, for the command lines and the
other subpackages (``gaugedyn train`` offers the same activation, gauge and definitions;
``online_ode`` takes the same tolerances).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._options import Param
from ._flows import PARAMS as _FLOWS
from ._observables import PARAMS as _OBSERVABLES
from ._problem import PARAMS as _PROBLEM
from ._solve import PARAMS as _SOLVE


def _union(*declarations: Mapping[str, Param]) -> Mapping[str, Param]:
    merged: dict[str, Param] = {}
    for params in declarations:
        twice = set(merged) & set(params)
        if twice:
            raise RuntimeError(f"settings declared by two engines: {', '.join(sorted(twice))}")
        merged.update(params)
    return MappingProxyType(merged)


PARAMS = _union(_PROBLEM, _FLOWS, _OBSERVABLES, _SOLVE)
"""Every setting of the set-ups, the flows, the definitions and the solvers by name (a
read-only mapping of `gaugedyn._options.Param`): type, bounds and why, choices, help and
the engine's default."""
