"""The exact noise term of piecewise-linear activations (``gaugedyn.training._orthant``) against
independent references: known orthant probabilities and scipy's ``multivariate_normal.cdf``, a
nested-conditioning quadrature (exponentially convergent: every kink split), Monte Carlo, the
Gauss-Hermite reference where it is exact (one free direction), degenerate fields as limits,
and its symmetries."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

from gaugedyn.theory import random_problem
from gaugedyn.training._online_ode import noise_method, noise_term, piecewise_slopes
from gaugedyn.training._orthant import orthant, orthant4, piecewise_noise

SLOPES = {"relu": (0.0, 1.0, 0.0), "leaky_relu": (0.01, 0.99, 0.0), "abs": (-1.0, 2.0, 0.5)}


def _noise(C, K, c, name):
    P = C.shape[0]
    lo, jump, h0 = (np.full(P, v) for v in SLOPES[name])
    E = np.zeros((K, K))
    piecewise_noise(np.ascontiguousarray(C), K, np.asarray(c, float), lo, jump, h0, E)
    return np.triu(E) + np.triu(E, 1).T


def _random_cov(rng, P, cond=None):
    B = rng.standard_normal((P, P + 2))
    C = B @ B.T / P
    if cond is not None:
        U, _, _ = np.linalg.svd(rng.standard_normal((P, P)))
        C = (U * np.geomspace(1.0, 1.0 / cond, P)) @ U.T
    return C


def _half_rule(n):
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


def _nested_reference(C, K, c, name, n=40, span=9.0):
    """``E[g'(u_i) g'(u_k) e^2]`` for four fields by conditioning on ``u_0``, ``u_1``, ``u_2`` in
    turn (each a Gauss-Legendre rule on both sides of its kink at 0, ``span`` standard deviations
    wide) and ``u_3`` in closed form: nothing of Stein's lemma or Plackett's integral."""
    lo, jump, _ = SLOPES[name]
    x, w = _half_rule(n)

    def g(v):
        return lo * v + jump * v * (v > 0)

    def gp(v):
        return lo + jump * (v > 0)

    # points (x0, x1, x2) with weights, level by level
    pts = np.zeros((1, 0))
    wts = np.ones(1)
    for level in range(3):
        A = C[:level, :level]
        b = C[:level, level]
        coef = np.linalg.solve(A, b) if level else np.zeros(0)
        mean = pts @ coef
        sd = math.sqrt(C[level, level] - b @ coef)
        tau = -mean / sd  # the kink, in standard units
        new_p, new_w = [], []
        for lower, upper in (
            (np.maximum(tau, -span), np.maximum(tau, span)),
            (np.minimum(tau, -span), np.minimum(tau, span)),
        ):
            # each side of the kink, cut to [-span, span] standard deviations
            z = lower[:, None] + (upper - lower)[:, None] * x[None, :]
            dens = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * (upper - lower)[:, None] * w
            val = mean[:, None] + sd * z
            new_p.append(np.concatenate([np.repeat(pts, n, 0), val.reshape(-1, 1)], 1))
            new_w.append((wts[:, None] * dens).reshape(-1))
        pts, wts = np.concatenate(new_p), np.concatenate(new_w)
    coef = np.linalg.solve(C[:3, :3], C[:3, 3])
    m = pts @ coef
    s = math.sqrt(C[3, 3] - C[:3, 3] @ coef)
    r = m / s
    Phi, phi = ndtr(r), np.exp(-0.5 * r * r) / math.sqrt(2 * math.pi)
    eg = lo * m + jump * (m * Phi + s * phi)  # E[g(u_3)]
    e2pos = (m * m + s * s) * Phi + m * s * phi  # E[u_3^2 theta(u_3)]
    eg2 = lo * lo * (m * m + s * s) + (2 * lo * jump + jump * jump) * e2pos
    U = np.concatenate([pts, np.zeros((len(pts), 1))], 1)
    rest = g(pts) @ c[:3]
    E = np.zeros((K, K))
    for i in range(K):
        for k in range(K):
            d = np.ones(len(pts))
            for f in (i, k):
                d = d * (gp(U[:, f]) if f < 3 else (lo + jump * Phi))
            if i == 3 or k == 3:
                raise ValueError("the reference conditions on the students first")
            inner = rest * rest + 2 * rest * c[3] * eg + c[3] ** 2 * eg2
            E[i, k] = np.sum(wts * d * inner)
    return E


def _monte_carlo(C, K, c, name, samples, rng):
    lo, jump, h0 = SLOPES[name]
    lam, U = np.linalg.eigh(C)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    u = A @ rng.standard_normal((C.shape[0], samples))
    u[np.diag(C) == 0.0] = 0.0  # exactly, not the eigen factor's round-off
    g = lo * u + jump * u * (u > 0)
    gp = lo + jump * np.where(u[:K] > 0, 1.0, np.where(u[:K] < 0, 0.0, h0))
    e = c @ g
    x = np.einsum("is,js,s->ijs", gp, gp, e * e)
    return x.mean(-1), x.std(-1, ddof=1) / math.sqrt(samples)


def test_four_field_orthant_known_answers():
    """Independent fields 1/16; equicorrelated 1/2: 1/5; two independent pairs: the product of
    Sheppard's formula; a pair repeated: the three-field formula."""
    assert orthant4(np.eye(4)) == pytest.approx(1 / 16, abs=1e-15)
    R = np.full((4, 4), 0.5) + 0.5 * np.eye(4)
    assert orthant4(R) == pytest.approx(0.2, abs=1e-14)
    R = np.eye(4)
    R[0, 1] = R[1, 0] = 0.7
    R[2, 3] = R[3, 2] = -0.4
    p2 = [0.25 + math.asin(r) / (2 * math.pi) for r in (0.7, -0.4)]
    # the block pairing is the one with the smallest cross correlations: reorder to test others
    for order in ([0, 1, 2, 3], [0, 2, 1, 3], [3, 0, 2, 1]):
        assert orthant4(R[np.ix_(order, order)]) == pytest.approx(p2[0] * p2[1], abs=1e-15)


