"""The spike detector on synthetic loss curves built to have, and not to have, spikes.

A spike is a rise of the level (block medians over at least half a block), not spread within a
block: white log-noise of one decade, a flicker to exact zero and a slow drift read quiet; a
plateau as wide as a block, a settled cycle faster than the published envelope's stride and a
climb of many decades read spiky; ``nan`` and ``+inf`` read diverged.
"""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn._errors import InputError
from gaugedyn.adam import (
    FLOAT32_FLOOR,
    FLOAT64_FLOOR,
    SpikeSampling,
    detect_spike_blocks,
    detect_spikes,
    spike_block_size,
    spike_block_statistics,
    spike_steps_needed,
)
from gaugedyn.adam._spikes import RISE_DECADES, horizon

B1, B2 = 0.9, 0.99  # horizon 300 steps, blocks of 24


def _quiet(T, rng, level=-3.0, noise=0.2):
    return level - 1e-4 * np.arange(T) + noise * rng.standard_normal(T)


def _long(B1=B1, B2=B2):
    return 3 * spike_steps_needed(B1, B2)


def test_horizon_and_sampling_rules():
    assert horizon(0.9, 0.99) == 300
    assert horizon(0.99, 0.9) == 300
    assert horizon(0.0, 0.0) == 3
    assert int(spike_block_size(0.9, 0.99)) == 24
    assert int(spike_block_size(0.9, 0.999999)) == 15000
    with pytest.raises(InputError):
        horizon(1.0, 0.5)
    with pytest.raises(InputError, match="rise > 0"):
        SpikeSampling(rise=-1.0).checked()


@pytest.mark.parametrize("blocks", [1, 2, 10])
def test_a_plateau_as_wide_as_a_block_is_found_where_it_is(blocks):
    rng = np.random.default_rng(1)
    ell = _quiet(_long(), rng)
    b = int(spike_block_size(B1, B2))
    ell[4000 : 4000 + blocks * b] += RISE_DECADES + 0.5
    d = detect_spikes(ell, B1, B2)
    assert d["spiky"] and int(d["n_spikes"]) == 1 and d["judged"]
    assert 4000 - b <= int(d["first_spike"]) <= 4000 + b


def test_a_single_step_outlier_and_spread_within_a_block_are_not_spikes():
    rng = np.random.default_rng(2)
    ell = _quiet(_long(), rng)
    ell[4000] += 10.0  # one step, ten decades: an outlier, not a rise of the level
    assert detect_spikes(ell, B1, B2)["status"] == "quiet"
    noise = -3.0 + rng.standard_normal(_long())  # white log-noise of one decade
    assert detect_spikes(noise, B1, B2)["status"] == "quiet"


def test_a_settled_cycle_faster_than_the_old_stride_is_spiky():
    """The loss sits low and jumps back 10 decades every 0.04 / (1 - beta2) steps."""
    b1, b2 = 0.99, 0.9999  # horizon 30000 steps, blocks of 150
    T = _long(b1, b2)
    period = int(0.04 / (1 - b2))
    cycle = -5.0 - 10.0 * (np.arange(T) % period) / period
    assert detect_spikes(cycle, b1, b2)["spiky"]
    shallow = -5.0 - 1.0 * (np.arange(T) % period) / period
    assert detect_spikes(shallow, b1, b2)["status"] == "quiet"


def test_slow_drift_and_small_rises_are_quiet():
    rng = np.random.default_rng(3)
    T = _long()
    drift = -8 + 3 * np.arange(T) / T + 0.1 * rng.standard_normal(T)  # +3 decades, slowly
    assert not detect_spikes(drift, B1, B2)["spiky"]
    small = _quiet(T, rng)
    small[4000:4100] += RISE_DECADES - 0.3  # below the threshold
    assert not detect_spikes(small, B1, B2)["spiky"]
    assert detect_spikes(small, B1, B2, SpikeSampling(rise=1.5))["spiky"]  # the threshold moves


def test_warm_up_and_short_runs():
    rng = np.random.default_rng(4)
    ell = _quiet(_long(), rng)
    ell[100:200] += 5  # inside the warm-up horizon
    assert not detect_spikes(ell, B1, B2)["spiky"]
    short = detect_spikes(_quiet(3 * 300, rng), B1, B2)
    assert not short["judged"] and not short["spiky"] and short["status"] == "not judged"


def test_divergence_is_classified_apart_from_spikes_in_batches():
    rng = np.random.default_rng(5)
    T = _long()
    batch = np.stack([_quiet(T, rng), _quiet(T, rng), _quiet(T, rng), _quiet(T, rng)], axis=1)
    batch[1200:, 1] = np.nan
    batch[1000:1010, 2] = 1.0  # above the ceiling (the initial loss)
    batch[3000, 3] = np.inf  # one +inf step, whatever the ceiling
    d = detect_spikes(batch, B1, B2, ceiling=0.0)
    assert d["diverged"].tolist() == [False, True, True, True]
    assert d["spiky"].tolist() == [False, False, False, False]
    assert d["status"].tolist() == ["quiet", "diverged", "diverged", "diverged"]
    assert detect_spikes(batch[:, 3], B1, B2)["status"] == "diverged"  # the default ceiling
    with pytest.raises(InputError):
        detect_spikes(batch, B1, B2, floor=0.0, ceiling=-1.0)


