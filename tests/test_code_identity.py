"""Code identity: every record and summary says which code made it, and a result of other code is
never reused as this code's (recomputed with one line on stderr, or refused with
``--require-cache``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--quick", "--set", "n_times=60", "--set", "n_path=40", "--executor", "serial", "-q"]


def _copy_package(dest: Path) -> Path:
    """A copy of the package with its byte-code caches: each copied ``.pyc`` names its source's
    time and size, which the copy keeps, so the first run does not compile every module again
    (about 4.6 of its 8 CPU seconds), and a source changed here is compiled afresh. The code
    identity reads the sources only (``__pycache__`` is outside it)."""
    shutil.copytree(ROOT / "src" / "gaugedyn", dest / "gaugedyn")
    return dest / "gaugedyn"


def _gaugedyn(src: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src), "GAUGEDYN_NATIVE": "0"}
    return subprocess.run(
        [sys.executable, "-m", "gaugedyn", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _clocks(folder: Path) -> float:
    summary = json.loads((folder / "summary.json").read_text())
    return next(c["measured"] for c in summary["claims"] if c["id"] == "clock.clocks")


def test_a_changed_experiment_is_recomputed_never_reported_with_the_old_number(tmp_path):
    """The issue's scenario: ``run clock --quick --out A``, change the experiment's code, rerun
    the same command: the rerun recomputes (one line saying so) and reports the new code's
    number, which a fresh folder confirms; ``--require-cache`` refuses code it has no record of."""
    src = tmp_path / "src"
    package = _copy_package(src)
    config = str(ROOT / "simulations" / "clock.toml")
    first = _gaugedyn(src, "run", config, *FAST, "--out", "A", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    old = _clocks(tmp_path / "A")
    clock = package / "experiments" / "gauge" / "clock.py"
    text = clock.read_text()
    planted = text.replace('scale=task["scale"])', 'scale=task["scale"] * 1.5)', 1)
    assert planted != text
    clock.write_text(planted)
    again = _gaugedyn(src, "run", config, *FAST, "--out", "A", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    stale = [line for line in again.stderr.splitlines() if "stored by other code" in line]
    assert len(stale) == 1 and "2 of 2 tasks of clock" in stale[0], again.stderr
    fresh = _gaugedyn(src, "run", config, *FAST, "--out", "B", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    new = _clocks(tmp_path / "A")
    assert new == _clocks(tmp_path / "B") and new != old
    summary = json.loads((tmp_path / "A" / "summary.json").read_text())
    assert summary["diagnostics"]["tasks"]["stored_by_other_code"] == 2
    assert summary["diagnostics"]["tasks"]["computed"] == 2
    assert summary["code"]["scope"] == "gaugedyn without the systems other than gauge"

    clock.write_text(text.replace('scale=task["scale"])', 'scale=task["scale"] * 2.0)', 1))
    before = (tmp_path / "A" / "summary.json").read_bytes()
    refused = _gaugedyn(src, "run", config, *FAST, "--out", "A", "--require-cache", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--require-cache: 2 of 2 tasks of clock are not stored by this code" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert (tmp_path / "A" / "summary.json").read_bytes() == before


def test_records_and_summaries_carry_the_code(tmp_path, monkeypatch):
    from toy_experiments import config_text

    from gaugedyn.experiments import ResultStore, execute, load_config

    monkeypatch.setenv("TOY_LOG", str(tmp_path / "log"))
    (tmp_path / "cfg.toml").write_text(config_text(seed=1, n_tasks=2, size=8))
    cfg = load_config(tmp_path / "cfg.toml")
    out = execute(cfg, tmp_path / "out", executor="serial", progress=None)
    code = out.summary["code"]
    assert code == cfg.code_identity() and len(code["sha256"]) == 64
    assert code["scope"] == "gaugedyn and toy_experiments" and code["files"] > 100
    store = ResultStore(tmp_path / "out" / ".tasks")
    metas = [store.meta(k) for k in store.keys()]
    assert len(metas) == 2 and all(m["code"] == code for m in metas)
    assert all(m["task_id"] != k for m, k in zip(metas, store.keys()))


def test_the_scope_leaves_out_other_systems_only(tmp_path, monkeypatch):
    """A system's identity covers the library, the harness and its own folder: editing another
    system leaves it, editing the library or its own folder changes it."""
    import gaugedyn._meta as meta

    package = _copy_package(tmp_path)
    monkeypatch.setattr(meta, "__file__", str(package / "_meta.py"))

    def identity(module):
        meta.code_identity.cache_clear()
        return meta.code_identity(module)["sha256"]

    gauge = identity("gaugedyn.experiments.gauge.clock")
    prototypes = identity("gaugedyn.experiments.prototypes.prototypes")
    with open(package / "experiments" / "prototypes" / "_model.py", "a") as f:
        f.write("\n# a planted change\n")
    assert identity("gaugedyn.experiments.gauge.clock") == gauge
    assert identity("gaugedyn.experiments.prototypes.prototypes") != prototypes
    with open(package / "theory" / "_flows.py", "a") as f:
        f.write("\n# a planted change\n")
    assert identity("gaugedyn.experiments.gauge.clock") != gauge
    meta.code_identity.cache_clear()


def test_a_record_of_an_earlier_format_counts_as_other_code(tmp_path):
    from gaugedyn.harness._store import ResultStore, task_id

    store = ResultStore(tmp_path)
    task = {"i": 0}
    store.save("ab" * 32, {"x": 1.0}, {"experiment": "toy", "task": task, "root_seed": 3})
    found = store.other_code({task_id("toy", task, 3)}, "c" * 64)
    assert found == {task_id("toy", task, 3): {"version None"}}
    assert store.other_code({task_id("toy", task, 4)}, "c" * 64) == {}


def test_the_version_is_the_installed_metadata():
    from importlib import metadata

    import gaugedyn

    assert gaugedyn.__version__ == metadata.version("gaugedyn")
    assert f'version = "{gaugedyn.__version__}"' in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize("content", ["notes.txt", "ab"])
def test_a_foreign_store_folder_is_refused_and_left_alone(tmp_path, capsys, content):
    """``--store`` on a folder that is not a gaugedyn store: exit 2, one line, nothing deleted
    (a file whose name looks like a record folder included); ``--force`` uses it."""
    from toy_experiments import config_text, invoke

    (tmp_path / "cfg.toml").write_text(config_text(seed=0, n_tasks=2, size=4))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / content).write_text("the user's own file\n")
    argv = ["run", str(tmp_path / "cfg.toml"), "--out", str(tmp_path / "out"), "-q"]
    code, out, err = invoke([*argv, "--store", str(mine), "--executor", "serial"], capsys)
    assert code == 2 and "not a gaugedyn result store" in err and len(err.splitlines()) == 1
    assert [p.name for p in mine.iterdir()] == [content] and not (tmp_path / "out").exists()
    assert (mine / content).read_text() == "the user's own file\n"
    if content == "ab":
        return  # with --force a file where a record folder belongs would be store damage
    code, out, err = invoke(
        [*argv, "--store", str(mine), "--executor", "serial", "--force"], capsys
    )
    assert code == 0, err
    assert (mine / content).read_text() == "the user's own file\n"
    assert (mine / ".gaugedyn-store").is_file()
