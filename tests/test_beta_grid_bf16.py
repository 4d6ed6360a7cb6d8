"""The beta grid's bfloat16 reading of its stacked pass (``_batched.train_copies(matmul=)``,
``_protocol.MATMUL``) and its benchmark (``benchmarks/bench_beta_grid_bf16.py``): the pass runs
under autocast to bfloat16 (seen by the builders, not inferred from the last bits), the
transformer's attention stays float32, the losses and gradients stay float32 and near float32's,
bad input is one error line, and the benchmark's record renders on the benchmark page."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.experiments.adam_split import _batched as bt
from gaugedyn.experiments.adam_split import _stacked_text as st
from gaugedyn.experiments.adam_split._protocol import MATMUL
from gaugedyn.experiments.adam_split._stacked import STACKED

ROOT = Path(__file__).resolve().parents[1]
COPIES = [(0.9, 0.99, 11), (0.99, 0.99, 12)]


def _pass(task, matmul):
    built = [bt._build(task, s, torch.float32, "cpu") for _, _, s in COPIES]
    per = [list(b[0].parameters()) for b in built]
    block = [
        torch.stack([ps[j].detach() for ps in per]).requires_grad_(True) for j in range(len(per[0]))
    ]
    draws = [b[2](b[1]) for b in built]
    x, y = torch.stack([d[0] for d in draws]), torch.stack([d[1] for d in draws])
    loss = bt.stacked_losses(task, built[0][0], block, x, y, matmul)
    return loss.detach(), torch.autograd.grad(loss.sum(), block)


def test_the_precisions_are_declared_once():
    assert list(MATMUL) == ["float32", "bfloat16"]


@pytest.mark.parametrize("matmul", list(MATMUL))
def test_the_stacked_pass_runs_under_autocast_only_in_the_bfloat16_reading(matmul, monkeypatch):
    seen = []
    build = STACKED["digits_mlp"]

    def spy(model0, params):
        forward = build(model0, params)

        def run(x):
            seen.append(torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu"))
            return forward(x)

        return run

    monkeypatch.setitem(STACKED, "digits_mlp", spy)
    out = bt.train_copies("digits_mlp", COPIES, 2, 1e-3, matmul=matmul)
    assert seen == [torch.bfloat16 if matmul == "bfloat16" else False] * 2
    assert out["matmul"] == matmul


@pytest.mark.parametrize("task", sorted(STACKED))
def test_bfloat16_losses_and_gradients_are_float32_and_near_float32s(task):
    loss32, grads32 = _pass(task, "float32")
    loss16, grads16 = _pass(task, "bfloat16")
    assert loss16.dtype == torch.float32
    assert all(g.dtype == torch.float32 for g in grads16)
    # bfloat16 keeps 8 significant bits (relative rounding 2^-9 = 2e-3 per operand)
    assert float((loss16 - loss32).abs().max() / loss32.abs().max()) < 2e-2
    g16, g32 = torch.cat([g.flatten() for g in grads16]), torch.cat([g.flatten() for g in grads32])
    assert float((g16 - g32).norm() / g32.norm()) < 0.1


def test_the_transformers_attention_stays_float32_under_autocast(monkeypatch):
    dtypes = []
    sdpa = st.F.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        dtypes.append((q.dtype, k.dtype, v.dtype, torch.is_autocast_enabled("cpu")))
        return sdpa(q, k, v, **kw)

    monkeypatch.setattr(st.F, "scaled_dot_product_attention", spy)
    _pass("char_transformer", "bfloat16")
    assert dtypes and all(d == (torch.float32,) * 3 + (False,) for d in dtypes)


def test_bfloat16_training_follows_float32_for_a_few_steps():
    a = bt.train_copies("digits_mlp", COPIES, 5, 1e-3, reference=[0])
    b = bt.train_copies("digits_mlp", COPIES, 5, 1e-3, reference=[0], matmul="bfloat16")
    assert np.abs(b["loss"] - a["loss"]).max() / np.abs(a["loss"]).max() < 1e-2
    # the update and sums stay float32, checked against the float64 reference as before
    assert b["reference_error"].max() < 1e-4
    assert (b["nonfinite_step"] == -1).all()


def test_bad_precision_and_paths_are_one_error_line():
    with pytest.raises(InputError, match=r"matmul='bf16' is not allowed; choose one of"):
        bt.train_copies("digits_mlp", COPIES, 1, 1e-3, matmul="bf16")
    with pytest.raises(InputError, match=r"forward='loop'.*allowed: matmul='float32'"):
        bt.train_copies("digits_mlp", COPIES, 1, 1e-3, matmul="bfloat16", forward="loop")
    with pytest.raises(InputError, match=r"dtype=torch.float64.*allowed"):
        bt.train_copies("digits_mlp", COPIES, 1, 1e-3, matmul="bfloat16", dtype=torch.float64)


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_stores_a_record_the_page_renders(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = _module(ROOT / "benchmarks" / "bench_beta_grid_bf16.py", "bench_beta_grid_bf16")
    path = tmp_path / "beta_grid_bf16.json"
    args = ["--tasks", "teacher_student", "--seeds", "1", "--steps", "2", "--rounds", "1"]
    assert bench.main([*args, "--pass-rounds", "1", "--json", str(path)]) == 0
    record = json.loads(path.read_text())
    data = record["data"]
    assert record["machine"]["cpu"] and data["copies"] == 16
    assert data["faster"] == (data["program"]["total"]["ratio"]["cpu"][0] > 1.0)
    page = _module(ROOT / "tools" / "bench_page.py", "bench_page").render_beta_grid_bf16(record)
    assert "teacher_student" in page and "bfloat16 is" in page
    assert ("is faster" in page) == data["faster"]
    # the verdict reads the smallest per-round ratio: a round where bfloat16 lost is not faster
    data["program"]["total"]["ratio"]["cpu"] = [0.9, 1.5, 2.0]
    assert not bench.faster(data)
    with pytest.raises(InputError, match="--seeds 0 is not allowed"):
        bench.main(["--seeds", "0"])
    sys.modules.pop("bench_beta_grid_bf16", None)


def _finding(fid, verdict, est, lo, hi, readings=None):
    detail = {
        k: {"verdict": v, "estimate": e, "interval": [a, b]}
        for k, (v, e, a, b) in (readings or {}).items()
    }
    return {
        "id": fid,
        "kind": "finding",
        "verdict": verdict,
        "measured": est,
        "interval": [lo, hi],
        "tolerance": {"reading_detail": detail} if detail else {},
    }


def _summary(*claims):
    return {"claims": list(claims), "published": {"command": "c", "date": "d"}}


def test_the_comparison_meets_the_bar_only_with_every_verdict_and_small_shifts():
    from gaugedyn.experiments.adam_split import _extensions as bx
    from gaugedyn.experiments.adam_split._protocol import MATMUL_SHIFT_TOL

    two = {"current/squared": ("HELD", 1.0, 0.0, 2.0), "memory/squared": ("HELD", 1.0, 0.0, 2.0)}
    base = _summary(
        _finding("finding:a:x", "HELD", 1.0, 0.0, 2.0, two),
        _finding("finding:a:smooth", "NOT HELD", 5.0, 4.0, 6.0),
    )
    # every estimate moved by 5% of the float32 interval width (2): the bar is met
    near = {k: (v, e + 0.1, a, b) for k, (v, e, a, b) in two.items()}
    other = _summary(
        _finding("finding:a:x", "HELD", 1.1, 0.1, 2.1, near),
        _finding("finding:a:smooth", "NOT HELD", 5.05, 4.0, 6.0),
    )
    c = bx.compare(base, other)
    assert (
        c["meets"] and c["findings_agree"] == 2 and (c["readings_agree"], c["readings"]) == (3, 3)
    )
    assert c["largest_shift"] == pytest.approx(0.05)
    # one reading's estimate moved past the bar: not met, and the table says so
    far = dict(near, **{"memory/squared": ("HELD", 1.0 + 2.2 * MATMUL_SHIFT_TOL, 0.0, 2.0)})
    other["claims"][0] = _finding("finding:a:x", "HELD", 1.1, 0.1, 2.1, far)
    c = bx.compare(base, other)
    assert not c["meets"] and c["largest_at"] == "finding:a:x"
    # a reading's verdict changed, the finding's too: not met, the row marks it
    flip = dict(near, **{"memory/squared": ("UNRESOLVED", 1.1, 0.1, 2.1)})
    other["claims"][0] = _finding("finding:a:x", "depends on the reading", 1.1, 0.1, 2.1, flip)
    c = bx.compare(base, other)
    assert not c["meets"] and c["findings_agree"] == 1 and c["readings_agree"] == 2
    other["claims"].append(
        {"id": "grid.check", "kind": "check", "passed": False, "measured": 5e-4, "tolerance": 1e-4}
    )
    base["claims"].append(
        {"id": "grid.check", "kind": "check", "passed": True, "measured": 1e-7, "tolerance": 1e-4}
    )
    lines = bx.table({"published": base, "float32": base, "bfloat16": other})
    assert "is **not met**" in lines[2] and "**depends on the reading**" in "\n".join(lines)
    assert (
        "bfloat16 run's 0 of 1 checks passed; failed: `grid.check` (measured 0.0005, " in lines[2]
    )
    assert "(the float32 run's 1 of 1 checks passed)" in lines[2]
    assert lines[0].startswith("The fresh float32 run (`c`, d) has the published run's per-seed")
    assert bx.table({"published": base, "float32": base, "bfloat16": None})[0].startswith(
        "Not published yet: bfloat16"
    )


def test_same_values_counts_findings_with_equal_per_seed_values():
    from gaugedyn.experiments.adam_split import _extensions as bx

    a = _summary(_finding("finding:a", "HELD", 1, 0, 2), _finding("finding:b", "HELD", 1, 0, 2))
    b = _summary(_finding("finding:a", "HELD", 1, 0, 2), _finding("finding:b", "HELD", 1, 0, 2))
    a["claims"][0]["per_seed"] = b["claims"][0]["per_seed"] = [0.1, 0.2]
    a["claims"][1]["per_seed"], b["claims"][1]["per_seed"] = [0.1, 0.2], [0.1, 0.25]
    assert bx.same_values(a, b) == (1, 2)


def test_the_grid_declares_the_reading_and_leaves_float32_tasks_as_they_were():
    from gaugedyn.experiments.adam_split.beta_grid import EXPERIMENT
    from gaugedyn.publish import extension_of

    config = {k: p.default for k, p in EXPERIMENT.params.items()}
    plain = EXPERIMENT.tasks(config)
    assert all("matmul" not in t for t in plain)
    bf16 = EXPERIMENT.tasks(dict(config, matmul="bfloat16"))
    assert [dict(t, matmul="float32") for t in bf16] == [dict(t, matmul="float32") for t in plain]
    assert all(t["matmul"] == "bfloat16" for t in bf16)
    run = {"experiment": "beta_grid", "command": {"overrides": ["matmul=bfloat16"]}}
    assert extension_of(run) == "bfloat16"
