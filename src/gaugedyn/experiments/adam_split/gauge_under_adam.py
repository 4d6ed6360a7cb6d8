"""The gauge under Adam: does the favourable gauge still choose the owner, and how wide is the gap?

Gradient flow conserves ``delta_i = a_i^2 - |w_i|^2`` and the gauge only changes the transport
mobility ``1/|w_i|^2``; Adam's per-coordinate normalisation ``m^/(sqrt(v^) + eps)`` breaks the
rescaling symmetry, so its answer is measured here, not assumed. At each input dimension ``D``
(one task) the ``S`` seeds of every ``(beta1, beta2)`` (tied and untied) are trained as one
batched program by `gaugedyn.training.train()` (online Adam, fresh Gaussian batches, time
``t = sum_k eta_k``; one Adam pair and one root seed per copy, so each copy is bit for bit its
cell trained alone, with the seed the cell had as its own task, `cell_seed()`):

- ``single`` with the w-heavy and with the a-heavy gauge (same seeds, hence the same data): the
  specialization times ``t_w``, ``t_a`` (first ``t`` with alignment ``>= threshold``) and their
  ratio per seed, the *gauge gap* ``t_w / t_a``, summarised by its geometric mean over seeds with
  a percentile-bootstrap 95% interval;
- ``duplicates``: copy 0 a-heavy, copies ``1..K-1`` w-heavy, same initial function; the
  *owner-selection rate* is the fraction of seeds whose final owner (``argmax_i rho_i m_i``) is the
  a-heavy copy, with a Wilson 95% interval;
- the lag share of each neuron's update: every Adam step of the trainer is observed by
  `AdamProbe`, passed as ``train(..., on_step=probe)``, which keeps
  ``w_t = b2 w_{t-1} + (1-b2) g_t`` and splits each step with
  `gaugedyn.adam.decompose_state()`; per neuron ``i`` (its ``a_i`` and ``w_i``) and step, the
  shares ``|p_k| / (|sign| + |lag| + |residual|)``, averaged over steps after the start-up
  fraction ``skip`` and in ``bins`` windows of time.

Checks (they decide the exit status): the probe saw every step; the parts sum to the update to
``1e-12`` relative to ``max(1, sum_k |p_k|)`` (float64); the update it split is the step the
trainer applied, to ``1e-12`` relative;
the lag part is exactly zero at every step of every tied configuration. Findings (owner rate and
gauge gap per ``D``, ids ``finding:...``) are judged by rules of the catalogue
(`gaugedyn.stats.RULES`: ``proportion`` and ``mean_threshold`` on per-seed log ratios)
over every comparison set, all configurations, the tied and the untied ones, stored as the
finding's readings ("depends on the reading" when they disagree); lag shares and the drift of
``delta`` are measurements.
"""

from __future__ import annotations

import numpy as np

from ..._errors import InputError
from ..._meta import integer_seed, task_seed
from ...harness import Choice, Experiment, Param, configuration_label
from ._controls import gauge_controls
from ._figures import plot_alignment, plot_lag_shares, plot_owner_gap, plot_share_trajectories
from ._gauge_analysis import analyse_cells, split_cells
from ._protocol import FINDING_MEASURES, GAUGES, cell_tasks

LABEL_KEYS = ("dims", "betas", "seeds", "steps", "lr", "batch", "copies", "scale", "threshold")


def _pairs(v) -> bool:
    return (
        isinstance(v, list)
        and len(v) >= 1
        and all(
            isinstance(p, list)
            and len(p) == 2
            and all(
                isinstance(b, float | int) and not isinstance(b, bool) and 0.0 <= b < 1.0 for b in p
            )
            for p in v
        )
        and len({tuple(map(float, p)) for p in v}) == len(v)
    )


