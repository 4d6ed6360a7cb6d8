"""Recorders through state surgery and resumption, in float64.

After ``reset``, ``exchange`` and ``transplant`` (rows and whole tensors) the recorder's update
is the one the optimizer applied (to 1e-12), and on the touched coordinates its lag part is
the one a recorder attached afresh to the new state computes; a recorder restored from
``state_dict()`` beside a restored optimizer continues bit for bit."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import AdamRecorder, exchange, reset, snapshot, transplant
from gaugedyn.gauge import GaugeRecorder, duplicate_unit, rescale_units

F64 = torch.float64
LR = 1e-2


def _model(seed: int, relu: bool = False) -> torch.nn.Module:
    torch.manual_seed(seed)
    nn = torch.nn
    act = nn.ReLU() if relu else nn.Tanh()  # ReLU units have the rescaling gauge
    return nn.Sequential(nn.Linear(5, 6), act, nn.Linear(6, 3)).to(F64)


def _data(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(40, 5, generator=g, dtype=F64), torch.randn(40, 3, generator=g, dtype=F64)


def _coords(model) -> int:
    return sum(p.numel() for p in model.parameters())


def _recorder(opt, model, **kw) -> AdamRecorder:
    return AdamRecorder(opt, sample=_coords(model), model=model, **kw)


def _step(model, opt, data) -> np.ndarray:
    """One full-batch step; the update the optimizer applied, ``(p_before - p_after) / lr``,
    over every coordinate in the recorder's sample order."""
    x, y = data
    before = torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return ((before - after) / LR).numpy()


def _trained(seed: int, steps: int = 5, betas=(0.9, 0.99), relu: bool = False):
    model = _model(seed, relu)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=betas)
    rec = _recorder(opt, model)
    data = _data(seed)
    for _ in range(steps):
        _step(model, opt, data)
    return model, opt, rec, data


def _last(rec, field: str) -> np.ndarray:
    return rec.export()[0][f"sample_{field}_g0"][-1]


def _touched(model, name: str, rows) -> np.ndarray:
    """Flat indices (in sample order) of the entries of parameter ``name`` in ``rows``
    (axis 0; ``None``: all of it)."""
    offset = 0
    for n, p in model.named_parameters():
        if n == name:
            mask = torch.zeros(p.shape, dtype=torch.bool)
            mask[rows if rows is not None else slice(None)] = True
            return offset + np.flatnonzero(mask.reshape(-1).numpy())
        offset += p.numel()
    raise KeyError(name)


def _follows(model, opt, rec, fresh, data, touched, steps: int = 3) -> None:
    """Over ``steps`` steps: the recorded update is the applied one; on ``touched`` the lag part
    is the fresh recorder's, while elsewhere the old one's history shows."""
    differs = False
    for _ in range(steps):
        applied = _step(model, opt, data)
        np.testing.assert_allclose(_last(rec, "update"), applied, rtol=0, atol=1e-12)
        np.testing.assert_allclose(_last(fresh, "update"), applied, rtol=0, atol=1e-12)
        lag, lag_fresh = _last(rec, "lag"), _last(fresh, "lag")
        np.testing.assert_allclose(lag[touched], lag_fresh[touched], rtol=1e-13, atol=1e-15)
        rest = np.setdiff1d(np.arange(lag.size), touched)
        differs |= bool(np.abs(lag[rest] - lag_fresh[rest]).max() > 1e-9)
    assert differs, "the untouched coordinates should keep the old recorder's history"


CUTS = {"row": ("0.weight", [2]), "tensor": ("0.weight", None)}


@pytest.mark.parametrize("restart", [False, True])
@pytest.mark.parametrize("cut", sorted(CUTS))
def test_reset_keeps_the_recorder_exact(cut, restart):
    model, opt, rec, data = _trained(0)
    name, rows = CUTS[cut]
    reset(opt, model, "both", name, rows=rows, restart=restart)
    fresh = _recorder(opt, model)
    _follows(model, opt, rec, fresh, data, _touched(model, name, rows))


