"""``gaugedyn multiverse``: every finding judged over the declared set-up space.

Each specification of the space (`._space.specifications()`: the primary one, every constant
at each end of its range with the others at their primary value, and a seeded random sample of
joint specifications) is one task of the multiverse: its known-answer controls, its experiment
tasks (through the shared result store, so a task that no constant changes is computed once; an
experiment whose constants only choose what is read off its runs may give every specification
the same shared tasks, `shared_config()`) and
its analysis, reduced to one record per finding (verdict, estimate, interval) and stored in the
result store under the multiverse's own key. An interrupted multiverse resumes: finished
specifications and tasks are read back.

The folder it writes is a run folder of the primary specification (its ``summary.json``,
``arrays.npz``, figures and report, so ``gaugedyn publish --add`` and ``gaugedyn plot`` take it
as they take a run), with

- ``robustness`` in every finding of ``summary.json`` (`robustness()`): the number of
  specifications that judged it, the share of each verdict among them, ``robust`` (no
  specification gives the opposite verdict: HELD against NOT HELD), the specifications that
  do, and the constants that flip the verdict when moved alone (``flipping``);
- ``multiverse`` in ``summary.json``: the space, the number of random samples, and per
  specification its values, status and verdicts;
- the arrays of the specification curves (``multiverse__*``) and their figures
  (``specification_curve_<k>``: per finding, every specification's estimate and interval,
  sorted, coloured by verdict, the primary marked).

A specification whose controls fail has no verdicts (its instruments misread a known case there),
and the multiverse exits non-zero naming it: such a setting does not belong to the space.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .._errors import InputError
from ._config import RunConfig, check_param
from ._controls import failed_controls, run_controls
from ._executor import ExecutorSpec, open_executor
from ._folders import (
    ARRAYS,
    FIGURES,
    TASKS,
    check_output_dir,
    claim_output_dir,
    commit,
    staging_dir,
)
from ._protocol import VERDICTS
from ._space import specifications
from ._store import ResultStore, task_key
from ._summary import analyse, summary_head, write_summary
from ._sweep import Progress, sweep

PREFIX = "multiverse"
"""The group of the specification curves' arrays (``multiverse__<field>``)."""
OPPOSITE = {"HELD": "NOT HELD", "NOT HELD": "HELD"}
SAMPLES = 8
"""Random joint specifications of a full multiverse (``--samples``)."""
QUICK_SAMPLES = 1
"""Random joint specifications of a quick multiverse."""


def with_values(cfg: RunConfig, values: dict, where: str = "multiverse") -> RunConfig:
    """``cfg`` with the settings ``values`` replaced (each checked against its declaration) and
    its tasks rebuilt."""
    from ._config import _tasks

    params = dict(cfg.params)
    schema = cfg.experiment.params
    for key, value in values.items():
        params[key] = check_param(key, value, schema[key], where)
    applied = tuple(cfg.overrides) + tuple(f"{k}={v!r}" for k, v in values.items())
    new = dataclasses.replace(cfg, params=params, overrides=applied)
    return dataclasses.replace(new, tasks=_tasks(new, where))


def shared_config(cfg: RunConfig, specs: list[dict]) -> RunConfig:
    """``cfg`` with the settings its experiment gives every specification of ``specs`` for a
    shared pass (`gaugedyn.harness.Experiment.shared_values()`); ``cfg`` itself when none."""
    configs = [with_values(cfg, s["values"]).params for s in specs]
    values = cfg.experiment.shared_values(dict(cfg.params), configs)
    if not values:
        return cfg
    return dataclasses.replace(
        with_values(cfg, values, "multiverse shared pass"), shared=tuple(values)
    )