def _flicker(T, lo, hi, share_lo, rng):
    """log10 of a loss flickering between ``lo`` and ``hi`` (``share_lo`` of steps at ``lo``)."""
    return np.where(rng.random(T) < share_lo, lo, hi)


@pytest.mark.parametrize("dtype_floor", [FLOAT64_FLOOR, FLOAT32_FLOOR])
@pytest.mark.parametrize("share", [0.2, 0.3, 0.8])
def test_flicker_at_zero_or_below_resolution_is_never_spiky(dtype_floor, share):
    """The reproducer of issue 25: a loss flickering between 0 and 1e-9 is not spiky (log 0 =
    -inf must not make every later nonzero loss an infinite rise); a zero-dominated level is
    unresolved (undetermined); a real rise of two decades and more is spiky."""
    rng = np.random.default_rng(6)
    T = _long()
    zero = _flicker(T, -np.inf, -9.0, share, rng)
    d = detect_spikes(zero, B1, B2, floor=dtype_floor)
    assert not d["spiky"] and not d["diverged"]
    assert d["status"] == ("undetermined" if share > 0.5 else "quiet")
    rise = _flicker(T, -9.0, -8.0, 0.5, rng)
    rise[4000:4200] = -8.0 + RISE_DECADES + 0.05
    r = detect_spikes(rise, B1, B2, floor=dtype_floor)
    assert r["spiky"] and r["status"] == "spiky" and r["n_spikes"] >= 1


def test_block_statistics_are_the_lower_median_the_maximum_and_the_minimum():
    ell = np.array([3.0, 1.0, 2.0, 4.0, -np.inf, np.nan, 7.0, 5.0])
    blocks = spike_block_statistics(ell, 4, floor=-10.0)
    assert blocks.median.tolist() == [2.0, -10.0]  # lower medians; -inf and nan read the floor
    assert blocks.maximum.tolist() == [4.0, 7.0]
    assert blocks.minimum.tolist() == [1.0, -10.0]
    assert blocks.bad.tolist() == [False, True]
    d = detect_spike_blocks(blocks, B1, B2)
    assert d["status"] == "not judged"


@pytest.mark.parametrize("name", ["horizon", "block_size", "level_blocks", "judged_blocks"])
def test_a_beta_out_of_range_is_named_as_the_argument_it_was_given_as(name):
    """The error names each beta under its own name, whichever of them is out of range."""
    # adam:_spikes:332:12:swap and adam:_spikes:205:12:swap (horizon(beta2, beta1): the same
    # horizon, but the error then reports beta1 as beta2 and beta2 as beta1)
    from gaugedyn.adam import _spikes

    f = getattr(_spikes, name)
    with pytest.raises(InputError, match=r"beta1=1\.5, beta2=0\.5"):
        f(1.5, 0.5)
    with pytest.raises(InputError, match=r"beta1=0\.5, beta2=-0\.25"):
        f(0.5, -0.25)


def test_lower_median_is_the_ceil_half_th_smallest_along_any_axis():
    """`lower_median` against a full sort, for odd and even lengths and either axis (a planted
    negative index, `(1 - n) // 2`, into the partition or as its pivot reads another value; the
    pivot's only at lengths where the selection does not sort the whole array)."""
    from gaugedyn.adam._spikes import lower_median

    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 4, 5, 8, 9, 101, 1000):
        x = rng.permutation(np.arange(float(n) * 3).reshape(n, 3).ravel()).reshape(n, 3)
        want = np.sort(x, axis=0)[(n - 1) // 2]
        np.testing.assert_array_equal(lower_median(x, axis=0), want)
        np.testing.assert_array_equal(lower_median(x.T.copy(), axis=1), want)
    assert lower_median(np.array([5.0, 1.0, 4.0, 2.0])) == 2.0
    for n in (1000, 1001):  # many long columns: a wrong pivot shows in a few of them
        x = rng.normal(size=(n, 400))
        np.testing.assert_array_equal(lower_median(x, axis=0), np.sort(x, axis=0)[(n - 1) // 2])


def test_the_level_window_is_the_exact_ceiling_where_it_is_a_whole_number_of_blocks():
    """`level_blocks` is ``max(LEVEL_MIN_BLOCKS, ceil(level_horizons H / b))`` in exact
    arithmetic: where ``level_horizons H / b`` is a whole number the window is that number, not
    one more (the ``- 1e-9`` guards the float quotient; a planted ``+ 1e-9`` adds a block)."""
    from fractions import Fraction
    from math import ceil

    from gaugedyn.adam._spikes import LEVEL_MIN_BLOCKS, Sampling, block_size, level_blocks

    whole = 0
    for beta2 in (0.9, 0.99, 0.995, 0.999, 0.9999):
        for beta1 in (0.5, 0.9, 0.99):
            for s in (Sampling(), Sampling(blocks_per_horizon=100), Sampling(level_horizons=3.0)):
                H = int(horizon(beta1, beta2))
                b = int(block_size(beta1, beta2, s))
                q = Fraction(s.level_horizons) * H / b
                whole += q.denominator == 1 and q > LEVEL_MIN_BLOCKS
                assert level_blocks(beta1, beta2, s) == max(LEVEL_MIN_BLOCKS, ceil(q))
    assert whole >= 3  # the case the guard is for is among them
