"""Runs: failed tasks recorded, results committed whole, figures redrawn from stored arrays only,
reproduce reports and exit codes, results independent of the executor.

These tests write the user's default figures, PNG and PDF (the suite's ``GAUGEDYN_FIGURE_FORMATS=png``
is unset here): they are the suite's end-to-end check of the PDF of a run and of its redrawing."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from toy_experiments import TOY, Toy, config_text, invoke

from gaugedyn import _meta
from gaugedyn.experiments import execute, load_arrays, load_config


def files_under(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


@pytest.fixture(autouse=True)
def _default_figure_formats(monkeypatch):
    monkeypatch.delenv("GAUGEDYN_FIGURE_FORMATS", raising=False)


@pytest.fixture
def cfg_path(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(config_text(seed=1, n_tasks=5, size=32))
    return path


def test_run_writes_summary_arrays_and_figures(tmp_path, cfg_path, capsys):
    code, out, err = invoke(
        ["run", cfg_path, "--out", tmp_path / "out", "--executor", "serial"], capsys
    )
    assert code == 0, err
    assert "toy: 5 tasks, 0 already stored, 5 to run" in err and "5/5 tasks done" in err
    assert "bounded" in out and "PASS" in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for key in (
        "experiment",
        "configuration",
        "versions",
        "seeds",
        "definitions",
        "diagnostics",
        "claims",
        "failed_tasks",
        "figures",
        "arrays_sha256",
    ):
        assert key in summary, key
    assert summary["configuration"]["params"]["n_tasks"] == 5 and summary["seeds"]["root"] == 1
    assert summary["versions"]["numpy"] == np.__version__
    # the CPU the compiled kernels were built for (their reductions' order follows its width)
    assert summary["versions"]["cpu"] == _meta.cpu_model() and summary["versions"]["cpu"]
    assert set(summary["versions"]["cpu_flags"].split()) <= set(_meta.NOTED_FLAGS)
    claim = summary["claims"][0]
    assert set(claim) == {"id", "statement", "measured", "expected", "tolerance", "passed", "kind"}
    assert summary["figures"] == [
        {
            "name": "draws",
            "caption": TOY.captions["draws"],
            "files": ["figures/draws.png", "figures/draws.pdf"],
        }
    ]
    arrays = load_arrays(str(tmp_path / "out"))  # a plain string path, as in the README
    assert arrays["x"].shape == (5, 32) and claim["measured"] == pytest.approx(
        np.abs(arrays["s"]).max()
    )
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".staging")]
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"| {claim['id']} |" in report and "| PASS |" in report
    assert "![draws](figures/draws.png)" in report and TOY.captions["draws"] in report


def test_failed_and_diverging_tasks_are_recorded_and_do_not_stop_the_sweep(tmp_path, capsys):
    path = tmp_path / "toy.toml"
    path.write_text(config_text(n_tasks=6, fail_on=[1], diverge_on=[4]))
    out = tmp_path / "out"
    code, _, err = invoke(
        ["run", path, "--out", out, "--executor", "thread", "--workers", "2"], capsys
    )
    assert code == 1 and "2 task(s) failed" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "tasks failed" and summary["claims"] == []
    failed = {f["task"]["i"]: f for f in summary["failed_tasks"]}
    assert sorted(failed) == [1, 4]
    assert failed[1]["type"] == "RuntimeError" and failed[1]["message"] == "task 1 was told to fail"
    assert "Traceback" in failed[1]["traceback"] and failed[1]["task"]["fail"] is True
    div = failed[4]
    assert div["type"] == "DivergenceError" and (div["quantity"], div["time"], div["step"]) == (
        "loss",
        1.25,
        17,
    )
    assert (
        "loss became non-finite at t=1.25 (step 17)" in div["message"]
        and len(div["last_state"]) == 3
    )
    assert summary["diagnostics"]["tasks"]["computed"] == 4
    assert len(list((out / ".tasks").glob("*/*.json"))) == 4  # the others were stored
    assert not (out / "arrays.npz").exists()


def test_interrupted_analysis_leaves_previous_result_intact(tmp_path, cfg_path, monkeypatch):
    cfg = load_config(cfg_path)
    execute(cfg, tmp_path / "out", executor="serial", progress=None)
    before = {p: (tmp_path / "out" / p).read_bytes() for p in files_under(tmp_path / "out")}

    def broken_plot(self, arrays, config, outdir):
        (outdir / "half.png").write_bytes(b"half")
        raise RuntimeError("plot crashed")

    monkeypatch.setattr(Toy, "plot", broken_plot)
    with pytest.raises(RuntimeError, match="plot crashed"):
        execute(
            load_config(cfg_path, overrides=["seed=2"]),
            tmp_path / "out",
            executor="serial",
            progress=None,
            force=True,
        )
    after = {p: (tmp_path / "out" / p).read_bytes() for p in files_under(tmp_path / "out")}
    visible = lambda d: {p: v for p, v in d.items() if not p.startswith(".tasks")}  # noqa: E731
    assert visible(after) == visible(before)  # the new seed's tasks are stored, nothing else moved


def test_plot_redraws_from_stored_arrays_only(tmp_path, cfg_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert invoke(["run", cfg_path, "--out", out, "--executor", "serial", "-q"], capsys)[0] == 0
    figures = files_under(out / "figures")
    pdf = (out / "figures" / "draws.pdf").read_bytes()
    for path in (out / "figures").iterdir():
        path.unlink()
    import shutil

    shutil.rmtree(out / ".tasks")

    def forbidden(*args, **kwargs):
        raise AssertionError("plot must not recompute")

    monkeypatch.setattr(Toy, "run_task", forbidden)
    monkeypatch.setattr(Toy, "analyse", forbidden)
    monkeypatch.setattr(Toy, "tasks", forbidden)
    code, out_text, err = invoke(["plot", out], capsys)
    assert code == 0, err
    assert files_under(out / "figures") == figures == ["draws.pdf", "draws.png"]
    assert (out / "figures" / "draws.pdf").read_bytes() == pdf  # same arrays, same figure
    assert "redrew" in out_text
    (out / "arrays.npz").write_bytes((out / "arrays.npz").read_bytes()[:-10])
    code, _, err = invoke(["plot", out], capsys)
    assert code == 2 and "checksum" in err
    (tmp_path / "empty").mkdir()
    code, _, err = invoke(["plot", tmp_path / "empty"], capsys)
    assert code == 2 and "no summary.json" in err


def test_reproduce_report_exit_code_and_redraw(tmp_path, capsys, monkeypatch):
    sims = tmp_path / "sims"
    sims.mkdir()
    (sims / "good.toml").write_text(config_text(seed=1, n_tasks=3))
    (sims / "tight.toml").write_text(config_text(seed=2, n_tasks=3, bound=1e-3))
    rep = tmp_path / "rep"
    args = ["reproduce", "--simulations", sims, "--out", rep, "--executor", "serial", "-q"]
    code, out, err = invoke([*args, "--quick"], capsys)
    assert code == 1 and "tight:bounded" in err and "good:bounded" not in err
    assert "checks 1 of 2 passed" in out and "tight:bounded: measured" in out
    assert "| good | bounded |" not in out  # stdout: the per-paper summary, not the table
    assert all(len(line) <= 120 for line in out.splitlines())
    report = (rep / "report.md").read_text()
    assert f"Command: `gaugedyn reproduce --quick --out {rep} --simulations {sims}" in report
    assert (
        "| good | bounded |" in report and "| tight | bounded |" in report and "**FAIL**" in report
    )
    assert "![draws](good/figures/draws.png)" in report
    assert "*Figure draws.* Sum of the draws of each task." in report
    assert "## Versions" in report and '"quick": true' in report
    for name in ("good", "tight"):
        assert json.loads((rep / name / "summary.json").read_text())["configuration"]["quick"]
    code, _, _ = invoke([*args, "--quick", "--only", "good"], capsys)
    assert code == 0
    assert "tight" not in (rep / "report.md").read_text()
    for name in ("good", "tight"):
        for path in (rep / name / "figures").iterdir():
            path.unlink()
    monkeypatch.setattr(Toy, "run_task", lambda *a: pytest.fail("recomputed"))
    code, out, _ = invoke(["plot", rep], capsys)
    assert code == 0 and out.count("redrew") == 2
    assert (rep / "good" / "figures" / "draws.png").exists()
    assert not (rep / "tight" / "figures" / "draws.pdf").exists()  # quick runs: PNG alone
    tight = json.loads((rep / "tight" / "summary.json").read_text())
    assert tight["figures"][0]["files"] == ["figures/draws.png"]
    (sims / "broken.toml").write_text("experiment = [\n")
    code, _, err = invoke(["reproduce", "--simulations", sims, "--out", tmp_path / "new"], capsys)
    assert code == 2 and "broken.toml" in err and "line" in err and not (tmp_path / "new").exists()
    (sims / "broken.toml").unlink()
    code, _, err = invoke(["reproduce", "--simulations", sims, "--out", rep / "good"], capsys)
    assert code == 2 and "run folder" in err


def test_results_do_not_depend_on_the_executor(tmp_path, cfg_path):
    cfg = load_config(cfg_path, overrides=["n_tasks=6"])
    reference = execute(cfg, tmp_path / "serial", executor="serial", progress=None).arrays
    for kind in ("thread", "process"):
        from gaugedyn.experiments import ExecutorSpec

        arrays = execute(cfg, tmp_path / kind, executor=ExecutorSpec(kind, 2), progress=None).arrays
        assert arrays.keys() == reference.keys()
        for name in arrays:
            assert arrays[name].dtype == reference[name].dtype
            assert arrays[name].tobytes() == reference[name].tobytes(), (kind, name)
    other_seed = execute(
        load_config(cfg_path, overrides=["n_tasks=6", "seed=9"]),
        tmp_path / "s9",
        executor="serial",
        progress=None,
    ).arrays
    assert not np.array_equal(other_seed["x"], reference["x"])
    assert os.listdir(tmp_path / "process" / "figures") != []


@pytest.mark.parametrize("workers,n_tasks,crash_on", [(1, 4, [2]), (2, 9, [1, 6])])
def test_a_dying_worker_fails_only_its_task_and_the_rerun_resumes(
    tmp_path, workers, n_tasks, crash_on
):
    """A worker that dies breaks the pool for every unfinished task; the sweep restarts it,
    isolates the suspects, and records exactly the tasks that kill their worker."""
    from gaugedyn.experiments import ExecutorSpec

    path = tmp_path / "toy.toml"
    path.write_text(config_text(n_tasks=n_tasks, crash_on=crash_on, sleep=0.05))
    broken = execute(
        load_config(path),
        tmp_path / "out",
        executor=ExecutorSpec("process", workers),
        progress=None,
    )
    assert broken.exit_code == 1 and broken.summary["status"] == "tasks failed"
    assert sorted(f["task"]["i"] for f in broken.failed_tasks) == crash_on
    assert all(
        f["type"] == "BrokenProcessPool" and "died while running it" in f["message"]
        for f in broken.failed_tasks
    )
    stored = n_tasks - len(crash_on)
    assert broken.summary["diagnostics"]["tasks"]["computed"] == stored
    fixed = execute(
        load_config(path, overrides=["crash_on=[]"]),
        tmp_path / "out",
        executor="serial",
        progress=None,
    )
    stats = fixed.summary["diagnostics"]["tasks"]
    assert fixed.exit_code == 0 and stats["reused"] == stored and stats["computed"] == len(crash_on)


def test_arrays_schema_helpers_name_captions_and_fields():
    from gaugedyn.experiments import caption_array, caption_key, caption_of, field_key
    from gaugedyn.harness._arrays import captions, schema_problems, split_key

    arrays = {
        caption_key("draws"): caption_array("Sum at D = 10."),
        field_key("char_gru", "lag"): np.zeros(3),
        "plain": np.ones(2),
    }
    assert (
        caption_key("draws") == "caption_draws" and field_key("char_gru", "lag") == "char_gru__lag"
    )
    assert caption_of(arrays, "draws") == "Sum at D = 10." and caption_of(arrays, "other") == ""
    assert captions(arrays) == {"draws": "Sum at D = 10."}
    assert split_key("char_gru__lag_share") == ("char_gru", "lag_share")
    assert split_key("plain") == (None, "plain") and split_key("caption_a__b") == (
        None,
        "caption_a__b",
    )
    assert not schema_problems(arrays)
    with pytest.raises(ValueError):
        field_key("a__b", "c")
    bad = {"caption_x": np.array(["a", "b"]), "a/b": np.zeros(1), "o": np.array([None])}
    problems = schema_problems(bad)
    assert len(problems) == 3 and "caption_x" in problems[0] and "'a/b'" in problems[1]


def test_a_stored_caption_reaches_the_summary_and_a_bad_one_is_refused(
    tmp_path, cfg_path, monkeypatch
):
    from gaugedyn.experiments import caption_array, caption_key

    analyse = Toy.analyse

    def with_caption(self, config, tasks, results, seed):
        arrays, claims, diagnostics = analyse(self, config, tasks, results, seed)
        arrays[caption_key("draws")] = caption_array(f"{len(tasks)} sums.")
        return arrays, claims, diagnostics

    monkeypatch.setattr(Toy, "analyse", with_caption)
    monkeypatch.setattr(Toy, "captions", {})
    outcome = execute(load_config(cfg_path), tmp_path / "a", executor="serial", progress=None)
    assert outcome.summary["figures"][0]["caption"] == "5 sums."
    assert outcome.summary["arrays_schema"] == 1

    def bad_caption(self, config, tasks, results, seed):
        arrays, claims, diagnostics = analyse(self, config, tasks, results, seed)
        arrays[caption_key("draws")] = np.array(["a", "b"])
        return arrays, claims, diagnostics

    monkeypatch.setattr(Toy, "analyse", bad_caption)
    with pytest.raises(TypeError, match="caption 'caption_draws' is not a 0-d string array"):
        execute(load_config(cfg_path), tmp_path / "b", executor="serial", progress=None)


def test_compare_runs_sees_identical_and_different_results(tmp_path, capsys):
    """tools/compare_runs.py: the same configuration twice is identical, another seed is not."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "compare_runs.py"
    spec = importlib.util.spec_from_file_location("compare_runs", path)
    compare_runs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_runs)
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(config_text(seed=seed, n_tasks=3, size=4))
        execute(load_config(cfg), tmp_path / name, executor="serial", progress=None)
    assert compare_runs.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "toy: identical claims and arrays" in capsys.readouterr().out
    assert compare_runs.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    out = capsys.readouterr().out
    assert "toy: DIFFERS" in out and "claim bounded: measured differ" in out
    assert "array s: max |difference|" in out and "array x: max |difference|" in out


