"""Stacked forward passes of the beta-grid tasks: one pass over ``B`` copies of one model.

``STACKED[task](model0, params)`` returns ``forward(x) -> out`` with ``out[c] = model_c(x[c])``
(to round-off) for the task's own module ``model_c`` holding copy ``c``'s parameters:
``params[j]`` of shape ``(B, *p_j.shape)`` for the ``j``-th tensor ``p_j`` of
``list(model0.parameters())``, and ``x`` the copies' inputs stacked on a new leading axis.
``model0`` is read for hyper-parameters only (shapes, padding). Autograd flows back through
``params`` (views of the flat ``(B, P)`` buffer of
`gaugedyn.experiments.adam_split._batched.train_copies()`). Pure torch, any device, float32
and float64.

Per layer, with ``x_c`` of shape ``(n, i)`` and ``W_c`` ``(o, i)``:

- linear: ``y = baddbmm(b[:, None], x, W^T)``, i.e. ``y_c = x_c W_c^T + b_c``;
- embedding: ``E[c, idx[c]]`` (one gather over the stacked tables);
- 3x3 convolution (padding 1): one grouped convolution over ``(n, B*C, H, W)``,
  ``groups = B`` (group ``c`` is copy ``c``'s convolution), activations in that layout from the
  first convolution to the flattening before the head, max-pooling and ReLU acting per channel;
- ``max_pool(relu(z)) = relu(max_pool(z))``, values and gradients alike (the window's first
  maximum is the same element unless the maximum is ``<= 0``, where both gradients are zero), so
  the ReLU runs on the pooled quarter.

The grouped convolution is the fastest of the candidates measured on the CPU for these sizes
(one thread, a loaded two-core machine, 2026-12-02; forward and backward of one 3x3 convolution
8 -> 8 channels, batch 64, per copy, 32 copies): on 8x8 images a loop of per-copy convolutions
1.57 ms, grouped 1.06 ms, ``unfold`` + ``bmm`` 4.9 ms, a row-Toeplitz matrix product 1.96 ms;
on 4x4 images 0.50, 0.25 (grouped, channels-last), 0.59 and 0.34 ms; max-pooling's forward on
``(64, 1280, 8, 8)`` took 33 ms contiguous and 4 ms channels-last
(``benchmarks/bench_beta_grid.py`` times the whole stacked path against the loop). Its float32
arithmetic differs from a copy's own convolution by round-off, so where the digits' blank
regions make a max-pooling window's maximum an exact tie in the copy's own pass, the stacked
pass may see it one ulp apart and route the pooling's gradient to the other element (float64:
exact ties in both); the tests state the tolerances.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ._stacked_text import TEXT_STACKED
from .tasks import _DigitsResNet, _TeacherStudent, _WordMLP


def _linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``y[c] = x[c] W[c]^T + b[c]``: ``x (B, n, i)``, ``W (B, o, i)``, ``b (B, o)``."""
    return torch.baddbmm(b.unsqueeze(1), x, W.transpose(1, 2))


def _conv(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, padding) -> torch.Tensor:
    """Copy ``c``'s ``conv2d(x_c, W_c, b_c)`` for every copy at once: ``x (n, B*Ci, H, W)``
    (copy-major channels), ``W (B, Co, Ci, k, k)``, ``b (B, Co)`` -> ``(n, B*Co, H', W')``."""
    B = W.shape[0]
    return nn.functional.conv2d(
        x, W.reshape(B * W.shape[1], *W.shape[2:]), b.reshape(-1), padding=padding, groups=B
    )


def _grouped(x: torch.Tensor) -> torch.Tensor:
    """Images ``(B, n, C, H, W)`` -> ``(n, B*C, H, W)``, the grouped layout of `_conv()`,
    stored channels-last (the convolutions and max-pooling that follow keep that format, in which
    they run several times faster on the CPU than in the contiguous one)."""
    B, n, C, H, W = x.shape
    x = x.transpose(0, 1).reshape(n, B * C, H, W)
    return x.contiguous(memory_format=torch.channels_last)


def _ungrouped(x: torch.Tensor, B: int) -> torch.Tensor:
    """``(n, B*C, H, W)`` -> ``(B, n, C*H*W)``, each copy's ``nn.Flatten`` (channel-major)."""
    return x.reshape(x.shape[0], B, -1).transpose(0, 1)


