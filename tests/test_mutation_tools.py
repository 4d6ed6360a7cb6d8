"""The mutation runs' machinery: the tests chosen for a mutant from the line -> tests map
(``tools/mutate.py --select coverage``), the outcome read from pytest, and the score page
(``tools/mutation_page.py``) generated from the stored record, never typed in."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import mutate  # noqa: E402  (tools/ is not a package)
import mutation_page as page  # noqa: E402

F = "src/gaugedyn/stats/_rules.py"
A = "tests/test_stats.py"


def _mutation(line):
    return mutate.Mutation("m", F, "a < b", "(a <= b)", (A,), "comparison: x", "stats", line, 4)


def _map():
    return {
        "lines": {F: {"10": ["t::slow", "t::fast", "t::broken"], "20": [], "30": ["t::fast"]}},
        "tests": {
            "t::slow": {"outcome": "passed", "seconds": 9.0},
            "t::fast": {"outcome": "passed", "seconds": 0.1},
            "t::broken": {"outcome": "failed", "seconds": 0.2},
            f"{A}::x": {"outcome": "passed", "seconds": 1.0},
            f"{A}::y": {"outcome": "failed", "seconds": 1.0},
            "tests/test_other.py::z": {"outcome": "passed", "seconds": 1.0},
        },
    }


def test_a_covered_line_runs_its_tests_fastest_first_without_the_failing_ones():
    assert mutate.selected_tests(_mutation(10), _map()) == (["t::fast", "t::slow"], "coverage")
    assert mutate.selected_tests(_mutation(30), _map()) == (["t::fast"], "coverage")


def test_a_line_run_only_at_import_runs_the_area_files_and_an_unrun_line_nothing():
    assert mutate.selected_tests(_mutation(20), _map()) == ([f"{A}::x"], "import")
    assert mutate.selected_tests(_mutation(40), _map()) == ([], "not covered")


def test_a_constant_of_a_compiled_file_runs_the_tests_of_the_kernels_callers(monkeypatch):
    """A module constant of a numba file runs only at import, but its kernels read it whenever
    they run: its mutant goes to the tests that run the kernels' callers, not the area files."""
    kernels, caller = "src/gaugedyn/k.py", "src/gaugedyn/caller.py"
    monkeypatch.setitem(mutate.mutants.COMPILED_CALLERS, "k.py", ("caller.py",))
    monkeypatch.setattr(mutate.mutants, "in_compiled_function", lambda rel, line: False)
    cmap = _map()
    cmap["lines"][kernels] = {"3": []}
    cmap["lines"][caller] = {"7": ["t::slow", "t::broken"]}
    m = mutate.Mutation("k", kernels, "2.0", "(3.0)", (A,), "factor: x", "training", 3, 4)
    assert mutate.selected_tests(m, cmap) == (["t::slow"], "compiled")
    # imported lazily inside a test, the constant's line carries that test only: still the
    # callers' tests
    monkeypatch.setattr(mutate.mutants, "at_module_level", lambda rel, line: True)
    cmap["lines"][kernels] = {"3": ["t::fast"]}
    assert mutate.selected_tests(m, cmap) == (["t::slow"], "compiled")