def test_orthant_probabilities_equal_scipy_multivariate_normal_cdf():
    """Three and four fields against scipy's quasi-Monte Carlo cdf at its stated 1e-7."""
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(7)
    for n in (3, 4):
        for cond in (None, 1e2):
            C = _random_cov(rng, n, cond)
            want = multivariate_normal.cdf(
                np.zeros(n), cov=C, abseps=1e-7, releps=0, maxpts=2_000_000, rng=1
            )
            got = orthant(C, np.arange(n), n)
            assert abs(got - want) < 5e-7, (n, cond, got, want)


@pytest.mark.parametrize("name", sorted(SLOPES))
def test_noise_term_equals_the_nested_conditioning_quadrature(name):
    """Four fields of full rank (two students, two teachers; four-field orthants): the two
    routes share nothing but the Gaussian; they agree to 1e-9."""
    rng = np.random.default_rng(11)
    for cond in (None, 30.0):
        C = _random_cov(rng, 4, cond)
        c = rng.standard_normal(4)
        want = _nested_reference(C, 2, c, name)
        got = _noise(C, 2, c, name)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * np.abs(want).max())


@pytest.mark.parametrize("name", sorted(SLOPES))
def test_noise_term_within_four_standard_errors_of_monte_carlo(name):
    """K = M = 4 (eight fields, full rank) at random_problem's start: 4 10^6 samples."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    a, Q, R, b, T = problem.order_parameters()
    C = np.block([[Q, R], [R.T, T]])
    c = np.concatenate([a, -b])
    mean, se = _monte_carlo(C, 4, c, name, 4_000_000, np.random.default_rng(3))
    got = _noise(C, 4, c, name)
    assert np.all(np.abs(got - mean) <= 4 * se), (got - mean) / se


def test_monte_carlo_check_sees_a_wrong_noise_term():
    """The same check refuses the noise term of the wrong slope (leaky ReLU's for ReLU)."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="relu")
    a, Q, R, b, T = problem.order_parameters()
    C = np.block([[Q, R], [R.T, T]])
    c = np.concatenate([a, -b])
    mean, se = _monte_carlo(C, 4, c, "relu", 4_000_000, np.random.default_rng(3))
    wrong = _noise(C, 4, c, "leaky_relu")
    assert np.any(np.abs(wrong - mean) > 4 * se)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "abs"])
