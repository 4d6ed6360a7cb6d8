"""The recorder against torch.optim.Adam/AdamW on a real model, in float64, on every path."""

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import NORM_NAMES, AdamRecorder, adam_moments, decompose_history
from gaugedyn.experiments.adam_split.tasks import TASKS, _setup, train_task

LR = 1e-3


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # small models: one thread is fastest and avoids contention
    yield
    torch.set_num_threads(before)


def _rel(ref, got):
    """Error normalised per step by the step's largest reference entry (rows are steps)."""
    ref, got = np.atleast_2d(ref), np.atleast_2d(got)
    scale = np.max(np.abs(ref), axis=1, keepdims=True)
    return float(np.max(np.abs(ref - got) / np.where(scale > 0, scale, 1.0)))


def _digits_run(cls, wd, path, betas=(0.9, 0.97), steps=200):
    """Train the digits MLP in float64; returns recorder arrays, theta_0, the optimizer, params."""
    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model, batch, loss_fn, _ = _setup("digits_mlp", gen, torch.float64, "cpu")
    model = model.double()
    kw = {"fused": True} if path == "fused" else {"foreach": path == "foreach"}
    opt = cls(model.parameters(), lr=LR, betas=betas, eps=1e-8, weight_decay=wd, **kw)
    params = list(model.parameters())
    rec = AdamRecorder(opt, sample=10**9)
    theta0 = torch.cat([p.detach().reshape(-1) for p in params]).numpy().copy()
    for _ in range(steps):
        x, y = batch(gen)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    arrays, meta = rec.export()
    return arrays, meta, theta0, opt, params


CASES = [
    (torch.optim.Adam, 0.0, "single"),
    (torch.optim.Adam, 0.0, "foreach"),
    (torch.optim.Adam, 1e-2, "single"),
    (torch.optim.Adam, 1e-2, "foreach"),
    (torch.optim.AdamW, 0.0, "single"),
    (torch.optim.AdamW, 1e-2, "single"),
    (torch.optim.AdamW, 1e-2, "foreach"),
    (torch.optim.Adam, 1e-2, "fused"),
    (torch.optim.AdamW, 1e-2, "fused"),
]


@pytest.mark.parametrize("cls,wd,path", CASES, ids=[f"{c.__name__}-wd{w}-{p}" for c, w, p in CASES])
def test_recorder_matches_torch_adam(cls, wd, path):
    a, meta, theta0, opt, params = _digits_run(cls, wd, path)
    g = a["sample_grad_g0"]
    assert g.shape == (200, sum(p.numel() for p in params))
    b1, b2 = opt.param_groups[0]["betas"]
    # torch's own final state against a from-scratch EMA of the recorded effective gradients
    mom = adam_moments(g, b1, b2)
    m_torch = torch.cat([opt.state[p]["exp_avg"].reshape(-1) for p in params]).numpy()
    v_torch = torch.cat([opt.state[p]["exp_avg_sq"].reshape(-1) for p in params]).numpy()
    assert _rel(mom["m"][-1], m_torch) < 1e-12 and _rel(mom["v"][-1], v_torch) < 1e-12
    assert _rel(mom["m"], a["sample_m_g0"]) < 1e-12 and _rel(mom["v"], a["sample_v_g0"]) < 1e-12
    # the recorder's update is the parameter change torch applied
    theta = np.vstack([theta0, a["sample_param_g0"]])
    shrink = (1 - LR * wd) if cls is torch.optim.AdamW else 1.0
    applied = -(theta[1:] - shrink * theta[:-1]) / LR
    assert np.max(np.abs(applied - a["sample_update_g0"])) < 1e-12
    # and the parts are those of the pure decomposition of the gradient history
    P = decompose_history(g, b1, b2, 1e-8)
    for k in ("update", "sign", "lag", "transition", "ratio", "eps"):
        assert np.max(np.abs(getattr(P, k) - a[f"sample_{k}_g0"])) < 1e-12, k
    total = sum(a[f"sample_{k}_g0"] for k in ("sign", "lag", "transition", "ratio", "eps"))
    assert np.max(np.abs(total - a["sample_update_g0"])) < 1e-12
    # the norms agree with the sampled coordinates (the sample is every coordinate)
    full = {k: P.as_dict()[k] for k in ("sign", "lag", "transition", "ratio", "eps", "update")}
    full["residual"] = P.residual
    unorm = np.linalg.norm(P.update, axis=1)
    for k, x in full.items():
        ref = np.linalg.norm(x, axis=1)
        got = a["norms"][:, 0, NORM_NAMES.index(k)]
        assert np.all(np.abs(got - ref) <= 1e-10 * ref + 1e-12 * unorm), k
    frac = np.mean(P.transition != 0, axis=1)
    assert np.allclose(a["transition_frac"][:, 0], frac, atol=1e-12)
    assert meta["groups"][0]["weight_decay"] == wd and meta["skipped_steps"] == 0


