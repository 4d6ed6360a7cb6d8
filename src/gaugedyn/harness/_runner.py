"""Running a configuration: tasks through an executor into the store, analysis, committed results.

A run folder ``DIR`` holds

- ``summary.json``: experiment, configuration, versions, seeds, definitions, the known-answer
  controls and the set-up space, diagnostics, claims, failed tasks, figures and the checksum of
  ``arrays.npz`` (`._summary`);
- ``arrays.npz``: every array the figures are drawn from (`._arrays`);
- ``figures/NAME.png`` and ``figures/NAME.pdf`` (`._drawing`; PNG alone for a quick run);
- ``.tasks/``: the result store (unless another store is given), which makes reruns resume;
- ``.gaugedyn``: the mark that gaugedyn owns the folder (also the lock of a running command).

Results are written into ``DIR/.staging-*`` and moved into place; ``summary.json`` is removed
first and moved in last, so a folder with a ``summary.json`` always holds one complete result
(`._folders`). The sweep over tasks, with its retries after a worker's death, is
`._sweep`. This module runs the stages in order.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from ._arrays import write_arrays
from ._config import RunConfig
from ._controls import failed_controls, run_controls
from ._drawing import draw
from ._executor import ExecutorSpec, open_executor
from ._folders import (
    ARRAYS,
    FIGURES,
    SUMMARY,
    TASKS,
    check_output_dir,
    claim_output_dir,
    commit,
    staging_dir,
)
from ._report import fails_run
from ._store import ResultStore
from ._summary import analyse, summary_head, write_summary
from ._sweep import Progress, sweep


@dataclass
class RunOutcome:
    """What a run wrote and how it ended (``exit_code`` 0: complete and every check passed)."""

    out: Path
    summary: dict
    exit_code: int
    arrays: dict = field(default_factory=dict)

    @property
    def failed_claims(self) -> list[str]:
        return [c["id"] for c in self.summary.get("claims", []) if fails_run(c)]

    @property
    def failed_controls(self) -> list[dict]:
        """The records of the known-answer controls that failed (the run stopped before its
        tasks)."""
        return failed_controls(self.summary.get("controls"))

    @property
    def failed_tasks(self) -> list[dict]:
        return self.summary.get("failed_tasks", [])


def execute(
    cfg: RunConfig,
    out: str | Path,
    *,
    executor: Executor | ExecutorSpec | str | None = None,
    store: str | Path | None = None,
    progress: TextIO | None = sys.stderr,
    backend: str | None = None,
    command: dict | None = None,
    force: bool = False,
    require_cache: bool = False,
) -> RunOutcome:
    """Run ``cfg`` into the folder ``out`` (see the module docstring for what it holds).

    ``executor`` is an open `concurrent.futures.Executor`, or what `open_executor()`
    accepts (default: a local process pool). Nothing is written before ``out`` and ``store``
    are checked. A folder holding the results of another run (another experiment, seed,
    parameters or quick/full), or a ``store`` folder that is not a gaugedyn store, is refused
    unless ``force``; the same run resumes or repeats there. Tasks are reused from the store
    only when this code stored them (`gaugedyn._meta.code_identity()`); the others are
    recomputed, or, with ``require_cache``, the run is refused (`InputError`) before any
    task is computed.

    Parameters
    ----------
    cfg : RunConfig
        The validated configuration (`load_config()`, `make_config()`).
    out : str or Path
        The run folder: new, empty, or a gaugedyn run folder (of the same run unless ``force``).
    executor : Executor or ExecutorSpec or str, optional
        An open executor (used and left open), or an `ExecutorSpec` or kind (``"process"``,
        ``"thread"``, ``"serial"``, ``"dask"``) opened for the run and shut down after it;
        ``None``: a local process pool, one worker per available core.
    store : str or Path, optional
        The result store's folder (shared between runs); ``None``: ``out/.tasks``.
    progress : TextIO, optional
        The stream of the progress lines (default standard error); ``None``: silent.
    backend : str, optional
        The matplotlib backend the figures are drawn with (``"Agg"`` on the command line);
        ``None`` keeps the one in use.
    command : dict, optional
        The command line that started the run, recorded in ``summary.json``.
    force : bool
        Whether to write over another run's results in ``out``, or use a ``store`` folder that is
        not a gaugedyn store.
    require_cache : bool
        Whether every task must already be in the store under this code; the run is refused
        before any task is computed otherwise.

    Returns
    -------
    RunOutcome
        The folder, its summary (status ``passed``, ``claims failed``, ``tasks failed`` or
        ``controls failed``), the arrays and ``exit_code`` (0 only when ``passed``).

    Raises
    ------
    InputError
        Before anything is written: when ``out`` cannot be a run folder or holds another run's
        results, ``store`` is not a gaugedyn store (both unless ``force``), ``require_cache``
        finds tasks missing, the executor's specification is not allowed, or another gaugedyn
        command holds ``out``.
    """
    out = check_output_dir(out, "run")
    check_same_run(out, cfg, force)
    root = Path(store) if store is not None else out / TASKS
    check_store(root, force)
    if require_cache:
        check_cached(cfg, root)
    if not isinstance(executor, Executor):
        with open_executor(executor) as opened:
            return _execute(cfg, out, opened, root, progress, backend, command, require_cache)
    return _execute(cfg, out, executor, root, progress, backend, command, require_cache)


def check_store(root: Path, force: bool = False) -> None:
    """Refuse (`InputError`) a store folder that is not a gaugedyn store
    (`._store.foreign()`) unless ``force``; nothing is written."""
    from .._errors import InputError
    from ._store import foreign

    why = foreign(root)
    if why is not None and not (force and root.is_dir()):
        raise InputError(
            f"--store {root}: not a gaugedyn result store ({why}); choose an empty or new "
            "folder, or pass --force (force=True) to use it anyway"
        )


def check_cached(cfg: RunConfig, root: Path) -> None:
    """``require_cache``: every task of ``cfg`` must be in the store under this code."""
    from .._errors import InputError
    from ._sweep import stored_keys

    keys = set(stored_keys(cfg))
    missing = [k for k in keys if k not in ResultStore(root)]
    if missing:
        raise InputError(
            f"--require-cache: {len(missing)} of {len(keys)} tasks of {cfg.name} are not "
            f"stored by this code (code {cfg.code_identity()['sha256'][:12]}) in {root}; "
            "nothing was computed"
        )


RUN_IDENTITY = ("experiment", "seed", "quick", "params")
"""The configuration entries that make a run folder's results that run's and no other's."""


