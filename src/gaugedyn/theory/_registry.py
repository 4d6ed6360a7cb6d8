"""The integrators of the population flow by name.

:data:`METHODS` maps a name to a callable ``method(task: FlowTask) -> Integration`` (one
signature, one result type, as ``scipy.integrate``'s ``METHODS``):

- ``"lsoda"``: ODEPACK's LSODA stepping inside Fortran between output times, with the exact
  Jacobian (:mod:`._lsoda`): Adams orders 1-12 while the flow is not stiff, BDF orders 1-5 when
  it is; the fastest single-trajectory method measured (``benchmarks/bench_theory.py``);
- ``"rodas"``: the L-stable fourth-order Rosenbrock method of :mod:`._rosenbrock` (exact
  Jacobian, its own dense output), the engine of :func:`solve_batch`;
- ``"Radau"``, ``"BDF"``, ``"LSODA"``, ``"DOP853"``, ``"RK45"``: ``scipy.integrate.solve_ivp``
  (the implicit ones given the exact Jacobian), kept as independent references;
- ``"auto"``: for one trajectory ``"lsoda"`` up to ``EXPLICIT_ABOVE`` state components (its
  Adams and BDF orders rise as the tolerance tightens, so tight tolerances get a higher-order
  method without a separate choice: at rtol 1e-10 on the D = 1000 a-heavy ``single`` set-up it
  takes 478 steps where Radau IIA takes 4,808); ``"DOP853"`` above, where one dense Jacobian
  costs as much as about a thousand right-hand sides (K = M = 32: 0.48 s against 0.44 ms) and
  its LU 1,584^3 flops, while the flow there is at most mildly stiff (to t = 1000: DOP853
  19.5 s, LSODA with the exact Jacobian 51 s). The batched solver runs ``"rodas"`` for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ._lsoda import lsoda
from ._methods import FlowTask, Integration, ScipyIVP, rodas

SCIPY_METHODS = ("Radau", "BDF", "LSODA", "DOP853", "RK45")
BATCHED = ("auto", "rodas")


EXPLICIT_ABOVE = 500


def auto(task: FlowTask) -> Integration:
    """:func:`lsoda` for states of at most :data:`EXPLICIT_ABOVE` numbers, ``DOP853`` above (see
    the module docstring); the result's ``integrator`` names the one that ran."""
    name = "DOP853" if task.y0.size > EXPLICIT_ABOVE else "lsoda"
    return dataclasses.replace(METHODS[name](task), integrator=name)


METHODS: dict[str, Callable[[FlowTask], Integration]] = {
    "auto": auto,
    "lsoda": lsoda,
    "rodas": rodas,
    **{name: ScipyIVP(name) for name in SCIPY_METHODS},
}
