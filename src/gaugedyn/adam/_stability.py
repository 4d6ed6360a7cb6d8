r"""The exact 1-D Adam map on $L = |x|^n / n$ and the multipliers of its oscillating state.

With $a = 1 - \beta_1$, $c = 1 - \beta_2$ and $g(x) = \operatorname{sign}(x)\,|x|^{n-1}$, one Adam
step (``torch.optim.Adam`` order: gradient, moments, bias corrections, step) is

$$
m_t = (1 - a)\, m_{t-1} + a\, g(x_t), \qquad v_t = (1 - c)\, v_{t-1} + c\, g(x_t)^2,
$$

$$
x_{t+1} = x_t - \eta\, \hat m_t / \bigl(\sqrt{\hat v_t} + \epsilon\bigr), \qquad
\hat m = m / \bigl(1 - (1-a)^t\bigr), \quad \hat v = v / \bigl(1 - (1-c)^t\bigr).
$$

The stationary map (no bias correction) has a period-2 orbit $x = +A, -A$ with $v = A^{2n-2}$
(`oscillating_state()`); linearised about it (derivations/adam_stability.md) its eigenvalues
are the roots of $\lambda^3 + p_2 \lambda^2 + p_1 \lambda + p_0$ (`cubic_coefficients()`).
Everything here is numpy and vectorises over any broadcast shape of ``(a, c, seed)``.
"""

from __future__ import annotations

import numpy as np

from .._errors import InputError


def cubic_coefficients(a, c, n, r):
    r"""``(p2, p1, p0)`` of the oscillating state's characteristic cubic.

    Works on numbers, numpy arrays and sympy symbols alike (the symbolic derivation checks this
    function against its own result).

    Parameters
    ----------
    a : array_like or sympy expression
        $1 - \beta_1$.
    c : array_like or sympy expression
        $1 - \beta_2$.
    n : float or sympy expression
        The loss's power, $L = |x|^n / n$.
    r : array_like or sympy expression
        eps's share $\epsilon / (\sqrt{V} + \epsilon)$ at the orbit (0: no eps).

    Returns
    -------
    tuple
        ``(p2, p1, p0)``: the cubic is $\lambda^3 + p_2 \lambda^2 + p_1 \lambda + p_0$.
    """
    p2 = 2 * a * n - 3 * a - 2 * c * n * r + 2 * c * n + 2 * c * r - c - 4 * n + 5
    p1 = (
        2 * a * c * n * r
        - 2 * a * c * r
        - a * c
        - 2 * a * n
        + 2 * a
        - 2 * c * n * r
        - 2 * c * n
        + 2 * c * r
        + 4 * c
        + 4 * n
        - 5
    )
    p0 = -(1 - a) * (1 - c)
    return p2, p1, p0


def multipliers(a, c, n, r=0.0) -> np.ndarray:
    r"""Eigenvalues of ``S J`` at the oscillating state, shape ``broadcast + (3,)`` (complex).

    The companion matrix of the cubic, batched through ``numpy.linalg.eigvals`` (LAPACK).

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    c : array_like
        $1 - \beta_2$.
    n : float
        The loss's power, $L = |x|^n / n$.
    r : array_like
        eps's share $\epsilon / (\sqrt{V} + \epsilon)$ at the orbit (0: no eps); ``a``, ``c`` and
        ``r`` broadcast.

    Returns
    -------
    numpy.ndarray
        The three multipliers per cell, complex, shape ``broadcast + (3,)``.
    """
    p2, p1, p0 = (
        np.asarray(p, dtype=float)
        for p in cubic_coefficients(
            np.asarray(a, float), np.asarray(c, float), float(n), np.asarray(r, float)
        )
    )
    p2, p1, p0 = np.broadcast_arrays(p2, p1, p0)
    comp = np.zeros(p2.shape + (3, 3))
    comp[..., 0, 0], comp[..., 0, 1], comp[..., 0, 2] = -p2, -p1, -p0
    comp[..., 1, 0] = comp[..., 2, 1] = 1.0
    return np.linalg.eigvals(comp)


def growth_rate(a, c, n, r=0.0) -> np.ndarray:
    r"""$\log \max |\lambda|$ per step: $> 0$ where the oscillating state is unstable.

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    c : array_like
        $1 - \beta_2$.
    n : float
        The loss's power, $L = |x|^n / n$.
    r : array_like
        eps's share $\epsilon / (\sqrt{V} + \epsilon)$ at the orbit (0: no eps); ``a``, ``c`` and
        ``r`` broadcast.

    Returns
    -------
    numpy.ndarray
        The growth rate per cell, shape ``broadcast``.
    """
    return np.log(np.max(np.abs(multipliers(a, c, n, r)), axis=-1))


