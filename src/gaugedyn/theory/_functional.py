r"""Functional pruning: who owns each teacher feature, with ties, and the function the others carry.

The seed's statement about duplicate students is about the *function* the non-owners still
carry, not about each non-owner's coefficient: copies that share a direction can cancel. These
observables are defined once here, for the theory, the experiments and trained networks alike
(the owner sets and owners themselves are `._observables`'s, re-exported here):

- remaining function: $\|\sum_{i \notin \text{any owner set}} \rho_i\, g(u_i \cdot x)\|_{L^2(\mathcal{N}(0, I_D))}$, in
  closed form from the Gaussian pair kernel ``F`` of the activation (the same kernel as the
  population loss): $\sum_{ij} a_i a_j F(Q_{ii}, Q_{jj}, Q_{ij})$ over the non-owners,
  square-rooted; ``remaining_relative`` divides it by the teacher's norm ``||f*||``;
- pruned from then on: the first output time after which ``|rho_i| < prune_tol`` at every later
  output time (a transient zero crossing is not a pruning).
"""

from __future__ import annotations

import numpy as np

from ._observables import TIE_RTOL as TIE_RTOL
from ._observables import owner_sets as owner_sets
from ._observables import owners as owners
from ._population import population_loss


def _norm_sq(a, Q, activation: str):
    r"""$\|\sum_i a_i\, g(w_i \cdot x)\|^2$ over $x \sim \mathcal{N}(0, I)$ (the population loss against no teacher)."""
    a = np.asarray(a, dtype=float)
    Q = np.asarray(Q, dtype=float)
    lead = a.shape[:-1]
    R = np.zeros((*lead, a.shape[-1], 1))
    b = np.zeros((*lead, 1))
    T = np.ones((*lead, 1, 1))
    return 2.0 * population_loss(a, Q, R, b, T, activation)


def function_norm(a, Q, activation: str = "relu") -> np.ndarray:
    r"""$\|\sum_i a_i\, g(w_i \cdot x)\|_{L^2(\mathcal{N}(0, I))}$ of the students given, in closed form.

    ``a (..., K)``, ``Q (..., K, K)``; a negative square from round-off reads as zero.
    """
    return np.sqrt(np.maximum(_norm_sq(a, Q, activation), 0.0))


def teacher_norm(b, T, activation: str = "relu") -> np.ndarray:
    r"""$\|f^*\|_{L^2(\mathcal{N}(0, I))} = \|\sum_n b_n\, g(v_n \cdot x)\|$ (``b (..., M)``, ``T (..., M, M)``)."""
    return function_norm(b, T, activation)


def remaining_function(
    a, Q, R, T, b, activation: str = "relu", tie_rtol: float = TIE_RTOL
) -> np.ndarray:
    r"""$\|\sum_{i \text{ owns no feature}} \rho_i\, g(u_i \cdot x)\|$ in closed form (``(...)``; see module doc)."""
    a = np.asarray(a, dtype=float)
    owning = np.any(owner_sets(a, Q, R, T, b, tie_rtol), axis=-1)
    return function_norm(np.where(owning, 0.0, a), Q, activation)


def remaining_relative(
    a, Q, R, T, b, activation: str = "relu", tie_rtol: float = TIE_RTOL
) -> np.ndarray:
    r"""`remaining_function()` over the teacher's norm $\|f^*\|$.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps, shape ``(..., K, M)``.
    T : array_like
        Teacher overlaps, shape ``(..., M, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    activation : str
        The activation's registered name, used for the students' function and the teacher's norm.
    tie_rtol : float
        Relative gap below which two shares tie (`owner_sets()`): a tied student owns.

    Returns
    -------
    numpy.ndarray
        $\|\sum_{i \text{ owns nothing}} \rho_i g(u_i \cdot x)\| / \|f^*\|$, shape ``(...)``.
    """
    return remaining_function(a, Q, R, T, b, activation, tie_rtol) / teacher_norm(b, T, activation)


