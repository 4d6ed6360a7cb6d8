"""Provenance written into every result: versions, code identity, platform and seed derivation."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

_PACKAGES = ("gaugedyn", "numpy", "scipy", "sympy", "torch", "matplotlib")

NOTED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
"""The CPU features a result lists: they decide the compiled kernels' vector widths (numba
compiles for the host CPU, and a reduction it vectorises sums in another order on another
width: the prototypes kernel's per-seed values move at about the fifth digit between an Intel
Xeon and an AMD EPYC) and torch's matmul rate."""


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """Which of `NOTED_FLAGS` the CPU has (``/proc/cpuinfo``; none known elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [f for f in NOTED_FLAGS if f in have]
    except OSError:
        pass
    return []


def versions() -> dict[str, str]:
    """Versions of Python, the platform and the scientific stack (``"absent"`` if missing), and
    the CPU the run's compiled kernels were built for (`cpu_model`, `cpu_flags`)."""
    out = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_flags": " ".join(cpu_flags()),
    }
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def task_seed(root_seed: int, *coordinates: Any) -> np.random.SeedSequence:
    """The seed of one task, derived from the root seed and the task's coordinates.

    The derivation hashes the coordinates (any JSON-serialisable values), so the stream a task
    receives never depends on execution order, executor or number of workers.
    """
    digest = hashlib.sha256(json.dumps(coordinates, sort_keys=True, default=str).encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.SeedSequence(entropy=int(root_seed), spawn_key=tuple(words))


def seed_derivation(left_out: list[str] | tuple[str, ...] = ()) -> str:
    """How a run's task seeds derive from its root seed (`task_seed()`), in words, for
    ``summary.json``: the coordinates are the experiment's ``seed_coordinates(task)``, the task
    itself less the settings named in ``left_out`` (those that only choose what is read off the
    runs, such as a multiverse's shared pass, so that they leave the runs as they are)."""
    names = ", ".join(map(repr, left_out))
    less = f" less {names} (settings that only choose what is read off its runs)"
    return (
        "gaugedyn._meta.task_seed(root, experiment, coordinates): SeedSequence(root, "
        "spawn_key=sha256(json([experiment, coordinates]))), coordinates = "
        "Experiment.seed_coordinates(task): the task" + (less if left_out else "")
    )


def integer_seed(seed: np.random.SeedSequence) -> int:
    """The one integer a ``SeedSequence`` gives the code that needs an integer seed (torch's
    ``manual_seed``, numba kernels, numpy's legacy seeding, the trainer's ``root_seed``): the top
    63 bits of its first 64-bit word, so the integer is non-negative in every signed 64-bit type."""
    return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def rng(root_seed: int, *coordinates: Any) -> np.random.Generator:
    """A numpy generator for one task (see `task_seed()`)."""
    return np.random.default_rng(task_seed(root_seed, *coordinates))


CODE_SUFFIXES = (".py", ".json")
"""The files that make a result's code: modules and the data they load (calibrations, pilots)."""


def _tree(folder: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    return [
        path
        for path in sorted(folder.rglob("*"))
        if path.suffix in CODE_SUFFIXES
        and path.is_file()
        and "__pycache__" not in path.parts
        and not any(path.relative_to(folder).as_posix().startswith(s) for s in skip)
    ]


def _own_files(module: str | None) -> tuple[list[tuple[str, Path]], str]:
    """The files a task of ``module`` can reach, as ``(name, path)``, and the scope in words.

    A system imports the library and the harness, never another system (``tests/
    test_structure.py`` checks it), so a module of ``gaugedyn.experiments.<system>`` reaches the
    package without the other systems' folders; any other module reaches the whole package,
    and a module outside it also its own top-level package (or its file)."""
    package = Path(__file__).resolve().parent
    parts = (module or "").split(".")
    systems = package / "experiments"
    skip: tuple[str, ...] = ()
    scope = "gaugedyn"
    if parts[0] == "gaugedyn" and len(parts) > 2 and parts[1] == "experiments":
        skip = tuple(
            f"experiments/{d.name}/"
            for d in sorted(systems.iterdir())
            if d.is_dir() and d.name != parts[2]
        )
        scope = f"gaugedyn without the systems other than {parts[2]}"
    files = [(f"gaugedyn/{p.relative_to(package).as_posix()}", p) for p in _tree(package, skip)]
    if module and parts[0] != "gaugedyn":
        spec = importlib.util.find_spec(parts[0])
        if spec is not None and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                files += [
                    (f"{parts[0]}/{p.relative_to(root).as_posix()}", p) for p in _tree(Path(root))
                ]
        elif spec is not None and spec.origin and Path(spec.origin).is_file():
            files.append((Path(spec.origin).name, Path(spec.origin)))
        scope += f" and {parts[0]}"
    return files, scope


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def checkout() -> dict[str, Any]:
    """The git commit of the checkout gaugedyn's source is in, with ``dirty`` (uncommitted
    changes to the package's files); both ``None`` for an installed copy outside a checkout."""
    package = Path(__file__).resolve().parent
    tracked = _git(package, "ls-files", "--error-unmatch", "__init__.py")
    commit = _git(package, "rev-parse", "HEAD") if tracked is not None else None
    if not commit:
        return {"commit": None, "dirty": None}
    status = _git(package, "status", "--porcelain", "--untracked-files=all", "--", ".")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


@functools.cache
def code_identity(module: str | None = None) -> dict[str, Any]:
    """What code a result comes from: ``sha256`` over the names and bytes of every file a task
    of ``module`` can reach (`CODE_SUFFIXES` under the package; see `_own_files()`
    for the scope), the number of files, the scope in words, gaugedyn's version and the git
    `checkout()`. Computed once per process and module; the result store keys every
    record by ``sha256``, so a record from other code is never read as this code's."""
    files, scope = _own_files(module)
    digest = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    from . import __version__

    return {
        "sha256": digest.hexdigest(),
        "files": len(files),
        "scope": scope,
        "gaugedyn": __version__,
        **checkout(),
    }