def test_one_free_direction_equals_the_gauss_hermite_reference(name):
    """Every field a multiple of one Gaussian (rank 1, opposite signs among them): the
    reference's even, symmetric rule is exact there (its integrand is ``z^2`` on each side)."""
    rng = np.random.default_rng(5)
    v = np.array([0.7, -1.2, 0.4, 1.1, -0.3])
    C = np.outer(v, v)
    K = 3
    a, b = rng.standard_normal(K), rng.standard_normal(2)
    Q, R, T = C[:K, :K], C[:K, K:], C[K:, K:]
    got = noise_term(a, Q, R, b, T, name)
    want = noise_term(a, Q, R, b, T, name, method="quadrature")
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "abs"])
def test_degenerate_fields_against_monte_carlo_and_as_limits(name):
    """A repeated field (u_1 = u_0), an opposite one (u_1 = -u_0) and a dependent one
    (u_3 = u_0 + u_2: rank 3): within 4 standard errors of Monte Carlo at the degenerate
    covariance, and the limit of nearby full-rank ones (the change at distance ``h`` is
    ``O(h)``; closer than about 1e-6 the covariance no longer resolves the angle, module
    docstring)."""
    rng = np.random.default_rng(13)
    B = rng.standard_normal((4, 6))
    c = rng.standard_normal(4)
    for make in (
        lambda B: np.vstack([B[0], B[0], B[2], B[3]]),
        lambda B: np.vstack([B[0], -B[0], B[2], B[3]]),
        lambda B: np.vstack([B[0], B[1], B[2], B[0] + B[2]]),
    ):
        Bd = make(B)
        exact = _noise(Bd @ Bd.T, 2, c, name)
        mean, se = _monte_carlo(Bd @ Bd.T, 2, c, name, 1_000_000, np.random.default_rng(8))
        assert np.all(np.abs(exact - mean) <= 4 * se), (exact - mean) / se
        for h in (1e-5, 1e-4):
            Bh = Bd + h * rng.standard_normal(Bd.shape)
            near = _noise(Bh @ Bh.T, 2, c, name)
            assert np.abs(near - exact).max() < 200 * h * np.abs(exact).max()


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "abs"])
def test_a_field_of_zero_variance_takes_g_prime_at_zero(name):
    """A student with zero weights (u_1 = 0): ``g(0) = 0`` and ``g'(0)`` the activation's own
    (0 for ReLU, 0.01 for leaky ReLU, 0 for the absolute value), against Monte Carlo."""
    rng = np.random.default_rng(17)
    C = _random_cov(rng, 5)
    C[1, :] = C[:, 1] = 0.0
    c = rng.standard_normal(5)
    mean, se = _monte_carlo(C, 2, c, name, 2_000_000, np.random.default_rng(4))
    got = _noise(C, 2, c, name)
    assert np.all(np.abs(got - mean) <= 4 * se + 1e-15)
    if name != "leaky_relu":
        assert np.all(got[1] == 0.0) and np.all(got[:, 1] == 0.0)


_matrices = st.integers(0, 2**32 - 1).map(
    lambda s: (_random_cov(np.random.default_rng(s), 6), np.random.default_rng(s + 1))
)


