r"""Batched two-layer networks with explicit parameters ``a`` and ``W``.

``S`` independent students ``f_s(x) = sum_i a_si g(w_si . x)`` with ``a (S, K)``, ``W (S, K, D)``
share one teacher $f^*(x) = \sum_n b_n\, g(v_n \cdot x)$. Every contraction goes through
`seedwise_mm()`, so the arithmetic for one seed is the same whether it is trained alone or
with others, at any thread count shared by the two runs.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from .._errors import InputError
from ..theory import Activation, Problem
from ._activations import activation as _activation

DTYPES = {"float32": torch.float32, "float64": torch.float64}

SMALL_BATCH = 8
"""Batches of at most this many samples contract elementwise; larger ones are zero-padded to a
multiple of 8 samples and use `seedwise_mm()`. Both choices depend only on a seed's own shapes:
with them, every per-seed result is independent of the number of seeds and of the seed's slot
(BLAS kernels otherwise change with alignment and batch count)."""


def rsum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last axis in a fixed order: zero-pad to a multiple of 8, sum 8 strided parts.

    The split keeps every reduction's output larger than one element, so torch never switches
    to a thread-split (batch-dependent) two-pass reduction.
    """
    n = x.shape[-1]
    pad = (-n) % 8
    if pad:
        x = torch.nn.functional.pad(x, (0, pad))
    return x.reshape(*x.shape[:-1], 8, (n + pad) // 8).sum(-1).sum(-1)


def _aligned(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when its data start on a 64-byte boundary, else an aligned copy (BLAS
    kernels may pick their code path by alignment; a fresh CPU tensor is 64-byte aligned)."""
    return t if t.data_ptr() % 64 == 0 else t.clone()


SEEDWISE_MIN = 2**22
"""Per-seed products of at least this many multiply-adds (``m k p``) run as one threaded BLAS
call per seed; smaller ones as one single-threaded batched call (see `seedwise_mm()`)."""

_ONE_THREAD = threading.Lock()


@contextlib.contextmanager
def _one_thread():
    """torch (and its BLAS) on one thread for the duration; a lock keeps concurrent callers
    from restoring each other's settings wrongly."""
    if torch.get_num_threads() == 1:  # the usual case in sweeps: no lock, no change
        yield
        return
    with _ONE_THREAD:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def seedwise_mm(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``C[s] = A[s] @ B[s]``: ``(S, m, k), (S, k, p) -> (S, m, p)``, each seed's product the
    same arithmetic whatever the batch.

    A batched product (``torch.bmm``) on several threads lets the BLAS choose its threading and
    kernels from the batch count: MKL hands whole products of a batch to threads but splits a
    lone product, or picks another kernel, so seed ``s`` of a batch of 3 and the same seed alone
    can differ in the last bit. So on CPU a small product (under `SEEDWISE_MIN`
    multiply-adds per seed) runs as ``torch.bmm`` on one thread, which is a sequence of
    single-threaded per-seed products (the same bits at any thread count, and one call instead
    of ``S``); a large one runs as one threaded ``torch.mm`` per seed on 64-byte-aligned
    operands, the same call for a seed in any batch (its bits may change with the thread
    count). Other devices keep ``torch.bmm`` (the bitwise promise is made on CPU only).
    """
    if A.device.type != "cpu":
        return torch.bmm(A, B)
    if A.shape[1] * A.shape[2] * B.shape[2] < SEEDWISE_MIN or torch.get_num_threads() == 1:
        with _one_thread():
            return torch.bmm(A, B)
    return torch.stack([torch.mm(_aligned(a), _aligned(b)) for a, b in zip(A, B, strict=True)])


class Batch(NamedTuple):
    r"""Inputs ``X (S, n', D)``, their transpose ``XT (S, D, n')``, targets ``y (S, n')`` and the
    true sample count ``n`` ($n' \ge n$ adds zero samples; their errors are set to exactly 0,
    so they contribute nothing even where $g(0) \ne 0$)."""

    X: torch.Tensor
    XT: torch.Tensor | None
    y: torch.Tensor | None
    n: int


def prepare(X: torch.Tensor, y: torch.Tensor | None = None) -> Batch:
    """Pad a batch of ``n > SMALL_BATCH`` samples to a multiple of 8 and transpose it."""
    n = X.shape[1]
    if n <= SMALL_BATCH:
        return Batch(X, None, y, n)
    pad = (-n) % 8
    if pad:
        X = torch.nn.functional.pad(X, (0, 0, 0, pad))
        y = None if y is None else torch.nn.functional.pad(y, (0, pad))
    return Batch(X, X.transpose(1, 2).contiguous(), y, n)


def project(W: torch.Tensor, batch: Batch) -> torch.Tensor:
    r"""Preactivations $Z = W X^\top$: ``(S, K, D), (S, n, D) -> (S, K, n)``."""
    if batch.XT is None:
        return rsum(W[:, :, None, :] * batch.X[:, None, :, :])
    return seedwise_mm(W, batch.XT)


def back_project(back: torch.Tensor, batch: Batch) -> torch.Tensor:
    """``back X``: ``(S, K, n), (S, n, D) -> (S, K, D)``."""
    if batch.XT is None:
        return (back[:, :, :, None] * batch.X[:, None, :, :]).sum(2)
    return seedwise_mm(back, batch.X)


def resolve_dtype(dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if dtype in DTYPES:
        return DTYPES[dtype]
    raise InputError(f"dtype={dtype!r} is not allowed; allowed: {', '.join(DTYPES)}")


def resolve_device(device=None) -> torch.device:
    """``device`` or, when ``None``, ``cuda`` if available else ``cpu``.

    Parameters
    ----------
    device : str or torch.device or None
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"`` (or a ``torch.device``); ``None`` picks
        ``cuda`` when available, else ``cpu``.

    Returns
    -------
    torch.device
        The device.

    Raises
    ------
    InputError
        When ``device`` is not a torch device, is ``cuda`` without CUDA, or is of another type
        than ``cpu``, ``cuda`` or ``mps``.
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise InputError(
            f"device={device!r} is not a torch device; use cpu, cuda or cuda:N"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device={device!r} requested but CUDA is not available; use cpu")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise InputError(f"device={device!r} is not supported; use cpu or cuda")
    return dev


@dataclass
class Network:
    """Students ``a (S, K)``, ``W (S, K, D)`` and teacher ``b (M,)``, ``V (M, D)``; the teacher
    uses ``teacher_activation`` when it is set, else the students' ``activation``."""

    a: torch.Tensor
    W: torch.Tensor
    b: torch.Tensor
    V: torch.Tensor
    activation: str | Activation
    teacher_activation: str | Activation | None = None

    @classmethod
    def from_problem(
        cls, problem: Problem | Sequence[Problem], seeds: int = 1, dtype="float64", device=None
    ) -> Network:
        """``seeds`` copies of the problem's student (or one student per problem in a list).

        All problems in a list must share the teacher and activation; each student starts from
        its own problem's ``(a, W)``, i.e. the same initial function and gauge per neuron.
        """
        dtype, device = resolve_dtype(dtype), resolve_device(device)
        problems = [problem] * int(seeds) if isinstance(problem, Problem) else list(problem)
        if not problems:
            raise InputError("at least one seed (problem) is needed")
        first = problems[0]
        for p in problems[1:]:
            if (
                p.activation != first.activation
                or p.W.shape != first.W.shape
                or p.teacher_activation != first.teacher_activation
                or not np.array_equal(p.b, first.b)
                or not np.array_equal(p.V, first.V)
            ):
                raise InputError("per-seed problems must share shapes, teacher and activation")
        kw = {"dtype": dtype, "device": device}
        a = torch.as_tensor(np.stack([p.a for p in problems]), **kw)
        W = torch.as_tensor(np.stack([p.W for p in problems]), **kw)
        return cls(
            a=a,
            W=W,
            b=torch.as_tensor(first.b, **kw),
            V=torch.as_tensor(first.V, **kw),
            activation=first.activation,
            teacher_activation=first.teacher_activation,
        )

    @property
    def seeds(self) -> int:
        return self.W.shape[0]

    @property
    def dim(self) -> int:
        return self.W.shape[2]

    def teacher(self, batch: Batch) -> torch.Tensor:
        """``f*(x)`` for a prepared batch; returns ``(S, n')``."""
        g, _ = _activation(
            self.activation if self.teacher_activation is None else self.teacher_activation
        )
        V = self.V.unsqueeze(0).expand(batch.X.shape[0], -1, -1).contiguous()
        return (g(project(V, batch)) * self.b[None, :, None]).sum(1)

    def forward(self, batch: Batch) -> torch.Tensor:
        """``f(x)`` for a prepared batch; returns ``(S, n')``."""
        g, _ = _activation(self.activation)
        return (g(project(self.W, batch)) * self.a[:, :, None]).sum(1)

    def loss_and_gradients(self, batch: Batch):
        r"""Empirical loss $L_n = \frac{1}{2n} \sum_\mu e_\mu^2$, ``e = f(x) - y``, and its gradients.

        $\partial L_n/\partial a_i = \frac1n \sum_\mu e_\mu\, g(z_{i\mu})$,
        $\nabla_{w_i} L_n = \frac1n \sum_\mu e_\mu\, a_i\, g'(z_{i\mu})\, x_\mu$, $z = W X^\top$.
        Returns per-seed ``(loss (S,), g_a (S, K), g_W (S, K, D))``.
        """
        g, gp = _activation(self.activation)
        n = batch.n
        Z = project(self.W, batch)
        G = g(Z)
        e = (G * self.a[:, :, None]).sum(1) - batch.y
        if e.shape[-1] > n:  # padded samples (zero already when g(0) = 0)
            e[..., n:] = 0.0
        loss = 0.5 * rsum(e * e) / n
        g_a = rsum(G * e[:, None, :]) / n
        back = (gp(Z) * e[:, None, :]) * self.a[:, :, None]
        return loss, g_a, back_project(back, batch) / n

    def numpy_state(self) -> tuple[np.ndarray, np.ndarray]:
        """``(a, W)`` as float64 numpy arrays on the host."""
        return (
            self.a.detach().to("cpu", torch.float64).numpy(),
            self.W.detach().to("cpu", torch.float64).numpy(),
        )