class GaugeUnderAdam(Experiment):
    name = "gauge_under_adam"
    description = (
        "single (both gauges) and duplicates (one a-heavy, the rest w-heavy) trained "
        "with Adam at tied and untied (beta1, beta2) over seeds: owner-selection rate, "
        "gauge gap in specialization time and each neuron's lag share, with intervals"
    )
    label_keys = LABEL_KEYS
    measures = FINDING_MEASURES
    params = {
        "dims": Param(
            list,
            [16, 64],
            quick=[32],
            item=int,
            lo=4,
            hi=4096,
            min_len=1,
            max_len=8,
            distinct=True,
            why="memory: seeds x copies x D floats per moment",
            help="input dimensions D (the gauge strength is D)",
        ),
        "betas": Param(
            list,
            [[0.9, 0.9], [0.99, 0.99], [0.9, 0.99], [0.9, 0.999], [0.99, 0.9]],
            quick=[[0.9, 0.9], [0.99, 0.99], [0.9, 0.999], [0.99, 0.9]],
            check=_pairs,
            min_len=1,
            max_len=12,
            allowed="a list of at most 12 distinct [beta1, beta2] pairs, each in [0, 1)",
            help="Adam factors; tied when beta1 == beta2",
        ),
        "seeds": Param(
            int,
            32,
            quick=8,
            lo=2,
            hi=4096,
            why="memory: the seeds train as one batch",
            help="seeds per configuration, trained as one batch",
        ),
        "steps": Param(
            int,
            2000,
            quick=800,
            lo=10,
            hi=10**6,
            why="time: steps of every training",
            help="Adam steps",
        ),
        "lr": Param(
            float,
            0.01,
            lo=0.0,
            lo_open=True,
            hi=1.0,
            why="Adam's step is lr per coordinate",
            help="Adam step size (time t = lr * steps)",
        ),
        "batch": Param(
            int,
            32,
            lo=1,
            hi=100_000,
            why="memory: batch x D floats per step",
            help="fresh Gaussian samples per step",
        ),
        "copies": Param(
            int,
            2,
            lo=2,
            hi=16,
            why="the duplicates set-up has at most 16 copies",
            help="K of the duplicates set-up (copy 0 a-heavy, the others w-heavy)",
        ),
        "scale": Param(
            float,
            1.0,
            lo=0.0,
            lo_open=True,
            hi=100.0,
            why="far outside the studied regime beyond",
            help="initial coefficient rho0 = s",
        ),
        "threshold": Param(
            float,
            0.95,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="an alignment",
            help="alignment that defines specialization",
        ),
        "prune_tol": Param(
            float,
            1e-2,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="a fraction of the initial coefficient",
            help="|rho| below which a copy counts as pruned",
        ),
        "bins": Param(
            int,
            40,
            lo=1,
            hi=1000,
            why="memory: bins x seeds x copies x 3 floats",
            help="time windows of the recorded share trajectories",
        ),
        "pairs_per_task": Param(
            int,
            1,
            lo=1,
            hi=12,
            why="a task trains this many beta pairs as one program",
            help="(beta1, beta2) pairs per task, their seeds trained as one "
            "program; no number depends on it (every cell keeps its own "
            "seed). 1: one task per cell, which keeps every worker busy "
            "on CPU, where one program over the pairs measured no faster "
            "(benchmarks/bench_batched_grids.py: the per-copy data "
            "draws dominate); more for a device",
        ),
        "skip": Param(
            float,
            0.05,
            lo=0.0,
            hi=1.0,
            hi_open=True,
            why="a fraction of the steps",
            help="start-up fraction of steps left out of the mean shares",
        ),
    }
    definitions = {
        "time": "t = lr * steps (online Adam, fresh batches)",
        "specialization_time": "first t with alignment u.v >= threshold (linear interpolation "
        "between records)",
        "gauge_gap": "t_w / t_a per seed (same seed index, same data); geometric mean over seeds "
        "with both finite, percentile bootstrap 95% interval (2000 resamples)",
        "owner": "argmax_i rho_i m_i at the end of training; selection: owner is the a-heavy "
        "copy 0; rate with a Wilson 95% interval",
        "share": "per neuron i (parameters a_i, w_i) and step: |p_k|_2 / (|sign|_2 + |lag|_2 + "
        "|residual|_2), p from gaugedyn.adam.decompose_state; mean over steps after "
        "the start-up fraction skip, then over seeds (95% interval: 1.96 standard errors)",
        "delta_drift": "max_i |delta_i(t) - delta_i(0)| / (a_i(0)^2 + |w_i(0)|^2) at the end",
    }

    space = {
        "threshold": Choice(
            values=(0.9, 0.99),
            why="the paper names no alignment at which a feature counts as learned",
        ),
        "prune_tol": Choice(
            values=(3e-3, 3e-2),
            why="'pruned' has no number in the paper; a factor 3 either side of 1e-2",
        ),
    }

    def controls(self, config):
        return gauge_controls(config)

    def tasks(self, config):
        keep = (
            "seeds",
            "steps",
            "lr",
            "batch",
            "copies",
            "scale",
            "threshold",
            "prune_tol",
            "bins",
            "skip",
        )
        pairs = [[float(p[0]), float(p[1])] for p in config["betas"]]
        n = int(config["pairs_per_task"])
        return [
            {"dim": int(D), "betas": pairs[i : i + n], **{k: config[k] for k in keep}}
            for D in config["dims"]
            for i in range(0, len(pairs), n)
        ]

    def run_task(self, task, seed):
        from ...training import single_thread

        with single_thread():
            return _run(task, seed)

    def analyse(self, config, tasks, results, seed):
        return analyse_cells(
            config,
            *split_cells(tasks, results),
            seed,
            label=configuration_label(config, self.params, LABEL_KEYS),
        )

    def plot(self, arrays, config, outdir):
        return [
            plot_owner_gap(arrays, outdir),
            plot_lag_shares(arrays, outdir),
            plot_alignment(arrays, outdir),
            plot_share_trajectories(arrays, outdir),
        ]


