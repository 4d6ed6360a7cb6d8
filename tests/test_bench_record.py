"""benchmarks/_record.py: a record is written whole or not at all, and a benchmark filled unit
by unit (`Progress`) resumes after a killed run under the same configuration and starts
cleanly under another."""

import importlib.util
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("_record", ROOT / "benchmarks" / "_record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_failed_write_leaves_the_previous_record_and_no_temporary_file(tmp_path):
    rec = _module()
    path = tmp_path / "r.json"
    rec.write_json(path, {"a": 1})
    with pytest.raises(TypeError):
        rec.write_json(path, {"a": object()})  # not JSON: fails midway through the dump
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_killed_run_resumes_after_its_last_finished_unit(tmp_path):
    rec = _module()
    path = tmp_path / "bench.json"
    calls = []

    def compute(key, fail=False):
        def f():
            calls.append(key)
            if fail:
                raise KeyboardInterrupt  # the run killed inside this unit
            return {"value": len(calls)}

        return f

    first = rec.Progress(path, "bench_x.py", {"rtol": 1e-6}, argv=[])
    assert first.unit("a", compute("a")) == {"value": 1}
    with pytest.raises(KeyboardInterrupt):
        first.unit("b", compute("b", fail=True))
    assert not path.exists()  # no record until every unit is done
    stored = json.loads((tmp_path / "bench.json.partial").read_text())
    assert list(stored["units"]) == ["a"]

    again = rec.Progress(path, "bench_x.py", {"rtol": 1e-6}, argv=["--resumed"])
    assert again.unit("a", compute("a-again")) == {"value": 1}  # not recomputed
    assert again.unit("b", compute("b")) == {"value": 3}
    again.finish({"rows": [again.get("a"), again.get("b")]})
    assert calls == ["a", "b", "b"]
    out = json.loads(path.read_text())
    assert out["data"] == {"rows": [{"value": 1}, {"value": 3}]}
    assert [r["units"] for r in out["runs"]] == [["a"], ["b"]]
    assert out["config"] == {"rtol": 1e-6} and "units" not in out
    assert out["command"].endswith("bench_x.py --resumed")  # the run that completed it
    assert not (tmp_path / "bench.json.partial").exists()


def test_another_configuration_starts_cleanly(tmp_path, capsys):
    rec = _module()
    path = tmp_path / "bench.json"
    rec.Progress(path, "bench_x.py", {"rtol": 1e-6}, argv=[]).unit("a", lambda: 1)
    other = rec.Progress(path, "bench_x.py", {"rtol": 1e-8}, argv=[])
    assert "another configuration" in capsys.readouterr().out
    assert other.get("a") is None
    assert other.unit("a", lambda: 2) == 2


def test_stop_after_ends_a_chunk_between_units(tmp_path):
    rec = _module()
    path = tmp_path / "bench.json"
    chunk = rec.Progress(path, "bench_x.py", {}, argv=[], stop_after=0.0)
    assert chunk.unit("a", lambda: 1) == 1  # a chunk always finishes one unit
    with pytest.raises(SystemExit) as stop:
        chunk.unit("b", lambda: 2)
    assert stop.value.code == 3
    resumed = rec.Progress(path, "bench_x.py", {}, argv=[])
    assert resumed.get("a") == 1 and resumed.get("b") is None
