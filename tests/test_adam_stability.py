"""The 1-D Adam theory: orbit, multipliers, boundary, against the exact numpy map."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.adam._stability import (
    adam_step,
    growth_rate,
    multipliers,
    oscillating_state,
    simulated_boundary,
    simulated_growth_rate,
    theory_boundary,
)


@pytest.mark.parametrize("n", [2, 3, 4.5])
@pytest.mark.parametrize("eps_share", [0.0, 0.5])
def test_orbit_is_period_two_of_the_exact_map(n, eps_share):
    a, lr = np.array([0.05, 0.3]), 1e-2
    st0 = oscillating_state(a, n, lr, 0.0)
    eps = eps_share * st0["A"] ** (n - 1) * 0.5
    st = oscillating_state(a, n, lr, eps)
    x, m, v = st["A"], st["M"], st["V"]
    x1, m1, v1 = adam_step(x, m, v, a, 0.01, n, lr, eps)
    np.testing.assert_allclose([x1, m1, v1], [-x, -m, v], rtol=1e-10)


@pytest.mark.parametrize("n", [2, 3, 6])
def test_multipliers_equal_finite_difference_jacobian(n):
    a, c, lr, eps = 0.2, 0.05, 1e-2, 0.0
    st = oscillating_state(a, n, lr, eps)
    z = np.array([st["A"], st["M"], st["V"]], dtype=float).ravel()
    S = np.diag([-1.0, -1.0, 1.0])
    J = np.zeros((3, 3))
    for k in range(3):
        dz = np.zeros(3)
        dz[k] = 1e-6 * abs(z[k])
        fp = S @ np.array(adam_step(*(z + dz), a, c, n, lr, eps), dtype=float).ravel()
        fm = S @ np.array(adam_step(*(z - dz), a, c, n, lr, eps), dtype=float).ravel()
        J[:, k] = (fp - fm) / (2 * dz[k])
    want = np.sort_complex(np.linalg.eigvals(J))
    got = np.sort_complex(multipliers(a, c, n, st["r"]))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_simulated_growth_rate_matches_theory_and_sees_a_wrong_theory():
    a, c = np.array([0.1, 0.3, 0.1]), np.array([1e-3, 0.1, 0.05])
    th = growth_rate(a, c, 2)
    sim = simulated_growth_rate(a, c, 2, 1e-2, 0.0, steps=3000)
    np.testing.assert_allclose(sim, th, rtol=0.02, atol=2e-4)
    wrong = growth_rate(a, c, 3)  # the cubic at the wrong exponent must not pass
    assert not np.allclose(sim, wrong, rtol=0.02, atol=2e-4)


def test_eps_free_state_is_unstable_and_eps_share_creates_a_boundary():
    a = np.logspace(-2.5, -0.2, 12)
    c = np.logspace(-6, -0.1, 12)
    for n in (2, 3, 4, 6):
        assert np.all(growth_rate(a[:, None], c[None, :], n, 0.0) > 0)
    cb = theory_boundary(np.array([0.1, 0.15, 0.2]), 2, np.array([0.99, 0.97, 0.9]))
    assert np.all(np.isfinite(cb))
    assert growth_rate(0.15, cb[1] * 1.1, 2, 0.97) < 0 < growth_rate(0.15, cb[1] / 1.1, 2, 0.97)


def test_boundary_on_the_quadratic_agrees_with_simulation():
    a, r, lr = np.array([0.15, 0.2]), np.array([0.97, 0.9]), 1e-2
    eps = r * lr * a / (2 * (2 - a))
    th = theory_boundary(a, 2, r, 1e-3, 1.0)
    sim = simulated_boundary(a, 2, lr, eps, 1e-3, 1.0, steps=2000, iters=16)
    assert np.all(np.abs(np.log(sim / th)) < 0.05)
    shifted = theory_boundary(a, 2, r - 0.02, 1e-3, 1.0)  # a theory off by a little in eps
    assert np.any(np.abs(np.log(sim / shifted)) > 0.05)


def test_series_blocks_are_the_block_statistics_of_the_curve():
    """`series_blocks()` (the compiled map's block reduction applied to a given curve) gives the
    blocks `block_statistics()` gives in numpy: lower median, maximum and minimum clipped at the
    floor, and ``bad`` exactly where a block holds ``nan`` or ``+inf`` (``-inf``, an exact zero,
    reads as the floor and is not bad); a tail shorter than a block is dropped."""
    # adam:_stability:565:48:off-by-one (the bad flags read from out[4], past the statistics)
    from gaugedyn.adam import series_blocks
    from gaugedyn.adam._spikes import block_statistics

    rng = np.random.default_rng(3)
    floor = -30.0
    for b, T in [(1, 7), (4, 43), (7, 70)]:
        x = rng.normal(-3.0, 20.0, T)  # some values below the floor
        x[rng.random(T) < 0.08] = np.nan
        x[rng.random(T) < 0.08] = np.inf
        x[rng.random(T) < 0.08] = -np.inf
        got, want = series_blocks(x, b, floor), block_statistics(x, b, floor)
        assert got.bad.dtype == bool and got.bad.any() and not got.bad.all(), (b, T)
        for k in ("median", "maximum", "minimum", "bad"):
            np.testing.assert_array_equal(getattr(got, k), getattr(want, k), err_msg=f"{k} {b}")