# ---------------------------------------------------------------------------- the probe


def cell_seed(seed: np.random.SeedSequence, cell: dict) -> np.random.SeedSequence:
    """The seed of one cell: ``task_seed(root, "gauge_under_adam", cell)``, the seed the harness
    gave the cell when it was its own task (the harness seeds a task with ``task_seed(root,
    experiment, task)``, the derivation every summary records). ``root`` is the run's root seed,
    the ``entropy`` of the task's ``SeedSequence`` (an integer: `gaugedyn._meta.task_seed()`
    builds it so). Batching the cells of a ``D`` into one task leaves each copy's data, hence
    every number, as it was."""
    if not isinstance(seed.entropy, int):
        raise InputError(
            f"seed entropy {seed.entropy!r} is not allowed; allowed: a SeedSequence "
            "with one integer entropy (the harness's task seeds)"
        )
    return task_seed(seed.entropy, GaugeUnderAdam.name, cell)


class _PerCell:
    """``on_step`` of a batched run: cell ``j``'s probe sees only its own copies, rows
    ``j S .. (j + 1) S - 1`` (`gaugedyn.training.StepRecord.select()`)."""

    def __init__(self, probes: list, seeds: int):
        self.probes, self.seeds = probes, seeds

    def __call__(self, record) -> None:
        S = self.seeds
        for j, probe in enumerate(self.probes):
            probe(record.select(slice(j * S, (j + 1) * S)))


def _copies(result, rows: slice):
    """The `TrainResult` of the copies ``rows`` alone (contiguous arrays, so every
    observable is computed as on the run of those copies alone)."""
    import dataclasses

    pick = {
        k: np.ascontiguousarray(getattr(result, k)[rows])
        for k in ("a", "Q", "R", "loss", "loss_empirical")
    }
    return dataclasses.replace(
        result, **pick, seeds=result.seeds[rows], root_seed=result.root_seed[rows.start]
    )


