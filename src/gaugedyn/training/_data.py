"""Per-seed Gaussian data streams ``x ~ N(0, I_D)``.

Seed ``i`` of a run with root seed ``r`` draws from its own ``torch.Generator`` seeded from
``gaugedyn._meta.task_seed(r, i)``. Every draw is made per seed with a shape that depends only on
that seed's settings (``n``, batch, ``D``), never on the number of seeds, so a seed re-run alone
receives exactly the same samples.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._meta import integer_seed, task_seed
from ._network import SMALL_BATCH, Batch, prepare

_STREAM_BLOCK = 1 << 16


def generator_seed(root_seed: int, index: int) -> int:
    """The 63-bit torch seed of seed ``index`` under ``root_seed``."""
    return integer_seed(task_seed(int(root_seed), int(index)))


def generators(root_seed: int, indices: Sequence[int], device) -> list[torch.Generator]:
    out = []
    for i in indices:
        g = torch.Generator(device=device)
        g.manual_seed(generator_seed(root_seed, i))
        out.append(g)
    return out


def gaussian(gens: list[torch.Generator], shape: tuple[int, ...], dtype, device) -> torch.Tensor:
    """One standard Gaussian block of ``shape`` per seed, stacked: ``(S, *shape)`` (each drawn
    into its row of the result: the numbers of a fresh draw, without stacking copies)."""
    out = torch.empty((len(gens), *shape), dtype=dtype, device=device)
    for row, g in zip(out, gens, strict=True):
        torch.randn(shape, generator=g, dtype=dtype, device=device, out=row)
    return out


def permutations(gens: list[torch.Generator], n: int, device) -> torch.Tensor:
    """One random permutation of ``range(n)`` per seed: ``(S, n)``."""
    return torch.stack([torch.randperm(n, generator=g, device=device) for g in gens])


def stream_block_steps(batch: int, dim: int) -> int:
    """Steps per block of the online stream (a function of batch and ``D`` only)."""
    return max(1, min(1024, _STREAM_BLOCK // (batch * dim)))


class OnlineStream:
    """Fresh samples for online training: blocks of ``(steps, batch, D)`` drawn per seed."""

    def __init__(
        self, gens, batch: int, dim: int, dtype, device, teacher, label_noise: float = 0.0
    ):
        self.gens, self.batch, self.dim = gens, batch, dim
        self.label_noise = float(label_noise)
        self.dtype, self.device, self.teacher = dtype, device, teacher
        self.block = stream_block_steps(batch, dim)
        self._pos = self.block
        self._X: torch.Tensor | None = None
        self._XT: torch.Tensor | None = None
        self._y: torch.Tensor | None = None

    def next(self) -> Batch:
        """The prepared batch of the next step."""
        if self._pos == self.block:
            X = gaussian(self.gens, (self.block, self.batch, self.dim), self.dtype, self.device)
            S = X.shape[0]
            flat = X.reshape(S, self.block * self.batch, self.dim)
            y = self.teacher(prepare(flat))[:, : self.block * self.batch]
            y = y.reshape(S, self.block, self.batch)
            if self.label_noise:  # y = f*(x) + sigma xi, drawn after the block's inputs
                y = y + self.label_noise * gaussian(
                    self.gens, (self.block, self.batch), self.dtype, self.device
                )
            if self.batch > SMALL_BATCH:
                pad = (-self.batch) % 8
                if pad:  # (a zero pad would only copy the block)
                    X = torch.nn.functional.pad(X, (0, 0, 0, pad))
                    y = torch.nn.functional.pad(y, (0, pad))
                self._XT = X.transpose(2, 3).contiguous()
            self._X, self._y = X, y
            self._pos = 0
        k = self._pos
        self._pos += 1
        assert self._X is not None and self._y is not None
        XT = None if self._XT is None else self._XT[:, k]
        return Batch(self._X[:, k], XT, self._y[:, k], self.batch)
