"""Running a configuration: tasks through an executor into the store, analysis, committed results.

A run folder ``DIR`` holds

- ``summary.json``: experiment, configuration, versions, seeds, definitions, diagnostics, claims,
  failed tasks, figures and the checksum of ``arrays.npz``;
- ``arrays.npz``: every array the figures are drawn from;
- ``figures/NAME.png`` and ``figures/NAME.pdf``;
- ``.tasks/``: the result store (unless another store is given), which makes reruns resume;
- ``.gaugedyn``: the mark that gaugedyn owns the folder (also the lock of a running command).

Results are written into ``DIR/.staging-*`` and moved into place; ``summary.json`` is removed
first and moved in last, so a folder with a ``summary.json`` always holds one complete result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import math
import os
import secrets
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import Executor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .._errors import DivergenceError, InputError, oneline
from .._meta import task_seed, versions
from ._config import RunConfig, resolve_experiment, show
from ._executor import ExecutorSpec, open_executor
from ._protocol import Claim, Experiment, _plain
from ._report import REPORT, fails_run, run_report
from ._store import ResultStore, StoreError, atomic_write, fsync_dir, task_key

SUMMARY = "summary.json"
ARRAYS = "arrays.npz"
FIGURES = "figures"
MARKER = ".gaugedyn"
TASKS = ".tasks"
STAGING = ".staging-"
SUMMARY_FORMAT = 1


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
    def failed_tasks(self) -> list[dict]:
        return self.summary.get("failed_tasks", [])


# ---------------------------------------------------------------------------- output folders


def check_output_dir(out: str | Path, kind: str = "run") -> Path:
    """Check that ``out`` can become (or already is) a gaugedyn folder of ``kind``; write nothing."""
    raw = os.fspath(out)
    if not raw.strip():
        raise InputError("--out '': the output folder is empty; give a folder path")
    if "\0" in raw:
        raise InputError(f"--out {show(raw)}: a path cannot contain a NUL character")
    path = Path(raw)
    try:
        if any(len(part.encode()) > 255 for part in path.parts):
            raise InputError(f"--out {show(raw)}: a path component is longer than 255 bytes")
        if path.exists() or path.is_symlink():
            _check_existing(path, f"--out {show(raw)}", kind)
        else:
            _check_creatable(path, f"--out {show(raw)}")
    except OSError as err:
        raise InputError(f"--out {show(raw)}: {err.strerror or err}") from None
    return path


def _check_existing(path: Path, where: str, kind: str) -> None:
    if not path.is_dir():
        raise InputError(f"{where}: exists and is not a folder")
    marker = path / MARKER
    if marker.is_file():
        found = _marker_kind(marker)
        if found != kind:
            raise InputError(
                f"{where}: holds a gaugedyn {found} folder, not a {kind} folder; "
                "choose another folder"
            )
    elif (claimed := _being_claimed(path)) is not None:
        if claimed:
            raise InputError(f"{where}: another gaugedyn command is using this folder (it is "
                             "creating it now)")
    elif any(path.iterdir()):
        raise InputError(
            f"{where}: folder is not empty and was not written by gaugedyn; "
            "choose a new or empty folder"
        )
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{where}: folder is not writable")


def _being_claimed(path: Path) -> bool | None:
    """``None`` unless ``path`` holds nothing but temporaries of the mark (``..gaugedyn.tmp-
    <pid>-*``, written when a command claims a new folder); then whether such a process lives
    (two commands started together on one folder) or not (a stale claim, reusable)."""
    from ._store import _alive

    prefix = f".{MARKER}.tmp-"
    entries = list(path.iterdir())
    if not entries or not all(p.name.startswith(prefix) for p in entries):
        return None
    pids = [p.name[len(prefix):].split("-")[0] for p in entries]
    return any(pid.isdigit() and _alive(int(pid)) for pid in pids)


def _check_creatable(path: Path, where: str) -> None:
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{where}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{where}: cannot create folders in {parent}")


def _marker_kind(marker: Path) -> str:
    try:
        return str(json.loads(marker.read_text()).get("kind", "run"))
    except (OSError, ValueError, AttributeError):
        return "run"


@contextlib.contextmanager
def claim_output_dir(path: Path, kind: str) -> Iterator[Path]:
    """Create ``path`` with its mark, hold its lock, clear stale staging folders."""
    path.mkdir(parents=True, exist_ok=True)
    marker = path / MARKER
    if not marker.exists():
        atomic_write(marker, json.dumps({"kind": kind, "created": time.time()}).encode())
    with open(marker, "rb") as handle:
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:
            pass
        except OSError:
            raise InputError(f"--out {path}: another gaugedyn command is using this folder") from None
        for stale in path.glob(f"{STAGING}*"):
            shutil.rmtree(stale, ignore_errors=True)
        yield path


# ---------------------------------------------------------------------------- the sweep


_EXPERIMENTS: dict[str, Experiment] = {}


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
            record["last_state"] = _json_safe(_plain(state)) if size <= 10_000 else None
    return record


class Progress:
    """Plain progress lines on a stream: done/total, failures, elapsed, eta."""

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


def sweep(
    cfg: RunConfig,
    store: ResultStore,
    executor: Executor,
    progress: Progress | None = None,
    where: str = "",
) -> tuple[list[dict | None], list[dict], dict]:
    """Every task of ``cfg``: loaded from ``store`` or computed on ``executor`` and stored.

    Returns the results in task order (``None`` for a failed task), the failure records and
    counts. Results always come back through the store, so a resumed run sees exactly what an
    uninterrupted one does.
    """
    from .. import __version__

    progress = progress or Progress(cfg.name, None)
    keys = [task_key(cfg.name, task, cfg.seed, __version__) for task in cfg.tasks]
    unique = dict(zip(keys, cfg.tasks))
    results: dict[str, dict] = {}
    for key in unique:
        record = store.load(key)
        if record is not None:
            results[key] = record
    pending = [key for key in unique if key not in results]
    progress.begin(len(unique), len(results), where)
    target = cfg.spec if cfg.spec is not None else cfg.experiment
    failures: list[dict] = []
    seconds = 0.0

    def keep(key: str, outcome: tuple) -> tuple:
        """Store a finished task and read it back; an error outcome if that fails."""
        meta = {
            "experiment": cfg.name,
            "task": unique[key],
            "root_seed": cfg.seed,
            "version": __version__,
            "seconds": outcome[2],
        }
        try:
            store.save(key, outcome[1], meta)
            record = store.load(key)
            if record is None:
                raise StoreError("the stored record could not be read back")
            results[key] = record
        except StoreError as err:
            return ("error", error_record(err))
        return outcome

    def collect(ex: Executor, keys: list[str]) -> list[str]:
        """Run ``keys`` on ``ex``, store what succeeds; return the keys a broken pool lost."""
        nonlocal seconds
        futures = {}
        for key in keys:
            task = unique[key]
            futures[ex.submit(run_one, target, task, task_seed(cfg.seed, cfg.name, task))] = key
        lost = []
        for future in as_completed(futures):
            key = futures[future]
            try:
                outcome = future.result()
            except BrokenProcessPool:  # some worker died: this task may be innocent
                lost.append(key)
                continue
            except Exception as err:  # the result could not travel back, or Dask lost it
                outcome = ("error", error_record(err))
            if outcome[0] == "ok":
                seconds += outcome[2]
                outcome = keep(key, outcome)
            if outcome[0] == "error":
                failures.append({"key": key, "task": unique[key], **outcome[1]})
            progress.update(len(results) + len(failures), len(failures))
        return lost

    lost = collect(executor, pending)
    why = "a worker process died (segfault or out-of-memory kill?) and the pool lost this task"
    restart = getattr(executor, "restart", None)
    while lost and restart is not None:  # a worker died: retry on a fresh pool while that helps
        restart()
        again = collect(executor, lost)
        if len(again) == len(lost):  # no progress: run each suspect alone
            with executor.isolated() as alone:
                again = collect(alone, again)
            why = "its worker process died while running it, alone (segfault or out-of-memory kill?)"
            restart = None
        lost = again
    failures += [{"key": k, "task": unique[k], **error_record(BrokenProcessPool(why))} for k in lost]
    if pending:
        progress.update(len(results) + len(failures), len(failures), final=True)
    stats = {
        "tasks": len(keys),
        "unique_tasks": len(unique),
        "reused": len(unique) - len(pending),
        "computed": len(pending) - len(failures),
        "failed": len(failures),
        "discarded_corrupt": len(store.discarded),
        "compute_seconds": seconds,
    }
    order = {key: i for i, key in enumerate(unique)}
    failures.sort(key=lambda f: order[f["key"]])
    return [results.get(key) for key in keys], failures, stats


# ---------------------------------------------------------------------------- one run


def execute(
    cfg: RunConfig,
    out: str | Path,
    *,
    executor: Executor | ExecutorSpec | str | None = None,
    store: str | Path | None = None,
    progress: TextIO | None = sys.stderr,
    backend: str | None = None,
    command: dict | None = None,
) -> RunOutcome:
    """Run ``cfg`` into the folder ``out`` (see the module docstring for what it holds).

    ``executor`` is an open :class:`concurrent.futures.Executor`, or what :func:`open_executor`
    accepts (default: a local process pool). Nothing is written before ``out`` is checked.
    """
    out = check_output_dir(out, "run")
    if not isinstance(executor, Executor):
        with open_executor(executor) as opened:
            return _execute(cfg, out, opened, store, progress, backend, command)
    return _execute(cfg, out, executor, store, progress, backend, command)


def _execute(
    cfg: RunConfig,
    out: Path,
    executor: Executor,
    store: str | Path | None,
    progress: TextIO | None,
    backend: str | None,
    command: dict | None,
) -> RunOutcome:
    started = time.time()
    where = _describe(executor)
    with claim_output_dir(out, "run"):
        result_store = ResultStore(Path(store) if store is not None else out / TASKS)
        result_store.clean_temporaries()
        results, failures, stats = sweep(cfg, result_store, executor, Progress(cfg.name, progress), where)
        summary = _summary_head(cfg, command)
        summary["diagnostics"] = {"tasks": stats, "executor": where}
        summary["failed_tasks"] = failures
        arrays: dict[str, np.ndarray] = {}
        with _staging(out) as staging:
            if failures:
                summary["status"] = "tasks failed"
                summary["claims"] = []
            else:
                tick = time.perf_counter()
                arrays, claims, diagnostics = _analyse(cfg, results)
                summary["claims"] = [c.to_dict() for c in claims]
                summary["diagnostics"].update(diagnostics)
                summary["status"] = "claims failed" if any(c.fails_run for c in claims) else "passed"
                _write_arrays(staging / ARRAYS, arrays, summary)
                tock = time.perf_counter()
                summary["figures"] = draw(cfg.experiment, arrays, cfg.params, staging / FIGURES, backend)
                summary["diagnostics"]["analyse_seconds"] = tock - tick
                summary["diagnostics"]["plot_seconds"] = time.perf_counter() - tock
            summary["diagnostics"]["wall_seconds"] = time.time() - started
            _write_summary(staging, summary)
            commit(out, staging)
    code = 0 if summary["status"] == "passed" else 1
    return RunOutcome(out, summary, code, arrays)


def _describe(executor: Executor) -> str:
    name = type(executor).__name__
    workers = getattr(executor, "_max_workers", None)
    return f"{name} x{workers}" if workers else name


def _summary_head(cfg: RunConfig, command: dict | None) -> dict:
    experiment = cfg.experiment
    definitions = getattr(experiment, "definitions", None)
    if dataclasses.is_dataclass(definitions) and not isinstance(definitions, type):
        definitions = dataclasses.asdict(definitions)
    elif definitions is not None and not isinstance(definitions, dict | str | list):
        definitions = str(definitions)
    return {
        "format": SUMMARY_FORMAT,
        "experiment": cfg.name,
        "description": cfg.description,
        "configuration": cfg.to_dict(),
        "command": command,
        "versions": versions(),
        "seeds": {
            "root": cfg.seed,
            "derivation": "gaugedyn._meta.task_seed(root, experiment, task): SeedSequence(root, "
            "spawn_key=sha256(json([experiment, task])))",
        },
        "definitions": _json_safe(_plain(definitions)),
        "tasks": cfg.tasks,
    }


def _analyse(cfg: RunConfig, results: list) -> tuple[dict, list[Claim], dict]:
    out = cfg.experiment.analyse(dict(cfg.params), cfg.tasks, results)
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        raise TypeError(f"{cfg.name}.analyse must return (arrays, claims[, diagnostics])")
    arrays, claims = out[0], list(out[1])
    diagnostics = dict(out[2]) if len(out) == 3 and out[2] is not None else {}
    arrays = {str(k): np.asarray(v) for k, v in dict(arrays).items()}
    for name, array in arrays.items():
        if array.dtype == object:
            raise TypeError(f"{cfg.name}.analyse: array {name!r} has dtype object; use numbers")
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(f"{cfg.name}.analyse: claims must be Claim instances, got {claim!r}")
    return arrays, claims, _json_safe(_plain(diagnostics))


def _write_arrays(path: Path, arrays: dict, summary: dict) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    data = buffer.getvalue()
    atomic_write(path, data)
    summary["arrays"] = {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()}
    summary["arrays_sha256"] = hashlib.sha256(data).hexdigest()


def draw(
    experiment: Experiment, arrays: dict, params: dict, outdir: Path, backend: str | None = None
) -> list[dict]:
    """Call ``experiment.plot`` under the shared style; list the figures it wrote."""
    from ..plotting import style

    outdir.mkdir(parents=True, exist_ok=True)
    with style(backend):
        returned = experiment.plot(arrays, dict(params), outdir) or []
    captions = dict(getattr(experiment, "captions", {}) or {})
    items = returned.items() if isinstance(returned, dict) else returned
    listed: dict[str, str] = {}
    for item in items:
        name, caption = (item, "") if isinstance(item, str) else (str(item[0]), str(item[1]))
        listed[name] = caption or captions.get(name, "")
    for png in sorted(outdir.glob("*.png")):
        listed.setdefault(png.stem, captions.get(png.stem, ""))
    figures = []
    for name, caption in listed.items():
        files = [f"{FIGURES}/{name}.{ext}" for ext in ("png", "pdf") if (outdir / f"{name}.{ext}").exists()]
        figures.append({"name": name, "caption": caption, "files": files})
    for path in outdir.iterdir():
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    return figures


def commit(out: Path, staging: Path, arrays: bool = True) -> None:
    """Move a staged result into ``out``: summary removed first and moved in last.

    With ``arrays`` the staged ``arrays.npz`` replaces the old one (or removes it when none was
    staged); without, the stored arrays stay (a redraw).
    """
    with contextlib.suppress(FileNotFoundError):
        (out / SUMMARY).unlink()
    fsync_dir(out)
    if arrays and (staging / ARRAYS).exists():
        os.replace(staging / ARRAYS, out / ARRAYS)
    elif arrays:
        with contextlib.suppress(FileNotFoundError):
            (out / ARRAYS).unlink()
    if (out / FIGURES).exists():
        os.replace(out / FIGURES, staging / "previous-figures")
    if (staging / FIGURES).exists():
        os.replace(staging / FIGURES, out / FIGURES)
    if (staging / REPORT).exists():
        os.replace(staging / REPORT, out / REPORT)
    fsync_dir(out)
    os.replace(staging / SUMMARY, out / SUMMARY)
    fsync_dir(out)


def _json_safe(value: Any) -> Any:
    """Non-finite floats as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


