"""The headline configuration of ``prototypes`` (issue 44): ``coverage_lowest_error`` alone, at a
seed count per size chosen before the run for power at the declared smallest difference.

``design = "headline"`` (the declared extension ``headline``,
``gaugedyn run simulations/prototypes.toml --set design=headline``) trains, per size ``N`` of
``sizes``, `._protocol.HEADLINE_SEEDS` ``[N]`` seeds of the four approaches the abstract names
(`VARIANTS`: plain fit, coverage one-sided, separation, overlap) at the reference ``lambda`` and
``tau``, initialisation ``inside``, the judged step size ``lr`` and fixed budget ``steps`` (the
primary specification): nothing else of the full configuration. Its task seeds come from the
package's seed rule (`gaugedyn._meta.task_seed`) with the coordinate ``stream = "headline"``,
so no task shares a seed sequence with the full run's tasks (which have no such coordinate) or
with the pilot's (``SeedSequence([4444, N, init])``, no spawn key). The finding is judged by the
declared rule (`._protocol.rule_of`), each cell alone (its own seed count), and its power is the
product over sizes of the power of the rule on each size's cells, resampled from the run's own
values at that size's count (`size_power`): the sizes are independent tasks and the rule says
HELD exactly when it does at every size.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ... import stats
from ..._errors import InputError
from ...harness import judged
from ._protocol import (
    COV,
    HEADLINE_COVERAGE,
    HEADLINE_INIT,
    HEADLINE_STAGES,
    OV,
    PLAIN,
    REFERENCE_TAU,
    REFERENCE_WEIGHT,
    SEP,
    measure_of,
)

VARIANTS: tuple[tuple[tuple[int, int, int], str | None], ...] = (
    (PLAIN, None),
    (COV, HEADLINE_COVERAGE),
    (SEP, None),
    (OV, None),
)
"""The runs of one seed: (mask, coverage reading), coverage's at `HEADLINE_COVERAGE`."""

FINDING = f"coverage_lowest_error[init={HEADLINE_INIT},coverage={HEADLINE_COVERAGE}]"
"""The one finding the headline configuration judges."""


def seed_count(n: int, design: str = "headline") -> int:
    """The declared seed count at size ``n`` of the stage ``design`` (`HEADLINE_STAGES`);
    `InputError` for a size or a stage without one."""
    if design not in HEADLINE_STAGES:
        raise InputError(
            f"design {design!r}: the headline's stages are {sorted(HEADLINE_STAGES)} "
            "(_protocol.HEADLINE_STAGES)"
        )
    counts = HEADLINE_STAGES[design]
    if int(n) not in counts:
        raise InputError(
            f"sizes contains N = {n}: the headline configuration's stage {design!r} declares seed "
            f"counts only for N in {sorted(counts)} (_protocol.HEADLINE_STAGES)"
        )
    return int(counts[int(n)])


def tasks(config: dict) -> list[dict]:
    """One task per size: its seed count, the judged step size and fixed budget; the stage
    (``config["design"]``) is also the task's seed stream."""
    design = str(config["design"])
    return [
        {
            "n": int(n),
            "design": design,
            "stream": design,
            "init": HEADLINE_INIT,
            "coverage": HEADLINE_COVERAGE,
            "lr": float(config["lr"]),
            "steps": int(config["steps"]),
            "seeds": seed_count(n, design),
            "target": config["target"],
        }
        for n in config["sizes"]
    ]


def headline_runs(n: int, seeds: int, seed: np.random.SeedSequence, target: str = "sin"):
    """The `._model.Runs` of `VARIANTS` for ``seeds`` seeds at size ``n``: seed ``s``'s data
    and initialisation from ``stats.generator(seed, "data" | "init", s)``, as the full run
    draws them."""
    from . import _model as model

    runs = [
        {"mask": mask, "coverage": cov, "tau": REFERENCE_TAU, "weight": REFERENCE_WEIGHT}
        for mask, cov in VARIANTS
    ]
    return model.seeded_runs(seed, n, seeds, HEADLINE_INIT, target, runs)


def run_task(task: dict, seed: np.random.SeedSequence) -> dict:
    """``reconstruction_error`` ``(S, 4)`` of one size (columns `VARIANTS`)."""
    from . import _measures as pm
    from . import _model as model

    runs = headline_runs(task["n"], task["seeds"], seed, task["target"])
    out = model.train_fused(runs, steps=int(task["steps"]), lr=task["lr"], weight=REFERENCE_WEIGHT)
    got = pm.measure_runs(runs.x, runs.y, out["w"], out["b"], out["a"], out["c"])
    return {"reconstruction_error": got["reconstruction_error"].reshape(int(task["seeds"]), -1)}


