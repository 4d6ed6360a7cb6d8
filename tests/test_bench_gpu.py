"""benchmarks/bench_gpu.py on this machine: without a GPU it says so and runs the batched grids
on the CPU, printing its table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from gaugedyn import InputError

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_runs_the_grids_on_the_cpu_and_says_whether_a_gpu_is_present(bench, capsys):
    assert (
        bench.main(
            [
                "--tasks",
                "teacher_student",
                "--cells",
                "2",
                "--seeds",
                "1",
                "--steps",
                "3",
                "--copies",
                "2",
                "--scan-steps",
                "10",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    if not torch.cuda.is_available():
        assert "no GPU present" in out and "running on cpu only" in out
    lines = out.splitlines()
    assert any(line.startswith("beta_grid teacher_student  cpu") for line in lines)
    assert any(line.startswith("stability scan") and " cpu " in line for line in lines)


def test_bad_options_are_refused(bench):
    with pytest.raises(InputError, match="--tasks 'x'"):
        bench.main(["--tasks", "x"])
    with pytest.raises(InputError, match="--cells 1"):
        bench.main(["--cells", "1"])
