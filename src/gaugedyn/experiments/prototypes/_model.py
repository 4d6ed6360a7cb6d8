"""The Gaussian-activation network, its prototypes, the structural losses and batched Adam.

The network of width ``N`` on scalar inputs is

    f(x) = sum_i a_i phi(w_i x + b_i) + c,    phi(z) = exp(-z^2 / 2),

and neuron ``i`` peaks at its prototype ``p_i = -b_i / w_i``. The training loss of one run is

    L = L_fit + lambda (m_cov L_cov + m_sep L_sep + m_ov L_ov),   L_fit = mean_j (f(x_j) - y_j)^2,

with one regularisation weight ``lambda`` and a mask ``(m_cov, m_sep, m_ov)`` in ``{0, 1}^3``
(the eight `COMBINATIONS`). The structural losses (``M`` samples, ``N`` neurons):

- coverage, one-sided: ``mean_j min_i (x_j - p_i)^2``; two-sided (chamfer) adds
  ``mean_i min_j (p_i - x_j)^2``, which pulls every prototype toward its nearest sample;
- separation: ``1/(N(N-1)) sum_{i != k} exp(-(p_i - p_k)^2 / (2 tau^2))`` (the pair mask
  ``i != k``; ``tau`` is a length on the input axis);
- overlap: ``1/(M N(N-1)) sum_j sum_{i != k} h_ij h_kj`` with ``h_ij = phi(w_i x_j + b_i)``,
  computed as ``sum_j [(sum_i h_ij)^2 - sum_i h_ij^2]`` in ``O(N M)``.

Runs are batched along a leading axis and the loss minimised is the sum of the runs' losses;
Adam is elementwise, so each run follows exactly the trajectory it would follow alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ... import stats
from ..._errors import InputError
from ..._options import Param
from ._protocol import COMBINATIONS as COMBINATIONS
from ._protocol import COVERAGES as COVERAGES
from ._protocol import INITS as INITS
from ._protocol import TARGET_VARIANCE as TARGET_VARIANCE
from ._protocol import TARGETS as TARGETS

FLOOR = -60.0
"""Exponents below this are raised to it in the training loop: ``e^-60 ~ 1e-26`` is far below
float32's resolution next to 1, and exponentiating hugely negative numbers takes CPU exp's slow
path (a factor 5 on the whole step)."""


def combination_name(mask: Sequence[int]) -> str:
    """``"plain"``, ``"cov"``, ``"sep+ov"``, ... for a mask ``(coverage, separation, overlap)``."""
    parts = [name for bit, name in zip(mask, ("cov", "sep", "ov")) if bit]
    return "+".join(parts) or "plain"


OPTIONS = {
    "n": Param(int, name="n", lo=1, hi=10**6, why="one hidden neuron per sample"),
    "target": Param(str, name="target", choices=tuple(TARGETS)),
    "init": Param(str, name="init", choices=INITS),
    "steps": Param(
        int, name="steps", lo=0, hi=10**9, why="Adam steps; 0 returns the initial values"
    ),
    "lr": Param(
        float,
        name="lr",
        lo=0,
        hi=1e3,
        lo_open=True,
        why="Adam moves each parameter by about lr per step",
    ),
    "weight": Param(float, name="weight", lo=0, hi=1e6, why="the structural losses' weight"),
    "record": Param(int, name="record", lo=0, hi=10**9, why="step counts, at most steps"),
}
"""The Python API's arguments, declared with the command line's `gaugedyn._options.Param`
type (the same checks and error wording)."""


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise InputError(
            f"rng={type(rng).__name__} is not allowed; allowed: a "
            "numpy.random.Generator (explicit seeds only)"
        )


def training_data(rng: np.random.Generator, n: int, target: str) -> tuple[np.ndarray, np.ndarray]:
    r"""The training set of one run: $n$ inputs $x_j \sim U[0, 1]$ (sorted ascending) and their
    targets.

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's generator (explicit seeds only); it draws the inputs, then (for
        ``target="random"``) the labels.
    n : int
        The number of samples $M$ (the network's width equals it), in $[1, 10^6]$.
    target : str
        A key of `TARGETS`: ``"sin"`` ($y = \sin 2\pi x$) or ``"random"`` (independent
        $U[-1, 1]$ labels).

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``x`` and ``y``, each of shape ``(n,)``, float64.

    Raises
    ------
    InputError
        When ``rng`` is not a `numpy.random.Generator`, ``n`` is not an integer in $[1, 10^6]$, or
        ``target`` is not a key of `TARGETS`.
    """
    _check_rng(rng)
    n = OPTIONS["n"].accept(n)
    OPTIONS["target"].accept(target)
    x = np.sort(rng.uniform(0.0, 1.0, size=n))
    return x, TARGETS[target](x, rng)


def initial_parameters(rng: np.random.Generator, n: int, init: str) -> dict[str, np.ndarray]:
    r"""Width-$n$ initial parameters (float64).

    $w \sim N(0, n^2)$ (a bump of width $\sim 1/n$, the sample spacing), $a \sim N(0, 1/n)$,
    $c = 0$; ``init="inside"``: $b = -w u$ with $u \sim U[0, 1]$, so $p = u$ lies in the data
    range; ``init="broad"``: $b \sim N(0, n^2)$ independently, so $p = -b/w$ is standard Cauchy
    and only about a quarter of the prototypes start in $[0, 1]$.

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's generator (explicit seeds only); it draws $w$, then $b$ (or $u$), then $a$.
    n : int
        The width $N$, in $[1, 10^6]$.
    init : str
        One of `INITS`: ``"inside"`` or ``"broad"``.

    Returns
    -------
    dict of str to numpy.ndarray
        ``w``, ``b``, ``a`` of shape ``(n,)`` and ``c`` of shape ``()``.

    Raises
    ------
    InputError
        When ``rng`` is not a `numpy.random.Generator`, ``n`` is not an integer in $[1, 10^6]$, or
        ``init`` is not one of `INITS`.
    """
    _check_rng(rng)
    n = OPTIONS["n"].accept(n)
    OPTIONS["init"].accept(init)
    w = n * rng.standard_normal(n)
    if init == "inside":
        b = -w * rng.uniform(0.0, 1.0, size=n)
    else:
        b = n * rng.standard_normal(n)
    a = rng.standard_normal(n) / np.sqrt(n)
    return {"w": w, "b": b, "a": a, "c": np.zeros(())}


def prototypes_of(w, b):
    """The prototypes $p_i = -b_i / w_i$, the inputs at which the neurons' responses peak.

    Parameters
    ----------
    w : numpy.ndarray or torch.Tensor
        The input weights $w_i$, any shape.
    b : numpy.ndarray or torch.Tensor
        The biases $b_i$, of the same shape (or broadcastable), of the same kind as ``w``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        $-b / w$, elementwise (infinite or ``nan`` where $w_i = 0$).
    """
    return -b / w


@dataclass(frozen=True)
class Runs:
    """A batch of ``B`` runs of width ``N`` on ``M`` samples (numpy, float64).

    ``x``, ``y``: ``(B, M)``; ``w``, ``b``, ``a``: ``(B, N)``; ``c``: ``(B,)`` (initial values);
    ``mask``: ``(B, 3)`` in ``{0, 1}``; ``chamfer``: ``(B,)`` in ``{0, 1}``; ``tau``: ``(B,)``;
    ``weight``: ``(B,)``, each run's ``lambda`` (``None``: the ``weight`` passed to `train()`).
    """

    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    b: np.ndarray
    a: np.ndarray
    c: np.ndarray
    mask: np.ndarray
    chamfer: np.ndarray
    tau: np.ndarray
    weight: np.ndarray | None = None

    def __post_init__(self):
        for name in ("x", "y", "w", "b", "a", "c", "mask", "chamfer", "tau"):
            try:
                v = np.asarray(getattr(self, name), dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(
                    f"Runs.{name} is not allowed; allowed: an array of numbers"
                ) from None
            if not np.all(np.isfinite(v)):
                raise InputError(
                    f"Runs.{name} is not allowed (nan or inf); allowed: finite numbers"
                )
        if np.ndim(self.w) != 2:
            raise InputError(f"Runs.w has shape {np.shape(self.w)}, expected (B, N)")
        B, N = np.shape(self.w)
        if N < 2 or B < 1:
            raise InputError(
                f"Runs.w has shape {(B, N)}: the pairwise losses need width N >= 2 "
                "and at least one run"
            )
        for name, shape in (
            ("x", (B, -1)),
            ("y", np.shape(self.x)),
            ("b", (B, N)),
            ("a", (B, N)),
            ("c", (B,)),
            ("mask", (B, 3)),
            ("chamfer", (B,)),
            ("tau", (B,)),
            ("weight", (B,)),
        ):
            if getattr(self, name) is None:
                continue
            got = np.shape(getattr(self, name))
            if len(got) != len(shape) or any(s not in (-1, g) for s, g in zip(shape, got)):
                raise InputError(f"Runs.{name} has shape {got}, expected {shape}")
        if np.shape(self.x)[1] < 1:
            raise InputError("Runs.x has no samples; allowed: shape (B, M) with M >= 1")
        if not np.all(np.isin(self.mask, (0, 1))) or not np.all(np.isin(self.chamfer, (0, 1))):
            raise InputError("Runs.mask and Runs.chamfer are not allowed; allowed: 0 or 1 each")
        if not np.all(np.asarray(self.tau) > 0):
            raise InputError("Runs.tau is not allowed; allowed: numbers > 0")


def seeded_runs(
    seed: np.random.SeedSequence, n: int, seeds: int, init: str, target: str, variants
) -> Runs:
    """The `Runs` of ``variants`` for ``seeds`` seeds at width ``n``: seed ``s``'s data and
    initialisation from ``stats.generator(seed, "data" | "init", s)``, shared by its variants
    (dicts with ``mask``, ``coverage``, ``tau``, ``weight``), seed by seed. The one place a
    task's runs are drawn (the full run's tasks and the headline's)."""
    rows = []
    for s in range(int(seeds)):
        x, y = training_data(stats.generator(seed, "data", s), n, target)
        p0 = initial_parameters(stats.generator(seed, "init", s), n, init)
        rows += [(x, y, p0, v) for v in variants]
    stack = lambda key: np.stack([r[2][key] for r in rows])  # noqa: E731
    return Runs(
        x=np.stack([r[0] for r in rows]),
        y=np.stack([r[1] for r in rows]),
        w=stack("w"),
        b=stack("b"),
        a=stack("a"),
        c=np.zeros(len(rows)),
        mask=np.array([r[3]["mask"] for r in rows], dtype=float),
        chamfer=np.array([r[3]["coverage"] == "chamfer" for r in rows], dtype=float),
        tau=np.array([float(r[3]["tau"]) for r in rows]),
        weight=np.array([float(r[3]["weight"]) for r in rows]),
    )


def forward(
    x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, a: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``f`` of shape ``(B, M)`` and the hidden responses ``h`` of shape ``(B, N, M)``."""
    z = w[:, :, None] * x[:, None, :] + b[:, :, None]
    h = torch.exp(-0.5 * z * z)
    return torch.einsum("bn,bnm->bm", a, h) + c[:, None], h


def structural_losses(
    x: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    h: torch.Tensor,
    tau: torch.Tensor,
    chamfer: torch.Tensor,
) -> torch.Tensor:
    r"""The three structural losses of every run (module docstring): coverage, separation and
    overlap, with $p_i = -b_i / w_i$,

    $$L_\mathrm{cov} = \frac{1}{M}\sum_j \min_i (x_j - p_i)^2
      \;\left[+ \frac{1}{N}\sum_i \min_j (p_i - x_j)^2\right]_\mathrm{chamfer},$$

    $$L_\mathrm{sep} = \frac{1}{N(N-1)} \sum_{i \ne k} e^{-(p_i - p_k)^2 / (2\tau^2)}, \qquad
    L_\mathrm{ov} = \frac{1}{M N (N-1)} \sum_j \sum_{i \ne k} h_{ij} h_{kj}.$$

    Parameters
    ----------
    x : torch.Tensor
        ``(B, M)``: each run's training inputs.
    w : torch.Tensor
        ``(B, N)``: the input weights.
    b : torch.Tensor
        ``(B, N)``: the biases.
    h : torch.Tensor
        ``(B, N, M)``: the hidden responses $h_{ij} = \phi(w_i x_j + b_i)$ (as `forward()` returns
        them).
    tau : torch.Tensor
        ``(B,)``: the separation kernel's length $\tau > 0$ on the input axis.
    chamfer : torch.Tensor
        ``(B,)``: 1 for the two-sided (chamfer) coverage, 0 for the one-sided one.

    Returns
    -------
    torch.Tensor
        ``(B, 3)``: $(L_\mathrm{cov}, L_\mathrm{sep}, L_\mathrm{ov})$ per run, differentiable.
    """
    N = w.shape[1]
    M = x.shape[1]
    p = prototypes_of(w, b)
    d2 = (x[:, None, :] - p[:, :, None]) ** 2
    cov = d2.amin(dim=1).mean(dim=1) + chamfer * d2.amin(dim=2).mean(dim=1)
    gaps = (p[:, :, None] - p[:, None, :]) ** 2
    kernel = torch.exp(-gaps / (2 * tau[:, None, None] ** 2))
    sep = (kernel.sum(dim=(1, 2)) - kernel.diagonal(dim1=1, dim2=2).sum(dim=1)) / (N * (N - 1))
    total = h.sum(dim=1)
    ov = (total * total - (h * h).sum(dim=1)).sum(dim=1) / (M * N * (N - 1))
    return torch.stack([cov, sep, ov], dim=1)


def total_loss(
    x: torch.Tensor,
    y: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    a: torch.Tensor,
    c: torch.Tensor,
    mask: torch.Tensor,
    tau: torch.Tensor,
    chamfer: torch.Tensor,
    weight,
) -> torch.Tensor:
    """``(B,)``: each run's ``L`` written with autograd-friendly operations (the reference that
    `gradients()` is tested against); ``weight`` one number or ``(B,)``."""
    f, h = forward(x, w, b, a, c)
    fit = ((f - y) ** 2).mean(dim=1)
    return fit + weight * (mask * structural_losses(x, w, b, h, tau, chamfer)).sum(dim=1)


def _nearest(sorted_points: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Index into ``sorted_points`` (``(B, K)``, ascending) of each query's nearest point."""
    K = sorted_points.shape[1]
    hi = torch.searchsorted(sorted_points, queries.contiguous()).clamp_(max=K - 1)
    lo = (hi - 1).clamp_(min=0)
    d_hi = (torch.gather(sorted_points, 1, hi) - queries).abs()
    d_lo = (torch.gather(sorted_points, 1, lo) - queries).abs()
    return torch.where(d_lo <= d_hi, lo, hi)


def _prototype_gradient(
    xs: torch.Tensor, p: torch.Tensor, mask: torch.Tensor, tau: torch.Tensor, chamfer: torch.Tensor
) -> torch.Tensor:
    """``d(m_cov L_cov + m_sep L_sep) / dp`` of shape ``(B, N)`` (``xs`` sorted ascending).

    Nearest neighbours on the line come from sorting and ``searchsorted`` (``O(N log N)``); the
    ``O(N^2)`` separation term is computed only for the runs whose mask has separation, with
    in-place operations (the step's largest cost after the responses).
    """
    N, M = p.shape[1], xs.shape[1]
    ps, order = torch.sort(p, dim=1)
    near = _nearest(ps, xs)
    pull = torch.zeros_like(ps).scatter_add_(1, near, -2 * (xs - torch.gather(ps, 1, near)) / M)
    grad = torch.zeros_like(p).scatter_(1, order, pull)
    back = torch.gather(xs, 1, _nearest(xs, p))
    grad = mask[:, 0:1] * (grad + chamfer[:, None] * 2 * (p - back) / N)
    rows = torch.nonzero(mask[:, 1]).flatten()
    if rows.numel():
        q = p.index_select(0, rows)
        diff = q[:, :, None] - q[:, None, :]
        inv = 1.0 / (tau.index_select(0, rows) ** 2)
        kernel = diff.square().mul_((-0.5 * inv)[:, None, None]).clamp_(min=FLOOR).exp_()
        sep = kernel.mul_(diff).sum(dim=2).mul_((-(2 / (N * (N - 1))) * inv)[:, None])
        grad = grad.index_add(0, rows, sep * mask.index_select(0, rows)[:, 1:2])
    return grad


def gradients(
    xs: torch.Tensor,
    y: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    a: torch.Tensor,
    c: torch.Tensor,
    mask: torch.Tensor,
    tau: torch.Tensor,
    chamfer: torch.Tensor,
    weight,
):
    """``(dL/dw, dL/db, dL/da, dL/dc)`` of every run's ``L`` in closed form, and ``L_fit``.

    ``weight`` is ``lambda``: one number, or a ``(B,)`` tensor (one per run).

    With ``r = f - y``, ``s_j = sum_i h_ij``: ``dL/dh_ij = 2 a_i r_j / M + lambda m_ov
    2 (s_j - h_ij) / (M N (N - 1))``, ``dh/dz = -z h``; the prototype part goes through
    ``dp/dw = -p/w`` and ``dp/db = -1/w``. ``xs`` must be sorted along its last axis. The
    ``(B, N, M)`` arrays are updated in place where possible (the step is memory-bound).
    """
    N, M = w.shape[1], xs.shape[1]
    z = torch.addcmul(b[:, :, None], w[:, :, None], xs[:, None, :])
    h = z.square().mul_(-0.5).clamp_(min=FLOOR).exp_()
    r = torch.bmm(a[:, None, :], h)[:, 0, :] + c[:, None] - y
    weight = torch.as_tensor(weight, dtype=w.dtype, device=w.device).expand(w.shape[0])
    ov = (weight * mask[:, 2] * 2 / (M * N * (N - 1)))[:, None, None]
    # -dL/dh = -(2/M) a_i r_j - ov (s_j - h_ij), then dL/dz = (-dL/dh) h z; the overlap term
    # only on the runs whose mask has overlap
    g_z = torch.mul((-2 / M) * a[:, :, None], r[:, None, :])
    rows = torch.nonzero(ov[:, 0, 0]).flatten()
    if rows.numel():
        hr, o = h.index_select(0, rows), ov.index_select(0, rows)
        g_z.index_add_(0, rows, (hr - hr.sum(dim=1, keepdim=True)).mul_(o))
    g_z.mul_(h).mul_(z)
    g_b = g_z.sum(dim=2)
    g_w = torch.bmm(g_z, xs[:, :, None])[:, :, 0]
    p = prototypes_of(w, b)
    g_p = weight[:, None] * _prototype_gradient(xs, p, mask, tau, chamfer)
    g_w = g_w - g_p * p / w
    g_b = g_b - g_p / w
    g_a = (2 / M) * torch.bmm(h, r[:, :, None])[:, :, 0]
    g_c = (2 / M) * r.sum(dim=1)
    return (g_w, g_b, g_a, g_c), (r * r).mean(dim=1)


def _tensor(v, dtype, device) -> torch.Tensor:
    """A copy (``torch.as_tensor`` would share a float64 array's memory, and Adam's in-place
    updates would then overwrite the caller's initial parameters)."""
    return torch.tensor(np.asarray(v, dtype=np.float64), dtype=dtype, device=device)


def max_displacement(w0, b0, w1, b1) -> np.ndarray:
    """``max_i |p_i(1) - p_i(0)|`` per run (``(B, N)`` arrays in, ``(B,)`` out; ``inf`` when a
    prototype is not finite at either end)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.abs(prototypes_of(w1, b1) - prototypes_of(w0, b0))
    return np.where(np.isfinite(d), d, np.inf).max(axis=1)


def _accept_record(record, steps: int) -> list[int]:
    """The step counts to snapshot: a sequence of counts in ``[0, steps]`` (one message for the
    torch and the compiled paths)."""
    if isinstance(record, str) or not isinstance(record, Sequence | np.ndarray):
        raise InputError(f"record={record!r} is not allowed; allowed: a sequence of step counts")
    record = [OPTIONS["record"].accept(r, "record") for r in record]
    if any(r > steps for r in record):
        raise InputError(
            f"record={record!r} is not allowed; allowed: step counts in [0, steps={steps}]"
        )
    return record


def train(
    runs: Runs,
    *,
    steps: int,
    lr: float,
    weight: float,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    record: Sequence[int] = (),
    window: int = 0,
    tolerance: float = 0.0,
    cap: int = 0,
) -> dict[str, Any]:
    r"""Full-batch Adam (``torch.optim.Adam``, default betas) on every run at once.

    Minimises $\sum_\mathrm{runs} L$ (module docstring) for ``steps`` steps at step size ``lr``,
    with the closed-form `gradients()` ($\lambda$: ``runs.weight``, else ``weight``). Adam is
    elementwise, so each run follows exactly the trajectory it would follow alone.

    With ``window > 0`` the parameters are also kept every ``window`` steps, and training goes on
    past ``steps`` until every run has settled or ``cap`` steps are done. A run settles at the
    first checkpoint $t$ where the largest displacement of its prototypes over the window,
    $\max_i |p_i(t) - p_i(t - \mathrm{window})|$ (`max_displacement()`), is below
    ``tolerance``. The final parameters are those at the last step trained; the fixed budget's are
    ``snapshots`` at ``steps``.

    Parameters
    ----------
    runs : Runs
        The batch: data, initial parameters, loss masks, ``tau``, ``chamfer`` and optionally a
        weight per run.
    steps : int
        Adam steps, in $[0, 10^9]$ (0 returns the initial values).
    lr : float
        Adam's step size, in $(0, 10^3]$: Adam moves each parameter by about ``lr`` per step.
    weight : float
        The structural losses' weight $\lambda$, in $[0, 10^6]$, for every run (ignored when
        ``runs.weight`` is set; it is checked all the same).
    dtype : torch.dtype
        ``torch.float32`` or ``torch.float64``, the arithmetic of the training.
    device : str or torch.device
        Where the training runs (``"cpu"``, ``"cuda"``; `gaugedyn.training.resolve_device()`).
    record : sequence of int
        Step counts in $[0, \mathrm{steps}]$ at which every run's fit error $L_\mathrm{fit}$ is
        recorded (0: before the first step).
    window : int
        0: train exactly ``steps`` steps. Otherwise the checkpoint interval: a divisor of
        ``steps`` and of ``cap``.
    tolerance : float
        The displacement below which a run counts as settled (used when ``window > 0``).
    cap : int
        The most steps trained while waiting for every run to settle, $\ge$ ``steps`` (used when
        ``window > 0``).

    Returns
    -------
    dict of str to Any
        ``w``, ``b``, ``a`` ``(B, N)`` and ``c`` ``(B,)``: the final parameters (float64 numpy);
        ``fit_history`` ``(len(record), B)``: $L_\mathrm{fit}$ at each recorded step count. With
        ``window > 0`` also ``snapshots`` (``w``, ``b``, ``a`` of shape ``(K, B, N)``, ``c``
        ``(K, B)``) at ``checkpoints`` (``(K,)``, step 0 first) and ``settled_at`` ``(B,)``: the
        step each run settled at, ``-1`` if it never settled by ``cap``.

    Raises
    ------
    InputError
        Before any step, when ``runs`` is not a `Runs`, ``steps``, ``lr`` or ``weight`` is out of
        its range, ``dtype`` is neither float32 nor float64, ``device`` is unknown or unavailable,
        ``record`` is not a sequence of step counts in $[0, \mathrm{steps}]$, or a nonzero
        ``window`` does not divide ``steps`` and ``cap`` or ``cap < steps``.
    """
    if not isinstance(runs, Runs):
        raise InputError(
            f"runs={type(runs).__name__} is not allowed; allowed: a "
            "gaugedyn.experiments.prototypes.Runs"
        )
    steps = OPTIONS["steps"].accept(steps)
    lr, weight = OPTIONS["lr"].accept(lr), OPTIONS["weight"].accept(weight)
    if dtype not in (torch.float32, torch.float64):
        raise InputError(f"dtype={dtype!r} is not allowed; allowed: torch.float32 or torch.float64")
    from ...training import resolve_device

    device = resolve_device(device)
    record = _accept_record(record, steps)
    if window:
        if steps % window or cap % window or cap < steps:
            raise InputError(
                f"window={window} is not allowed; allowed: a divisor of steps={steps} "
                f"and of cap={cap}, with cap >= steps"
            )
    last = cap if window else steps
    order = np.argsort(runs.x, axis=1)
    xs = _tensor(np.take_along_axis(runs.x, order, 1), dtype, device)
    y = _tensor(np.take_along_axis(runs.y, order, 1), dtype, device)
    params = [_tensor(getattr(runs, k), dtype, device) for k in "wbac"]
    pw, pb, pa, pc = params
    mask = _tensor(runs.mask, dtype, device)
    tau, chamfer = _tensor(runs.tau, dtype, device), _tensor(runs.chamfer, dtype, device)
    lam = _tensor(
        runs.weight if runs.weight is not None else np.full(len(runs.tau), weight), dtype, device
    )
    opt = torch.optim.Adam(params, lr=lr)
    wanted = {int(s): i for i, s in enumerate(record)}
    history = np.full((len(wanted), xs.shape[0]), np.nan)
    snaps, settled = [], np.full(xs.shape[0], -1)
    with torch.no_grad():
        for step in range(last + 1):
            grads, fit = gradients(xs, y, pw, pb, pa, pc, mask, tau, chamfer, lam)
            if step in wanted:
                history[wanted[step]] = fit.cpu().double().numpy()
            if window and step % window == 0:
                snaps.append([np.array(p.cpu().double().numpy()) for p in params])  # a copy
                if step:
                    moved = max_displacement(snaps[-2][0], snaps[-2][1], *snaps[-1][:2])
                    settled = np.where((settled < 0) & (moved < tolerance), step, settled)
                if step >= steps and np.all(settled >= 0):
                    break
            if step == last:
                break
            for param, grad in zip(params, grads):
                param.grad = grad
            opt.step()
    out: dict[str, Any] = {k: p.cpu().double().numpy() for k, p in zip("wbac", params)}
    out["fit_history"] = history
    if window:
        out["snapshots"] = {k: np.stack([s[i] for s in snaps]) for i, k in enumerate("wbac")}
        out["checkpoints"] = np.arange(len(snaps)) * window
        out["settled_at"] = settled
    return out


def train_fused(
    runs: Runs,
    *,
    steps: int,
    lr: float,
    weight: float,
    record: Sequence[int] = (),
    window: int = 0,
    tolerance: float = 0.0,
    cap: int = 0,
) -> dict[str, Any]:
    """`train()` in float64 through one compiled kernel (`._kernels`), with the same
    arguments (no ``dtype``, ``device``) and the same return value.

    Each run trains one after another for a whole window of steps with its parameters, Adam
    moments and responses in cache, and never goes back to Python inside a window; the gradient
    is `gradients()`' closed form and the update ``torch.optim.Adam``'s, so a run follows the
    trajectory `train()` gives it in float64 up to the order of its sums and the terms below
    ``e^FLOOR`` that the kernel drops (round-off), and
    exactly the trajectory it follows alone (its arithmetic does not depend on the batch).

    One difference in what is kept: with ``window > 0``, a run stops training at the first
    checkpoint ``t >= steps`` at which it has settled (``settled_at`` set), and its parameters are
    held there, so its later ``snapshots`` repeat its settled state (`train()` trains every
    run until all have settled or ``cap``). The fixed-budget and the settled readings are the same
    either way; only the snapshots after a run has settled differ.
    """
    if not isinstance(runs, Runs):
        raise InputError(
            f"runs={type(runs).__name__} is not allowed; allowed: a "
            "gaugedyn.experiments.prototypes.Runs"
        )
    steps = OPTIONS["steps"].accept(steps)
    lr, weight = OPTIONS["lr"].accept(lr), OPTIONS["weight"].accept(weight)
    record = _accept_record(record, steps)
    if window and (steps % window or cap % window or cap < steps):
        raise InputError(
            f"window={window} is not allowed; allowed: a divisor of steps={steps} "
            f"and of cap={cap}, with cap >= steps"
        )
    from . import _kernels

    last = cap if window else steps
    order = np.argsort(runs.x, axis=1)
    xs = np.ascontiguousarray(np.take_along_axis(np.asarray(runs.x, float), order, 1))
    y = np.ascontiguousarray(np.take_along_axis(np.asarray(runs.y, float), order, 1))
    w, b, a = (np.array(getattr(runs, k), dtype=np.float64) for k in "wba")
    c = np.array(runs.c, dtype=np.float64).reshape(-1)
    B, N = w.shape
    mom = np.zeros((B, 2, 4, N))
    mask = np.array(runs.mask, dtype=np.float64)
    chamfer, tau = np.array(runs.chamfer, dtype=np.float64), np.array(runs.tau, dtype=np.float64)
    lam = np.array(runs.weight if runs.weight is not None else np.full(B, weight), dtype=float)
    wanted = {int(s): i for i, s in enumerate(record)}
    history = np.full((len(wanted), B), np.nan)
    bounds = sorted(set(wanted) | set(range(0, last + 1, window) if window else {0, last}))
    snaps, settled = [], np.full(B, -1)
    every, active = np.ones(B, dtype=np.bool_), np.ones(B, dtype=np.bool_)
    fit = np.full(B, np.nan)
    for t, nxt in zip(bounds, [*bounds[1:], None]):
        if t in wanted:
            _kernels.train_window(
                xs, y, w, b, a, c, mom, mask, chamfer, tau, lam, lr, t, 0, every, fit
            )
            history[wanted[t]] = fit
        if window and t % window == 0:
            snaps.append([w.copy(), b.copy(), a.copy(), c.copy()])
            if t:
                moved = max_displacement(snaps[-2][0], snaps[-2][1], w, b)
                settled = np.where((settled < 0) & (moved < tolerance), t, settled)
            if t >= steps:
                active &= settled < 0
                if not active.any():
                    break
        if nxt is None:
            break
        _kernels.train_window(
            xs, y, w, b, a, c, mom, mask, chamfer, tau, lam, lr, t, nxt - t, active, fit
        )
    out: dict[str, Any] = {"w": w, "b": b, "a": a, "c": c, "fit_history": history}
    if window:
        out["snapshots"] = {k: np.stack([s[i] for s in snaps]) for i, k in enumerate("wbac")}
        out["checkpoints"] = np.arange(len(snaps)) * window
        out["settled_at"] = settled
    return out


CHUNK_ELEMENTS = 3_000_000
"""Most ``B N max(N, M)`` elements trained as one batch by `train_chunked()`. At ``N = 100``
one batch of 1,120 runs cost 2.96 times the CPU time per step of slices of 250 (12 MB float32
arrays), measured side by side by ``benchmarks/bench_prototypes_chunking.py``; at ``N = 50``
(2.8 million elements) slicing did not help, so the whole batch is kept there."""


def train_chunked(runs: Runs, **kw) -> dict[str, Any]:
    """`train()` on consecutive slices of the batch of at most `CHUNK_ELEMENTS`
    elements each, merged. Each run follows exactly the trajectory it follows alone, so the
    result equals `train()` on the whole batch except where a slice stops early (every run
    of it settled): its later ``snapshots`` are ``nan`` and its final parameters are those at
    its stop."""
    B, N = np.shape(runs.w)
    size = max(1, CHUNK_ELEMENTS // (N * max(N, np.shape(runs.x)[1])))
    parts = []
    for lo in range(0, B, size):
        fields: dict[str, Any] = {
            f: (None if getattr(runs, f) is None else getattr(runs, f)[lo : lo + size])
            for f in runs.__dataclass_fields__
        }
        part = Runs(**fields)
        parts.append(train(part, **kw))
    out: dict[str, Any] = {k: np.concatenate([p[k] for p in parts]) for k in "wbac"}
    out["fit_history"] = np.concatenate([p["fit_history"] for p in parts], axis=1)
    if "snapshots" in parts[0]:
        k = max(len(p["checkpoints"]) for p in parts)
        window = int(kw["window"])
        out["checkpoints"] = np.arange(k) * window
        out["settled_at"] = np.concatenate([p["settled_at"] for p in parts])
        snaps = {}
        for name in "wbac":
            pieces = []
            for p in parts:
                s = p["snapshots"][name]
                pad = np.full((k - s.shape[0], *s.shape[1:]), np.nan)
                pieces.append(np.concatenate([s, pad]))
            snaps[name] = np.concatenate(pieces, axis=1)
        out["snapshots"] = snaps
    return out
