"""Regression suite of issue 17: every example of bad input at the edges ends as one error line
(exit 2) or a true message, with no traceback, before any real work, and nothing written."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from toy_experiments import TOY, Toy, config_text, invoke

import gaugedyn._options as options
import gaugedyn.training._trainer  # noqa: F401  (torch imported once, not inside a timed call)
from gaugedyn import InputError
from gaugedyn.experiments import make_config

TESTS = Path(__file__).parent
ROOT = TESTS.parent
FAST = 10.0  # seconds: "none runs for more than a few seconds before refusing"


def snapshot(root: Path) -> dict[str, int | None]:
    """Every path under ``root`` with its file's modification time (folders: ``None``)."""
    return {
        str(p.relative_to(root)): p.stat().st_mtime_ns if p.is_file() else None
        for p in root.rglob("*")
    }


def refused(argv, tmp_path: Path, capsys, *, match: str = "", code: int = 2) -> str:
    """Run ``gaugedyn ARGV`` in ``tmp_path``: exit ``code``, one stderr line (containing
    ``match``), no traceback, fast, nothing written; return the line."""
    before = snapshot(tmp_path)
    start = time.monotonic()
    with contextlib.chdir(tmp_path):
        rc, out, err = invoke(argv, capsys)
    elapsed = time.monotonic() - start
    lines = err.strip().splitlines()
    assert rc == code, (argv, rc, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("gaugedyn ") and "error" in lines[0], err
    assert match in lines[0], (match, lines[0])
    assert out == "" and snapshot(tmp_path) == before, argv
    assert elapsed < FAST, (argv, elapsed)
    return lines[0]


@pytest.fixture
def small_memory(monkeypatch):
    """8 GiB available, whatever the machine has, so memory refusals do not depend on it."""
    monkeypatch.setattr(options, "available_memory", lambda: 8 * 2**30)


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "toy.toml").write_text(config_text(n_tasks=3))
    (tmp_path / "FILE").write_text("a regular file")
    return tmp_path


# ---------------------------------------------------------------------------- solve


