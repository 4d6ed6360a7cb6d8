"""Command-line faults found by an independent probe: a traceback on an overflowing step count,
a memory refusal whose figure disagreed with its formula, repeated options where the last won
silently, work estimates without the fixed cost per step, and a silent first compile."""

from __future__ import annotations

import re

import pytest
from toy_experiments import invoke

from gaugedyn import _options as options


def _one_line(argv, capsys, code=2) -> str:
    rc, out, err = invoke(argv, capsys)
    lines = err.strip().splitlines()
    assert rc == code and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def small_memory(monkeypatch):
    monkeypatch.setattr(options, "available_memory", lambda: 8 * 2**30)


def test_gradient_descent_with_a_vanishing_step_is_refused(capsys):
    line = _one_line(
        [
            "solve",
            "--setup",
            "single",
            "--dim",
            "10",
            "--dynamics",
            "gd",
            "--eta",
            "1e-300",
            "--t-max",
            "1e12",
        ],
        capsys,
    )
    assert "--eta=1e-300" in line and "steps" in line


@pytest.mark.parametrize(
    "extra",
    [
        ["--dim", "100000000", "--formulation", "weight-space"],
        ["--dim", "100000", "--formulation", "weight-space", "--method", "rodas"],
        ["--dim", "100000000"],
    ],
)
def test_a_memory_refusal_quotes_what_its_formula_gives(capsys, small_memory, extra):
    line = _one_line(["solve", "--setup", "single", *extra], capsys)
    quoted = re.search(r"needs about (\S+ \S+) of memory \((.*)\), more than", line)
    assert quoted, line
    formula = quoted.group(2)
    values = dict(re.findall(r"(\w+)=(\d+)", formula.split(" with ")[1]))
    D, K, n, outputs = (int(values[k]) for k in ("D", "K", "n", "outputs"))
    total = 8 * (8 * D * (K + 1) + n * (outputs + 16) + (4 * n * n if "4 n^2" in formula else 0))
    assert options.size_text(total) == quoted.group(1), line


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "--setup", "single", "--dim", "10", "--dim", "20"],
        ["solve", "--setup", "single", "--dim", "10", "--rtol", "1e-8", "--rtol=1e-9"],
        ["train", "--dim", "10", "--samples", "5", "--steps", "3", "--steps", "4"],
        ["run", "cfg.toml", "--quick", "--quick"],
    ],
)
def test_repeated_options_are_refused(capsys, argv):
    assert "more than once" in _one_line(argv, capsys)


def test_repeatable_options_still_repeat(tmp_path, capsys, monkeypatch):
    from toy_experiments import config_text

    monkeypatch.chdir(tmp_path)
    (tmp_path / "toy.toml").write_text(config_text(n_tasks=2))
    rc, _, err = invoke(
        [
            "run",
            "toy.toml",
            "--out",
            "o",
            "--executor",
            "serial",
            "-q",
            "--set",
            "size=3",
            "--set",
            "seed=2",
        ],
        capsys,
    )
    assert rc == 0, err


@pytest.mark.parametrize(
    "extra",
    [
        ["--online", "--optimizer", "sgd", "--steps", "1000000000", "--seeds", "1"],
        [
            "--online",
            "--optimizer",
            "sgd",
            "--backend",
            "chain",
            "--steps",
            "1000000000",
            "--seeds",
            "1000",
        ],
    ],
)
def test_work_estimates_include_the_fixed_cost_per_step(capsys, monkeypatch, extra):
    import gaugedyn.training._trainer as trainer

    def accepted(*args, **kwargs):  # today's estimate let these run for 31 h and 41 h
        raise AssertionError("a request of more than a day was accepted")

    monkeypatch.setattr(trainer, "train", accepted)
    line = _one_line(["train", "--dim", "10", *extra, "-q"], capsys)
    assert "per step" in line and " h " in line


