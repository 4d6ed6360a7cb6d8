"""The recorder's reductions (eager: chunked and packed; native: one sweep per tensor) against
the pure decomposition, in float64."""

import copy
import os

import numpy as np
import pytest
import torch

from gaugedyn.adam import NORM_NAMES, AdamRecorder, adam_moments, decompose_history
from gaugedyn.adam import _native as native
from gaugedyn.adam import _recorder as R

BACKENDS = pytest.mark.parametrize("backend", ["eager", "native"])


def _reference(hist, b1, b2, eps):
    """Squared part norms and transition counts per own step of one parameter's grad history."""
    P = decompose_history(np.array(hist), b1, b2, eps)
    parts = {**P.as_dict(), "residual": P.residual}
    sq = np.stack([(parts[k] ** 2).sum(axis=1) for k in NORM_NAMES], axis=1)
    return sq, (P.transition != 0).sum(axis=1)


def _run(
    shapes,
    groups,
    steps,
    *,
    eps=1e-8,
    skip=None,
    zero=None,
    seed=0,
    channels_last=(),
    backend="eager",
):
    """Train a float64 bag of parameters on a random quadratic-sine loss; returns the recorder,
    the per-parameter effective-gradient histories and which optimizer steps each one took."""
    if backend == "native" and not native.available():
        pytest.skip(f"native extension does not build: {native._ERROR}")
    gen = torch.Generator().manual_seed(seed)
    params = [
        torch.nn.Parameter(torch.randn(s, generator=gen, dtype=torch.float64)) for s in shapes
    ]
    for i in channels_last:  # a non-contiguous layout: state and w follow it
        params[i].data = params[i].data.to(memory_format=torch.channels_last)
    targets = [torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]
    opt = torch.optim.Adam(
        [{"params": [params[i] for i in idx], "betas": betas} for idx, betas in groups],
        lr=1e-2,
        eps=eps,
    )
    rec = AdamRecorder(opt, backend=backend)
    assert rec.metadata()["backend"] == backend
    hist = [[] for _ in params]
    took = [[] for _ in params]
    for t in range(steps):
        opt.zero_grad(set_to_none=True)
        active = [i for i in range(len(params)) if not (skip and skip(i, t))]
        loss = sum(
            (torch.sin(params[i]) * targets[i]).sum() + (params[i] ** 2).sum() for i in active
        )
        loss.backward()
        for i in active:
            if zero is not None:
                params[i].grad.reshape(-1)[zero] = 0.0
            hist[i].append(params[i].grad.reshape(-1).clone().numpy())
            took[i].append(t)
        opt.step()
    return rec, hist, took, opt


def _check(rec, hist, took, opt, steps, eps):
    want = np.zeros((steps, len(opt.param_groups), len(NORM_NAMES)))
    ntrans = np.zeros((steps, len(opt.param_groups)))
    index = {
        id(p): (gi, pi) for gi, g in enumerate(opt.param_groups) for pi, p in enumerate(g["params"])
    }
    flat = [p for g in opt.param_groups for p in g["params"]]
    for p, h, tk in zip(flat, hist, took):
        gi, _ = index[id(p)]
        b1, b2 = opt.param_groups[gi]["betas"]
        sq, nt = _reference(h, b1, b2, eps)
        want[tk, gi] += sq
        ntrans[tk, gi] += nt
    got = rec.norms()
    assert got.shape == want.shape
    ref = np.sqrt(want)
    scale = ref[..., NORM_NAMES.index("update")][..., None]
    assert np.all(np.abs(got - ref) <= 1e-10 * ref + 1e-12 * scale)
    counts = np.array([sum(p.numel() for p in g["params"]) for g in opt.param_groups])
    assert np.allclose(rec.export()[0]["transition_frac"], ntrans / counts, atol=1e-12)
    for p, h in zip(flat, hist):  # w, updated chunk by chunk in the reduction, is exact
        b1, b2 = opt.param_groups[index[id(p)][0]]["betas"]
        if b1 != b2:
            ref_w = adam_moments(np.array(h), b1, b2)["w"][-1]
            got_w = rec._w[p].reshape(-1).numpy()
            assert np.max(np.abs(got_w - ref_w)) <= 1e-13 * np.max(np.abs(ref_w))
    return got


