"""benchmarks/bench_reproduce.py: the table built from fake summaries (no experiment run), so the
script cannot rot unnoticed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gaugedyn import InputError

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_reproduce.py"


def _load(name: str):
    """A script of ``benchmarks/`` imported as a module."""
    spec = importlib.util.spec_from_file_location(name, PATH.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("bench_reproduce")


def fake_summary(
    tasks: int, wall: float, analyse: float, plot: float, compute: float, status: str = "passed"
) -> dict:
    return {
        "status": status,
        "diagnostics": {
            "tasks": {
                "tasks": tasks,
                "unique_tasks": tasks,
                "reused": 0,
                "computed": tasks,
                "failed": 0,
                "compute_seconds": compute,
            },
            "executor": "ProcessPool x2",
            "analyse_seconds": analyse,
            "plot_seconds": plot,
            "wall_seconds": wall,
        },
    }


def rows(bench):
    return [
        bench.row_from_summary("a", fake_summary(4, 10.0, 2.0, 3.0, 9.0), 10.5, 21.0),
        bench.row_from_summary(
            "b", fake_summary(6, 30.0, 3.0, 0.0, 50.0, "claims failed"), 30.5, 55.0
        ),
    ]


def test_rows_shares_and_total(bench):
    a, b = rows(bench)
    assert (a["sweep"], a["analyse"], a["plot"]) == (5.0, 2.0, 3.0)
    assert b["sweep"] == 27.0
    total = bench.total_row([a, b])
    assert total["tasks"] == 10 and total["wall"] == 41.0 and total["cpu"] == 76.0
    assert total["status"] == "1/2 passed"
    cells = bench._cells(a)
    # tasks, wall, CPU, CPU/wall, then the shares of the run's wall_seconds
    assert cells[1:8] == ["4", "10.5", "21.0", "2.00", "50", "20", "30"]
    # the total's shares are wall-weighted: sweep 32 s, analysis 5 s, figures 3 s of 40 s
    assert bench._cells(total)[5:8] == ["80", "12", "8"]


def test_table_text_and_markdown(bench):
    text = bench.table(rows(bench))
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["experiment", "tasks"]
    assert lines[-1].startswith("total") and lines[-1].rstrip().endswith("1/2 passed")
    md = bench.table(rows(bench), markdown=True).splitlines()
    assert md[0] == "| " + " | ".join(bench.COLUMNS) + " |"
    assert len(md) == 2 + 2 + 1  # header, rule, two rows, total
    assert md[2].startswith("| a | 4 | 10.5 | 21.0 | 2.00 | 50 | 20 | 30 | 9.0 | passed |")
    page = bench.markdown_page(
        rows(bench),
        "python benchmarks/bench_reproduce.py --quick",
        None,
        True,
        "process",
        ((1.0, 1.0, 1.0), (2.0, 2.0, 2.0)),
    )
    assert "quick configurations" in page and "--quick" in page and md[-1] in page
    assert bench.load_note(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))) == ""
    busy = ((100.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    assert "shared with other work" in bench.load_note(busy)
    assert bench.load_note(busy) in bench.markdown_page(
        rows(bench), "x", None, True, "serial", busy
    )


def test_error_row_and_incomplete_cpu_are_marked(bench):
    row = bench.error_row("c", 1.0, 0.5, RuntimeError("boom"))
    row["complete_cpu"] = False
    cells = bench._cells(row)
    assert cells[3] == "0.5*" and cells[5:8] == ["-", "-", "-"]
    assert cells[-1] == "error: RuntimeError"


def test_cpu_seconds_counts_this_process(bench):
    before, _ = bench.cpu_seconds()
    sum(i * i for i in range(200_000))
    after, _ = bench.cpu_seconds()
    assert after > before


def test_unknown_experiment_is_refused_before_any_run(bench):
    with pytest.raises(InputError, match="--only 'nope': unknown experiment nope"):
        bench.main(["--quick", "--only", "nope", "--no-ratio"])


def test_batched_ratio_runs_and_batched_copies_equal_the_loop(bench):
    r = bench.batched_ratio(copies=2, steps=72, rounds=2)
    assert r["max_abs_diff"] <= 1e-12
    assert all(x > 0 for x in r["wall"] + r["cpu"])
    assert "loop / batched wall" in bench.ratio_text(r)


def test_beta_grid_ratio_runs_and_both_paths_agree(bench):
    r = bench.grid_ratio(steps=4, rounds=1, tasks=["teacher_student"])
    assert r["max_loss_diff"] <= 1e-5 and r["agree"] == r["compared"] > 0  # stacked: round-off
    assert r["max_diff"] < 1e-4
    assert all(
        x > 0
        for k in ("all", "stacked", "stacked_gain")
        for m in ("wall", "cpu")
        for x in r["ratio"][k][m]
    )
    assert "per-run / batched wall" in r["text"] and set(r["rows"]) == set(r["tasks"])
    assert "batched loop / batched stacked" in r["text"]
    page = bench.markdown_page(rows(bench), "x", None, True, "serial", ((0.0,) * 3, (0.0,) * 3), r)
    assert r["text"] in page


@pytest.fixture(scope="module")
def grid_bench():
    return _load("bench_beta_grid")


def test_roofline_counts_the_arithmetic_and_derives_the_bound(grid_bench):
    # digits_mlp, Linear(64, 32), ReLU, Linear(32, 10) on a minibatch of 64: forward
    # 2*64*(64*32 + 32*10); backward the second layer's input and weight gradients and the first
    # layer's weight gradient (the images need none)
    assert grid_bench._copy_flops("digits_mlp") == 2 * 64 * (64 * 32 + 32 * 10) + 2 * 64 * (
        32 * 10 * 2 + 64 * 32
    )
    r = grid_bench.beta_grid_ratio(["digits_mlp", "digits_cnn"], (0.9, 0.99), 2, 3, 1)
    q = grid_bench.roofline(r, reps=1)
    assert q["rate"] > 0 and len(q["rates"]) == 1
    for t, x in q["rows"].items():
        per_step = r["copies"] * r["steps"]
        assert x["per_run_ms"] == pytest.approx(1e3 * r["rows"][t]["cpu"]["per-run"] / per_step)
        assert x["target_ms"] == pytest.approx(x["per_run_ms"] / 10)
        assert x["share_needed"] == pytest.approx(x["floor_ms"] / x["target_ms"])
        least = 1e6 * min(x["mflop"], x["pass_mflop"])
        assert x["floor_ms"] == pytest.approx(1e3 * least / q["rate"])
        assert x["pass_ms"] > 0
        assert x["pass_share"] == pytest.approx(1e9 * x["pass_mflop"] / x["pass_ms"] / q["rate"])
    # the stacked digits MLP (baddbmm) and CNN (grouped convolutions) do their modules' products:
    # the same counts (a count over many copies would take the CNN's backward groups times)
    for t in ("digits_mlp", "digits_cnn"):
        assert q["rows"][t]["pass_mflop"] == pytest.approx(q["rows"][t]["mflop"])
    assert q["total"]["mflop"] == pytest.approx(sum(x["mflop"] for x in q["rows"].values()))
    text = grid_bench.roofline_text(q)
    assert "digits_mlp" in text and "all tasks" in text and "GFLOP/s" in text


def test_beta_grid_bench_refuses_bad_options(grid_bench):
    with pytest.raises(InputError, match="--tasks 'mnist'"):
        grid_bench.main(["--tasks", "mnist"])
    with pytest.raises(InputError, match="--betas"):
        grid_bench.main(["--betas", "0.9,1.5"])
    with pytest.raises(InputError, match="--seeds 1"):
        grid_bench.main(["--seeds", "1"])
    with pytest.raises(InputError, match="--roofline-reps 0"):
        grid_bench.main(["--roofline", "--roofline-reps", "0"])
    with pytest.raises(InputError, match="--roofline with --device 'cuda'"):
        grid_bench.main(["--roofline", "--device", "cuda"])


@pytest.fixture(scope="module")
def grids_bench():
    return _load("bench_batched_grids")


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("gauge_under_adam", dict(dim=4, seeds=2, steps=10)),
        ("prototypes", dict(n=3, seeds=1, steps=20)),
        ("shared_representation", dict(seeds=1, steps=10)),
    ],
)
def test_batched_grids_equal_their_loops_bitwise(bench, grids_bench, name, kwargs):
    r = grids_bench.MEASURES[name](rounds=1, **kwargs)
    assert r["name"] == name and r["max_abs_diff"] == 0.0
    assert all(x > 0 for x in r["wall"] + r["cpu"])
    r["text"] = grids_bench.ratio_text(r)
    assert "loop / batched wall" in r["text"]
    page = bench.markdown_page(
        rows(bench), "x", None, True, "serial", ((0.0,) * 3, (0.0,) * 3), None, [r]
    )
    assert r["text"] in page and "no batched path" not in page


def test_batched_grids_max_difference_and_options(grids_bench):
    nan = float("nan")
    assert grids_bench.max_difference([1.0, nan], [1.0, nan]) == 0.0
    assert grids_bench.max_difference([1.0, nan], [1.0, 2.0]) == float("inf")
    assert grids_bench.max_difference([1.0, 2.0], [1.5, 2.0]) == 0.5
    with pytest.raises(InputError, match="--only 'nope'"):
        grids_bench.main(["--only", "nope"])
    with pytest.raises(InputError, match="--rounds 0"):
        grids_bench.main(["--rounds", "0"])


def test_set_overrides_reach_the_configuration_and_name_the_row(bench, monkeypatch, tmp_path):
    import types

    import gaugedyn.experiments as gx

    seen = {}

    def fake_execute(cfg, out, **kw):
        seen["params"] = dict(cfg.params)
        return types.SimpleNamespace(summary=fake_summary(6, 1.0, 0.1, 0.0, 0.5))

    monkeypatch.setattr(gx, "execute", fake_execute)
    sims = PATH.parents[1] / "simulations" / "prototypes.toml"
    row = bench.run_experiment(sims, False, None, tmp_path, ("design=headline",))
    assert seen["params"]["design"] == "headline"
    assert row["experiment"] == "prototypes --set design=headline" and row["tasks"] == 6
    with pytest.raises(InputError, match="design"):
        bench.run_experiment(sims, False, None, tmp_path, ("design=nope",))
