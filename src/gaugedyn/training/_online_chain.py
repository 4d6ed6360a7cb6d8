"""Online SGD of the teacher-student model as its exact order-parameter Markov chain.

The weight-space kernel (`gaugedyn.training._online_fast`) draws the ``D`` coordinates of
every sample. They are not all needed: the order parameters ``(a, Q, R)`` of online SGD form a
Markov chain of their own, at every finite ``D``, and this module runs that chain. A step costs
``O((K + M)^3)``, whatever ``D`` is, and its trajectories have the same joint law as those of
online SGD in weight space (not an approximation and not a large-``D`` limit).

**The reduction.** Let ``U = [W; V]`` (``P = K + M`` rows), ``C = U U^T = [[Q, R], [R^T, T]]``.
A step of batch ``B`` (model and step as in ``_online_fast``) is

    a_i <- a_i - (eta / (D B)) sum_mu e_mu g(lambda_mu,i),
    w_i <- w_i - sum_mu c_mu,i x_mu,       c_mu,i = (eta / (D B)) e_mu a_i g'(lambda_mu,i),

with the fields ``u_mu = U x_mu`` (``lambda`` the student part, ``nu`` the teacher part) fixing
``e_mu``. Hence the new inner products depend on the samples only through ``u`` and their Gram
matrix ``G_munu = x_mu . x_nu``::

    Q_ij <- Q_ij - sum_mu (c_mu,i lambda_mu,j + c_mu,j lambda_mu,i)
                 + sum_munu c_mu,i c_nu,j G_munu,
    R_in <- R_in - sum_mu c_mu,i nu_mu,n.

Given ``U``, the law of ``(u, G)`` depends on ``C`` alone: with ``U = L O`` (``L`` lower
triangular, ``L L^T = C``, ``O`` orthonormal rows), rotation invariance of ``x ~ N(0, I_D)``
makes ``z_mu = O x_mu ~ N(0, I_r)`` (``r`` the rank of ``C``) independent of the parts of the
``x_mu`` orthogonal to the rows, whose Gram matrix is Wishart(``D - r``, ``I_B``). So

    u_mu = L z_mu,        G = Z Z^T + Wishart(D - r, I_B)

(for ``B = 1``, ``|x|^2 = |z|^2 + chi^2_(D - r)``). Every ``U`` with the same Gram matrix gives
the same law, so ``(a, C)`` is Markov, started at the problem's ``(a, Q, R)``, and the chain
here is online SGD in law. `gaugedyn.training._online_kernels.cholesky_psd()` factors ``C``
every step (a pivot at or below ``PIVOT_TOL`` of its diagonal entry counts as a direction the
rows do not span, so duplicate neurons and ``D < P`` are handled); the Wishart part is drawn by
Bartlett's construction.

**The classical options** (``_online_fast``'s docstring) keep the chain exact. Label noise
``sigma xi_mu`` enters ``e_mu`` as one more normal, independent of ``x_mu`` (drawn after the
step's fields). Weight decay makes ``w_i' = s w_i - sum_mu c_mu,i x_mu`` with
``s = 1 - eta lambda / D``, so

    Q_ij' = s^2 Q_ij - s sum_mu (c_mu,i lambda_mu,j + c_mu,j lambda_mu,i)
            + sum_munu c_mu,i c_nu,j G_munu,
    R_in' = s R_in - sum_mu c_mu,i nu_mu,n;

``lr2`` scales the ``a`` step only.

**What it gives and what it does not.** The records are ``a``, ``Q``, ``R``, the online loss
and the flow time, with the conventions of ``train``; the weights themselves are not formed.
Sample by sample it differs from the weight-space kernel (different randomness); in
distribution it is the same process. The tests check the update against the weight-space kernel
on the same samples to 1e-12, the draws' moments against their closed forms, and whole
trajectories against the weight-space kernel's by two-sample tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._online_codes import BIT_GENERATOR, SCHEDULE_CODES, activation_code, given_noise, options

PIVOT_TOL = 1e-13
"""Relative pivot below which `cholesky_psd()` treats a direction as not spanned."""


def _kernels():
    from . import _online_kernels

    return _online_kernels


def gram(problem) -> np.ndarray:
    """``C = [[Q, R], [R^T, T]]`` of ``problem`` (students first)."""
    _, Q, R, _, T = problem.order_parameters()
    return np.block([[Q, R], [R.T, T]]).astype(np.float64)


def run_chain(
    a,
    C,
    b,
    K: int,
    D: int,
    activation: str,
    config,
    grid: np.ndarray,
    gen: np.random.Generator | None = None,
    fields: np.ndarray | None = None,
    sample_gram: np.ndarray | None = None,
    teacher_activation=None,
    noise: np.ndarray | None = None,
) -> dict:
    """Run the chain for one seed from ``a (K,)``, ``C (P, P)`` (copies); randomness from
    ``gen`` or, if given, ``fields (steps, B, P)``, ``sample_gram (steps, B, B)`` and (with
    label noise) ``noise (steps, B)``. The classical options of ``config`` as in
    `gaugedyn.training._online_fast.run_kernel()`. Returns the records at ``grid`` and
    ``failed_at`` as ``run_kernel`` does; ``teacher_activation`` is the teacher's (``None``: the
    student's)."""
    kern = _kernels().chain_run
    a = np.array(a, dtype=np.float64)
    C = np.array(C, dtype=np.float64)
    n, P = grid.shape[0], C.shape[0]
    out: dict[str, Any] = {
        "a": np.full((n, K), np.nan),
        "Q": np.full((n, K, K), np.nan),
        "R": np.full((n, K, P - K), np.nan),
        "emp": np.full(n, np.nan),
        "flow": np.full(n, np.nan),
    }
    B = int(config.batch_size)
    if fields is None:
        if gen is None:
            raise ValueError("run_chain needs the seed's generator (gen) or the fields")
        fields, sample_gram = np.empty((0, B, P)), np.empty((0, B, B))
    else:
        fields = np.ascontiguousarray(fields, dtype=np.float64)
        sample_gram = np.ascontiguousarray(sample_gram, dtype=np.float64)
        gen = np.random.Generator(BIT_GENERATOR(0))  # a typed placeholder, never drawn from
    noise = given_noise(noise, fields.shape[0] > 0, config)
    teacher = activation if teacher_activation is None else teacher_activation
    status = kern(
        a,
        C,
        np.asarray(b, np.float64),
        int(K),
        int(D),
        activation_code(activation),
        activation_code(teacher),
        SCHEDULE_CODES[config.schedule],
        float(config.lr),
        float(config.lr_min),
        float(config.decay),
        int(config.steps),
        np.asarray(grid, np.int64),
        B,
        gen,
        fields,
        sample_gram,
        PIVOT_TOL,
        *options(config),
        noise,
        out["a"],
        out["Q"],
        out["R"],
        out["emp"],
        out["flow"],
    )
    out["failed_at"] = None if status < 0 else int(status)
    return out


def draws(C: np.ndarray, D: int, batch: int, count: int, gen: np.random.Generator):
    """``count`` draws of the chain's ``(u (B, P), G (B, B))`` at the Gram matrix ``C``, as
    arrays ``(count, B, P)`` and ``(count, B, B)`` (for checking their law)."""
    k = _kernels()
    C = np.ascontiguousarray(C, dtype=np.float64)
    P = C.shape[0]
    L = np.zeros((P, P))
    rank = k.cholesky_psd(C, L, PIVOT_TOL)
    U, G = np.empty((count, batch, P)), np.empty((count, batch, batch))
    z, A = np.empty((batch, P)), np.zeros((batch, batch))
    for s in range(count):
        k.draw_fields(L, rank, int(D), int(batch), gen, z, U[s], G[s], A)
    return U, G, rank
