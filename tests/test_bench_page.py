"""tools/bench_page.py: docs/benchmarks.md is the rendering of the stored benchmark runs, and a
changed run makes --check fail until the page is regenerated."""

import importlib.util
import json
import shutil
from pathlib import Path

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
