"""The beta-grid analysis: the claim verdicts on constructed inputs, cell means from results."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.adam import analyse_grid, grid_claims

B = [0.9, 0.95, 0.99]
DIAG = np.eye(3, dtype=bool)


def _cells(sign_diag=0.7, lag_off=0.3, residual=0.1, smooth_diag=0.01, smooth_off=0.02):
    sign = np.where(DIAG, sign_diag, 0.6)
    lag = np.where(DIAG, 0.0, lag_off)
    res = np.full((3, 3), residual)
    sm = np.where(DIAG, smooth_diag, smooth_off)
    return {"share_sign": sign, "share_lag": lag, "share_residual": res, "smoothness": sm,
            "final_loss": np.ones((3, 3))}


def _verdicts(cells, **th):
    return {c["id"].split(":")[1]: c for c in grid_claims("toy", B, B, cells, th or None)}


def test_claims_pass_on_constructed_passing_grid():
    v = _verdicts(_cells())
    assert set(v) == {"tied_sign_dominated", "lag_substantial_off_diagonal",
                      "residual_comparatively_small", "tied_smoother"}
    assert all(c["passed"] for c in v.values())
    assert v["tied_smoother"]["measured"]["smoothness_ratio_tied_over_untied"] == pytest.approx(0.5)
    assert v["tied_smoother"]["measured"]["fraction_untied_rougher_than_row_tied"] == 1.0
    for c in v.values():
        assert set(c) == {"id", "statement", "measured", "expected", "tolerance", "passed"}


@pytest.mark.parametrize(
    "kw,failing",
    [
        ({"sign_diag": 0.05}, "tied_sign_dominated"),
        ({"lag_off": 0.05}, "lag_substantial_off_diagonal"),
        ({"residual": 0.5}, "residual_comparatively_small"),
        ({"smooth_diag": 0.03}, "tied_smoother"),
    ],
)
def test_each_claim_fails_on_its_constructed_counterexample(kw, failing):
    v = _verdicts(_cells(**kw))
    assert not v[failing]["passed"]
    assert all(c["passed"] for k, c in v.items() if k != failing)


def test_thresholds_are_configurable():
    assert not _verdicts(_cells(lag_off=0.3), lag_min=0.4)["lag_substantial_off_diagonal"]["passed"]
    assert _verdicts(_cells(residual=0.5), residual_max=0.6)["residual_comparatively_small"]["passed"]


def test_grid_without_diagonal_reports_failure_not_crash():
    cells = {k: v[:, :2] for k, v in _cells().items()}
    v = {c["id"].split(":")[1]: c for c in grid_claims("toy", [0.5, 0.6, 0.7], B[:2], cells)}
    assert not v["tied_sign_dominated"]["passed"] and not v["tied_smoother"]["passed"]


def _fake_result(b1, b2, seed, steps=20):
    rng = np.random.default_rng(seed)
    tied = b1 == b2
    lag = np.zeros(steps) if tied else np.full(steps, 0.25)
    sign = np.full(steps, 0.8 if tied else 0.6)
    un = np.exp(np.cumsum(rng.normal(0, 0.01 if tied else 0.05, steps)))
    return {"share_sign": sign, "share_lag": lag, "share_residual": 1 - sign - lag,
            "update_norm": un, "smoothness": float(np.mean(np.abs(np.diff(np.log(un))))),
            "final_loss": 0.1}


def test_analyse_grid_arrays_and_claims_from_results():
    tasks = [{"task": "digits_mlp", "beta1": b1, "beta2": b2, "seed": s}
             for b1 in B for b2 in B for s in range(2)]
    results = [_fake_result(t["beta1"], t["beta2"], t["seed"]) for t in tasks]
    arrays, claims = analyse_grid(results, tasks)
    assert arrays["digits_mlp__share_lag"].shape == (3, 3)
    assert np.all(np.diag(arrays["digits_mlp__share_lag"]) == 0)
    assert arrays["digits_mlp__update_norm"].shape == (3, 3, 20)
    assert len(claims) == 4 and all(c["id"].startswith("digits_mlp:") for c in claims)
    assert all(c["passed"] for c in claims)
    with pytest.raises(InputError, match="one task per result"):
        analyse_grid(results[:-1], tasks)
