"""Stacked forward passes of the two character-level text tasks of the beta grid (issue 33).

``B`` copies of one model, copy ``c`` with its own parameters, run as one program: every
parameter arrives as a ``(B, *shape)`` tensor (``params[j]`` stacks the ``j``-th tensor of
``list(model0.parameters())`` over copies) and every per-copy matrix product becomes one batched
product over copies (``torch.baddbmm``). ``forward(x)`` maps the copies' token indices
``x (B, bs, T)`` to logits ``(B, bs, T, vocab)``, ``out[c]`` equal to round-off to copy ``c``'s
own module applied to ``x[c]``, differentiable with respect to ``params``.

- ``char_transformer`` (`_CharTransformer`):
  ``h = E[x] + P[:T]``; per block ``h += W_o attn(split(W_qkv LN_1(h) + b_qkv)) + b_o`` (causal
  ``scaled_dot_product_attention`` per copy, sequence and head) and
  ``h += W_2 GELU(W_1 LN_2(h) + b_1) + b_2`` (GELU in its erf form); logits
  ``W_h LN(h) + b_h``, each ``LN(h) = w (h - mean h) / sqrt(var h + eps) + b`` over the model
  dimension with the module's ``eps``.
- ``char_gru`` (`_CharGRU`): PyTorch's GRU,
  ``r = sigma(W_ir e_t + b_ir + W_hr h + b_hr)``, ``z = sigma(W_iz e_t + b_iz + W_hz h + b_hz)``,
  ``n = tanh(W_in e_t + b_in + r (W_hn h + b_hn))``, ``h' = (1 - z) n + z h`` from ``h = 0``,
  the gate rows of ``weight_ih_l0``/``weight_hh_l0`` in the order ``(r, z, n)``; the input
  projections of all ``T`` steps gathered from one per-copy product ``E W_i^T + b_i`` over the
  vocabulary, then one product per step over all copies; logits ``W_o h_t + b_o``.

The builders read ``model0`` for hyper-parameters only (sizes, heads, ``eps``), never for its
parameter values. Pure torch on ``x.device``, any floating dtype; autograd differentiates it
(no hand-written backward: a custom adjoint of the GRU recurrence, tried, was no faster).

Cost on the CPU (``benchmarks/bench_stacked_text.py``): the gain over a loop of the per-copy
modules is the loop's per-module overhead and the GRU's many small per-step kernels; the
transformer's cost is mostly its matrix products and elementwise kernels, which stacking does
not make cheaper. Tensors of many copies are large: with glibc's allocator every step maps them
afresh (page faults, system time); PyTorch's ``THP_MEM_ALLOC_ENABLE=1`` (transparent huge pages
for large CPU tensors) removes most of that cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from ..._errors import InputError


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``x (B, N, i)``, ``w (B, o, i)``, ``b (B, o)`` -> ``x w^T + b`` per copy, ``(B, N, o)``."""
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def _embed(table: torch.Tensor, idx: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """Rows ``table[c, i]`` for every index ``i`` of copy ``c`` (axis ``axis`` of ``idx``):
    ``table (B, V, d)``, ``idx (..., B, ...)`` -> ``(..., B, ..., d)``."""
    B, V, d = table.shape
    shape = [1] * idx.dim()
    shape[axis] = B
    offset = torch.arange(B, device=idx.device).view(shape) * V
    return F.embedding(idx + offset, table.reshape(B * V, d))


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """LayerNorm over the last axis with per-copy affine ``w, b (B, d)``; ``x (B, N, d)``."""
    return torch.addcmul(b.unsqueeze(1), F.layer_norm(x, x.shape[-1:], eps=eps), w.unsqueeze(1))


def _named(model0: nn.Module, params) -> dict[str, torch.Tensor]:
    names = [n for n, _ in model0.named_parameters()]
    if len(names) != len(params):
        raise InputError(
            f"params has {len(params)} tensors; the model has {len(names)} parameters ({names})"
        )
    shapes = [tuple(p.shape) for p in model0.parameters()]
    for n, s, p in zip(names, shapes, params):
        if tuple(p.shape[1:]) != s:
            raise InputError(f"params entry {n!r} has shape {tuple(p.shape)}; expected (B, *{s})")
    return dict(zip(names, params))


def _ln_eps(module: nn.Module | torch.Tensor) -> float:
    if not isinstance(module, nn.LayerNorm) or not module.elementwise_affine:
        raise InputError(f"expected an affine nn.LayerNorm, got {module!r}")
    return float(module.eps)


def build_transformer(model0: nn.Module, params) -> Callable[[torch.Tensor], torch.Tensor]:
    """The stacked forward of ``_CharTransformer`` (module docstring). Attention is one
    ``scaled_dot_product_attention`` call over all ``B bs`` sequences on strided views of the
    ``qkv`` product (measured no slower than contiguous copies, an explicit ``softmax(q k^T)``
    or one call per copy). Under torch's autocast (the beta grid's bfloat16 reading,
    ``_protocol.MATMUL``) the attention still runs in the residual stream's dtype: torch 2.13's
    bfloat16 attention on the CPU took 514 ms against float32's 38 ms in one profiled stacked
    pass over 160 copies (2026-12-08, AMD EPYC with avx512_bf16, one thread)."""
    p = _named(model0, params)
    d = cast(nn.Embedding, model0.emb).embedding_dim
    blocks = []
    blk: Any  # a _CausalBlock of tasks.py
    for i, blk in enumerate(cast(nn.ModuleList, model0.blocks)):
        k = f"blocks.{i}."
        if not isinstance(blk.mlp[1], nn.GELU) or blk.mlp[1].approximate != "none":
            raise InputError(
                f"block {i}'s MLP activation is {blk.mlp[1]!r}; the stacked "
                "forward implements nn.GELU() (erf form)"
            )
        blocks.append(
            (
                blk.heads,
                _ln_eps(blk.ln1),
                _ln_eps(blk.ln2),
                *(
                    p[k + n]
                    for n in (
                        "ln1.weight",
                        "ln1.bias",
                        "qkv.weight",
                        "qkv.bias",
                        "proj.weight",
                        "proj.bias",
                        "ln2.weight",
                        "ln2.bias",
                        "mlp.0.weight",
                        "mlp.0.bias",
                        "mlp.2.weight",
                        "mlp.2.bias",
                    )
                ),
            )
        )
    ln_eps = _ln_eps(cast(nn.Sequential, model0.head)[0])
    emb, pos = p["emb.weight"], p["pos.weight"]
    lnw, lnb, hw, hb = (p[f"head.{n}"] for n in ("0.weight", "0.bias", "1.weight", "1.bias"))

    def forward(x: torch.Tensor) -> torch.Tensor:
        B, bs, T = x.shape
        h = (_embed(emb, x) + pos[:, None, :T]).reshape(B, bs * T, d)
        for heads, e1, e2, w1, b1, wqkv, bqkv, wo, bo, w2, b2, wm1, bm1, wm2, bm2 in blocks:
            qkv = _linear(_layer_norm(h, w1, b1, e1), wqkv, bqkv)
            q, k, v = qkv.view(B * bs, T, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            with torch.autocast(x.device.type, enabled=False):  # attention in h's dtype
                q, k, v = (t.to(h.dtype) for t in (q, k, v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = h + _linear(a.transpose(1, 2).reshape(B, bs * T, d), wo, bo)
            m = F.gelu(_linear(_layer_norm(h, w2, b2, e2), wm1, bm1))
            h = h + _linear(m, wm2, bm2)
        out = _linear(_layer_norm(h, lnw, lnb, ln_eps), hw, hb)
        return out.view(B, bs, T, -1)

    return forward


def build_gru(model0: nn.Module, params) -> Callable[[torch.Tensor], torch.Tensor]:
    """The stacked forward of ``_CharGRU`` (module docstring). The input projections of all
    steps are gathered, time-major, from the per-copy table ``E W_i^T + b_i`` (``vocab`` rows
    instead of ``bs T``); a step is one ``baddbmm`` over all copies and four elementwise
    kernels (``r`` and ``z`` through one ``sigmoid``), the gate blocks taken by ``split`` (whose
    backward is one ``cat``, where a slice's backward fills a zero tensor per slice)."""
    p = _named(model0, params)
    gru = cast(nn.GRU, model0.gru)
    if gru.num_layers != 1 or gru.bidirectional or not gru.batch_first or not gru.bias:
        raise InputError(f"expected a one-layer, one-way, batch-first GRU with biases, got {gru!r}")
    H = gru.hidden_size
    emb = p["emb.weight"]
    wih, whh, bih, bhh = (
        p[f"gru.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    )
    hw, hb = p["head.weight"], p["head.bias"]

    def forward(x: torch.Tensor) -> torch.Tensor:
        B, bs, T = x.shape
        gi = _embed(_linear(emb, wih, bih), x.permute(2, 0, 1), axis=1)  # (T, B, bs, 3H)
        whh_t, bhh_1 = whh.transpose(1, 2), bhh.unsqueeze(1)
        h = gi.new_zeros(B, bs, H)
        hs = []
        for g in gi.unbind(0):
            grz, gn = g.split([2 * H, H], -1)
            hrz, hn = torch.baddbmm(bhh_1, h, whh_t).split([2 * H, H], -1)
            r, z = torch.sigmoid(grz + hrz).split(H, -1)
            n = torch.tanh(torch.addcmul(gn, r, hn))
            h = torch.lerp(n, h, z)
            hs.append(h)
        out = _linear(torch.stack(hs, dim=2).view(B, bs * T, H), hw, hb)
        return out.view(B, bs, T, -1)

    return forward


TEXT_STACKED: dict[str, Callable] = {"char_transformer": build_transformer, "char_gru": build_gru}
"""Task name -> builder ``(model0, params) -> forward`` (the stacked-forward interface)."""