def pruned_since(t, rho, prune_tol: float) -> np.ndarray:
    r"""Per student, the first output time from which $|\rho_i| <$ ``prune_tol`` holds at every
    later output time; ``nan`` if the student is not pruned at the last time.

    Parameters
    ----------
    t : array_like
        Output times, shape ``(T,)``, increasing.
    rho : array_like
        Feature coefficients $\rho_i$ at those times, shape ``(T, K)`` or ``(..., T, K)``.
    prune_tol : float
        The pruning tolerance (`Definitions.prune_tol`).

    Returns
    -------
    numpy.ndarray
        Shape ``(K,)`` (or ``(..., K)``): a time of ``t``, or ``nan``.
    """
    t = np.asarray(t, dtype=float)
    small = np.abs(np.asarray(rho, dtype=float)) < prune_tol
    # number of trailing output times that are all pruned, per student
    tail = np.cumprod(small[..., ::-1, :], axis=-2).sum(axis=-2)
    n = t.size
    index = np.clip(n - tail, 0, n - 1)
    return np.where(tail > 0, t[index], np.nan)


def pruning_time(t, rho, prune_tol: float, event_time=None) -> np.ndarray:
    """The time from which each student stays pruned (`pruned_since()`), refined by an
    event time located between output times (``event_time (..., K)``, e.g. the integrator's
    first crossing) where that event lies in the final pruned stretch; ``nan``: not pruned at
    the end.

    Parameters
    ----------
    t : array_like
        Output times, shape ``(T,)``, increasing.
    rho : array_like
        Feature coefficients at those times, shape ``(T, K)`` or ``(..., T, K)``.
    prune_tol : float
        The pruning tolerance (`Definitions.prune_tol`).
    event_time : array_like or None
        An event time per student, shape ``(..., K)``, used where it lies after the output time
        before `pruned_since()`'s time and not after it; ``None``: no refinement.

    Returns
    -------
    numpy.ndarray
        Shape ``(K,)`` (or ``(..., K)``): the pruning time, or ``nan``.
    """
    since = pruned_since(t, rho, prune_tol)
    if event_time is None:
        return since
    t = np.asarray(t, dtype=float)
    event = np.asarray(event_time, dtype=float)
    index = np.searchsorted(t, np.nan_to_num(since, nan=np.inf))
    before = t[np.clip(index - 1, 0, t.size - 1)]
    ok = np.isfinite(since) & np.isfinite(event) & (event >= before) & (event <= since)
    return np.where(ok, event, since)


def functional_report(
    a, Q, R, T, b, activation: str = "relu", tie_rtol: float = TIE_RTOL, teacher_activation=None
) -> dict:
    """Owners (index or ``"tie"`` with the tied indices) and the remaining function of one state,
    as plain data (``a (K,)``, ``Q (K, K)``, ``R (K, M)``, ``T (M, M)``, ``b (M,)``); the
    teacher's norm with ``teacher_activation`` when it is set.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(K,)``.
    Q : array_like
        Student overlaps, shape ``(K, K)``.
    R : array_like
        Student-teacher overlaps, shape ``(K, M)``.
    T : array_like
        Teacher overlaps, shape ``(M, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(M,)``.
    activation : str
        The students' activation (registered name).
    tie_rtol : float
        Relative gap below which two shares tie (`owner_sets()`).
    teacher_activation : str or None
        The teacher's activation for its norm; ``None``: ``activation``.

    Returns
    -------
    dict
        ``owner`` (per feature: a student index or ``"tie"``), ``owner_set`` (the indices),
        ``tie`` (bools), ``remaining_function``, ``remaining_relative`` and ``tie_rtol``.
    """
    sets = owner_sets(a, Q, R, T, b, tie_rtol)
    own = []
    for n in range(sets.shape[-1]):
        idx = [int(i) for i in np.flatnonzero(sets[:, n])]
        own.append(idx[0] if len(idx) == 1 else "tie")
    remaining = float(remaining_function(a, Q, R, T, b, activation, tie_rtol))
    return {
        "owner": own,
        "owner_set": [[int(i) for i in np.flatnonzero(sets[:, n])] for n in range(sets.shape[-1])],
        "tie": [o == "tie" for o in own],
        "remaining_function": remaining,
        "remaining_relative": remaining
        / float(
            teacher_norm(b, T, activation if teacher_activation is None else teacher_activation)
        ),
        "tie_rtol": tie_rtol,
    }
