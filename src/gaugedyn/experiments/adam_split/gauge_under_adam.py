"""The gauge under Adam: does the favourable gauge still choose the owner, and how wide is the gap?

Gradient flow conserves ``delta_i = a_i^2 - |w_i|^2`` and the gauge only changes the transport
mobility ``1/|w_i|^2``; Adam's per-coordinate normalisation ``m^/(sqrt(v^) + eps)`` breaks the
rescaling symmetry, so its answer is measured here, not assumed. At each input dimension ``D``
(one task) the ``S`` seeds of every ``(beta1, beta2)`` (tied and untied) are trained as one
batched program by :func:`gaugedyn.training.train` (online Adam, fresh Gaussian batches, time
``t = sum_k eta_k``; one Adam pair and one root seed per copy, so each copy is bit for bit its
cell trained alone, with the seed the cell had as its own task, :func:`cell_seed`):

- ``single`` with the w-heavy and with the a-heavy gauge (same seeds, hence the same data): the
  specialization times ``t_w``, ``t_a`` (first ``t`` with alignment ``>= threshold``) and their
  ratio per seed, the *gauge gap* ``t_w / t_a``, summarised by its geometric mean over seeds with
  a percentile-bootstrap 95% interval;
- ``duplicates``: copy 0 a-heavy, copies ``1..K-1`` w-heavy, same initial function; the
  *owner-selection rate* is the fraction of seeds whose final owner (``argmax_i rho_i m_i``) is the
  a-heavy copy, with a Wilson 95% interval;
- the lag share of each neuron's update: every Adam step of the trainer is observed by
  :class:`AdamProbe`, passed as ``train(..., on_step=probe)``, which keeps
  ``w_t = b2 w_{t-1} + (1-b2) g_t`` and splits each step with
  :func:`gaugedyn.adam.decompose_state`; per neuron ``i`` (its ``a_i`` and ``w_i``) and step, the
  shares ``|p_k| / (|sign| + |lag| + |residual|)``, averaged over steps after the start-up
  fraction ``skip`` and in ``bins`` windows of time.

Checks (they decide the exit status): the probe saw every step; the parts sum to the update to
``1e-12`` relative to ``max(1, sum_k |p_k|)`` (float64); the update it split is the step the
trainer applied, to ``1e-12`` relative;
the lag part is exactly zero at every step of every tied configuration. Findings (owner rate and
gauge gap per ``D``, ids ``finding:...``) are judged by rules of the catalogue
(:data:`gaugedyn.stats.RULES`: ``proportion`` and ``mean_threshold`` on per-seed log ratios)
over every comparison set, all configurations, the tied and the untied ones, stored as the
finding's readings ("depends on the reading" when they disagree); lag shares and the drift of
``delta`` are measurements.
"""

from __future__ import annotations

import numpy as np

from ..._errors import InputError
from ..._meta import integer_seed, task_seed
from ...harness import Claim, Experiment, Param, configuration_label, judged, no_paper_value
from ...stats import bootstrap_ci, generator, judge, mean_ci, proportion_ci

GAUGES = ("w-heavy", "a-heavy")
SUM_TOL = 1e-12
APPLIED_TOL = 1e-12
PART_NAMES = ("sign", "lag", "residual")
LABEL_KEYS = ("dims", "betas", "seeds", "steps", "lr", "batch", "copies", "scale", "threshold")


def _pairs(v) -> bool:
    return (isinstance(v, list) and len(v) >= 1
            and all(isinstance(p, list) and len(p) == 2
                    and all(isinstance(b, float | int) and not isinstance(b, bool)
                            and 0.0 <= b < 1.0 for b in p) for p in v)
            and len({tuple(map(float, p)) for p in v}) == len(v))


