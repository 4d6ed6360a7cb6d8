"""Ctrl-C on ``gaugedyn run`` with the process executor, as a terminal sends it (SIGINT to the
whole process group) during the sweep, the analysis or the figures: one line saying what is
stored, exit status 130, no worker's traceback, and no half-written result in the folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toy_experiments import config_text

TESTS = Path(__file__).parent
pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups")


def _wait_for(condition, proc, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "the run never reached the moment to interrupt"
        time.sleep(0.05)


def _default_sigint() -> None:
    """In the child before exec: SIGINT to its default action, so the run's Python installs
    its KeyboardInterrupt handler even when the test process inherited SIGINT ignored (a
    background job of a shell without job control starts so, and an ignored signal stays
    ignored across fork and exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_run(cfg: Path, out: Path, **toy: str) -> subprocess.Popen:
    """``gaugedyn run CFG --out OUT --workers 2 -q`` in its own process group, the toy
    experiments importable and ``toy`` added to its environment."""
    pythonpath = [str(TESTS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in pythonpath if p), **toy}
    return subprocess.Popen(
        [sys.executable, "-m", "gaugedyn", "run", str(cfg), "--out", str(out), "--workers", "2"]
        + ["-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


@pytest.mark.parametrize("phase", ["sweep", "analysis", "figures"])
def test_ctrl_c_says_what_is_stored_in_one_line(tmp_path, phase):
    cfg = tmp_path / "toy.toml"
    cfg.write_text(config_text(n_tasks=6, sleep=0.2))
    log, mark, out = tmp_path / "log", tmp_path / "mark", tmp_path / "out"
    mark.mkdir()
    proc = _start_run(
        cfg,
        out,
        TOY_LOG=str(log),
        TOY_MARK=str(mark),
        **{f"TOY_SLOW_{phase.upper()}": "30"},
    )
    try:
        if phase == "sweep":  # two tasks running in the workers, four still to start
            _wait_for(lambda: log.exists() and len(log.read_text().split()) >= 2, proc)
        else:
            _wait_for((mark / phase).exists, proc)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on a terminal does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    lines = err.strip().splitlines()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert len(lines) == 1 and lines[0].startswith("gaugedyn run: interrupted; "), err
    if phase == "sweep":
        assert lines[0].endswith("rerun to resume") or "no finished task was stored" in err, err
    else:
        assert "6 of 6 tasks are stored" in lines[0] and lines[0].endswith("rerun to resume")
    leftover = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert leftover == [], leftover  # no summary, arrays, figures or report of a half run


def test_ctrl_c_ends_the_workers_running_long_tasks(tmp_path):
    """An interrupted sweep ends its workers at once: their running tasks are stored by nobody,
    so the run must not wait for them (on Python < 3.14 the pool's ``shutdown`` forgot its
    workers before they were ended, and the run waited for both 60-second tasks)."""
    cfg = tmp_path / "toy.toml"
    cfg.write_text(config_text(n_tasks=4))
    log, out = tmp_path / "log", tmp_path / "out"
    proc = _start_run(cfg, out, TOY_LOG=str(log), TOY_SLOW_TASK="60")
    try:
        _wait_for(lambda: log.exists() and len(log.read_text().split()) >= 2, proc)
        os.killpg(proc.pid, signal.SIGINT)
        start = time.monotonic()
        _, err = proc.communicate(timeout=45)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert took < 30, f"the interrupted run waited {took:.0f} s for its workers' tasks"
    assert "no finished task was stored" in err or "0 of 4" in err, err


def test_an_interrupted_pool_has_no_manager_thread_left_at_exit():
    """`ProcessPool.shutdown(wait=False, cancel_futures=True)` returns only after the pool's
    manager thread has ended (and closed its wakeup pipe): Python 3.11's exit hook writes to
    that pipe without a lock, so a thread still closing it at exit printed ``OSError: [Errno 9]
    Bad file descriptor`` after an interrupted run's one line."""
    from gaugedyn.harness._executor import ProcessPool

    pool = ProcessPool(2)
    futures = [pool.submit(time.sleep, 30) for _ in range(4)]
    time.sleep(0.5)  # the workers are running the first two
    manager = pool._pool._executor_manager_thread
    assert manager is not None and manager.is_alive()
    start = time.monotonic()
    pool.shutdown(wait=False, cancel_futures=True)
    assert not manager.is_alive()
    assert time.monotonic() - start < 15
    assert all(f.done() for f in futures[2:])
