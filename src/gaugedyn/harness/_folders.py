"""Run folders: their layout, the checks before anything is written, the lock, and commits.

A run folder ``DIR`` holds ``summary.json``, ``arrays.npz``, ``figures/``, the result store
``.tasks/`` (unless another store is given) and the mark ``.gaugedyn`` that says gaugedyn owns the
folder (also the lock of a running command). Results are written into ``DIR/.staging-*`` and
moved into place by `commit()`: ``summary.json`` is removed first and moved in last, so a
folder with a ``summary.json`` always holds one complete result.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from .._errors import InputError, oneline
from ._config import show
from ._report import REPORT
from ._store import atomic_write, fsync_dir

SUMMARY = "summary.json"
ARRAYS = "arrays.npz"
FIGURES = "figures"
MARKER = ".gaugedyn"
TASKS = ".tasks"
STAGING = ".staging-"


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
        found = marker_kind(marker)
        if found != kind:
            raise InputError(
                f"{where}: holds a gaugedyn {found} folder, not a {kind} folder; "
                "choose another folder"
            )
    elif (claimed := _being_claimed(path)) is not None:
        if claimed:
            raise InputError(
                f"{where}: another gaugedyn command is using this folder (it is creating it now)"
            )
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
    pids = [p.name[len(prefix) :].split("-")[0] for p in entries]
    return any(pid.isdigit() and _alive(int(pid)) for pid in pids)


def _check_creatable(path: Path, where: str) -> None:
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{where}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{where}: cannot create folders in {parent}")


def marker_kind(marker: Path) -> str:
    """The kind (``"run"`` or ``"reproduce"``) recorded in a folder's mark (``"run"`` if unreadable)."""
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
            raise InputError(
                f"--out {path}: another gaugedyn command is using this folder"
            ) from None
        for stale in path.glob(f"{STAGING}*"):
            shutil.rmtree(stale, ignore_errors=True)
        yield path


@contextlib.contextmanager
def staging_dir(out: Path) -> Iterator[Path]:
    """A fresh staging folder inside ``out``, removed on exit (its contents committed or not)."""
    staging = out / f"{STAGING}{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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
    """The ``summary.json`` of a run folder, or `InputError` if it is not one."""
    try:
        summary = json.loads((run / SUMMARY).read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"{run / SUMMARY}: unreadable summary ({oneline(err)})") from None
    if not isinstance(summary, dict) or "configuration" not in summary:
        raise InputError(f"{run / SUMMARY}: not a gaugedyn summary")
    return summary
