"""tools/bench_page.py: docs/benchmarks.md is the rendering of the stored benchmark runs, and a
changed run makes --check fail until the page is regenerated."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("bench_page", ROOT / "tools" / "bench_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_the_stored_runs():
    assert _tool().main(["--check"]) == 0


def test_a_changed_run_fails_the_check_until_the_page_is_written(tmp_path, monkeypatch):
    tool = _tool()
    results = tmp_path / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", results)
    page = tmp_path / "benchmarks.md"
    page.write_text((ROOT / "docs" / "benchmarks.md").read_text())
    monkeypatch.setattr(tool, "RESULTS", results)
    assert tool.main(["--check"], page) == 0
    record = json.loads((results / "transcribed.json").read_text())
    record["sections"][0]["rows"][0][1] = "a figure no run produced (9.99x)"
    (results / "transcribed.json").write_text(json.dumps(record))
    assert tool.main(["--check"], page) == 1
    assert tool.main([], page) == 0
    assert "a figure no run produced (9.99x)" in page.read_text()
    assert tool.main(["--check"], page) == 0


def _reproduce_page(tmp_path, rows, total):
    lines = [
        "Date: 2026-12-02 06:45 UTC. Machine: x86_64.",
        "",
        "| experiment | tasks | wall s | CPU s |",
    ]
    lines += [f"| {name} | 3 | {wall} | 1.0 |" for name, wall in rows]
    lines.append(f"| total | 9 | {total} | 2.0 |")
    path = tmp_path / "benchmarks-reproduce-full.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_reproduction_line_counts_experiments_not_the_total_row(tmp_path, monkeypatch):
    from gaugedyn.harness import EXPERIMENTS

    tool = _tool()
    rows = [("clock", 60.0), ("dissipation", 120.0)]
    monkeypatch.setattr(tool, "REPRODUCE", _reproduce_page(tmp_path, rows, 180.0))
    line = tool.reproduce()
    assert f"(2 of the package's {len(EXPERIMENTS)} experiments in 3.0 minutes" in line
    missing = sorted(set(EXPERIMENTS) - {"clock", "dissipation"})
    assert f"not in that run: {', '.join(f'`{n}`' for n in missing)})" in line


def test_the_reproduction_line_refuses_a_total_that_is_not_the_sum(tmp_path, monkeypatch):
    tool = _tool()
    page = _reproduce_page(tmp_path, [("clock", 60.0), ("dissipation", 120.0)], 190.0)
    monkeypatch.setattr(tool, "REPRODUCE", page)
    with pytest.raises(ValueError, match=r"total row \(190.0 s\) is not the sum of its rows"):
        tool.reproduce()
    monkeypatch.setattr(tool, "REPRODUCE", _reproduce_page(tmp_path, [("clocks", 1.0)], 1.0))
    with pytest.raises(ValueError, match=r"rows \['clocks'\] are not experiments"):
        tool.reproduce()


def test_the_committed_reproduction_line_names_the_package_count():
    from gaugedyn.harness import EXPERIMENTS

    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert f"of the package's {len(EXPERIMENTS)} experiments" in page


def test_a_user_call_row_with_a_stopped_lsoda_call_shows_lower_bounds():
    """From K = 64 an LSODA call stops after its budget: its times and the row's ratio are lower
    bounds, shown as such with the time it reached, and its error is over the outputs reached."""
    calls = ("default", "lsoda", "lsoda_jac")
    row = {
        "K": 64,
        "n": 6240,
        "integrator": "DOP853",
        "default_rtol": 1e-9,
        "cpu_s": dict(zip(calls, (100.0, 420.5, 421.0))),
        "wall_s": dict(zip(calls, (110.0, 600.0, 650.0))),
        "error": dict(zip(calls, (3e-9, 4e-9, 5e-9))),
        "ratio_cpu": 4.2,
        "ratio_wall": 5.45,
        "reached": {
            "default": [242, 1000.0, True],
            "lsoda": [120, 3.25, False],
            "lsoda_jac": [242, 1000.0, True],
        },
        "ratio_bound": "lower",
    }
    record = {
        "command": "bench_theory.py --only 7 --ks 64",
        "date": "2026-12-07 12:00 UTC",
        "machine": {"cpu": "AMD EPYC"},
        "config": {
            "big": {
                "ref_method": "DOP853",
                "ref_rtol": 1e-12,
                "lsoda_cpu_s": 300.0,
                "lsoda_wall_s": 450.0,
            }
        },
        "data": {"user_call": [row]},
    }
    text = _tool().render_theory(record)
    assert "each LSODA call stops after 300 CPU s or 450 wall s" in text
    assert "the reference is DOP853 at rtol 1e-12" in text
    line = text.splitlines()[-1]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[4] == "> 420 / > 600 (stopped at t = 3.25)"
    assert cells[5] == "421 / 650"
    assert cells[6] == "3.0e-09 / 4.0e-09 (to t = 3.25) / 5.0e-09"
    assert cells[7] == "**≥ 4.20x** / ≥ 5.45x"
    row["ratio_bound"], row["reached"] = None, None
    line = _tool().render_theory(record).splitlines()[-1]
    assert "≥" not in line and "stopped" not in line and "4.0e-09 / 5.0e-09" in line


def test_a_full_run_on_a_busy_machine_is_judged_by_its_two_core_estimate():
    """``full_runs`` records (``bench_reproduce.py --json``): a run with the load at most 2
    around it is judged by its wall time, a busier one by CPU / 2, each against 15 minutes."""
    tool = _tool()
    row = {"experiment": "spike_boundary", "tasks": 11, "status": "passed"}
    record = {
        "command": ".venv/bin/python benchmarks/bench_reproduce.py --full --json x.json",
        "date": "2026-12-07 13:00 UTC",
        "load_start": [1.0, 1.0, 1.0],
        "load_end": [1.0, 1.0, 1.0],
        "machine": {"cpu": "AMD EPYC", "cores": 2},
        "data": {
            "executor": "process x2",
            "rows": [
                row | {"wall": 960.0, "cpu": 1500.0, "load_before": 1.5, "load_after": 1.9},
                row | {"wall": 960.0, "cpu": 1500.0, "load_before": 1.5, "load_after": 4.0},
            ],
        },
    }
    text = tool.render_full_runs(record)
    quiet, busy = [line for line in text.splitlines() if line.startswith("| `spike")]
    assert "wall (quiet)" in quiet and "no (16.0 min)" in quiet
    assert "CPU / 2 (load > 2)" in busy and "yes (12.5 min)" in busy


def test_a_recorder_row_names_its_allocator_and_faults():
    """A recorder run with ``--malloc fixed`` is shown as such, with its page faults per step
    (plain / every step); a run from before the option as glibc's default, faults not counted."""
    tool = _tool()
    fixed = {
        "malloc": "glibc fixed: mmap threshold 32 MiB, trim threshold 1 GiB (mallopt)",
        "faults_per_step": {"plain": 16.2, "every=1": 20.4, "every=10": 12.0},
    }
    assert tool._allocator(fixed) == "fixed (16 / 20)"
    default = {
        "malloc": "glibc default (dynamic thresholds)",
        "faults_per_step": {"plain": 515.0, "every=1": 170.0},
    }
    assert tool._allocator(default) == "default (515 / 170)"
    assert tool._allocator({}) == "default"