def _finding_record(claim) -> dict:
    interval = claim.interval if claim.interval is not None else [math.nan, math.nan]
    measured = claim.measured
    try:
        estimate = float(measured)
    except (TypeError, ValueError):
        estimate = math.nan
    tolerance = claim.tolerance if isinstance(claim.tolerance, dict) else {}
    try:
        threshold = float(tolerance["threshold"])
    except (KeyError, TypeError, ValueError):
        threshold = math.nan
    return {
        "verdict": claim.verdict or ("HELD" if claim.passed else "NOT HELD"),
        "estimate": estimate,
        "threshold": threshold,
        "low": float(interval[0]) if interval[0] is not None else math.nan,
        "high": float(interval[1]) if interval[1] is not None else math.nan,
        "readings": claim.readings,
    }


def judge_specification(
    cfg: RunConfig, store: ResultStore, executor: Executor, progress: Progress
) -> dict:
    """One specification: its controls, its tasks (through ``store``) and its analysis, reduced
    to ``{"status", "controls", "findings": {id: {verdict, estimate, low, high, readings}},
    "failing_checks"}``."""
    controls = run_controls(cfg.experiment, cfg.params)
    record: dict[str, Any] = {"controls": controls, "findings": {}, "failing_checks": []}
    if failed_controls(controls):
        return record | {"status": "controls failed"}
    results, failures, _ = sweep(cfg, store, executor, progress)
    if failures:
        return record | {"status": "tasks failed", "failed_tasks": len(failures)}
    _, claims, _ = analyse(cfg, results)
    record["findings"] = {c.id: _finding_record(c) for c in claims if c.kind == "finding"}
    record["failing_checks"] = [c.id for c in claims if c.fails_run]
    return record | {"status": "claims failed" if record["failing_checks"] else "passed"}


def spec_key(cfg: RunConfig) -> str:
    """The store key of one specification's record: its experiment, full settings, quick flag,
    root seed and the package version."""
    return task_key(f"{cfg.name}:{PREFIX}", {"quick": cfg.quick, "params": cfg.params}, cfg.seed)


def check_specifications_cached(cfg: RunConfig, specs: list[dict], where: Path) -> None:
    """``require_cache``: every specification's record is stored, or all its tasks are (the
    primary's tasks always: the summary re-analyses them); refuses (`InputError`) otherwise."""
    from ._runner import check_cached

    store = ResultStore(where)
    for i, spec in enumerate(specs):
        cfg_s = with_values(cfg, spec["values"])
        if i == 0 or spec_key(cfg_s) not in store:
            check_cached(cfg_s, where)


def run_specifications(
    cfg: RunConfig,
    specs: list[dict],
    store: ResultStore,
    executor: Executor,
    stream: TextIO | None,
) -> list[dict]:
    """Every specification's record, read from ``store`` or judged and stored."""
    out = []
    for i, spec in enumerate(specs):
        cfg_s = with_values(cfg, spec["values"])
        key = spec_key(cfg_s)
        stored = store.load(key)
        label = f"{cfg.name} [{i + 1}/{len(specs)}: {spec['id']}]"
        if stored is None:
            tick = time.perf_counter()
            record = judge_specification(cfg_s, store, executor, Progress(label, stream))
            record["seconds"] = time.perf_counter() - tick
            store.save(key, {"record": record}, {"experiment": cfg.name, "specification": spec})
            stored = store.load(key)  # the record as every later resume reads it
        elif stream is not None:
            print(f"{label}: stored", file=stream, flush=True)
        assert stored is not None
        out.append({**spec, **stored["record"]})
    return out


def robustness(finding_id: str, specs: list[dict]) -> dict:
    """The verdicts of one finding over the judged specifications (module doc)."""
    judged = [s for s in specs if finding_id in s.get("findings", {})]
    verdicts = {s["id"]: s["findings"][finding_id]["verdict"] for s in judged}
    primary = verdicts.get("primary")
    n = len(verdicts)
    shares = {w: (sum(v == w for v in verdicts.values()) / n if n else 0.0) for w in VERDICTS}
    words = set(verdicts.values())
    flipping = sorted(
        {
            name
            for s in judged
            if s["kind"] == "end" and verdicts[s["id"]] != primary
            for name in s["values"]
        }
    )
    opposite = OPPOSITE.get(primary or "")
    return {
        "specifications": n,
        "shares": shares,
        "robust": not {"HELD", "NOT HELD"} <= words,
        "opposite": [k for k, v in verdicts.items() if opposite is not None and v == opposite],
        "flipping": flipping,
        "joint_differing": sum(
            1 for s in judged if s["kind"] == "joint" and verdicts[s["id"]] != primary
        ),
        "unresolved_share": shares["UNRESOLVED"],
        "not_judged": len(specs) - n,
    }


