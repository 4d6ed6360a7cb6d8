"""The sweep: every task of a configuration, read from the result store or computed and stored.

Tasks run on a `concurrent.futures.Executor` through `run_one()`, which never raises:
a task that raises comes back as an error record (type, one-line message, traceback). A worker
process that dies breaks a process pool for every unfinished task; the sweep then restarts the
pool and retries the lost tasks while that makes progress, and otherwise runs each remaining
suspect in a pool of its own, so only a task that kills its worker every time is recorded as
failed. Results always come back through the store, so a resumed run sees exactly what an
uninterrupted one does.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
import traceback
from concurrent.futures import Executor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TextIO

import numpy as np

from .._errors import DivergenceError, InputError, oneline
from .._json import plain, strict
from .._meta import task_seed
from ._config import RunConfig, resolve_experiment
from ._executor import ProcessPool
from ._protocol import Experiment
from ._store import ResultStore, StoreError, task_id, task_key

_EXPERIMENTS: dict[str, Experiment] = {}
_LOST = "a worker process died (segfault or out-of-memory kill?) and the pool lost this task"
_LOST_ALONE = "its worker process died while running it, alone (segfault or out-of-memory kill?)"


def run_one(target: str | Experiment, task: dict, seed: np.random.SeedSequence) -> tuple:
    """One task in a worker: ``("ok", result, seconds)`` or ``("error", record)``."""
    if isinstance(target, str):
        if target not in _EXPERIMENTS:
            _EXPERIMENTS[target] = resolve_experiment(target)
        experiment = _EXPERIMENTS[target]
    else:
        experiment = target
    start = time.perf_counter()
    try:
        result = experiment.run_task(task, seed)
    except Exception as err:
        return ("error", error_record(err))
    return ("ok", result, time.perf_counter() - start)


def error_record(err: BaseException) -> dict:
    """The error of a failed task: type, one-line message, traceback summary."""
    lines = traceback.format_exception(type(err), err, err.__traceback__)
    record: dict[str, Any] = {
        "type": type(err).__name__,
        "message": oneline(err),
        "traceback": "".join(lines)[-4000:],
    }
    if isinstance(err, DivergenceError):
        record.update(quantity=err.quantity, time=err.time, step=err.step)
        state = err.last_state
        with contextlib.suppress(Exception):
            size = np.size(state) if not isinstance(state, dict) else 0
            record["last_state"] = strict(plain(state)) if size <= 10_000 else None
    return record


class Progress:
    """Plain progress lines on a stream: done/total, failures, elapsed, eta.

    Not tqdm, on purpose: runs mostly write to logs (``nohup``, CI, a batch system), where a
    redrawn bar leaves carriage-return debris; these are whole lines, at most one a second, and
    the first says how many tasks the store already held, which a resumed run needs to show.
    """

    def __init__(self, name: str, stream: TextIO | None = sys.stderr, every: float = 1.0):
        self.name, self.stream, self.every = name, stream, every
        self.start = time.monotonic()
        self.last = -math.inf
        self.shown = -1

    def begin(self, total: int, stored: int, where: str) -> None:
        self.total, self.stored = total, stored
        self.start = time.monotonic()
        self._print(
            f"{self.name}: {total} tasks, {stored} already stored, {total - stored} to run ({where})"
        )

    def update(self, done: int, failed: int, final: bool = False) -> None:
        now = time.monotonic()
        if (not final and now - self.last < self.every) or (final and done == self.shown):
            return
        self.last, self.shown = now, done
        elapsed = now - self.start
        computed = done - self.stored
        remaining = self.total - done
        eta = elapsed / computed * remaining if computed > 0 else math.nan
        eta_text = f", eta {eta:.1f} s" if remaining and math.isfinite(eta) else ""
        fail_text = f" ({failed} failed)" if failed else ""
        self._print(
            f"{self.name}: {done}/{self.total} tasks done{fail_text}, "
            f"{elapsed:.1f} s elapsed{eta_text}"
        )

    def _print(self, line: str) -> None:
        if self.stream is not None:
            print(line, file=self.stream, flush=True)


class _Sweep:
    """The state of one sweep: the unique tasks by key, what is stored, what failed."""

    def __init__(self, cfg: RunConfig, store: ResultStore, progress: Progress):
        self.cfg, self.store, self.progress = cfg, store, progress
        self.code = cfg.code_identity()
        self.keys = stored_keys(cfg)
        self.unique = dict(zip(self.keys, cfg.tasks))
        self.results: dict[str, dict] = {}
        self.failures: list[dict] = []
        self.seconds = 0.0
        self.other_code = 0
        self.target = cfg.spec if cfg.spec is not None else cfg.experiment

    def load_stored(self, require: bool = False) -> list[str]:
        """Read every stored task back; return the keys still to compute (with ``require``,
        refuse (`InputError`) to compute any). Tasks stored only by other code are
        recomputed, and said so in one line."""
        for key in self.unique:
            record = self.store.load(key)
            if record is not None:
                self.results[key] = record
        pending = [key for key in self.unique if key not in self.results]
        ids = {self._id(key): key for key in pending}
        found = self.store.other_code(set(ids), self.code["sha256"])
        self.other_code = len(found)
        if require and pending:
            raise InputError(
                f"--require-cache: {len(pending)} of {len(self.unique)} tasks of "
                f"{self.cfg.name} are not stored by this code (code "
                f"{self.code['sha256'][:12]}; {len(found)} of them stored by other code) in "
                f"{self.store.root}; nothing was computed"
            )
        if found:
            codes = sorted({c[:12] for cs in found.values() for c in cs})
            print(
                f"store: {len(found)} of {len(self.unique)} tasks of {self.cfg.name} were stored "
                f"by other code ({', '.join(codes[:3])}{', ...' if len(codes) > 3 else ''}; "
                f"this code is {self.code['sha256'][:12]}); recomputing them, not reusing "
                "(--require-cache refuses instead)",
                file=sys.stderr,
                flush=True,
            )
        return pending

    def _id(self, key: str) -> str:
        return task_id(self.cfg.name, self.unique[key], self.cfg.seed)

    def keep(self, key: str, outcome: tuple) -> tuple:
        """Store a finished task and read it back; an error outcome if that fails."""
        meta = {
            "experiment": self.cfg.name,
            "task": self.unique[key],
            "task_id": self._id(key),
            "root_seed": self.cfg.seed,
            "code": self.code,
            "seconds": outcome[2],
        }
        try:
            self.store.save(key, outcome[1], meta)
            record = self.store.load(key)
            if record is None:
                raise StoreError("the stored record could not be read back")
            self.results[key] = record
        except StoreError as err:
            return ("error", error_record(err))
        return outcome

    def collect(self, ex: Executor, keys: list[str]) -> list[str]:
        """Run ``keys`` on ``ex``, store what succeeds; return the keys a broken pool lost."""
        cfg = self.cfg
        lost: list[str] = []

        def submit(key: str):
            task = self.unique[key]
            seed = task_seed(cfg.seed, cfg.name, cfg.experiment.seed_coordinates(task))
            return ex.submit(run_one, self.target, task, seed)

        if getattr(ex, "runs_at_submission", False):  # serial: store each task as it finishes
            for key in keys:
                self._finish(key, submit(key), lost)
            return lost
        futures = {submit(key): key for key in keys}
        for future in as_completed(futures):
            self._finish(futures[future], future, lost)
        return lost

    def _finish(self, key: str, future, lost: list[str]) -> None:
        """Store a finished task's result, or record its failure (``lost`` if its worker died)."""
        try:
            outcome = future.result()
        except BrokenProcessPool:  # some worker died: this task may be innocent
            lost.append(key)
            return
        except Exception as err:  # the result could not travel back, or Dask lost it
            outcome = ("error", error_record(err))
        if outcome[0] == "ok":
            self.seconds += outcome[2]
            outcome = self.keep(key, outcome)
        if outcome[0] == "error":
            self.failures.append({"key": key, "task": self.unique[key], **outcome[1]})
        self.progress.update(len(self.results) + len(self.failures), len(self.failures))

    def retry(self, executor: Executor, lost: list[str]) -> None:
        """Retry tasks a dead worker took down: on a fresh pool while that helps, then alone."""
        why = _LOST
        pool = executor if isinstance(executor, ProcessPool) else None
        while lost and pool is not None:
            pool.restart()
            again = self.collect(pool, lost)
            if len(again) == len(lost):  # no progress: run each suspect alone
                with pool.isolated() as alone:
                    again = self.collect(alone, again)
                why = _LOST_ALONE
                pool = None
            lost = again
        self.failures += [
            {"key": k, "task": self.unique[k], **error_record(BrokenProcessPool(why))} for k in lost
        ]

    def stats(self, pending: list[str]) -> dict:
        return {
            "tasks": len(self.keys),
            "unique_tasks": len(self.unique),
            "reused": len(self.unique) - len(pending),
            "computed": len(pending) - len(self.failures),
            "stored_by_other_code": self.other_code,
            "failed": len(self.failures),
            "discarded_corrupt": len(self.store.discarded),
            "compute_seconds": self.seconds,
        }