SOLVE = ["solve", "--setup", "single", "--dim", "10"]


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--prune-tol", "2"], "--prune-tol='2' is not allowed; allowed: a number in (0, 1)"),
        (["--prune-tol", "1e300"], "--prune-tol='1e300'"),
        (["--rtol", "10"], "--rtol='10' is not allowed; allowed: a number in [1e-13, 0.01]"),
        (["--atol", "1"], "--atol='1'"),
        (["--gauge", ""], "--gauge='' is not allowed; allowed: one of w-heavy, a-heavy, balanced"),
        (["--gauge", "heavy"], "--gauge='heavy'"),
        (["--activation", "swish"], "--activation='swish'"),
        (["--method", "euler"], "--method='euler'"),
        (["--formulation", ""], "--formulation=''"),
        (
            ["--scale", "1e308"],
            "--scale='1e308' is not allowed; allowed: a number in [1e-06, 1e+06]",
        ),
        (["--t-max", "1e300"], "--t-max='1e300'"),
        (["--t-max", "nan"], "not finite"),
        (["--threshold", "1"], "--threshold='1'"),
        (["--dynamics", "gd"], "--eta is required"),
        (["--dynamics", "gd", "--eta", "1e9"], "--eta='1e9'"),
        (["--eta", "0.1"], "--eta is only used with --dynamics gd"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_solve_refuses(extra, match, tmp_path, capsys):
    refused([*SOLVE, *extra], tmp_path, capsys, match=match)


@pytest.mark.parametrize(
    "argv, match",
    [
        (
            ["solve", "--setup", "single", "--dim", "1000000000000000"],
            "--dim='1000000000000000' is not allowed; allowed: an integer in [2, 1e+08]",
        ),
        (["solve", "--setup", "single", "--dim", "1" * 5000], "too long"),
        (
            [
                "solve",
                "--setup",
                "single",
                "--dim",
                "10000000",
                "--formulation",
                "weight-space",
                "--method",
                "RK45",
            ],
            "needs about",
        ),
        (["solve", "--setup", "duplicates", "--dim", "10", "--gauges", "a-heavy,"], "entry ''"),
        (
            [
                "solve",
                "--setup",
                "duplicates",
                "--dim",
                "10",
                "--gauges",
                ",".join(["w-heavy"] * 65),
            ],
            "allowed: 1 to 64",
        ),
        (
            ["solve", "--setup", "single", "--dim", "100000000", "--formulation", "span"],
            "needs about",
        ),
    ],
)
def test_solve_refuses_sizes(argv, match, tmp_path, capsys, small_memory):
    line = refused(argv, tmp_path, capsys, match=match)
    if "needs about" in line:  # the estimate and what is available are quoted
        assert "GiB" in line and "available" in line


def test_solve_warns_about_a_loose_tolerance(capsys):
    rc, out, err = invoke([*SOLVE, "--rtol", "1e-3"], capsys)
    assert rc == 0 and json.loads(out)["specialization_time"]
    assert err.count("\n") == 1 and "warning: --rtol=0.001 is loose" in err


def test_solve_into_a_closed_pipe_ends_quietly(tmp_path):
    read, write = os.pipe()
    os.close(read)  # nobody will read: the first write meets a closed pipe
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(TESTS)])}
    proc = subprocess.run(
        [sys.executable, "-m", "gaugedyn", *SOLVE],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    os.close(write)
    assert proc.returncode == 141 and proc.stderr == ""


# ---------------------------------------------------------------------------- train


TRAIN = ["train", "--dim", "10", "--samples", "20", "--steps", "5", "--seeds", "2"]


@pytest.mark.parametrize(
    "extra, match",
    [
        (
            ["--root-seed", "-1"],
            "--root-seed='-1' is not allowed; allowed: an integer in [0, 2**64 - 1]",
        ),
        (["--root-seed", str(2**64)], "--root-seed="),
        (["--device", "mps"], "--device='mps' is not available on this machine"),
        (["--device", "tpu:7"], "--device='tpu:7'"),
        (["--gauge", ""], "--gauge='' is not allowed"),
        (["--optimizer", ""], "--optimizer=''"),
        (["--dim", "1000000000000000"], "--dim='1000000000000000'"),
        (["--samples", "100000000000"], "--samples='100000000000'"),
        (["--samples", "100000000"], "needs about"),
        (["--seeds", "0"], "--seeds='0'"),
        (["--lr", "inf"], "not finite"),
        (["--strength", "-1"], "--strength='-1'"),
        (["--batch", "50"], "--batch=50 is not allowed; allowed: at most --samples=20"),
        (["--steps", "1.5"], "--steps='1.5'"),
        (["--steps", "1000000000", "--samples", "10000"], "floating-point operations"),
        (["--prune-tol", "2"], "--prune-tol='2'"),
        (
            ["--backend", "numba"],
            "--backend='numba' is not allowed; allowed: one of auto, torch, compiled, chain",
        ),
        (
            ["--backend", "chain"],
            "--backend=chain runs online SGD in float64 on the CPU; it needs "
            "--online, --optimizer sgd",
        ),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_train_refuses(extra, match, tmp_path, capsys, small_memory):
    if extra[:2] == ["--device", "mps"]:
        import torch

        if torch.backends.mps.is_available():
            pytest.skip("this machine has mps")
    refused(_with(TRAIN, extra), tmp_path, capsys, match=match)


def _with(argv: list[str], extra: list[str]) -> list[str]:
    """``argv`` with the options of ``extra`` replacing its own (an option given twice is
    refused), the rest of ``extra`` appended."""
    out, extra = list(argv), list(extra)
    for i in range(len(extra) - 1):
        flag = extra[i]
        if flag is not None and flag.startswith("--") and flag in out and extra[i + 1] is not None:
            j = out.index(flag)
            out[j + 1] = extra[i + 1]
            extra[i] = extra[i + 1] = None
    return out + [x for x in extra if x is not None]


def test_train_backends_run_online_sgd_and_say_which_ran(capsys):
    from gaugedyn.training._cli import OPTIONS
    from gaugedyn.training._params import BACKENDS

    assert OPTIONS["backend"].choices == BACKENDS  # the command line offers what train runs
    argv = [
        "train",
        "--dim",
        "200",
        "--online",
        "--optimizer",
        "sgd",
        "--activation",
        "erf",
        "--lr",
        "1",
        "--steps",
        "2000",
        "--seeds",
        "3",
    ]
    runs = {}
    for backend in ("compiled", "chain"):
        rc, out, err = invoke([*argv, "--backend", backend, "--progress"], capsys)
        assert rc == 0 and "100%" in err
        runs[backend] = json.loads(out)
        assert runs[backend]["settings"]["backend"] == backend
        assert runs[backend]["time_final"] == 10.0 and len(runs[backend]["loss"]) == 3
    assert runs["chain"]["loss"] != runs["compiled"]["loss"]  # its own randomness, same law


# ---------------------------------------------------------------------------- progress


@pytest.mark.parametrize(
    "argv",
    [
        [*SOLVE, "--dynamics", "gd", "--eta", "0.5", "--t-max", "400"],
        [*TRAIN[:-4], "--steps", "300", "--seeds", "1"],
    ],
    ids=["solve-gd", "train"],
)
def test_progress_with_time_left_on_stderr(argv, capsys):
    rc, out, err = invoke([*argv, "--progress"], capsys)
    assert rc == 0 and json.loads(out)
    assert "100%" in err and "<" in err and "step/s" in err  # tqdm: [elapsed<left, rate]
    rc, out, err = invoke(argv, capsys)  # not a terminal and not asked: silent
    assert rc == 0 and err == ""
    rc, out, err = invoke([*argv, "--quiet"], capsys)
    assert rc == 0 and err == ""


def test_progress_leaves_training_unchanged(capsys):
    argv = [*TRAIN[:-4], "--steps", "300", "--seeds", "2"]
    outputs = []
    for extra in ([], ["--progress"]):
        rc, out, _ = invoke([*argv, *extra], capsys)
        assert rc == 0
        result = json.loads(out)
        outputs.append({k: result[k] for k in ("rho", "loss", "alignment", "delta_drift")})
    assert outputs[0] == outputs[1]


def test_progress_callback_leaves_gd_unchanged():
    from gaugedyn.theory import single, solve

    problem = single(10, "w-heavy")
    calls = []
    plain = solve(problem, dynamics="gd", eta=0.5, t_max=300)
    seen = solve(
        problem,
        dynamics="gd",
        eta=0.5,
        t_max=300,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert np.array_equal(plain.a, seen.a) and np.array_equal(plain.Q, seen.Q)
    assert calls[0] == (0, 600) and calls[-1][0] == seen.diagnostics["nsteps"]
    assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:]))


# ---------------------------------------------------------------------------- run / reproduce


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--store", "FILE/sub"], "FILE is a file, not a folder"),
        (["--store", "FILE"], "exists and is not a folder"),
        (["--out", "FILE/sub"], "FILE is a file, not a folder"),
        (["--out", "/proc/gaugedyn-x"], "cannot write there"),
        (["--store", "/proc/gaugedyn-x"], "cannot write there"),
        (["--scheduler", "not-an-address"], "--scheduler 'not-an-address' is not allowed"),
        (["--scheduler", "tcp://127.0.0.1:1"], "nothing answers at 127.0.0.1:1"),
        (["--scheduler", "tcp://host:99999"], "is not allowed"),
    ],
)
def test_run_refuses_before_any_work(extra, match, toy, capsys):
    if "/proc" in " ".join(extra) and not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    if extra[0] == "--scheduler" and "127.0.0.1" in extra[1]:
        pytest.importorskip("distributed")
    argv = [
        "run",
        "toy.toml",
        *([] if extra[0] == "--scheduler" else ["--executor", "serial"]),
        *extra,
    ]
    refused(argv if "--out" in extra else [*argv, "--out", "o"], toy, capsys, match=match)


