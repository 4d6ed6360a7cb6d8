"""A content-addressed, resumable store of finished tasks.

A task's key is ``sha256(canonical JSON of [experiment name, task, root seed, code])``, ``code``
the hash of the source files the task can reach (`gaugedyn._meta.code_identity()`): a record
computed by other code has another key and is never read as this code's. Its `task_id()`
(the same without the code) finds such records, so a rerun after a code change says how many it
recomputes instead of reusing.
A record is two files under ``ROOT/<key[:2]>/``: ``<key>.npz`` (the result's arrays) and
``<key>.json`` (metadata: the task, its seed, the checksum, values that are not arrays). Each
file is written to a temporary name, flushed to disk and renamed into place, the npz first and the
json last, so the json is the commit mark: a record without it, or whose checksum does not match
on read, is discarded and its task recomputed.

The checksum covers everything that decides the numbers a record hands back: the npz bytes, the
record's key and format, and its layout (which stored array carries which result name, and the
values that are not arrays). A record damaged in any way (bytes, names, a file or folder of the
store replaced by something else) is discarded and recomputed; nothing in the store can block a
rerun.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._json import plain, strict

FORMAT = 2
MARK = ".gaugedyn-store"
"""The file that marks a folder as a gaugedyn result store: only a folder holding it (or an empty
or new one) is written to, so a store option pointed at the user's own folder deletes nothing."""
_RECORD = re.compile(r"\.?[0-9a-f]{64}\.(json|npz)(\.tmp-.*)?")


class StoreError(TypeError):
    """A task result that cannot be stored (a value neither array-like nor JSON-serialisable)."""


def canonical_json(value: Any) -> str:
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def task_key(experiment: str, task: dict, root_seed: int, code: str | None = None) -> str:
    """The content address of one task: a hash of its full configuration and its ``code``
    (default: the identity of the whole package, `gaugedyn._meta.code_identity()`).

    Parameters
    ----------
    experiment : str
        The experiment's registered name.
    task : dict
        The task's full configuration (JSON-serialisable; hashed in canonical JSON, keys sorted).
    root_seed : int
        The run's root seed.
    code : str, optional
        The code identity the result depends on; ``None`` takes the SHA-256 of the installed
        package, so any change of the code gives new keys.

    Returns
    -------
    str
        The SHA-256 hex digest (64 characters) that names the task's record in the store.
    """
    if code is None:
        from .._meta import code_identity

        code = code_identity()["sha256"]
    payload = canonical_json([experiment, task, int(root_seed), code])
    return hashlib.sha256(payload.encode()).hexdigest()


def task_id(experiment: str, task: dict, root_seed: int) -> str:
    """A task's identity whatever code runs it (what `task_key()` hashes, less the code)."""
    payload = canonical_json([experiment, task, int(root_seed)])
    return hashlib.sha256(payload.encode()).hexdigest()


