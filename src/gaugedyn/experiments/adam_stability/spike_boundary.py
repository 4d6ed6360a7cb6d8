"""Adam's loss-spike boundary in the ``(1 - beta1, 1 - beta2)`` plane, judged on settled dynamics.

The exact 1-D Adam map on ``|x|^n / n`` (compiled, `gaugedyn.adam.simulate_blocks()`) and
two calibrated full-batch float64 training tasks (``_batched``, every cell and seed a copy of
one batched program; step size and scan range stored in ``_calibration``), every run judged by
the one spike detector (`gaugedyn.adam.detect_spikes()`) under two windows. The protocol,
fixed before any run, is ``PROTOCOL.md`` section 1 in this folder; its constants and rules are
``_protocol``, the runs ``_scan``, the analysis ``_spike_analysis`` and the figure ``_figures``.
"""

from __future__ import annotations

import numpy as np

from ..._errors import InputError
from ...adam import SPIKE_DEFINITION, SpikeSampling
from ...harness import Choice, Experiment, Param
from ._calibration import TASKS as CALIBRATION
from ._detector_controls import boundary_controls, design_controls, detector_controls
from ._figures import local_slopes, spike_maps
from ._protocol import (
    BLOCK_MIN_CHOICES,
    BLOCKS_PER_HORIZON_CHOICES,
    CHECK_CELLS,
    FINDING_MEASURES,
    RISE_RANGE,
    SCAN_DESIGN,
    SETTLE,
    STARTS,
    sampling,
)
from ._scan import bracket_grid, merge_rows, run, select_sampling
from ._spike_analysis import analyse

_DEFAULT = SpikeSampling()
ROW_GROUPS = 2
"""A scanned network task runs as this many tasks, every ``ROW_GROUPS``-th row each (the rows
of a group batched at each column): the workers of a two-core run share its cost, and a
group's batches stay wide enough that a step's fixed cost is shared by its copies."""
MAX_SHARED = 1100
"""Most samplings of one shared pass (a multiverse's specifications: up to 1000 random joint
ones, the primary and the ends)."""


def shared_label(spikes: SpikeSampling) -> str:
    """A detector sampling as one entry of ``spike_shared``: ``rise/block_min/blocks_per_horizon``
    (the rise as Python writes a float, so it reads back exactly)."""
    return f"{float(spikes.rise)!r}/{int(spikes.block_min)}/{int(spikes.blocks_per_horizon)}"


def shared_samplings(config: dict, space: dict) -> list[SpikeSampling]:
    """The samplings of a configuration's ``spike_shared`` (``[]`` when empty), each checked:
    three fields, every constant inside the declared ``space`` (its range, or its alternatives
    and the default), and the configuration's own sampling among them.

    Raises
    ------
    InputError
        Naming the bad entry and what is allowed.
    """
    out = []
    names = ("spike_rise", "spike_block_min", "spike_blocks_per_horizon")
    for entry in config.get("spike_shared", []):
        parts = str(entry).split("/")
        try:
            z = SpikeSampling(float(parts[0]), int(parts[1]), int(parts[2]))
            assert len(parts) == 3
        except (AssertionError, IndexError, ValueError):
            raise InputError(
                f"spike_shared entry {entry!r} is not allowed; write rise/block_min/"
                "blocks_per_horizon, e.g. '2.0/24/200'"
            ) from None
        for name, value in zip(names, z):
            c = space[name]
            default = _DEFAULT[names.index(name)]
            ok = (c.lo <= value <= c.hi) if c.is_range else value in (*c.values, default)
            if not ok:
                raise InputError(
                    f"spike_shared entry {entry!r}: {name}={value!r} lies outside the declared "
                    f"space ({c.describe(default)})"
                )
        out.append(z)
    if out and sampling(config) not in out:
        raise InputError(
            f"spike_shared={config['spike_shared']!r} does not hold this configuration's own "
            f"sampling {shared_label(sampling(config))!r}"
        )
    return out


def _grid(lo: float, hi: float, k: int) -> list[float]:
    return [float(v) for v in np.logspace(np.log10(lo), np.log10(hi), k)]


