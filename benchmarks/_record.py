"""A benchmark run as a stored result: its command, date, load and machine beside its data.

Each benchmark that publishes figures writes one JSON record into ``benchmarks/results/``
(``--json PATH``); ``tools/bench_page.py`` generates ``docs/benchmarks.md`` from those records and
``--check`` (run by CI) compares the page with them, so a figure on the page is always the one
stored with its run.

Every write is atomic (a temporary file in the same folder, then ``os.replace``): a killed run
leaves the previous record or none, never a half-written one. A long benchmark fills a
`Progress` unit by unit instead: each finished unit is stored at once in ``PATH.partial``, a
rerun with the same configuration resumes after the last finished unit (another configuration
starts cleanly), and the record appears at ``PATH`` only when every unit is done.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gaugedyn._meta import NOTED_FLAGS, cpu_flags, cpu_model  # noqa: F401 (benchmarks import them from here)


def machine() -> dict:
    """The machine a record was measured on."""
    import numpy
    import scipy

    out = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "flags": cpu_flags(),
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
    }
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:
        pass
    return out


def describe_machine() -> str:
    """One line for a benchmark's output: CPU model, cores, noted features, load now."""
    m = machine()
    load = os.getloadavg()
    return (
        f"machine: {m['cpu']}, {m['cores']} cores ({', '.join(m['flags']) or 'no noted flags'});"
        f" load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (1, 5, 15 min)"
    )


MALLOC = ("default", "fixed")
"""The allocator settings a benchmark's ``--malloc`` takes (see `set_malloc()`)."""


def set_malloc(mode: str) -> str:
    """Set glibc's allocator for the whole run, the same for every variant of a benchmark;
    returns what was done (printed and stored with the record).

    ``"default"`` leaves glibc's dynamic thresholds: a freed block above the mmap threshold
    raises it, and the top of the heap is returned to the system past twice that, so whether a
    step's parameter-sized temporaries (torch's Adam allocates two per parameter, SGD with
    weight decay one) come back as fresh pages, each faulted in and zeroed, depends on what the
    process freed before. On the two-core EPYC a step then took about 1,500 minor page faults
    (6 MB) or none, phase by phase, some 3 ms of a 10 to 14 ms step, and the interleaved variants
    of one process shared the phases unevenly. ``"fixed"`` pins the mmap threshold at 32 MiB
    (glibc's largest) and the trim threshold at 1 GiB (``mallopt``), so those temporaries
    reuse heap pages and a step takes no faults once warm, in every variant alike."""
    if mode not in MALLOC:
        raise SystemExit(f"--malloc {mode!r} is not allowed; use one of {MALLOC}")
    if mode == "default":
        return "glibc default (dynamic thresholds)"
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        raise SystemExit("--malloc fixed needs glibc's mallopt; this C library has none") from None
    m_trim_threshold, m_mmap_threshold = -1, -3
    if not (mallopt(m_mmap_threshold, 32 << 20) and mallopt(m_trim_threshold, 1 << 30)):
        raise SystemExit("--malloc fixed: mallopt refused the thresholds")
    return "glibc fixed: mmap threshold 32 MiB, trim threshold 1 GiB (mallopt)"


def minor_faults() -> int:
    """The process's minor page faults so far (``getrusage``)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def start_record(script: str, argv: list[str] | None = None) -> dict:
    """The header of a record, taken before the run: command, start date and load, machine."""
    args = sys.argv[1:] if argv is None else argv
    return {
        "benchmark": script,
        "command": " ".join([".venv/bin/python", f"benchmarks/{script}", *args]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_start": [round(x, 2) for x in os.getloadavg()],
        "machine": machine(),
        "commit": _commit(),
    }


def _load_now() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def write_json(path: str | Path, obj: dict) -> Path:
    """Write ``obj`` to ``path`` as JSON atomically: readers see the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(obj, indent=1, default=float) + "\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_record(path: str | Path, record: dict, data: dict) -> Path:
    """Write ``record`` with ``data`` and the load at the end to ``path`` (JSON, atomically)."""
    out = dict(record, load_end=_load_now(), data=data)
    write_json(path, out)
    print(f"record written to {path}")
    return path


