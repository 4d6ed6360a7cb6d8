"""The recorder's native fast path (one kernel call per parameter group and step,
``AdamRecorder._sweep_group``) against its per-tensor path, on several models and optimizer
settings; and the kernel's list entry point against its one-tensor entry point."""

import copy

import numpy as np
import pytest
import torch

from gaugedyn.adam import AdamRecorder
from gaugedyn.adam import _native as native
from gaugedyn.adam._decomposition import bias_corrections

pytestmark = pytest.mark.skipif(
    not native.available(), reason=f"native extension does not build: {native._ERROR}"
)


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(12, 40), torch.nn.Tanh(), torch.nn.Linear(40, 30), torch.nn.Linear(30, 3)
    )


def _conv():
    return torch.nn.Sequential(
        torch.nn.Conv2d(2, 6, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(6 * 4 * 4, 3, bias=False),
    )


MODELS = {"mlp": (_mlp, (16, 12)), "conv": (_conv, (16, 2, 6, 6))}


def _train(model, shape, dtype, make_opt, every, steps=7, recorder=True):
    torch.manual_seed(0)
    model = model.to(dtype)
    opt = make_opt(model)
    rec = AdamRecorder(opt, every=every, backend="native") if recorder else None
    gen = torch.Generator().manual_seed(5)
    for _ in range(steps):
        x = torch.randn(*shape, generator=gen, dtype=dtype)
        opt.zero_grad(set_to_none=True)
        model(x).sin().pow(2).mean().backward()
        opt.step()
    return rec, opt, model


SETTINGS = {
    "adam": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.9, 0.99)),
    "tied": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.9, 0.9)),
    "eps0-foreach": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, eps=0.0, foreach=True),
    "coupled-wd-maximize": lambda m: torch.optim.Adam(
        m.parameters(), lr=1e-2, weight_decay=0.1, maximize=True
    ),
    "adamw": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1),
    "groups": lambda m: torch.optim.Adam(
        [
            {"params": list(m.parameters())[:2], "betas": (0.8, 0.95)},
            {"params": list(m.parameters())[2:], "betas": (0.9, 0.9), "eps": 1e-6},
        ],
        lr=1e-2,
    ),
}


