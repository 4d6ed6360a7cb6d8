r"""The reference split applied to a live Adam run: a streaming ``w`` and both sign readings.

Everything here calls the one reference implementation of the algebra,
`gaugedyn.adam.split_update()` (through `decompose_state()`); the recorder's fast paths
(``_recorder._chunk_sums``, ``_recorder._sums_expr`` and the C++ kernel of ``_native``) are
tested against it.

Two readings of the sign part (see the beta grid's protocol, ``experiments/adam_split/PROTOCOL.md``):

- ``current``: ``sign = sign(g_t)``, ``residual = transition + ratio + eps`` (the exact split);
- ``memory``: $\text{sign} = \operatorname{sign}(\hat w)$, the same ``lag``, ``residual = ratio + eps`` (the transition
  absorbed into the sign part: $\operatorname{sign}(\hat w) = \operatorname{sign}(g_t) + \text{transition}$).

`READING_SUMS` names the per-step sums that `reading_sums()` returns; every observable
of the beta grid (shares in both conventions, sign dominance) is a function of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from ._decomposition import AdamParts, decompose_state

READINGS: tuple[str, ...] = ("current", "memory")
READING_SUMS: tuple[str, ...] = (
    "sign_current",
    "sign_memory",
    "lag",
    "residual_current",
    "residual_memory",
    "update",
    "dot_update_sign_current",
    "dot_update_sign_memory",
    "count",
)
"""Per step: squared norms of the parts of both readings, of the update, the inner products of
the update with each reading's sign part, and the number of coordinates."""


class StreamingSplit:
    r"""Keeps $w_t = \beta_2 w_{t-1} + (1 - \beta_2) g_t$ per tensor and splits each step.

    ``step(key, m, v, g, t)`` takes the optimizer's ``m_t``, ``v_t`` (PyTorch's raw moments),
    the effective gradient ``g_t`` and the step counter ``t`` of the tensor named ``key`` and
    returns `decompose_state()`'s `AdamParts`. ``w`` starts from zero, so every
    tensor must be seen from its first step (``t = 1``; a later first sight is an error). When
    ``b1 == b2``, ``w`` *is* ``m`` and the lag is exactly zero.
    """

    def __init__(self, beta1: float, beta2: float, eps: float):
        self.b1, self.b2, self.eps = float(beta1), float(beta2), float(eps)
        self._w: dict[Any, Any] = {}

    def _w_next(self, key, m, g, t: int):
        b2 = self.b2
        prev = self._w.get(key)
        if prev is None and t > 1:
            raise InputError(
                f"step t={t} of tensor {key!r} is the first one seen; allowed: "
                "start the streaming split at t = 1"
            )
        w = (1.0 - b2) * g if prev is None else b2 * prev + (1.0 - b2) * g
        self._w[key] = w
        return w

    def step(self, key, m, v, g, t: int) -> AdamParts:
        w = m if self.b1 == self.b2 else self._w_next(key, m, g, int(t))
        return decompose_state(m, v, w, g, int(t), self.b1, self.b2, self.eps)


def reading_sums(parts: AdamParts) -> np.ndarray:
    """The `READING_SUMS` of one split (numpy or torch parts), as float64.

    Parameters
    ----------
    parts : AdamParts
        One step's split (`decompose_state()`), of any shape.

    Returns
    -------
    numpy.ndarray
        The nine sums in the order of `READING_SUMS`.
    """

    def ss(x):
        return float((x * x).sum())

    def dot(x, y):
        return float((x * y).sum())

    sign_memory = parts.sign + parts.transition
    residual_memory = parts.ratio + parts.eps
    u = parts.update
    return np.array(
        [
            ss(parts.sign),
            ss(sign_memory),
            ss(parts.lag),
            ss(parts.residual),
            ss(residual_memory),
            ss(u),
            dot(u, parts.sign),
            dot(u, sign_memory),
            float(np.prod(tuple(u.shape))),
        ]
    )