def test_the_test_files_importing_a_module_are_found_by_their_imports(tmp_path):
    """Every form of import of the module (or of a name from it), at the top or inside a
    test, and no look-alike: a sibling module, a longer name, a string."""
    files = {
        "test_top.py": "from gaugedyn.training import _online_kernels as k\n",
        "test_inside.py": "def test_x():\n    from gaugedyn.training._online_kernels import run\n",
        "test_dotted.py": "import gaugedyn.training._online_kernels\n",
        "test_sibling.py": "from gaugedyn.training import _online_fast, _online_chain\n",
        "test_longer.py": "from gaugedyn.training._online_kernels_x import run\n",
        "test_string.py": "NAME = 'gaugedyn.training._online_kernels'\n",
        "helper.py": "from gaugedyn.training import _online_kernels\n",  # not a test file
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = mutate.mutants.importing_test_files("training/_online_kernels.py", tmp_path)
    stem = tmp_path.name
    assert found == tuple(f"{stem}/test_{n}.py" for n in ("dotted", "inside", "top"))
    # the repository's own: the file that runs the kernels' Python directly
    real = mutate.mutants.importing_test_files("training/_online_kernels.py")
    assert "tests/test_properties_mutants_kernels.py" in real


def test_a_compiled_line_runs_the_callers_tests_and_the_files_importing_its_module(monkeypatch):
    """A test that calls a kernel directly is credited to no caller's line: the files that
    import the kernels' module or a caller (a file outside the map's scope) are selected too,
    the map's tests of a mapped file, a file the map does not hold whole and last."""
    kernels, caller = "src/gaugedyn/k.py", "src/gaugedyn/caller.py"
    monkeypatch.setitem(mutate.mutants.COMPILED_CALLERS, "k.py", ("caller.py",))
    monkeypatch.setattr(mutate.mutants, "in_compiled_function", lambda rel, line: True)
    importers = {
        "k.py": (A, "tests/test_new.py"),
        "caller.py": ("tests/test_new.py", "tests/t2.py"),
    }
    monkeypatch.setattr(mutate.mutants, "importing_test_files", lambda rel: importers[rel])
    cmap = _map()
    cmap["lines"][kernels] = {}
    cmap["lines"][caller] = {"7": ["t::slow"]}
    m = mutate.Mutation("k", kernels, "i", "(i + 1)", (A,), "off-by-one: x", "training", 3, 4)
    ids, how = mutate.selected_tests(m, cmap)
    assert (ids, how) == ([f"{A}::x", "t::slow", "tests/test_new.py", "tests/t2.py"], "compiled")
    assert mutate._seconds("tests/test_new.py", cmap) == mutate.UNMAPPED_FILE_SECONDS
    assert mutate._seconds(f"{A}::x", cmap) == 1.0


def test_the_selection_plugin_keeps_a_named_files_tests_and_the_named_tests(tmp_path, monkeypatch):
    import types

    import mutation_select

    wanted = tmp_path / "tests.txt"
    wanted.write_text("a.py::t2\nb.py\n")
    monkeypatch.setenv("GAUGEDYN_MUTATION_TESTS", str(wanted))
    items = [
        types.SimpleNamespace(nodeid=n) for n in ("b.py::u", "a.py::t1", "a.py::t2", "b.py::v")
    ]
    dropped = []
    hook = types.SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items))
    mutation_select.pytest_collection_modifyitems(types.SimpleNamespace(hook=hook), items)
    assert [it.nodeid for it in items] == ["a.py::t2", "b.py::u", "b.py::v"]
    assert [it.nodeid for it in dropped] == ["a.py::t1"]


def test_an_extra_part_with_no_test_file_left_runs_nothing(tmp_path, monkeypatch, capsys):
    """Every area test file already in a part: the extra part must not call pytest with no
    file (which would run every test under its testpaths)."""
    import covmap

    monkeypatch.setattr(covmap, "CACHE", tmp_path)
    monkeypatch.setattr(covmap, "source_key", lambda: "k")
    (tmp_path / "k" / "area").mkdir(parents=True)
    (tmp_path / "k" / "area" / "parts-of-2.json").write_text(
        json.dumps([covmap.test_files("area"), []])
    )
    monkeypatch.setattr(covmap, "_coverage", lambda *a: pytest.fail("pytest was started"))
    assert covmap.run(1, 2, "area", extra="extra1") == 0
    assert "nothing run" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("rc", "log", "outcome", "test"),
    [
        (0, "3 passed in 1s", "survived", ""),
        (1, "FAILED tests/a.py::t - assert 1 == 2\n1 failed, 2 passed", "killed", "tests/a.py::t"),
        (
            1,
            "FAILED tests/a.py::t - Failed: Timeout >300.0s\n1 failed",
            "killed (timeout)",
            "tests/a.py::t",
        ),
        (2, "ERROR tests/a.py - ImportError\n1 error", "killed", "tests/a.py"),
        (4, "usage", "error (pytest exit 4)", ""),
    ],
)
def test_the_outcome_is_read_from_pytests_status_and_summary(rc, log, outcome, test):
    assert mutate._outcome(rc, log) == (outcome, test)
    assert mutate._tests_run("1 failed, 2 passed, 1 xfailed in 3s") == 4