def spiral_ratio(a, c, n, r=0.0) -> np.ndarray:
    r"""$\log|\lambda| / |\arg \lambda|$ of the leading multiplier (``inf`` when it is real).

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    c : array_like
        $1 - \beta_2$.
    n : float
        The loss's power, $L = |x|^n / n$.
    r : array_like
        eps's share $\epsilon / (\sqrt{V} + \epsilon)$ at the orbit (0: no eps); ``a``, ``c`` and
        ``r`` broadcast.

    Returns
    -------
    numpy.ndarray
        The ratio per cell, shape ``broadcast``.
    """
    z = multipliers(a, c, n, r)
    lead = np.take_along_axis(z, np.argmax(np.abs(z), axis=-1)[..., None], axis=-1)[..., 0]
    ang = np.abs(np.angle(lead))
    with np.errstate(divide="ignore"):
        return np.where(ang > 1e-14, np.log(np.abs(lead)) / np.maximum(ang, 1e-300), np.inf)


def oscillating_state(a, n: float, lr: float, eps) -> dict:
    r"""The period-2 orbit $(A, M, V)$ and eps share $r$ of the stationary map.

    $A$ solves $\eta\, a A^{n-2} / \bigl(2 (2 - a)\bigr) = A^{n-1} + \epsilon$ (the largest root;
    closed form $A = \eta\, a / \bigl(2 (2 - a)\bigr) - \epsilon$ at $n = 2$); ``nan`` where no
    orbit exists (eps-GD is stable there). $M = -a A^{n-1} / (2 - a)$, $V = A^{2n-2}$,
    $r = \epsilon / (A^{n-1} + \epsilon)$.

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    n : float
        The loss's power, $L = |x|^n / n$.
    lr : float
        The learning rate ``eta``.
    eps : array_like
        Adam's eps (broadcast with ``a``).

    Returns
    -------
    dict
        ``A``, ``M``, ``V`` and ``r``, arrays of the broadcast shape.
    """
    from scipy.optimize import brentq

    a, eps = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(eps, dtype=float))
    A0 = lr * a / (2 * (2 - a))
    if n == 2:
        A = np.where(A0 > eps, A0 - eps, np.nan)
    else:
        A = np.full(A0.shape, np.nan)
        for i in np.ndindex(A0.shape):
            a0, e = float(A0[i]), float(eps[i])
            f = lambda y, a0=a0, e=e: a0 * y ** (n - 2) - y ** (n - 1) - e  # noqa: E731
            top = a0 * (n - 2) / (n - 1)
            if e == 0:
                A[i] = a0
            elif f(top) > 0:
                A[i] = brentq(f, top, a0, xtol=1e-300, rtol=1e-15)
    G = A ** (n - 1)
    return {"A": A, "M": -a * G / (2 - a), "V": G**2, "r": eps / (G + eps)}


def adam_step(x, m, v, a, c, n: float, lr: float, eps: float, t: int | None = None):
    """One exact Adam step on $|x|^n / n$ (arrays broadcast); ``t`` (1-based) applies the
    bias corrections, ``None`` gives the stationary map. Returns ``(x, m, v)``."""
    g = np.sign(x) * np.abs(x) ** (n - 1)
    m = (1 - a) * m + a * g
    v = (1 - c) * v + c * g * g
    if t is None:
        mh, vh = m, v
    else:
        mh, vh = m / (1 - (1 - a) ** t), v / (1 - (1 - c) ** t)
    return x - lr * mh / (np.sqrt(vh) + eps), m, v