def test_an_online_ode_row_names_its_noise_terms_where_fewer_than_its_rhs():
    """A run whose noise term was held once per time point shows its noise terms and the rule;
    a run evaluating it at every right-hand side, or from before the count, reads as before."""
    tool = _tool()
    record = json.loads((ROOT / "benchmarks/results/online_ode_softplus.json").read_text())
    run = record["data"]["activations"]["softplus"]["run"]
    for t in run.values():  # a record from before the count
        for key in ("noise_terms", "noise_rule", "cpu_runs"):
            t.pop(key, None)
    before = tool.render_online_ode(record)
    assert "noise terms" not in before
    run["plain"] |= {"noise_terms": 828, "noise_rule": "once_per_time"}
    run["options"] |= {"noise_terms": run["options"]["rhs"], "noise_rule": "every_call"}
    after = tool.render_online_ode(record)
    assert f"({run['plain']['rhs']} rhs, 828 noise terms (once_per_time)" in after
    assert after.count("noise terms") == 1


def test_an_online_ode_row_of_several_runs_states_their_median_and_range():
    """``bench_online_ode.py --runs N`` stores every run's CPU seconds: the row says that its
    figure is their median and gives their range; a row of one run says neither."""
    tool = _tool()
    record = json.loads((ROOT / "benchmarks/results/online_ode_softplus.json").read_text())
    run = record["data"]["activations"]["softplus"]["run"]
    for t in run.values():
        t.pop("cpu_runs", None)
    assert "median of" not in tool.render_online_ode(record)
    run["plain"] |= {"cpu": 0.95, "cpu_runs": [0.97, 0.93, 0.95, 1.04, 0.91]}
    after = tool.render_online_ode(record)
    assert "0.95 (" in after
    assert "the median of 5 runs, 0.91 to 1.04" in after
    assert after.count("median of") == 1
