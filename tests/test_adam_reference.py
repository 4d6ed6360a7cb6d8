"""One reference implementation of Adam's algebra (``split_update``) and every fast path against it:
the recorder's chunk sums, its fused expression, the native C++ kernel, the trainer's own Adam,
the streaming probe; the recorder attached after training started, against a hand computation."""

import numpy as np
import pytest
import torch

from gaugedyn.adam import NORM_NAMES, AdamRecorder, StreamingSplit, part_norms, split_update
from gaugedyn.adam import _native as native
from gaugedyn.adam._decomposition import bias_corrections
from gaugedyn.adam._recorder import _chunk_sums, _sums_expr, sum_scale


def _state(n, seed):
    gen = torch.Generator().manual_seed(seed)
    g = torch.randn(n, generator=gen, dtype=torch.float64)
    m = 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    w = m + 0.1 * torch.randn(n, generator=gen, dtype=torch.float64)
    v = torch.rand(n, generator=gen, dtype=torch.float64) ** 2 + m * m
    g[::7] = 0.0
    return m, v, w, g


def _chunk(m, v, w, g, k, alpha, epsc, tied):
    out = torch.zeros(8, dtype=m.dtype)
    _chunk_sums(
        m, v, None if tied else w, g, k, alpha, epsc, torch.empty(5, m.numel(), dtype=m.dtype), out
    )
    return out.numpy()


def _expr(m, v, w, g, k, alpha, epsc, tied):
    consts = torch.tensor([k, alpha, epsc], dtype=m.dtype)
    return _sums_expr(m, v, m if tied else w, g, consts).numpy()


def _kernel(m, v, w, g, k, alpha, epsc, tied):
    out = torch.zeros(8, dtype=torch.float64)
    native.adam_sums(m, v, m if tied else w, g, k, alpha, epsc, None, tied, out)
    return out.numpy()


PATHS = [
    _chunk,
    _expr,
    pytest.param(
        _kernel,
        marks=pytest.mark.skipif(
            not native.available(), reason=f"native kernel unavailable: {native._ERROR}"
        ),
    ),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "step, betas, eps",
    [
        (1, (0.9, 0.999), 1e-8),
        (7, (0.9, 0.99), 1e-3),
        (40, (0.99, 0.9), 0.0),
        (5, (0.95, 0.95), 1e-8),
    ],
)
def test_fast_path_norms_equal_the_reference_split(path, step, betas, eps):
    b1, b2 = betas
    tied = b1 == b2
    m, v, w, g = _state(3001, step)
    if tied:
        w = m
    bc1, bc2, c = bias_corrections(step, b1, b2)
    sums = path(m, v, w, g, bc1 / bc2, c / bc2, eps * c, tied)
    scale = np.array(sum_scale(bc1, bc2, c, eps, tied))
    got = np.sqrt(np.where(scale != 0, sums * scale, 0.0))[: len(NORM_NAMES)]
    m_hat, w_hat = m / bc1, (m / bc1 if tied else w / bc2)
    ref = part_norms(
        split_update(m_hat.numpy(), w_hat.numpy(), (v.sqrt() / c).numpy(), g.numpy(), eps)
    )
    want = np.array([ref[k] for k in NORM_NAMES])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_trainer_adam_step_is_the_reference_update():
    from gaugedyn.training._optim import adam_state, adam_update

    gen = torch.Generator().manual_seed(4)
    p = (torch.randn(5, 3, generator=gen, dtype=torch.float64),)
    state = adam_state(p)
    split = StreamingSplit(0.9, 0.99, 1e-8)
    for _ in range(6):
        g = (torch.randn(5, 3, generator=gen, dtype=torch.float64),)
        new = adam_update(p, g, state, lr=0.01, betas=(0.9, 0.99), eps=1e-8)
        parts = split.step(0, state["m"][0], state["v"][0], g[0], state["k"])
        torch.testing.assert_close(new[0], p[0] - 0.01 * parts.update, rtol=0, atol=1e-15)
        p = new


@pytest.mark.parametrize(
    "backend",
    [
        "eager",
        pytest.param(
            "native",
            marks=pytest.mark.skipif(not native.available(), reason="native kernel unavailable"),
        ),
    ],
)
@pytest.mark.parametrize("late", [1, 4])
def test_recorder_attached_after_k_steps_matches_a_hand_computation(backend, late):
    """Attached after ``late`` steps, the shadow moment starts from ``w^_k = m^_k``, i.e.
    ``w_k = m_k (1 - b2^k)/(1 - b1^k)``; the next steps are computed here by hand."""
    b1, b2, eps, lr = 0.8, 0.99, 1e-8, 1e-2
    gen = torch.Generator().manual_seed(late)
    p = torch.nn.Parameter(torch.randn(64, generator=gen, dtype=torch.float64))
    opt = torch.optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps)
    grads = [torch.randn(64, generator=gen, dtype=torch.float64) for _ in range(late + 3)]

    def step(g):
        opt.zero_grad()
        p.grad = g.clone()
        opt.step()

    for g in grads[:late]:
        step(g)
    m_k = opt.state[p]["exp_avg"].clone().numpy()
    rec = AdamRecorder(opt, backend=backend)
    assert rec.attached_at_step == late
    w = m_k * (1 - b2**late) / (1 - b1**late)
    want = []
    for t, g in enumerate(grads[late:], start=late + 1):
        step(g)
        m, v = opt.state[p]["exp_avg"].numpy(), opt.state[p]["exp_avg_sq"].numpy()
        w = b2 * w + (1 - b2) * g.numpy()
        m_hat, w_hat = m / (1 - b1**t), w / (1 - b2**t)
        d = np.sqrt(v / (1 - b2**t)) + eps
        want.append([np.linalg.norm((m_hat - w_hat) / d), np.linalg.norm(m_hat / d)])
    got = rec.norms()[:, 0][:, [NORM_NAMES.index("lag"), NORM_NAMES.index("update")]]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-10)


def test_without_ninja_auto_is_eager_and_nothing_is_built(monkeypatch):
    for name, value in (("_TRIED", False), ("_MODULE", None), ("_LOGGED", False), ("_ERROR", None)):
        monkeypatch.setattr(native, name, value)
    monkeypatch.setattr(native, "_have_ninja", lambda: False)
    monkeypatch.setattr(native, "_cached", lambda: False)

    def no_build():
        raise AssertionError("tried to build without ninja")

    monkeypatch.setattr(native, "_build", no_build)
    opt = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    assert AdamRecorder(opt).metadata()["backend"] == "eager"
    assert "not built on this machine" in native._ERROR
    assert AdamRecorder(opt, backend="native").metadata()["backend"] == "eager"
    assert "gaugedyn[native]" in native._ERROR
    assert native.resolve_backend("auto", True, [])[0] == "compile"
