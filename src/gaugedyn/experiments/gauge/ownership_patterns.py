"""Which copy owns the teacher feature, over random patterns of duplicate gauges.

The protocol (set-up, claims and their rules, fixed before any run) is the ``ownership_patterns``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.ownership_patterns()` turns the results into
claims and `._figures.ownership_patterns()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Choice, Experiment, Param
from ...stats import generator
from ...theory import Definitions, duplicates, owners, remaining_relative, rho, with_gauge
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt


def pattern_problem(dim: int, levels, scale: float):
    """``K = len(levels)`` duplicates with gauges ``delta_i = s (D^g_i - D^-g_i)``."""
    g = np.asarray(levels, dtype=float)
    base = duplicates(dim, ["balanced"] * g.size, scale=scale)
    return with_gauge(base, delta=scale * (float(dim) ** g - float(dim) ** -g))


def classes(levels) -> np.ndarray:
    """Class label per copy: copies with the same gauge level share a label (the index of the
    first of them), so they start from the same state."""
    g = np.asarray(levels, dtype=float)
    return np.array([int(np.flatnonzero(g == v)[0]) for v in g])


def symmetrized(a, Q, R, levels):
    """``(a, Q, R)`` averaged over the exchanges of identical copies (same level): ``a`` and the
    rows of ``R`` per class, and ``Q``'s diagonal, its off-diagonal within a class and each block
    between two classes, each over its own entries (the Reynolds projection onto the states the
    exact flow keeps from a start with identical copies)."""
    lab = classes(levels)
    a, Q, R = (np.array(x, dtype=float) for x in (a, Q, R))
    same = lab[:, None] == lab[None, :]
    eye = np.eye(lab.size, dtype=bool)
    a_out, R_out, Q_out = a.copy(), R.copy(), Q.copy()
    for c in np.unique(lab):
        rows = lab == c
        a_out[rows] = a[rows].mean()
        R_out[rows] = R[rows].mean(axis=0)
        for d in np.unique(lab):
            block = rows[:, None] & (lab == d)[None, :]
            for part in (block & eye, block & same & ~eye) if c == d else (block,):
                if part.any():
                    Q_out[part] = Q[part].mean()
    return a_out, Q_out, R_out


def _owner_class_size(a, Q, R, T, b, levels) -> int:
    """Copies in the class that holds the largest share: the owner among one representative per
    class (0 when two different classes tie)."""
    lab = classes(levels)
    reps = np.unique(lab)
    best = int(owners(a[reps], Q[np.ix_(reps, reps)], R[reps], T, b)[0])
    return 0 if best < 0 else int(np.sum(lab == reps[best]))


class OwnershipPatterns(Experiment):
    name = "ownership_patterns"
    description = "owner, remaining function and ties over random patterns of duplicate gauges"
    definitions = {
        "level": "g_i: delta_i = s (D^g_i - D^-g_i); 1 a-heavy, -1 w-heavy, 0 balanced",
        "gap": "g_(1) - g_(2), the two most favourable levels",
        "owner": "unique student with the largest share sign(b) rho_i m_i; tie if several "
        "within 1e-4 relative",
        "remaining_function": "||sum_{i not owner} rho_i relu(u_i.x)||_{L2(N(0, I))} / ||f*||",
        "outcome": "selected / shared / tie / other (PROTOCOL.md, ownership_patterns)",
    }
    measures = gp.FINDING_MEASURES
    params = {
        "Ks": Param(
            list,
            [2, 3, 4, 5, 6, 8],
            quick=[2, 5, 8],
            lo=2,
            hi=8,
            min_len=1,
            max_len=7,
            distinct=True,
            why="the issue's range: up to 8 duplicates",
            help="numbers of duplicate students",
        ),
        "scales": Param(
            list,
            [0.05, 0.2, 1.0],
            lo=0.0,
            lo_open=True,
            hi=100.0,
            min_len=1,
            max_len=8,
            distinct=True,
            why=gp.SCALE_WHY,
            help="initial coefficients rho0 = s",
        ),
        "n_patterns": Param(
            int,
            24,
            quick=2,
            lo=1,
            hi=500,
            why="one batch of n_patterns trajectories per (K, s) cell",
            help="random gauge patterns per (K, s)",
        ),
        "n_levels": Param(
            int,
            9,
            lo=3,
            hi=41,
            why="ties need levels that repeat",
            help="gauge levels equally spaced in [-1, 1] (odd: includes 0)",
        ),
        "dim": gp.dim_param(10, hi=1000, why="D^g sets the gauges; the issue's D is 10"),
        "t_end": Param(
            (int, float),
            1000.0,
            lo=1.0,
            hi=1e5,
            why="the integrator takes about one step per unit time here",
            help="time at which the outcome is read",
        ),
        "function_tol": Param(
            float,
            1e-3,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="relative to ||f*||, 1 is no pruning at all",
            help="remaining function / ||f*|| below which it counts as zero",
        ),
        "prune_tol": Param(
            float,
            1e-3,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="|rho| of the teacher's owner is 1",
            help="|rho| below which a single copy counts as pruned",
        ),
        "gap_claim": Param(
            float,
            1.0,
            lo=0.0,
            hi=2.0,
            lo_open=True,
            why="levels lie in [-1, 1]",
            help="claimed region: gap >= this",
        ),
        "scale_claim": Param(
            float,
            0.2,
            lo=0.0,
            hi=100.0,
            lo_open=True,
            why=gp.SCALE_WHY,
            help="claimed region: s >= this",
        ),
        "region_rate": Param(
            float,
            0.8,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="a fraction",
            help="claimed selected fraction in the region",
        ),
        "rtol": gp.rtol_param(1e-8),
    }

    def validate(self, config: dict) -> None:
        """Reject an odd mix up front: ``n_levels`` must be odd so that 0 (balanced) is a level."""
        from ..._errors import InputError

        if int(config["n_levels"]) % 2 == 0:
            raise InputError(
                f"n_levels = {config['n_levels']} is not allowed; allowed: an odd "
                "integer in [3, 41] (so that the balanced level 0 is one of them)"
            )

    space = {
        "function_tol": Choice(
            values=(1e-4, 1e-2),
            why="'the function is gone' has no number in the paper; a factor 10 either side",
        ),
        "prune_tol": Choice(
            values=(1e-4, 1e-2),
            why="'pruned' has no number in the paper; a factor 10 either side",
        ),
    }

    def controls(self, config):
        return gc.controls("owner", "selection_gap")

    def tasks(self, config):
        keep = ("n_patterns", "n_levels", "dim", "t_end", "rtol")
        out = [
            {"K": int(K), "scale": float(s), **{k: config[k] for k in keep}}
            for K in sorted(config["Ks"])
            for s in sorted(config["scales"])
        ]
        out.append(
            {
                "K": 0,
                "scale": 0.0,
                "counterexamples": True,
                **{k: config[k] for k in ("dim", "t_end", "rtol")},
            }
        )
        return out

    def run_task(self, task, seed):
        if task.get("counterexamples"):
            levels = [[gp.LEVEL[g] for g in gauges] for gauges, _, _ in gp.COUNTEREXAMPLES]
            scales = [s for _, s, _ in gp.COUNTEREXAMPLES]
        else:
            rng = generator(seed, "levels")
            grid = np.linspace(-1.0, 1.0, int(task["n_levels"]))
            levels = [rng.choice(grid, size=task["K"]).tolist() for _ in range(task["n_patterns"])]
            scales = [task["scale"]] * len(levels)
        problems = [pattern_problem(task["dim"], g, s) for g, s in zip(levels, scales)]
        grid_t = gt.time_grid(task["t_end"], 40, t_min=1e-4)
        # one by one: a batch steps at its most demanding member's pace, far slower here; the
        # absolute tolerance 1e-8 (far below prune_tol and function_tol) stops the integrator
        # from resolving a pruned copy's |rho| ~ 1e-9, where it otherwise crawls (measured:
        # 201 steps to t = 1000 instead of more than 3000 for levels [0.75, -1], s = 0.05)
        opts = {"rtol": task["rtol"], "atol": 1e-8, "definitions": Definitions()}
        rows = [gt.trajectories([p], grid_t, **opts)[0] for p in problems]
        b, T = problems[0].b, problems[0].V @ problems[0].V.T
        last = [
            symmetrized(tr["a"][-1], tr["Q"][-1], tr["R"][-1], g) for tr, g in zip(rows, levels)
        ]
        K = max(len(g) for g in levels)
        pad = np.full((len(levels), K), np.nan)
        rho_end = pad.copy()
        for i, (g, (a, Q, _)) in enumerate(zip(levels, last)):
            pad[i, : len(g)] = g
            rho_end[i, : len(g)] = rho(a, Q)
        return {
            "levels": pad,
            "scales": np.array(scales),
            "rho_end": rho_end,
            "owner": np.array([int(owners(a, Q, R, T, b)[0]) for a, Q, R in last]),
            "owner_class_size": np.array(
                [_owner_class_size(a, Q, R, T, b, g) for (a, Q, R), g in zip(last, levels)]
            ),
            "remaining": np.array([float(remaining_relative(a, Q, R, T, b)) for a, Q, R in last]),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.ownership_patterns(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.ownership_patterns(arrays, config, outdir)


EXPERIMENT = OwnershipPatterns()
