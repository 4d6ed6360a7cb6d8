"""The monitor: its scalars equal the recorders' own arrays, every sink holds the documented keys
with the recorded values (TensorBoard's event reader, wandb's offline run file), the edge probe
against the dense Hessian and the adam_edge experiment, the spike instrument and event-driven
surgery on known answers, and bad input."""

from __future__ import annotations

import csv
import glob
import json
import math
import os
import struct

import numpy as np
import pytest
import torch
from torch import nn

from gaugedyn import InputError
from gaugedyn.adam import NORM_NAMES, shares
from gaugedyn.monitor import (
    KEYS,
    CSVSink,
    EdgeProbe,
    MemorySink,
    Monitor,
    ParquetSink,
    StoreSink,
    TensorBoardSink,
    WandbSink,
    reset_state,
)


def setup(seed: int = 0, lr: float = 1e-2):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    return model, opt, lambda: nn.functional.mse_loss(model(x), y)


def train(mon, opt, loss_fn, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        mon.take_step(loss)


def matches(key: str) -> bool:
    """``key`` is one of :data:`KEYS`, fields filled."""
    import re

    pats = [re.escape(k).replace(r"\{group\}", "[^/]+").replace(r"\{name\}", "[^/]+") for k in KEYS]
    return any(re.fullmatch(p, key) for p in pats)


@pytest.fixture(scope="module")
def run():
    model, opt, loss_fn = setup()
    sink = MemorySink()
    mon = Monitor(
        opt,
        model,
        adam={"every": 2},
        gauge={"every": 3},
        edge=EdgeProbe(loss_fn, every=5),
        sinks=[sink],
    )
    train(mon, opt, loss_fn, 12)
    mon.detach()
    return mon, sink, opt


def test_every_streamed_key_is_documented_and_every_instrument_streams(run):
    mon, sink, _ = run
    assert all(matches(k) for k in sink.keys()), [k for k in sink.keys() if not matches(k)]
    prefixes = {k.split("/")[1] for k in sink.keys()}
    assert prefixes == {"loss", "adam", "gauge", "edge"}


def test_streamed_adam_scalars_are_the_recorders_own(run):
    mon, sink, _ = run
    arrays, _ = mon.export()
    steps, lag = sink.series("gaugedyn/adam/lag_share")
    assert steps.tolist() == arrays["adam_step"].tolist() == [2, 4, 6, 8, 10, 12]
    pooled = np.sqrt((arrays["adam_norms"] ** 2).sum(axis=1))
    want = shares({k: pooled[:, i] for i, k in enumerate(NORM_NAMES)})
    np.testing.assert_array_equal(lag, want["lag"])
    np.testing.assert_array_equal(sink.series("gaugedyn/adam/update_norm")[1], pooled[:, -1])


def test_streamed_gauge_scalars_are_the_recorders_own(run):
    mon, sink, _ = run
    g = mon.gauge.group(0)
    steps, inv = sink.series(f"gaugedyn/gauge/{mon.gauge.groups[0].name}/invariant_mean")
    assert steps.tolist() == [3, 6, 9, 12]
    np.testing.assert_allclose(inv, g["invariant"].mean(axis=1), rtol=1e-12)


def test_the_loss_and_the_edge_probe_schedule(run):
    mon, sink, opt = run
    steps, loss = sink.series("gaugedyn/loss")
    assert steps.tolist() == list(range(1, 13)) and np.all(np.diff(loss) < 0)
    assert sink.series("gaugedyn/edge/sharpness")[0].tolist() == [1, 6, 11]
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks


def _trajectory(instruments: bool) -> torch.Tensor:
    model, opt, loss_fn = setup(seed=3)
    drop = nn.Dropout(0.2)

    def noisy():  # a probe loss that draws random numbers (dropout, fresh inputs)
        return nn.functional.mse_loss(drop(model[0](torch.randn(8, 8))).sum(1), torch.ones(8))

    kw = (
        {"adam": {"every": 1}, "gauge": {"every": 1}, "edge": EdgeProbe(noisy, every=2)}
        if instruments
        else {"adam": False, "gauge": False, "spikes": False}
    )
    torch.manual_seed(11)
    mon = Monitor(opt, model, **kw)
    train(mon, opt, lambda: loss_fn() + 0.0 * drop(torch.ones(4)).sum(), 6)
    mon.detach()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_the_monitor_leaves_training_bit_for_bit_unchanged():
    """Same seed with and without every instrument (the probe's forward passes, RNG use)."""
    assert torch.equal(_trajectory(False), _trajectory(True))


def test_a_closure_is_evaluated_before_the_instruments():
    model, opt, loss_fn = setup()
    sink = MemorySink()
    mon = Monitor(opt, model, adam={"every": 1}, sinks=[sink])
    ref_model, ref_opt, ref_loss = setup()
    ref = Monitor(ref_opt, ref_model, adam={"every": 1})

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    for _ in range(5):
        assert opt.step(closure) is not None
    train(ref, ref_opt, ref_loss, 5)
    np.testing.assert_array_equal(mon.export()[0]["adam_norms"], ref.export()[0]["adam_norms"])
    assert len(sink.series("gaugedyn/loss")[0]) == 5


# -- sinks ------------------------------------------------------------------------------------
def _values(sink_rows):
    return {(s, k): v for s, k, v in sink_rows}


def test_tensorboard_event_files_hold_the_keys_and_values(tmp_path, run):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, mem, _ = run
    tb = TensorBoardSink(tmp_path / "tb")
    for step in sorted({s for s, _, _ in mem.rows}):
        tb.log(step, {k: v for s, k, v in mem.rows if s == step})
    tb.close()
    acc = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == mem.keys()
    got = {(e.step, tag): e.value for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag)}
    want = _values(mem.rows)
    assert got.keys() == want.keys()
    for k, v in want.items():  # TensorBoard stores float32
        assert got[k] == np.float32(v), k