def _record():
    def entry(area, outcome, selection="coverage", history=()):
        e = {"area": area, "file": F, "line": 1, "col": 0, "kind": "sign", "old": "a", "new": "b"}
        e.update(outcome=outcome, selection=selection, killed_by="t::k", seconds=1.0)
        if history:
            e["history"] = list(history)
        return e

    return {
        "mutants": {
            "s1": entry("stats", "killed"),
            "s2": entry("stats", "killed (timeout)"),
            "s3": entry("stats", "survived"),
            "s4": entry("stats", "survived", "not covered"),
            "g1": entry("gauge", "killed", history=[entry("gauge", "survived")]),
            "g2": entry("gauge", "survived"),
        },
        "runs": [
            {
                "command": "python tools/mutate.py --generated",
                "started": "2026-12-06 15:00:00 UTC",
                "ended": "2026-12-06 15:10:00 UTC",
                "commit": "abc1234",
                "dirty": False,
                "mutants": 6,
                "wall_s": 600.0,
                "cpu_s": 900.0,
                "load_start": [1.0, 2.0, 3.0],
                "load_end": [1.0, 2.0, 3.0],
            }
        ],
    }


def test_the_score_counts_kills_over_the_non_equivalent_mutants():
    record = _record()
    assert page.score(record, {}) == (3, 6)
    assert page.score(record, {"g2": "same function"}) == (3, 5)
    drawn = [*record["mutants"], "t1"]
    text = page.render(record, {"g2": "same function"}, drawn)
    assert "**3 of 5 non-equivalent generated mutants killed (60.0%)**; 6 of the 7" in text
    assert "1 not yet run (t1)." in text
    assert "| `stats` | 4 | 2 | 1 | 0 | 0 | 2 | 1 |" in text
    assert "| `gauge` | 2 | 1 | 0 | 1 | 1 | 0 | 0 |" in text
    assert "| **all** | 6 | 3 | 1 | 1 | 1 | 2 | 1 |" in text
    assert "- `g2` (`stats/_rules.py:1`, `a` to `b`): same function" in text
    assert "- `s4` (`stats/_rules.py:1`, `a` to `b`) (a line no test runs)" in text


def test_a_recorded_mutant_no_longer_drawn_is_not_scored():
    """A record of a mutant whose file changed since (no longer in the drawn set) measured code
    that is gone: it is counted apart, in neither the score nor the table."""
    record = _record()
    assert page.score(record, {}, {"s1", "s3"}) == (1, 2)
    text = page.render(record, {}, ["s1", "s3"])
    assert "**1 of 2 non-equivalent generated mutants killed (50.0%)**; 2 of the 2" in text
    assert "4 recorded mutants no longer drawn" in text
    assert "| **all** | 2 | 1 | 0 | 0 | 0 | 1 | 0 |" in text
    assert "`g2`" not in text


def test_an_equivalent_the_record_lacks_is_refused():
    with pytest.raises(ValueError, match="nowhere"):
        page.render(_record(), {"nowhere": "a reason"})


def test_the_committed_page_is_the_stored_record():
    assert page.main(["--check"]) == 0


def test_a_changed_record_fails_the_check_until_the_page_is_written(tmp_path, monkeypatch):
    record = json.loads(page.RECORD.read_text(encoding="utf-8"))
    # a mutant of the drawn set (the record also keeps mutants no longer drawn, which the page
    # does not count: flipping one of those changes nothing)
    drawn = set(page.the_set())
    first = next(m for m in record["mutants"] if m in drawn)
    record["mutants"][first]["outcome"] = (
        "survived" if page.killed(record["mutants"][first]) else "killed"
    )
    changed = tmp_path / "generated.json"
    changed.write_text(json.dumps(record), encoding="utf-8")
    copy = tmp_path / "testing.md"
    copy.write_text(page.PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(page, "RECORD", changed)
    assert page.main(["--check"], copy) == 1
    assert page.main([], copy) == 0
    assert page.main(["--check"], copy) == 0


def test_a_mutants_copy_holds_what_the_generated_page_checks_read(tmp_path, monkeypatch):
    """The page checks the tests run (here `tools/pilot_tables.py --check`, read by
    `tests/test_spike_boundary.py`) pass in a mutant's copy of the repository: without the
    committed runs (`results-data/`) they failed in every copy and read as kills."""
    import importlib.util

    mutate.copy_repository(tmp_path)
    spec = importlib.util.spec_from_file_location(
        "copied_tables", tmp_path / "tools" / "pilot_tables.py"
    )
    tool = importlib.util.module_from_spec(spec)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0
    assert (tmp_path / "results-data" / "spike_boundary" / "summary.json").is_file()