def test_reproduce_refuses_an_unwritable_out(toy, capsys):
    (toy / "sims").mkdir()
    (toy / "sims" / "one.toml").write_text(config_text(n_tasks=1))
    before = snapshot(toy)
    with contextlib.chdir(toy):
        rc, _, err = invoke(["reproduce", "--simulations", "sims", "--out", "FILE/x"], capsys)
    assert rc == 2 and "is a file, not a folder" in err and snapshot(toy) == before


def test_a_toml_integer_of_5000_digits(toy, capsys):
    (toy / "big.toml").write_text(f'experiment = "toy_experiments:TOY"\nseed = {"7" * 5000}\n')
    refused(["run", "big.toml", "--out", "o"], toy, capsys, match="(5000 digits)")
    refused(
        ["run", "toy.toml", "--out", "o", "--set", "size=" + "9" * 5000], toy, capsys, match="--set"
    )


def test_a_folder_being_claimed_is_reported_truthfully(toy, capsys):
    (toy / "o").mkdir()
    (toy / "o" / f"..gaugedyn.tmp-{os.getpid()}-abcd1234").write_bytes(b"")
    refused(
        ["run", "toy.toml", "--out", "o", "--executor", "serial"],
        toy,
        capsys,
        match="another gaugedyn command is using this folder",
    )