class Progress:
    """A record filled unit by unit and stored after each (``PATH.partial``), resumable.

    ``config`` is what every unit shares (tolerances, repeats, horizon): a rerun whose
    ``config`` equals the stored one reuses the stored units, any other starts cleanly. Each
    run that adds units is noted in ``runs`` with its date and loads; `finish` writes the
    record to ``PATH`` with ``data`` and removes the partial file. With ``stop_after``
    (seconds), a run that has used that much wall time and finished a unit starts no further one: it exits with
    status 3 and a rerun resumes (long benchmarks run in chunks on a shared machine).
    """

    def __init__(
        self,
        path: str | Path,
        script: str,
        config: dict,
        argv: list[str] | None = None,
        stop_after: float | None = None,
    ):
        self.started = time.monotonic()
        self.stop_after = stop_after
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        config = json.loads(json.dumps(config, default=float))
        head = start_record(script, argv)
        self.run = {
            "command": head["command"],
            "date": head["date"],
            "load_start": head["load_start"],
            "units": [],
        }
        stored = None
        if self.partial.exists():
            try:
                stored = json.loads(self.partial.read_text())
            except (OSError, ValueError):
                stored = None
        if stored is not None and stored.get("config") == config:
            self.state = stored
            print(
                f"resuming {self.partial}: {len(stored['units'])} units stored "
                f"({', '.join(stored['units']) or 'none'})"
            )
        else:
            if stored is not None:
                print(f"{self.partial} holds another configuration; starting cleanly")
            self.state = dict(head, config=config, units={}, runs=[])
        self.state["runs"].append(self.run)

    def get(self, key: str) -> Any:
        """The stored result of unit ``key``, or None."""
        return self.state["units"].get(key)

    def unit(self, key: str, compute):
        """The stored result of ``key``, or ``compute()``'s, stored at once."""
        if key in self.state["units"]:
            return self.state["units"][key]
        if (
            self.stop_after is not None
            and self.run["units"]
            and time.monotonic() - self.started > self.stop_after
        ):
            print(
                f"stopped before {key!r} after {self.stop_after:g} s; {len(self.state['units'])} "
                f"units stored in {self.partial}: rerun the same command to resume",
                flush=True,
            )
            raise SystemExit(3)
        value = json.loads(json.dumps(compute(), default=float))
        self.state["units"][key] = value
        self.run["units"].append(key)
        self.run["load_end"] = _load_now()
        write_json(self.partial, self.state)
        return value

    def finish(self, data: dict) -> Path:
        """Write the record (header, runs, ``data``) to ``PATH`` and drop the partial file."""
        self.run["load_end"] = _load_now()
        out = {k: v for k, v in self.state.items() if k != "units"}
        out["command"] = self.run["command"]  # the run that completed the record
        out["load_start"] = self.state["runs"][0]["load_start"]
        out["load_end"] = self.run["load_end"]
        out["data"] = data
        write_json(self.path, out)
        self.partial.unlink(missing_ok=True)
        print(f"record written to {self.path}")
        return self.path


def grid_tasks(spec: str | None) -> list[str]:
    """The beta grid's tasks named by ``--tasks A,B`` (``None``: all of them), before any work;
    one `gaugedyn.InputError` naming the unknown ones and what is allowed."""
    from gaugedyn import InputError
    from gaugedyn.experiments.adam_split.tasks import TASKS

    tasks = [t.strip() for t in spec.split(",")] if spec else list(TASKS)
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks:
        raise InputError(f"--tasks {spec!r}: unknown {bad}; allowed: {', '.join(TASKS)}")
    return tasks


def check_at_least(*bounds: tuple[str, int, int]) -> None:
    """Each ``(option, value, lowest)``: a value under its lowest is one
    `gaugedyn.InputError` naming the option, the value and the bound."""
    from gaugedyn import InputError

    for name, v, lo in bounds:
        if v < lo:
            raise InputError(f"--{name} {v} is not allowed; use an integer >= {lo}")