CODES = {w: i for i, w in enumerate(VERDICTS)}
"""Verdict codes of ``multiverse__verdict`` (``-1``: the specification did not judge it)."""


def curve_arrays(ids: list[str], specs: list[dict]) -> dict[str, np.ndarray]:
    """The specification curves as arrays: findings x specifications."""
    shape = (len(ids), len(specs))
    est, low, high, thr = (np.full(shape, np.nan) for _ in range(4))
    code = np.full(shape, -1, dtype=np.int8)
    for j, s in enumerate(specs):
        for i, f in enumerate(ids):
            r = s.get("findings", {}).get(f)
            if r is None:
                continue
            est[i, j], low[i, j], high[i, j] = r["estimate"], r["low"], r["high"]
            thr[i, j] = r.get("threshold", np.nan)
            code[i, j] = CODES[r["verdict"]]
    return {
        f"{PREFIX}__findings": np.array(ids, dtype=str),
        f"{PREFIX}__specifications": np.array([s["id"] for s in specs], dtype=str),
        f"{PREFIX}__kinds": np.array([s["kind"] for s in specs], dtype=str),
        f"{PREFIX}__estimate": est,
        f"{PREFIX}__low": low,
        f"{PREFIX}__high": high,
        f"{PREFIX}__threshold": thr,
        f"{PREFIX}__verdict": code,
    }


def multiverse_record(cfg: RunConfig, specs: list[dict], samples: int) -> dict:
    """``summary["multiverse"]``: the space, the samples and each specification's outcome."""
    return {
        "space": {name: c.describe(cfg.params[name]) for name, c in cfg.space.items()},
        "samples": int(samples),
        "specifications": [
            {
                "id": s["id"],
                "kind": s["kind"],
                "values": s["values"],
                "status": s["status"],
                "failed_controls": [c["id"] for c in failed_controls(s.get("controls"))],
                "verdicts": {k: v["verdict"] for k, v in s.get("findings", {}).items()},
                "seconds": s.get("seconds"),
            }
            for s in specs
        ],
    }