@contextlib.contextmanager
def _staging(out: Path) -> Iterator[Path]:
    """A fresh staging folder inside ``out``, removed on exit (its contents committed or not)."""
    staging = out / f"{STAGING}{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_summary(staging: Path, summary: dict) -> None:
    """Stage ``summary.json`` and the ``report.md`` rendered from exactly what it holds."""
    text = json.dumps(_json_safe(_plain(summary)), indent=1, allow_nan=False, default=str)
    atomic_write(staging / SUMMARY, text.encode())
    (staging / REPORT).write_text(run_report(json.loads(text)))


# ---------------------------------------------------------------------------- redrawing


def run_folders(folder: str | Path) -> list[Path]:
    """The run folders at ``folder``: itself, or its subfolders holding a ``summary.json``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    if (folder / SUMMARY).is_file():
        return [folder]
    runs = sorted(p.parent for p in folder.glob(f"*/{SUMMARY}"))
    if not runs:
        raise InputError(
            f"{folder}: no {SUMMARY} here or in its subfolders; expected a folder written by "
            "'gaugedyn run' or 'gaugedyn reproduce'"
        )
    return runs


def read_summary(run: Path) -> dict:
    try:
        summary = json.loads((run / SUMMARY).read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"{run / SUMMARY}: unreadable summary ({oneline(err)})") from None
    if not isinstance(summary, dict) or "configuration" not in summary:
        raise InputError(f"{run / SUMMARY}: not a gaugedyn summary")
    return summary


def load_arrays(run: str | Path, summary: dict | None = None) -> dict[str, np.ndarray]:
    """The stored arrays of a run folder, checked against the summary's checksum."""
    run = Path(run)
    summary = summary if summary is not None else read_summary(run)
    try:
        data = (run / ARRAYS).read_bytes()
    except OSError:
        raise InputError(f"{run}: no {ARRAYS} (the run did not complete its tasks)") from None
    if hashlib.sha256(data).hexdigest() != summary.get("arrays_sha256"):
        raise InputError(f"{run / ARRAYS}: does not match the checksum in {SUMMARY}")
    with np.load(io.BytesIO(data), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def redraw(folder: str | Path, backend: str | None = None) -> list[Path]:
    """Redraw the figures of a run folder, or of every run in a reproduce folder, from
    ``arrays.npz`` and ``summary.json`` alone; return the run folders redrawn."""
    runs = run_folders(folder)
    summaries = {run: read_summary(run) for run in runs}
    done = []
    for run, summary in summaries.items():
        if summary.get("arrays_sha256") is None:
            continue
        spec = summary["configuration"].get("experiment")
        experiment = resolve_experiment(spec, f"{run / SUMMARY}: experiment")
        arrays = load_arrays(run, summary)
        with claim_output_dir(run, "run"), _staging(run) as staging:
            params = summary["configuration"].get("params", {})
            summary["figures"] = draw(experiment, arrays, params, staging / FIGURES, backend)
            _write_summary(staging, summary)
            commit(run, staging, arrays=False)
        done.append(run)
    folder = Path(folder)
    if (folder / MARKER).is_file() and _marker_kind(folder / MARKER) == "reproduce":
        from ._report import write_report

        write_report(folder)
    return done
