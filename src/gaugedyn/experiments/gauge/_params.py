"""Configuration keys shared by several gauge experiments, each declared once with its bounds."""

from __future__ import annotations

from ...harness import Param

MAX_DIM = 10**6
DIM_WHY = ("the mobility ratio D^2 must stay below 1e12 so that float64 keeps the slower clock's "
           "digits")
SCALE_WHY = "rho0 = 100 ||f*||; far larger s overflow the gauge delta = s (1/D - D) to -inf"
T_MAX_WHY = "steps grow with log t_max; 1e8 is past every specialization time for D <= 1e4"

THRESHOLD = Param(float, 0.95, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                  why="an alignment is a cosine", help="alignment that defines specialization")

T_MAX_BOTH = Param((int, float), 1e5, quick=2e4, lo=0.0, lo_open=True, hi=1e8, why=T_MAX_WHY,
                   help="end of both trajectories")


def dim_param(default: int = 100, help: str = "input dimension D (also the gauge strength)",
              hi: int = MAX_DIM, why: str = DIM_WHY) -> Param:
    """The input dimension ``D`` of the population experiments, in ``[4, hi]``."""
    return Param(int, default, lo=4, hi=hi, why=why, help=help)


def scale_param(help: str = "initial coefficient rho0 = s", default: float = 1.0) -> Param:
    """The initial coefficient ``rho0 = s`` in ``(0, 100]``."""
    return Param((int, float), default, lo=0.0, lo_open=True, hi=100.0, why=SCALE_WHY, help=help)


def rtol_param(default: float, help: str = "relative tolerance of the batched integrator") -> Param:
    """The integrator's relative tolerance, in ``(1e-14, 1e-3)``."""
    return Param(float, default, lo=1e-14, hi=1e-3, hi_open=True,
                 why="a looser tolerance no longer resolves the pruned copies' |rho| ~ 1e-3",
                 help=help)


def n_times_param(default: int, quick: int | None, lo: int,
                  help: str = "number of log-spaced output times") -> Param:
    """A number of output times in ``[lo, 20000]``."""
    return Param(int, default, quick=quick, lo=lo, hi=20000,
                 why="memory: 8 bytes x K^2 per output time per trajectory", help=help)