def atomic_write(path: Path, data: bytes, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and rename (then fsync the
    folder, so the rename itself is durable, unless ``sync_dir`` is false).

    A reader sees either the old file or the whole new one, never a part; on any failure the
    temporary file is removed and the error propagates, leaving ``path`` as it was.

    Parameters
    ----------
    path : Path
        The file to write (replaced when it exists); its folder must exist.
    data : bytes
        The file's full contents.
    sync_dir : bool
        Whether to fsync the folder after the rename (``False`` saves a sync when many files of
        one folder are written and the folder is synced once after them).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if sync_dir:
        fsync_dir(path.parent)


def write_strict_json(path: Path, x: Any) -> None:
    """Write ``x`` as strict, indented JSON (`gaugedyn._json.strict`: non-finite floats as
    strings; one space of indent and a final newline) through `atomic_write`, so that a reader,
    or a run interrupted while writing, sees the old file or the whole new one. The stored
    pilots of the package's experiments write through it.

    Parameters
    ----------
    path : Path
        The file to write (replaced when it exists); its folder must exist.
    x : Any
        The value to write (dicts, lists, numbers, numpy values, strings).

    Returns
    -------
    None
    """
    atomic_write(Path(path), (json.dumps(strict(x), indent=1) + "\n").encode())


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def encode_result(result: dict) -> tuple[bytes, dict]:
    """``(npz bytes, extras)``: array-like values go to the npz, the rest must be JSON."""
    if not isinstance(result, dict):
        raise StoreError(f"run_task returned {type(result).__name__}; expected a dict")
    arrays, names, extras = {}, {}, {}
    for i, (name, value) in enumerate(result.items()):
        if not isinstance(name, str):
            raise StoreError(f"result key {name!r} is not a string")
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            array = None
        if array is not None and array.dtype != object:
            arrays[f"a{i}"] = array
            names[f"a{i}"] = name
            continue
        try:
            extras[name] = json.loads(json.dumps(plain(value)))
        except (TypeError, ValueError):
            raise StoreError(
                f"result {name!r} of type {type(value).__name__} is neither an array nor JSON"
            ) from None
    buffer = io.BytesIO()
    np.savez(buffer, **cast(dict[str, Any], arrays))
    return buffer.getvalue(), {"arrays": names, "extras": extras}


def decode_result(npz: bytes, layout: dict) -> dict:
    out: dict[str, Any] = {}
    with np.load(io.BytesIO(npz), allow_pickle=False) as f:
        for stored, name in layout["arrays"].items():
            array = f[stored]
            out[name] = array[()] if array.ndim == 0 else array
    out.update(layout["extras"])
    return out


def record_digest(key: str, npz: bytes, layout: dict) -> str:
    """``sha256`` of what decides a record's numbers: format, key, layout and npz bytes."""
    head = json.dumps(
        {"format": FORMAT, "key": key, "layout": layout}, sort_keys=True, separators=(",", ":")
    ).encode()  # extras may hold nan, as JSON allows
    return hashlib.sha256(len(head).to_bytes(8, "little") + head + npz).hexdigest()


def _remove(path: Path) -> None:
    """Remove whatever is at ``path``: a file, a link or a folder (damaged store content)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def foreign(root: Path) -> str | None:
    """Why ``root`` is not a folder gaugedyn may use as a store (``None``: it may): it is a file,
    or a non-empty folder without `MARK` whose content is not a store's (a store written
    before the mark existed holds only ``<2 hex digits>/<64 hex digits>.json|.npz``). A
    temporary of the mark (another command creating the store this moment) is a store's."""
    root = Path(root)
    if not root.exists():
        return None
    if not root.is_dir():
        return "it exists and is not a folder"
    if (root / MARK).is_file():
        return None
    entries = list(root.iterdir())
    for entry in entries:
        if entry.name.startswith(f".{MARK}.tmp-"):  # another command writing the mark now
            continue
        if entry.name == MARK and entry.is_file():  # the mark renamed into place since the check
            return None
        if not (
            entry.is_dir()
            and re.fullmatch(r"[0-9a-f]{2}", entry.name)
            and all(_RECORD.fullmatch(f.name) for f in entry.iterdir())
        ):
            return (
                f"it holds {entry.name!r}, and a gaugedyn store is a folder holding {MARK} "
                "(or an empty one)"
            )
    return None