class SpikeBoundary(Experiment):
    name = "spike_boundary"
    description = (
        "spike-probability maps over (1 - beta1, 1 - beta2) for |x|^n / n and "
        "full-batch tasks, settled and transient-inclusive, orbit and generic starts; "
        "fitted boundary slopes, C, and the level of the 1-D theory on the edge"
    )
    measures = FINDING_MEASURES
    params = {
        "ns": Param(
            list,
            [2.0, 3.0, 4.0, 6.0],
            item=float,
            quick=[2.0, 4.0],
            lo=1.5,
            hi=12,
            min_len=1,
            max_len=8,
            distinct=True,
            why="|x|^n overflows float64 beyond",
            help="exponents n",
        ),
        "one_minus_beta1": Param(
            list,
            _grid(0.005, 0.5, 13),
            item=float,
            quick=_grid(0.01, 0.5, 7),
            lo=1e-3,
            hi=1.0,
            hi_open=True,
            min_len=2,
            max_len=16,
            distinct=True,
            why="beta1 >= 0",
            help="1-D rows 1 - beta1 of the quadratic (13 from 0.005 to 0.5, 8 of them at or "
            "below 0.1)",
        ),
        "one_minus_beta2": Param(
            list,
            _grid(1e-6, 10**-0.5, 12),
            item=float,
            quick=_grid(3e-6, 0.3, 11),
            lo=1e-6,
            hi=1.0,
            hi_open=True,
            min_len=2,
            max_len=32,
            distinct=True,
            why="beta2 >= 0; below 1e-6 a settled run passes 1e8 steps",
            help="1-D coarse grid of 1 - beta2 of the quadratic (half a decade apart), the "
            "brackets of the bisection",
        ),
        "rows_above_2": Param(
            list,
            _grid(0.005, 0.1, 24) + _grid(0.005, 0.5, 13)[-4:],
            item=float,
            quick=_grid(0.01, 0.5, 7),
            lo=1e-3,
            hi=1.0,
            hi_open=True,
            min_len=2,
            max_len=32,
            distinct=True,
            why="beta1 >= 0",
            help="1-D rows 1 - beta1 of the maps of n > 2 (24 from 0.005 to 0.1, then the "
            "rows of one_minus_beta1 above 0.15): the design check on the stored map pilot "
            "expects the slope's 95% width near 0.15-0.19 at 24 rows (PROTOCOL.md)",
        ),
        "c_above_2": Param(
            list,
            _grid(1e-4, 10**-2.625, 12) + _grid(10**-2.5, 10**-0.25, 73),
            item=float,
            quick=[v for v in _grid(3e-6, 0.3, 11) if v >= 1e-4],
            lo=1e-6,
            hi=1.0,
            hi_open=True,
            min_len=2,
            max_len=96,
            distinct=True,
            why="beta2 >= 0",
            help="1-D coarse grid of 1 - beta2 of the maps of n > 2 (a thirty-second of a "
            "decade apart from 10^-2.5 to 10^-0.25, where the spiky bands lie, an eighth below "
            "down to 1e-4): the band narrows to 0.06 decades at 1 - beta1 = 0.1 and an "
            "eighth-decade grid stepped over it (PROTOCOL.md)",
        ),
        "seeds_above_2": Param(
            int,
            16,
            quick=2,
            lo=1,
            hi=64,
            why="CPU time: one run per seed",
            help="seeds per evaluated 1-D cell and start of the maps of n > 2",
        ),
        "c_min_above_2": Param(
            float,
            1e-4,
            lo=1e-6,
            hi=0.1,
            why="the grid's own range",
            help="lowest 1 - beta2 of the maps of n > 2 (their edges lie "
            "above 1e-2; below, a never-spiky row costs 1e8 steps)",
        ),
        "seeds": Param(
            int,
            8,
            quick=2,
            lo=1,
            hi=64,
            why="CPU time: one run per seed",
            help="seeds per evaluated 1-D cell and start of the quadratic",
        ),
        "bisect_decades": Param(
            float,
            0.04,
            quick=0.25,
            lo=0.005,
            hi=2.0,
            why="below, the seeds' own scatter; above, no bisection on a half-decade grid",
            help="the 1-D bisection stops when a row's bracket is this narrow (log10 c)",
        ),
        "lr": Param(
            float,
            1e-2,
            lo=0,
            lo_open=True,
            hi=1.0,
            why="step of order the loss scale",
            help="Adam step size of the 1-D maps",
        ),
        "eps": Param(
            float,
            0.0,
            lo=0.0,
            hi=1e-3,
            why="eps dominates the 1-D state above",
            help="Adam eps of the 1-D maps (0: only the oscillation scale matters)",
        ),
        "tasks": Param(
            list,
            list(CALIBRATION),
            item=str,
            choices=tuple(CALIBRATION),
            min_len=0,
            max_len=len(CALIBRATION),
            distinct=True,
            help="full-batch float64 training tasks",
        ),
        "task_one_minus_beta1": Param(
            list,
            SCAN_DESIGN["one_minus_beta1"],
            item=float,
            quick=[0.5, 0.3, 0.2],
            lo=1e-3,
            hi=1.0,
            hi_open=True,
            min_len=2,
            max_len=12,
            distinct=True,
            why="beta1 >= 0; below 1e-3 a settled run passes 1e5 steps",
            help="task rows 1 - beta1 (the third design, SCAN_DESIGN: nine from 0.5 to 0.01; "
            "the calibrated first design's are _calibration.GRID's: PROTOCOL.md)",
        ),
        "task_one_minus_beta2": Param(
            list,
            SCAN_DESIGN["one_minus_beta2"],
            item=float,
            quick=[0.03, 0.1, 0.3],
            lo=1e-3,
            hi=1.0,
            hi_open=True,
            min_len=2,
            max_len=16,
            distinct=True,
            why="below 1e-3 a settled run passes 1e5 steps",
            help="task columns 1 - beta2 (the third design, SCAN_DESIGN: the second's, a "
            "quarter decade apart from 1e-3 to 10^-0.5; the first design's are "
            "_calibration.GRID's: PROTOCOL.md)",
        ),
        "task_seeds": Param(
            int,
            SCAN_DESIGN["seeds"],
            quick=1,
            lo=1,
            hi=16,
            why="CPU time: one copy per seed",
            help="initialisations per task cell (SCAN_DESIGN: 8; at fewer than 6 no task edge "
            "can have an interval: PROTOCOL.md)",
        ),
        "task_bracket_stride": Param(
            int,
            SCAN_DESIGN["bracket_stride"],
            lo=0,
            hi=8,
            why="a bracket grid coarser than 8 columns steps over the edge",
            help="0: every cell of the task grid (the first and second designs); k >= 1: the "
            "scan of the 1-D maps (SCAN_DESIGN: 2), per row every k-th column from the top "
            "down to the first spiky cell under every reading, then bisection on the columns "
            "between; the rows in ROW_GROUPS tasks (PROTOCOL.md)",
        ),
        "check_steps": Param(
            int,
            2000,
            quick=1500,
            lo=500,
            hi=20000,
            why="CPU time of the bisection",
            help="steps per simulated growth rate",
        ),
        "spike_rise": Param(
            float,
            _DEFAULT.rise,
            lo=0.5,
            hi=10.0,
            why="a rise of 10 decades is no longer a spike's threshold",
            help="the detector's rise threshold (decades)",
        ),
        "spike_block_min": Param(
            int,
            _DEFAULT.block_min,
            lo=1,
            hi=1000,
            why="blocks wider than the shortest runs",
            help="the detector's fewest steps per block",
        ),
        "spike_blocks_per_horizon": Param(
            int,
            _DEFAULT.blocks_per_horizon,
            lo=10,
            hi=2000,
            why="the block statistics' memory",
            help="the detector's blocks per horizon where the horizon is long",
        ),
        "spike_shared": Param(
            list,
            [],
            item=str,
            min_len=0,
            max_len=MAX_SHARED,
            distinct=True,
            help="the multiverse's shared pass (set by gaugedyn multiverse, not by hand): every "
            "specification's detector sampling as 'rise/block_min/blocks_per_horizon', the "
            "primary first; the tasks then run each trajectory once and judge it by every one "
            "of them, and this specification reads its own (empty: the runs judged by this "
            "specification's sampling alone)",
        ),
    }
    space = {
        "spike_rise": Choice(
            lo=RISE_RANGE[0],
            hi=RISE_RANGE[1],
            why="the paper defines a spike by no number; a rise of 30 to 300 times the "
            "settled level is what a referee would call one",
        ),
        "spike_block_min": Choice(
            values=BLOCK_MIN_CHOICES,
            why="24 steps is the fewest that read one decade of white log-noise as quiet; "
            "twice that resolves every spike wider than a block as well",
        ),
        "spike_blocks_per_horizon": Choice(
            values=BLOCKS_PER_HORIZON_CHOICES,
            why="a settled cycle of a few hundredths of 1/(1 - beta2) steps needs several "
            "blocks per cycle; 100 to 400 per horizon gives 3 to 12",
        ),
    }
    definitions = {
        "spike": SPIKE_DEFINITION,
        "windows": f"settled: the steps after {SETTLE} (1/(1-beta1) + 1/(1-beta2)); transient: "
        "the whole run (one horizon of warm-up)",
        "starts": "orbit: (x, m, v) on the period-2 orbit, x kicked by 1e-4..1e-2 relative, "
        "stationary map; generic: x0 = A 10^U(-1,1), m = v = 0, bias-corrected",
        "spike_probability": "share of a cell's seeds judged spiky among those spiky or quiet",
        "boundary": "per row 1 - beta1: the upper edge of the spiky region, the c = 1 - beta2 "
        "at which the spike probability falls through 0.5 (log-interpolated between the "
        "highest cell with probability >= 0.5 and the evaluated cell above it); on the 1-D "
        "maps bracketed on the coarse grid and bisected in log c to bisect_decades, fresh seeds "
        "per evaluated cell; its interval: from the highest evaluated cell below whose exact "
        "95% interval of the probability lies above 0.5 to the lowest above whose interval lies "
        "below it",
        "local_slope": "d log c_b / d log a between consecutive rows, with its range over the "
        "two edges' intervals",
        "slope_and_C": "log c_b = slope log a + log C by least squares (slope_band rule); C at "
        "slope 1: c_b / a",
        "theory": "derivations/adam_stability.md: oscillating-state multipliers; level curves of "
        "2 pi delta/omega (growth per slow turn) at eps = 0: 1 (the theory) and the "
        "level measured on the simulated edge (an open measurement, with its interval)",
    }

    def controls(self, config):
        return detector_controls(config) + boundary_controls(config) + design_controls(config)

    def validate(self, config):
        shared_samplings(config, self.space)
        if config.get("tasks") and int(config.get("task_bracket_stride", 0)):
            bracket_grid(sorted(config["task_one_minus_beta2"]), int(config["task_bracket_stride"]))

    def seed_coordinates(self, task):
        # the shared pass's further samplings only choose what is read off the runs
        # ... and a scanned network task is split by rows only to balance the workers: every
        # row of a task draws from the one seed (its teacher; its copies by copy_seeds)
        return {k: v for k, v in task.items() if k not in ("also", "rows")}

    def shared_values(self, primary, configs):
        own = [shared_label(sampling(c)) for c in configs]
        return {"spike_shared": list(dict.fromkeys(own))}

    def tasks(self, config):
        shared = shared_samplings(config, self.space)
        spikes = list(shared[0][:3]) if shared else list(sampling(config)[:3])
        also = {"also": [list(z[:3]) for z in shared[1:]]} if len(shared) > 1 else {}
        common = {"lr": float(config["lr"])}
        out = [
            {
                "kind": "check",
                "cells": [list(c) for c in CHECK_CELLS],
                "steps": int(config["check_steps"]),
                **common,
            }
        ]
        for n in config["ns"]:
            quadratic = n <= 2
            for start in STARTS:
                out.append(
                    {
                        "kind": "1d",
                        "n": float(n),
                        "start": start,
                        "a": list(config["one_minus_beta1" if quadratic else "rows_above_2"]),
                        "c": sorted(
                            v
                            for v in config["one_minus_beta2" if quadratic else "c_above_2"]
                            if quadratic or v >= config["c_min_above_2"]
                        ),
                        "seeds": int(config["seeds" if quadratic else "seeds_above_2"]),
                        "bisect_decades": float(config["bisect_decades"]),
                        "eps": float(config["eps"]),
                        "spikes": spikes,
                        **also,
                        **common,
                    }
                )
        stride = int(config.get("task_bracket_stride", 0))
        scanned: list[dict] = []
        for name in config["tasks"]:
            cal = CALIBRATION[name]
            task = {
                "kind": "task",
                "task": cal.get("task", name),
                "start": "init",
                "a": list(config["task_one_minus_beta1"]),
                "c": sorted(config["task_one_minus_beta2"]),
                "seeds": int(config["task_seeds"]),
                "lr": float(cal["lr"]),
                "n_samples": int(cal["n_samples"]),
                "hidden": int(cal["hidden"]),
                **({"eps": float(cal["eps"])} if "eps" in cal else {}),
                "spikes": spikes,
                **also,
            }
            if not stride:
                out.append(task)
                continue
            rows = range(len(task["a"]))
            scanned += [
                task | {"bracket_stride": stride, "rows": list(rows[g::ROW_GROUPS])}
                for g in range(min(ROW_GROUPS, len(rows)))
            ]
        # the scanned network tasks are the run's longest: submitted first, so the two workers
        # end together (longest first); the analysis reads the tasks in their kinds' order
        return scanned + out

    def run_task(self, task, seed):
        return run(task, seed)

    def analyse(self, config, tasks, results, seed):
        own = sampling(config)
        kinds = {"check": 0, "1d": 1, "task": 2}
        order = sorted(range(len(tasks)), key=lambda k: kinds[tasks[k]["kind"]])
        mine = [select_sampling(tasks[k], results[k], own) for k in order]
        return analyse(*merge_rows([tasks[k] for k in order], mine), seed)

    def plot(self, arrays, config, outdir):
        return [*spike_maps(arrays, outdir), local_slopes(arrays, outdir)]


EXPERIMENT = SpikeBoundary()