def _count_group_calls(monkeypatch):
    calls = []
    real = native.adam_sums_many

    def counted(*args, **kwargs):
        done = real(*args, **kwargs)
        calls.append(done)
        return done

    monkeypatch.setattr(native, "adam_sums_many", counted)
    return calls


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("name", list(MODELS))
def test_group_sweep_records_what_the_per_tensor_path_records(
    monkeypatch, name, setting, dtype, every
):
    make, shape = MODELS[name]
    base = make()
    calls = _count_group_calls(monkeypatch)
    fast, opt_f, model_f = _train(copy.deepcopy(base), shape, dtype, SETTINGS[setting], every)
    groups = len(opt_f.param_groups)
    assert calls and all(calls) and len(calls) == groups * len(fast)  # the fast path ran
    with monkeypatch.context() as mp:
        mp.setattr(AdamRecorder, "_sweep_group", lambda self, *a: False)
        slow, _, model_s = _train(copy.deepcopy(base), shape, dtype, SETTINGS[setting], every)
    assert len(calls) == groups * len(fast)  # the reference run did not take it
    _, _, plain = _train(
        copy.deepcopy(base), shape, dtype, SETTINGS[setting], every, recorder=False
    )
    a, b = fast.export()[0], slow.export()[0]
    assert len(a["step"]) == (7 if every == 1 else 2)
    np.testing.assert_array_equal(a["step"], b["step"])
    # the same per-tensor sums, added in another order (per group, then scaled)
    assert np.all(np.isfinite(a["norms"])) and np.all(a["norms"][..., -1] > 0)
    np.testing.assert_allclose(a["norms"], b["norms"], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(a["transition_frac"], b["transition_frac"])  # counts
    for p, q in zip(model_f.parameters(), model_s.parameters(), strict=True):
        wf, ws = fast._w.get(p), slow._w.get(q)
        b1, b2 = fast._group[id(p)]["betas"]
        assert (wf is None) == (ws is None) == (b1 == b2)  # tied betas: w is m
        if wf is not None:  # the same kernel sweep updates each w on both paths
            assert torch.equal(wf, ws)
    # the recorder reads the optimizer; it never changes what it trains
    for p, q in zip(model_f.parameters(), plain.parameters(), strict=True):
        assert torch.equal(p, q)


def test_ineligible_groups_take_the_per_tensor_path(monkeypatch):
    """A non-contiguous parameter or a group of two dtypes: the list call declines and the
    per-tensor path records the same as the eager reference."""
    calls = _count_group_calls(monkeypatch)
    torch.manual_seed(1)
    a = torch.nn.Parameter(torch.randn(6, 4, 3, 3).to(memory_format=torch.channels_last))
    b = torch.nn.Parameter(torch.randn(50, dtype=torch.float64))
    c = torch.nn.Parameter(torch.randn(40))
    out = {}
    for backend in ("native", "eager"):
        params = [x.detach().clone().requires_grad_() for x in (a, b, c)]
        params[0].data = params[0].data.to(memory_format=torch.channels_last)
        opt = torch.optim.Adam([{"params": [params[0]]}, {"params": params[1:]}], lr=1e-2)
        rec = AdamRecorder(opt, backend=backend)
        gen = torch.Generator().manual_seed(2)
        for _ in range(4):
            opt.zero_grad()
            r = [torch.randn(q.shape, generator=gen, dtype=torch.float64) for q in params]
            sum((q.double().sin() * x).sum() for q, x in zip(params, r)).backward()
            opt.step()
        out[backend] = rec.norms()
    assert len(calls) == 8 and not any(calls)  # asked, declined, every group and step
    scale = np.abs(out["eager"]).max(axis=-1, keepdims=True)  # the lag is 0 +- rounding at t=1
    assert np.max(np.abs(out["native"] - out["eager"]) / scale) < 1e-5


def _state(n, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    m, w, g = (0.3 * torch.randn(n, generator=gen, dtype=dtype) for _ in range(3))
    v = torch.rand(n, generator=gen, dtype=dtype) ** 4
    g[::7] = 0.0
    return m, v, w, g


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("tied", [False, True])
def test_list_call_adds_the_one_tensor_sums(dtype, tied):
    states = [_state(n, dtype, s) for s, n in enumerate((5, 3000, 70_000))]
    bc1, bc2, c = bias_corrections(4, 0.9, 0.99)
    k, alpha, epsc = bc1 / bc2, c / bc2, 1e-8 * c
    lerp = None if tied else 0.01
    ref = np.zeros(8)
    w_one = []
    for m, v, w, g in states:
        w1 = w.clone()
        out = torch.zeros(8, dtype=torch.float64)
        native.adam_sums(m, v, m if tied else w1, g, k, alpha, epsc, lerp, tied, out)
        ref += out.numpy()
        w_one.append(w1)
    ws = [w.clone() for _, _, w, _ in states]
    ms = [s[0] for s in states]
    out = torch.full((8,), np.nan, dtype=torch.float64)
    assert native.adam_sums_many(
        ms, [s[1] for s in states], ms if tied else ws, [s[3] for s in states],
        k, alpha, epsc, lerp, tied, out,
    )  # fmt: skip
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-13, atol=0)
    for got, want, (_, _, w0, _) in zip(ws, w_one, states, strict=True):
        assert torch.equal(got, want if not tied else w0)  # one sweep's elementwise update


def test_list_call_declines_without_touching_anything():
    m, v, w, g = _state(100, torch.float32, 0)
    w0 = w.clone()
    out = torch.full((8,), -7.0, dtype=torch.float64)
    bad = [
        ([m, m], [v, v.double()], [w, w], [g, g]),  # two dtypes
        ([m], [v], [w], [g[:50]]),  # sizes differ
        ([m], [v], [w.reshape(10, 10).t()], [g]),  # not contiguous
        ([m.half()], [v.half()], [w.half()], [g.half()]),  # not float32/float64
        ([], [], [], []),
    ]
    for ms, vs, ws, gs in bad:
        assert not native.adam_sums_many(ms, vs, ws, gs, 1.0, 1.0, 0.0, 0.5, False, out)
        assert torch.equal(w, w0) and bool((out == -7.0).all())