def run_multiverse(
    cfg: RunConfig,
    out: str | Path,
    *,
    samples: int | None = None,
    executor: Executor | ExecutorSpec | str | None = None,
    store: str | Path | None = None,
    progress: TextIO | None = sys.stderr,
    backend: str | None = None,
    command: dict | None = None,
    force: bool = False,
    require_cache: bool = False,
):
    """Judge ``cfg``'s findings over its declared space into the folder ``out`` (module doc);
    returns a `._runner.RunOutcome` of the primary specification with the robustness
    attached (``exit_code`` 1 when a specification failed its controls or tasks).

    Parameters
    ----------
    cfg : RunConfig
        The validated configuration of the primary specification; its ``space`` (the
        experiment's declared set-up space with the file's ``[space]`` tables) must not be empty.
    out : str or Path
        The run folder: new, empty, or a gaugedyn run folder of the same run unless ``force``.
    samples : int, optional
        The number of random joint specifications, 0 to 1000; ``None``: 8 for a full
        configuration, 1 for a quick one.
    executor : Executor or ExecutorSpec or str, optional
        As in `execute()`: an open executor, or what `open_executor()` accepts (default a local
        process pool).
    store : str or Path, optional
        The result store's folder; ``None``: ``out/.tasks``.
    progress : TextIO, optional
        The stream of the progress lines (default standard error); ``None``: silent.
    backend : str, optional
        The matplotlib backend the figures are drawn with; ``None`` keeps the one in use.
    command : dict, optional
        The command line that started the run, recorded in ``summary.json``.
    force : bool
        Whether to write over another run's results in ``out``.
    require_cache : bool
        Compute nothing: every specification's record, or else every one of its tasks (and
        every task of the primary specification, which the summary re-analyses), must be in the
        store, stored by this code.

    Returns
    -------
    RunOutcome
        The primary specification's outcome, each finding's ``robustness`` and the
        ``multiverse`` record in its summary; its status is ``specifications failed`` when the
        primary passed but another specification failed its controls or tasks, and
        ``exit_code`` is 0 only when the status is ``passed``.

    Raises
    ------
    InputError
        Before anything is written: when ``cfg`` declares no set-up space, ``samples`` is
        outside 0 to 1000, ``out`` cannot be a run folder or holds another run's results
        (unless ``force``), or, with ``require_cache``, something would have to be computed.
    """
    from ._runner import check_same_run

    if not cfg.space:
        raise InputError(
            f"{cfg.name}: declares no set-up space (space = {{}}); nothing to vary; declare "
            "its open constants with Choice, or a [space.NAME] table in the configuration"
        )
    samples = (QUICK_SAMPLES if cfg.quick else SAMPLES) if samples is None else int(samples)
    if not 0 <= samples <= 1000:
        raise InputError(f"--samples {samples} is not allowed; allowed: 0 to 1000")
    specs = specifications(cfg.space, cfg.experiment.params, cfg.params, samples, cfg.seed)
    cfg = shared_config(cfg, specs)
    out = check_output_dir(out, "run")
    check_same_run(out, cfg, force)
    where = Path(store) if store is not None else out / TASKS
    if require_cache:
        check_specifications_cached(cfg, specs, where)
    args = (cfg, out, specs, samples, where, progress, backend, command)
    if not isinstance(executor, Executor):
        with open_executor(executor) as opened:
            return _multiverse(*args, opened)
    return _multiverse(*args, executor)


def _multiverse(cfg, out, specs, samples, where, progress, backend, command, executor):
    from ._arrays import write_arrays
    from ._drawing import draw
    from ._runner import RunOutcome

    started = time.time()
    with claim_output_dir(out, "run"):
        store = ResultStore(where)
        store.clean_temporaries()
        judged = run_specifications(cfg, specs, store, executor, progress)
        primary = judged[0]
        summary = summary_head(cfg, command)
        summary["controls"] = primary["controls"]
        summary["multiverse"] = multiverse_record(cfg, judged, samples)
        summary["failed_tasks"] = []
        arrays: dict[str, np.ndarray] = {}
        with staging_dir(out) as staging:
            if primary["status"] in ("controls failed", "tasks failed"):
                summary["status"], summary["claims"] = primary["status"], []
                summary["diagnostics"] = {}
            else:
                results, _, stats = sweep(cfg, store, executor, Progress(cfg.name, None))
                arrays, claims, diagnostics = analyse(cfg, results)
                summary["claims"] = [
                    c.to_dict()
                    | ({"robustness": robustness(c.id, judged)} if c.kind == "finding" else {})
                    for c in claims
                ]
                summary["diagnostics"] = {**diagnostics, "tasks": stats}
                summary["status"] = (
                    "claims failed" if any(c.fails_run for c in claims) else "passed"
                )
                ids = [c.id for c in claims if c.kind == "finding"]
                arrays |= curve_arrays(ids, judged)
                write_arrays(staging / ARRAYS, arrays, summary)
                summary["figures"] = draw(
                    cfg.experiment, arrays, cfg.params, staging / FIGURES, backend, cfg.quick
                )
            bad = [s["id"] for s in judged if s["status"] in ("controls failed", "tasks failed")]
            if bad and summary["status"] == "passed":
                summary["status"] = "specifications failed"
            summary["diagnostics"]["wall_seconds"] = time.time() - started
            write_summary(staging, summary)
            commit(out, staging)
    code = 0 if summary["status"] == "passed" else 1
    return RunOutcome(out, summary, code, arrays)
