"""Configuration loading: validation messages, --quick precedence, --set overrides, exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from toy_experiments import TOY, config_text, invoke

from gaugedyn import InputError
from gaugedyn.experiments import load_config, make_config, resolve_experiment
from gaugedyn.harness._config import parse_override

TESTS = Path(__file__).parent


def write(tmp_path: Path, text: str, name: str = "cfg.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_params_quick_and_set_precedence(tmp_path):
    text = config_text(seed=7, quick={"size": 3}, n_tasks=5, size=20, scale=2)
    path = write(tmp_path, text)
    full = load_config(path)
    assert full.seed == 7 and full.name == "toy"
    assert full.params["n_tasks"] == 5 and full.params["size"] == 20
    assert full.params["scale"] == 2.0 and type(full.params["scale"]) is float  # int -> float
    assert full.params["sleep"] == TOY.params["sleep"].default
    assert len(full.tasks) == 5
    quick = load_config(path, quick=True)
    assert quick.params["n_tasks"] == TOY.params["n_tasks"].quick  # the schema's quick wins
    assert quick.params["size"] == 3  # the file's [quick] table wins over both
    assert quick.params["scale"] == 2.0  # no quick value: the file's [params]
    over = load_config(
        path, quick=True, overrides=["n_tasks=9", "seed=11", "params.fail_on=[1, 2]"]
    )
    assert over.params["n_tasks"] == 9 and over.seed == 11 and over.params["fail_on"] == [1, 2]
    assert len(over.tasks) == 9


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("gauge=a", "a"),
        ('gauge="w"', "w"),
        ("dims=[10, 100]", [10, 100]),
        ("x=true", True),
        ("x=-3", -3),
        ("x=1e-3", 1e-3),
        ("x={a = 1}", {"a": 1}),
    ],
)
def test_override_values_are_toml_literals(text, value):
    assert parse_override(text)[1] == value


@pytest.mark.parametrize(
    ("params", "fragments"),
    [
        ({"n_taks": 3}, ["params.n_taks", "did you mean", "n_tasks"]),
        ({"n_tasks": "many"}, ["n_tasks", '"many"', "wrong type", "1 to 200"]),
        ({"n_tasks": 2.5}, ["n_tasks", "2.5", "integer"]),
        ({"n_tasks": True}, ["n_tasks", "true", "integer"]),
        ({"n_tasks": 0}, ["n_tasks = 0", "1 to 200"]),
        ({"scale": -1.0}, ["scale = -1.0", "positive"]),
        ({"scale": float("nan")}, ["scale", "NaN", "nan or inf"]),
        ({"gauge": "b"}, ['gauge = "b"', "'w' or 'a'"]),
        ({"fail_on": [-1]}, ["fail_on", "[-1]", "task indices"]),
    ],
)
def test_bad_params_name_key_value_and_allowed(tmp_path, params, fragments):
    path = write(tmp_path, config_text(**params))
    with pytest.raises(InputError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('experiment = "toy_experiments:TOY"\nseed = -1\n', "seed = -1"),
        ('experiment = "toy_experiments:TOY"\nseed = 1.5\n', "seed = 1.5"),
        ('experiment = "toy_experiments:TOY"\ncolour = 1\n', 'unknown key "colour"'),
        ('experiment = "no_such_thing"\n', "no such experiment"),
        ('experiment = "Not A Name"\n', "not allowed"),
        ('experiment = "gaugedyn.harness._protocol:Param"\n', "not a gaugedyn Experiment"),
        ("seed = 1\n", "missing key 'experiment'"),
        ('experiment = "toy_experiments:TOY"\nparams = 3\n', "must be a table"),
        ('experiment = "toy_experiments:TOY"\n[quick]\nsize = 0\n', "quick.size = 0"),
        ('experiment = "toy_experiments:TOY"\n[params\n', "line 2, column 8"),
        ('experiment = "toy_experiments:TOY"\nseed = \n', "malformed TOML"),
    ],
)
def test_bad_files(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=None) as info:
        load_config(path)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_resolve_shipped_names_and_module_attribute():
    assert resolve_experiment("toy_experiments:TOY") is TOY
    with pytest.raises(InputError, match="no such experiment"):
        resolve_experiment("does_not_exist")
    cfg = make_config(TOY, seed=4)
    assert cfg.spec is None and cfg.seed == 4 and len(cfg.tasks) == TOY.params["n_tasks"].default


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--set", "n_tasks=0"], "n_tasks = 0"),
        (["--set", "nope=1"], 'unknown key "nope"'),
        (["--set", "n_tasks=[1,"], "not a TOML value"),
        (["--set", "n_tasks"], "expected key=value"),
        (["--set", "seed=-4"], "seed = -4"),
        (["--workers", "0"], "--workers"),
        (["--workers", "two"], "--workers"),
        (["--executor", "mpi"], "--executor"),
        (["--executor", "thread", "--scheduler", "tcp://x:1"], "needs --executor dask"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_command_line_bad_options_exit_2_one_line_nothing_written(
    tmp_path, capsys, monkeypatch, args, fragment
):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, config_text(n_tasks=2))
    code, out, err = invoke(["run", path, "--out", tmp_path / "out", *args], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
    assert "Traceback" not in err and out == ""
    assert sorted(os.listdir(tmp_path)) == ["cfg.toml"]


def test_out_folder_checks(tmp_path, capsys):
    path = write(tmp_path, config_text(n_tasks=1))
    (tmp_path / "file").write_text("x")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    for out, fragment in [
        (tmp_path / "file", "not a folder"),
        (tmp_path / "file" / "sub", "is a file"),
        (foreign, "not written by gaugedyn"),
    ]:
        code, _, err = invoke(["run", path, "--out", out, "--executor", "serial"], capsys)
        assert code == 2 and fragment in err and len(err.splitlines()) == 1
    assert os.listdir(foreign) == ["notes.txt"]


@pytest.mark.parametrize(
    "text",
    [
        'experiment = "toy_experiments:TOY"\n[params]\nn_tasks = 1\n[params]\n',  # malformed
        'experiment = "toy_experiments:TOY"\n[params]\nn_tasks = 1\nunknown = 2\n',  # unknown key
        'experiment = "toy_experiments:TOY"\n[params]\nn_tasks = 1000\n',  # out of range
    ],
)
def test_subprocess_bad_config_exit_2(tmp_path, text):
    path = write(tmp_path, text)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "gaugedyn", "run", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("gaugedyn run: error: ")
    assert sorted(os.listdir(tmp_path)) == ["cfg.toml"]


@pytest.mark.parametrize(
    ("value", "ok"), [(10, True), (11, False), (0, False), (1, True), (2.5, False)]
)
def test_declared_bounds_reach_the_config_error(value, ok):
    """A Param's bounds decide what make_config accepts; a rejected value is one line with the
    setting, the bound and why."""
    from gaugedyn.experiments import Experiment, Param

    class Bounded(Experiment):
        name = "bounded"
        params = {"n": Param(int, 3, lo=1, hi=10, why="memory: 8 bytes x n^2")}

        def tasks(self, config):
            return []

    if ok:
        assert make_config(Bounded(), overrides={"n": value}).params["n"] == value
        return
    with pytest.raises(InputError) as err:
        make_config(Bounded(), overrides={"n": value})
    text = str(err.value)
    assert "\n" not in text and f"n = {value}" in text
    if isinstance(value, int):
        assert "in [1, 10]" in text and "memory: 8 bytes x n^2" in text
