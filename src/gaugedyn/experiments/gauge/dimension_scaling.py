"""Specialization time of the ``single`` set-up against the input dimension, for both gauges.

The protocol (set-up, claims and their rules, fixed before any run) is the ``dimension_scaling``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.dimension_scaling()` turns the results into
claims and `._figures.dimension_scaling()` draws the figures.
"""

from __future__ import annotations

from ..._errors import InputError
from ...harness import Experiment, Param
from ...theory import Definitions, single
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt

"""Dimensions at or above ``large_dim`` that a fit with an interval needs."""


class DimensionScaling(Experiment):
    name = "dimension_scaling"
    description = "specialization time against D for both gauges; the ratio grows as D^2"
    params = {
        "dims": Param(
            list,
            [10, 31, 100, 316, 1000, 3162, 10000, 31623, 100000],
            quick=[10, 100, 1000, 10000, 100000],
            lo=2,
            hi=gp.MAX_DIM,
            min_len=3,
            max_len=40,
            distinct=True,
            why=gp.DIM_WHY,
            help="input dimensions D",
        ),
        "scale": gp.scale_param(),
        "threshold": gp.THRESHOLD,
        "large_dim": Param(
            int,
            1000,
            lo=2,
            hi=gp.MAX_DIM,
            why=gp.DIM_WHY,
            help="the exponents are fitted on D >= large_dim",
        ),
        "exponent_tol": Param(
            float,
            0.1,
            lo=0.0,
            lo_open=True,
            hi=1.0,
            why="a tolerance of 1 would accept D^1 for D^2",
            help="allowed distance of each fitted exponent from theory",
        ),
        "rtol": gp.rtol_param(1e-9, help="relative tolerance of the integrator"),
    }

    def validate(self, config: dict) -> None:
        """Refuse a ``dims`` list whose fit cannot be done: fewer than three dimensions at or
        above ``large_dim``."""
        above = sorted(d for d in config["dims"] if d >= config["large_dim"])
        if len(above) < gp.MIN_FIT_DIMS:
            raise InputError(
                f"dims = {sorted(config['dims'])} with large_dim = {config['large_dim']} is not "
                f"allowed; allowed: at least {gp.MIN_FIT_DIMS} dimensions >= large_dim (the fit "
                f"needs them; these have {len(above)}: {above})"
            )

    def controls(self, config):
        return gc.controls("power_law", "specialization")

    def tasks(self, config):
        return [
            {
                "dim": int(d),
                "gauge": g,
                "scale": float(config["scale"]),
                "threshold": float(config["threshold"]),
                "rtol": float(config["rtol"]),
            }
            for d in sorted(config["dims"])
            for g in gt.GAUGES
        ]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        t_max = 1e3 * task["dim"] / task["scale"]
        traj = gt.trajectory(
            problem,
            gt.time_grid(t_max, 8),
            rtol=task["rtol"],
            definitions=Definitions(threshold=task["threshold"]),
            stop_at_specialization=True,
        )
        return {"specialization_time": traj["specialization_time"], **gt.diagnostics(traj)}

    def analyse(self, config, tasks, results, seed):
        return ga.dimension_scaling(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.dimension_scaling(arrays, config, outdir)


EXPERIMENT = DimensionScaling()