@settings(max_examples=40, deadline=None)
@given(_matrices, st.sampled_from(sorted(SLOPES)), st.floats(0.01, 100.0))
def test_symmetries(data, name, scale):
    """Swapping two students swaps their rows and columns; swapping two teachers changes
    nothing; ``C -> t C`` multiplies the term by ``t`` (``e^2`` is of degree 2, ``g'`` of 0)."""
    C, rng = data
    K = 3
    c = rng.standard_normal(6)
    E = _noise(C, K, c, name)
    swap = [1, 0, 2, 3, 4, 5]
    Es = _noise(C[np.ix_(swap, swap)], K, c[swap], name)
    np.testing.assert_allclose(Es, E[np.ix_(swap[:K], swap[:K])], rtol=1e-11, atol=1e-13)
    teach = [0, 1, 2, 3, 5, 4]
    np.testing.assert_allclose(
        _noise(C[np.ix_(teach, teach)], K, c[teach], name), E, rtol=1e-11, atol=1e-13
    )
    np.testing.assert_allclose(_noise(scale * C, K, c, name), scale * E, rtol=1e-11, atol=1e-13)


def test_the_one_place_picks_the_method():
    """Closed forms for erf and linear, orthants for the piecewise-linear activations (also
    for a teacher of another one), the scrambled-Sobol rule for tanh and softplus (their own
    teachers), quadrature for the rest; the slopes read off the activation."""
    assert noise_method("erf") == noise_method("linear") == "closed"
    assert {noise_method(n) for n in ("relu", "leaky_relu", "abs")} == {"orthant"}
    assert noise_method("relu", "leaky_relu") == "orthant"
    assert noise_method("tanh") == noise_method("softplus") == "sobol"
    assert noise_method("relu", "tanh") == noise_method("gelu") == "quadrature"
    lo, jump, h0 = piecewise_slopes("abs", "relu", 2, 1)
    np.testing.assert_allclose(lo, [-1, -1, 0])
    np.testing.assert_allclose(jump, [2, 2, 1])
    np.testing.assert_allclose(h0, [0.5, 0.5, 0.0])


def test_noise_term_refuses_a_method_that_does_not_apply():
    from gaugedyn._errors import InputError

    problem = random_problem(20, 2, 2, np.random.default_rng(1), activation="tanh")
    a, Q, R, b, T = problem.order_parameters()
    with pytest.raises(InputError, match="method='orthant'.*allowed: quadrature"):
        noise_term(a, Q, R, b, T, "tanh", method="orthant")


def test_a_teacher_of_another_piecewise_linear_activation_against_monte_carlo():
    """Leaky-ReLU students of a ReLU teacher (per-field slopes) within 4 standard errors."""
    problem = random_problem(30, 2, 3, np.random.default_rng(2), activation="leaky_relu")
    a, Q, R, b, T = problem.order_parameters()
    got = noise_term(a, Q, R, b, T, "leaky_relu", "relu")
    C = np.block([[Q, R], [R.T, T]])
    lam, U = np.linalg.eigh(C)
    u = (U * np.sqrt(np.maximum(lam, 0))) @ np.random.default_rng(9).standard_normal((5, 2_000_000))
    gs = np.where(u[:2] > 0, u[:2], 0.01 * u[:2])
    e = a @ gs - b @ np.maximum(u[2:], 0)
    gp = np.where(u[:2] > 0, 1.0, 0.01)
    x = np.einsum("is,js,s->ijs", gp, gp, e * e) * np.outer(a, a)[:, :, None]
    mean, se = x.mean(-1), x.std(-1, ddof=1) / math.sqrt(x.shape[-1])
    assert np.all(np.abs(got - mean) <= 4 * se)


