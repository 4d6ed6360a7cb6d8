"""rescale_units and the row-level Adam state toolkit against replayed histories and fresh
optimizers, in float64."""

import copy

import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import (
    equalise_adaptive_scale,
    exchange,
    mean_adaptive_scale,
    reset,
    scalarise_v,
    snapshot,
    transplant,
)
from gaugedyn.gauge import rescale_units, unit_rows

F64 = torch.float64
PATHS = [{"foreach": False}, {"foreach": True}, {"fused": True}]
IDS = ["single", "foreach", "fused"]


class _CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 3, 3, padding=1)
        self.c2 = torch.nn.Conv2d(3, 4, 3)
        self.fc = torch.nn.Linear(16, 2)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        return self.fc(torch.flatten(torch.relu(self.c2(x)), 1))


class _Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.att = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.att(x, x, x)[0]


def _mlp():
    nn = torch.nn
    return nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))


CASES = {  # model, input shape, group, units
    "mlp": (_mlp, (9, 5), "0", [1, 4]),
    "cnn_conv": (_CNN, (4, 1, 8, 8), "c1", [0, 2]),
    "cnn_flatten": (_CNN, (4, 1, 8, 8), "c2", [3]),
    "qk": (_Attention, (3, 5, 8), "att.qk", [1]),
    "vo": (_Attention, (3, 5, 8), "att.vo", [0, 1]),
}


def _built(case: str, seed: int = 0):
    make, shape, layer, units = CASES[case]
    torch.manual_seed(seed)
    net = make().to(F64)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1), dtype=F64)
    return net, x, layer, units


@pytest.mark.parametrize("case", list(CASES))
def test_function_is_unchanged(case):
    net, x, layer, units = _built(case)
    before = net(x).detach()
    rec = rescale_units(net, None, layer, units, [3.7, 0.21][: len(units)])
    after = net(x).detach()
    assert (after - before).abs().max() <= 1e-12 * before.abs().max()
    assert rec.operation == "rescale_units" and rec.details["units"] == units
    assert any(e["norm_before"] != e["norm_after"] for e in rec.entries)


