"""The spike detector's shared pass made cheaper without changing a result: the compiled block
reduction's median by selection equals the sorted order statistic, and rises computed once
(`gaugedyn.adam.spike_block_rises()`) give the verdicts each sampling and window gives alone."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.adam import (
    FLOAT64_FLOOR,
    SpikeSampling,
    detect_spike_blocks,
    spike_block_rises,
    spike_block_size,
    spike_block_statistics,
)
from gaugedyn.adam._stability_kernels import close_block, select
from gaugedyn.experiments.adam_stability._protocol import judge_run


def _cases(rng):
    for t in range(600):
        n = int(rng.integers(1, 200))
        kind = t % 5
        if kind == 0:
            v = rng.normal(size=n)
        elif kind == 1:  # heavy ties
            v = rng.integers(0, 3, size=n).astype(float)
        elif kind == 2:  # descending (a loss falling through a block)
            v = np.sort(rng.normal(size=n))[::-1].copy()
        elif kind == 3:  # exact zeros as log losses: -inf among values
            v = np.where(rng.random(n) < 0.5, -np.inf, rng.normal(size=n))
        else:  # all equal
            v = np.full(n, 0.25)
        yield v


def test_select_is_the_sorted_order_statistic():
    rng = np.random.default_rng(3)
    for v in _cases(rng):
        n = v.size
        for k in {0, (n - 1) // 2, n - 1, int(rng.integers(0, n))}:
            w = v.copy()
            assert select(w, n, k) == np.sort(v)[k]
            assert np.array_equal(np.sort(w), np.sort(v))  # a permutation, nothing lost


def test_a_closed_block_is_the_sorted_blocks_median_maximum_and_minimum():
    rng = np.random.default_rng(4)
    for v in _cases(rng):
        n = v.size
        bad = v.copy()
        if n > 2:
            bad[rng.integers(0, n)] = np.nan if n % 2 else np.inf
        for x in (v, bad):
            out = np.full((4, 1, 1, 1), np.nan)
            close_block(x.copy(), n, out, 0, 0, 0, -7.0)
            clean = np.where(x < np.inf, x, -7.0)  # nan, +inf read as the bottom
            s = np.sort(clean)
            assert out[:3, 0, 0, 0].tolist() == [s[(n - 1) // 2], s[-1], s[0]]
            assert out[3, 0, 0, 0] == float(not np.all(x < np.inf))


def _series(rng, T: int, height: float) -> np.ndarray:
    """Log losses: a settled level with noise, six rises of ``height`` decades (none at 0),
    exact zeros now and then."""
    ell = -8 + 0.3 * rng.standard_normal(T)
    for start in rng.integers(2000, T - 400, size=6 if height else 0):
        ell[start : start + int(rng.integers(50, 400))] += height
    ell[rng.random(T) < 0.02] = -np.inf
    return ell


@pytest.mark.parametrize("rises", [(1.5, 2.0, 2.5), (2.5, 1.5)])
def test_shared_rises_give_each_thresholds_own_verdicts(rises):
    """Every threshold and window judged on rises computed once for the primary's sampling
    gives what it gives with its own rises, on seeds whose spikes only some thresholds see."""
    a, c = 0.1, 0.01
    rng = np.random.default_rng(5)
    ell = np.stack([_series(rng, 40_000, h) for h in (1.8, 2.3, 2.8, 0.0)], axis=1)
    base = SpikeSampling(rises[0], 24, 200)
    b = int(spike_block_size(1 - a, 1 - c, base))
    blocks = spike_block_statistics(ell, b, FLOAT64_FLOOR)
    shared = spike_block_rises(blocks.median, 1 - a, 1 - c, base, FLOAT64_FLOOR)
    spiky = {}
    for h in rises:
        z = base._replace(rise=h)
        for settle in (0, 3000, 7777):
            k0 = -(-settle // b)
            alone = [
                detect_spike_blocks(blocks.since(k0), 1 - a, 1 - c, z, FLOAT64_FLOOR, k0 * b),
                detect_spike_blocks(blocks, 1 - a, 1 - c, z, FLOAT64_FLOOR),
            ]
            together = judge_run(blocks, a, c, FLOAT64_FLOOR, settle, z, shared)
            own = judge_run(blocks, a, c, FLOAT64_FLOOR, settle, z)
            for x, y, w in zip(alone, together, own):
                for key in ("status", "n_spikes", "max_rise", "first_spike"):
                    assert np.array_equal(x[key], y[key]) and np.array_equal(x[key], w[key])
        spiky[h] = int(np.sum(alone[0]["spiky"]))
    assert spiky == {1.5: 3, 2.0: 2, 2.5: 1} or spiky == {2.5: 1, 1.5: 3}


def test_a_step_of_zero_over_zero_is_diverged_as_in_the_numpy_reference():
    """``m`` and ``v`` both zero (here from ``x = 0``; in a long run once ``x``, then ``m`` and
    ``v`` underflow) make the step ``0/0``: ``nan``, a diverged run, in the compiled map as in
    `simulate_losses()`; numba's default error model raised ``ZeroDivisionError`` and failed the
    whole task."""
    from gaugedyn.adam import loss_floor, simulate_blocks, simulate_losses

    a, c, steps, b = np.array([0.1]), np.array([0.01]), 96, 24
    x0 = np.array([[0.0, 0.0, 0.3]])
    for bias in (True, False):
        blocks, used = simulate_blocks(x0, 0.0, 0.0, a, c, 2.0, 1e-2, 0.0, [steps], [b], bias)
        assert used.tolist() == [steps // b]
        assert blocks.bad[:, 0, :2].all() and not blocks.bad[:, 0, 2].any()
    ref = simulate_losses(x0[0], a[0], c[0], 2.0, 1e-2, 0.0, steps)
    want = spike_block_statistics(ref, b, loss_floor(2.0))
    biased, _ = simulate_blocks(x0, 0.0, 0.0, a, c, 2.0, 1e-2, 0.0, [steps], [b], True)
    for got, expected in zip(biased, want):
        assert np.array_equal(np.asarray(got)[:, 0], np.asarray(expected))
