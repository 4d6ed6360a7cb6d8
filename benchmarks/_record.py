"""A benchmark run as a stored result: its command, date, load and machine beside its data.

Each benchmark that publishes figures writes one JSON record into ``benchmarks/results/``
(``--json PATH``); ``tools/bench_page.py`` generates ``docs/benchmarks.md`` from those records and
``--check`` (run by CI) compares the page with them, so a figure on the page is always the one
stored with its run.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

NOTED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
"""The CPU features a record lists (they decide the kernels' widths and torch's matmul rate)."""


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
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [f for f in NOTED_FLAGS if f in have]
    except OSError:
        pass
    return []


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


def write_record(path: str | Path, record: dict, data: dict) -> Path:
    """Write ``record`` with ``data`` and the load at the end to ``path`` (JSON)."""
    out = dict(record, load_end=[round(x, 2) for x in os.getloadavg()], data=data)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(f"record written to {path}")
    return path
