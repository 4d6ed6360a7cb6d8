"""The exact split of an Adam update: identities, torch = numpy, bad input, the derivation."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gaugedyn import InputError
from gaugedyn.adam import (
    PARTS,
    _derivation,
    adam_moments,
    decompose_history,
    decompose_state,
    shares,
    smoothness,
    split_update,
)

BETAS = [(0.9, 0.999), (0.999, 0.9), (0.95, 0.95), (0.8, 0.8), (0.0, 0.5), (0.5, 0.0)]


def _histories():
    rng = np.random.default_rng(7)
    return {
        "gaussian": rng.standard_normal((400, 30)),
        "heavy": rng.standard_t(1.2, (400, 30)) * 1e3,
        "tiny": rng.standard_normal((400, 30)) * 1e-9,
        "sparse": rng.standard_normal((400, 30)) * (rng.random((400, 30)) < 0.1),
        "positive": np.abs(rng.standard_normal((400, 30))) + 0.1,
    }


@pytest.mark.parametrize("betas", BETAS)
@pytest.mark.parametrize("eps", [1e-8, 1e-3, 0.0])
def test_parts_sum_to_update(betas, eps):
    for name, g in _histories().items():
        P = decompose_history(g, *betas, eps=eps)
        err = np.abs(P.total() - P.update) / np.maximum(1.0, np.abs(P.update))
        assert err.max() < 1e-12, (name, betas, eps, err.max())
        if betas[0] == betas[1]:
            assert np.all(P.lag == 0.0), name
        else:
            assert np.any(P.lag != 0.0), name


def test_update_matches_adam_formula_and_moments():
    g = _histories()["gaussian"]
    b1, b2, eps = 0.9, 0.99, 1e-8
    mom = adam_moments(g, b1, b2)
    m = v = 0.0
    for t in range(g.shape[0]):
        m = b1 * m + (1 - b1) * g[t]
        v = b2 * v + (1 - b2) * g[t] ** 2
    assert np.allclose(mom["m"][-1], m, rtol=1e-12, atol=0)
    assert np.allclose(mom["v"][-1], v, rtol=1e-12, atol=0)
    P = decompose_history(g, b1, b2, eps)
    T = g.shape[0]
    u = (m / (1 - b1**T)) / (np.sqrt(v / (1 - b2**T)) + eps)
    assert np.allclose(P.update[-1], u, rtol=1e-12, atol=0)


@settings(max_examples=60, deadline=None)
@given(
    # |g| > 1e-150 or 0: below that g^2 underflows and v^ loses the precision the
    # Cauchy-Schwarz bound |w^| <= sqrt(v^) relies on (a float64 limit, not a property of the split)
    st.lists(
        st.floats(-1e6, 1e6, allow_subnormal=False).filter(lambda x: x == 0 or abs(x) > 1e-150),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(BETAS),
)
def test_identities_on_arbitrary_histories(values, betas):
    g = np.array(values)[:, None]
    P = decompose_history(g, *betas, eps=1e-8)
    assert np.all(np.abs(P.total() - P.update) <= 1e-12 * np.maximum(1, np.abs(P.update)))
    r = P.ratio * np.sign(P.w_hat)
    assert np.all((r <= 1e-12) & (r >= -1 - 1e-12))
    assert set(np.unique(P.transition)) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    if betas[0] == betas[1]:
        assert np.all(P.lag == 0.0)


def test_transition_zero_for_constant_sign_nonzero_after_flip():
    g = np.concatenate([np.ones(50), -np.ones(5)])[:, None]
    P = decompose_history(g, 0.9, 0.99, 1e-8)
    assert np.all(P.transition[:50] == 0)
    assert np.all(P.transition[50:] == 2.0)  # sign(w^) still +, sign(g) now -


def test_torch_equals_numpy_and_state_equals_history():
    rng = np.random.default_rng(3)
    g = rng.standard_normal((60, 17))
    b1, b2, eps = 0.9, 0.97, 1e-8
    P = decompose_history(g, b1, b2, eps)
    mom = adam_moments(g, b1, b2)
    T = g.shape[0]
    Q = decompose_state(mom["m"][-1], mom["v"][-1], mom["w"][-1], g[-1], T, b1, b2, eps)
    tt = decompose_state(
        *(torch.tensor(a) for a in (mom["m"][-1], mom["v"][-1], mom["w"][-1], g[-1])),
        T,
        b1,
        b2,
        eps,
    )
    for k in (*PARTS, "update"):
        assert np.allclose(getattr(Q, k), getattr(P, k)[-1], rtol=1e-13, atol=1e-15), k
        assert np.allclose(getattr(tt, k).numpy(), getattr(Q, k), rtol=1e-13, atol=1e-15), k


def test_zero_history_is_all_zero():
    P = decompose_history(np.zeros((5, 3)), 0.9, 0.99, 1e-8)
    for k in (*PARTS, "update"):
        assert np.all(getattr(P, k) == 0.0), k


def test_shares_and_smoothness():
    s = shares(
        {
            "sign": np.array([3.0, 0.0]),
            "lag": np.array([1.0, 0.0]),
            "residual": np.array([0.0, 0.0]),
        }
    )
    assert np.allclose(s["sign"], [0.75, 0.0]) and np.allclose(s["lag"], [0.25, 0.0])
    assert smoothness(np.full(10, 2.0)) == 0.0
    assert np.isclose(smoothness(np.exp(0.1 * np.arange(10.0))), 0.1)


@pytest.mark.parametrize("kw", [{"beta1": 1.0}, {"beta2": -0.1}, {"eps": -1.0}])
def test_bad_input(kw):
    args = {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8, **kw}
    with pytest.raises(InputError, match=next(iter(kw))):
        decompose_history(np.ones((3, 2)), **args)
    with pytest.raises(InputError, match="step"):
        decompose_state(np.ones(2), np.ones(2), np.ones(2), np.ones(2), 0, 0.9, 0.99, 1e-8)


def test_split_update_contract_with_eps_limit():
    m, w, s, g = (
        np.array([0.5, -0.2, 0.0]),
        np.array([0.4, 0.1, 0.0]),
        np.array([1.0, 0.5, 0.0]),
        np.array([1.0, -1.0, 0.0]),
    )
    P = split_update(m, w, s, g, 0.0)
    assert np.allclose(P.update[:2], m[:2] / s[:2])
    assert np.allclose(P.eps[:2], 0.0)
    assert np.allclose(P.transition, [0.0, 2.0, 0.0])


def test_derivation_document_and_verify():
    assert _derivation.NAME == "adam_decomposition"
    doc = _derivation.build()
    assert doc == _derivation.build() and doc.startswith("# ")
    for word in ("sign", "lag", "transition", "ratio", "eps", "curvature", "smoothness"):
        assert word in doc.lower()
    _derivation.verify()


@settings(max_examples=60, deadline=None)
@given(
    st.floats(-1e3, 1e3),
    st.floats(1e-3, 1e3) | st.floats(-1e3, -1e-3),
    st.floats(-1e3, 1e3),
    st.floats(1e-8, 0.5),
)
def test_the_parts_sum_to_the_update_where_the_second_moment_is_zero(m, w, g, eps):
    """Where ``s = 0`` (``v`` underflowed or never fed) the update is ``m / eps``: the ratio part
    is zero, the transition ``-sign(g)`` and the eps part ``w / eps``, so the five parts still
    sum to it."""
    # adam:_decomposition:137:55:factor (the eps part w_hat, not w_hat / (s + eps), at s = 0)
    P = split_update(np.array([m]), np.array([w]), np.array([0.0]), np.array([g]), eps)
    assert P.update[0] == m / eps and P.ratio[0] == 0.0
    np.testing.assert_allclose(P.eps, [w / eps], rtol=1e-15)
    assert abs(P.total()[0] - P.update[0]) <= 1e-12 * max(1.0, (abs(m) + abs(w)) / eps)
