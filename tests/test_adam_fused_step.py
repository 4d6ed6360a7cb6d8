"""``AdamRecorder(fuse_step=True)``: the optimizer's update done by the recorder's native sweep
trains exactly as ``torch.optim.Adam`` does and records what the hooks' path records; what it
does not support is refused with one sentence."""

import copy

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import AdamRecorder
from gaugedyn.adam import _native as native
from gaugedyn.adam import _recorder as R

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

SETTINGS = {
    "adam": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.9, 0.99)),
    "tied": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.9, 0.9)),
    "eps0-maximize": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, eps=0.0, maximize=True),
    "adamw-foreach-false": lambda m: torch.optim.AdamW(
        m.parameters(), lr=3e-3, weight_decay=0.0, foreach=False
    ),
    "groups": lambda m: torch.optim.Adam(
        [
            {"params": list(m.parameters())[:2], "betas": (0.8, 0.95), "lr": 2e-2},
            {"params": list(m.parameters())[2:], "betas": (0.9, 0.9), "eps": 1e-6},
        ],
        lr=1e-2,
    ),
}


def _train(model, shape, dtype, make_opt, every, steps=8, fuse=None, closure_at=()):
    """Train a copy; ``fuse``: None (no recorder), False (hooks' path) or True (fused step)."""
    model = model.to(dtype)
    opt = make_opt(model)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    rec = None if fuse is None else AdamRecorder(opt, every=every, fuse_step=fuse)
    gen = torch.Generator().manual_seed(5)
    for t in range(steps):
        x = torch.randn(*shape, generator=gen, dtype=dtype)

        def closure(x=x):
            opt.zero_grad(set_to_none=True)
            loss = model(x).sin().pow(2).mean()
            loss.backward()
            return loss

        if t in closure_at:  # gradients computed, then passed as step(closure): hooks' path
            closure()
            opt.step(lambda: None)
        else:
            closure()
            opt.step()
        sched.step()
    return rec, opt, model


def _fused_here(dtype=torch.float32) -> None:
    """Go on where the fused step reproduces torch's bits on this machine (its probe); elsewhere
    check that the recorder refuses it, as it must, and skip the rest of the test: the probe
    compares torch's own kernels, whose last bits are the machine's (tests must pass on any
    x86-64 machine)."""
    if R.fused_step_matches_torch(dtype):
        return
    opt = torch.optim.Adam(torch.nn.Linear(3, 2).to(dtype).parameters())
    with pytest.raises(InputError, match="bit for bit"):
        AdamRecorder(opt, fuse_step=True)
    pytest.skip(f"the fused step does not reproduce torch's {dtype} bits here: refused")