def test_the_recorder_says_when_it_compiles(tmp_path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    import torch.utils.cpp_extension as cpp

    from gaugedyn.adam import _native

    def fake_build(name, build_directory, **kw):
        from pathlib import Path

        (Path(build_directory) / f"{name}.so").write_bytes(b"")
        return "module"

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(cpp, "load_inline", fake_build)
    assert _native._build() == "module"
    err = capsys.readouterr().err
    assert "compiling the Adam recorder's native kernel" in err and "compiled" in err
    assert torch is not None


@pytest.mark.parametrize(
    "message",
    [
        "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you "
        "tried to allocate 85899345920 bytes.",
        "CUDA out of memory. Tried to allocate 20.00 GiB",
    ],
)
def test_a_torch_allocation_failure_is_one_line(capsys, monkeypatch, message):
    import gaugedyn.theory._cli as solve_cli

    def allocate(args):
        raise RuntimeError(message)

    monkeypatch.setattr(solve_cli, "_handle", allocate)
    line = _one_line(["solve", "--setup", "single", "--dim", "10"], capsys)
    assert "out of memory" in line


def test_other_runtime_errors_are_not_taken_for_memory(monkeypatch):
    import gaugedyn.theory._cli as solve_cli
    from gaugedyn.cli import main

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(solve_cli, "_handle", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["solve", "--setup", "single", "--dim", "10"])


def test_derive_check_calls_a_missing_kernel_file_missing(tmp_path, capsys):
    from gaugedyn.symbolic._registry import derive

    report = derive(tmp_path, check=True, kernels=tmp_path / "absent.py", modules=())
    assert report.failures == [
        f"{tmp_path / 'absent.py'}: missing (run `gaugedyn derive` to write it)"
    ]
    assert "MISSING" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["RK45", "DOP853", "BDF"])
def test_an_integration_that_would_run_for_years_stops_within_seconds(capsys, monkeypatch, method):
    import time

    import gaugedyn.theory._methods as methods

    monkeypatch.setattr(methods, "PACE_AFTER", 0.2)  # judged after 2 s from the command line
    start = time.perf_counter()
    line = _one_line(
        ["solve", "--setup", "single", "--dim", "10", "--t-max", "1e12", "--method", method, "-q"],
        capsys,
    )
    assert time.perf_counter() - start < 30
    assert f"method={method!r}" in line and "h, more than" in line and "lsoda" in line, line


def test_an_ordinary_explicit_integration_is_not_stopped(monkeypatch):
    import gaugedyn.theory._methods as methods
    from gaugedyn.theory import single, solve

    monkeypatch.setattr(methods, "PACE_AFTER", 0.0)  # projected from the first window on
    sol = solve(single(10, "w-heavy"), method="DOP853", t_max=200.0)
    assert sol.t[-1] == 200.0


def test_gradient_descent_work_is_estimated_before_the_problem_is_built(capsys, monkeypatch):
    import gaugedyn.theory._problem as problem

    def built(*args, **kwargs):  # 1e7 steps of a million-wide state: about 34 h
        raise AssertionError("a request of more than a day was accepted")

    monkeypatch.setattr(problem, "single", built)
    line = _one_line(
        [
            "solve",
            "--setup",
            "single",
            "--dim",
            "1000000",
            "--formulation",
            "weight-space",
            "--dynamics",
            "gd",
            "--eta",
            "1e-4",
            "--t-max",
            "1e3",
        ],
        capsys,
    )
    assert "h on one core" in line and "us per step" in line and "--eta=0.0001" in line, line


def test_gradient_descent_work_is_estimated_in_python_too():
    from gaugedyn import InputError
    from gaugedyn.theory import single, solve

    with pytest.raises(InputError, match="h on one core"):
        solve(
            single(1000000, "balanced"),
            formulation="weight-space",
            dynamics="gd",
            eta=1e-4,
            t_max=1e3,
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["audit-rules", "--reps", "10000000", "--seeds", "100000", "--no-progress"],
        [
            "audit-rules",
            "--rules",
            "every_cell",
            "--seeds",
            "100000",
            "--cells",
            "10000",
            "--reps",
            "100000",
            "--no-progress",
        ],
    ],
)
def test_an_audit_of_more_than_a_day_is_refused_before_it_simulates(capsys, monkeypatch, argv):
    from gaugedyn.stats import _audit

    def simulated(*args, **kwargs):  # each count was within its bound; their product was not
        raise AssertionError("an audit of more than a day was started")

    monkeypatch.setattr(_audit, "_run", simulated)
    line = _one_line(argv, capsys)
    assert "h on one core" in line and "choose fewer reps" in line, line