def _history(net, x, opt, steps: int, seed: int):
    """Train on a fixed random target; return the gradient history per parameter name."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randn(net(x).shape, generator=g, dtype=F64)
    hist = {n: [] for n, _ in net.named_parameters()}
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * ((net(x) - y) ** 2).mean()).backward()
        for n, p in net.named_parameters():
            hist[n].append(p.grad.detach().clone())
        opt.step()
    return hist, y


def _factors(net, layer, units, c):
    """Per parameter, the tensor ``f`` with ``g_new = g f`` (``1/c`` on inputs, ``c`` on
    outputs, 1 elsewhere)."""
    from gaugedyn.gauge import find_units

    group = next(g for g in find_units(net)[0] if g.name == layer)
    out = {n: torch.ones_like(p) for n, p in net.named_parameters()}
    for power, sides in ((-1, group.inputs), (1, group.outputs)):
        for side in sides:
            shape = [1] * out[side.name].dim()
            shape[side.axis] = -1
            idx = side.indices(units)
            f = torch.ones(out[side.name].shape[side.axis], dtype=F64)
            f[idx] = (
                torch.as_tensor(c, dtype=F64)
                .reshape(-1)
                .repeat_interleave(side.block)
                .expand(idx.numel())
                ** power
            )
            out[side.name] = out[side.name] * f.reshape(shape)
    return out


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("amsgrad", [False, True], ids=["adam", "amsgrad"])
def test_adam_state_equals_the_transformed_gradient_history_replayed(case, amsgrad):
    net, x, layer, units = _built(case)
    b1, b2 = 0.8, 0.95
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, betas=(b1, b2), amsgrad=amsgrad)
    hist, y = _history(net, x, opt, 6, seed=7)
    c = [2.5, 0.3][: len(units)]
    rescale_units(net, opt, layer, units, c)
    fac = _factors(net, layer, units, c)
    for n, p in net.named_parameters():
        m = torch.zeros_like(p)
        v = torch.zeros_like(p)
        vmax = torch.zeros_like(p)
        for g in hist[n]:
            g = g * fac[n]
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = torch.maximum(vmax, v)
        st = opt.state[p]
        torch.testing.assert_close(st["exp_avg"], m, rtol=1e-12, atol=1e-300)
        torch.testing.assert_close(st["exp_avg_sq"], v, rtol=1e-12, atol=1e-300)
        if amsgrad:
            torch.testing.assert_close(st["max_exp_avg_sq"], vmax, rtol=1e-12, atol=1e-300)
    # the gradient at the transformed point is the transformed gradient (the symmetry itself)
    net_old = copy.deepcopy(net)
    rescale_units(net_old, None, layer, units, [1 / ci for ci in c])
    for model in (net, net_old):
        model.zero_grad()
        (0.5 * ((model(x) - y) ** 2).mean()).backward()
    for (n, p), q in zip(net.named_parameters(), net_old.parameters()):
        torch.testing.assert_close(p.grad, q.grad * fac[n], rtol=1e-9, atol=1e-14)


def test_sgd_momentum_buffer_like_m():
    net, x, layer, units = _built("mlp")
    mu = 0.9
    opt = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=mu)
    hist, _ = _history(net, x, opt, 5, seed=3)
    rescale_units(net, opt, layer, units, 4.0)
    fac = _factors(net, layer, units, 4.0)
    for n, p in net.named_parameters():
        buf = None
        for g in hist[n]:
            g = g * fac[n]
            buf = g.clone() if buf is None else mu * buf + g
        torch.testing.assert_close(opt.state[p]["momentum_buffer"], buf, rtol=1e-12, atol=0)


def _random_grads(net, gen):
    for p in net.parameters():
        p.grad = torch.randn(p.shape, generator=gen, dtype=F64)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
@pytest.mark.parametrize(
    "kw",
    [{}, {"amsgrad": True}, {"weight_decay": 0.1}, {"decoupled": True, "weight_decay": 0.1}],
    ids=["adam", "amsgrad", "coupled_wd", "adamw"],
)
def test_row_reset_with_restart_follows_a_fresh_optimizer_on_that_row(path, kw):
    kw = dict(kw)
    cls = torch.optim.AdamW if kw.pop("decoupled", False) else torch.optim.Adam
    torch.manual_seed(0)
    net = _mlp().to(F64)
    opt = cls(net.parameters(), lr=3e-2, **path, **kw)
    gen = torch.Generator().manual_seed(5)
    for _ in range(7):
        _random_grads(net, gen)
        opt.step()
    rows = unit_rows(net, "0", [2])
    kept_net = copy.deepcopy(net)  # the same optimizer, not reset
    kept_opt = cls(kept_net.parameters(), lr=3e-2, **path, **kw)
    kept_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    rec = reset(opt, net, "both", rows=rows, restart=True)
    assert rec.details["row_clock"]
    fresh_net = copy.deepcopy(net)
    fresh = cls(fresh_net.parameters(), lr=3e-2, **path, **kw)
    for _ in range(4):
        state = gen.get_state()
        _random_grads(net, gen)
        for model in (fresh_net, kept_net):
            gen.set_state(state)
            _random_grads(model, gen)
        for o in (opt, fresh, kept_opt):
            o.step()
        for (n, p), q, k in zip(
            net.named_parameters(), fresh_net.parameters(), kept_net.parameters()
        ):
            if n not in rows:
                assert torch.equal(p, k)
                continue
            axis, idx = rows[n]
            mine, theirs = p.detach().index_select(axis, idx), q.detach().index_select(axis, idx)
            torch.testing.assert_close(mine, theirs, rtol=1e-12, atol=1e-15)
            other = torch.ones(p.shape[axis], dtype=torch.bool)
            other[idx] = False
            torch.testing.assert_close(
                p.detach().index_select(axis, other.nonzero()[:, 0]),
                k.detach().index_select(axis, other.nonzero()[:, 0]),
                rtol=0,
                atol=0,
            )


def test_row_reset_without_restart_is_under_corrected_as_documented():
    torch.manual_seed(0)
    net = _mlp().to(F64)
    opt = torch.optim.Adam(net.parameters(), lr=3e-2)
    gen = torch.Generator().manual_seed(5)
    for _ in range(30):
        _random_grads(net, gen)
        opt.step()
    rows = unit_rows(net, "0", [1])
    reset(opt, net, "both", rows=rows)
    fresh_net = copy.deepcopy(net)
    fresh = torch.optim.Adam(fresh_net.parameters(), lr=3e-2)
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    _random_grads(net, gen)
    fresh_net.load_state_dict(fresh_net.state_dict())
    for p, q in zip(net.parameters(), fresh_net.parameters()):
        q.grad = p.grad.clone()
    opt.step()
    fresh.step()
    axis, idx = rows["0.weight"]
    step = (net[0].weight.detach() - before["0.weight"]).index_select(axis, idx)
    fresh_step = (fresh_net[0].weight.detach() - before["0.weight"]).index_select(axis, idx)
    b1, b2, t = 0.9, 0.999, 31  # m^ = (1-b1) g / (1-b1^t), v^ = (1-b2) g^2 / (1-b2^t)
    ratio = ((1 - b1) / (1 - b1**t)) / ((1 - b2) / (1 - b2**t)) ** 0.5
    torch.testing.assert_close(step, fresh_step * ratio, rtol=1e-4, atol=1e-12)


def _trained(seed=0, steps=4, **kw):
    torch.manual_seed(seed)
    net = _mlp().to(F64)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, **kw)
    gen = torch.Generator().manual_seed(seed + 10)
    for _ in range(steps):
        _random_grads(net, gen)
        opt.step()
    return net, opt


def test_row_exchange_twice_is_identity_and_touches_only_the_rows():
    na, oa = _trained(0)
    nb, ob = _trained(1, steps=6)
    rows = unit_rows(na, "2", [0, 3])
    before, before_b = snapshot(oa, na), snapshot(ob, nb)
    exchange(oa, na, ob, nb, "both", rows=rows)
    moved = snapshot(oa, na)
    for n, (axis, idx) in rows.items():
        keep = torch.ones(before[n]["exp_avg"].shape[axis], dtype=torch.bool)
        keep[idx] = False
        rest = keep.nonzero()[:, 0]
        assert torch.equal(
            moved[n]["exp_avg"].index_select(axis, rest),
            before[n]["exp_avg"].index_select(axis, rest),
        )
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(
                moved[n][key].index_select(axis, idx), before_b[n][key].index_select(axis, idx)
            )
    exchange(oa, na, ob, nb, "both", rows=rows)
    back = snapshot(oa, na)
    for n in before:
        for k in before[n]:
            assert torch.equal(before[n][k], back[n][k])


def test_row_transplant_scalarise_and_equalise():
    na, oa = _trained(0)
    nb, ob = _trained(1, steps=9)
    rows = [1, 2]
    snap_b = snapshot(ob, nb)
    transplant(oa, na, snap_b, "v", names="2.weight", rows=rows)
    va = oa.state[na[2].weight]["exp_avg_sq"]
    assert torch.equal(va[1:3], snap_b["2.weight"]["exp_avg_sq"][1:3])
    assert not torch.equal(va[0], snap_b["2.weight"]["exp_avg_sq"][0])
    other = va[[0, 3]].clone()
    mean = va[1:3].double().mean()
    scalarise_v(oa, na, "2.weight", rows=rows)
    assert torch.allclose(va[1:3], torch.full_like(va[1:3], float(mean)), rtol=1e-14)
    assert torch.equal(va[[0, 3]], other)
    equalise_adaptive_scale(oa, na, ob, nb, "0.weight", rows=[0, 5])
    a = mean_adaptive_scale(oa, na, "0.weight", rows=[0, 5])
    b = mean_adaptive_scale(ob, nb, "0.weight", rows=[0, 5])
    assert abs(float(a - b)) <= 1e-10 * float(a)


def test_checks_amsgrad_shapes_nonfinite_and_bad_rows():
    na, oa = _trained(0, amsgrad=True)
    nb, ob = _trained(1)
    with pytest.raises(InputError, match="amsgrad"):
        scalarise_v(oa, na)
    with pytest.raises(InputError, match="amsgrad"):
        equalise_adaptive_scale(oa, na, ob, nb)
    with pytest.raises(InputError, match="max_exp_avg_sq"):
        exchange(oa, na, ob, nb, "v")
    reset(oa, na, "v", rows=[0])
    assert float(oa.state[na[0].weight]["max_exp_avg_sq"][0].abs().sum()) == 0.0
    snap = snapshot(ob, nb)
    snap["0.weight"]["exp_avg_sq"] = snap["0.weight"]["exp_avg_sq"][:1]  # would broadcast
    with pytest.raises(InputError, match="shape"):
        transplant(ob, nb, snap, "v", names="0.weight")
    ob.state[nb[0].weight]["exp_avg_sq"][0, 0] = float("nan")
    v_other = ob.state[nb[2].weight]["exp_avg_sq"].clone()
    with pytest.raises(InputError, match="non-finite"):
        scalarise_v(ob, nb, per="selection")
    assert torch.equal(ob.state[nb[2].weight]["exp_avg_sq"], v_other)  # nothing written
    nc, oc = _trained(2)
    v_c = oc.state[nc[0].weight]["exp_avg_sq"].clone()
    with pytest.raises(InputError, match="non-finite"):
        equalise_adaptive_scale(oc, nc, ob, nb)
    assert torch.equal(oc.state[nc[0].weight]["exp_avg_sq"], v_c)
    with pytest.raises(InputError, match="rows"):
        reset(ob, nb, rows=[99])
    with pytest.raises(InputError, match="restart"):
        reset(ob, nb, "m", rows=[0], restart=True)
    with pytest.raises(InputError, match="layer"):
        rescale_units(nb, ob, "nope", [0], 2.0)
    with pytest.raises(InputError, match="c="):
        rescale_units(nb, ob, "0", [0], -1.0)
    with pytest.raises(InputError, match="units"):
        rescale_units(nb, ob, "0", [6], 2.0)


def test_unit_rows_of_a_head_cover_its_query_and_key_rows():
    net, _, _, _ = _built("qk")
    rows = unit_rows(net, "att.qk", [1])
    axis, idx = rows["att.in_proj_weight"]
    assert axis == 0 and idx.tolist() == [4, 5, 6, 7, 12, 13, 14, 15]  # E = 8, head dim 4
    assert rows["att.in_proj_bias"][1].tolist() == idx.tolist()
