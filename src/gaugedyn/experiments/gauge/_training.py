"""Pieces shared by the two experiments on trained networks (``gauge_in_training_scaling`` and
``gauge_in_training_ownership``): the shared settings and the bootstrap generator of an analysis,
derived from the tasks' own seeds (never from a constant)."""

from __future__ import annotations

from ...harness import Param
from . import _params as gp

N_FACTOR = Param(int, 20, lo=2, hi=1000, why="memory: n_factor x D samples per seed",
                 help="samples per seed n = n_factor * D")
SCALE = Param((int, float), 1.0, lo=0.0, lo_open=True, hi=10.0,
              why="GD steps grow like s D at the stable step 1 / (s D)",
              help="initial coefficient rho0 = s")
THRESHOLD = gp.THRESHOLD