def _wandb_history(folder) -> dict:
    """``{(step, key): value}`` from an offline wandb run file (LevelDB log blocks of protobuf
    records, after a 7-byte header)."""
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = glob.glob(os.path.join(folder, "wandb", "offline-run-*", "run-*.wandb"))
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b":W&B"
    pos, buf, out = 7, b"", {}
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:
            pos += left
            continue
        _, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if n == 0 and kind == 0:
            pos += left
            continue
        buf += data[pos + 7 : pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):  # a full record, or the last piece of one
            rec = pb.Record()
            rec.ParseFromString(buf)
            buf = b""
            if rec.WhichOneof("record_type") == "history":
                items = {
                    it.key or "/".join(it.nested_key): json.loads(it.value_json)
                    for it in rec.history.item
                }
                out |= {(items["_step"], k): v for k, v in items.items() if not k.startswith("_")}
    return out


def test_an_offline_wandb_run_holds_the_keys_and_values(tmp_path, run, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    _, mem, _ = run
    sink = WandbSink(dir=str(tmp_path), project="gaugedyn-test", mode="offline")
    for step in sorted({s for s, _, _ in mem.rows}):
        sink.log(step, {k: v for s, k, v in mem.rows if s == step})
    sink.close()
    assert wandb.run is None
    got = _wandb_history(tmp_path)
    assert got == _values(mem.rows)


def test_csv_and_parquet_sinks_round_trip(tmp_path, run):
    _, mem, _ = run
    path = tmp_path / "scalars.csv"
    sink = CSVSink(path, flush_every=7)
    for s, k, v in mem.rows:
        sink.log(s, {k: v})
    sink.close()
    with open(path) as f:
        rows = [(int(r["step"]), r["key"], float(r["value"])) for r in csv.DictReader(f)]
    assert rows == mem.rows
    with pytest.raises(InputError, match="exists"):
        CSVSink(path)
    pq = pytest.importorskip("pyarrow.parquet")
    sink = ParquetSink(tmp_path / "scalars.parquet", rows_per_group=10)
    for s, k, v in mem.rows:
        sink.log(s, {k: v})
    sink.close()
    table = pq.read_table(tmp_path / "scalars.parquet").to_pydict()
    assert list(zip(table["step"], table["key"], table["value"])) == mem.rows


def test_the_store_sink_saves_the_monitor_as_one_record(tmp_path):
    from gaugedyn.harness import ResultStore

    model, opt, loss_fn = setup()
    store = ResultStore(tmp_path / "store")
    sink = StoreSink(store, "run-1")
    mon = Monitor(opt, model, adam={"every": 1}, sinks=[sink])
    train(mon, opt, loss_fn, 4)
    mon.detach()
    back = store.load("run-1")
    assert back is not None
    np.testing.assert_array_equal(back["adam_norms"], mon.export()[0]["adam_norms"])
    names = list(back["scalar_keys"])
    loss = back["scalar_value"][np.asarray(back["scalar_key"]) == names.index("gaugedyn/loss")]
    np.testing.assert_array_equal(loss, mon.history["loss"])
    with pytest.raises(InputError, match="ResultStore"):
        StoreSink(object(), "k")


# -- the edge probe ---------------------------------------------------------------------------
def test_the_edge_probe_against_the_dense_hessian():
    from gaugedyn.adam import dense_hessian

    model, opt, loss_fn = setup(lr=3e-2)
    probe = EdgeProbe(loss_fn, every=1, tol=1e-10, maxiter=5000)
    params = list(model.parameters())
    for _ in range(4):
        opt.zero_grad()
        loss_fn().backward()
        opt.step()
    opt.zero_grad()
    loss_fn().backward()
    row = probe.measure(opt)
    P = probe.preconditioner(opt)
    st = [opt.state[p] for p in params]  # P by hand: v_t with this step's gradient
    v = torch.cat(
        [(0.999 * s["exp_avg_sq"] + 0.001 * p.grad**2).reshape(-1) for s, p in zip(st, params)]
    )
    torch.testing.assert_close(P, (v / (1 - 0.999**5)).sqrt() + 1e-8, rtol=1e-6, atol=0)
    H = dense_hessian(loss_fn, params).double()
    s = P.double().rsqrt()
    A = s[:, None] * H * s[None, :]
    assert row["sharpness"] == pytest.approx(float(torch.linalg.eigvalsh(A)[-1]), rel=1e-7)
    g = torch.cat([p.grad.reshape(-1) for p in params]).double()
    d = g / P.double()
    assert row["active_curvature"] == pytest.approx(float(d @ H @ d / (d @ (P * d))), rel=1e-5)
    assert row["threshold"] == pytest.approx(2 * 1.9 / 0.1)
    assert row["lr_sharpness"] == pytest.approx(3e-2 * row["sharpness"])


def test_the_edge_probe_reads_what_adam_edge_reads():
    """Full batch with the probe on the training loss: the adam_edge experiment's measurement."""
    from gaugedyn.experiments.adam_stability._edge import _setup, run_edge

    ref = run_edge("mse", 0.01, 0.9, 0.999, steps=6, seed=2, n_samples=64, lanczos_every=5)
    model, loss_fn = _setup("mse", 64, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    mon = Monitor(
        opt,
        model,
        adam=False,
        gauge=False,
        edge=EdgeProbe(loss_fn, every=5, tol=1e-6, maxiter=2000),
    )
    train(mon, opt, loss_fn, 6)
    mon.detach()
    h = mon.history
    assert h["edge_step"] == [1, 6]
    np.testing.assert_allclose(h["edge_sharpness"], ref["sharpness"][:2], rtol=1e-5)
    np.testing.assert_allclose(h["edge_active_curvature"], ref["kappa_at_lanczos"][:2], rtol=1e-6)


# -- the spike instrument and events ----------------------------------------------------------
class Scripted(torch.optim.Adam):
    """Adam whose 'loss' is scripted: the monitor sees the series it is given."""


def _feed(series, **kw):
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=0.0, betas=(0.9, 0.99))
    sink = MemorySink()
    mon = Monitor(opt, sinks=[sink], adam=False, **kw)
    seen = []
    mon.on("spike", lambda m, **info: seen.append(info))
    for x in series:
        p.grad = torch.zeros(1)
        mon.take_step(10.0**x)
    mon.detach()
    return mon, sink, seen


def test_the_spike_instrument_flags_a_spike_and_emits_the_event():
    rng = np.random.default_rng(0)
    ell = -3 + 0.1 * rng.standard_normal(3000)
    ell[1000:1100] += 3.0  # the block of steps 1008..1031 is the first the rise fills
    mon, sink, seen = _feed(ell)
    assert [e["step"] for e in seen] == [1032] and seen[0]["rise"] > 2
    assert sink.series("gaugedyn/spike/count")[1][-1] == 1
    assert sink.series("gaugedyn/event/spike")[0].tolist() == [1032]
    assert mon.export()[1]["spikes"]["verdict"]["status"] == "spiky"
    quiet = _feed(-3 + 0.1 * rng.standard_normal(3000))
    assert quiet[2] == [] and quiet[0].export()[1]["spikes"]["verdict"]["status"] == "quiet"


def test_the_spike_instrument_refuses_a_negative_loss():
    with pytest.raises(InputError, match="positive loss"):
        p = nn.Parameter(torch.zeros(1))
        opt = torch.optim.Adam([p])
        mon = Monitor(opt, adam=False)
        p.grad = torch.zeros(1)
        mon.take_step(-1.0)


def test_row_surgery_on_an_event_resets_exactly_those_rows():
    from gaugedyn.gauge import unit_rows

    model, opt, loss_fn = setup()
    mon = Monitor(opt, model, adam=False, gauge=False, spikes=False)
    mon.on("resample", reset_state("both"))
    train(mon, opt, loss_fn, 5)
    before = {
        n: {k: opt.state[p][k].clone() for k in ("exp_avg", "exp_avg_sq")}
        for n, p in model.named_parameters()
    }
    rows = unit_rows(model, mon_group(model), [2, 5])
    (rec,) = mon.emit("resample", rows=rows)
    for n, p in model.named_parameters():
        for k in ("exp_avg", "exp_avg_sq"):
            now = opt.state[p][k]
            if n in rows:
                axis, idx = rows[n]
                assert torch.all(now.index_select(axis, idx) == 0)
                keep = [i for i in range(now.shape[axis]) if i not in idx.tolist()]
                assert torch.equal(
                    now.index_select(axis, torch.tensor(keep)),
                    before[n][k].index_select(axis, torch.tensor(keep)),
                )
            else:
                assert torch.equal(now, before[n][k])
    assert mon.events[-1]["event"] == "resample" and mon.events[-1]["records"] == [rec.to_dict()]
    mon.on("whole", reset_state("both", rows=False))
    mon.emit("whole", rows=rows)
    for n, p in model.named_parameters():
        assert torch.all(opt.state[p]["exp_avg"] == 0) == (n in rows)
    with pytest.raises(InputError, match="rows="):
        mon.emit("resample")


def mon_group(model) -> str:
    from gaugedyn.gauge import find_units

    return find_units(model)[0][0].name


def test_the_recorder_follows_row_surgery_run_on_an_event():
    """After a row reset run by an event, the recorder's split of the next update equals the
    split computed from the optimizer's own state (the lag part of the reset rows is that of
    a fresh w = m)."""
    from gaugedyn.gauge import unit_rows

    model, opt, loss_fn = setup()
    mon = Monitor(opt, model, adam={"every": 1, "sample": 10_000}, gauge=False, spikes=False)
    mon.on("resample", reset_state("both", restart=True))
    train(mon, opt, loss_fn, 20)
    mon.emit("resample", rows=unit_rows(model, mon_group(model), [0, 1, 2, 3]))
    train(mon, opt, loss_fn, 1)
    arrays, _ = mon.export()
    lag = arrays["adam_sample_lag_g0"][-1]
    assert np.abs(lag).max() < 1.5


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, match",
    [
        ({"adam": {"every": 0}}, "every"),
        ({"adam": {"evry": 2}}, "evry"),
        ({"gauge": "yes"}, "gauge="),
        ({"edge": 3}, "edge="),
        ({"sinks": [object()]}, "sink"),
        ({"spikes": {"every": 1.5}}, "every"),
    ],
)
def test_bad_settings_give_one_clear_error(kw, match):
    model, opt, _ = setup()
    with pytest.raises(InputError, match=match):
        Monitor(opt, model, **kw)