def _aligned(rng, K, pairs, sign=1.0):
    """Fields of full rank with each student ``i`` of ``pairs`` a multiple of teacher ``n``
    (``sign``: the same or the opposite direction) and ``C(delta)``: those pairs' covariance moved
    to ``1 - |rho| = delta`` (``delta = 0``: the merged case)."""
    B = rng.standard_normal((2 * K, 2 * K + 2))
    for i, n in pairs:
        B[i] = sign * (0.7 + i) * B[n]
    C0 = B @ B.T

    def at(delta):
        C = C0.copy()
        for i, n in pairs:
            C[i, n] = C[n, i] = sign * math.sqrt(C0[i, i] * C0[n, n]) * (1.0 - delta)
        return C

    return at, rng.standard_normal(2 * K)


@pytest.mark.parametrize("name", sorted(SLOPES))
@pytest.mark.parametrize(
    "pairs,sign", [(((0, 0),), 1.0), (((0, 0),), -1.0), (((0, 0), (1, 1)), 1.0)]
)
def test_noise_term_is_smooth_through_an_alignment(name, pairs, sign):
    """A student meeting its teacher (``pairs``: student, teacher; one pair, one of opposite
    fields, two pairs; the
    covariance entry alone moved, as an integrator's finite differences move it): at
    ``1 - rho = 1e-6, 1e-9, 1e-12`` and 0 the term is continuous into the merged case (within
    ``eps / sqrt(1 - rho)``-sized round-off) and its finite-difference derivative (step 1e-7) is
    the same at all four (the term is C^1 in ``C`` there: the wedge between the two orthants
    carries ``u_s``). Summed one pair at a time the Stein and Plackett terms were off by
    ``eps / (1 - rho)``: 20% in this derivative at 1e-12."""
    K = len(pairs) + 1
    at, c = _aligned(np.random.default_rng(23), K, [(i, K + m) for i, m in pairs], sign)
    E = {d: _noise(at(d), K, c, name) for d in (0.0, 1e-12, 1e-9, 1e-6)}
    h, eps = 1e-7, np.finfo(float).eps
    D = {d: (E[d] - _noise(at(d + h), K, c, name)) / h for d in E}
    scale = np.abs(E[0.0]).max()
    top = max(np.abs(v).max() for v in D.values())
    for d in (1e-12, 1e-9, 1e-6):
        noise = 20 * eps / math.sqrt(d) * scale  # the best attainable: eps / sqrt(1 - rho)
        assert np.abs(E[d] - E[0.0]).max() < 2 * top * d + noise, d
        assert np.abs(D[d] - D[0.0]).max() < 1e-2 * top + noise / h, (d, D[d] - D[0.0])


def test_four_field_orthant_near_two_alignments_follows_its_expansion():
    """Two pairs of nearly collinear fields (``1 - rho = delta`` each): the orthant probability
    is ``a + b sqrt(delta) + c delta + d delta^1.5 + ...``; fitted on ``delta`` in [1e-8, 1.6e-7],
    the values at 1e-10 ... 1e-13 follow it to 1e-10 (summed one cross pair at a time, Plackett's
    integrals were off by ``eps / delta``: 5e-8 at 1e-13)."""
    rng = np.random.default_rng(29)
    for pairs in (((0, 2),), ((0, 2), (1, 3))):
        B = rng.standard_normal((4, 6))
        for i, n in pairs:
            B[i] = 1.3 * B[n]
        C0 = B @ B.T

        def p4(delta, C0=C0, pairs=pairs):
            C = C0.copy()
            for i, n in pairs:
                C[i, n] = C[n, i] = math.sqrt(C0[i, i] * C0[n, n]) * (1.0 - delta)
            return orthant(C, np.arange(4), 4)

        fit = np.array([1e-8, 4e-8, 9e-8, 1.6e-7])
        A = np.stack([np.ones(4), np.sqrt(fit), fit, fit**1.5], 1)
        coef = np.linalg.solve(A, [p4(d) for d in fit])
        for d in (1e-10, 1e-11, 1e-12, 1e-13):
            assert abs(p4(d) - coef @ [1.0, math.sqrt(d), d, d**1.5]) < 1e-10, (pairs, d)