def _counted(monkeypatch):
    calls = []
    real = native.adam_step_many

    def counted(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(native, "adam_step_many", counted)
    return calls


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("name", list(MODELS))
def test_fused_step_trains_as_torch_adam_and_records_as_the_hooks(
    monkeypatch, name, setting, dtype, every
):
    _fused_here(dtype)
    make, shape = MODELS[name]
    torch.manual_seed(0)
    base = make()
    calls = _counted(monkeypatch)
    fused, opt_f, model_f = _train(
        copy.deepcopy(base), shape, dtype, SETTINGS[setting], every, fuse=True, closure_at=(4,)
    )
    groups = len(opt_f.param_groups)
    # step 1 initialises torch's state (hooks' path), step 5 passes a closure (hooks' path)
    assert len(calls) == groups * 6 and all(calls)
    hooks, opt_h, model_h = _train(
        copy.deepcopy(base), shape, dtype, SETTINGS[setting], every, fuse=False
    )
    _, opt_p, plain = _train(copy.deepcopy(base), shape, dtype, SETTINGS[setting], every)
    assert len(calls) == groups * 6
    # the parameters and torch's state exactly as torch.optim.Adam leaves them
    for p, q in zip(model_f.parameters(), plain.parameters(), strict=True):
        assert torch.equal(p, q)
        sf, sp = opt_f.state[p], opt_p.state[q]
        assert torch.equal(sf["exp_avg"], sp["exp_avg"])
        assert torch.equal(sf["exp_avg_sq"], sp["exp_avg_sq"])
        assert float(sf["step"]) == float(sp["step"]) == 8.0
        assert p.grad is not None  # the gradients are given back after the step
    assert fused.metadata()["fuse_step"] and not hooks.metadata()["fuse_step"]
    a, b = fused.export()[0], hooks.export()[0]
    np.testing.assert_array_equal(a["step"], b["step"])
    assert len(a["step"]) == (8 if every == 1 else 2)
    scale = np.abs(b["norms"]).max(axis=-1, keepdims=True)
    assert np.all(scale > 0) and np.max(np.abs(a["norms"] - b["norms"]) / scale) < 1e-12
    np.testing.assert_allclose(a["transition_frac"], b["transition_frac"], rtol=0, atol=1e-12)
    for p, q in zip(model_f.parameters(), model_h.parameters(), strict=True):
        wf, wh = fused._w.get(p), hooks._w.get(q)
        assert (wf is None) == (wh is None)
        if wf is not None:
            np.testing.assert_allclose(wf.numpy(), wh.numpy(), rtol=1e-6, atol=1e-30)


def test_fused_step_takes_the_hooks_path_where_the_group_is_not_in_step(monkeypatch):
    """A parameter without a gradient at one step leaves the group at two step counts: those
    steps go through torch's own update, recorded by the hooks, and training stays exact."""
    _fused_here()
    calls = _counted(monkeypatch)
    torch.manual_seed(2)
    a0, b0 = torch.randn(300), torch.randn(40)
    out = {}
    for fuse in (None, True):
        a, b = torch.nn.Parameter(a0.clone()), torch.nn.Parameter(b0.clone())
        opt = torch.optim.Adam([a, b], lr=1e-2)
        rec = None if fuse is None else AdamRecorder(opt, fuse_step=True)
        gen = torch.Generator().manual_seed(0)
        for t in range(6):
            opt.zero_grad(set_to_none=True)
            x = torch.randn(300, generator=gen)
            loss = (a * x).sin().sum() + ((b * x[:40]).cos().sum() if t != 2 else 0.0)
            loss.backward()
            opt.step()
        out[fuse] = (a.detach(), b.detach(), rec)
    assert torch.equal(out[None][0], out[True][0]) and torch.equal(out[None][1], out[True][1])
    assert len(out[True][2]) == 6 and 0 < len(calls) < 5 and all(calls)


@pytest.mark.parametrize(
    "opt_kwargs,rec_kwargs,word",
    [
        ({"foreach": True}, {}, "foreach=True"),
        ({"weight_decay": 1e-2}, {}, "weight_decay=0.01"),
        ({"capturable": True}, {}, "capturable=True"),
        ({"lr": torch.tensor(1e-2)}, {}, "a tensor lr"),
        ({}, {"sample": 5}, "sample=5"),
        ({}, {"backend": "eager"}, "backend='eager'"),
    ],
)
def test_fused_step_refuses_what_it_does_not_support(opt_kwargs, rec_kwargs, word):
    opt = torch.optim.Adam(torch.nn.Linear(3, 2).parameters(), **opt_kwargs)
    with pytest.raises(InputError) as err:
        AdamRecorder(opt, fuse_step=True, **rec_kwargs)
    assert R.FUSED_SUPPORT in str(err.value) and f"; {word}" in str(err.value)
    half = torch.optim.Adam(torch.nn.Linear(3, 2).half().parameters())
    with pytest.raises(InputError, match="torch.float16 parameter"):
        AdamRecorder(half, fuse_step=True)


def test_fused_step_refused_where_torch_is_not_reproduced(monkeypatch):
    monkeypatch.setattr(R, "_FUSED_BITS", {torch.float32: False})
    opt = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    with pytest.raises(InputError, match="does not reproduce.*bit for bit.*fuse_step=False"):
        AdamRecorder(opt, fuse_step=True)
    assert AdamRecorder(opt).fuse_step is False  # the default is untouched


def test_fused_step_spans_blocks_and_does_not_depend_on_the_thread_count():
    """100,003 entries (four blocks and a partial SIMD tail) on 1 and 3 threads: the same bits
    as torch.optim.Adam and as each other, sums added in block order; the sums as the hooks'."""
    _fused_here()
    gen = torch.Generator().manual_seed(7)
    p0 = torch.randn(100_003, generator=gen)
    grads = [torch.randn(100_003, generator=gen) for _ in range(4)]

    def run(threads, fuse):
        torch.set_num_threads(threads)
        p = torch.nn.Parameter(p0.clone())
        opt = torch.optim.Adam([p], lr=1e-2, betas=(0.9, 0.99))
        rec = None if fuse is None else AdamRecorder(opt, fuse_step=fuse)
        for g in grads:
            p.grad = g.clone()
            opt.step()
        return p.detach(), opt.state[p], rec

    plain = run(1, None)
    one, three, hooks = run(1, True), run(3, True), run(1, False)
    for got in (one, three):
        assert torch.equal(got[0], plain[0])
        assert torch.equal(got[1]["exp_avg_sq"], plain[1]["exp_avg_sq"])
    np.testing.assert_array_equal(one[2].norms(), three[2].norms())  # blocks added in order
    a, b = one[2].norms(), hooks[2].norms()
    assert np.max(np.abs(a - b) / np.abs(b).max(axis=-1, keepdims=True)) < 1e-6


def test_passes_count_the_update_the_fused_step_makes():
    _fused_here()
    a, b = torch.nn.Parameter(torch.randn(30)), torch.nn.Parameter(torch.randn(10))
    opt = torch.optim.Adam([{"params": [a]}, {"params": [b], "betas": (0.8, 0.8)}], lr=0.1)
    # a: p, g, m, v, w read, p, m, v, w written; b (tied): p, g, m, v read, p, m, v written
    assert AdamRecorder(opt, fuse_step=True).passes() == {
        "reads": pytest.approx((30 * 5 + 10 * 4) / 40),
        "writes": pytest.approx((30 * 4 + 10 * 3) / 40),
        "total": pytest.approx((30 * 9 + 10 * 7) / 40),
    }
