"""Run folders under misuse: ``plot`` checks the summary it redraws from and changes nothing
unless everything redraws; a run does not write over another run's results unless forced."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from toy_experiments import config_text, invoke


def _snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
        if ".tasks" not in p.parts
    }


def _refused(argv, where: Path, capsys, match: str) -> str:
    before = _snapshot(where)
    with contextlib.chdir(where):
        rc, out, err = invoke(argv, capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert match in lines[0], lines[0]
    assert _snapshot(where) == before
    return lines[0]


@pytest.fixture
def run_folder(tmp_path, capsys):
    (tmp_path / "toy.toml").write_text(config_text(n_tasks=2))
    with contextlib.chdir(tmp_path):
        rc, _, err = invoke(["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"], capsys)
    assert rc == 0, err
    return tmp_path


def _edit(run: Path, change) -> None:
    summary = json.loads((run / "summary.json").read_text())
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda s: s["configuration"]["params"].update(scale=float("nan")), "params.scale"),
        (lambda s: s["configuration"]["params"].update(size=-3), "params.size"),
        (lambda s: s["configuration"]["params"].update(sizes=[1]), "unknown key"),
        (lambda s: s.update(claims="garbage"), "claims is not a list"),
        (lambda s: s.update(claims=[{"id": "x", "passed": "yes"}]), "claims[0]"),
        (
            lambda s: s.update(
                claims=[
                    {
                        "id": "x",
                        "statement": "",
                        "measured": 1,
                        "expected": 1,
                        "tolerance": 0,
                        "passed": True,
                        "kind": "bogus",
                    }
                ]
            ),
            "claims[0]",
        ),
        (lambda s: s.update(arrays_sha256=None), "records no checksum"),
        (lambda s: s["configuration"].pop("params"), "records no configuration.params"),
    ],
    ids=[
        "nan-param",
        "bad-param",
        "unknown-param",
        "claims-text",
        "claim-type",
        "claim-kind",
        "no-checksum",
        "no-params",
    ],
)
def test_plot_refuses_an_edited_summary(run_folder, capsys, change, match):
    _edit(run_folder / "o", change)
    line = _refused(["plot", "o"], run_folder, capsys, match)
    assert "summary.json" in line


def test_plot_is_all_or_nothing_when_the_report_cannot_be_written(tmp_path, capsys):
    (tmp_path / "sims").mkdir()
    (tmp_path / "sims" / "a.toml").write_text(config_text(n_tasks=2))
    with contextlib.chdir(tmp_path):
        rc, _, err = invoke(
            ["reproduce", "--simulations", "sims", "--out", "rep", "--executor", "serial", "-q"],
            capsys,
        )
    assert rc == 0, err
    (tmp_path / "rep" / "report.md").unlink()
    (tmp_path / "rep" / "report.md").mkdir()
    _refused(["plot", "rep"], tmp_path, capsys, "report.md")


def test_a_run_does_not_overwrite_another_runs_results(run_folder, capsys):
    argv = ["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"]
    line = _refused([*argv, "--set", "seed=5"], run_folder, capsys, "another run")
    assert "--force" in line and "seed" in line
    _refused([*argv, "--quick"], run_folder, capsys, "quick")
    with contextlib.chdir(run_folder):
        assert invoke(argv, capsys)[0] == 0  # the same run repeats in place
        assert invoke([*argv, "--set", "seed=5", "--force"], capsys)[0] == 0
    summary = json.loads((run_folder / "o" / "summary.json").read_text())
    assert summary["configuration"]["seed"] == 5


def test_the_python_api_refuses_too(run_folder):
    from gaugedyn import InputError
    from gaugedyn.experiments import execute, load_config

    cfg = load_config(run_folder / "toy.toml", overrides=["seed=9"])
    with pytest.raises(InputError, match="force=True"):
        execute(cfg, run_folder / "o", executor="serial", progress=None)
    assert (
        execute(cfg, run_folder / "o", executor="serial", progress=None, force=True).exit_code == 0
    )


def test_a_full_disk_while_drawing_says_what_was_kept(tmp_path, capsys, monkeypatch):
    from toy_experiments import Toy

    def plot(self, arrays, config, outdir):
        try:
            raise OSError(28, "No space left on device")
        except OSError:  # what matplotlib's PDF writer does next
            raise AttributeError("'NoneType' object has no attribute 'write'") from None

    monkeypatch.setattr(Toy, "plot", plot)
    (tmp_path / "toy.toml").write_text(config_text(n_tasks=2))
    with contextlib.chdir(tmp_path):
        rc, _, err = invoke(["run", "toy.toml", "--out", "o", "--executor", "serial", "-q"], capsys)
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and "No space left on device" in lines[0], err
    assert "2 of 2 tasks are stored" in lines[0]


def test_a_full_disk_while_redrawing_replaces_nothing(run_folder, capsys, monkeypatch):
    from toy_experiments import Toy

    def plot(self, arrays, config, outdir):
        try:
            raise OSError(28, "No space left on device")
        except OSError:
            raise AttributeError("'NoneType' object has no attribute 'write'") from None

    monkeypatch.setattr(Toy, "plot", plot)
    before = _snapshot(run_folder)
    with contextlib.chdir(run_folder):
        rc, _, err = invoke(["plot", "o"], capsys)
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and "No space left on device" in lines[0], err
    assert _snapshot(run_folder) == before
