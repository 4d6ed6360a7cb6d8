"""The 1-D Adam map and the spike detector, pinned by hand computations and second implementations.

The map: the period-2 orbit derived by hand (``x -> -x``, ``m -> -m``, ``v -> v`` at
``v = g^2``, ``m = -a g / (2 - a)``; ``A = eta a / (2 (2 - a)) - eps`` at ``n = 2``), the first
bias-corrected step (``m^ = g``, ``v^ = g^2``: a sign step) and a plain loop of torch-ordered
Adam written here. The detector: a loop over blocks with ``statistics.median``.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from gaugedyn.adam import detect_spikes, oscillating_state, simulate_losses, spike_horizon
from gaugedyn.adam._spikes import MIN_BLOCKS, RISE_DECADES, block_rises
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


def _reference_rises(ell, H, stride=1):
    """Loop over blocks: ``max(block k) - median(block k-1)`` after one warm-up block."""
    b = max(1, round(H / stride))
    nb = len(ell) // b - 1
    blocks = [ell[b * (k + 1) : b * (k + 2)] for k in range(nb)]
    return np.array([max(blocks[k]) - statistics.median(blocks[k - 1]) for k in range(1, nb)])


def test_horizon_is_three_memories_of_the_slower_moment():
    assert int(spike_horizon(0.5, 0.75)) == 12  # 3 max(2, 4)
    assert int(spike_horizon(0.9, 0.5)) == 30  # 3 max(10, 2)
    assert int(spike_horizon(0.9, 0.999)) == 3000


def test_block_rises_equal_a_loop_over_blocks():
    rng = np.random.default_rng(0)
    ell = np.cumsum(rng.standard_normal(200)) * 0.3
    for H, stride in ((12, 1), (10, 3), (7, 2)):
        rises, resolved = block_rises(ell, H, stride)
        np.testing.assert_allclose(rises, _reference_rises(ell, H, stride), rtol=0, atol=1e-12)
        assert resolved.all()  # nothing near the float's floor


def test_the_baseline_is_the_previous_blocks_median_on_a_known_curve():
    """H = 12 (beta1 0.5, beta2 0.75). Warm-up 12 steps at 5 (ignored), then blocks:
    block 0 at 0 with one deep dip, block 1 at 0 with a peak of exactly 2 (a spike: >= 2 over
    block 0's median 0), block 2 at 1.5 (rise 1.5 over block 1's median 0), block 3 at 1.5 with
    a peak 3.4 (rise 1.9 over block 2's median 1.5: no spike), block 4 at 1.5."""
    H = 12
    assert int(spike_horizon(0.5, 0.75)) == H
    warm = [5.0] * H
    b0 = [0.0] * H
    b0[3] = -50.0
    b1 = [0.0] * H
    b1[6] = 2.0
    b2 = [1.5] * H
    b3 = [1.5] * H
    b3[2] = 3.4
    b4 = [1.5] * H
    ell = np.array(warm + b0 + b1 + b2 + b3 + b4)
    rises, resolved = block_rises(ell, H)
    np.testing.assert_allclose(rises, [2.0, 1.5, 1.9, 0.0], rtol=0, atol=1e-12)
    assert resolved.all()
    out = detect_spikes(ell, 0.5, 0.75)
    assert bool(out["spiky"]) and int(out["n_spikes"]) == 1 and bool(out["judged"])
    assert float(out["max_rise"]) == pytest.approx(2.0)
    assert RISE_DECADES == 2.0 and MIN_BLOCKS == 4


def test_judged_needs_exactly_min_blocks_and_divergence_is_not_a_spike():
    H = 12
    just = np.zeros(H * (MIN_BLOCKS + 1))
    short = np.zeros(H * MIN_BLOCKS)
    assert bool(detect_spikes(just, 0.5, 0.75)["judged"])
    assert not bool(detect_spikes(short, 0.5, 0.75)["judged"])
    gone = np.zeros(H * 6)
    gone[H * 3 :] = np.nan  # diverged for good: classified apart, never counted as a spike
    rises, _ = block_rises(gone, H)
    assert np.all(np.isfinite(rises))  # nan reads as the floor: it makes no rise
    out = detect_spikes(gone, 0.5, 0.75)
    assert bool(out["diverged"]) and not bool(out["spiky"]) and out["status"] == "diverged"