def test_a_folder_locked_by_another_run(toy, capsys):
    with contextlib.chdir(toy):
        assert (
            invoke(["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"], capsys)[0] == 0
        )
    with open(toy / "o" / ".gaugedyn", "rb") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with contextlib.chdir(toy):
            rc, _, err = invoke(["run", "toy.toml", "--out", "o", "--executor", "serial"], capsys)
    assert rc == 2 and "another gaugedyn command is using this folder" in err


def test_two_runs_started_together_on_one_out(tmp_path):
    (tmp_path / "toy.toml").write_text(config_text(n_tasks=2))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(TESTS)])}
    for attempt in range(2):
        out = f"o{attempt}"
        argv = [
            sys.executable,
            "-m",
            "gaugedyn",
            "run",
            "toy.toml",
            "--out",
            out,
            "--executor",
            "serial",
            "-q",
        ]
        procs = [
            subprocess.Popen(
                argv,
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        for rc, err in results:
            assert rc == 0 or (
                rc == 2 and "another gaugedyn command is using this folder" in err
            ), err
        assert any(rc == 0 for rc, _ in results)


def test_a_stopped_run_says_what_was_kept(toy, capsys, monkeypatch):
    from gaugedyn.harness._store import ResultStore

    original, calls = ResultStore.save, []

    def save(self, key, result, meta):
        calls.append(key)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return original(self, key, result, meta)

    monkeypatch.setattr(ResultStore, "save", save)
    with contextlib.chdir(toy):
        rc, _, err = invoke(["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"], capsys)
    assert rc == 1 and "No space left on device" in err
    assert "1 of 3 tasks are stored in o/.tasks; rerun to resume" in err
    monkeypatch.setattr(ResultStore, "save", lambda *a: (_ for _ in ()).throw(OSError(28, "full")))
    with contextlib.chdir(toy):
        rc, _, err = invoke(["run", "toy.toml", "--out", "p", "--executor", "serial", "-q"], capsys)
    assert rc == 1 and "no finished task was stored in p/.tasks" in err


# ---------------------------------------------------------------------------- plot


def _tamper(run: Path, mode: str) -> None:
    summary = json.loads((run / "summary.json").read_text())
    buffer = io.BytesIO()
    if mode == "missing":
        np.savez_compressed(buffer, s=np.arange(3.0))
    elif mode == "pickled":
        np.savez_compressed(buffer, s=np.array([{"a": 1}, None], dtype=object))
    elif mode == "renamed":  # names, shapes and dtypes listed consistently: only drawing fails
        np.savez_compressed(buffer, q=np.arange(3.0))
        summary["arrays"] = {"q": {"shape": [3], "dtype": "float64"}}
    else:  # garbage bytes
        buffer.write(b"not a zip file at all")
    data = buffer.getvalue()
    (run / "arrays.npz").write_bytes(data)
    summary["arrays_sha256"] = hashlib.sha256(data).hexdigest()
    (run / "summary.json").write_text(json.dumps(summary))


@pytest.mark.parametrize(
    "mode, match",
    [
        ("missing", "arrays.npz holds s(3,):float64 but summary.json lists"),
        ("pickled", "cannot be read as plain arrays"),
        ("renamed", "the stored arrays do not fit experiment toy; nothing was redrawn (KeyError"),
        ("garbage", "cannot be read as plain arrays"),
    ],
)
def test_plot_checks_everything_before_drawing(mode, match, toy, capsys):
    (toy / "sims").mkdir()
    for name in ("a", "b"):
        (toy / "sims" / f"{name}.toml").write_text(config_text(n_tasks=2, seed=len(name)))
    with contextlib.chdir(toy):
        rc, _, err = invoke(
            ["reproduce", "--simulations", "sims", "--out", "rep", "--executor", "serial", "-q"],
            capsys,
        )
    assert rc == 0, err
    _tamper(toy / "rep" / "b", mode)
    line = refused(["plot", "rep"], toy, capsys, match=match)  # nothing redrawn, a included
    assert "rep/b" in line


def test_plot_of_an_intact_folder_still_redraws(toy, capsys):
    with contextlib.chdir(toy):
        assert (
            invoke(["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"], capsys)[0] == 0
        )
        rc, out, err = invoke(["plot", "o"], capsys)
    assert rc == 0 and out.strip() == "redrew o/figures" and err == ""


# ---------------------------------------------------------------------------- configurations


class Checked(Toy):
    """The toy with a combined check: ``size`` must exceed ``n_tasks``."""

    def validate(self, config):
        if config["size"] <= config["n_tasks"]:
            raise InputError(
                f"size = {config['size']} with n_tasks = {config['n_tasks']}: the "
                "analysis needs size > n_tasks"
            )


def test_experiment_validate_runs_before_tasks():
    assert len(make_config(Checked(), overrides={"size": 8}).tasks) == 6
    with pytest.raises(InputError, match="needs size > n_tasks"):
        make_config(Checked(), overrides={"size": 3})
    assert not hasattr(TOY, "validate")


@pytest.mark.parametrize(
    "experiment, setting, value",
    [
        ("perturbations", "n_samples", 9223372036854775807),
        ("ownership", "t_check", 9223372036854775807),
        ("perturbations", "scale", 1e308),
        ("ownership", "scale", 1e308),
    ],
)
def test_experiment_upper_bounds(experiment, setting, value, tmp_path, capsys):
    from gaugedyn.experiments import resolve_experiment

    param = resolve_experiment(experiment).params.get(setting)
    if param is None or (param.hi is None and param.check is None):
        pytest.skip(f"{experiment}.{setting} declares no upper bound yet")
    if param.validate(value) is None:
        pytest.skip(
            f"{experiment}.{setting} still accepts {value} (its bound is owned by the experiment)"
        )
    refused(
        [
            "run",
            str(ROOT / "simulations" / f"{experiment}.toml"),
            "--out",
            "o",
            "--set",
            f"{setting}={value}",
        ],
        tmp_path,
        capsys,
        match=setting,
    )


def test_dimension_scaling_refuses_dims_it_cannot_fit(tmp_path, capsys):
    from gaugedyn.experiments import resolve_experiment

    if not hasattr(resolve_experiment("dimension_scaling"), "validate"):
        pytest.skip("dimension_scaling does not yet implement validate(config)")
    refused(
        [
            "run",
            str(ROOT / "simulations" / "dimension_scaling.toml"),
            "--out",
            "o",
            "--set",
            "dims=[10,100,1000]",
        ],
        tmp_path,
        capsys,
        match="dims",
    )


def test_an_interrupted_run_says_what_was_kept(toy, capsys, monkeypatch):
    from gaugedyn.harness._store import ResultStore

    original, calls = ResultStore.save, []

    def save(self, key, result, meta):
        calls.append(key)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(self, key, result, meta)

    monkeypatch.setattr(ResultStore, "save", save)
    with contextlib.chdir(toy):
        rc, _, err = invoke(["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"], capsys)
    assert rc == 130 and err.strip() == (
        "gaugedyn run: interrupted; 2 of 3 tasks are stored in o/.tasks; rerun to resume"
    )


@pytest.mark.parametrize(
    "gauges",
    [["w-heavy"], ["a-heavy"], ["balanced"], ["w-heavy", "a-heavy", "balanced", "w-heavy"]],
)
@pytest.mark.parametrize("dim, scale", [(10, 0.2), (1000, 1.0), (4, 3.0)])
def test_the_memory_checks_horizon_is_the_solvers_default(gauges, dim, scale):
    from gaugedyn.theory import default_t_max, duplicates
    from gaugedyn.theory._cli import named_t_max

    problem = duplicates(dim, gauges, scale=scale)
    assert named_t_max(dim, gauges, scale) == pytest.approx(default_t_max(problem), rel=1e-12)