@pytest.mark.parametrize("component", ["m", "both"])
@pytest.mark.parametrize("cut", sorted(CUTS))
def test_exchange_keeps_both_recorders_exact(cut, component):
    model_a, opt_a, rec_a, data_a = _trained(0)
    model_b, opt_b, rec_b, data_b = _trained(1)
    name, rows = CUTS[cut]
    exchange(opt_a, model_a, opt_b, model_b, component, name, rows=rows)
    fresh_a, fresh_b = _recorder(opt_a, model_a), _recorder(opt_b, model_b)
    _follows(model_a, opt_a, rec_a, fresh_a, data_a, _touched(model_a, name, rows))
    _follows(model_b, opt_b, rec_b, fresh_b, data_b, _touched(model_b, name, rows))


@pytest.mark.parametrize("component", ["m", "both"])
@pytest.mark.parametrize("cut", sorted(CUTS))
def test_transplant_keeps_the_recorder_exact(cut, component):
    model, opt, rec, data = _trained(0)
    donor, donor_opt, _, _ = _trained(1, steps=7)
    name, rows = CUTS[cut]
    transplant(opt, model, snapshot(donor_opt, donor), component, name, rows=rows)
    fresh = _recorder(opt, model)
    _follows(model, opt, rec, fresh, data, _touched(model, name, rows))


def test_a_second_moment_written_alone_keeps_the_shadow_moment():
    """``w``, like ``m``, is a history of the gradients: writing ``v`` alone leaves it."""
    model, opt, rec, data = _trained(0)
    donor, donor_opt, _, _ = _trained(1)
    p = model[0].weight
    w = rec._w[p].clone()
    transplant(opt, model, snapshot(donor_opt, donor), "v", "0.weight", rows=[1])
    reset(opt, model, "v", "0.bias")
    assert torch.equal(rec._w[p], w)
    for _ in range(2):
        applied = _step(model, opt, data)
        np.testing.assert_allclose(_last(rec, "update"), applied, rtol=0, atol=1e-12)


def test_without_the_notice_the_recorder_would_be_wrong():
    """The control: the same row reset with the recorder deaf to it records the shadow
    moment's stale lag on the reset row (the issue's 3-26 against 0.09-0.69)."""
    model, opt, rec, data = _trained(0)
    deaf = _recorder(opt, model)
    _step(model, opt, data)
    deaf._watch.remove()
    reset(opt, model, "both", "0.weight", rows=[2], restart=True)
    fresh = _recorder(opt, model)
    _step(model, opt, data)
    touched = _touched(model, "0.weight", [2])
    assert np.abs(_last(deaf, "lag")[touched] - _last(fresh, "lag")[touched]).max() > 1e-3
    np.testing.assert_allclose(_last(rec, "lag")[touched], _last(fresh, "lag")[touched], atol=1e-15)


def test_a_gauge_rescaling_rescales_the_shadow_moment_like_m():
    model, opt, rec, data = _trained(0, relu=True)
    p = model[0].weight
    w, m = rec._w[p].clone(), opt.state[p]["exp_avg"].clone()
    rescale_units(model, opt, "0", [1, 4], 2.0)
    ratio = opt.state[p]["exp_avg"] / m
    np.testing.assert_allclose(rec._w[p], w * ratio, rtol=1e-15)
    assert torch.allclose(ratio[1], torch.full_like(ratio[1], 0.5))
    applied = _step(model, opt, data)
    np.testing.assert_allclose(_last(rec, "update"), applied, rtol=0, atol=1e-12)