def _check(model0: nn.Module, params: list[torch.Tensor]) -> int:
    """The number of copies, after checking ``params`` against ``model0``'s parameters."""
    shapes = [tuple(p.shape) for p in model0.parameters()]
    got = [tuple(p.shape[1:]) for p in params]
    if got != shapes or len({p.shape[0] for p in params}) != 1:
        raise ValueError(
            f"params of shapes {[tuple(p.shape) for p in params]} do not stack "
            f"the model's parameters {shapes}"
        )
    return params[0].shape[0]


def _mlp(model0: nn.Module, params: list[torch.Tensor]) -> Callable:
    """``nn.Sequential(Linear, ReLU, Linear)`` (digits_mlp) on ``x (B, n, i)``."""
    _check(model0, params)
    W0, b0, W1, b1 = params

    def forward(x):
        return _linear(torch.relu(_linear(x, W0, b0)), W1, b1)

    return forward


def _teacher_student(model0: _TeacherStudent, params: list[torch.Tensor]) -> Callable:
    """``f(x) = sum_i a_i relu(w_i . x)`` on ``x (B, n, D)`` -> ``(B, n)``."""
    _check(model0, params)
    W, a = params

    def forward(x):
        return torch.bmm(torch.relu(torch.bmm(x, W.transpose(1, 2))), a.unsqueeze(2)).squeeze(2)

    return forward


def _word_mlp(model0: _WordMLP, params: list[torch.Tensor]) -> Callable:
    """Embeddings of the context words, concatenated, then ``Linear, ReLU, Linear``, on
    ``idx (B, n, ctx)`` -> ``(B, n, vocab)``."""
    B = _check(model0, params)
    E, W0, b0, W1, b1 = params

    def forward(idx):
        rows = torch.arange(B, device=idx.device).view(B, 1, 1)
        e = E[rows, idx].flatten(2)
        return _linear(torch.relu(_linear(e, W0, b0)), W1, b1)

    return forward


def _digits_cnn(model0: nn.Sequential, params: list[torch.Tensor]) -> Callable:
    """``Conv(1, 8), ReLU, MaxPool(2), Conv(8, 16), ReLU, Flatten, Linear`` on
    ``x (B, n, 1, 8, 8)`` -> ``(B, n, 10)``."""
    B = _check(model0, params)
    conv1, pool, conv2 = model0[0], model0[2], model0[3]
    c1, b1, c2, b2, W, b = params

    def forward(x):  # max-pooling before the ReLU: the same values and gradients, on less
        h = nn.functional.max_pool2d(_conv(_grouped(x), c1, b1, conv1.padding), pool.kernel_size)
        h = _conv(torch.relu(h), c2, b2, conv2.padding)
        h = torch.relu(h)
        return _linear(_ungrouped(h, B), W, b)

    return forward


def _digits_resnet(model0: _DigitsResNet, params: list[torch.Tensor]) -> Callable:
    """Stem, residual block, max-pool, residual block, flattened linear head
    (`_DigitsResNet`) on ``x (B, n, 1, 8, 8)``."""
    B = _check(model0, params)
    pad = model0.stem.padding
    pool = model0.blocks[1].kernel_size
    s, sb, a1, ab1, a2, ab2, c1, cb1, c2, cb2, W, b = params

    def block(h, w1, b1, w2, b2):  # before its final ReLU
        return h + _conv(torch.relu(_conv(h, w1, b1, pad)), w2, b2, pad)

    def forward(x):  # max-pooling before the ReLU: the same values and gradients, on less
        h = torch.relu(_conv(_grouped(x), s, sb, pad))
        h = torch.relu(nn.functional.max_pool2d(block(h, a1, ab1, a2, ab2), pool))
        return _linear(_ungrouped(torch.relu(block(h, c1, cb1, c2, cb2)), B), W, b)

    return forward


STACKED: dict[str, Callable] = {
    "digits_mlp": _mlp,
    "teacher_student": _teacher_student,
    "word_mlp": _word_mlp,
    "digits_cnn": _digits_cnn,
    "digits_resnet": _digits_resnet,
}
"""Task name -> builder ``(model0, params) -> forward`` (module docstring); the text tasks'
builders are `gaugedyn.experiments.adam_split._stacked_text.TEXT_STACKED`."""

STACKED.update(TEXT_STACKED)