def stored_keys(cfg: RunConfig) -> list[str]:
    """The store keys of ``cfg``'s tasks, in task order, under this process's code."""
    code = cfg.code_identity()["sha256"]
    return [task_key(cfg.name, task, cfg.seed, code) for task in cfg.tasks]


def sweep(
    cfg: RunConfig,
    store: ResultStore,
    executor: Executor,
    progress: Progress | None = None,
    where: str = "",
    require_cache: bool = False,
) -> tuple[list[dict | None], list[dict], dict]:
    """Every task of ``cfg``: loaded from ``store`` or computed on ``executor`` and stored.

    Returns the results in task order (``None`` for a failed task), the failure records (in task
    order) and counts. Results always come back through the store, so a resumed run sees exactly
    what an uninterrupted one does. A task stored only by other code is recomputed (one line on
    stderr); ``require_cache`` refuses (`InputError`) before computing any task.
    """
    state = _Sweep(cfg, store, progress or Progress(cfg.name, None))
    pending = state.load_stored(require_cache)
    state.progress.begin(len(state.unique), len(state.results), where)
    state.retry(executor, state.collect(executor, pending))
    if pending:
        state.progress.update(
            len(state.results) + len(state.failures), len(state.failures), final=True
        )
    stats = state.stats(pending)
    order = {key: i for i, key in enumerate(state.unique)}
    state.failures.sort(key=lambda f: order[f["key"]])
    return [state.results.get(key) for key in state.keys], state.failures, stats