@pytest.mark.parametrize("path", ["single", "foreach", "fused"])
def test_lag_exactly_zero_on_diagonal_recorder(path):
    a, _, _, opt, params = _digits_run(torch.optim.Adam, 1e-2, path, betas=(0.95, 0.95), steps=100)
    assert np.all(a["sample_lag_g0"] == 0.0)
    assert np.all(a["norms"][:, :, NORM_NAMES.index("lag")] == 0.0)
    assert np.all(a["sample_w_g0"] == a["sample_m_g0"])


@pytest.mark.parametrize("task", TASKS)
def test_every_task_parts_sum_and_tied_lag_zero(task):
    r = train_task(task, 0.9, 0.9, seed=1, steps=15, dtype=torch.float64, sample=400)
    assert np.all(r["norms"][:, NORM_NAMES.index("lag")] == 0.0)
    total = sum(r[f"sample_{k}_g0"] for k in ("sign", "lag", "transition", "ratio", "eps"))
    assert np.max(np.abs(total - r["sample_update_g0"])) < 1e-12
    u = train_task(task, 0.9, 0.99, seed=1, steps=15, dtype=torch.float64)
    assert np.all(u["norms"][1:, NORM_NAMES.index("lag")] > 0.0)
    assert np.isfinite(u["final_loss"]) and u["loss"].shape == (15,)


def test_train_task_deterministic_and_learns():
    a = train_task("teacher_student", 0.9, 0.99, seed=np.random.SeedSequence(5), quick=True)
    b = train_task("teacher_student", 0.9, 0.99, seed=np.random.SeedSequence(5), quick=True)
    assert np.array_equal(a["loss"], b["loss"]) and a["final_loss"] == b["final_loss"]
    assert a["final_loss"] < a["initial_loss"]
    assert np.allclose(a["share_sign"] + a["share_lag"] + a["share_residual"], 1.0)