def train_cells(problem, cells: list[dict], roots: list[int]) -> list[tuple]:
    """``[(TrainResult, probe result)]``, one per cell: ``cells[j]['seeds']`` seeds of ``problem``
    under Adam at the cell's ``(beta1, beta2)`` from root seed ``roots[j]``, every cell's seeds
    one program (one Adam pair and one root per copy; a lone cell runs exactly as before, with
    one pair and one root). Each cell's `AdamProbe` observes its own copies only."""
    from ...adam import AdamProbe
    from ...theory import Definitions
    from ...training import TrainConfig, train

    first, S = cells[0], int(cells[0]["seeds"])
    pairs = [(c["beta1"], c["beta2"]) for c in cells]
    one = len(cells) == 1
    cfg = TrainConfig(
        optimizer="adam",
        lr=first["lr"],
        steps=first["steps"],
        samples=None,
        batch=first["batch"],
        betas=pairs[0] if one else [p for p in pairs for _ in range(S)],
    )
    definitions = Definitions(threshold=first["threshold"], prune_tol=first["prune_tol"])
    probes = [AdamProbe(first["steps"], first["bins"], first["skip"], p, cfg.eps) for p in pairs]
    if one:
        result = train(
            problem,
            cfg,
            seeds=S,
            root_seed=roots[0],
            dtype="float64",
            device="cpu",
            definitions=definitions,
            on_step=probes[0],
        )
        return [(result, probes[0].result())]
    result = train(
        problem,
        cfg,
        root_seed=[r for r in roots for _ in range(S)],
        seed_indices=list(range(S)) * len(cells),
        dtype="float64",
        device="cpu",
        definitions=definitions,
        on_step=_PerCell(probes, S),
    )
    return [
        (_copies(result, slice(j * S, (j + 1) * S)), probe.result())
        for j, probe in enumerate(probes)
    ]


def train_probed(problem, task: dict, root_seed: int):
    """``(TrainResult, probe result)`` of ``task['seeds']`` seeds of ``problem`` under Adam at
    the task's ``(beta1, beta2)`` (one cell of `train_cells()`)."""
    return train_cells(problem, [task], [root_seed])[0]


def _run(task: dict, seed: np.random.SeedSequence) -> dict:
    """Every cell of a task (one ``D``, every ``(beta1, beta2)``): each output with a leading
    cell axis (``time`` shared)."""
    from ...theory import duplicates, single

    cells = cell_tasks(task)
    roots = [integer_seed(cell_seed(seed, c)) for c in cells]
    D, K = task["dim"], task["copies"]
    outs: list[dict] = [{} for _ in cells]
    checks: list[list] = [[] for _ in cells]
    for gauge in GAUGES:
        tag = gauge.split("-")[0]
        trained = train_cells(single(D, gauge, scale=task["scale"]), cells, roots)
        for out, chk, (res, probe) in zip(outs, checks, trained):
            out[f"t_spec_{tag}"] = res.specialization_time()[:, 0]
            out[f"alignment_{tag}"] = np.median(res.alignment()[:, :, 0, 0], axis=0)
            out[f"delta_drift_{tag}"] = res.delta_drift()[:, -1]
            out[f"loss_{tag}"] = res.loss[:, -1]
            out[f"share_{tag}"] = probe["share_mean"][:, 0, :]
            out[f"share_bins_{tag}"] = probe["share_bins"][:, 0, :]
            out["time"] = res.time
            chk.append(probe)
    trained = train_cells(
        duplicates(D, ["a-heavy"] + ["w-heavy"] * (K - 1), scale=task["scale"]), cells, roots
    )
    for out, chk, (res, probe) in zip(outs, checks, trained):
        out["owner"] = res.owner()[:, -1, 0]
        out["rho_dup"] = res.rho()[:, -1, :]
        out["t_spec_dup"] = res.specialization_time()[:, 0]
        out["loss_dup"] = res.loss[:, -1]
        out["share_dup"] = probe["share_mean"]
        out["share_bins_dup"] = probe["share_bins"]
        chk.append(probe)
        out["probe_calls"] = np.array([c["probe_calls"] for c in chk])
        out["probe_counter_ok"] = all(c["probe_counter_ok"] for c in chk)
        for key in ("sum_error", "applied_error", "lag_norm_max"):
            out[key] = max(float(c[key]) for c in chk)
    stacked = {k: np.stack([np.asarray(o[k]) for o in outs]) for k in outs[0] if k != "time"}
    return {"time": outs[0]["time"], **stacked}


# ---------------------------------------------------------------------------- statistics


# ---------------------------------------------------------------------------- analysis


# ---------------------------------------------------------------------------- figures


EXPERIMENT = GaugeUnderAdam()