def test_an_audit_row_checks_its_work_in_python_too():
    from gaugedyn import InputError
    from gaugedyn.stats._audit import audit_rule

    with pytest.raises(InputError, match="h on one core"):
        audit_rule("every_cell", 100_000, cells=10_000, reps=100_000)


def test_check_activation_refuses_samples_that_do_not_fit(capsys, small_memory):
    line = _one_line(["check-activation", "tanh", "--samples", "100000000"], capsys)
    from gaugedyn.theory._activation import CHECK_BYTES_PER_SAMPLE

    gib = CHECK_BYTES_PER_SAMPLE * 1e8 / 2**30
    assert f"samples=100000000 needs about {gib:.3g} GiB of memory" in line, line


def test_check_activation_checks_its_sizes_in_python():
    from gaugedyn import InputError
    from gaugedyn.theory import check_activation

    for bad in (dict(samples=10), dict(configurations=0), dict(samples=1500.5), dict(seed=-1)):
        with pytest.raises(InputError):
            check_activation("tanh", **bad)


BAD_USER_CODE = {
    "syntax": ("def g(z:\n", "syntax error at line 1"),
    "empty": ("", "has nothing called 'g'"),
    "raises": ("def g(z):\n    raise RuntimeError('boom')\n", "raised RuntimeError"),
    "shape": ("def g(z):\n    return z.sum()\n", "returned shape ()"),
    "numpy": ("import numpy as np\ng = np.tanh\n", "a numpy function"),
    "complex": ("import torch\ndef g(z):\n    return z.to(torch.complex128)\n", "complex128"),
    "integer": ("def g(z):\n    return (z > 0).long()\n", "torch.int64"),
    "nonfinite": ("import torch\ndef g(z):\n    return torch.log(z)\n", "not finite at x = -2.5"),
    "not elementwise": ("def g(z):\n    return z - z.mean()\n", "not elementwise"),
    "import fails": ("import no_such_module_here\ng = 1\n", "raised ModuleNotFoundError"),
    "not callable": ("g = 3\n", "has a int called 'g'"),
}


@pytest.mark.parametrize("case", sorted(BAD_USER_CODE))
def test_check_activation_names_the_cause_in_a_users_code(case, tmp_path, capsys):
    source, cause = BAD_USER_CODE[case]
    path = tmp_path / f"user_{case.replace(' ', '_')}.py"
    path.write_text(source)
    line = _one_line(["check-activation", f"{path}:g"], capsys)
    assert f"{path}:g" in line and cause in line, line


@pytest.mark.parametrize(
    "spec, cause",
    [
        ("os:system", "raised TypeError"),
        ("no_such_module_here:g", "raised ModuleNotFoundError"),
        ("math:tanh", "raised ValueError"),
        ("missing.py:g", "does not exist"),
        ("math:1x", "not allowed"),
    ],
)
def test_check_activation_refuses_a_module_that_is_no_activation(spec, cause, capsys):
    line = _one_line(["check-activation", spec], capsys)
    assert spec in line and cause in line, line


def test_solve_and_train_take_a_users_activation_by_file_and_by_module(tmp_path, capsys):
    """``--activation file.py:NAME`` and ``MODULE:NAME`` reach solve and train; the result names
    the spec, which any process can load again; a bad one is one line, exit 2."""
    import json
    import sys

    (tmp_path / "user_acts_mod.py").write_text(
        "import torch\n\ndef softplus(z):\n    return torch.nn.functional.softplus(z)\n"
    )
    spec_file = f"{tmp_path / 'user_acts_mod.py'}:softplus"
    common = ["--setup", "single", "--dim", "20", "--gauge", "balanced"]
    sys.path.insert(0, str(tmp_path))
    try:
        for spec in (spec_file, "user_acts_mod:softplus"):
            rc, out, err = invoke(["solve", *common, "--activation", spec, "--t-max", "2"], capsys)
            assert rc == 0, err
            assert json.loads(out)["problem"]["activation"] == spec
        argv = ["train", *common, "--activation", spec_file, "--steps", "20", "--online"]
        rc, out, err = invoke([*argv, "--optimizer", "sgd"], capsys)
        assert rc == 0, err
    finally:
        sys.path.remove(str(tmp_path))
    line = _one_line(["solve", *common, "--activation", f"{tmp_path / 'nope.py'}:g"], capsys)
    assert "--activation" in line and "does not exist" in line, line


