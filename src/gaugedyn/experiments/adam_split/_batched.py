"""Every cell and seed of one beta-grid task trained as one program (issue 33).

``B`` copies of one task of `gaugedyn.experiments.adam_split.tasks`, copy ``c`` with its
own ``(beta1_c, beta2_c)`` and integer seed ``s_c``. Each copy is the task's own model and
minibatch stream built exactly as `train_task()`
builds them for seed ``s_c`` (same initialisation, same batches); its parameters and gradients
are views into one ``(B, P)`` buffer each, so one step is

1. the forward and backward pass of every live copy, on one of two paths (``forward``):
   ``"stacked"``, one pass over all copies (``STACKED`` of ``_stacked.py``: batched matrix
   products, gathered embeddings, grouped convolutions), the loss the
   sum over live copies of each copy's own mean minibatch loss, its gradient taken per
   parameter; or ``"loop"``, the model's own code one copy at a time, gradients accumulated
   into the buffer (the path that is bitwise ``torch.optim.Adam``; the stacked one equals it
   to round-off, tested in float64 and float32); ``benchmarks/bench_beta_grid.py`` measures
   both;
2. for all copies at once, per parameter and block of copies: ``torch.optim.Adam``'s
   single-tensor update with per-copy betas (`gaugedyn.adam.batched_adam_step()`,
   ``op_order="torch"``), op for op (``m.lerp_(g, 1-b1)``,
   ``v.mul_(b2).addcmul_(g, g, 1-b2)``, ``denom = sqrt(v)/sqrt(1-b2^t) + eps``,
   ``p += (-lr/(1-b1^t)) m / denom``, the per-copy scalars cast to the working dtype as PyTorch
   casts its Python scalars), so that on the CPU a copy's trajectory is bitwise the one
   ``torch.optim.Adam`` gives it alone (tested);
3. the streaming split sums `gaugedyn.adam.READING_SUMS` of every copy, in the working
   dtype (each block's sums by torch's cascade sum, error ``O(eps log n)`` of the summed
   magnitudes, the blocks added in float64), from ``m^ = m/(1-b1^t)``, ``w^ = w/(1-b2^t)`` (``w_t`` the
   first moment with the second moment's memory, ``w = lerp(w, g, 1-b2)``; bitwise ``m`` when
   ``b1 == b2``, so the lag is exactly zero there), ``s = sqrt(v)/sqrt(1-b2^t)``,
   ``u = m^/(s + eps)``, ``lag = (m^ - w^)/(s + eps)``, the sign parts ``sign(g)`` (current
   reading) and ``sign(w^)`` where ``v > 0`` (memory reading), the residuals
   ``u - sign - lag`` of each reading;
4. on the declared **reference copies** only, the float64 reference split
   (`gaugedyn.adam.StreamingSplit`, i.e. `gaugedyn.adam.split_update()`) of the
   copy's whole state, and the checks it supports: the streaming sums' norms against the
   reference's (relative to the reference ``|u|``), the five parts summing to the update, the
   lag's largest ``|.|``, and the update being the applied float32 step.

A copy whose minibatch loss is not finite stops there (its later rows are nan, its final loss
is nan), as in ``train_task``. Rows are independent: a copy's numbers do not depend on the
other copies of its batch (tested against the same copy in a batch of one: bitwise on the loop
path, to round-off on the stacked one).
Device-agnostic (``device``): the buffers live on the device; the reference's float32 checks
run on the CPU.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..._errors import InputError
from ...adam import (
    OP_ORDER_FACTORS,
    READING_SUMS,
    AdamFactors,
    StreamingSplit,
    adam_factors,
    batched_adam_step,
    reading_sums,
)
from ._protocol import MATMUL
from ._stacked import STACKED
from .tasks import TASKS, _seed_int, _setup

BLOCK = 1 << 16
"""Elements per block of the batched update and sums (a cache-sized block of copies of one
parameter)."""
_F32 = 2.0**-24
_FACTORS = (*OP_ORDER_FACTORS["torch"], "bias1", "bias2")
"""The per-copy factors a block reads: the update's and the split's bias corrections."""
_NORMS = tuple(i for i, k in enumerate(READING_SUMS) if not k.startswith(("dot", "count")))


def _build(task: str, seed: int, dtype, device):
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # layer initialisers draw from the global generator
        model, batch, loss_fn, evaluate = _setup(task, gen, dtype, device)
    return model.to(device=device, dtype=dtype), gen, batch, loss_fn, evaluate


def _blocks(sizes: list[int], B: int) -> list[tuple[slice, slice, int]]:
    """The ``(rows, columns, parameter index)`` blocks of a ``(B, P)`` buffer: per parameter
    (its columns, so every operation sees a parameter's elements as ``torch.optim.Adam`` does),
    copies in groups of at most ``BLOCK`` elements."""
    out, o = [], 0
    for j, n in enumerate(sizes):
        rows = max(1, BLOCK // max(n, 1))
        out += [(slice(r, min(r + rows, B)), slice(o, o + n), j) for r in range(0, B, rows)]
        o += n
    return out


def train_copies(
    task: str,
    copies,
    steps: int,
    lr: float,
    *,
    reference=(),
    eps: float = 1e-8,
    device: str = "cpu",
    dtype=torch.float32,
    threads: int | None = 1,
    forward: str | None = None,
    matmul: str = "float32",
) -> dict:
    """Train ``copies = [(beta1, beta2, seed), ...]`` of ``task`` as one program (module
    docstring); ``reference``: indices of the copies also split by the float64 reference.

    Returns numpy arrays: ``loss (B, T)`` (minibatch), ``sums (B, T, len(READING_SUMS))``
    (streaming), ``final_loss``, ``initial_loss`` (evaluation), ``nonfinite_step`` (``-1`` if
    none) per copy, ``n_params``; for the reference copies (in the order of ``reference``):
    ``reference_index``, ``reference (R, T, len(READING_SUMS))`` (float64 sums),
    ``reference_error`` (largest ``|norm streaming - norm reference| / |u|`` and
    ``|dot streaming - dot reference| / (|u| |sign|)`` over steps), ``sum_error`` (largest
    ``|sum of parts - u| / max(1, sum_k |p_k|)``), ``lag_abs_max`` and ``applied_ratio``
    (largest ``|p_t - p_{t-1} + lr u_t|`` over the bound ``ulp(p) + 16 2^-24 lr |u|``), each
    over every coordinate and step; ``forward``, the path of step 1 that ran. ``seed`` of a
    copy: an int or a ``SeedSequence``.

    ``forward``: ``"stacked"`` (one pass over every copy, `STACKED`; the default where
    the task has one) or ``"loop"`` (each copy's own module in turn; the default otherwise, and
    the path whose trajectories are bitwise ``torch.optim.Adam``'s).

    ``matmul``: the precision of the stacked pass (`_protocol.MATMUL`): ``"float32"``, or
    ``"bfloat16"``, the stacked forward pass under ``torch.autocast(dtype=torch.bfloat16)`` on
    the buffers' device (float32 buffers and the stacked path only), its outputs cast back to
    float32 before each copy's loss; the update, the sums and the reference are unchanged.
    """
    if task not in TASKS:
        raise InputError(f"task={task!r} is not allowed; choose one of {list(TASKS)}")
    forward = forward_of(task, forward)
    if matmul not in MATMUL:
        raise InputError(f"matmul={matmul!r} is not allowed; choose one of {list(MATMUL)}")
    if matmul != "float32" and (forward != "stacked" or dtype != torch.float32):
        raise InputError(
            f"matmul={matmul!r} is not allowed with forward={forward!r} and dtype={dtype}: "
            "the bfloat16 reading is of the stacked pass over float32 copies; allowed: "
            "matmul='float32', or forward='stacked' with dtype=torch.float32"
        )
    if int(steps) < 1:
        raise InputError(f"steps={steps!r} is not allowed; use an integer >= 1")
    copies = [(float(b1), float(b2), _seed_int(s)) for b1, b2, s in copies]
    if not copies:
        raise InputError("copies=[] is not allowed; give at least one (beta1, beta2, seed)")
    for b1, b2, _ in copies:
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise InputError(f"betas ({b1}, {b2}) are not allowed; each must lie in [0, 1)")
    reference = [int(i) for i in reference]
    bad = [i for i in reference if not 0 <= i < len(copies)]
    if bad:
        raise InputError(
            f"reference={bad} is not allowed; copy indices lie in [0, {len(copies) - 1}]"
        )
    args = (task, copies, int(steps), float(lr), reference, eps, device, dtype, forward, matmul)
    if threads is None:
        return _train(*args)
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        return _train(*args)
    finally:
        torch.set_num_threads(before)


FORWARDS = ("stacked", "loop")
"""The paths of step 1: one stacked pass over every copy, or each copy's own module in turn."""


def forward_of(task: str, forward: str | None = None) -> str:
    """The forward path of ``task``: ``forward`` checked, or the default (``"stacked"`` where
    `STACKED` has the task, else ``"loop"``)."""
    if forward is None:
        return "stacked" if task in STACKED else "loop"
    if forward not in FORWARDS:
        raise InputError(f"forward={forward!r} is not allowed; choose one of {list(FORWARDS)}")
    if forward == "stacked" and task not in STACKED:
        raise InputError(
            f"forward='stacked' is not allowed for task={task!r} (no stacked pass); "
            f"allowed: 'loop', or a task of {sorted(STACKED)}"
        )
    return forward


def copy_losses(task: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Each copy's minibatch loss ``(B,)`` from stacked outputs ``out (B, ...)`` and targets
    ``y (B, ...)``: the task's own loss (`tasks`) per copy,
    ``0.5 mean (out - y)^2`` (teacher_student) or the mean cross-entropy over every position."""
    B = out.shape[0]
    if task == "teacher_student":
        return 0.5 * (out - y).square().reshape(B, -1).mean(1)
    ce = torch.nn.functional.cross_entropy
    return ce(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none").view(B, -1).mean(1)


def _train(task, copies, steps, lr, reference, eps, device, dtype, forward, matmul):
    B = len(copies)
    built = [_build(task, s, dtype, device) for _, _, s in copies]
    models = [b[0] for b in built]
    params = [list(m.parameters()) for m in models]
    shapes = [p.shape for p in params[0]]
    sizes = [p.numel() for p in params[0]]
    P = sum(sizes)
    flat = torch.empty((B, P), dtype=dtype, device=device)
    grad = torch.zeros((B, P), dtype=dtype, device=device)
    with torch.no_grad():
        for c, ps in enumerate(params):
            o = 0
            for p, n in zip(ps, sizes):
                flat[c, o : o + n].copy_(p.reshape(-1))
                p.data = flat[c, o : o + n].view_as(p)
                if forward == "loop":
                    p.grad = grad[c, o : o + n].view_as(p)
                o += n
        initial = np.array([b[4](m) for b, m in zip(built, models)])
    if forward == "stacked":
        flat.requires_grad_(True)
    m, v, w = (torch.zeros_like(flat) for _ in range(3))
    betas = (np.array([c[0] for c in copies]), np.array([c[1] for c in copies]))
    blocks = _blocks(sizes, B)
    losses = np.full((B, steps), np.nan)
    sums = np.full((B, steps, len(READING_SUMS)), np.nan)
    stop = np.full(B, -1)
    ref = _Reference(copies, reference, steps, lr, eps)
    grads = [grad[:, cols] for _, cols, _ in _blocks(sizes, 1)]  # per parameter (B, n_j)
    for t in range(1, steps + 1):
        if forward == "loop":
            _loop_step(built, grad, losses, stop, t)
        else:
            grads = _stacked_step(task, built, flat, shapes, sizes, losses, stop, t, matmul)
        with torch.no_grad():
            before = ref.rows(flat)
            factors = adam_factors(t, lr=lr, betas=betas, op_order="torch", like=flat).shaped(
                flat, _FACTORS
            )
            step_sums = torch.zeros((B, len(READING_SUMS)), dtype=torch.float64, device=device)
            for rows, cols, j in blocks:
                _block(
                    flat[rows, cols],
                    grads[j][rows],
                    m[rows, cols],
                    v[rows, cols],
                    w[rows, cols],
                    factors.rows(rows, _FACTORS),
                    eps,
                    step_sums[rows],
                )
            sums[:, t - 1] = step_sums.cpu().numpy()
            ref.step(t, flat, grads, m, v, before, stop)
    sums[:, :, READING_SUMS.index("count")] = P
    final = np.full(B, np.nan)
    with torch.no_grad():
        for c, b in enumerate(built):
            if stop[c] >= 0:
                sums[c, stop[c] :] = np.nan
            else:
                final[c] = b[4](models[c])
    return {
        "loss": losses,
        "sums": sums,
        "final_loss": final,
        "initial_loss": initial,
        "nonfinite_step": stop,
        "n_params": P,
        "forward": forward,
        "matmul": matmul,
        **ref.result(stop, sums),
    }


STACK_BLOCK: dict[str, int] = {"char_transformer": 16, "char_gru": 16}
"""Copies per stacked pass of a task (absent: every copy in one pass). For the two text tasks
one pass over 160 copies measured slower than 16 at a time (``benchmarks/bench_stacked_text.py
--chunk``: the transformer 0.89x the per-copy loop at 160 at once, 1.14x in blocks of 16; the
GRU 2.2x against 3.0x): the activations of many copies fall out of cache and their fresh
allocations fault pages in every step. A copy's numbers do not depend on its block."""


def _loop_step(built, grad, losses, stop, t: int) -> None:
    """Step 1 by each live copy's own module: gradients accumulated into ``grad``'s rows."""
    grad.zero_()
    for c, (model, gen, batch, loss_fn, _) in enumerate(built):
        if stop[c] >= 0:
            continue
        x, y = batch(gen)
        loss = loss_fn(model(x), y)
        loss.backward()
        losses[c, t - 1] = float(loss.detach())
        if not math.isfinite(losses[c, t - 1]):
            stop[c] = t - 1  # no step taken from here on (train_task returns here)
            grad[c].zero_()


def stacked_losses(task: str, model0, block: list, x, y, matmul: str = "float32"):
    """Each copy's minibatch loss ``(B,)`` by one stacked pass (`STACKED`) of ``task`` over the
    stacked parameters ``block`` on inputs ``x`` and targets ``y``; ``matmul="bfloat16"``: the
    pass under ``torch.autocast`` to bfloat16 on the parameters' device, its outputs cast back
    to the parameters' dtype before the losses (`_protocol.MATMUL`)."""
    dtype = block[0].dtype
    with torch.autocast(block[0].device.type, torch.bfloat16, enabled=matmul == "bfloat16"):
        out = STACKED[task](model0, block)(x)
    return copy_losses(task, out.to(dtype), y)


def _stacked_step(task, built, flat, shapes, sizes, losses, stop, t: int, matmul: str) -> list:
    """Step 1 by one stacked pass (`STACKED`) over every copy: the gradients ``(B, n_j)``
    of the summed per-copy losses with respect to each parameter's columns of the flat buffer,
    rows of stopped copies zero. Every copy draws its own minibatch from its own generator, as
    in the loop. ``matmul="bfloat16"``: the stacked pass under autocast to bfloat16
    (`train_copies()`), its outputs back in the buffer's dtype before the losses."""
    B = flat.shape[0]
    live = np.flatnonzero(stop < 0)
    if not live.size:
        return [flat.new_zeros((B, n)) for n in sizes]
    draws = [built[c][2](built[c][1]) for c in live]
    x = torch.stack([d[0] for d in draws])
    y = torch.stack([d[1] for d in draws])
    if len(live) < B:  # stopped copies take no step; their rows see a live copy's batch
        pick = torch.as_tensor(np.searchsorted(live, np.arange(B)).clip(max=len(live) - 1))
        x, y = x[pick.to(x.device)], y[pick.to(y.device)]
    params = [p.view(B, *s) for p, s in zip(flat.split(sizes, dim=1), shapes)]
    n = STACK_BLOCK.get(task) or B
    values, parts = [], []
    for lo in range(0, B, n):  # one stacked pass per block of copies (STACK_BLOCK)
        block = [p[lo : lo + n] for p in params]
        loss = stacked_losses(task, built[0][0], block, x[lo : lo + n], y[lo : lo + n], matmul)
        values.append(loss.detach().cpu().numpy().astype(float))
        parts.append(torch.autograd.grad(loss.sum(), block))
    value = np.concatenate(values)
    losses[live, t - 1] = value[live]
    bad = live[~np.isfinite(value[live])]
    stop[bad] = t - 1  # no step taken from here on (train_task returns here)
    grads = [
        torch.cat([g[j] for g in parts]).reshape(B, -1)
        if len(parts) > 1
        else parts[0][j].reshape(B, -1)
        for j in range(len(params))
    ]
    dead = np.flatnonzero(stop >= 0)
    if dead.size:
        rows = torch.as_tensor(dead, device=flat.device)
        for g in grads:
            g[rows] = 0.0
    return grads


def _block(p, g, m, v, w, factors: AdamFactors, eps, out):
    """``torch.optim.Adam``'s single-tensor step on one block (rows: copies;
    `gaugedyn.adam.batched_adam_step()`, ``op_order="torch"``) and its streaming split sums
    added into ``out`` (rows, len(READING_SUMS)), float64."""
    d = batched_adam_step([p], [g], [m], [v], factors, eps=eps).denominators[0]
    w.lerp_(g, factors.one_minus_beta2)
    bc1, bc2 = factors.bias1, factors.bias2
    mh = m / bc1
    wh = w / bc2
    u = mh / d
    lag = (mh - wh) / d
    sg = torch.sign(g)
    sw = torch.sign(wh) * torch.sign(v)  # sign(w^) where v > 0 (v >= 0), else (-)0
    r = u - lag
    rc, rw = r - sg, r - sw

    def dot(x, y):  # the working dtype's cascade sum (error O(eps log n))
        return torch.linalg.vecdot(x, y, dim=1)

    parts = (
        dot(sg, sg),
        dot(sw, sw),
        dot(lag, lag),
        dot(rc, rc),
        dot(rw, rw),
        dot(u, u),
        dot(u, sg),
        dot(u, sw),
    )
    out[:, : len(parts)] += torch.stack(parts, dim=1).double()  # the blocks added in float64


class _Reference:
    """The float64 reference split of the declared copies and the checks it supports."""

    def __init__(self, copies, index, steps: int, lr: float, eps: float):
        self.index = list(index)
        self.lr, self.eps = lr, eps
        self.splits = [StreamingSplit(copies[i][0], copies[i][1], eps) for i in self.index]
        self.sums = np.full((len(self.index), steps, len(READING_SUMS)), np.nan)
        R = len(self.index)
        self.ref_err, self.sum_err = np.zeros(R), np.zeros(R)
        self.lag_max, self.applied = np.zeros(R), np.zeros(R)

    def rows(self, flat):
        return flat[self.index].double().cpu() if self.index else None

    def step(self, t: int, flat, grads, m, v, before, stop) -> None:
        if not self.index:
            return
        idx = self.index
        after = flat[idx].double().cpu()
        gg = torch.cat([g[idx] for g in grads], dim=1).double().cpu()
        mm, vv = (x[idx].double().cpu() for x in (m, v))
        for r, split in enumerate(self.splits):
            if stop[idx[r]] >= 0:
                continue
            parts = split.step(0, mm[r], vv[r], gg[r], t)
            self.sums[r, t - 1] = reading_sums(parts)
            u = parts.update
            size = sum(
                x.abs() for x in (parts.sign, parts.lag, parts.transition, parts.ratio, parts.eps)
            ).clamp(min=1.0)
            self.sum_err[r] = max(self.sum_err[r], float(((parts.total() - u).abs() / size).max()))
            self.lag_max[r] = max(self.lag_max[r], float(parts.lag.abs().max()))
            p0, p1 = before[r].numpy(), after[r].numpy()
            big = np.maximum(np.abs(p0), np.abs(p1)).astype(np.float32)
            un = u.numpy()
            bound = np.spacing(big).astype(float) + 16 * _F32 * self.lr * np.abs(un)
            self.applied[r] = max(
                self.applied[r], float(np.max(np.abs(p1 - p0 + self.lr * un) / bound))
            )

    def result(self, stop, sums) -> dict:
        """The reference arrays and checks (rows of steps not taken are nan)."""
        for r, i in enumerate(self.index):
            if stop[i] >= 0:
                self.sums[r, stop[i] :] = np.nan
        err = [reference_error(sums[i], self.sums[r]) for r, i in enumerate(self.index)]
        return {
            "reference_index": np.array(self.index, dtype=np.int64),
            "reference": self.sums,
            "reference_error": np.array(err, dtype=float),
            "sum_error": self.sum_err,
            "lag_abs_max": self.lag_max,
            "applied_ratio": self.applied,
        }


def reference_error(streaming: np.ndarray, reference: np.ndarray) -> float:
    """Largest error of the streaming sums against the reference's over the steps of one copy:
    ``|sqrt(a_k) - sqrt(r_k)| / |u|`` for every squared norm ``k`` of `READING_SUMS` and
    ``|a_k - r_k| / (|u| |sign|)`` for the two inner products (``|u|``, ``|sign|`` the
    reference's); steps not taken are left out."""
    a = np.asarray(streaming, dtype=float)
    r = np.asarray(reference, dtype=float)
    col = {k: i for i, k in enumerate(READING_SUMS)}
    u = np.sqrt(r[:, col["update"]])
    errs = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in _NORMS:
            errs.append(np.abs(np.sqrt(a[:, i]) - np.sqrt(r[:, i])) / u)
        for reading in ("current", "memory"):
            i, s = col[f"dot_update_sign_{reading}"], col[f"sign_{reading}"]
            errs.append(np.abs(a[:, i] - r[:, i]) / (u * np.sqrt(r[:, s])))
    e = np.concatenate(errs)
    e = e[np.isfinite(e)]
    return float(e.max()) if e.size else 0.0