def simulated_growth_rate(
    a, c, n: float, lr: float, eps, steps: int = 4000, size: float = 1e-7
) -> np.ndarray:
    r"""Largest Lyapunov exponent of the simulated stationary map at its oscillating state.

    Benettin's method with the nonlinear map itself: the reference is the exact orbit
    ``z* -> S z*``; a perturbed state at relative distance ``size`` is stepped, its deviation
    from ``S z*`` measured in units of the orbit's scales ``(A, |M|, V)``, renormalised, and the
    logs of the growth factors averaged over ``steps`` (first tenth left out). Independent of
    the linearisation: it uses only `adam_step()`.

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    c : array_like
        $1 - \beta_2$.
    n : float
        The loss's power, $L = |x|^n / n$.
    lr : float
        The learning rate.
    eps : array_like
        Adam's eps; ``a``, ``c`` and ``eps`` broadcast.
    steps : int
        How many renormalised steps are taken (at least 1); the first ``steps // 10`` are
        left out of the average.
    size : float
        The perturbation's relative size.

    Returns
    -------
    numpy.ndarray
        The exponent per cell (``nan`` where no orbit exists), shape ``broadcast``.
    """
    a, c, eps = np.broadcast_arrays(
        np.asarray(a, float), np.asarray(c, float), np.asarray(eps, float)
    )
    st = oscillating_state(a, n, lr, eps)
    A, M, V = (np.broadcast_to(st[k], a.shape) for k in ("A", "M", "V"))
    scale = np.stack([A, np.abs(M), V])
    u = np.ones((3,) + a.shape) / np.sqrt(3.0)
    logs = np.zeros(a.shape)
    skip = steps // 10
    for k in range(steps):
        z = np.array([A, M, V]) + size * u * scale
        x1, m1, v1 = adam_step(z[0], z[1], z[2], a, c, n, lr, eps)
        d = np.stack([(-x1 - A), (-m1 - M), (v1 - V)]) / (size * scale)
        norm = np.sqrt((d**2).sum(axis=0))
        if k >= skip:
            logs += np.log(norm)
        u = d / norm
    return logs / (steps - skip)


def theory_boundary(a, n: float, r, c_lo: float = 1e-8, c_hi: float = 1.0) -> np.ndarray:
    r"""$c = 1 - \beta_2$ at which `growth_rate()` crosses 0, by bisection in $\log c$.

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    n : float
        The loss's power, $L = |x|^n / n$.
    r : array_like
        eps's share at the orbit; broadcast with ``a``.
    c_lo, c_hi : float
        The bracket ``[c_lo, c_hi]`` searched (positive).

    Returns
    -------
    numpy.ndarray
        The crossing per cell, ``nan`` where the rate has one sign over ``[c_lo, c_hi]``.
    """
    return _bisect_log_c(lambda c, a_, r_: growth_rate(a_, c, n, r_), a, r, c_lo, c_hi)


def _bisect_log_c(rate, a, r, c_lo, c_hi, iters: int = 60) -> np.ndarray:
    a, r = np.broadcast_arrays(np.asarray(a, float), np.asarray(r, float))
    lo, hi = np.full(a.shape, np.log(c_lo)), np.full(a.shape, np.log(c_hi))
    s_lo, s_hi = np.sign(rate(np.exp(lo), a, r)), np.sign(rate(np.exp(hi), a, r))
    ok = s_lo * s_hi < 0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        s = np.sign(rate(np.exp(mid), a, r))
        left = s == s_lo
        lo, hi = np.where(left, mid, lo), np.where(left, hi, mid)
    return np.where(ok, np.exp(0.5 * (lo + hi)), np.nan)


def simulated_boundary(
    a, n: float, lr: float, eps, c_lo: float, c_hi: float, steps: int = 4000, iters: int = 24
) -> np.ndarray:
    r"""``c`` at which `simulated_growth_rate()` crosses 0 (bisection in ``log c``).

    Parameters
    ----------
    a : array_like
        $1 - \beta_1$.
    n : float
        The loss's power, $L = |x|^n / n$.
    lr : float
        The learning rate.
    eps : array_like
        Adam's eps, one per cell; broadcast with ``a``.
    c_lo, c_hi : float
        The bracket ``[c_lo, c_hi]`` searched (positive).
    steps : int
        The steps of each `simulated_growth_rate()`.
    iters : int
        Bisection steps in ``log c``.

    Returns
    -------
    numpy.ndarray
        The crossing per cell, ``nan`` where the simulated rate has one sign over the bracket.
    """
    return _bisect_log_c(
        lambda c, a_, e_: simulated_growth_rate(a_, c, n, lr, e_, steps), a, eps, c_lo, c_hi, iters
    )


