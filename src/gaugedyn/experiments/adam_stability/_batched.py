"""Full-batch small models trained as one batch of independent copies, with per-copy Adam betas.

Task variants built here from the package's offline data (nothing downloaded):

- ``digits_ce``: scikit-learn's digits (`gaugedyn.training.load_digits()`),
  MLP 64-32-10 (ReLU), cross-entropy, full batch on the first ``n_samples`` images;
- ``teacher_mse``: the Gaussian ReLU teacher-student of `gaugedyn.experiments.adam_split.tasks` (``D = 20``,
  default student width 4, teacher width 2) on one fixed sample of ``n_samples`` inputs, half
  the mean squared error, full batch;
- ``teacher4_mse``: the same with a teacher of width 4 (default student width 16);
- ``digits_mse``: the same digits, MLP 64-``hidden``-10 (ReLU), half the squared error to the
  one-hot labels summed over the ten outputs and averaged over the images (the loss of
  ``adam_edge``'s ``mse``; the audit's pilot task), full batch on the first ``n_samples`` images;
- `noisy_labels()`: the digits labels with a share ``LABEL_NOISE`` replaced by one of the
  other nine classes (a fixed draw), for a cross-entropy task that cannot be fitted perfectly
  (``adam_edge``'s ``ce_noisy``).

``B`` copies (one per ``(beta1, beta2, seed)``) share the data; parameters carry a leading batch
axis and `adam_steps()` applies Adam's update with a per-copy ``beta1``, ``beta2``
(`gaugedyn.adam.batched_adam_step()`, ``op_order="running"``; checked against
``torch.optim.Adam`` in the tests). ``device``: the torch device
of the data and parameters (the initialisation is drawn on the CPU, so it is the same on
every device).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ..._errors import InputError
from ...adam import FLOAT64_FLOOR, SpikeBlocks
from ...training import load_digits
from ._protocol import ADAM_EPS

TASKS = ("digits_ce", "digits_mse", "teacher_mse", "teacher4_mse")
LABEL_NOISE = 0.2
"""Share of the labels `noisy_labels()` replaces by another class."""
NOISE_SEED = 0
"""The one fixed draw of the replaced labels (the data are the same for every run's seed)."""


def noisy_labels(y: torch.Tensor, share: float = LABEL_NOISE, seed: int = NOISE_SEED):
    """``y`` with each label, independently with probability ``share``, replaced by
    ``(y + k) mod 10``, ``k`` uniform on ``1..9`` (a draw from the other nine classes)."""
    g = torch.Generator().manual_seed(int(seed))
    flip = torch.rand(y.shape, generator=g) < share
    return torch.where(flip, (y + torch.randint(1, 10, y.shape, generator=g)) % 10, y)


HIDDEN = {"digits_ce": 32, "digits_mse": 32, "teacher_mse": 4, "teacher4_mse": 16}
TEACHER_WIDTH = {"teacher_mse": 2, "teacher4_mse": 4}
"""Default hidden width per task."""


def _data(task: str, n_samples: int, dtype, seed: int, hidden: int | None = None):
    if task not in TASKS:
        raise InputError(f"task={task!r} is not allowed; choose one of {list(TASKS)}")
    hidden = HIDDEN[task] if hidden is None else int(hidden)
    if task.startswith("digits"):
        X, y = load_digits()
        X, y = torch.as_tensor(X[:n_samples], dtype=dtype), torch.as_tensor(y[:n_samples])
        if task == "digits_mse":
            return X, torch.nn.functional.one_hot(y, 10).to(dtype), (64, hidden, 10)
        return X, y, (64, hidden, 10)
    if task in TEACHER_WIDTH:
        g = torch.Generator().manual_seed(int(seed))
        V = torch.randn(TEACHER_WIDTH[task], 20, generator=g, dtype=dtype)
        V = V / V.norm(dim=1, keepdim=True)
        X = torch.randn(n_samples, 20, generator=g, dtype=dtype)
        return X, torch.relu(X @ V.T).sum(-1, keepdim=True), (20, hidden, 1)


def confident_ce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the last-but-one axis of ``logits`` ``(..., n, k)`` with labels
    ``y`` ``(n,)``, accurate to the float's relative precision however confident the fit:
    each image's loss as ``log1p(sum_{j != y} exp(z_j - z_y))`` (`torch.logaddexp` of 0 and
    the log-sum-exp of the other classes' margins). ``-log_softmax`` computes
    ``log(1 + tiny)`` and reads exactly 0 once ``tiny`` is below the float's resolution
    (about 1.1e-16 in float64), and its gradient on the label's logit, ``p_y - 1``, then
    reads 0 instead of minus the other classes' probabilities; here the autograd gradient of
    every logit is the exact one to relative precision (tests: against an mpmath reference)."""
    own = torch.nn.functional.one_hot(y, logits.shape[-1]).bool().expand(logits.shape)
    zy = logits.gather(-1, y.expand(logits.shape[:-1])[..., None])
    rest = torch.logsumexp((logits - zy).masked_fill(own, -math.inf), dim=-1)
    return torch.logaddexp(torch.zeros_like(rest), rest).mean(-1)


def mlp_params(B: int, seeds, dims, dtype, device: str) -> list[torch.Tensor]:
    """``[W1, b1, W2, b2]`` of ``B`` two-layer MLPs of widths ``dims = (d, h, k)``, copies on
    axis 0, copy ``i`` drawn from ``seeds[i]`` (on the CPU) uniform within
    ``torch.nn.Linear``'s default bounds ``1 / sqrt(fan_in)``, each a leaf that requires grad."""
    d, h, k = dims
    params = []
    for s in np.broadcast_to(np.asarray(seeds), (B,)):
        g = torch.Generator().manual_seed(int(s))
        lim1, lim2 = 1 / d**0.5, 1 / h**0.5  # torch.nn.Linear's default uniform bounds
        params.append(
            [
                (torch.rand(d, h, generator=g, dtype=dtype) * 2 - 1) * lim1,
                (torch.rand(1, h, generator=g, dtype=dtype) * 2 - 1) * lim1,
                (torch.rand(h, k, generator=g, dtype=dtype) * 2 - 1) * lim2,
                (torch.rand(1, k, generator=g, dtype=dtype) * 2 - 1) * lim2,
            ]
        )
    return [torch.stack([p[i] for p in params]).to(device).requires_grad_(True) for i in range(4)]


class BatchedMLP:
    """``B`` two-layer ReLU MLPs ``f(x) = relu(x W1 + b1) W2 + b2`` on shared full-batch data."""

    def __init__(
        self,
        task: str,
        B: int,
        seeds,
        n_samples: int = 256,
        dtype=torch.float64,
        data_seed: int = 0,
        hidden: int | None = None,
        device: str = "cpu",
    ):
        self.task = task
        X, y, (d, h, k) = _data(task, n_samples, dtype, data_seed, hidden)
        self.X, self.y = X.to(device), y.to(device)
        self.params = mlp_params(B, seeds, (d, h, k), dtype, device)

    def losses(self, params=None) -> torch.Tensor:
        """Per-copy full-batch loss, shape ``(B,)``."""
        W1, b1, W2, b2 = self.params if params is None else params
        out = torch.relu(self.X @ W1 + b1) @ W2 + b2
        if self.task == "digits_ce":
            return confident_ce(out, self.y)
        return 0.5 * ((out - self.y) ** 2).sum(-1).mean(-1)

    def losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient of its own loss with respect to each
        of ``params`` (``(W1, b1, W2, b2)``, copies on axis 0; ``B`` may be fewer copies than
        the model's): the mean-squared tasks by hand (`mse_losses_and_grads()`), the
        cross-entropy one by autograd on `losses()`."""
        if self.task == "digits_ce":
            return self._autograd_losses_and_grads(params)
        return mse_losses_and_grads(self.X, self.y, params)

    def _autograd_losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient of its own loss, by autograd on
        `losses()` (the programs whose gradient is not written by hand)."""
        mine = [p.detach().requires_grad_(True) for p in params]
        L = self.losses(mine)
        return L.detach(), list(torch.autograd.grad(L.sum(), mine))


def mse_losses_and_grads(X, y, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``(L, [dW1, db1, dW2, db2])`` of ``B`` copies of ``L = 1/2 mean_n sum_k (relu(X W1 +
    b1) W2 + b2 - y)^2``, the gradients written out (the backward pass of `BatchedMLP.losses()`
    for a mean-squared task, checked against autograd in the tests). Hand-written rather than
    autograd for speed: no graph is recorded, and with one output (the teacher tasks) the
    second layer's three products are elementwise products and sums instead of batched
    matrix-vector products. Each copy's arithmetic is the same whatever the batch (the first
    layer's products are per-copy batched products, the reductions run along one copy's own
    axes): a copy's run does not depend on the copies beside it, as a scan's cells must not
    (`_scan._scan_task`; tested).

    The ReLU's backward is ``torch``'s own (``threshold_backward``: the
    gradient kept where ``Z > 0``, zero where ``Z <= 0``), one vectorised pass instead of a
    comparison, a negation and ``masked_fill_`` (ten times slower at 40 copies); the two
    differ only where ``Z`` is ``nan`` (kept, there ``nan``, against zero), and a ``nan`` in
    ``Z`` makes that step's loss ``nan`` and, through ``b2``'s gradient, every later one: the
    losses are the same bits either way (tested against the ``masked_fill_`` form, a ``nan``
    planted)."""
    W1, b1, W2, b2 = (p.detach() for p in params)
    B, h, k = W1.shape[0], W1.shape[-1], W2.shape[-1]
    n = X.shape[0]
    Z = torch.matmul(X, W1).add_(b1)  # (B, n, h)
    A = Z.clamp(min=0)
    o = (A * W2.view(B, 1, h)).sum(-1, keepdim=True) if k == 1 else torch.matmul(A, W2)
    r = o.add_(b2).sub_(y)  # (B, n, k): out + b2 - y
    L = 0.5 * (r * r).sum(-1).mean(-1)
    dout = r / n
    if k == 1:
        dW2 = (A * dout).sum(1).view(B, h, 1)
        dA = dout * W2.view(B, 1, h)
    else:
        dW2 = torch.matmul(A.transpose(1, 2), dout)
        dA = torch.matmul(dout, W2.transpose(1, 2))
    dZ = torch.ops.aten.threshold_backward(dA, Z, 0.0)
    return L, [torch.matmul(X.T, dZ), dZ.sum(1, keepdim=True), dW2, dout.sum(1, keepdim=True)]


class BlockStatistics:
    """The spike detector's block statistics (`gaugedyn.adam.SpikeBlocks`) of ``B``
    per-step ``log10`` losses, accumulated on the device as a training loop runs: copy ``i``'s
    steps go into blocks of ``size[i]`` steps, each reduced at its end to its lower median,
    maximum and minimum of the loss clipped at ``floor`` (``nan`` and ``+inf`` read as the
    floor) and whether some step was ``nan``, ``+inf`` or above the copy's ceiling (its first
    loss, unless set). Equals `gaugedyn.adam.spike_block_statistics()` of the whole curve
    (tests)."""

    def __init__(self, size, device, floor: float = FLOAT64_FLOOR):
        self.size = np.asarray(size, dtype=np.int64)
        self.floor = floor
        self.groups = {
            int(b): torch.as_tensor(np.flatnonzero(self.size == b), device=device)
            for b in np.unique(self.size)
        }
        self.whole = len(self.groups) == 1
        self.buf = {
            b: torch.empty((b, idx.numel()), dtype=torch.float64, device=device)
            for b, idx in self.groups.items()
        }
        self.out: dict[int, list] = {b: [] for b in self.groups}
        self.ceiling: torch.Tensor | None = None
        self.t = 0

    def push(self, ell: torch.Tensor) -> None:
        """Take the ``B`` log losses of the next step."""
        ell = ell.detach().double()
        if self.ceiling is None:
            self.ceiling = ell.clone()
        for b, idx in self.groups.items():
            k = self.t % b
            self.buf[b][k] = ell if self.whole else ell[idx]
            if k == b - 1:
                self._close(b, idx)
        self.t += 1

    def _close(self, b: int, idx: torch.Tensor) -> None:
        raw = self.buf[b]
        assert self.ceiling is not None
        ceiling = self.ceiling if self.whole else self.ceiling[idx]
        bad = (~(raw < math.inf) | (raw > ceiling)).any(dim=0)
        x = torch.where(torch.isfinite(raw), raw.clamp(min=self.floor), self.floor)
        srt = torch.sort(x, dim=0).values
        self.out[b].append(torch.stack([srt[(b - 1) // 2], srt[-1], srt[0], bad.double()]))

    def blocks(self) -> list[SpikeBlocks]:
        """Each copy's blocks so far."""
        out: list[SpikeBlocks | None] = [None] * int(self.size.size)
        for b, idx in self.groups.items():
            st = (
                torch.stack(self.out[b]).cpu().numpy()
                if self.out[b]
                else np.empty((0, 4, idx.numel()))
            )
            for col, i in enumerate(idx.cpu().numpy()):
                z = st[:, :, col]
                out[int(i)] = SpikeBlocks(z[:, 0], z[:, 1], z[:, 2], z[:, 3] > 0)
        return [o for o in out if o is not None]


def adam_steps(
    model: BatchedMLP, lr: float, beta1, beta2, steps: int, size, eps: float = ADAM_EPS
) -> tuple[list[SpikeBlocks], np.ndarray]:
    """Full-batch Adam with per-copy betas (`gaugedyn.adam.batched_adam_step()`, the
    ``"running"`` operation order of the 1-D maps), every step's ``log10`` loss entering the
    spike detector's blocks of ``size[i]`` steps (`BlockStatistics`); returns each copy's
    blocks and its first ``log10`` loss."""
    sets, first = adam_step_sets(model, lr, beta1, beta2, steps, [size], eps)
    return sets[0], first


def adam_step_sets(
    model: BatchedMLP,
    lr: float,
    beta1,
    beta2,
    steps,
    sizes,
    eps: float = ADAM_EPS,
    watch: tuple[set[int], Callable[[int, list[torch.Tensor]], None]] | None = None,
    weight_decay: float = 0.0,
) -> tuple[list[list[SpikeBlocks]], np.ndarray]:
    """`adam_steps()` with the loss reduced at several block sizes at once (``sizes``: one
    ``size`` per detector sampling, each a number or ``(B,)``): one training run, one
    `BlockStatistics` per sampling; returns each sampling's blocks per copy and the first
    ``log10`` losses. ``watch = (steps, call)``: after each of those steps (0-based)
    ``call(t, before)`` with every copy's parameters before it, in the model's order
    (``model.params`` hold those after; the run itself is unchanged). ``weight_decay``:
    decoupled weight decay as ``torch.optim.AdamW`` applies it, every parameter multiplied by
    ``1 - lr * weight_decay`` before the Adam update (0: plain Adam; tests: against AdamW).

    ``steps``: one number for every copy, or ``(B,)``, each copy's own run length. A copy stops
    after its own steps (`gaugedyn.experiments.adam_stability.PROTOCOL.md`: each cell runs its
    own settled run): the copies run longest first, so those still running are a prefix of the
    batch, which shrinks as copies end; a copy's blocks after its end read ``nan`` (its whole
    blocks, ``steps[i] // size[i]`` of them, are those of a run of its length alone). Each
    copy's steps are the same as in a batch where all run equally long (copies are
    independent).

    The update is `gaugedyn.adam.batched_adam_step()`'s ``"running"`` order with
    `gaugedyn.adam.adam_factors()`' running bias products, written out on the rows of one
    buffer (`FlatParams`): each elementwise operation runs once a step on every parameter and
    copy instead of once per tensor, the gradients land in the buffer's rows, and the batch's
    slices are taken only where it shrinks. These are the same float64 operations on the same
    values, so the same bits as the update tensor by tensor (tested bit for bit against it, at
    one copy and many; ``PROTOCOL.md``, the third task design, says what it saved)."""
    if not (math.isfinite(weight_decay) and weight_decay >= 0):
        raise InputError(f"weight_decay={weight_decay!r} is not allowed; give a finite value >= 0")
    like = model.params[0]
    B = like.shape[0]
    length = np.broadcast_to(np.asarray(steps, dtype=np.int64), (B,))
    if length.size and length.min() < 0:
        raise InputError(f"steps={int(length.min())} is not allowed; give steps >= 0")
    order = np.argsort(-length, kind="stable")  # longest first: the running copies a prefix
    idx = torch.as_tensor(order, device=like.device)
    ends = length[order]
    flat = FlatParams(model.params, idx)
    m, v, g = (flat.zeros() for _ in range(3))
    accs = [
        BlockStatistics(np.broadcast_to(np.asarray(z), (B,))[order], like.device) for z in sizes
    ]
    back_t = torch.as_tensor(np.argsort(order, kind="stable"), device=like.device)
    ell = torch.full((B,), math.nan, dtype=torch.float64, device=like.device)
    # Adam's per-copy scalars as columns over the flat rows, in the "running" order's
    # arithmetic (`gaugedyn.adam.adam_factors`, op_order="running"): 1 - b, and the running
    # products b^t whose 1 - b^t correct the bias, one step at a time
    betas = [
        torch.as_tensor(np.broadcast_to(np.asarray(b, float), (B,))[order].copy(), dtype=like.dtype)
        .to(like.device)
        .view(B, 1)
        for b in (beta1, beta2)
    ]
    ones = [1 - b for b in betas]
    powers = [torch.ones_like(b) for b in betas]
    lr, eps, decay = float(lr), float(eps), 1.0 - float(lr) * float(weight_decay)
    # the copies still running at step t: those with ends > t, a prefix that shrinks at the ends
    changes = {int(t): int(np.searchsorted(-ends, -t, side="left")) for t in np.unique(ends)}
    changes[0] = int(np.searchsorted(-ends, 0, side="left"))
    live = -1
    for t in range(int(ends[0]) if B else 0):
        if t in changes and changes[t] != live:
            live = changes[t]
            P, M, V, G = (z[:live] for z in (flat.data, m, v, g))
            views, gviews = flat.views(live), flat.views(live, g)
            b1, b2, c1, c2, p1, p2 = (z[:live] for z in (*betas, *ones, *powers))
            ell[live:] = math.nan
        L, grads = model.losses_and_grads(views)
        for z, x in zip(gviews, grads):
            z.copy_(x)
        with torch.no_grad():
            before = [q[back_t].clone() for q in flat.views(B)] if watch and t in watch[0] else None
            if weight_decay:
                P.mul_(decay)
            # batched_adam_step's "running" update, each operation on every parameter at once
            p1.mul_(b1)
            p2.mul_(b2)
            M.mul_(b1).add_(c1 * G)
            V.mul_(b2).add_(c2 * G * G)
            d = (V / (1 - p2)).sqrt_().add_(eps)
            P.sub_((M / (1 - p1)).mul_(lr).div_(d))
            ell[:live] = torch.log10(L.detach().double())
            if watch and before is not None:
                for p, q in zip(model.params, flat.views(B)):
                    p.data.copy_(q[back_t])
                watch[1](t, before)
            for acc in accs:
                acc.push(ell)
    with torch.no_grad():
        for p, q in zip(model.params, flat.views(B)):
            p[idx] = q
    back = np.argsort(order, kind="stable")
    first = (
        accs[0].ceiling.cpu().numpy()[back]
        if accs and accs[0].ceiling is not None
        else np.full(B, math.nan)
    )
    sets = [acc.blocks() for acc in accs]
    return [[z[int(k)] for k in back] for z in sets], first


class FlatParams:
    """The ``B`` copies' parameters (a batched model's ``params``, reordered by ``idx``) as one row per
    copy of one float64 buffer, so that `adam_step_sets()` runs each operation of Adam's
    update once on every parameter instead of once per tensor: the same elementwise
    operations on the same values as `gaugedyn.adam.batched_adam_step()` tensor by tensor, so
    the same bits (tested). `views()` gives the model's tensors ``(live, *shape)`` of the first
    ``live`` rows; each starts at a multiple of ``ALIGN`` elements (64 bytes) in a row that is a
    multiple of ``ALIGN`` long, so that every copy's tensor starts 64-byte aligned, as in its
    own stacked tensor (the matrix products' operands at the widths of the tasks; the matrix
    library's results are not assumed to ignore alignment). The padding holds zeros: its
    gradient is 0, and Adam leaves it 0."""

    ALIGN = 8

    def __init__(self, params, idx: torch.Tensor):
        like = params[0]
        self.shapes = [tuple(p.shape[1:]) for p in params]
        sizes = [int(np.prod(s)) for s in self.shapes]
        a = self.ALIGN
        self.offsets = list(np.cumsum([0] + [-(-z // a) * a for z in sizes])[:-1])
        self.sizes = sizes
        width = -(-(self.offsets[-1] + sizes[-1]) // a) * a
        B = like.shape[0]
        self.data = torch.zeros((B, width), dtype=like.dtype, device=like.device)
        for p, view in zip(params, self.views(B)):
            view.copy_(p.detach()[idx])

    def zeros(self) -> torch.Tensor:
        return torch.zeros_like(self.data)

    def views(self, live: int, buf: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The first ``live`` rows of ``buf`` (default: the parameters) as the model's
        tensors ``(live, *shape)``."""
        buf = self.data if buf is None else buf
        return [
            buf[:live, o : o + z].view((live, *s))
            for o, z, s in zip(self.offsets, self.sizes, self.shapes)
        ]


WHITENED_TASKS = ("digits_white_mse",)
"""The second network family's whitened-digits task (`WhitenedDigitsMLP`), apart from
`TASKS` (whose programs it shares)."""


def whitened_digits(n_samples: int, dtype=torch.float64) -> torch.Tensor:
    """The first ``n_samples`` digits images (`gaugedyn.training.load_digits()`), centred over
    those images and whitened in pixel space (ZCA): with the centred images ``X = U S V^T``
    (their thin SVD, the ``r`` singular values above ``1e-8`` of the largest kept),
    ``sqrt(n) U_r V_r^T``, shape ``(n, 64)``, whose Gram matrix is ``n`` times the projector on
    the images' span (every kept principal component of unit variance over the images)."""
    n = int(n_samples)
    if n < 2:
        raise InputError(f"n_samples={n_samples!r} is not allowed; give at least 2 images")
    X, _ = load_digits()
    Xc = X[:n] - X[:n].mean(0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    r = int((s > 1e-8 * s[0]).sum())
    return torch.as_tensor(math.sqrt(n) * U[:, :r] @ Vt[:r], dtype=dtype)


class WhitenedDigitsMLP(BatchedMLP):
    """``digits_white_mse``: `BatchedMLP`'s ``digits_mse`` (64-``hidden``-10 ReLU, half the
    squared error to the one-hot labels, the same initialisation) on `whitened_digits()`
    instead of the raw images: real data whose input Gram matrix is as well conditioned as
    the teacher tasks' Gaussian inputs (every direction of the images' span of equal
    variance)."""

    def __init__(
        self,
        task: str,
        B: int,
        seeds,
        n_samples: int = 256,
        dtype=torch.float64,
        data_seed: int = 0,
        hidden: int | None = None,
        device: str = "cpu",
    ):
        if task not in WHITENED_TASKS:
            raise InputError(f"task={task!r} is not allowed; choose one of {list(WHITENED_TASKS)}")
        super().__init__("digits_mse", B, seeds, n_samples, dtype, data_seed, hidden, device)
        self.task = task
        self.X = whitened_digits(n_samples, dtype).to(device)


FACTORISATION_TASKS = ("digits_lowrank",)
"""The second network family's factorisation task (`DigitsFactorisation`)."""


def lowrank_digits(n_samples: int, rank: int, dtype=torch.float64) -> torch.Tensor:
    """The best rank-``rank`` approximation (truncated SVD) of the first ``n_samples`` digits
    images (`gaugedyn.training.load_digits()`) centred over those images, shape ``(n, 64)``:
    real data that a product of an ``(n, rank)`` and a ``(rank, 64)`` matrix fits exactly."""
    n, k = int(n_samples), int(rank)
    if n < 2:
        raise InputError(f"n_samples={n_samples!r} is not allowed; give at least 2 images")
    if not 1 <= k <= min(n - 1, 64):
        raise InputError(f"rank={rank!r} is not allowed; give 1 <= rank <= {min(n - 1, 64)}")
    X, _ = load_digits()
    Xc = X[:n] - X[:n].mean(0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    return torch.as_tensor((U[:, :k] * s[:k]) @ Vt[:k], dtype=dtype)


class DigitsFactorisation:
    """``digits_lowrank``: ``B`` copies of the factorisation ``A C`` (``A`` of shape ``(n,
    k)``, one code per image, ``C`` of ``(k, 64)``) fitted to `lowrank_digits()` of rank
    ``k`` (``hidden``) under half the squared error summed over the pixels and averaged over
    the images, full batch: a two-layer linear network on real data with no teacher, whose
    minimum (loss 0) it can reach exactly. Entries of ``A`` and ``C`` start uniform on
    ``[-1, 1] / sqrt(k)``, each copy from its own seed. The interface of `BatchedMLP` that
    `adam_step_sets()` uses (``params``, `losses()`, `losses_and_grads()`)."""

    def __init__(
        self,
        task: str,
        B: int,
        seeds,
        n_samples: int = 64,
        dtype=torch.float64,
        data_seed: int = 0,
        hidden: int | None = None,
        device: str = "cpu",
    ):
        if task not in FACTORISATION_TASKS:
            raise InputError(
                f"task={task!r} is not allowed; choose one of {list(FACTORISATION_TASKS)}"
            )
        if hidden is None:
            raise InputError("hidden=None is not allowed; give the factorisation's rank")
        self.task = task
        k, n = int(hidden), int(n_samples)
        self.y = lowrank_digits(n, k, dtype).to(device)
        params = []
        for s in np.broadcast_to(np.asarray(seeds), (B,)):
            g = torch.Generator().manual_seed(int(s))
            params.append(
                [
                    (torch.rand(n, k, generator=g, dtype=dtype) * 2 - 1) / k**0.5,
                    (torch.rand(k, 64, generator=g, dtype=dtype) * 2 - 1) / k**0.5,
                ]
            )
        self.params = [
            torch.stack([p[i] for p in params]).to(device).requires_grad_(True) for i in range(2)
        ]

    def losses(self, params=None) -> torch.Tensor:
        """Per-copy full-batch loss, shape ``(B,)``."""
        A, C = self.params if params is None else params
        r = torch.matmul(A, C) - self.y
        return 0.5 * (r * r).sum(-1).mean(-1)

    def losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient with respect to ``(A, C)``, written
        out: with ``R = A C - Y``, ``dA = R C^T / n``, ``dC = A^T R / n`` (tests: against
        autograd on `losses()`). Each copy's arithmetic is its own (batched products)."""
        A, C = (p.detach() for p in params)
        n = A.shape[-2]
        r = torch.matmul(A, C) - self.y
        L = 0.5 * (r * r).sum(-1).mean(-1)
        return L, [torch.matmul(r, C.transpose(1, 2)) / n, torch.matmul(A.transpose(1, 2), r) / n]


TIED_TASKS = ("digits_tied_ae", "digits_tied_ae4")
"""The second network family's tied linear autoencoders (`DigitsTiedAutoencoder`)."""
TIED_POWER = {"digits_tied_ae": 2, "digits_tied_ae4": 4}
"""The power ``p`` of each tied autoencoder's loss ``mean_images sum_pixels |r|^p / p``."""


class DigitsTiedAutoencoder:
    """``digits_tied_ae``: ``B`` copies of the tied linear autoencoder ``X -> X W W^T`` (``W``
    of shape ``(64, k)``, encoder and decoder the same matrix) fitted to ``X`` =
    `lowrank_digits()` of rank ``k`` (``hidden``) under half the squared error summed over the
    pixels and averaged over the images, full batch (``digits_tied_ae4``: the fourth power
    over 4, `TIED_POWER`, a loss whose minimum has no curvature: ``|x|^4`` along every
    direction out of it). Real data and no teacher, and realizable:
    the loss is 0 exactly where ``W``'s columns are an orthonormal basis of the images' top
    ``k`` principal directions, a minimum isolated up to ``W -> W Q`` (``Q`` orthogonal: a
    compact gauge, along which no norm changes), unlike the factorisation ``A C``
    (`DigitsFactorisation`), whose gauge ``A G, G^-1 C`` is unbounded. Entries of ``W`` start
    uniform on ``[-1, 1] / 8`` (``torch.nn.Linear``'s bound for 64 inputs), each copy from its
    own seed. The interface of `BatchedMLP` that `adam_step_sets()` uses."""

    def __init__(
        self,
        task: str,
        B: int,
        seeds,
        n_samples: int = 64,
        dtype=torch.float64,
        data_seed: int = 0,
        hidden: int | None = None,
        device: str = "cpu",
    ):
        if task not in TIED_TASKS:
            raise InputError(f"task={task!r} is not allowed; choose one of {list(TIED_TASKS)}")
        if hidden is None:
            raise InputError("hidden=None is not allowed; give the autoencoder's rank")
        self.task = task
        self.power = TIED_POWER[task]
        k, n = int(hidden), int(n_samples)
        self.X = lowrank_digits(n, k, dtype).to(device)
        params = []
        for s in np.broadcast_to(np.asarray(seeds), (B,)):
            g = torch.Generator().manual_seed(int(s))
            params.append((torch.rand(64, k, generator=g, dtype=dtype) * 2 - 1) / 8)
        self.params = [torch.stack(params).to(device).requires_grad_(True)]

    def losses(self, params=None) -> torch.Tensor:
        """Per-copy full-batch loss, shape ``(B,)``."""
        (W,) = self.params if params is None else params
        r = torch.matmul(torch.matmul(self.X, W), W.transpose(1, 2)) - self.X
        return (r**self.power).sum(-1).mean(-1) / self.power

    def losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient with respect to ``W``, written out:
        with ``H = X W``, ``R = H W^T - X`` and ``G = R^(p - 1)`` (elementwise),
        ``dW = (X^T G W + G^T H) / n`` (tests: against autograd on `losses()`). Each copy's
        arithmetic is its own (batched products)."""
        (W,) = (p.detach() for p in params)
        n = self.X.shape[-2]
        H = torch.matmul(self.X, W)  # (B, n, k)
        r = torch.matmul(H, W.transpose(1, 2)) - self.X  # (B, n, 64)
        G = r if self.power == 2 else r ** (self.power - 1)
        L = (G * r).sum(-1).mean(-1) / self.power
        dW = torch.matmul(self.X.T, torch.matmul(G, W)) + torch.matmul(G.transpose(1, 2), H)
        return L, [dW / n]


SMOOTHED_TASKS = {"digits_ls3": 1e-3, "digits_ls2": 1e-2}
"""The label-smoothed digits tasks and their smoothing ``delta`` (`SmoothedDigitsMLP`)."""


def smoothed_kl(logits: torch.Tensor, y: torch.Tensor, delta: float) -> torch.Tensor:
    """Mean over the last-but-one axis of ``logits`` ``(..., n, k)`` of ``KL(q || softmax(z))``,
    ``q`` the labels ``y`` ``(n,)`` smoothed: ``1 - delta`` on the label, ``delta / (k - 1)`` on
    each other class. It is the label-smoothed cross-entropy less its minimum (the entropy of
    ``q``), so it reaches 0 exactly where every image's softmax equals ``q``, with every logit
    finite and the gradient ``p - q`` zero. Each image's value is written as ``sum_j q_j
    (expm1(u_j) - u_j)``, ``u_j = log p_j - log q_j`` (equal to ``sum_j q_j (-u_j)`` because
    ``sum_j p_j = sum_j q_j = 1``): every term is non-negative, so the sum has no cancellation
    and falls with ``|u|^2`` to about ``1e-30`` (the error of ``u``, about ``1e-16 |z|``, squared)
    instead of stopping at the float's resolution of the entropy (tests: against an mpmath
    reference, and its gradient against ``p - q``)."""
    k = logits.shape[-1]
    if not (0.0 < delta < (k - 1) / k):
        raise InputError(f"delta={delta!r} is not allowed; give 0 < delta < {(k - 1) / k:g}")
    own = torch.nn.functional.one_hot(y, k).to(logits.dtype)
    logq = own * math.log1p(-delta) + (1 - own) * math.log(delta / (k - 1))
    return soft_kl(logits, logq)


def soft_kl(logits: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """Mean over the last-but-one axis of ``KL(q || softmax(logits))`` for target
    log-probabilities ``logq`` (broadcast against ``logits`` ``(..., n, k)``), each row's
    value as ``sum_j q_j (expm1(u_j) - u_j)``, ``u = log_softmax(logits) - logq``: non-negative
    terms, accurate near the exact minimum (`smoothed_kl()`)."""
    u = torch.log_softmax(logits, dim=-1) - logq
    return (logq.exp() * (torch.expm1(u) - u)).sum(-1).mean(-1)


class SmoothedDigitsMLP(BatchedMLP):
    """``digits_ce``'s network and data (`BatchedMLP`) under a label-smoothed cross-entropy,
    read as its excess over its minimum (`smoothed_kl()`, smoothing ``SMOOTHED_TASKS[task]``):
    a confident fit with a finite minimiser where the loss and its gradient vanish, which
    Adam approaches as it approaches the teacher tasks' exact minima. Along a logit margin the
    loss is ``delta (e^|x| - 1 - |x|)``-like about the minimiser up to ``|x| ~ log(1 /
    delta)`` and then a wall (the label's probability leaving 1 - delta): a quadratic core
    of width about one logit and an exponential wall. Gradients by autograd on `losses()`."""

    def __init__(self, task: str, B: int, seeds, n_samples: int = 64, dtype=torch.float64,
                 data_seed: int = 0, hidden: int | None = None, device: str = "cpu"):  # fmt: skip
        if task not in SMOOTHED_TASKS:
            raise InputError(f"task={task!r} is not allowed; choose one of {list(SMOOTHED_TASKS)}")
        super().__init__("digits_ce", B, seeds, n_samples, dtype, data_seed, hidden, device)
        self.task = task
        self.delta = SMOOTHED_TASKS[task]

    def losses(self, params=None) -> torch.Tensor:
        """Per-copy full-batch `smoothed_kl()`, shape ``(B,)``."""
        W1, b1, W2, b2 = self.params if params is None else params
        return smoothed_kl(torch.relu(self.X @ W1 + b1) @ W2 + b2, self.y, self.delta)

    def losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient of its own loss (autograd)."""
        return self._autograd_losses_and_grads(params)


TEACHER_KL_TASKS = ("teacher_kl",)
"""The distillation task of a realizable ReLU teacher's softmax (`TeacherKLMLP`)."""
TEACHER_KL_WIDTH = 4
"""Hidden width of `TeacherKLMLP`'s teacher (20-4-10, ReLU, no biases)."""
TEACHER_KL_MARGIN = 9.0
"""Median over the inputs of the teacher's margin (its largest logit less the second): about
``digits_ls3``'s label margin, ``log(0.999 * 9 / 0.001)``."""


def teacher_soft_targets(n_samples: int, seed: int, dtype=torch.float64):
    """``(X, logq, teacher)``: ``n_samples`` standard Gaussian inputs in 20 dimensions and the
    log-softmax of a ReLU teacher's logits ``relu(X V1^T) V2``, ``V1`` ``(4, 20)`` with unit rows
    and ``V2`` ``(4, 10)`` standard Gaussian (drawn from ``seed``), ``V2`` scaled so that the
    median margin over the inputs is `TEACHER_KL_MARGIN`; ``teacher`` is ``[W1, b1, W2, b2]``
    of one 20-4-10 MLP computing those logits exactly (``V1^T``, zero, scaled ``V2``, zero)."""
    n = int(n_samples)
    if n < 2:
        raise InputError(f"n_samples={n_samples!r} is not allowed; give at least 2 inputs")
    g = torch.Generator().manual_seed(int(seed))
    V1 = torch.randn(TEACHER_KL_WIDTH, 20, generator=g, dtype=dtype)
    V1 = V1 / V1.norm(dim=1, keepdim=True)
    X = torch.randn(n, 20, generator=g, dtype=dtype)
    V2 = torch.randn(TEACHER_KL_WIDTH, 10, generator=g, dtype=dtype)
    raw = torch.relu(X @ V1.T) @ V2
    top = raw.topk(2, dim=-1).values
    V2 = V2 * (TEACHER_KL_MARGIN / float((top[:, 0] - top[:, 1]).median()))
    teacher = [V1.T.clone(), torch.zeros(1, TEACHER_KL_WIDTH, dtype=dtype), V2,
               torch.zeros(1, 10, dtype=dtype)]  # fmt: skip
    return X, torch.log_softmax(torch.relu(X @ V1.T) @ V2, dim=-1), teacher


class TeacherKLMLP(BatchedMLP):
    """``teacher_kl``: ``B`` students 20-``hidden``-10 (ReLU, `mlp_params()`) trained on the
    cross-entropy to a ReLU teacher's softmax (`teacher_soft_targets()`, the data and teacher
    from ``data_seed``), read as its excess over its minimum, `soft_kl()`: confident targets
    (median margin `TEACHER_KL_MARGIN`) that a student of width at least `TEACHER_KL_WIDTH`
    fits exactly, with finite logits, loss 0 and zero gradient there, and with fewer
    parameters than constraints (a realizable fit, as the teacher tasks' students). Gradients
    by autograd on `losses()`."""

    def __init__(self, task: str, B: int, seeds, n_samples: int = 256, dtype=torch.float64,
                 data_seed: int = 0, hidden: int | None = None, device: str = "cpu"):  # fmt: skip
        if task not in TEACHER_KL_TASKS:
            raise InputError(
                f"task={task!r} is not allowed; choose one of {list(TEACHER_KL_TASKS)}"
            )
        h = 8 if hidden is None else int(hidden)
        self.task = task
        X, logq, _ = teacher_soft_targets(n_samples, data_seed, dtype)
        self.X, self.logq = X.to(device), logq.to(device)
        self.params = mlp_params(B, seeds, (20, h, 10), dtype, device)

    def losses(self, params=None) -> torch.Tensor:
        """Per-copy full-batch `soft_kl()`, shape ``(B,)``."""
        W1, b1, W2, b2 = self.params if params is None else params
        return soft_kl(torch.relu(self.X @ W1 + b1) @ W2 + b2, self.logq)

    def losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient of its own loss (autograd)."""
        return self._autograd_losses_and_grads(params)


MEMORISATION_TASKS = ("gauss_memo",)
"""The second network family's memorisation task (`GaussianMemorisationMLP`): one output,
isotropic Gaussian inputs, targets no network generated."""
MEMORISATION_DIM = 20
"""Input dimension of `memorisation_data()` (the teacher tasks' ``D``)."""


def memorisation_data(n_samples: int, seed: int, dtype=torch.float64):
    """``(X, y)`` of the memorisation task: ``n_samples`` inputs i.i.d. standard normal in
    `MEMORISATION_DIM` dimensions, shape ``(n, 20)``, and one target per input i.i.d. standard
    normal, shape ``(n, 1)``, drawn independently of the inputs (random labels: no teacher,
    no function of ``X``), both from one generator seeded ``seed`` (inputs first, as the
    teacher tasks draw theirs)."""
    n = int(n_samples)
    if n < 1:
        raise InputError(f"n_samples={n_samples!r} is not allowed; give at least 1 input")
    g = torch.Generator().manual_seed(int(seed))
    X = torch.randn(n, MEMORISATION_DIM, generator=g, dtype=dtype)
    return X, torch.randn(n, 1, generator=g, dtype=dtype)


class _TeacherStudentOnOtherData(BatchedMLP):
    """The teacher tasks' student (`BatchedMLP` of ``teacher_mse``: 20-``hidden``-1 ReLU, its
    initialisation per seed) on other data: a subclass names its tasks (`ALLOWED`) and draws
    its inputs and targets (`other_data()`)."""

    ALLOWED: tuple[str, ...] | dict[str, float] = ()

    def __init__(self, task: str, B: int, seeds, n_samples: int = 64, dtype=torch.float64,
                 data_seed: int = 0, hidden: int | None = None, device: str = "cpu"):  # fmt: skip
        if task not in self.ALLOWED:
            raise InputError(f"task={task!r} is not allowed; choose one of {list(self.ALLOWED)}")
        if hidden is None:
            raise InputError("hidden=None is not allowed; give the student's width")
        # the teacher task's student shapes (20, hidden, 1) and initialisation; its data replaced
        super().__init__("teacher_mse", B, seeds, 1, dtype, data_seed, hidden, device)
        self.task = task
        X, y = self.other_data(task, n_samples, data_seed, dtype)
        self.X, self.y = X.to(device), y.to(device)

    def other_data(self, task: str, n_samples: int, data_seed: int, dtype):
        """Inputs ``(n, 20)`` and targets of ``task``."""
        raise NotImplementedError


class GaussianMemorisationMLP(_TeacherStudentOnOtherData):
    """``gauss_memo``: the teacher tasks' student (`BatchedMLP`, 20-``hidden``-1 ReLU, half the
    mean squared error, the same initialisation per seed and the same hand-written gradient,
    `mse_losses_and_grads()`) fitted to `memorisation_data()` (drawn from ``data_seed``, as the
    teacher's data are) instead of a teacher's outputs: targets no network generated, which a
    student with more parameters than inputs (width 8: 177 for 64 or 128 inputs) can
    interpolate, so its loss has exact zero-loss minima, as the teacher tasks' has."""

    ALLOWED = MEMORISATION_TASKS

    def other_data(self, task, n_samples, data_seed, dtype):
        return memorisation_data(n_samples, data_seed, dtype)


DIGITS_MEMO_TASKS = ("digits_pc_memo",)
"""The memorisation task on real inputs (`DigitsMemorisationMLP`)."""


def digit_components(n_samples: int, dtype=torch.float64) -> torch.Tensor:
    """The first ``n_samples`` digits images (`gaugedyn.training.load_digits()`), centred over
    those images, projected on their top `MEMORISATION_DIM` principal components and whitened:
    with the centred images ``X = U S V^T`` (thin SVD), ``sqrt(n) U[:, :20]``, shape ``(n,
    20)``, whose Gram matrix over the images is ``n`` times the identity (every component of
    unit variance over the images): real inputs as well conditioned as isotropic Gaussians."""
    n, k = int(n_samples), MEMORISATION_DIM
    X, _ = load_digits()
    if not k < n <= len(X):
        raise InputError(f"n_samples={n_samples!r} is not allowed; give {k} < n <= {len(X)}")
    Xc = X[:n] - X[:n].mean(0)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    if s[k - 1] <= 1e-8 * s[0]:
        raise InputError(
            f"n_samples={n_samples!r} is not allowed: the images span fewer than {k} directions"
        )
    return torch.as_tensor(math.sqrt(n) * U[:, :k], dtype=dtype)


class DigitsMemorisationMLP(_TeacherStudentOnOtherData):
    """``digits_pc_memo``: `GaussianMemorisationMLP` with its inputs replaced by real ones, the
    digits' top principal components whitened (`digit_components()`): the same student and
    initialisation, and the same targets (`memorisation_data()`'s, drawn from ``data_seed``),
    i.i.d. standard normal, one per image."""

    ALLOWED = DIGITS_MEMO_TASKS

    def other_data(self, task, n_samples, data_seed, dtype):
        _, y = memorisation_data(n_samples, data_seed, dtype)
        return digit_components(n_samples, dtype), y


GAUSS_SMOOTHED_TASKS = {"gauss_ls3": 1e-3}
"""The binary label-smoothed memorisation tasks and their smoothing ``delta``
(`GaussianSmoothedMLP`)."""


class GaussianSmoothedMLP(_TeacherStudentOnOtherData):
    """``gauss_ls3``: `GaussianMemorisationMLP`'s students (20-``hidden``-1 ReLU, the teacher
    tasks' initialisation) and inputs under a confident binary cross-entropy with an exact
    minimum: each input's label is the sign of its `memorisation_data()` target (random labels,
    no function of the inputs), smoothed to ``1 - delta`` (``GAUSS_SMOOTHED_TASKS[task]``), the
    output ``z`` the logit of class 1 against class 0; read as its excess over its minimum,
    `smoothed_kl()` of the logits ``(0, z)``, which is 0 exactly where every margin is
    ``log((1 - delta) / delta)`` (6.9 at ``1e-3``), with zero gradient. A student with more
    parameters than inputs (177 for 64 at width 8) can interpolate those margins, as
    ``gauss_memo``'s interpolates its targets. Gradients by autograd on `losses()`."""

    ALLOWED = GAUSS_SMOOTHED_TASKS

    def other_data(self, task, n_samples, data_seed, dtype):
        self.delta = GAUSS_SMOOTHED_TASKS[task]
        X, y = memorisation_data(n_samples, data_seed, dtype)
        return X, (y[:, 0] > 0).long()

    def losses(self, params=None) -> torch.Tensor:
        """Per-copy full-batch `smoothed_kl()` of the logits ``(0, z)``, shape ``(B,)``."""
        W1, b1, W2, b2 = self.params if params is None else params
        z = torch.relu(self.X @ W1 + b1) @ W2 + b2
        return smoothed_kl(torch.cat([torch.zeros_like(z), z], dim=-1), self.y, self.delta)

    def losses_and_grads(self, params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Per-copy loss ``(B,)`` and each copy's gradient of its own loss (autograd)."""
        return self._autograd_losses_and_grads(params)


def task_model(task: str, *args, **kwargs):
    """The batched model of ``task``: `WhitenedDigitsMLP` for `WHITENED_TASKS`,
    `DigitsFactorisation` for `FACTORISATION_TASKS`, `DigitsTiedAutoencoder` for
    `TIED_TASKS`, `SmoothedDigitsMLP` for `SMOOTHED_TASKS`, `TeacherKLMLP` for
    `TEACHER_KL_TASKS`, `GaussianMemorisationMLP` for `MEMORISATION_TASKS`,
    `DigitsMemorisationMLP` for `DIGITS_MEMO_TASKS`, `GaussianSmoothedMLP` for
    `GAUSS_SMOOTHED_TASKS`, else `BatchedMLP` (same arguments)."""
    if task in WHITENED_TASKS:
        return WhitenedDigitsMLP(task, *args, **kwargs)
    if task in FACTORISATION_TASKS:
        return DigitsFactorisation(task, *args, **kwargs)
    if task in TIED_TASKS:
        return DigitsTiedAutoencoder(task, *args, **kwargs)
    if task in SMOOTHED_TASKS:
        return SmoothedDigitsMLP(task, *args, **kwargs)
    if task in TEACHER_KL_TASKS:
        return TeacherKLMLP(task, *args, **kwargs)
    if task in GAUSS_SMOOTHED_TASKS:
        return GaussianSmoothedMLP(task, *args, **kwargs)
    if task in MEMORISATION_TASKS:
        return GaussianMemorisationMLP(task, *args, **kwargs)
    if task in DIGITS_MEMO_TASKS:
        return DigitsMemorisationMLP(task, *args, **kwargs)
    return BatchedMLP(task, *args, **kwargs)
