"""Compatibility names for experiments outside the gauge family that still import this module
(``online_sgd``). The gauge experiments use the modules by concept: ``_gauge_trajectories``,
``_gauge_quadrature``, ``_gauge_paths``, ``_gauge_params``, ``_gauge_figures`` and
:mod:`gaugedyn.stats` for fits. Nothing is defined twice: every name here wraps one of those.
"""

from __future__ import annotations

import math

from ..stats import loglog_fit as _loglog_fit
from ._gauge_figures import save as save
from ._gauge_trajectories import trajectory as trajectory
from ._gauge_trajectories import wall_times as wall_times


def loglog_fit(x, y) -> dict:
    """:func:`gaugedyn.stats.loglog_fit` as the dict ``slope, intercept, se, ci, n``."""
    f = _loglog_fit(x, y)
    return {"slope": f.slope, "intercept": f.intercept, "se": f.stderr,
            "ci": [f.slope_low, f.slope_high], "n": f.n}


def fit_row(fit: dict):
    """A :func:`loglog_fit` dict as the row ``[slope, intercept, ci_low, ci_high]``."""
    import numpy as np

    return np.array([fit["slope"], fit["intercept"], *fit["ci"]])


def int_list(min_len: int, low: int, high: float = math.inf, distinct: bool = True):
    """A check: a list of at least ``min_len`` integers in ``[low, high]`` (no repeats if
    ``distinct``)."""

    def check(value):
        return (isinstance(value, list) and len(value) >= min_len
                and all(isinstance(x, int) and not isinstance(x, bool) and low <= x <= high
                        for x in value)
                and (not distinct or len(set(value)) == len(value)))

    return check
