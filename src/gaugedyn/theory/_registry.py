"""The integrators of the population flow by name, and the rule ``"auto"`` follows.

`METHODS` maps a name to a callable ``method(task: FlowTask) -> Integration`` (one
signature, one result type, as ``scipy.integrate``'s ``METHODS``):

- ``"lsoda"``: ODEPACK's LSODA stepping inside Fortran between output times, with the exact
  Jacobian (`._lsoda`): Adams orders 1-12 while the flow is not stiff, BDF orders 1-5 when
  it is;
- ``"lsoda-fd"``: the same with a forward-difference Jacobian, all ``n`` perturbed states in one
  vectorised call of the right-hand side (`difference_jacobian()`);
- ``"lsoda-compiled"``: the same with the numba-compiled right-hand side and its forward
  differences (`._compiled_flow`; the order-parameter formulation of an activation with
  closed-form kernels, relu, erf, linear or positively homogeneous, and no teacher activation of
  its own);
- ``"rodas"``: the L-stable fourth-order Rosenbrock method of `._rosenbrock` (exact
  Jacobian, its own dense output), the engine of `solve_batch()`;
- ``"Radau"``, ``"BDF"``, ``"LSODA"``, ``"DOP853"``, ``"RK45"``: ``scipy.integrate.solve_ivp``
  (the implicit ones given the exact Jacobian), kept as independent references;
- ``"auto"``: the first row of `AUTO` that fits the task (the default of
  `solve()`).

The rows of `AUTO` are chosen by measurement against the call a user would write first,
``scipy.integrate.solve_ivp(rhs, method="LSODA")`` without and with the exact Jacobian
(``benchmarks/bench_theory.py --only 7``, whose stored runs ``docs/benchmarks.md`` shows). Why
forward differences and not the exact Jacobian: the ReLU flow converges to students exactly
aligned with teachers (``R_in^2 = Q_ii T_nn``), where its right-hand side has a kink; there the
exact (one-sided) Jacobian made LSODA's Newton iteration fail step after step (random ReLU K = M
= 4, D = 50, to t = 1000: 1,192 Jacobians and 2,336 steps, against 78 and 934 with differences,
4.4x the CPU time), while on smooth flows the two cost the same (a batched difference costs
about what the exact Jacobian's batched chain rule does). The rule takes the tolerance into
account: below `TIGHT_RTOL` the numpy path takes the exact Jacobian, whose accuracy does
not limit the Newton iteration; the compiled path keeps its differences at every tolerance (ReLU
K = M = 4 at rtol 1e-10: 2.0 CPU s, against 34.6 s for ``solve_ivp(LSODA)`` given the exact
Jacobian).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ._lsoda import Lsoda
from ._methods import FlowTask, Integration, ScipyIVP, rodas

SCIPY_METHODS = ("Radau", "BDF", "LSODA", "DOP853", "RK45")
BATCHED = ("auto", "rodas")


@dataclass(frozen=True)
class AutoRow:
    """One row of the ``"auto"`` rule: ``method`` for states of at most ``max_size`` numbers
    (``None``: any size) and activations in ``activations`` (``None``: any), with the
    measurement that chose it (``why``)."""

    max_size: int | None
    method: str
    why: str
    activations: tuple[str, ...] | None = None
    min_rtol: float = 0.0
    """The row fits only tolerances ``rtol >= min_rtol``."""

    def fits(self, size: int, activation: str, compiled: bool = True, rtol: float = 1e-8) -> bool:
        return (
            (self.max_size is None or size <= self.max_size)
            and (self.activations is None or (compiled and activation in self.activations))
            and rtol >= self.min_rtol
        )


COMPILED_FLOW = ("relu", "erf", "linear", "leaky_relu", "abs")
"""The built-in activations whose order-parameter flow is compiled (`._compiled_flow`)."""

TIGHT_RTOL = 1e-10
r"""Below this ``rtol`` the numpy path of ``"auto"`` takes the exact Jacobian (``"lsoda"``), not
forward differences: a difference quotient with step $\sqrt{\epsilon}\, |y|$ carries a relative error
of about ``1.5e-8``, which a Newton iteration held to ``rtol`` far below it cannot rely on; the
exact Jacobian has no such floor. Measured (random problems, D = 50, K = M = 4, to t = 1000,
CPU s on the shared two-core machine at load 15-19, 2026-12-06): ReLU at rtol 1e-10 (the kink)
30.6 s with differences, 41.2 s exact, 34.6 s for ``solve_ivp(LSODA)`` given the exact
Jacobian, ``solve_ivp(LSODA)`` alone unfinished after 240 s wall (at rtol 1e-12 no LSODA variant
finished in 240 s there); erf with a linear teacher at rtol 1e-12: 4.11 s (83 Jacobians) with
differences, 4.06 s (100) exact. Differences are kept at ``rtol = 1e-10``, where they measured
faster."""

AUTO: tuple[AutoRow, ...] = (
    AutoRow(
        500,
        "lsoda-compiled",
        "K <= 16, order parameters, an activation with compiled kernels and no teacher "
        "activation of its own: LSODA in Fortran on the compiled right-hand side (about 2 us a "
        "call at K = M = 4, against 175 us for the vectorised numpy one) with its "
        "forward-difference Jacobian",
        COMPILED_FLOW,
    ),
    AutoRow(
        500,
        "lsoda-fd",
        "K <= 16 (order parameters: n = K + K(K+1)/2 + K M), rtol >= TIGHT_RTOL: LSODA in "
        "Fortran with the batched forward-difference Jacobian; robust where the ReLU flow "
        "reaches its kink, as cheap as the exact Jacobian elsewhere (ReLU K = M = 4 at rtol "
        "1e-10: TIGHT_RTOL's measurements)",
        min_rtol=TIGHT_RTOL,
    ),
    AutoRow(
        500,
        "lsoda",
        "K <= 16, rtol < TIGHT_RTOL: LSODA with the exact Jacobian (TIGHT_RTOL's docstring)",
    ),
    AutoRow(
        None,
        "DOP853",
        "K >= 32: one dense Jacobian costs about a thousand right-hand sides (K = M = 32: 0.48 "
        "s against 0.44 ms) and its LU n^3 flops, while the flow is at most mildly stiff",
    ),
)
"""The rule of ``"auto"``, by state size and activation, first fitting row first (module
docstring); the last row fits every task."""

EXPLICIT_ABOVE = 500
"""The largest state that ``"auto"`` integrates with an implicit method (``AUTO``'s first row)."""


def auto_method(size: int, activation: str, compiled: bool = True, rtol: float = 1e-8) -> str:
    """The method ``"auto"`` runs for a state of ``size`` numbers, ``activation`` (by name) and
    relative tolerance ``rtol``; ``compiled``: whether the task has a compiled flow
    (`flow_key()`: the order-parameter formulation and no teacher
    activation of its own)."""
    return next(row.method for row in AUTO if row.fits(size, activation, compiled, rtol))


def auto(task: FlowTask) -> Integration:
    """The method of `auto_method()` (`AUTO`); the result's ``integrator`` names it."""
    from ._activation import activation_of
    from ._compiled_flow import flow_key

    p = task.params
    compiled = p.formulation == "order-parameters" and (
        flow_key(p.activation, p.teacher_activation) is not None
    )
    name = auto_method(task.y0.size, activation_of(p.activation).name, compiled, task.rtol)
    return dataclasses.replace(METHODS[name](task), integrator=name)


METHODS: dict[str, Callable[[FlowTask], Integration]] = {
    "auto": auto,
    "lsoda": Lsoda("exact"),
    "lsoda-fd": Lsoda("differences"),
    "lsoda-compiled": Lsoda("compiled"),
    "rodas": rodas,
    **{name: ScipyIVP(name) for name in SCIPY_METHODS},
}
