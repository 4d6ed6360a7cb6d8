"""The order-parameter chain's per-step draw, pinned against a second implementation.

``draw_fields`` (``training/_online_kernels``) draws ``u_mu = L z_mu`` and
``G = Z Z^T + Wishart(D - r, I_B)``. Numba's ``Generator`` and numpy's consume one bit stream
identically, so a numpy re-implementation of the documented law, fed a generator with the same
seed, must give the same numbers: this pins the orientation of every draw (``L z``, not
``L^T z``; a lower-triangular Bartlett factor), the degrees of freedom of each chi-square, and
the rank-deficient case (no normal drawn on an unspanned pivot). A law-level check covers every
pair of the samples' Gram matrix, and the semi-definite Cholesky is checked against numpy.
"""

import numpy as np
import pytest

from gaugedyn.theory import random_problem
from gaugedyn.training._online_chain import PIVOT_TOL, draws, gram
from gaugedyn.training._online_fast import BIT_GENERATOR
from gaugedyn.training._online_kernels import cholesky_psd


def _semidefinite_cholesky(C, tol=PIVOT_TOL):
    """Reference ``L`` (zero columns on unspanned pivots) and rank, written in numpy."""
    n = C.shape[0]
    L = np.zeros_like(C)
    rank = 0
    for j in range(n):
        d = C[j, j] - L[j, :j] @ L[j, :j]
        if d > tol * C[j, j] and d > 0:
            L[j, j] = np.sqrt(d)
            L[j + 1 :, j] = (C[j + 1 :, j] - L[j + 1 :, :j] @ L[j, :j]) / L[j, j]
            rank += 1
    return L, rank


def _reference_draw(L, rank, D, B, gen):
    """One draw of ``(u (B, P), G (B, B))`` by the law in ``draw_fields``' docstring, consuming
    ``gen`` in the documented order: per sample the normals of the spanned pivots, then the
    orthogonal part (one chi-square for ``B = 1``; Bartlett's lower-triangular ``A`` row by row,
    diagonal ``chi^2(free - i)`` first; or a ``(B, free)`` normal matrix when ``free < B``)."""
    P = L.shape[0]
    z = np.zeros((B, P))
    for mu in range(B):
        for p in range(P):
            if L[p, p] != 0:
                z[mu, p] = gen.standard_normal()
    u = z @ L.T
    G = z @ z.T
    free = max(D - rank, 0)
    if B == 1:
        if free > 0:
            G = G + gen.chisquare(free)
        return u, G
    if free >= B:
        A = np.zeros((B, B))
        for i in range(B):
            A[i, i] = np.sqrt(gen.chisquare(free - i))
            for j in range(i):
                A[i, j] = gen.standard_normal()
    else:
        A = np.array([[gen.standard_normal() for _ in range(free)] for _ in range(B)])
        A = A.reshape(B, free)
    return u, G + A @ A.T


def _deficient_gram(seed, D=8):
    """Gram matrix of 5 rows of which row 3 = row 0 + 0.3 row 1 and row 4 = row 2 (rank 3)."""
    U = np.random.default_rng(seed).standard_normal((3, D))
    U = np.vstack([U, U[0] + 0.3 * U[1], U[2]])
    return U @ U.T


CASES = [
    ("full", 12, 1),
    ("full", 12, 3),
    ("full", 9, 3),
    ("full", 6, 3),
    ("full", 3, 2),
    ("deficient", 8, 1),
    ("deficient", 8, 2),
    ("deficient", 4, 3),
]


@pytest.mark.parametrize(("kind", "D", "B"), CASES)
def test_draws_equal_a_numpy_implementation_of_the_law_on_the_same_stream(kind, D, B):
    """(6, 3) and (4, 3)-deficient leave fewer free directions than the batch (explicit normals);
    (3, 2) has ``D < P``; the deficient Gram matrix has rank 3 of 5."""
    if kind == "full":
        C = gram(random_problem(D, 3, 2, np.random.default_rng(D + B), activation="erf"))
    else:
        C = _deficient_gram(D + B)
    L, rank = _semidefinite_cholesky(C)
    assert rank == (min(D, 5) if kind == "full" else 3)
    U, G, got_rank = draws(C, D, B, 60, np.random.Generator(BIT_GENERATOR(11)))
    assert got_rank == rank
    gen = np.random.Generator(BIT_GENERATOR(11))
    for s in range(60):
        u, g = _reference_draw(L, rank, D, B, gen)
        np.testing.assert_allclose(U[s], u, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(G[s], g, rtol=1e-10, atol=1e-10)


def test_semidefinite_cholesky_finds_the_rank_and_factors_c():
    """Full rank: numpy's Cholesky. Rank 3 of 5 (a combination and a duplicate of other rows):
    rank 3, ``L L^T = C``, zero columns at the unspanned pivots, in 20 random cases (rounding
    leaves a tiny positive pivot there in most of them, so the relative threshold matters)."""
    C = gram(random_problem(12, 3, 2, np.random.default_rng(0), activation="erf"))
    L = np.zeros_like(C)
    assert cholesky_psd(C, L, PIVOT_TOL) == 5
    np.testing.assert_allclose(L, np.linalg.cholesky(C), rtol=1e-12, atol=1e-14)
    for seed in range(20):
        C = _deficient_gram(seed)
        L = np.zeros_like(C)
        assert cholesky_psd(C, L, PIVOT_TOL) == 3, seed
        np.testing.assert_allclose(L @ L.T, C, rtol=0, atol=1e-12 * np.abs(C).max())
        np.testing.assert_array_equal(L[:, 3:], 0.0)
        np.testing.assert_allclose(np.diag(L)[:3], np.diag(np.linalg.cholesky(C[:3, :3])))


@pytest.mark.parametrize(("kind", "D", "B"), [("full", 12, 3), ("deficient", 5, 3)])
def test_every_pair_of_the_sample_gram_has_the_gaussian_law(kind, D, B):
    """For ``x_mu ~ N(0, I_D)``: ``E[x_mu . x_nu] = D delta``, ``Var = D`` off the diagonal and
    ``2D`` on it, for every pair (not just the first); ``E[u u^T] = C`` and, where a row is a
    combination of others, its field is that combination exactly (rank-deficient case)."""
    C = (
        gram(random_problem(D, 3, 2, np.random.default_rng(2), activation="erf"))
        if kind == "full"
        else _deficient_gram(3, D)
    )
    n = 20_000
    U, G, _ = draws(C, D, B, n, np.random.Generator(BIT_GENERATOR(5)))
    mean, var = G.mean(0), G.var(0, ddof=1)
    expected_var = D * (1 + np.eye(B))
    np.testing.assert_array_less(np.abs(mean - D * np.eye(B)), 5 * np.sqrt(expected_var / n))
    np.testing.assert_allclose(var, expected_var, rtol=0.1)
    outer = np.einsum("sp,sq->pq", U[:, 0], U[:, 0]) / n
    np.testing.assert_allclose(outer, C, atol=0.08 * np.abs(C).max())
    if kind == "deficient":
        np.testing.assert_allclose(U[..., 3], U[..., 0] + 0.3 * U[..., 1], atol=1e-9)
        np.testing.assert_allclose(U[..., 4], U[..., 2], atol=1e-9)
