"""The Adam state toolkit against hand computations and fresh optimizers, on every torch path."""

import math

import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import (
    AdamRecorder,
    equalise_adaptive_scale,
    exchange,
    mean_adaptive_scale,
    rescale_update,
    reset,
    reset_step,
    restore,
    scalarise_v,
    select,
    snapshot,
    transplant,
    update_norm,
    weights,
)

PATHS = [{"foreach": False}, {"foreach": True}, {"fused": True}]
IDS = ["single", "foreach", "fused"]


def _model(seed: int, dtype=torch.float64) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return net.to(dtype)


def _batch(seed: int, dtype=torch.float64):
    g = torch.Generator().manual_seed(100 + seed)
    return torch.randn(16, 5, generator=g, dtype=dtype), torch.randn(
        16, 2, generator=g, dtype=dtype
    )


def _step(net, opt, seed: int) -> None:
    x, y = _batch(seed, next(net.parameters()).dtype)
    opt.zero_grad()
    ((net(x) - y) ** 2).mean().backward()
    opt.step()


def _trained(seed: int, path: dict, steps: int = 4, cls=torch.optim.Adam, **kw):
    net = _model(seed)
    opt = cls(net.parameters(), lr=1e-2, **path, **kw)
    for k in range(steps):
        _step(net, opt, seed * 10 + k)
    return net, opt


def _state_tensors(net, opt):
    return [
        t.clone()
        for p in net.parameters()
        for t in (
            p.detach(),
            opt.state[p]["exp_avg"],
            opt.state[p]["exp_avg_sq"],
            opt.state[p]["step"],
        )
    ]


@pytest.mark.parametrize("path", PATHS, ids=IDS)
@pytest.mark.parametrize("component", ["m", "v", "both"])
def test_exchange_twice_is_identity_bit_for_bit(path, component):
    na, oa = _trained(1, path)
    nb, ob = _trained(2, path, steps=6)
    before = _state_tensors(na, oa) + _state_tensors(nb, ob)
    rec = exchange(oa, na, ob, nb, component)
    moved = _state_tensors(na, oa) + _state_tensors(nb, ob)
    assert any(not torch.equal(x, y) for x, y in zip(before, moved))
    exchange(oa, na, ob, nb, component)
    after = _state_tensors(na, oa) + _state_tensors(nb, ob)
    assert all(torch.equal(x, y) for x, y in zip(before, after))
    per = 2 if component == "both" else 1
    assert len(rec.entries) == 2 * per * len(list(na.parameters()))
    assert all(math.isfinite(e["norm_before"]) for e in rec.entries)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_update_after_v_exchange_matches_hand_computation(path):
    na, oa = _trained(1, path, steps=3)
    nb, ob = _trained(2, path, steps=7)
    exchange(oa, na, ob, nb, "v")
    b1, b2 = oa.param_groups[0]["betas"]
    lr, eps = oa.param_groups[0]["lr"], oa.param_groups[0]["eps"]
    x, y = _batch(99)
    oa.zero_grad()
    ((na(x) - y) ** 2).mean().backward()
    expected = {}
    for p in na.parameters():
        st = oa.state[p]
        t = int(st["step"]) + 1
        m = b1 * st["exp_avg"] + (1 - b1) * p.grad
        v = b2 * st["exp_avg_sq"] + (1 - b2) * p.grad**2  # v swapped in from the other state
        mhat, vhat = m / (1 - b1**t), v / (1 - b2**t)
        expected[p] = p.detach() - lr * mhat / (vhat.sqrt() + eps)
    oa.step()
    for p in na.parameters():
        torch.testing.assert_close(p.detach(), expected[p], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW], ids=["Adam", "AdamW"])
def test_reset_everything_equals_fresh_optimizer(path, cls):
    net, opt = _trained(3, path, cls=cls, weight_decay=0.01)
    fresh_net = _model(0)
    fresh_net.load_state_dict(net.state_dict())
    fresh = cls(fresh_net.parameters(), lr=1e-2, weight_decay=0.01, **path)
    reset(opt, net, "both")
    reset_step(opt, net, 0)
    _step(net, opt, 55)
    _step(fresh_net, fresh, 55)
    for p, q in zip(net.parameters(), fresh_net.parameters()):
        assert torch.equal(p, q)
        assert torch.equal(opt.state[p]["exp_avg_sq"], fresh.state[q]["exp_avg_sq"])


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_reset_m_only_keeps_step_and_v(path):
    net, opt = _trained(3, path)
    p = next(net.parameters())
    v, step = opt.state[p]["exp_avg_sq"].clone(), opt.state[p]["step"].clone()
    rec = reset(opt, net, "m", names="0.*")
    assert torch.count_nonzero(opt.state[p]["exp_avg"]) == 0
    assert torch.equal(opt.state[p]["exp_avg_sq"], v) and torch.equal(opt.state[p]["step"], step)
    assert [e["name"] for e in rec.entries] == ["0.weight", "0.bias"]
    assert rec.entries[0]["norm_after"] == 0 and rec.entries[0]["norm_before"] > 0


