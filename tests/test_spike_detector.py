"""The spike detector on synthetic loss curves built to have, and not to have, spikes."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn._errors import InputError
from gaugedyn.adam._spikes import (
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
    ell[1000:1000 + width] += RISE_DECADES + 0.5
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


def test_divergence_counts_as_spike_and_batches_and_stride():
    rng = np.random.default_rng(5)
    T = steps_needed(B1, B2)
    batch = np.stack([_quiet(T, rng), _quiet(T, rng)], axis=1)
    batch[1200:, 1] = np.nan
    d = detect(batch, B1, B2)
    assert d["spiky"].tolist() == [False, True]
    env = batch[: T // 10 * 10].reshape(-1, 10, 2).max(axis=1)
    assert detect(env, B1, B2, stride=10)["spiky"].tolist() == [False, True]
    assert block_rises(batch[:10], 300).shape[0] == 0


def test_boundary_extraction_fit_and_findings_on_built_maps():
    from gaugedyn.experiments.adam_stability.spike_boundary import (
        _check_claim,
        _findings,
        boundary_fit,
        distance_interval,
        upper_edge,
    )

    a = np.logspace(-2, -0.3, 6)
    c = np.logspace(-7, 0, 40)

    def fits_for(k, C):
        prob = (c[None, :] < C * a[:, None] ** k).astype(float)
        return boundary_fit(a, upper_edge(prob, c))

    cubic, linear = fits_for(3.0, 1.0), fits_for(1.0, 0.3)
    assert cubic["slope"][0] == pytest.approx(3.0, abs=0.1)
    assert linear["slope"][0] == pytest.approx(1.0, abs=0.1)
    tasks = [{"kind": "1d", "n": 2.0}, {"kind": "1d", "n": 4.0}, {"kind": "1d", "n": 6.0},
             {"kind": "task", "task": "digits_ce"}]
    fits = {"n2": cubic, "n4": linear, "n6": fits_for(1.0, 0.03), "digits_ce": linear}
    got = {f.id: f.verdict for f in _findings(tasks, fits, [{}], np.random.SeedSequence(7))}
    assert got["spike_boundary.cubic_quadratic"] == "HELD"
    assert got["spike_boundary.near_linear:n4"] == "HELD"
    assert got["spike_boundary.linear_on_tasks:digits_ce"] == "HELD"
    assert got["spike_boundary.C_moves_with_n"] == "HELD"
    fits = {"n2": linear, "n4": cubic, "n6": fits_for(3.0, 1.0), "digits_ce": cubic}
    bad = {f.id: f.verdict for f in _findings(tasks, fits, [{}], np.random.SeedSequence(7))}
    assert bad["spike_boundary.cubic_quadratic"] == "NOT HELD"
    assert bad["spike_boundary.near_linear:n4"] == "NOT HELD"
    assert bad["spike_boundary.linear_on_tasks:digits_ce"] == "NOT HELD"
    assert bad["spike_boundary.C_moves_with_n"] == "NOT HELD"
    assert np.isnan(upper_edge(np.ones((1, 5)), np.arange(1, 6.0))[0])  # spiky to the top
    assert distance_interval((1.2, 0.9, 1.4), 1.0)[1:] == (0.0, pytest.approx(0.4))
    ok = _check_claim({"c_sim": np.array([0.1, 0.2]), "c_theory": np.array([0.101, 0.2])})
    wrong = _check_claim({"c_sim": np.array([0.1, np.nan]), "c_theory": np.array([0.1, 0.2])})
    assert ok.passed and not wrong.passed