def test_bad_objects_are_refused():
    model, opt, _ = setup()
    with pytest.raises(InputError, match="optimizer"):
        Monitor(model)
    with pytest.raises(InputError, match="LBFGS"):
        Monitor(torch.optim.LBFGS(model.parameters()))
    with pytest.raises(InputError, match="AdamRecorder|Adam"):
        Monitor(torch.optim.SGD(model.parameters(), lr=0.1), model, adam=True)
    with pytest.raises(InputError, match="model"):
        Monitor(opt, gauge=True)
    with pytest.raises(InputError, match="loss_fn"):
        EdgeProbe(3)
    with pytest.raises(InputError, match="tol"):
        EdgeProbe(lambda: torch.zeros(()), tol=2.0)


def test_lanczos_finds_a_known_top_eigenvalue_and_agrees_with_arpack():
    from gaugedyn.adam import lanczos_top, preconditioned_sharpness

    g = torch.Generator().manual_seed(0)
    Q, _ = torch.linalg.qr(torch.randn(300, 300, dtype=torch.float64, generator=g))
    eig = torch.linspace(-5.0, 3.0, 300, dtype=torch.float64)
    eig[-1] = 3.5  # a gap of 0.5 above the rest
    A = Q @ torch.diag(eig) @ Q.T
    theta, vec, products = lanczos_top(
        lambda u: A @ u, torch.randn(300, dtype=torch.float64, generator=g), tol=1e-10
    )
    assert theta == pytest.approx(3.5, rel=1e-9) and products < 300
    assert abs(float(vec @ Q[:, -1])) == pytest.approx(1.0, abs=1e-6)
    model, opt, loss_fn = setup()
    params = list(model.parameters())
    P = torch.rand(sum(p.numel() for p in params), generator=g) + 0.5
    a = preconditioned_sharpness(loss_fn, params, P, tol=1e-8, method="lanczos")
    b = preconditioned_sharpness(loss_fn, params, P, tol=1e-8, method="arpack")
    assert a["sharpness"] == pytest.approx(b["sharpness"], rel=1e-6)
    assert a["active_curvature"] == b["active_curvature"]
    with pytest.raises(InputError, match="method"):
        preconditioned_sharpness(loss_fn, params, P, method="power")


