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