def check_same_run(out: Path, cfg: RunConfig, force: bool = False) -> None:
    """Refuse (`InputError`) to write ``cfg``'s results over another run's in ``out``
    unless ``force``; a folder without a readable ``summary.json`` with stored arrays holds no
    results to keep."""
    import json

    from .._errors import InputError
    from .._json import strict

    try:
        summary = json.loads((out / SUMMARY).read_text())
        stored = summary.get("configuration")
    except (OSError, ValueError, AttributeError):
        return
    if force or not isinstance(stored, dict) or summary.get("arrays_sha256") is None:
        return  # forced, or no results there (unreadable, or every task of it failed)
    mine = json.loads(json.dumps(strict(cfg.to_dict())))
    differ = [k for k in RUN_IDENTITY if stored.get(k) != mine.get(k)]
    if differ:
        theirs = f"{stored.get('experiment')}, seed {stored.get('seed')}" + (
            ", quick" if stored.get("quick") else ""
        )
        raise InputError(
            f"--out {out}: holds the results of another run ({theirs}; differs in "
            f"{', '.join(differ)}); choose another folder, or pass --force (force=True) to "
            "replace them"
        )


def _execute(
    cfg: RunConfig,
    out: Path,
    executor: Executor,
    store: Path,
    progress: TextIO | None,
    backend: str | None,
    command: dict | None,
    require_cache: bool,
) -> RunOutcome:
    from ..plotting import figure_formats

    started = time.time()
    where = _describe(executor)
    figure_formats(cfg.quick)  # a bad GAUGEDYN_FIGURE_FORMATS is refused before any task
    with claim_output_dir(out, "run"):
        summary = summary_head(cfg, command)
        summary["controls"] = run_controls(cfg.experiment, cfg.params)
        controls_failed = bool(failed_controls(summary["controls"]))
        result_store = ResultStore(store)
        result_store.claim(force=True)  # checked by execute
        result_store.clean_temporaries()
        results: list = []
        failures: list[dict] = []
        stats: dict = {"tasks": len(cfg.tasks), "skipped": True}
        if not controls_failed:  # a broken instrument judges nothing: no task runs
            results, failures, stats = sweep(
                cfg, result_store, executor, Progress(cfg.name, progress), where, require_cache
            )
        summary["diagnostics"] = {"tasks": stats, "executor": where}
        summary["failed_tasks"] = failures
        arrays: dict[str, np.ndarray] = {}
        with staging_dir(out) as staging:
            if controls_failed:
                summary["status"] = "controls failed"
                summary["claims"] = []
            elif failures:
                summary["status"] = "tasks failed"
                summary["claims"] = []
            else:
                arrays = _conclude(cfg, results, summary, staging, backend)
            summary["diagnostics"]["wall_seconds"] = time.time() - started
            write_summary(staging, summary)
            commit(out, staging)
    code = 0 if summary["status"] == "passed" else 1
    return RunOutcome(out, summary, code, arrays)


def _conclude(
    cfg: RunConfig, results: list, summary: dict, staging: Path, backend: str | None
) -> dict[str, np.ndarray]:
    """Analyse the results, stage the arrays and the figures; fill the summary's verdicts."""
    tick = time.perf_counter()
    arrays, claims, diagnostics = analyse(cfg, results)
    summary["claims"] = [c.to_dict() for c in claims]
    # the framework's counters are written last, so no diagnostics key of an experiment can
    # overwrite them
    summary["diagnostics"] = {**diagnostics, **summary["diagnostics"]}
    summary["status"] = "claims failed" if any(c.fails_run for c in claims) else "passed"
    write_arrays(staging / ARRAYS, arrays, summary)
    tock = time.perf_counter()
    summary["figures"] = draw(
        cfg.experiment, arrays, cfg.params, staging / FIGURES, backend, quick=cfg.quick
    )
    summary["diagnostics"]["analyse_seconds"] = tock - tick
    summary["diagnostics"]["plot_seconds"] = time.perf_counter() - tock
    return arrays


def _describe(executor: Executor) -> str:
    name = type(executor).__name__
    workers = getattr(executor, "_max_workers", None)
    return f"{name} x{workers}" if workers else name
