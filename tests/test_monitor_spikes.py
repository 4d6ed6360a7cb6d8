"""The online spike detector: fed one sample at a time it returns what the offline detector returns
on the whole series (one shared reduction), on synthetic series built to be spiky, quiet,
underflowed and diverged, and on the loss stream of a published spike_boundary cell."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gaugedyn.adam import OnlineSpikeDetector, detect_spikes

ROOT = Path(__file__).resolve().parents[1]
B1, B2 = 0.9, 0.99  # horizon 300 steps
KEYS = (
    "spiky",
    "undetermined",
    "diverged",
    "quiet",
    "judged",
    "status",
    "n_spikes",
    "max_rise",
    "horizon",
)


def online(ell, beta1=B1, beta2=B2, **kw):
    det = OnlineSpikeDetector(beta1, beta2, **kw)
    closed = [c for x in ell if (c := det.update(x)) is not None]
    return det.verdict(), closed


def assert_same(ell, beta1=B1, beta2=B2, **kw):
    got, closed = online(ell, beta1, beta2, **kw)
    want = detect_spikes(np.asarray(ell), beta1, beta2, **kw)
    for k in KEYS:
        assert np.asarray(got[k]).item() == np.asarray(want[k]).item(), (k, got[k], want[k])
    return got, closed


def series(kind: str, T: int, rng) -> np.ndarray:
    base = -3 - 1e-4 * np.arange(T) + 0.2 * rng.standard_normal(T)
    if kind == "spike":
        base[T // 2 : T // 2 + 20] += 2.5
    elif kind == "bursts":
        base = -40 + 39 * (np.arange(T) % 700 < 5) + rng.standard_normal(T)
    elif kind == "underflow":
        base[600:1300] = -np.inf
    elif kind == "nan":
        base[2 * T // 3] = np.nan
    elif kind == "inf":
        base[2 * T // 3] = np.inf
    elif kind == "drift":
        base = -8 + 3 * np.arange(T) / T + 0.1 * rng.standard_normal(T)
    return base


@pytest.mark.parametrize("kind", ["quiet", "spike", "bursts", "underflow", "nan", "inf", "drift"])
@pytest.mark.parametrize("T", [250, 1500, 1799, 3000])
def test_online_equals_offline(kind, T):
    ell = series(kind, T, np.random.default_rng(T))
    got, closed = assert_same(ell)
    assert sum(c["spike"] for c in closed) == got["n_spikes"]


def test_the_known_answers_through_the_online_path():
    rng = np.random.default_rng(0)
    assert online(series("spike", 3000, rng))[0]["status"] == "spiky"
    assert online(series("quiet", 3000, rng))[0]["status"] == "quiet"
    assert online(series("nan", 3000, rng))[0]["status"] == "diverged"
    assert online(series("spike", 250, rng))[0]["status"] == "not judged"


def test_online_equals_offline_with_a_stride_a_ceiling_and_a_floor():
    rng = np.random.default_rng(5)
    ell = series("bursts", 1200, rng)
    assert_same(ell, stride=3)
    assert_same(series("spike", 3000, rng), ceiling=-0.2)
    assert_same(ell, floor=-30.0)


def test_a_spike_is_reported_when_its_block_closes():
    ell = series("quiet", 3000, np.random.default_rng(1))
    ell[1000] += 3.0  # block 3 (samples 900..1199)
    _, closed = online(ell)
    hits = [c for c in closed if c["spike"]]
    assert [c["sample"] for c in hits] == [1199] and hits[0]["rise"] > 2.0


def test_bad_settings_are_refused():
    from gaugedyn import InputError

    with pytest.raises(InputError, match="stride"):
        OnlineSpikeDetector(B1, B2, stride=0)
    with pytest.raises(InputError, match="floor"):
        OnlineSpikeDetector(B1, B2, floor=1.0, ceiling=0.0)
    with pytest.raises(InputError):
        OnlineSpikeDetector(1.0, B2)


def _published_cell(n: float, a_index: int):
    """The published spike_boundary edge of row ``a_index`` of ``n``'s orbit-start settled map:
    the grid cell just below it (the scan's first spiky cell) and the top of the row (quiet)."""
    summary = json.loads((ROOT / "results-data/spike_boundary/summary.json").read_text())
    params = summary["configuration"]["params"]
    a = params["one_minus_beta1"][a_index]
    edge = float(summary["diagnostics"]["systems"][f"n{n:g}_orbit_settled"]["boundary"][a_index])
    grid = np.array(params["one_minus_beta2"])
    return summary, a, float(grid[grid < edge].max()), float(grid.max())


def _stream(n, a, c, lr, eps, seeds, samples=None):
    """The cell's log10 losses over its settled window, with the experiment's own start and run
    length: one sample per step (``samples=None``) or the published envelope (``SAMPLES``
    samples a run, each the maximum over its stride). Returns ``(streams, stride)``."""
    from gaugedyn.adam import simulate_envelopes
    from gaugedyn.experiments.adam_stability._protocol import run_steps, settle_steps
    from gaugedyn.experiments.adam_stability._scan import start_state

    rng = np.random.default_rng(7)
    aa = np.full((1, seeds), a)
    x0, m0, v0, bias = start_state("orbit", aa, n, lr, eps, rng)
    steps = run_steps(np.array([a]), c)
    ell, stride, used = simulate_envelopes(
        x0, m0, v0, np.array([a]), c, n, lr, eps, steps, samples or int(steps[0]), bias
    )
    k = int(stride[0])
    w0 = -(-int(settle_steps(a, c)) // k)
    return ell[0, :, w0 : int(used[0])], k


@pytest.mark.parametrize("sampling", ["published", "every step"])
def test_a_published_spike_boundary_cell_fed_sample_by_sample(sampling):
    """n = 4, 1 - beta1 = 0.088, settled window: the published map is spiky on the grid cell
    just below the row's edge and quiet at the row's largest 1 - beta2. Fed at the published
    sampling (the envelope's stride), the online detector reproduces both, with the offline
    verdict on every seed; fed every step, it flags the spiky cell's spikes with the offline
    verdict."""
    from gaugedyn.adam import loss_floor
    from gaugedyn.experiments.adam_stability._protocol import SAMPLES

    summary, a, below, above = _published_cell(4.0, 5)
    p = summary["configuration"]["params"]
    share = {}
    for c in (below, above):
        streams, stride = _stream(
            4.0, a, c, p["lr"], p["eps"], 4, SAMPLES if sampling == "published" else None
        )
        statuses = [
            assert_same(ell, 1 - a, 1 - c, stride=stride, floor=loss_floor(4.0))[0]["status"]
            for ell in streams
        ]
        share[c] = statuses.count("spiky") / len(statuses)
    assert share[below] >= 0.5, share
    if sampling == "published":
        assert share[above] < 0.5, share