@pytest.mark.parametrize("path", PATHS, ids=IDS)
@pytest.mark.parametrize("per", ["tensor", "layer", "selection"])
def test_scalarise_keeps_the_mean(path, per):
    net, opt = _trained(4, path)
    groups = {
        "tensor": [[n] for n, _ in net.named_parameters()],
        "layer": [["0.weight", "0.bias"], ["2.weight", "2.bias"]],
        "selection": [[n for n, _ in net.named_parameters()]],
    }[per]
    named = dict(net.named_parameters())

    def means():
        out = []
        for g in groups:
            vs = [opt.state[named[n]]["exp_avg_sq"].double().flatten() for n in g]
            out.append(torch.cat(vs).mean().item())
        return out

    before = means()
    scalarise_v(opt, net, per=per)
    after = means()
    for a, b in zip(before, after):
        assert abs(a - b) <= 4 * math.ulp(a)
    for g in groups:
        vals = torch.cat([opt.state[named[n]]["exp_avg_sq"].flatten() for n in g])
        assert torch.all(vals == vals[0])


def _batched_pair(path, seed):
    """Two 'models' each holding a batch of 3 independent parameter sets on axis 0."""
    out = []
    for s in (seed, seed + 1):
        g = torch.Generator().manual_seed(s)
        net = torch.nn.ParameterDict(
            {"w": torch.nn.Parameter(torch.randn(3, 4, 5, generator=g, dtype=torch.float64))}
        )
        opt = torch.optim.Adam(net.parameters(), lr=1e-2, **path)
        for k in range(3):
            opt.zero_grad()
            (
                net["w"] ** 2
                * torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
                * (k + 1)
                * torch.tensor([1.0, 10.0, 100.0]).double()[:, None, None]
            ).sum().backward()
            opt.step()
        out += [opt, net]
    return out


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_equalise_gives_common_mean_adaptive_scale(path):
    oa, na, ob, nb = _batched_pair(path, 7)
    a0 = mean_adaptive_scale(oa, na, batch_dims=1)
    b0 = mean_adaptive_scale(ob, nb, batch_dims=1)
    assert a0.shape == (3,) and not torch.allclose(a0, b0)
    pattern = oa.state[na["w"]]["exp_avg_sq"].clone()
    equalise_adaptive_scale(oa, na, ob, nb, batch_dims=1)
    a1 = mean_adaptive_scale(oa, na, batch_dims=1)
    b1 = mean_adaptive_scale(ob, nb, batch_dims=1)
    torch.testing.assert_close(a1, (a0 + b0) / 2, rtol=1e-10, atol=0)
    torch.testing.assert_close(b1, (a0 + b0) / 2, rtol=1e-10, atol=0)
    ratio = oa.state[na["w"]]["exp_avg_sq"] / pattern  # one scale per batch element
    torch.testing.assert_close(ratio, ratio[:, :1, :1].expand_as(ratio), rtol=1e-12, atol=0)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_rescale_update_sets_the_stated_norm(path):
    oa, na, _, _ = _batched_pair(path, 11)
    before = weights(na)
    g = torch.Generator().manual_seed(5)
    oa.zero_grad()
    (na["w"] * torch.randn(3, 4, 5, generator=g, dtype=torch.float64)).sum().backward()
    oa.step()
    target = torch.tensor([1e-3, 2e-3, 5e-2], dtype=torch.float64)
    rec = rescale_update(na, before, target, batch_dims=1)
    torch.testing.assert_close(update_norm(na, before, batch_dims=1), target, rtol=1e-12, atol=0)
    assert len(rec.details["norm_before"]) == 3


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_snapshot_restore_and_transplant(path):
    net, opt = _trained(5, path)
    snap = snapshot(opt, net)
    _step(net, opt, 70)
    x1 = [p.detach().clone() for p in net.parameters()]
    restore(opt, net, snap)
    _step(net, opt, 70)
    assert all(torch.equal(a, p) for a, p in zip(x1, net.parameters()))
    other, oopt = _trained(6, path, steps=9)
    rec = transplant(opt, net, snapshot(oopt, other, "2.*"), "v", names="2.*")
    assert {e["name"] for e in rec.entries} == {"2.weight", "2.bias"}
    for (n, p), q in zip(net.named_parameters(), other.parameters()):
        same = torch.equal(opt.state[p]["exp_avg_sq"], oopt.state[q]["exp_avg_sq"])
        assert same == n.startswith("2.")


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_recorder_and_toolkit_share_one_optimizer(path):
    net = _model(8, torch.float32)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, **path)
    rec = AdamRecorder(opt, backend="eager")
    other, oopt = _trained(9, path)
    other.float()
    oopt = torch.optim.Adam(other.parameters(), lr=1e-2, **path)
    for k in range(3):
        _step(net, opt, k)
        _step(other, oopt, 20 + k)
    exchange(opt, net, oopt, other, "v")
    scalarise_v(opt, net, names="0.*")
    for k in range(3):
        _step(net, opt, 40 + k)
    assert len(rec) == 6
    assert torch.isfinite(torch.as_tensor(rec.norms())).all()
    rec.detach()


def test_bad_input_is_one_clear_error():
    net, opt = _trained(1, {"foreach": False})
    with pytest.raises(InputError, match="matches no parameter"):
        select(net, "encoder.*")
    with pytest.raises(InputError, match="component='w'"):
        reset(opt, net, "w")
    with pytest.raises(InputError, match="per='row'"):
        scalarise_v(opt, net, per="row")
    with pytest.raises(InputError, match="no Adam state"):
        fresh = _model(1)
        reset(torch.optim.Adam(fresh.parameters()), fresh)
    with pytest.raises(InputError, match="torch.optim.Adam"):
        reset(torch.optim.SGD(net.parameters(), lr=0.1), net)