def log_ratios(errors: list[np.ndarray]) -> np.ndarray:
    """``(max S, 3 n_sizes)``: per seed ``log(err_k / err_cov)``, cells approach-major
    (``(plain, sep, ov) x N``, the full run's layout), from each size's ``(S_N, 4)`` errors;
    a size's column below its own seed count is ``nan`` (the rule bounds each cell alone)."""
    rows = max(e.shape[0] for e in errors)
    out = np.full((rows, 3 * len(errors)), np.nan)
    for i, e in enumerate(errors):
        e = np.asarray(e, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            for k, col in enumerate((0, 2, 3)):
                out[: e.shape[0], k * len(errors) + i] = np.log(e[:, col] / e[:, 1])
    return out


def size_power(values: np.ndarray, rule: str, value: float, reps: int = 2000) -> list[float]:
    """Per size, the power of ``rule`` on that size's three cells, resampled from its own
    complete rows at its own count (`gaugedyn.stats.power_at`), the truth ``value`` in every
    cell; the finding's power is their product."""
    from ._power import size_cells

    v = np.asarray(values, dtype=float)
    n_sizes = v.shape[1] // 3
    out = []
    for i in range(n_sizes):
        cols = v[:, size_cells(n_sizes, i)]
        cols = cols[np.all(np.isfinite(cols), axis=1)]
        j = stats.judge(rule, cols, threshold=0.0, direction=">", rng=np.random.default_rng(i))
        out.append(float(stats.power_at(j, value, reps=reps, seed=i).rate))
    return out


def analyse(config: dict, tasks: list[dict], results: list[dict], seed: np.random.SeedSequence):
    """The one finding, its per-size power, and the errors as arrays (``nan`` beyond a size's
    seed count)."""
    errors = [np.asarray(r["reconstruction_error"], dtype=float) for r in results]
    values = log_ratios(errors)
    measure = measure_of(FINDING)
    rule = measure.rule("every_cell")
    j = stats.judge(rule, values, threshold=0.0, direction=">", rng=stats.generator(seed, FINDING))
    value = measure.power_value(0.0, ">")
    per_size = size_power(values, rule, value)
    power = float(np.prod(per_size))
    counts = [int(t["seeds"]) for t in tasks]
    shown = ", ".join(f"N = {t['n']}: {c}" for t, c in zip(tasks, counts))
    claim = judged(
        FINDING,
        "coverage-only gives the lowest reconstruction error at every N, against the approaches "
        "the abstract names (plain fit, separation, overlap): the median paired log ratio "
        f"log(err_k / err_cov) > 0 in every cell ({len(tasks)} N x 3 k), at the seed count per "
        f"size declared before the run ({shown}) "
        f"[headline configuration, stage {config['design']!r}: lr={float(config['lr']):g}, fixed budget "
        f"{int(config['steps'])} steps, lambda={REFERENCE_WEIGHT:g}, tau={REFERENCE_TAU:g}]",
        j,
        measure=measure,
        extra={
            "design": config["design"],
            "seeds_per_size": dict(zip(map(str, config["sizes"]), counts)),
            "power_by_size": dict(zip(map(str, config["sizes"]), per_size)),
            "power_is": "the product over sizes of the rule's power on each size's cells at its "
            "own count (resampled from the run's values at that size)",
            "cells_are": "approach-major: (plain, sep, ov) x N",
            "median": np.nanmedian(values, axis=0).tolist(),
        },
    )
    claim = dataclasses.replace(claim, power=power, underpowered=bool(power < stats.UNDERPOWERED))
    n = max(e.shape[0] for e in errors)
    padded = np.full((len(errors), n, len(VARIANTS)), np.nan)
    for i, e in enumerate(errors):
        padded[i, : e.shape[0]] = e
    arrays = {
        "sizes": np.asarray(config["sizes"], dtype=float),
        "seeds_per_size": np.asarray(counts, dtype=float),
        "reconstruction_error": padded,
        "log_ratios": values,
    }
    diagnostics = {
        "design": config["design"],
        "runs_trained": int(sum(e.size for e in errors)),
        "joint_power": power if math.isfinite(power) else None,
    }
    return arrays, [claim], diagnostics


ABSTRACT_RUNS = 480
"""The abstract's scale by its own count: six sizes x eight masks x ten seeds."""


def extension_table(runs: dict[str, dict | None]) -> list[str]:
    """Markdown lines: per declared extension (``headline``), the finding's verdict, estimate
    and 95% interval, its power at the declared smallest difference (joint, and per size), the
    seeds per size and the runs it trained, beside the abstract's `ABSTRACT_RUNS`; "not
    published" where the run is not."""
    cols = (
        "| extension | finding | verdict | estimate [95% interval] | power (joint; per N) | "
        "seeds per N | runs trained (abstract: 480) |"
    )
    lines = [cols, "|---|---|---|---|---|---|---|"]
    for name, summary in runs.items():
        claims = [c for c in (summary or {}).get("claims", []) if c.get("id") == FINDING]
        if not claims:
            lines.append(f"| {name} | `{FINDING}` | not published | | | | |")
            continue
        c = claims[0]
        t = c["tolerance"]
        low, high = c["interval"]
        by_n = lambda d: sorted(d.items(), key=lambda kv: int(kv[0]))  # noqa: E731
        per = "; ".join(f"{n}: {p:.3f}" for n, p in by_n(t["power_by_size"]))
        seeds = ", ".join(f"{n}: {k}" for n, k in by_n(t["seeds_per_size"]))
        runs_trained = (summary or {}).get("diagnostics", {}).get("runs_trained")
        lines.append(
            f"| {name} | `{FINDING}` | **{c['verdict']}** | {c['measured']:.4g} "
            f"[{low:.4g}, {high:.4g}] | {c['power']:.3f}; {per} | {seeds} | "
            f"{runs_trained:,} ({runs_trained / ABSTRACT_RUNS:.3g} x) |"
        )
    return lines