@BACKENDS
def test_chunked_packed_and_multi_group_norms_match_decomposition(backend):
    big = R._CHUNK + 1000  # split over two chunks
    small = [(7,), (3, 5), (R._PACK - 1,), (1,), (R._PACK // 2,)]  # packed together
    shapes = [(big,), *small, (R._PACK,), (2, R._PACK), (48, 32, 3, 3)]  # the last three in place
    groups = [([0, 1, 2, 3], (0.9, 0.97)), ([4, 5], (0.9, 0.9)), ([6, 7, 8], (0.8, 0.99))]
    rec, hist, took, opt = _run(shapes, groups, 6, channels_last=(8,), backend=backend)
    assert not opt.state[opt.param_groups[2]["params"][2]]["exp_avg"].is_contiguous()
    got = _check(rec, hist, took, opt, 6, 1e-8)
    lag = NORM_NAMES.index("lag")
    assert np.all(got[:, 1, lag] == 0.0)  # tied group: exactly zero, packed or not
    assert np.all(got[1:, [0, 2], lag] > 0.0)


@BACKENDS
def test_many_small_tensors_fill_several_packs(backend):
    n = R._CHUNK // 3000 + 5  # more small tensors than one chunk holds
    shapes = [(3000,)] * n
    rec, hist, took, opt = _run(shapes, [(list(range(n)), (0.9, 0.99))], 4, backend=backend)
    _check(rec, hist, took, opt, 4, 1e-8)


@BACKENDS
def test_parameters_at_different_steps_are_not_packed_together(backend):
    # parameter 1 gets no gradient on odd steps, so its Adam step counter falls behind
    shapes = [(40,), (30,), (R._CHUNK + 3,)]
    rec, hist, took, opt = _run(
        shapes,
        [([0, 1, 2], (0.9, 0.99))],
        7,
        skip=lambda i, t: i == 1 and t % 2 == 1,
        backend=backend,
    )
    _check(rec, hist, took, opt, 7, 1e-8)
    assert list(rec.export()[0]["step"]) == list(range(1, 8))


@pytest.mark.parametrize("eps", [0.0, 1e-8])
@BACKENDS
def test_never_touched_coordinates_give_finite_exact_norms(eps, backend):
    # coordinates 0..9 have a zero gradient at every step: v = w = m = 0 there
    rec, hist, took, opt = _run(
        [(50,), (R._PACK + 20,)],
        [([0, 1], (0.9, 0.99))],
        5,
        eps=eps,
        zero=slice(0, 10),
        backend=backend,
    )
    got = _check(rec, hist, took, opt, 5, eps)
    assert np.all(np.isfinite(got))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*torch.jit.*is deprecated:DeprecationWarning")
@pytest.mark.skipif(
    os.environ.get("ATEN_CPU_CAPABILITY") == "default",
    reason="inductor's C++ code picks its vector instructions from the CPU, not from ATen's "
    "forced portable dispatch, and does not compile against it (a torch limitation of the "
    "variable, not of a machine without AVX2, where both agree)",
)
def test_compiled_kernel_matches_eager():
    pytest.importorskip("torch._inductor")
    # inductor's own cache (keyed by the graph's code, torch and the compiler) is kept between
    # runs, where inductor keeps its precompiled header whatever TORCHINDUCTOR_CACHE_DIR says:
    # a later run loads the kernel and the vector-instruction probes instead of compiling them
    # again (13.6 CPU-s cold, 2.8 warm, in one process)
    shapes = [(R._PACK + 5,), (7,), (3, 4)]
    eager = _run(shapes, [([0, 1, 2], (0.9, 0.99))], 4)
    gen = torch.Generator().manual_seed(0)  # same model and data as _run's, with compile=True
    params = [
        torch.nn.Parameter(torch.randn(s, generator=gen, dtype=torch.float64)) for s in shapes
    ]
    targets = [torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]
    opt = torch.optim.Adam([{"params": params, "betas": (0.9, 0.99)}], lr=1e-2, eps=1e-8)
    rec = AdamRecorder(opt, compile=True)
    for _ in range(4):
        opt.zero_grad(set_to_none=True)
        sum((torch.sin(p) * q).sum() + (p**2).sum() for p, q in zip(params, targets)).backward()
        opt.step()
    ref, got = eager[0].norms(), rec.norms()
    assert np.allclose(got, ref, rtol=1e-10, atol=1e-13)
    assert np.array_equal(
        rec.export()[0]["transition_frac"], eager[0].export()[0]["transition_frac"]
    )


@BACKENDS
def test_reading_between_steps_does_not_change_what_is_recorded(backend, monkeypatch):
    """A step's raw sums are settled into norms when read, or every ``_SETTLE_EVERY`` steps: a
    recorder read every step (`latest()`), one read only at the end, and one saved and restored
    halfway (with steps pending) record the same norms and transition fractions, each step
    once."""
    if backend == "native" and not native.available():
        pytest.skip(f"native extension does not build: {native._ERROR}")
    monkeypatch.setattr(R, "_SETTLE_EVERY", 3)
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(6, 40), torch.nn.Tanh(), torch.nn.Linear(40, 2))
    models = [copy.deepcopy(base).double() for _ in range(3)]
    opts = [torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.9, 0.99)) for m in models]
    recs = [AdamRecorder(o, backend=backend) for o in opts]
    gen = torch.Generator().manual_seed(1)
    seen = []
    for t in range(8):
        x = torch.randn(16, 6, generator=gen, dtype=torch.float64)
        for m, o in zip(models, opts):
            o.zero_grad()
            m(x).pow(2).mean().backward()
            o.step()
        seen.append(recs[0].latest())
        if t == 3:  # four steps pending in recs[2]
            state = recs[2].state_dict()
            recs[2].detach()
            recs[2] = AdamRecorder(opts[2], backend=backend)
            recs[2].load_state_dict(state)
            # loaded into a recorder with steps of its own pending: the loaded history replaces them
            other = copy.deepcopy(base).double()
            opt = torch.optim.Adam(other.parameters(), lr=1e-2, betas=(0.9, 0.99))
            tmp = AdamRecorder(opt, backend=backend)
            for _ in range(2):
                opt.zero_grad()
                other(x).pow(2).mean().backward()
                opt.step()
            tmp.load_state_dict(state)
            np.testing.assert_array_equal(tmp.norms(), state["history"]["norms"].numpy())
    assert [s["step"] for s in seen] == list(range(1, 9))
    assert len(recs[1]._pending) == 8 % 3  # settled unread twice, two steps pending
    a, b, c = (r.export()[0] for r in recs)
    for other in (b, c):
        assert len(other["step"]) == 8
        np.testing.assert_array_equal(other["step"], a["step"])
        np.testing.assert_array_equal(other["norms"], a["norms"])
        np.testing.assert_array_equal(other["transition_frac"], a["transition_frac"])
    np.testing.assert_array_equal(np.stack([s["norms"] for s in seen]), a["norms"])
    np.testing.assert_array_equal([s["transition_frac"] for s in seen], a["transition_frac"])