def test_check_activation_json_is_strict(tmp_path, capsys):
    """A z-score that is not finite is written ``null`` (with what null means), never NaN."""
    import json

    path = tmp_path / "flat.py"
    path.write_text("import torch\n\ndef g(z):\n    return torch.zeros_like(z)\n")
    rc, out, err = invoke(
        ["check-activation", f"{path}:g", "--samples", "2000", "--configurations", "1"], capsys
    )
    assert "NaN" not in out and "Infinity" not in out
    report = json.loads(out)
    assert rc in (0, 1) and (rc == 1) == (not report["passed"])
    if "null" in report:
        assert not report["passed"]


def test_a_key_set_twice_is_refused(tmp_path, capsys):
    from toy_experiments import config_text

    (tmp_path / "toy.toml").write_text(config_text(n_tasks=2))
    out = tmp_path / "o"
    argv = ["run", str(tmp_path / "toy.toml"), "--out", str(out), "--executor", "serial"]
    line = _one_line([*argv, "--set", "size=2", "--set", "size=3"], capsys)
    assert "size is given twice" in line and not out.exists(), line


def test_serial_executor_refuses_workers(tmp_path, capsys):
    from toy_experiments import config_text

    (tmp_path / "toy.toml").write_text(config_text(n_tasks=2))
    out = tmp_path / "o"
    argv = ["run", str(tmp_path / "toy.toml"), "--out", str(out), "--executor", "serial"]
    line = _one_line([*argv, "--workers", "2"], capsys)
    assert "--workers 2 is not allowed with --executor serial" in line and not out.exists()


def test_gradient_descent_refuses_the_ode_solvers_settings(capsys):
    argv = ["solve", "--setup", "single", "--dim", "20", "--gauge", "balanced"]
    argv += ["--dynamics", "gd", "--eta", "0.1", "--t-max", "2"]
    for extra, named in ((["--method", "RK45"], "--method"), (["--rtol", "1e-3"], "--rtol")):
        line = _one_line([*argv, *extra], capsys)
        assert f"{named} only apply to --dynamics flow" in line, line
    rc, out, err = invoke(argv, capsys)
    assert rc == 0, err


def test_solve_writes_a_time_not_reached_as_null(capsys):
    import json

    argv = ["solve", "--setup", "single", "--dim", "20", "--gauge", "balanced", "--t-max", "2"]
    rc, out, err = invoke(argv, capsys)
    assert rc == 0 and '"nan"' not in out and "NaN" not in out, out
    report = json.loads(out)
    assert report["specialization_time"] == [None] and "time not reached" in report["null"]


def test_audit_candidates_take_rules(capsys):
    from gaugedyn import InputError
    from gaugedyn.stats._audit import audit
    from gaugedyn.stats._rules import CANDIDATES

    with pytest.raises(InputError, match="not allowed with candidates"):
        audit(["mean_threshold"], candidates=True)
    name = "proportion[Wilson]"
    assert name in CANDIDATES
    rows = audit([name], candidates=True, trials=[4], reps=20, shapes=["normal"])
    assert rows and {r["rule"] for r in rows} == {name}


def test_the_terminal_table_is_not_padded_to_its_longest_cell():
    from gaugedyn.harness._report import CELL, table

    row = dict(experiment="e", id="c", measured=1.0, interval="[0, 2]", verdict="HELD")
    text = table(
        [row | dict(expected="x" * 1000, tolerance="t"), row | dict(expected=1, tolerance=2)]
    )
    lines = text.splitlines()
    assert max(len(line) for line in lines) < 7 * (CELL + 2)
    assert all(line == line.rstrip() for line in lines) and "..." in lines[2]


def test_bench_online_gives_nn2pp_a_seed_not_teacher_noise():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_online.py"
    spec = importlib.util.spec_from_file_location("bench_online", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = module.nn2pp_argv("nn2pp.exe", 500, 1000)
    assert argv[argv.index("--seed") + 1] == "1"
    assert "-s" not in argv and "--sigma" not in argv  # nn2pp's -s: the teacher's output noise