class AdamProbe:
    """``on_step`` observer of `gaugedyn.training.train()` under Adam: splits each step.

    Given each `gaugedyn.training.StepRecord` (parameters ``(a (S, K), W (S, K, D))``
    before and after the step, the batch gradients and the state ``(m_t, v_t, t)``), it splits
    the update per neuron ``i`` (``a[:, i]`` and ``W[:, i, :]``) with `StreamingSplit`;
    ``betas`` and ``eps`` are the run's Adam settings. Per neuron and step it keeps the current
    reading's shares ``|p_k| / (|sign| + |lag| + |residual|)``, averaged after the start-up
    fraction ``skip`` and in ``bins`` windows, and the checks (parts sum to the update, the
    update is the applied step, the step counter advanced by one per call).
    """

    def __init__(self, steps: int, bins: int, skip: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.steps, self.bins = int(steps), int(bins)
        self.split = StreamingSplit(betas[0], betas[1], eps)
        self.start = int(skip * steps)
        self.calls = 0
        self.counter_ok = True
        self.sum_error = 0.0
        self.applied_error = 0.0
        self.lag_max = 0.0
        self.bin_sum: np.ndarray | None = None
        self.bin_count = np.zeros(self.bins)
        self.mean_sum: np.ndarray | None = None
        self.mean_count = 0

    def __call__(self, record) -> None:
        state = record.adam
        if state is None:
            raise InputError("AdamProbe observes Adam steps; train with optimizer='adam'")
        k = int(state.k)
        self.calls += 1
        self.counter_ok &= k == self.calls and record.step == self.calls
        norms = self._norms(record, k)
        self.lag_max = max(self.lag_max, float(norms[..., 1].max()))
        total = norms.sum(-1, keepdims=True)
        shares = np.where(total > 0, norms / np.where(total > 0, total, 1.0), 0.0)
        if self.bin_sum is None or self.mean_sum is None:
            self.bin_sum = np.zeros((self.bins, *shares.shape))
            self.mean_sum = np.zeros(shares.shape)
        b = min((k - 1) * self.bins // max(self.steps, 1), self.bins - 1)
        self.bin_sum[b] += shares
        self.bin_count[b] += 1
        if k > self.start:
            self.mean_sum += shares
            self.mean_count += 1

    def _norms(self, record, k: int) -> np.ndarray:
        """Per-neuron norms of sign, lag and residual ``(S, K, 3)``; updates the checks."""
        import torch

        lr = record.lr
        sq: torch.Tensor | None = None
        with torch.no_grad():
            for i, (p, g, q, m, v) in enumerate(
                zip(record.previous, record.grads, record.params, record.adam.m, record.adam.v)
            ):
                parts = self.split.step(i, m, v, g, k)
                u = parts.update
                size = sum(
                    x.abs()
                    for x in (parts.sign, parts.lag, parts.transition, parts.ratio, parts.eps)
                ).clamp(min=1.0)
                err = ((parts.total() - u).abs() / size).max()
                self.sum_error = max(self.sum_error, float(err))
                rel = ((q - p) + lr * u).abs() / (p.abs() + lr * u.abs() + 1e-300)
                self.applied_error = max(self.applied_error, float(rel.max()))
                cols = [parts.sign, parts.lag, parts.residual]
                per = torch.stack([c * c if c.dim() == 2 else (c * c).sum(-1) for c in cols], -1)
                sq = per if sq is None else sq + per
            assert sq is not None, "a step with no tensors"
            return sq.sqrt().double().cpu().numpy()

    def result(self) -> dict:
        """Mean shares ``(S, K, 3)``, binned shares ``(bins, K, 3)`` (seed means) and checks."""
        if self.bin_sum is None or self.mean_sum is None:
            raise InputError("AdamProbe.result() before any step; allowed: after training")
        count = np.maximum(self.bin_count, 1)[:, None, None, None]
        binned = (self.bin_sum / count).mean(axis=1)
        binned[self.bin_count == 0] = np.nan
        return {
            "share_mean": self.mean_sum / max(self.mean_count, 1),
            "share_bins": binned,
            "probe_calls": self.calls,
            "probe_counter_ok": bool(self.counter_ok),
            "sum_error": self.sum_error,
            "applied_error": self.applied_error,
            "lag_norm_max": self.lag_max,
        }
