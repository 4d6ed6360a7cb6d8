r"""Grouped-query attention: query heads that share their keys and values in groups.

With ``H`` query heads, ``G`` key/value heads (``G`` divides ``H``, ``g = H / G``) and head
dimension ``d``, query head ``i`` reads key/value head ``i // g`` (the layout of
``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``):

$$
y = W_O \big[\mathrm{softmax}\big(Q_i K_{i//g}^\top / \sqrt{d}\big) V_{i//g}\big]_{i<H},
\qquad Q_i = x W_{Q,i}^\top,\ K_j = x W_{K,j}^\top,\ V_j = x W_{V,j}^\top,
$$

$W_{Q,i}$ rows ``i d .. (i+1) d - 1`` of ``q_proj.weight`` (biases appended where present).
A group ``j`` has the symmetries $W_{Q,i} \to A W_{Q,i}$ for every query head ``i`` of the
group with $W_{K,j} \to A^{-\top} W_{K,j}$, and $W_{V,j} \to B W_{V,j}$ with
$W_{O,i} \to W_{O,i} B^{-1}$ (``A, B`` in ``GL(d)``), so gradient flow conserves
$\sum_i W_{Q,i} W_{Q,i}^\top - W_{K,j} W_{K,j}^\top$ and ``W_{V,j} W_{V,j}^T - sum_i
W_{O,i}^T W_{O,i}`` (``d x d`` per group). ``G = H`` is multi-head attention, ``G = 1``
multi-query attention.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._errors import InputError


class GroupedQueryAttention(nn.Module):
    """Self-attention with ``num_heads`` query heads sharing ``num_kv_heads`` key/value heads
    (module docstring); ``forward(x)`` maps ``(..., tokens, embed_dim)`` to the same shape.
    `find_units()` finds its ``qk`` and ``vo`` groups, one unit per
    key/value head."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int | None = None,
        bias: bool = False,
    ):
        super().__init__()
        for name, v in (
            ("embed_dim", embed_dim),
            ("num_heads", num_heads),
            ("num_kv_heads", num_kv_heads),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name}={v!r} is not allowed; use a positive integer")
        if num_heads % num_kv_heads:
            raise InputError(
                f"num_kv_heads={num_kv_heads} is not allowed; use a divisor of "
                f"num_heads={num_heads}"
            )
        if head_dim is None:
            if embed_dim % num_heads:
                raise InputError(
                    f"num_heads={num_heads} does not divide embed_dim={embed_dim}; give head_dim"
                )
            head_dim = embed_dim // num_heads
        if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:
            raise InputError(f"head_dim={head_dim!r} is not allowed; use a positive integer")
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        self.head_dim = head_dim
        self.q_proj = nn.Linear(embed_dim, num_heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(num_heads * head_dim, embed_dim, bias=bias)

    @property
    def group_size(self) -> int:
        """Query heads per key/value head, ``g = H / G``."""
        return self.num_heads // self.num_kv_heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, g, d = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).unflatten(-1, (h, d)).transpose(-3, -2)
        k = self.k_proj(x).unflatten(-1, (g, d)).transpose(-3, -2)
        v = self.v_proj(x).unflatten(-1, (g, d)).transpose(-3, -2)
        k = k.repeat_interleave(self.group_size, dim=-3)
        v = v.repeat_interleave(self.group_size, dim=-3)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)
        return self.o_proj((att @ v).transpose(-3, -2).flatten(-2))