def simulate_losses(
    x0, a, c, n: float, lr: float, eps: float, steps: int, record: int = 1
) -> np.ndarray:
    r"""Log10 loss envelope of full 1-D Adam (bias-corrected) from ``x0``, ``m = v = 0``.

    The largest ``log10(|x_t|^n / n)`` over each run of ``record`` steps (``-inf`` at an exact
    zero) is kept: the upper envelope, so that no spike falls between samples.

    Parameters
    ----------
    x0 : array_like
        The starting points.
    a : array_like
        $1 - \beta_1$.
    c : array_like
        $1 - \beta_2$; ``x0``, ``a`` and ``c`` broadcast to the batch shape.
    n : float
        The loss's power, $L = |x|^n / n$.
    lr : float
        The learning rate.
    eps : float
        Adam's eps.
    steps : int
        How many steps are taken; at least 1.
    record : int
        Steps per recorded sample; at least 1.

    Returns
    -------
    numpy.ndarray
        ``(steps // record,) + shape``: the envelope per sample and run.

    Raises
    ------
    InputError
        When ``steps`` or ``record`` is below 1.
    """
    if steps < 1 or record < 1:
        raise InputError(f"steps={steps}, record={record}: allowed: integers >= 1")
    x, a, c = np.broadcast_arrays(np.asarray(x0, float), np.asarray(a, float), np.asarray(c, float))
    x = x.copy()
    m, v = np.zeros_like(x), np.zeros_like(x)
    out = np.empty((steps // record,) + x.shape)
    b1, b2 = 1 - a, 1 - c
    p1, p2 = np.ones_like(x), np.ones_like(x)
    peak = np.full_like(x, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(steps):
            g = np.sign(x) * np.abs(x) ** (n - 1)
            m = b1 * m + a * g
            v = b2 * v + c * g * g
            p1, p2 = p1 * b1, p2 * b2
            x = x - lr * (m / (1 - p1)) / (np.sqrt(v / (1 - p2)) + eps)
            np.maximum(peak, n * np.log10(np.abs(x)) - np.log10(n), out=peak)
            if (t + 1) % record == 0:
                out[t // record] = peak
                peak[...] = -np.inf
    return out


def loss_floor(n: float) -> float:
    """log10 of the smallest resolved loss $|x|^n / n$ of the 1-D maps: ``x`` at the smallest
    normal float64 (``log10 |x|`` is computed from ``x`` itself, so the loss never underflows
    before ``x`` does).

    Parameters
    ----------
    n : float
        The loss's power.

    Returns
    -------
    float
        ``n log10(tiny) - log10(n)``, ``tiny`` the smallest normal float64.
    """
    return float(n * np.log10(np.finfo(np.float64).tiny) - np.log10(n))


def simulate_blocks(x0, m0, v0, a, c, n: float, lr: float, eps: float, steps, size, bias: bool):
    r"""Many independent 1-D Adam runs, in groups of equal length, reduced at full resolution to
    the spike detector's block statistics (`gaugedyn.adam._spikes.Blocks`).

    Each run takes ``steps[g]`` exact steps of `adam_step()` (bias-corrected from ``t = 1``
    when ``bias``, else the stationary map), compiled with numba; every step enters its block.
    Equals `gaugedyn.adam._spikes.block_statistics()` of `simulate_losses()` (tests).

    Parameters
    ----------
    x0, m0, v0 : array_like
        Shape ``(G, L)`` (broadcast): lane ``l`` of group ``g`` starts at
        ``(x0, m0, v0)[g, l]`` (the moments *before* the first step).
    a : array_like
        $1 - \beta_1$, shape ``(G,)``.
    c : array_like
        $1 - \beta_2$, shape ``(G,)``.
    n : float
        The loss's power, $L = |x|^n / n$.
    lr : float
        The learning rate.
    eps : float
        Adam's eps.
    steps : array_like of int
        Steps per group, shape ``(G,)``; each at least 1.
    size : array_like of int
        Steps per block, shape ``(G,)``; each at least 1.
    bias : bool
        Apply the bias corrections (``True``) or run the stationary map.

    Returns
    -------
    tuple of (Blocks, numpy.ndarray)
        ``(blocks, used)``: ``blocks`` of shape ``(S, G, L)`` per statistic (the time axis
        first, as the detector reads it) in ``log10(|x|^n / n)`` clipped at `loss_floor()`
        (``bad``: some step ``nan`` or infinite), the first ``used[g]`` blocks of group ``g``
        valid (the rest ``nan``).

    Raises
    ------
    InputError
        When some ``steps`` or ``size`` is below 1.
    """
    used_sets = simulate_block_sets(
        x0, m0, v0, a, c, n, lr, eps, steps, np.atleast_1d(np.asarray(size))[:, None], bias
    )
    return used_sets[0]


def simulate_block_sets(
    x0, m0, v0, a, c, n: float, lr: float, eps: float, steps, sizes, bias: bool
) -> list:
    r"""`simulate_blocks()` reduced at several block sizes at once: each trajectory is simulated
    once and every step enters one block of each size ``sizes[g, q]`` (the detector's sampling
    ``q``); the blocks of size ``sizes[:, q]`` equal those `simulate_blocks()` gives at that size
    (the same steps in the same order; tests).

    Parameters
    ----------
    x0, m0, v0, a, c, n, lr, eps, steps, bias
        As in `simulate_blocks()`.
    sizes : array_like of int
        Steps per block, shape ``(G, Q)`` (broadcast); each at least 1.

    Returns
    -------
    list of tuple of (Blocks, numpy.ndarray)
        Per size ``q``, `simulate_blocks()`'s ``(blocks, used)`` at the sizes ``sizes[:, q]``.

    Raises
    ------
    InputError
        When some ``steps`` or ``sizes`` is below 1.
    """
    from ._spikes import Blocks
    from ._stability_kernels import blocks

    a, c, steps = (
        np.ascontiguousarray(np.atleast_1d(z), dtype=dt)
        for z, dt in ((a, float), (c, float), (steps, np.int64))
    )
    sizes = np.atleast_2d(np.asarray(sizes, dtype=np.int64))
    a, c, steps, _ = np.broadcast_arrays(a, c, steps, sizes[:, 0])
    G = a.size
    sizes = np.ascontiguousarray(np.broadcast_to(sizes, (G, sizes.shape[-1])))
    x0 = np.atleast_2d(np.asarray(x0, dtype=float))
    L = x0.shape[-1]
    x0, m0, v0 = (
        np.ascontiguousarray(np.broadcast_to(np.asarray(z, dtype=float), (G, L)))
        for z in (x0, m0, v0)
    )
    if np.any(steps < 1) or np.any(sizes < 1):
        raise InputError(f"steps={steps.min()}, size={sizes.min()}: allowed: integers >= 1")
    Q = sizes.shape[1]
    out = np.full((Q, 4, G, L, int(np.max(steps[:, None] // sizes))), np.nan)
    used = blocks(
        x0,
        m0,
        v0,
        np.ascontiguousarray(a),
        np.ascontiguousarray(c),
        float(n),
        float(lr),
        float(eps),
        np.ascontiguousarray(steps),
        sizes,
        bool(bias),
        out,
    )
    floor = loss_floor(n)
    tiny = np.finfo(np.float64).tiny
    sets = []
    for q in range(Q):
        o = out[q]
        with np.errstate(divide="ignore", invalid="ignore"):
            ell = np.where(o[:3] >= tiny, n * np.log10(o[:3]) - np.log10(n), floor)
        ell = np.where(np.isnan(o[:3]), np.nan, ell)
        stats = [np.moveaxis(z, -1, 0) for z in (*ell, o[3] > 0)]
        sets.append((Blocks(*stats), used[:, q].copy()))
    return sets


def series_blocks(log_loss, b: int, floor: float):
    """`gaugedyn.adam._spikes.Blocks` of a given per-step ``log10`` loss curve through
    the block reduction the compiled map uses (`simulate_blocks()`): the path on which the
    detector's known-answer controls run.

    Parameters
    ----------
    log_loss : array_like
        One per-step ``log10`` loss curve (1-D); a tail shorter than ``b`` is dropped.
    b : int
        Steps per block; an integer at least 1.
    floor : float
        The median, maximum and minimum are clipped below at ``floor``.

    Returns
    -------
    Blocks
        The ``len(log_loss) // b`` blocks' statistics.

    Raises
    ------
    InputError
        When ``log_loss`` is not 1-D or ``b`` is not an integer at least 1.
    """
    from ._spikes import Blocks
    from ._stability_kernels import series_blocks as kernel

    ell = np.ascontiguousarray(np.asarray(log_loss, dtype=float))
    if ell.ndim != 1 or int(b) != b or b < 1:
        raise InputError(f"log_loss must be one curve and b={b!r} an integer >= 1")
    S = ell.size // int(b)
    out = np.full((4, 1, 1, S), np.nan)
    kernel(ell, int(b), -np.inf, out)
    stats = np.maximum(out[:3, 0, 0], floor)
    return Blocks(stats[0], stats[1], stats[2], out[3, 0, 0] > 0)