def test_lanczos_is_reproducible_and_stops_on_a_non_finite_product():
    """Without a start vector the torch Lanczos starts from a fixed vector (the same reading
    twice, the global generator untouched); a diverged model's product ends it with nan instead
    of spending the budget; parameters the loss does not use get zero curvature."""
    from gaugedyn.adam import edge_threshold, hessian_vector_product, lanczos_top
    from gaugedyn.adam import preconditioned_sharpness as ps

    model, opt, loss_fn = setup()
    params = list(model.parameters())
    P = torch.ones(sum(p.numel() for p in params))
    state = torch.get_rng_state()
    a, b = ps(loss_fn, params, P, tol=1e-4), ps(loss_fn, params, P, tol=1e-4)
    assert torch.equal(torch.get_rng_state(), state)
    assert a["sharpness"] == b["sharpness"] and torch.equal(a["eigenvector"], b["eigenvector"])
    calls = []

    def diverged(u):
        calls.append(1)
        return torch.full_like(u, math.nan) if len(calls) > 2 else u * torch.arange(1.0, 6.0)

    theta, _, products = lanczos_top(diverged, torch.ones(5, dtype=torch.float64), maxiter=300)
    assert math.isnan(theta) and products == 3
    unused = nn.Parameter(torch.ones(3))
    hv = hessian_vector_product(loss_fn, [*params, unused], torch.ones(P.numel() + 3))
    assert torch.equal(hv[-3:], torch.zeros(3)) and hv[:-3].abs().sum() > 0
    assert edge_threshold(0.9) == pytest.approx(38.0)
    with pytest.raises(InputError, match="beta1"):
        edge_threshold(1.0)