class ResultStore:
    """Finished tasks under ``root``, addressed by `task_key()`."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.discarded: list[str] = []

    def claim(self, force: bool = False) -> None:
        """Make ``root`` a store (created with `MARK`), or refuse (`InputError`) a
        folder that is not one (`foreign()`) unless ``force``."""
        from .._errors import InputError

        why = foreign(self.root)
        if why is not None and not (force and self.root.is_dir()):
            raise InputError(
                f"store {self.root}: not a gaugedyn result store ({why}); choose an empty or "
                "new folder, or pass --force (force=True) to use it anyway"
            )
        if not (self.root / MARK).is_file():
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write(self.root / MARK, json.dumps({"format": FORMAT}).encode())

    def _paths(self, key: str) -> tuple[Path, Path]:
        folder = self.root / key[:2]
        return folder / f"{key}.npz", folder / f"{key}.json"

    def __contains__(self, key: str) -> bool:
        return self._paths(key)[1].exists()

    def keys(self) -> Iterator[str]:
        """Keys of committed records (their checksums are checked only on `load()`)."""
        if self.root.is_dir():
            for path in sorted(self.root.glob("??/*.json")):
                yield path.stem

    def meta(self, key: str) -> dict | None:
        try:
            return json.loads(self._paths(key)[1].read_text())
        except (OSError, ValueError):
            return None

    def other_code(self, ids: set[str], code: str) -> dict[str, set[str]]:
        """Among the committed records, those of the tasks ``ids`` (`task_id()`) stored by
        code other than ``code``: ``{task id: the codes that stored it}`` (records of earlier
        store formats, keyed by version, count as other code)."""
        found: dict[str, set[str]] = {}
        if not ids:
            return found
        for key in self.keys():
            meta = self.meta(key)
            if not isinstance(meta, dict):
                continue
            ident = meta.get("task_id")
            if ident is None:
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    ident = task_id(meta["experiment"], meta["task"], meta["root_seed"])
            code_meta = meta.get("code")
            theirs = code_meta.get("sha256") if isinstance(code_meta, dict) else None
            if ident in ids and theirs != code:
                found.setdefault(ident, set()).add(theirs or f"version {meta.get('version')}")
        return found

    def load(self, key: str) -> dict | None:
        """The stored result, or ``None`` if missing; a corrupt record is discarded."""
        npz_path, json_path = self._paths(key)
        if not json_path.exists():
            return None
        try:
            meta = json.loads(json_path.read_text())
            npz = npz_path.read_bytes()
            if (
                isinstance(meta, dict)
                and isinstance(meta.get("format"), int)
                and meta["format"] < FORMAT
            ):
                raise ValueError(
                    f"store format {meta['format']}, older than {FORMAT}, whose "
                    "checksum did not cover the array names"
                )
            if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
                raise ValueError("metadata does not describe this key")
            layout = meta["layout"]
            if record_digest(key, npz, layout) != meta["sha256"]:
                raise ValueError("checksum mismatch")
            result = decode_result(npz, layout)
            with np.load(io.BytesIO(npz), allow_pickle=False) as f:
                if sorted(f.files) != sorted(layout["arrays"]):
                    raise ValueError("the stored arrays do not match the layout")
            return result
        except Exception as err:
            self.discard(key, f"{type(err).__name__}: {err}")
            return None

    def discard(self, key: str, reason: str) -> None:
        print(f"store: discarding record {key[:12]} ({reason}); recomputing", file=sys.stderr)
        self.discarded.append(key)
        for path in self._paths(key)[::-1]:
            _remove(path)

    def save(self, key: str, result: dict, meta: dict) -> None:
        """Store ``result`` atomically (npz, then the json commit mark)."""
        npz, layout = encode_result(result)
        npz_path, json_path = self._paths(key)
        self._make_folder(npz_path.parent)
        for path in (npz_path, json_path):
            if path.is_dir() and not path.is_symlink():
                _remove(path)  # a folder where a record file belongs: damaged store content
        record = {
            "format": FORMAT,
            "key": key,
            "sha256": record_digest(key, npz, layout),
            "stored_at": time.time(),
            "layout": layout,
            **plain(meta),
        }
        atomic_write(npz_path, npz, sync_dir=False)  # the json's folder sync covers both
        atomic_write(json_path, json.dumps(record, sort_keys=True).encode())

    def _make_folder(self, folder: Path) -> None:
        """Create ``folder`` (inside the store), first removing a file that stands in the way
        of it or of the store's root: such a file is damage, and must not block every rerun."""
        for path in (self.root, folder):
            if (path.exists() or path.is_symlink()) and not path.is_dir():
                print(
                    f"store: removing {path}, which should be a folder of the store",
                    file=sys.stderr,
                )
                _remove(path)
        folder.mkdir(parents=True, exist_ok=True)

    def clean_temporaries(self) -> int:
        """Remove temporary files left by processes that no longer run; return how many."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for path in self.root.glob("??/.*.tmp-*"):
            try:
                pid = int(path.name.rsplit(".tmp-", 1)[1].split("-")[0])
            except (IndexError, ValueError):
                continue
            if not _alive(pid):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
        return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True