def _smoothed(rng, bound):
    """A factors' covariance ``C (4, 4)`` (rank 1 to 4, sometimes with repeated fields) and
    noise variances whose correlation matrix of ``C + diag(noise)`` has smallest eigenvalue
    within 2% above ``bound`` (the noise scaled until it is)."""
    while True:
        A = rng.standard_normal((4, rng.integers(1, 5))) * rng.uniform(0.2, 3.0, 4)[:, None]
        C = A @ A.T
        if rng.random() < 0.3:
            f = rng.integers(0, 4, 4)
            C = C[np.ix_(f, f)]
        noise = rng.uniform(0.2, 3.0, 4) * np.diag(C).mean()
        for _ in range(80):
            d = np.sqrt(np.diag(C) + noise)
            low = np.linalg.eigvalsh((C + np.diag(noise)) / np.outer(d, d))[0]
            noise *= (bound / low) ** 0.8
        if 1.0 <= low / bound < 1.02:
            return np.ascontiguousarray(C), noise


def test_smoothed_rules_meet_their_bound():
    """`SMOOTHED_RULES`: at random smoothed factors' correlations with smallest eigenvalue at
    each declared bound, the declared rule's four-field orthant probability within
    `SMOOTHED_TOLERANCE` of the 200-node rule (its declaration), one node fewer not (at some
    sample), and the rule `smoothed_orthant4` picks from the bound it computes is the declared
    one or a larger."""
    from gaugedyn.training._orthant import (
        SMOOTHED_RULES,
        SMOOTHED_TOLERANCE,
        legendre_rule,
        orthant4_rule,
        smoothed_orthant4,
    )

    rng = np.random.default_rng(46)
    reference = legendre_rule(200)
    for bound, nodes in SMOOTHED_RULES:
        rule, fewer = legendre_rule(nodes), legendre_rule(nodes - 1)
        worst = 0.0
        for _ in range(300):
            C, noise = _smoothed(rng, bound)
            d = np.sqrt(np.diag(C) + noise)
            R = (C + np.diag(noise)) / np.outer(d, d)
            exact = orthant4_rule(R, *reference)
            assert abs(orthant4_rule(R, *rule) - exact) <= SMOOTHED_TOLERANCE
            worst = max(worst, abs(orthant4_rule(R, *fewer) - exact))
            got = smoothed_orthant4(C, np.arange(4), noise, np.empty((4, 4)))
            assert abs(got - exact) <= SMOOTHED_TOLERANCE
        assert worst > SMOOTHED_TOLERANCE, (bound, nodes)


def test_smoothed_moment_equals_the_general_moment_and_ignores_the_factors_order():
    """`smoothed_relu_moment` with `smoothed_orthant4` is `relu_moment` of the smoothed
    covariance (to the rules' error), and `smoothed_orthant4` gives the same bits for any
    order of the same four factors (what lets the compiled control store it by its factors)."""
    from gaugedyn.training._orthant import (
        SMOOTHED_TOLERANCE,
        relu_moment,
        smoothed_orthant4,
        smoothed_relu_moment,
    )

    rng = np.random.default_rng(7)
    work = np.empty((4, 4))
    for bound in (0.1, 0.3, 0.6):
        for _ in range(40):
            C, noise = _smoothed(rng, bound)
            key = rng.permutation(4)
            p4 = smoothed_orthant4(C, key, noise, work)
            got = smoothed_relu_moment(C, noise, p4)
            general = relu_moment(np.ascontiguousarray(C + np.diag(noise)), 0, 1, 2, 3)
            # the orthant probability's error (SMOOTHED_TOLERANCE) times the moment's C_23
            tol = 4 * SMOOTHED_TOLERANCE * abs(C[2, 3]) + 1e-12
            assert got == pytest.approx(general, rel=1e-10, abs=tol)
            order = rng.permutation(4)
            Cp = np.ascontiguousarray(C[np.ix_(order, order)])
            assert smoothed_orthant4(Cp, key[order], noise[order], work) == p4
