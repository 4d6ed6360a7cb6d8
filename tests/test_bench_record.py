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


_TEMPORARIES = """
import ctypes, resource, sys
sys.path.insert(0, sys.argv[2])
import _record
print(_record.set_malloc(sys.argv[1]))
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
n = 784 * 1024 * 4  # a float32 784 x 1024 weight's temporary
faults = []
for _ in range(8):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = libc.malloc(n)
    ctypes.memset(a, 1, n)
    b = libc.malloc(n)
    ctypes.memset(b, 1, n)
    libc.free(a)
    libc.free(b)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(*faults)
"""


@pytest.mark.skipif(
    __import__("platform").libc_ver()[0] != "glibc", reason="set_malloc pins glibc's allocator"
)
def test_fixed_malloc_reuses_the_pages_of_parameter_sized_temporaries():
    """Two weight-sized temporaries made and freed per step (torch's Adam makes two per
    parameter): with glibc's dynamic thresholds they come back as fresh pages at every step
    (about 1,500 faults, 6 MB); with ``--malloc fixed`` only the first step faults."""
    import subprocess
    import sys

    out = {}
    for mode in ("default", "fixed"):
        run = subprocess.run(
            [sys.executable, "-c", _TEMPORARIES, mode, str(ROOT / "benchmarks")],
            capture_output=True,
            text=True,
            check=True,
        )
        said, faults = run.stdout.strip().splitlines()
        out[mode] = [int(f) for f in faults.split()]
        assert ("fixed:" in said) == (mode == "fixed")
    assert out["fixed"][0] > 1000 and max(out["fixed"][1:]) == 0
    assert min(out["default"][1:]) > 1000


def test_set_malloc_names_what_it_takes():
    rec = _module()
    with pytest.raises(SystemExit, match=r"--malloc 'jemalloc' is not allowed; use one of"):
        rec.set_malloc("jemalloc")
    assert rec.set_malloc("default").startswith("glibc default")
