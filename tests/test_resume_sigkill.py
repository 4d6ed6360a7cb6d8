"""Killing ``gaugedyn run`` with SIGKILL at random points and rerunning the same command gives
results identical, bit for bit, to an uninterrupted run, and no stored task is computed again."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from toy_experiments import config_text

TESTS = Path(__file__).parent
N_TASKS = 32

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX only")


def command(cfg: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gaugedyn",
        "run",
        str(cfg),
        "--out",
        str(out),
        "--workers",
        "2",
        "-q",
    ]


def environment(log: Path) -> dict:
    path = os.pathsep.join(p for p in [str(TESTS), os.environ.get("PYTHONPATH", "")] if p)
    return {**os.environ, "PYTHONPATH": path, "TOY_LOG": str(log)}


def stored_indices(out: Path) -> set[int]:
    done = set()
    for meta in (out / ".tasks").glob("*/*.json"):
        done.add(json.loads(meta.read_text())["task"]["i"])
    return done


def session_members(sid: int) -> list[int]:
    """Processes still alive in session ``sid`` (Linux ``/proc``)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(stat.parent.name))
    return members


def log_lines(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def started_since(log: Path, mark: int) -> list[int]:
    return [int(x) for x in log_lines(log)[mark:]]


def test_sigkill_at_random_points_then_resume_is_bit_identical(tmp_path):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(config_text(seed=11, n_tasks=N_TASKS, size=257, sleep=0.08))

    ref_log = tmp_path / "ref.log"
    ref = subprocess.run(
        command(cfg, tmp_path / "ref"),
        env=environment(ref_log),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ref.returncode == 0, ref.stderr
    assert sorted(map(int, log_lines(ref_log))) == list(range(N_TASKS))

    rng = random.Random(20261129)
    out, log = tmp_path / "out", tmp_path / "run.log"
    kills, resumed_with_stored = 0, 0
    while kills < 5:
        before = stored_indices(out) if out.exists() else set()
        mark = len(log_lines(log))
        proc = subprocess.Popen(
            command(cfg, out),
            env=environment(log),
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        remaining = N_TASKS - len(before)
        # kill once this many more tasks are stored (at least one the first time), after a delay
        wait_for = rng.randint(1 if kills in (0, 2) else 0, min(5, remaining - 6))
        deadline = time.monotonic() + 60
        while len(stored_indices(out) - before) < wait_for and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.25))
        assert proc.poll() is None, "the sweep finished before it could be killed"
        if kills == 2 and Path("/proc/self/stat").exists():
            os.kill(proc.pid, signal.SIGKILL)  # the parent alone: its workers must not linger
            proc.wait(timeout=30)
            deadline = time.monotonic() + 20
            try:
                while session_members(proc.pid):
                    assert time.monotonic() < deadline, "workers outlived their killed parent"
                    time.sleep(0.05)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        kills += 1
        again = set(started_since(log, mark)) & before
        assert not again, f"tasks {sorted(again)} were computed again after being stored"
        resumed_with_stored += bool(before)
        assert not (out / "summary.json").exists()
    assert len(stored_indices(out)) < N_TASKS
    assert resumed_with_stored >= 2  # the check above was exercised on partly stored sweeps

    before = stored_indices(out)
    mark = len(log_lines(log))
    final = subprocess.run(
        command(cfg, out), env=environment(log), capture_output=True, text=True, timeout=120
    )
    assert final.returncode == 0, final.stderr
    resumed = started_since(log, mark)
    assert sorted(resumed) == sorted(set(range(N_TASKS)) - before)  # each missing task once

    with np.load(tmp_path / "ref" / "arrays.npz") as a, np.load(out / "arrays.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            assert a[name].dtype == b[name].dtype and a[name].tobytes() == b[name].tobytes()
    ref_summary = json.loads((tmp_path / "ref" / "summary.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["claims"] == ref_summary["claims"]
    assert summary["diagnostics"]["tasks"]["reused"] == len(before)
    assert not list(out.glob(".staging-*")) and not list(out.rglob("*.tmp-*"))
