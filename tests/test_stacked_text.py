"""The stacked text forwards (``_stacked_text.TEXT_STACKED``) against the per-copy modules."""

from __future__ import annotations

import pytest
import torch

from gaugedyn import InputError
from gaugedyn.experiments.adam_split._stacked_text import TEXT_STACKED
from gaugedyn.experiments.adam_split.tasks import _setup

TOL = {torch.float64: 1e-12, torch.float32: 1e-5}
"""Largest ``max|stacked - module| / max|module|`` per output and per parameter gradient."""


def _copies(task: str, B: int, dtype):
    """``B`` copies of ``task``'s model (seeds 0..B-1, so different parameters), one minibatch
    each, and the stacked parameters as views of one ``(B, P)`` leaf with row stride ``P``."""
    models, xs, ys = [], [], []
    for c in range(B):
        gen = torch.Generator().manual_seed(c)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(c)
            model, batch, loss_fn, _ = _setup(task, gen, dtype, "cpu")
        models.append(model.to(dtype=dtype))
        x, y = batch(gen)
        xs.append(x)
        ys.append(y)
    shapes = [p.shape for p in models[0].parameters()]
    flat = torch.stack(
        [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]
    ).requires_grad_()
    params = [t.view(B, *s) for t, s in zip(flat.split([s.numel() for s in shapes], 1), shapes)]
    return models, torch.stack(xs), torch.stack(ys), loss_fn, flat, params


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("B", [1, 3])
@pytest.mark.parametrize("task", sorted(TEXT_STACKED))
def test_stacked_equals_each_module(task, B, dtype):
    models, x, y, loss_fn, flat, params = _copies(task, B, dtype)
    out = TEXT_STACKED[task](models[0], params)(x)
    assert out.shape[:3] == x.shape and out.dtype == dtype
    sum(loss_fn(out[c], y[c]) for c in range(B)).backward()
    sizes = [p.numel() for p in models[0].parameters()]
    for c, m in enumerate(models):
        ref = m(x[c])
        assert out[c].shape == ref.shape
        assert _rel(out[c].detach(), ref.detach()) < TOL[dtype]
        loss_fn(ref, y[c]).backward()
        for (name, p), g in zip(m.named_parameters(), flat.grad[c].split(sizes)):
            assert _rel(g, p.grad.reshape(-1)) < TOL[dtype], (c, name)


def test_gru_gate_order_matters():
    """Swapping the ``r`` and ``z`` gate rows changes the output far beyond the tolerance, so
    the comparison with ``nn.GRU`` above pins the order ``(r, z, n)``."""
    models, x, _, _, _, params = _copies("char_gru", 2, torch.float64)
    names = [n for n, _ in models[0].named_parameters()]
    H = models[0].gru.hidden_size
    swapped = [
        torch.cat([p[:, H : 2 * H], p[:, :H], p[:, 2 * H :]], 1) if n.startswith("gru.") else p
        for n, p in zip(names, params)
    ]
    ref = torch.stack([m(x[c]) for c, m in enumerate(models)]).detach()
    with torch.no_grad():
        good = TEXT_STACKED["char_gru"](models[0], params)(x)
        bad = TEXT_STACKED["char_gru"](models[0], swapped)(x)
    assert _rel(good, ref) < 1e-12
    assert _rel(bad, ref) > 1e-3


@pytest.mark.parametrize("task", sorted(TEXT_STACKED))
def test_params_must_match_the_model(task):
    models, *_, params = _copies(task, 1, torch.float64)
    with pytest.raises(InputError, match="params"):
        TEXT_STACKED[task](models[0], params[:-1])
    with pytest.raises(InputError, match="expected"):
        TEXT_STACKED[task](models[0], [p[:, None] for p in params])


@pytest.mark.parametrize("task", sorted(TEXT_STACKED))
def test_shorter_sequences(task):
    """Sequences shorter than the transformer's context use the first ``T`` positions."""
    models, x, *_, params = _copies(task, 2, torch.float64)
    x = x[..., :20]
    with torch.no_grad():
        out = TEXT_STACKED[task](models[0], params)(x)
        for c, m in enumerate(models):
            assert _rel(out[c], m(x[c])) < 1e-12
