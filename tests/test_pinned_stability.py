"""The 1-D Adam map and the spike detector, pinned by hand computations and second implementations.

The map: the period-2 orbit derived by hand (``x -> -x``, ``m -> -m``, ``v -> v`` at
``v = g^2``, ``m = -a g / (2 - a)``; ``A = eta a / (2 (2 - a)) - eps`` at ``n = 2``), the first
bias-corrected step (``m^ = g``, ``v^ = g^2``: a sign step) and a plain loop of torch-ordered
Adam written here. The detector: a loop over blocks with ``statistics.median_low`` and
``statistics.median_high``.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from gaugedyn.adam import (
    SpikeSampling,
    detect_spikes,
    oscillating_state,
    simulate_losses,
    spike_block_size,
    spike_block_statistics,
    spike_horizon,
    spike_level_blocks,
    spike_steps_needed,
)
from gaugedyn.adam._spikes import (
    BLOCK_MIN,
    LEVEL_MIN_BLOCKS,
    MIN_HORIZONS,
    RISE_DECADES,
    judged_blocks,
)
from gaugedyn.adam._spikes import rises as spike_rises
from gaugedyn.adam._stability import adam_step


def _g(x, n):
    return math.copysign(abs(x) ** (n - 1), x)


@pytest.mark.parametrize(("a", "lr", "eps"), [(0.1, 0.02, 0.0), (0.3, 0.05, 1e-3)])
def test_orbit_at_n_2_is_the_hand_derived_period_two_state(a, lr, eps):
    """At ``n = 2``, ``g = x``: ``-M = (1 - a) M + a A`` gives ``M = -a A / (2 - a)``; the step
    ``-2A = -eta M / (sqrt V + eps)`` with ``V = A^2`` gives ``A = eta a / (2 (2 - a)) - eps``."""
    st = oscillating_state(a, 2, lr, eps)
    A = lr * a / (2 * (2 - a)) - eps
    assert float(st["A"]) == pytest.approx(A, rel=1e-14)
    assert float(st["M"]) == pytest.approx(-a * A / (2 - a), rel=1e-14)
    assert float(st["V"]) == pytest.approx(A * A, rel=1e-14)
    assert float(st["r"]) == pytest.approx(eps / (A + eps), rel=1e-14, abs=1e-300)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_stationary_map_by_hand_sends_the_orbit_to_its_mirror(n):
    """One step of the map with no bias correction, written here in scalars."""
    a, c, lr = 0.2, 0.03, 1e-2
    eps = 0.1 * (lr * a / (2 * (2 - a))) ** (n - 1)  # an eps share that leaves an orbit
    st = oscillating_state(a, n, lr, eps)
    assert np.isfinite(st["A"])
    A, M, V = float(st["A"]), float(st["M"]), float(st["V"])
    g = _g(A, n)
    m = (1 - a) * M + a * g
    v = (1 - c) * V + c * g * g
    x = A - lr * m / (math.sqrt(v) + eps)
    assert (x, m, v) == pytest.approx((-A, -M, V), rel=1e-9)
    got = adam_step(A, M, V, a, c, n, lr, eps)
    assert tuple(map(float, got)) == pytest.approx((x, m, v), rel=1e-13)


@pytest.mark.parametrize("t", [1, 2, 7])
def test_bias_corrected_step_is_the_hand_value_per_step_count(t):
    a, c, n, lr, eps = 0.2, 0.05, 3.0, 0.1, 1e-3
    x, m, v = 0.7, -0.1, 0.02
    g = _g(x, n)
    m1 = (1 - a) * m + a * g
    v1 = (1 - c) * v + c * g * g
    mh, vh = m1 / (1 - (1 - a) ** t), v1 / (1 - (1 - c) ** t)
    want = (x - lr * mh / (math.sqrt(vh) + eps), m1, v1)
    assert tuple(map(float, adam_step(x, m, v, a, c, n, lr, eps, t))) == pytest.approx(
        want, rel=1e-13
    )


def _loop_losses(x0, a, c, n, lr, eps, steps, record):
    """Torch-ordered Adam from ``m = v = 0`` in a plain loop; max log10 loss per record."""
    x, m, v, out, peak = x0, 0.0, 0.0, [], -math.inf
    for t in range(1, steps + 1):
        g = _g(x, n)
        m = (1 - a) * m + a * g
        v = (1 - c) * v + c * g * g
        x = x - lr * (m / (1 - (1 - a) ** t)) / (math.sqrt(v / (1 - (1 - c) ** t)) + eps)
        peak = max(peak, math.log10(abs(x) ** n / n))
        if t % record == 0:
            out.append(peak)
            peak = -math.inf
    return np.array(out)


def test_simulated_losses_equal_a_plain_loop_of_bias_corrected_adam():
    x0 = np.array([0.5, -1.2, 2.0])
    a, c = np.array([0.1, 0.3, 0.05]), np.array([0.001, 0.02, 0.2])
    n, lr, eps = 3.0, 0.05, 1e-8
    got = simulate_losses(x0, a, c, n, lr, eps, steps=60, record=4)
    assert got.shape == (15, 3)
    for i in range(3):
        want = _loop_losses(float(x0[i]), float(a[i]), float(c[i]), n, lr, eps, 60, 4)
        np.testing.assert_allclose(got[:, i], want, rtol=1e-12, atol=1e-12)


def test_first_bias_corrected_step_is_a_sign_step_and_the_stationary_one_is_not():
    """From ``m = v = 0``, step 1 has ``m^ = g`` and ``v^ = g^2``: ``x1 = x0 - eta g / (|g| +
    eps)``; without the corrections, ``x1 = x0 - eta a g / (sqrt(c) |g| + eps)``."""
    x0, a, c, n, lr, eps = 0.8, 0.1, 0.001, 2.0, 0.05, 1e-8
    g = _g(x0, n)
    on = float(adam_step(x0, 0.0, 0.0, a, c, n, lr, eps, 1)[0])
    off = float(adam_step(x0, 0.0, 0.0, a, c, n, lr, eps)[0])
    assert on == pytest.approx(x0 - lr * g / (abs(g) + eps), rel=1e-13)
    assert off == pytest.approx(x0 - lr * a * g / (math.sqrt(c) * abs(g) + eps), rel=1e-13)
    first = simulate_losses(x0, a, c, n, lr, eps, steps=1)[0]
    assert float(first) == pytest.approx(math.log10(on**2 / 2), rel=1e-13)


def _reference_rises(ell, b, m, floor=-300.0):
    """A loop over blocks of ``b`` steps: each block's lower median (``statistics.median_low``)
    of the loss clipped at ``floor``, minus the upper median (``statistics.median_high``) of
    the ``m`` block medians before it; ``-inf`` where that level lies at the floor."""
    nb = len(ell) // b
    med = [
        statistics.median_low(max(x, floor) for x in ell[k * b : (k + 1) * b]) for k in range(nb)
    ]
    out = []
    for k in range(m, nb):
        level = statistics.median_high(med[k - m : k])
        out.append(med[k] - level if level > floor else -math.inf)
    return np.array(out)


def test_horizon_is_three_memories_of_the_slower_moment():
    assert int(spike_horizon(0.5, 0.75)) == 12  # 3 max(2, 4)
    assert int(spike_horizon(0.9, 0.5)) == 30  # 3 max(10, 2)
    assert int(spike_horizon(0.9, 0.999)) == 3000


def test_sampling_is_block_min_or_the_horizon_over_blocks_per_horizon():
    assert int(spike_block_size(0.5, 0.75)) == BLOCK_MIN == 24  # H = 12: the fewest steps
    H = int(spike_horizon(0.9, 0.99999))  # 3 / 1e-5, one step more by the float's rounding
    assert H in (300000, 300001) and int(spike_block_size(0.9, 0.99999)) == -(-H // 200)
    assert int(spike_block_size(0.9, 0.999, SpikeSampling(block_min=5))) == 15  # 3000 / 200
    assert spike_level_blocks(0.5, 0.75) == LEVEL_MIN_BLOCKS == 9
    assert spike_level_blocks(0.9, 0.99999) == 50  # a quarter horizon of 1500-step blocks


def test_rises_equal_a_loop_over_blocks():
    rng = np.random.default_rng(0)
    ell = np.cumsum(rng.standard_normal(600)) * 0.3
    ell[rng.random(600) < 0.1] = -np.inf  # exact zeros: the floor
    for b, m in ((4, 3), (5, 9), (7, 4)):
        blocks = spike_block_statistics(ell, b, floor=-300.0)
        got, resolved = spike_rises(blocks.median, m, -300.0)
        got = np.where(resolved, got, -np.inf)
        np.testing.assert_allclose(got, _reference_rises(ell, b, m), rtol=0, atol=1e-12)


def test_a_rise_of_the_level_on_a_known_curve():
    """beta1 0.5, beta2 0.75: H = 12 steps, blocks of 24, a level over 9 blocks. Warm-up (one
    block) at 5, then nine blocks at 0 (one with a deep dip in fewer than half its steps), then
    a block at 2 with a single step at 9 (a rise of exactly 2: a spike), four blocks at 0, a
    block at 1.9 (no spike) and eleven at 0."""
    b = 24
    assert int(spike_block_size(0.5, 0.75)) == b
    blocks = [[5.0] * b] + [[0.0] * b for _ in range(9)]
    blocks[3][:10] = [-50.0] * 10
    spike = [2.0] * b
    spike[5] = 9.0
    blocks += [spike] + [[0.0] * b for _ in range(4)] + [[1.9] * b] + [[0.0] * b for _ in range(11)]
    ell = np.array([x for blk in blocks for x in blk])
    out = detect_spikes(ell, 0.5, 0.75)
    assert bool(out["spiky"]) and int(out["n_spikes"]) == 1 and bool(out["judged"])
    assert float(out["max_rise"]) == pytest.approx(2.0)
    assert int(out["first_spike"]) == 10 * b
    assert RISE_DECADES == 2.0 and MIN_HORIZONS == 4
    blocks[10] = [1.9] * b
    assert (
        detect_spikes(np.array([x for blk in blocks for x in blk]), 0.5, 0.75)["status"] == "quiet"
    )


def test_judged_needs_exactly_the_warm_up_the_window_and_four_horizons():
    H, b = 12, 24
    need = 1 + 9 + 2  # warm-up block, level window, ceil(4 H / b) judged blocks
    assert judged_blocks(0.5, 0.75) == need
    assert spike_steps_needed(0.5, 0.75) == need * b
    assert bool(detect_spikes(np.zeros(need * b), 0.5, 0.75)["judged"])
    assert not bool(detect_spikes(np.zeros(need * b - 1), 0.5, 0.75)["judged"])
    gone = np.zeros(b * 20)
    gone[b * 14 :] = np.nan  # diverged for good: classified apart, never counted as a spike
    out = detect_spikes(gone, 0.5, 0.75)
    assert bool(out["diverged"]) and not bool(out["spiky"]) and out["status"] == "diverged"
    assert 4 * H <= 2 * b