def _save_load(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("sample", [0, 7])
def test_a_restored_adam_recorder_continues_bit_for_bit(sample):
    model, opt, _, data = _trained(0, steps=0)
    rec = AdamRecorder(opt, sample=sample, seed=3)
    for _ in range(4):
        _step(model, opt, data)
    saved = _save_load(
        {"model": model.state_dict(), "opt": opt.state_dict(), "rec": rec.state_dict()}
    )
    for _ in range(4):
        _step(model, opt, data)
    again = _model(5)
    again.load_state_dict(saved["model"])
    opt2 = torch.optim.Adam(again.parameters(), lr=LR, betas=(0.9, 0.99))
    opt2.load_state_dict(saved["opt"])
    rec2 = AdamRecorder(opt2, sample=sample, seed=3)
    rec2.load_state_dict(saved["rec"])
    for _ in range(4):
        _step(again, opt2, data)
    a, b = rec.export()[0], rec2.export()[0]
    assert sorted(a) == sorted(b)
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    with pytest.raises(InputError, match="recorded with"):
        AdamRecorder(opt2, sample=sample + 1, seed=3).load_state_dict(saved["rec"])


def test_a_restored_gauge_recorder_continues_bit_for_bit():
    def train(net, opt, rec, n):
        x, y = _data(2)
        x = x[:, :5]
        for _ in range(n):
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()

    def sgd(net):
        return torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-3)

    net = _model(0, relu=True)
    opt = sgd(net)
    rec = GaugeRecorder(net, opt)
    train(net, opt, rec, 4)
    saved = _save_load({"net": net.state_dict(), "opt": opt.state_dict(), "rec": rec.state_dict()})
    train(net, opt, rec, 4)
    net2 = _model(9, relu=True)
    net2.load_state_dict(saved["net"])
    opt2 = sgd(net2)
    opt2.load_state_dict(saved["opt"])
    rec2 = GaugeRecorder(net2, opt2)
    rec2.load_state_dict(saved["rec"])
    train(net2, opt2, rec2, 4)
    a, b = rec.export()[0], rec2.export()[0]
    assert sorted(a) == sorted(b)
    for key in a:
        assert np.array_equal(a[key], b[key], equal_nan=True), key


@pytest.mark.parametrize("surgery", ["rescale_units", "duplicate_unit"])
def test_the_momentum_prediction_holds_through_surgery(surgery):
    """The momentum recursion carries ``c = sum s sym(P b^T)/2`` across steps. A gauge
    rescaling leaves it (both factors transform); ``duplicate_unit`` writes the weights alone
    and breaks it: told so, the recorder measures ``c`` afresh and the prediction stays exact."""
    net = _model(0, relu=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-3)
    x, y = _data(3)
    x = x[:, :5]
    with GaugeRecorder(net, opt, exact_change=True) as rec:
        for i in range(8):
            if i == 4 and surgery == "rescale_units":
                rescale_units(net, opt, "0", [0, 3], 3.0)
            elif i == 4:
                duplicate_unit(net, "0", 0, 1, (0.5, 2.0))
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
    assert not opt._optimizer_step_pre_hooks  # the context detached it
    arr = rec.group("0")
    err = np.abs(arr["change"] - arr["predicted"]).max() / np.abs(arr["change"]).max()
    assert len(rec) == 8 and err < 1e-9


def test_context_manager_and_sample_coordinates():
    model = _model(0)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    data = _data(0)
    with AdamRecorder(opt, sample=9, seed=1, model=model) as rec:
        _step(model, opt, data)
        values = [p.detach().reshape(-1).clone() for p in model.parameters()]
    assert not opt._optimizer_step_post_hooks
    _step(model, opt, data)  # not recorded
    arrays, meta = rec.export()
    assert arrays["step"].tolist() == [1]
    names = [e["name"] for e in meta["parameters"][0]]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    where, index = arrays["sample_tensor_g0"], arrays["sample_index_g0"]
    assert where.shape == index.shape == (9,) and len(set(zip(where, index))) == 9
    # the sampled "param" column is the value, after the step, of the coordinate named
    found = np.array([float(values[j][i]) for j, i in zip(where, index)])
    assert np.array_equal(found, arrays["sample_param_g0"][0])


def test_the_toolkit_names_the_real_cause():
    model, opt, _, _ = _trained(0, relu=True)
    other = _model(4)
    with pytest.raises(InputError, match="not managed by this optimizer"):
        reset(opt, other, "both")
    donor, donor_opt, _, _ = _trained(1, relu=True)
    snap = snapshot(donor_opt, donor)
    snap["0.weight"]["exp_avg_sq"][0, 0] = -1.0
    before = copy.deepcopy(opt.state_dict())
    with pytest.raises(InputError, match="negative"):
        transplant(opt, model, snap, "v")
    assert all(
        torch.equal(before["state"][i]["exp_avg_sq"], opt.state_dict()["state"][i]["exp_avg_sq"])
        for i in before["state"]
    )
    for rows in ([0.5], [True], 1.5):
        with pytest.raises(InputError, match="not allowed"):
            reset(opt, model, "both", "0.weight", rows=rows)
    for units in ([0.5], [1.0], [True]):
        with pytest.raises(InputError, match="integer unit indices"):
            rescale_units(model, opt, "0", units, 2.0)