def _scaler_run(fused, inject):
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.99), fused=fused)
    rec = AdamRecorder(opt, sample=100)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x = torch.randn(16, 5)
    ws, params, true = [], [], []
    for t in range(6):
        true.append(
            torch.cat(
                [
                    q.reshape(-1)
                    for q in torch.autograd.grad((model(x) ** 2).mean(), list(model.parameters()))
                ]
            ).numpy()
        )
        opt.zero_grad()
        scaler.scale((model(x) ** 2).mean()).backward()
        if t in inject:
            model.weight.grad[0, 0] = float("inf")
        before = [p.detach().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        changed = any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
        params.append(changed)
        ws.append({k: v.clone() for k, v in rec._w.items()})
    return rec, ws, params, np.array(true)


@pytest.mark.parametrize("fused", [False, True])
def test_amp_skipped_steps_are_not_recorded(fused):
    rec, ws, changed, true = _scaler_run(fused, inject={0, 3})
    assert changed == [False, True, True, False, True, True]
    arrays, meta = rec.export()
    assert len(rec) == 4 and list(arrays["step"]) == [1, 2, 3, 4]
    assert meta["skipped_steps"] == (2 if fused else 0)
    for k in ws[3]:
        assert torch.equal(ws[2][k], ws[3][k])  # w untouched by the skipped step
    # the recorded gradients are the unscaled ones of the steps that were taken
    assert np.allclose(arrays["sample_grad_g0"], true[[1, 2, 4, 5]], rtol=1e-5, atol=1e-7)
    total = sum(arrays[f"sample_{k}_g0"] for k in ("sign", "lag", "transition", "ratio", "eps"))
    assert np.allclose(total, arrays["sample_update_g0"], atol=1e-6)


def test_step_without_optimizer_step_and_detach():
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.Adam(model.parameters())
    rec = AdamRecorder(opt)
    model(torch.ones(1, 3)).sum().backward()
    assert len(rec) == 0
    opt.step()
    assert len(rec) == 1
    rec.detach()
    opt.step()
    assert len(rec) == 1


def test_recorder_bad_input():
    p = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(InputError, match="SGD"):
        AdamRecorder(torch.optim.SGD([p], lr=0.1))
    with pytest.raises(InputError, match="amsgrad"):
        AdamRecorder(torch.optim.Adam([p], amsgrad=True))
    with pytest.raises(InputError, match="sample"):
        AdamRecorder(torch.optim.Adam([p]), sample=-1)
    with pytest.raises(InputError, match="task"):
        train_task("mnist", 0.9, 0.9)


def test_metadata_and_multiple_groups():
    a, b = torch.nn.Parameter(torch.randn(4)), torch.nn.Parameter(torch.randn(3))
    opt = torch.optim.AdamW([{"params": [a]}, {"params": [b], "betas": (0.8, 0.8)}], lr=0.1)
    rec = AdamRecorder(opt)
    for _ in range(3):
        opt.zero_grad()
        ((a**2).sum() + (b**3).sum()).backward()
        opt.step()
    arrays, meta = rec.export()
    assert arrays["norms"].shape == (3, 2, len(NORM_NAMES))
    assert np.all(arrays["norms"][:, 1, NORM_NAMES.index("lag")] == 0.0)
    assert np.all(arrays["norms"][1:, 0, NORM_NAMES.index("lag")] > 0.0)
    assert meta["groups"][1]["betas"] == [0.8, 0.8] and meta["groups"][0]["decoupled_weight_decay"]
    assert "torch" in meta["versions"] and "lag" in meta["definitions"]
    assert np.allclose(sum(rec.shares(0).values()), 1.0)


def test_every_k_steps_keeps_w_exact():
    import json

    torch.manual_seed(1)
    model = torch.nn.Linear(6, 2).double()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.8, 0.99))
    rec = AdamRecorder(opt, every=3, sample=100)
    x = torch.randn(8, 6, dtype=torch.float64)
    grads = []
    for _ in range(10):
        opt.zero_grad()
        (model(x).sin() ** 2).mean().backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy().copy())
        opt.step()
    arrays, meta = rec.export()
    assert list(arrays["step"]) == [3, 6, 9] and meta["skipped_steps"] == 0
    P = decompose_history(np.array(grads), 0.8, 0.99, 1e-8)
    assert np.max(np.abs(arrays["sample_lag_g0"] - P.lag[[2, 5, 8]])) < 1e-12
    json.dumps(meta)
    with pytest.raises(InputError, match="every"):
        AdamRecorder(opt, every=0)


def test_passes_over_parameter_memory():
    a, b = torch.nn.Parameter(torch.randn(30)), torch.nn.Parameter(torch.randn(10))
    opt = torch.optim.Adam([{"params": [a]}, {"params": [b], "betas": (0.8, 0.8)}], lr=0.1)
    passes = AdamRecorder(opt).passes()
    # a (30 of 40 elements): g, m, v, w read and w written; b (tied betas): g, m, v read
    assert passes["reads"] == pytest.approx((30 * 4 + 10 * 3) / 40)
    assert passes["writes"] == pytest.approx(30 / 40)
    assert passes["total"] == pytest.approx(passes["reads"] + passes["writes"])
    untied = AdamRecorder(torch.optim.Adam([torch.nn.Parameter(torch.randn(5))])).passes()
    assert untied == {"reads": 4.0, "writes": 1.0, "total": 5.0}