def test_save_figure_lays_out_once_and_writes_the_runs_formats(tmp_path, monkeypatch):
    """Full runs write PNG and PDF, quick runs PNG alone; the constrained layout runs once per
    figure (the second file reuses its positions)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    from gaugedyn.plotting import figure_formats, save_figure, style, subplots

    calls = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(
        ConstrainedLayoutEngine,
        "execute",
        lambda self, fig: calls.append(fig) or execute(self, fig),
    )
    for quick, want in ((False, ["f.pdf", "f.png"]), (True, ["f.png"])):
        out = tmp_path / str(quick)
        with style("Agg", figure_formats(quick)):
            fig, ax = subplots()
            ax.set(xlabel="x", ylabel="y")
            ax.plot([1, 2, 3], [1, 4, 9])
            save_figure(fig, out, "f")
        assert sorted(p.name for p in out.iterdir()) == want
        assert len(calls) == 1
        calls.clear()
    with pytest.raises(ValueError, match="formats"):
        with style("Agg", ("pdf",)):
            pass


def test_figure_formats_variable_sets_a_full_runs_files_and_is_checked_before_any_task(
    tmp_path, cfg_path, capsys, monkeypatch
):
    """``GAUGEDYN_FIGURE_FORMATS=png``: a full run writes PNG alone (the suite's setting); a
    value naming no format, lacking PNG or naming another format is refused before any task."""
    monkeypatch.setenv("GAUGEDYN_FIGURE_FORMATS", "png")
    out = tmp_path / "out"
    assert invoke(["run", cfg_path, "--out", out, "--executor", "serial", "-q"], capsys)[0] == 0
    assert files_under(out / "figures") == ["draws.png"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["figures"][0]["files"] == ["figures/draws.png"]
    monkeypatch.setattr(Toy, "run_task", lambda *a, **k: pytest.fail("a task ran"))
    for bad in ("", "pdf", "png,svg", "png;pdf"):
        monkeypatch.setenv("GAUGEDYN_FIGURE_FORMATS", bad)
        where = tmp_path / f"bad{len(bad)}"
        code, _, err = invoke(["run", cfg_path, "--out", where, "--executor", "serial"], capsys)
        assert code == 2 and "GAUGEDYN_FIGURE_FORMATS" in err and "'png'" in err, (bad, err)
        assert not where.exists()


def test_compare_runs_tolerance_keeps_verdicts_exact(tmp_path, capsys):
    """compare_runs --rtol: a number moved within the tolerance passes, beyond it fails, and a
    changed verdict fails at any tolerance."""
    import copy
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "compare_runs", root / "tools" / "compare_runs.py"
    )
    compare_runs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_runs)
    base = json.loads((root / "results-data" / "beta_grid" / "summary.json").read_text())
    finding = next(i for i, c in enumerate(base["claims"]) if c["kind"] == "finding")

    def write(name, edit):
        s = copy.deepcopy(base)
        edit(s["claims"][finding])
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(s))
        return str(tmp_path / name)

    same = write("same", lambda c: None)

    def nudge(c):
        c["per_seed"][0] *= 1 + 1e-6

    moved = write("moved", nudge)
    flipped = write(
        "flipped",
        lambda c: c["readings"].update({k: "UNRESOLVED" for k in list(c["readings"])[:1]}),
    )
    assert compare_runs.main([same, moved, "--rtol", "1e-5"]) == 0
    assert "the same to rtol 1e-05" in capsys.readouterr().out
    assert compare_runs.main([same, moved, "--rtol", "1e-8"]) == 1
    assert "per_seed differ" in capsys.readouterr().out
    assert compare_runs.main([same, flipped, "--rtol", "1"]) == 1
    assert "readings." in capsys.readouterr().out
    assert compare_runs.main([same, same, "--atol", "1"]) == 2