class GaugeUnderAdam(Experiment):
    name = "gauge_under_adam"
    description = ("single (both gauges) and duplicates (one a-heavy, the rest w-heavy) trained "
                   "with Adam at tied and untied (beta1, beta2) over seeds: owner-selection rate, "
                   "gauge gap in specialization time and each neuron's lag share, with intervals")
    params = {
        "dims": Param(list, [16, 64], quick=[32], item=int, lo=4, hi=4096, min_len=1, max_len=8,
                      distinct=True, why="memory: seeds x copies x D floats per moment",
                      help="input dimensions D (the gauge strength is D)"),
        "betas": Param(list, [[0.9, 0.9], [0.99, 0.99], [0.9, 0.99], [0.9, 0.999], [0.99, 0.9]],
                       quick=[[0.9, 0.9], [0.99, 0.99], [0.9, 0.999], [0.99, 0.9]], check=_pairs,
                       min_len=1, max_len=12,
                       allowed="a list of at most 12 distinct [beta1, beta2] pairs, each in [0, 1)",
                       help="Adam factors; tied when beta1 == beta2"),
        "seeds": Param(int, 32, quick=8, lo=2, hi=4096, why="memory: the seeds train as one batch",
                       help="seeds per configuration, trained as one batch"),
        "steps": Param(int, 2000, quick=800, lo=10, hi=10**6, why="time: steps of every training",
                       help="Adam steps"),
        "lr": Param(float, 0.01, lo=0.0, lo_open=True, hi=1.0,
                    why="Adam's step is lr per coordinate", help="Adam step size (time t = lr * steps)"),
        "batch": Param(int, 32, lo=1, hi=100_000, why="memory: batch x D floats per step",
                       help="fresh Gaussian samples per step"),
        "copies": Param(int, 2, lo=2, hi=16, why="the duplicates set-up has at most 16 copies",
                        help="K of the duplicates set-up (copy 0 a-heavy, the others w-heavy)"),
        "scale": Param(float, 1.0, lo=0.0, lo_open=True, hi=100.0,
                       why="far outside the studied regime beyond", help="initial coefficient rho0 = s"),
        "threshold": Param(float, 0.95, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                           why="an alignment", help="alignment that defines specialization"),
        "prune_tol": Param(float, 1e-2, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                           why="a fraction of the initial coefficient",
                           help="|rho| below which a copy counts as pruned"),
        "bins": Param(int, 40, lo=1, hi=1000, why="memory: bins x seeds x copies x 3 floats",
                      help="time windows of the recorded share trajectories"),
        "pairs_per_task": Param(int, 1, lo=1, hi=12,
                                why="a task trains this many beta pairs as one program",
                                help="(beta1, beta2) pairs per task, their seeds trained as one "
                                     "program; no number depends on it (every cell keeps its own "
                                     "seed). 1: one task per cell, which keeps every worker busy "
                                     "on CPU, where one program over the pairs measured no faster "
                                     "(benchmarks/bench_batched_grids.py: the per-copy data "
                                     "draws dominate); more for a device"),
        "skip": Param(float, 0.05, lo=0.0, hi=1.0, hi_open=True, why="a fraction of the steps",
                      help="start-up fraction of steps left out of the mean shares"),
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

    def tasks(self, config):
        keep = ("seeds", "steps", "lr", "batch", "copies", "scale", "threshold", "prune_tol",
                "bins", "skip")
        pairs = [[float(p[0]), float(p[1])] for p in config["betas"]]
        n = int(config["pairs_per_task"])
        return [{"dim": int(D), "betas": pairs[i:i + n], **{k: config[k] for k in keep}}
                for D in config["dims"] for i in range(0, len(pairs), n)]

    def run_task(self, task, seed):
        from ...training import single_thread

        with single_thread():
            return _run(task, seed)

    def analyse(self, config, tasks, results, seed):
        return analyse_cells(config, *split_cells(tasks, results), seed)

    def plot(self, arrays, config, outdir):
        return [plot_owner_gap(arrays, outdir), plot_lag_shares(arrays, outdir),
                plot_alignment(arrays, outdir), plot_share_trajectories(arrays, outdir)]


# ---------------------------------------------------------------------------- the probe


def cell_tasks(task: dict) -> list[dict]:
    """The cells ``(D, beta1, beta2)`` of a task, each the task a cell was before the cells of a
    ``D`` were batched: ``{"dim", "beta1", "beta2", and the shared settings}``."""
    rest = {k: v for k, v in task.items() if k != "betas"}
    return [{**rest, "beta1": float(b1), "beta2": float(b2)} for b1, b2 in task["betas"]]


def cell_seed(seed: np.random.SeedSequence, cell: dict) -> np.random.SeedSequence:
    """The seed of one cell: ``task_seed(root, "gauge_under_adam", cell)``, the seed the harness
    gave the cell when it was its own task (the harness seeds a task with ``task_seed(root,
    experiment, task)``, the derivation every summary records). ``root`` is the run's root seed,
    the ``entropy`` of the task's ``SeedSequence`` (an integer: :func:`gaugedyn._meta.task_seed`
    builds it so). Batching the cells of a ``D`` into one task leaves each copy's data, hence
    every number, as it was."""
    if not isinstance(seed.entropy, int):
        raise InputError(f"seed entropy {seed.entropy!r} is not allowed; allowed: a SeedSequence "
                         "with one integer entropy (the harness's task seeds)")
    return task_seed(seed.entropy, GaugeUnderAdam.name, cell)


class _PerCell:
    """``on_step`` of a batched run: cell ``j``'s probe sees only its own copies, rows
    ``j S .. (j + 1) S - 1`` (:meth:`gaugedyn.training.StepRecord.select`)."""

    def __init__(self, probes: list, seeds: int):
        self.probes, self.seeds = probes, seeds

    def __call__(self, record) -> None:
        S = self.seeds
        for j, probe in enumerate(self.probes):
            probe(record.select(slice(j * S, (j + 1) * S)))


def _copies(result, rows: slice):
    """The :class:`TrainResult` of the copies ``rows`` alone (contiguous arrays, so every
    observable is computed as on the run of those copies alone)."""
    import dataclasses

    pick = {k: np.ascontiguousarray(getattr(result, k)[rows])
            for k in ("a", "Q", "R", "loss", "loss_empirical")}
    return dataclasses.replace(result, **pick, seeds=result.seeds[rows],
                               root_seed=result.root_seed[rows.start])


def train_cells(problem, cells: list[dict], roots: list[int]) -> list[tuple]:
    """``[(TrainResult, probe result)]``, one per cell: ``cells[j]['seeds']`` seeds of ``problem``
    under Adam at the cell's ``(beta1, beta2)`` from root seed ``roots[j]``, every cell's seeds
    one program (one Adam pair and one root per copy; a lone cell runs exactly as before, with
    one pair and one root). Each cell's :class:`AdamProbe` observes its own copies only."""
    from ...adam import AdamProbe
    from ...theory import Definitions
    from ...training import TrainConfig, train

    first, S = cells[0], int(cells[0]["seeds"])
    pairs = [(c["beta1"], c["beta2"]) for c in cells]
    one = len(cells) == 1
    cfg = TrainConfig(optimizer="adam", lr=first["lr"], steps=first["steps"], samples=None,
                      batch=first["batch"],
                      betas=pairs[0] if one else [p for p in pairs for _ in range(S)])
    definitions = Definitions(threshold=first["threshold"], prune_tol=first["prune_tol"])
    probes = [AdamProbe(first["steps"], first["bins"], first["skip"], p, cfg.eps) for p in pairs]
    if one:
        result = train(problem, cfg, seeds=S, root_seed=roots[0], dtype="float64",
                       device="cpu", definitions=definitions, on_step=probes[0])
        return [(result, probes[0].result())]
    result = train(problem, cfg, root_seed=[r for r in roots for _ in range(S)],
                   seed_indices=list(range(S)) * len(cells), dtype="float64", device="cpu",
                   definitions=definitions, on_step=_PerCell(probes, S))
    return [(_copies(result, slice(j * S, (j + 1) * S)), probe.result())
            for j, probe in enumerate(probes)]


def train_probed(problem, task: dict, root_seed: int):
    """``(TrainResult, probe result)`` of ``task['seeds']`` seeds of ``problem`` under Adam at
    the task's ``(beta1, beta2)`` (one cell of :func:`train_cells`)."""
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
    trained = train_cells(duplicates(D, ["a-heavy"] + ["w-heavy"] * (K - 1),
                                     scale=task["scale"]), cells, roots)
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


def split_cells(tasks: list[dict], results: list[dict]) -> tuple[list[dict], list[dict]]:
    """The per-``D`` tasks and results as one task and one result per cell (the form the
    analysis reads), in the order ``D``, then ``(beta1, beta2)``."""
    cells, per_cell = [], []
    for t, r in zip(tasks, results):
        for j, cell in enumerate(cell_tasks(t)):
            cells.append(cell)
            per_cell.append({k: (v if k == "time" else np.asarray(v)[j]) for k, v in r.items()})
    return cells, per_cell


# ---------------------------------------------------------------------------- statistics


def gap_interval(num, den, rng: np.random.Generator) -> tuple[float, float, float, int]:
    """Geometric mean of ``num / den`` over the pairs where both are finite and positive, with the
    percentile-bootstrap interval of :func:`gaugedyn.stats.bootstrap_ci` on the log ratios:
    ``(estimate, low, high, pairs used)``."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    ok = np.isfinite(num) & np.isfinite(den) & (num > 0) & (den > 0)
    logs = np.log(num[ok] / den[ok])
    iv = bootstrap_ci(logs, rng=rng)
    return float(np.exp(iv.estimate)), float(np.exp(iv.low)), float(np.exp(iv.high)), int(ok.sum())


def seed_mean_ci(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) with the Student-t 95% interval of :func:`gaugedyn.stats.mean_ci`
    at every other index."""
    x = np.asarray(x, dtype=float)
    flat = x.reshape(x.shape[0], -1)
    ivs = [mean_ci(flat[:, k]) for k in range(flat.shape[1])]
    return tuple(np.array([iv[i] for iv in ivs]).reshape(x.shape[1:]) for i in range(3))


# ---------------------------------------------------------------------------- analysis


def analyse_cells(config: dict, tasks: list[dict], results: list[dict],
                  seed: np.random.SeedSequence):
    dims = sorted({int(t["dim"]) for t in tasks})
    pairs = []
    for t in tasks:
        p = (float(t["beta1"]), float(t["beta2"]))
        if p not in pairs:
            pairs.append(p)
    nD, nP = len(dims), len(pairs)
    S = int(tasks[0]["seeds"])
    K = int(tasks[0]["copies"])
    T = len(results[0]["time"])
    bins = int(tasks[0]["bins"])
    a = {
        "dims": np.array(dims), "beta1": np.array([p[0] for p in pairs]),
        "beta2": np.array([p[1] for p in pairs]),
        "tied": np.array([p[0] == p[1] for p in pairs]),
        "time": np.asarray(results[0]["time"], dtype=float),
        "threshold": np.array(float(tasks[0]["threshold"])),
    }
    shapes = {
        "owner_rate": (nD, nP), "owner_lo": (nD, nP), "owner_hi": (nD, nP),
        "owner_count": (nD, nP), "gap": (nD, nP), "gap_lo": (nD, nP), "gap_hi": (nD, nP),
        "gap_pairs": (nD, nP), "t_spec_w": (nD, nP, S), "t_spec_a": (nD, nP, S),
        "t_spec_dup": (nD, nP, S), "rho_dup": (nD, nP, S, K), "pruned_rate": (nD, nP),
        "share_dup": (nD, nP, K, 3), "share_dup_lo": (nD, nP, K, 3),
        "share_dup_hi": (nD, nP, K, 3), "share_single": (nD, nP, 2, 3),
        "share_single_lo": (nD, nP, 2, 3), "share_single_hi": (nD, nP, 2, 3),
        "share_bins_dup": (nD, nP, bins, K, 3), "share_bins_single": (nD, nP, bins, 2, 3),
        "alignment": (nD, nP, 2, T), "delta_drift": (nD, nP, 2, S), "loss": (nD, nP, 3, S),
    }
    for k, shape in shapes.items():
        a[k] = np.full(shape, np.nan)
    for t, r in zip(tasks, results):
        i, j = dims.index(int(t["dim"])), pairs.index((float(t["beta1"]), float(t["beta2"])))
        owner = np.asarray(r["owner"])
        k = int(np.sum(owner == 0))
        a["owner_count"][i, j] = k
        a["owner_rate"][i, j] = k / owner.size
        a["owner_lo"][i, j], a["owner_hi"][i, j] = proportion_ci(k, owner.size)[1:]
        rng = generator(seed, "gauge_gap", i, j)
        est, lo, hi, n = gap_interval(r["t_spec_w"], r["t_spec_a"], rng)
        a["gap"][i, j], a["gap_lo"][i, j], a["gap_hi"][i, j], a["gap_pairs"][i, j] = est, lo, hi, n
        a["t_spec_w"][i, j], a["t_spec_a"][i, j] = r["t_spec_w"], r["t_spec_a"]
        a["t_spec_dup"][i, j] = r["t_spec_dup"]
        rho = np.abs(np.asarray(r["rho_dup"], dtype=float))
        a["rho_dup"][i, j] = rho
        a["pruned_rate"][i, j] = float(np.mean(rho[:, 1:] < float(t["prune_tol"])))
        m, lo, hi = seed_mean_ci(r["share_dup"])
        a["share_dup"][i, j], a["share_dup_lo"][i, j], a["share_dup_hi"][i, j] = m, lo, hi
        for g, tag in enumerate(("w", "a")):
            m, lo, hi = seed_mean_ci(r[f"share_{tag}"])
            a["share_single"][i, j, g] = m
            a["share_single_lo"][i, j, g], a["share_single_hi"][i, j, g] = lo, hi
            a["share_bins_single"][i, j, :, g] = r[f"share_bins_{tag}"]
            a["alignment"][i, j, g] = r[f"alignment_{tag}"]
            a["delta_drift"][i, j, g] = r[f"delta_drift_{tag}"]
        a["share_bins_dup"][i, j] = r["share_bins_dup"]
        a["loss"][i, j] = [r["loss_w"], r["loss_a"], r["loss_dup"]]
    label = configuration_label(config, GaugeUnderAdam.params, LABEL_KEYS)
    claims = check_claims(tasks, results) + finding_claims(a, S, K, label, seed)
    diagnostics = {"seeds_per_cell": S, "cells": nD * nP, "provisional": label or None,
                   "probe": "every Adam step is observed through train(on_step=...); "
                            "see gaugedyn.adam.AdamProbe",
                   "cell_seeds": "a task trains pairs_per_task (beta1, beta2) cells of one D; cell c draws "
                                 "from task_seed(root, 'gauge_under_adam', c) (cell_seed: the "
                                 "seed the cell had as its own task)"}
    return a, claims, diagnostics


def check_claims(tasks: list[dict], results: list[dict]) -> list[Claim]:
    """The package-correctness checks (they decide the exit status)."""
    calls_ok = all(bool(r["probe_counter_ok"]) and np.all(np.asarray(r["probe_calls"]) == t["steps"])
                   for t, r in zip(tasks, results))
    sum_err = max(float(r["sum_error"]) for r in results)
    applied = max(float(r["applied_error"]) for r in results)
    tied = [r for t, r in zip(tasks, results) if float(t["beta1"]) == float(t["beta2"])]
    lag_tied = max((max(float(r["lag_norm_max"]),
                        float(np.max(np.asarray(r["share_dup"])[..., 1])),
                        float(np.max(np.asarray(r["share_w"])[..., 1])),
                        float(np.max(np.asarray(r["share_a"])[..., 1]))) for r in tied),
                   default=float("nan"))
    return [
        Claim(id="gauge_under_adam.probe_saw_every_step",
              statement="the probe observed every Adam step of every run, with the optimizer's "
                        "step counter advancing by one each time",
              measured=bool(calls_ok), expected=True, tolerance=0, passed=bool(calls_ok)),
        Claim(id="gauge_under_adam.parts_sum_to_update",
              statement=f"sign + lag + transition + ratio + eps equals the update to {SUM_TOL:g} "
                        "in float64 at every coordinate and step (largest error relative to "
                        "max(1, sum of the parts' magnitudes))",
              measured=sum_err, expected=0.0, tolerance=SUM_TOL, passed=sum_err <= SUM_TOL),
        Claim(id="gauge_under_adam.update_is_applied_step",
              statement="the split update is the trainer's step: |theta_t - theta_{t-1} + lr u_t| "
                        "/ (|theta_{t-1}| + lr |u_t|) (largest over coordinates and steps)",
              measured=applied, expected=0.0, tolerance=APPLIED_TOL, passed=applied <= APPLIED_TOL),
        Claim(id="gauge_under_adam.lag_zero_when_tied",
              statement=f"with beta1 == beta2 ({len(tied)} configurations) the lag part is exactly "
                        "zero at every step for every neuron (largest lag norm or share)",
              measured=lag_tied, expected=0.0, tolerance=0.0,
              passed=(lag_tied == 0.0) if tied else True),
    ]


def _cell(b1: float, b2: float) -> str:
    return f"({b1:g}, {b2:g})"


def _pooled(values: np.ndarray, mask: np.ndarray) -> float:
    v = np.asarray(values, dtype=float)[..., mask]
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


GROUPS = ("all configurations", "tied", "untied")
"""The comparison sets a finding is judged over (its readings): every ``(beta1, beta2)``, the
tied ones, the untied ones."""


def _groups(tied: np.ndarray) -> dict[str, np.ndarray]:
    masks = {"all configurations": np.ones_like(tied, dtype=bool), "tied": tied,
             "untied": ~tied}
    return {g: m for g, m in masks.items() if m.any()}


def owner_outcomes(a: dict, i: int, mask: np.ndarray, S: int) -> np.ndarray:
    """One 0/1 outcome per seed and configuration of ``mask`` at ``D = dims[i]`` (1: the a-heavy
    copy ends as the owner), from the counts per configuration."""
    counts = np.nan_to_num(a["owner_count"][i, mask]).astype(int)
    return np.concatenate([np.r_[np.ones(k), np.zeros(S - k)] for k in counts])


def gap_per_seed(a: dict, i: int, mask: np.ndarray) -> np.ndarray:
    """Per seed, the mean over the configurations of ``mask`` of ``log(t_w / t_a)`` where both
    specialized (``nan`` for a seed where none did): one value per seed index, so an interval
    counts seeds, not configurations x seeds (every configuration has its own root seed, so a
    seed index's configurations do not share data, and the per-index means are independent)."""
    num, den = a["t_spec_w"][i, mask], a["t_spec_a"][i, mask]  # (configurations, seeds)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where((num > 0) & (den > 0), np.log(num / den), np.nan)
    ok = np.isfinite(logs)
    with np.errstate(invalid="ignore"):
        return np.where(ok.any(axis=0), np.nansum(np.where(ok, logs, 0.0), axis=0)
                        / np.maximum(ok.sum(axis=0), 1), np.nan)


def _group_findings(a: dict, i: int, S: int, K: int, label: str, seed) -> list[Claim]:
    """Per ``D``, judged over each comparison set of :data:`GROUPS` (the finding's readings; its
    estimate and interval are over all configurations):

    - ``finding:owner_rate:D<D>``: the owner-selection rate, rule ``proportion`` (randomised
      exact interval, its uniform draw from the run's analysis ``seed``) over
      the seed-configurations, claimed ``> 1/2`` (the favourable gauge chooses the owner in most
      seeds);
    - ``finding:gauge_gap:D<D>``: the gauge gap, rule ``mean_threshold`` on the per-seed mean
      log ratio ``log(t_w / t_a)``, claimed ``> 0`` (the favourable gauge still specializes
      first; the statement reports the geometric mean ``exp`` of the estimate).

    The papers give no value under Adam (gradient flow: rate 1, gap about ``D^2``), so the
    power is computed at the threshold moved by the audit's margin
    (:func:`gaugedyn.harness._verdicts.margin_value`)."""
    D = int(a["dims"][i])
    cells = [_cell(x, y) for x, y in zip(a["beta1"], a["beta2"])]
    lead = f"{label}: " if label else ""
    groups = _groups(np.asarray(a["tied"], dtype=bool))
    rates = {g: judge("proportion", owner_outcomes(a, i, m, S), threshold=0.5, direction=">",
                      rng=generator(seed, "owner_rate", D, g)) for g, m in groups.items()}
    gaps = {g: judge("mean_threshold", gap_per_seed(a, i, m), threshold=0.0, direction=">")
            for g, m in groups.items()}
    every = {g: [c for c, x in zip(cells, m) if x] for g, m in groups.items()}
    out = []
    for kind, readings in (("owner_rate", rates), ("gauge_gap", gaps)):
        primary = readings["all configurations"]
        power_at, why = no_paper_value(primary)
        words = "; ".join(f"{g}: {j.verdict}" for g, j in readings.items())
        if kind == "owner_rate":
            k = int(np.sum(primary.values))
            statement = (f"{lead}duplicates at D = {D} (copy 0 a-heavy, {K - 1} w-heavy) under "
                         f"Adam: the a-heavy copy ends as the owner in most seeds ({k}/"
                         f"{primary.n} seed-configurations; rule proportion, judged over all "
                         f"configurations, the tied and the untied ones: {words}; the paper "
                         "gives no value under Adam)")
            expected = "> 0.5 (gradient flow: 1)"
        else:
            g = [np.exp(x) for x in (primary.estimate, primary.low, primary.high)]
            statement = (f"{lead}single at D = {D} under Adam: the gauge gap t_w / t_a in "
                         f"specialization time exceeds 1: per-seed mean log ratio > 0 over "
                         f"{primary.n} seeds (geometric mean {g[0]:.3g} [{g[1]:.3g}, "
                         f"{g[2]:.3g}]; rule mean_threshold, judged over all configurations, "
                         f"the tied and the untied ones: {words}; the paper gives no value "
                         "under Adam)")
            expected = "log gap > 0 (gradient flow: about log D^2)"
        detail = {g: {"estimate": j.estimate, "interval": [j.low, j.high], "n": j.n,
                      "threshold": j.threshold, "direction": j.direction, "verdict": j.verdict,
                      "rule": j.rule, "per_seed": j.values, "cells": every[g]}
                  for g, j in readings.items()}
        out.append(judged(f"finding:{kind}:D{D}", statement, primary, readings=readings,
                          paper_value=power_at, expected=expected,
                          extra={"provisional": label or None, "cells": cells,
                                 "reading_detail": detail, **why}))
    return out


def finding_claims(a: dict, S: int, K: int, label: str, seed) -> list[Claim]:
    """The findings per ``D`` (judged over every comparison set) and the measurements per
    ``D`` (see module doc)."""
    dims, b1, b2, tied = a["dims"], a["beta1"], a["beta2"], a["tied"]
    out = []
    note = f"{label}: measured under Adam" if label else "Measured under Adam"
    for i, D in enumerate(dims):
        cells = [_cell(x, y) for x, y in zip(b1, b2)]
        out += _group_findings(a, i, S, K, label, seed)
        gap_txt = "; ".join(
            f"{c}: {a['gap'][i, j]:.3g} [{a['gap_lo'][i, j]:.3g}, {a['gap_hi'][i, j]:.3g}] "
            f"(n = {int(a['gap_pairs'][i, j])})" for j, c in enumerate(cells))
        out.append(Claim(
            id=f"measurement:gauge_gap:D{int(D)}",
            statement=(f"{note}. single at D = {int(D)}: gauge gap t_w / t_a in specialization "
                       f"time (geometric mean over seeds, bootstrap 95% interval, n seeds where "
                       f"both specialized), per (beta1, beta2): {gap_txt}"),
            measured={"tied_geomean": float(np.exp(_pooled(np.log(a["gap"][i]), tied))),
                      "untied_geomean": float(np.exp(_pooled(np.log(a["gap"][i]), ~tied)))},
            expected="measured", tolerance=None, passed=True,
            kind="measurement"))
        lag_txt = "; ".join(
            f"{c}: a-heavy copy {a['share_dup'][i, j, 0, 1]:.3f}, w-heavy copies "
            f"{np.mean(a['share_dup'][i, j, 1:, 1]):.3f}; single w-heavy "
            f"{a['share_single'][i, j, 0, 1]:.3f}, a-heavy {a['share_single'][i, j, 1, 1]:.3f}"
            for j, c in enumerate(cells))
        out.append(Claim(
            id=f"measurement:lag_share:D{int(D)}",
            statement=(f"{note}. D = {int(D)}: mean lag share of each neuron's Adam update "
                       f"(seed means) per (beta1, beta2): {lag_txt}"),
            measured={"untied_max": float(np.nanmax(np.where(tied[None, :, None],
                                                             np.nan, a["share_dup"][i, :, :, 1])))
                      if (~tied).any() else None,
                      "tied_max": float(np.nanmax(a["share_dup"][i, tied][..., 1]))
                      if tied.any() else None},
            expected="measured (0 when tied)", tolerance=None, passed=True,
            kind="measurement"))
        drift = np.nanmedian(a["delta_drift"][i], axis=-1)
        out.append(Claim(
            id=f"measurement:delta_drift:D{int(D)}",
            statement=(f"{note}. D = {int(D)}: median over seeds of the final drift of the gauge "
                       "delta = a^2 - |w|^2 (conserved by gradient flow), per (beta1, beta2), "
                       "w-heavy / a-heavy: " + "; ".join(
                           f"{c}: {drift[j, 0]:.3g} / {drift[j, 1]:.3g}"
                           for j, c in enumerate(cells))),
            measured={"w_heavy_max": float(np.nanmax(drift[:, 0])),
                      "a_heavy_max": float(np.nanmax(drift[:, 1]))},
            expected="measured (gradient flow: 0)", tolerance=None, passed=True,
            kind="measurement"))
    return out


# ---------------------------------------------------------------------------- figures


def _xlabels(a: dict) -> list[str]:
    return [_cell(x, y) for x, y in zip(a["beta1"], a["beta2"])]


def _shade_tied(ax, tied) -> None:
    for j, t in enumerate(tied):
        if t:
            ax.axvspan(j - 0.45, j + 0.45, color="0.9", zorder=0)


def plot_owner_gap(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    dims, tied = a["dims"], a["tied"]
    x = np.arange(len(tied))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, D in enumerate(dims):
        off = 0.15 * (i - (len(dims) - 1) / 2)
        r = a["owner_rate"][i]
        axes[0].errorbar(x + off, r, yerr=[r - a["owner_lo"][i], a["owner_hi"][i] - r], fmt="o",
                         capsize=3, label=f"D = {int(D)}")
        g = a["gap"][i]
        axes[1].errorbar(x + off, g, yerr=[g - a["gap_lo"][i], a["gap_hi"][i] - g], fmt="o",
                         capsize=3, label=f"D = {int(D)}")
    for ax in axes:
        _shade_tied(ax, tied)
        ax.set_xticks(x, _xlabels(a), rotation=30)
        ax.set_xlabel("(beta1, beta2); grey: tied")
        ax.legend()
    axes[0].set(ylabel="owner = a-heavy copy (fraction of seeds)", ylim=(-0.05, 1.05),
                title="owner selection (Wilson 95%)")
    axes[1].set(ylabel="t_w / t_a", yscale="log", title="gauge gap (bootstrap 95%)")
    caption = ("Left: fraction of seeds in which the a-heavy copy of the duplicates ends as the "
               "owner, with Wilson 95% intervals. Right: gauge gap t_w / t_a of the single set-up "
               "(geometric mean over seeds, bootstrap 95% interval). Tied (beta1, beta2) shaded.")
    return save_figure(fig, outdir, "gauge_under_adam_owner_gap", caption)


def plot_lag_shares(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    dims, tied = a["dims"], a["tied"]
    x = np.arange(len(tied))
    fig, axes = plt.subplots(1, len(dims), figsize=(4.8 * len(dims) + 0.5, 3.8), squeeze=False,
                             sharey=True)
    series = [("duplicates: a-heavy copy", "share_dup", 0, "o"),
              ("duplicates: w-heavy copy 1", "share_dup", 1, "s"),
              ("single w-heavy", "share_single", 0, "^"), ("single a-heavy", "share_single", 1, "v")]
    for i, D in enumerate(dims):
        ax = axes[0, i]
        _shade_tied(ax, tied)
        for n, (label, key, idx, marker) in enumerate(series):
            m = a[key][i, :, idx, 1]
            lo, hi = a[f"{key}_lo"][i, :, idx, 1], a[f"{key}_hi"][i, :, idx, 1]
            ax.errorbar(x + 0.12 * (n - 1.5), m, yerr=[m - lo, hi - m], fmt=marker, capsize=2,
                        label=label)
        ax.set_xticks(x, _xlabels(a), rotation=30)
        ax.set(title=f"D = {int(D)}", xlabel="(beta1, beta2); grey: tied")
    axes[0, 0].set_ylabel("lag share of the neuron's update")
    axes[0, 0].legend(fontsize=7)
    caption = ("Lag share |lag| / (|sign| + |lag| + |residual|) of each neuron's Adam update "
               "(mean over steps after start-up, seed mean with 95% interval): the duplicates' "
               "a-heavy and w-heavy copies and the single neuron in each gauge. Exactly zero on "
               "tied (shaded) configurations.")
    return save_figure(fig, outdir, "gauge_under_adam_lag_shares", caption)


def plot_alignment(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    i = len(a["dims"]) - 1
    t = a["time"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for j, label in enumerate(_xlabels(a)):
        color = f"C{j % 8}"
        ax.plot(t[1:], a["alignment"][i, j, 1, 1:], color=color, ls="-",
                label=f"{label} a-heavy")
        ax.plot(t[1:], a["alignment"][i, j, 0, 1:], color=color, ls="--",
                label=f"{label} w-heavy")
    ax.axhline(float(a["threshold"]), color="k", ls=":", lw=1)
    ax.set(xscale="log", xlabel="time t = lr * steps", ylabel="alignment u.v (seed median)",
           title=f"single, D = {int(a['dims'][i])}")
    ax.legend(fontsize=6, ncol=2)
    caption = (f"Alignment of the single neuron with the teacher under Adam at D = "
               f"{int(a['dims'][i])} (median over seeds); solid a-heavy, dashed w-heavy, one colour "
               "per (beta1, beta2); dotted: the specialization threshold.")
    return save_figure(fig, outdir, "gauge_under_adam_alignment", caption)


def plot_share_trajectories(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    i = len(a["dims"]) - 1
    bins = a["share_bins_dup"].shape[2]
    t_end = float(a["time"][-1])
    tb = (np.arange(bins) + 0.5) * t_end / bins
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for j, label in enumerate(_xlabels(a)):
        color = f"C{j % 8}"
        for ax, k in zip(axes, (0, 1)):
            ax.plot(tb, a["share_bins_dup"][i, j, :, k, 1], color=color, label=label)
    for ax, title in zip(axes, ("a-heavy copy", "w-heavy copy 1")):
        ax.set(xlabel="time t", title=f"duplicates, D = {int(a['dims'][i])}: {title}")
    axes[0].set_ylabel("lag share (seed mean, window mean)")
    axes[0].legend(fontsize=7)
    caption = ("Lag share of each duplicate copy's Adam update over time (window means, seed "
               f"means) at D = {int(a['dims'][i])}, one colour per (beta1, beta2).")
    return save_figure(fig, outdir, "gauge_under_adam_share_trajectories", caption)


EXPERIMENT = GaugeUnderAdam()

