"""``gaugedyn publish`` trusts nothing it reads: every check (the run's experiment, command,
completeness, claims and figures; the committed summaries; the markers of every page) passes
before anything is written, a refusal is one line with exit status 2 and no file changes, and
the writes are atomic per file and all or none per command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toy_experiments import invoke

ROOT = Path(__file__).resolve().parents[1]
PAGE = """# Results

<!-- publish:claims spike_boundary -->
<!-- /publish -->

Between the tables: the user's own text.

<!-- publish:figures clock -->
<!-- /publish -->

<!-- publish:claims clock -->
<!-- /publish -->
"""


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def repo(tmp_path, capsys) -> Path:
    """A small repository: two committed runs (clock's figures copied in) and one page."""
    root = tmp_path / "repo"
    for name in ("spike_boundary", "clock"):
        (root / "results-data" / name).mkdir(parents=True)
        shutil.copy(
            ROOT / "results-data" / name / "summary.json",
            root / "results-data" / name / "summary.json",
        )
    figures = root / "docs" / "figures" / "clock"
    figures.mkdir(parents=True)
    for png in ("clock_paths.png", "clock_mobilities.png"):
        (figures / png).write_bytes(b"\x89PNG committed")
    (root / "README.md").write_text(PAGE)
    code, _, err = invoke(["publish", "--root", root], capsys)
    assert code == 0, err
    return root


def _run(tmp_path: Path, edit=None, name: str = "run") -> Path:
    """A finished full run of ``clock`` (its committed summary, figures written), edited."""
    run = tmp_path / name
    (run / "figures").mkdir(parents=True)
    summary = json.loads((ROOT / "results-data" / "clock" / "summary.json").read_text())
    summary.pop("published")
    for fig in summary["figures"]:
        for f in fig["files"]:
            (run / f).write_bytes(b"\x89PNG new " + f.encode())
    if edit is not None:
        edit(summary, run)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _refused(repo: Path, capsys, argv: list, match: str) -> None:
    before = _tree(repo.parent)
    code, out, err = invoke(["publish", "--root", repo, *argv], capsys)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert match in err, err
    assert _tree(repo.parent) == before


def _set(key, value):
    def edit(summary, run):
        summary[key] = value

    return edit


def _figure(path: str):
    def edit(summary, run):
        summary["figures"][0]["files"][0] = path

    return edit


def _outside(summary, run):
    (run.parent / "secret.png").write_bytes(b"not the run's")
    (run / "figures" / "link.png").symlink_to(run.parent / "secret.png")
    summary["figures"][0]["files"][0] = "figures/link.png"


def _missing(summary, run):
    # a fresh run (not a re-judged one, which may leave out a figure already published)
    summary.pop("rejudged", None)
    (run / summary["figures"][1]["files"][0]).unlink()


CASES = {
    "experiment outside the repository": (_set("experiment", "../../x"), "registered"),
    "experiment not registered": (_set("experiment", "no_such"), "registered"),
    "experiment not a string": (_set("experiment", ["clock"]), "registered"),
    "absolute figure": (_figure(str(ROOT / "docs" / "figures" / "clock" / "x.png")), "inside"),
    "figure leaving the run": (_figure("../secret.png"), "inside"),
    "figure linked outside": (_outside, "inside"),
    "figure missing": (_missing, "missing"),
    "no command": (_set("command", None), "command record"),
    "command not a record": (_set("command", "gaugedyn run"), "command record"),
    "quick run": (lambda s, r: s["command"].update(quick=True), "quick"),
    "reduced run": (lambda s, r: s["command"].update(overrides=["dim=3"]), "reduced"),
    "failed tasks": (_set("failed_tasks", [{"key": "k"}]), "not complete"),
    "claims garbage": (_set("claims", "garbage"), "claims"),
    "claim without id": (_set("claims", [{"kind": "check"}]), "string id"),
    "claim of an unknown kind": (
        _set("claims", [{"id": "x", "kind": "guess", "passed": True}]),
        "kind",
    ),
    "claim with a made-up verdict": (
        _set("claims", [{"id": "x", "kind": "finding", "verdict": "PROVEN"}]),
        "verdict",
    ),
    "figures garbage": (_set("figures", {"files": 3}), "figures"),
    "summary not an object": (lambda s, r: s.clear() or s.update({"0": 1}), "registered"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_add_refuses_a_run_before_writing_anything(repo, tmp_path, capsys, case):
    edit, match = CASES[case]
    _refused(repo, capsys, ["--add", _run(tmp_path, edit)], match)


def test_add_refuses_a_summary_that_is_not_an_object(repo, tmp_path, capsys):
    run = _run(tmp_path)
    (run / "summary.json").write_text("[1, 2]")
    _refused(repo, capsys, ["--add", run], "not a JSON object")


def test_a_good_run_is_added_with_its_figures_and_tables(repo, tmp_path, capsys):
    code, out, err = invoke(["publish", "--root", repo, "--add", _run(tmp_path)], capsys)
    assert code == 0, err
    figures = repo / "docs" / "figures" / "clock"
    assert (figures / "clock_paths.png").read_bytes() == b"\x89PNG new figures/clock_paths.png"
    text = (repo / "README.md").read_text()
    assert "Between the tables: the user's own text." in text
    assert "![clock_paths](docs/figures/clock/clock_paths.png)" in text
    assert "<!-- publish:claims spike_boundary -->\n\n| claim |" in text
    assert not list(repo.rglob("*.tmp-*"))


def test_one_bad_run_among_several_writes_nothing(repo, tmp_path, capsys):
    good = _run(tmp_path, name="good")
    bad = _run(tmp_path, _missing, name="bad")
    _refused(repo, capsys, ["--add", good, "--add", bad], "missing")
    _refused(repo, capsys, ["--add", good, "--add", good], "two runs of clock")


CLOSE = "<!-- /publish -->\n"


def _first_close_missing(text):
    return text.replace(CLOSE, "", 1), "<!-- publish:claims spike_boundary -->", "has no closing"


def _last_close_missing(text):
    i = text.rindex(CLOSE)
    return text[:i] + text[i + len(CLOSE) :], "<!-- publish:claims clock -->", "has no closing"


def _stray_close(text):
    return text.replace("Between", CLOSE + "Between"), "<!-- /publish -->", "closes no"


def _unknown_kind(text):
    marker = "<!-- publish:guess clock -->"
    return text.replace("Between", marker + "\nBetween"), marker, "allowed are"


@pytest.mark.parametrize(
    "damage", [_first_close_missing, _last_close_missing, _stray_close, _unknown_kind]
)
def test_unpaired_markers_are_named_with_their_line_and_nothing_is_written(
    repo, tmp_path, capsys, damage
):
    """A missing closing marker used to make ``publish`` eat the next block ("rewritten", exit
    0) and ``--check`` recommend that command; now both name the marker and its line."""
    page = repo / "README.md"
    broken, marker, match = damage(page.read_text())
    page.write_text(broken)
    lines = broken.split("\n")
    line = next(i for i, x in enumerate(lines) if x == marker.strip()) + 1
    if damage is _last_close_missing:
        line = max(i for i, x in enumerate(lines) if x == marker) + 1
    if damage in (_stray_close, _unknown_kind):  # the line inserted before the user's text
        line = next(i for i, x in enumerate(lines) if x.startswith("Between"))
    for argv in ([], ["--check"], ["--add", _run(tmp_path)]):
        before = _tree(repo.parent)
        code, out, err = invoke(["publish", "--root", repo, *argv], capsys)
        assert code == 2 and match in err and f"README.md:{line}:" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert marker.strip() in err
        assert _tree(repo.parent) == before


def test_a_malformed_committed_summary_is_named_not_a_traceback(repo, capsys):
    path = repo / "results-data" / "clock" / "summary.json"
    for text in ('{"claims": "garbage"}', "not json", '{"claims": [{"id": 3}]}'):
        path.write_text(text)
        for argv in ([], ["--check"]):
            code, out, err = invoke(["publish", "--root", repo, *argv], capsys)
            assert code == 2 and "results-data/clock/summary.json" in err, err
            assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_failed_write_puts_back_what_it_replaced(tmp_path, monkeypatch):
    from gaugedyn import harness, publish

    a, b, c = tmp_path / "a.md", tmp_path / "new" / "b.md", tmp_path / "c.md"
    a.write_text("old a")
    c.write_text("old c")
    real = harness.atomic_write

    def failing(path, data, sync_dir=True):
        if Path(path) == c and data == b"new c":
            raise OSError(28, "No space left on device")
        real(path, data, sync_dir)

    monkeypatch.setattr(harness, "atomic_write", failing)
    with pytest.raises(OSError, match="No space"):
        publish.write_all({a: b"new a", b: b"new b", c: b"new c"})
    assert a.read_text() == "old a" and c.read_text() == "old c"
    assert not b.exists() and not b.parent.exists()


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    key=st.sampled_from(["experiment", "command", "claims", "figures", "status", "failed_tasks"]),
    value=JSONISH,
)
def test_fuzzed_summaries_are_added_or_refused_in_one_line(repo, tmp_path, capsys, key, value):
    """Any JSON value in any field the publisher reads: added (exit 0) or refused (exit 2, one
    line, nothing written); never a traceback."""
    run = _run(tmp_path, _set(key, value), name="fuzz")
    before = _tree(repo)
    try:
        code, out, err = invoke(["publish", "--root", repo, "--add", run], capsys)
    finally:
        shutil.rmtree(run)
    assert code in (0, 2) and "Traceback" not in err, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and _tree(repo) == before


def test_provenance_names_the_commit_the_run_was_made_at_not_only_where_it_was_added():
    from gaugedyn.publish import provenance

    added = {"commit": "b" * 40, "dirty": False, "gaugedyn": "0.2.0"}
    pub = {"command": "gaugedyn run x.toml", "date": "2026-12-06 10:00 UTC", "code_version": added}
    ran = {"commit": "a" * 40, "dirty": True, "gaugedyn": "0.1.9"}
    line = provenance("x", {"published": pub, "code": ran})
    assert "gaugedyn 0.1.9 at commit aaaaaaaaaa (with local changes)" in line
    assert "(added at commit bbbbbbbbbb)" in line
    same = provenance("x", {"published": pub, "code": dict(added)})
    assert "at commit bbbbbbbbbb." in same and "added at" not in same
    old = provenance("x", {"published": pub})  # a run that recorded no code identity
    assert "gaugedyn 0.2.0 at commit bbbbbbbbbb." in old and "added at" not in old


def test_publish_check_does_not_import_torch():
    """``gaugedyn publish --check`` reads the experiments' declarations (their set-up space,
    tasks and controls), never a run: none of it imports torch (about 1-3 s of its 4-6)."""
    import os
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from gaugedyn.cli import main\n"
        "rc = main(['publish', '--check'])\n"
        "print(json.dumps([rc, sorted(m for m in sys.modules if m.split('.')[0] == 'torch')[:3]]))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, []]


def test_provenance_counts_a_rejudgements_reworded_statements():
    from gaugedyn.publish import provenance

    pub = {"command": "gaugedyn run x.toml", "date": "2026-12-06 10:00 UTC"}
    again = {"date": "2026-12-07 09:19 UTC", "commit": "c" * 40, "changed": []}
    line = provenance("x", {"published": pub, "rejudged": again | {"reworded": [{}, {}]}})
    assert line.endswith(
        "0 verdict change(s); 2 statement(s) re-worded to name the location their rule judges."
    )
    assert "re-worded" not in provenance("x", {"published": pub, "rejudged": again})


def test_the_published_command_line_carries_a_multiverses_sample_size():
    """A multiverse's ``--samples`` changes which specifications are judged, so the published
    command carries it (rerunning the printed command gives the same specifications); a run's
    command and an unrecorded one are as before."""
    from gaugedyn.publish import command_line

    multiverse = {
        "command": "multiverse",
        "config": "simulations/x.toml",
        "samples": 0,
        "workers": 2,
    }
    assert (
        command_line(multiverse) == "gaugedyn multiverse simulations/x.toml --samples 0 --workers 2"
    )
    del multiverse["samples"]
    assert command_line(multiverse) == "gaugedyn multiverse simulations/x.toml --workers 2"
    run = {"config": "simulations/x.toml", "quick": True, "overrides": ["seeds=8"], "workers": 2}
    assert command_line(run) == "gaugedyn run simulations/x.toml --quick --set seeds=8 --workers 2"
    assert command_line(None) == "(not recorded)"


def test_an_added_extension_run_is_named_where_it_is_stored(repo, tmp_path, capsys):
    """``--add`` of a declared extension's run says it went to
    ``results-data/<experiment>/extensions/<slug>/summary.json``, where it is written (the
    message had named the experiment's own summary, which it leaves alone)."""
    run = tmp_path / "headline"
    run.mkdir()
    stored = ROOT / "results-data" / "prototypes" / "extensions" / "headline" / "summary.json"
    summary = json.loads(stored.read_text())
    summary.pop("published")
    assert not summary.get("figures")
    (run / "summary.json").write_text(json.dumps(summary))
    code, out, err = invoke(["publish", "--root", repo, "--add", run], capsys)
    assert code == 0, err
    where = repo / "results-data" / "prototypes" / "extensions" / "headline" / "summary.json"
    assert f"added {run} as {where}" in out
    assert where.is_file() and not (repo / "results-data" / "prototypes" / "summary.json").exists()
