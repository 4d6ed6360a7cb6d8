"""The spike detector on synthetic loss curves built to have, and not to have, spikes."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn._errors import InputError
from gaugedyn.adam._spikes import (
    FLOAT32_FLOOR,
    FLOAT64_FLOOR,
    MIN_BLOCKS,
    RISE_DECADES,
    block_rises,
    detect,
    horizon,
    steps_needed,
)

B1, B2 = 0.9, 0.99  # horizon 300 steps


def _quiet(T, rng, level=-3.0, noise=0.2):
    return level - 1e-4 * np.arange(T) + noise * rng.standard_normal(T)


def test_horizon_rule():
    assert horizon(0.9, 0.99) == 300
    assert horizon(0.99, 0.9) == 300
    assert horizon(0.0, 0.0) == 3
    assert steps_needed([0.9, 0.5], [0.999, 0.9]) == 3000 * (MIN_BLOCKS + 1)
    with pytest.raises(InputError):
        horizon(1.0, 0.5)


@pytest.mark.parametrize("width", [1, 20, 250])
def test_isolated_spike_is_found(width):
    rng = np.random.default_rng(1)
    T = steps_needed(B1, B2)
    ell = _quiet(T, rng)
    ell[1000 : 1000 + width] += RISE_DECADES + 0.5
    d = detect(ell, B1, B2)
    assert d["spiky"] and d["n_spikes"] >= 1 and d["judged"]


def test_periodic_bursts_found_and_deep_dips_ignored():
    rng = np.random.default_rng(2)
    T = steps_needed(B1, B2)
    bursts = -40 + 39 * (np.arange(T) % 700 < 5) + rng.standard_normal(T)
    assert detect(bursts, B1, B2)["spiky"]
    dips = _quiet(T, rng)
    dips[rng.integers(0, T, 200)] -= 15  # momentary near-zero losses: not spikes
    assert not detect(dips, B1, B2)["spiky"]


def test_no_spike_in_smooth_noisy_or_slowly_drifting_curves():
    rng = np.random.default_rng(3)
    T = steps_needed(B1, B2)
    assert not detect(_quiet(T, rng), B1, B2)["spiky"]
    drift = -8 + 3 * np.arange(T) / T + 0.1 * rng.standard_normal(T)  # +3 decades, slowly
    assert not detect(drift, B1, B2)["spiky"]
    small = _quiet(T, rng)
    small[1000:1010] += RISE_DECADES - 0.3  # below the threshold
    assert not detect(small, B1, B2)["spiky"]


def test_warm_up_and_short_runs():
    rng = np.random.default_rng(4)
    T = steps_needed(B1, B2)
    ell = _quiet(T, rng)
    ell[100:110] += 5  # inside the warm-up horizon
    assert not detect(ell, B1, B2)["spiky"]
    short = detect(_quiet(3 * 300, rng), B1, B2)
    assert not short["judged"] and not short["spiky"]


def test_divergence_is_classified_apart_from_spikes_in_batches_and_with_stride():
    rng = np.random.default_rng(5)
    T = steps_needed(B1, B2)
    batch = np.stack([_quiet(T, rng), _quiet(T, rng), _quiet(T, rng)], axis=1)
    batch[1200:, 1] = np.nan
    batch[1000:1010, 2] = 1.0  # above the ceiling (the initial loss)
    d = detect(batch, B1, B2, ceiling=0.0)
    assert d["diverged"].tolist() == [False, True, True]
    assert d["spiky"].tolist() == [False, False, False]
    assert d["status"].tolist() == ["quiet", "diverged", "diverged"]
    env = batch[: T // 10 * 10].reshape(-1, 10, 3).max(axis=1)
    assert detect(env, B1, B2, stride=10, ceiling=0.0)["diverged"].tolist() == [False, True, True]
    assert block_rises(batch[:10], 300)[0].shape[0] == 0
    with pytest.raises(InputError):
        detect(batch, B1, B2, floor=0.0, ceiling=-1.0)


def _flicker(T, lo, hi, share_lo, rng):
    """log10 of a loss flickering between ``lo`` and ``hi`` (``share_lo`` of steps at ``lo``)."""
    return np.where(rng.random(T) < share_lo, lo, hi)


@pytest.mark.parametrize("dtype_floor", [FLOAT64_FLOOR, FLOAT32_FLOOR])
@pytest.mark.parametrize("share", [0.2, 0.5, 0.8])
def test_flicker_at_zero_or_below_resolution_is_never_spiky(dtype_floor, share):
    """The reproducer of issue 25: a loss flickering between 0 and 1e-9 is not spiky (it was:
    log 0 = -inf made every later nonzero loss an infinite rise); between 1e-9 and 1e-8 it is
    not spiky either; a real rise of two decades is."""
    rng = np.random.default_rng(6)
    T = steps_needed(B1, B2)
    zero = _flicker(T, -np.inf, -9.0, share, rng)
    d = detect(zero, B1, B2, floor=dtype_floor)
    assert not d["spiky"] and not d["diverged"]
    # a zero-dominated baseline is unresolved: undetermined; otherwise the median is -9: quiet
    assert d["status"] == ("undetermined" if share >= 0.5 else "quiet")
    both = detect(_flicker(T, -9.0, -8.0, share, rng), B1, B2, floor=dtype_floor)
    assert both["status"] == "quiet" and both["max_rise"] <= 1.0
    rise = _flicker(T, -9.0, -8.0, share, rng)
    rise[800:820] = -8.0 + RISE_DECADES + 0.05  # two decades above the flicker's top and more
    r = detect(rise, B1, B2, floor=dtype_floor)
    assert r["spiky"] and r["status"] == "spiky" and r["n_spikes"] >= 1


def test_float32_and_float64_curves_underflow_differently():
    """A loss decaying to 1e-50 then climbing back by three decades: in float64 both levels are
    resolved (spiky); rounded to float32 the low level is an exact zero (undetermined)."""
    T = steps_needed(B1, B2)
    loss = np.full(T, 1e-50)
    loss[800:850] = 1e-47
    for dt, floor, want in (
        (np.float64, FLOAT64_FLOOR, "spiky"),
        (np.float32, FLOAT32_FLOOR, "undetermined"),
    ):
        with np.errstate(divide="ignore", under="ignore"):
            ell = np.log10(loss.astype(dt).astype(float))
        assert detect(ell, B1, B2, floor=floor)["status"] == want
