r"""The networks whose recorded invariants the experiment compares with the count: the
documented examples of ``docs/gauge-recorder.md`` and the digits networks of
``gauge_on_networks`` (`gaugedyn.training.digits_network()`, which the drift runs train too),
each with its count derived before any run.

The digits networks and their laws:

- ``mlp``: ``Linear(64, h) - ReLU - Linear(h, h) - ReLU - Linear(h, 10)``: one law per ReLU
  unit, ``2 h``; the recorder's groups ``0`` and ``2`` hold them all.
- ``cnn``: ``Conv2d(1, c, 3, pad 1) - ReLU - MaxPool2d(2) - Conv2d(c, c, 3, pad 1) - ReLU -
  Flatten - Linear(16 c, 10)``: one law per channel, ``2 c``.
- ``transformer``: the 8 rows of an image as 8 tokens, ``Linear(8, E)`` embedding, one
  ``MultiheadAttention(E, H)`` (biases) with a residual, ``Linear(E, W) - ReLU - Linear(W, 10)``
  per token, averaged over tokens. Its laws (for ``E <= 8``, so that the embedding's image fills
  the residual stream): ``H d (d + 1)`` of the heads (``d = E / H``), ``E`` key-bias entries
  (frozen: the softmax removes them), ``W`` of the ReLU units, and ``E (E + 1) / 2`` of the
  residual stream's ``GL(E)`` (``x -> A x`` on the embedding's output and bias and on the
  attention's output projection, ``A^-1`` on every reader of the stream: the three input
  projections and ``up``), whose law ``W_e W_e^T + b_e b_e^T + W_O W_O^T + b_O b_O^T -
  W_Q^T W_Q - W_K^T W_K - W_V^T W_V - W_up^T W_up`` the recorder does not record. Its
  symmetries add ``E`` value-bias translations (``b_V -> b_V + t``, ``b_O -> b_O - W_O t``)
  and ``2 E`` translations of the residual stream (``b_e -> b_e + t`` with the three input
  biases ``-W t`` and ``b_O -> b_O - t``; ``b_O -> b_O + t`` with ``b_up -> b_up - W_up t``),
  affine and silent, and the rotations of each ``GL``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

nn = torch.nn


def network(model: str, size: dict | None = None) -> nn.Module:
    """A fresh float64 digits ``model`` (`gaugedyn.training.digits_network()`) at the
    ``gauge_on_networks`` sizes unless ``size`` overrides them."""
    from ...training import digits_network

    return digits_network(model, **(size or {}))


@dataclass
class RecorderModel:
    """A model of the recorder comparison: its count and symmetries derived (``why``), the
    data shape per sample, and how the count is taken (``kwargs`` of
    `gaugedyn.gauge.conservation_laws()`; ``rich``: whether it needs the recorder's rich
    data, as ReLU units with biases saturate slowly)."""

    name: str
    model: Any
    sample: tuple
    outputs: int
    laws: int
    symmetries: int
    why: str
    recorded: str
    kwargs: dict = field(default_factory=dict)
    rich: bool = True


def _bn() -> nn.Module:
    return nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)
    )


def _mha() -> nn.Module:
    from ._architectures import MHA

    return MHA(4, 2, bias=True)


def _gqa() -> nn.Module:
    from ._architectures import GQA

    return GQA(6, 4, 2, 2, bias=True)


_RECORDER: dict[str, dict] = {
    "docs_mlp": dict(
        model=lambda: nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)),
        sample=(5,),
        outputs=3,
        laws=16,
        symmetries=16,
        why="one law per ReLU unit",
        recorded="all: the 16 units' delta",
    ),
    "docs_bn_eps0": dict(
        model=_bn,
        sample=(4,),
        outputs=2,
        laws=32,
        symmetries=32,
        why="8 + 8 ReLU units, 8 frozen biases before the normalisation, 8 scale laws |w_j|^2",
        recorded="all 32",
        kwargs={"norm_eps": 0.0},
    ),
    "linear_chain": dict(
        model=lambda: nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)),
        sample=(3,),
        outputs=3,
        laws=12,
        symmetries=24,
        why="GL(3) at two junctions: 12 laws; 18 GL directions and 6 bias translations",
        recorded="all: the two gl pairs (the units' delta are their diagonals)",
    ),
    "mha_bias": dict(
        model=_mha,
        sample=(3, 4),
        outputs=12,
        laws=16,
        symmetries=24,
        why="12 of the heads, 4 frozen key-bias entries; 4 value-bias translations silent",
        recorded="all: qk, vo and the key bias",
        rich=False,
    ),
    "gqa_bias": dict(
        model=_gqa,
        sample=(3, 6),
        outputs=18,
        laws=16,
        symmetries=24,
        why="12 of the two key/value groups, 4 frozen key-bias entries",
        recorded="all: qk, vo (shared keys and values) and the key bias",
        rich=False,
    ),
    "digits_mlp": dict(
        model=lambda: network("mlp", {"hidden": 8}),
        sample=(64,),
        outputs=10,
        laws=16,
        symmetries=16,
        why="one law per ReLU unit (hidden width 8)",
        recorded="all",
        kwargs={"points": 8},
    ),
    "digits_cnn": dict(
        model=lambda: network("cnn"),
        sample=(1, 8, 8),
        outputs=10,
        laws=8,
        symmetries=8,
        why="one law per ReLU channel",
        recorded="all",
        kwargs={"points": 8},
    ),
    "digits_transformer": dict(
        model=lambda: network("transformer", {"embed": 8, "width": 16}),
        sample=(8, 8),
        outputs=10,
        laws=100,
        symmetries=176,
        why="40 of the heads, 8 key-bias entries, 16 ReLU units, 36 of the residual stream's "
        "GL(8) (module docstring)",
        recorded="64: missing the 36 laws of the residual stream's GL(8)",
        rich=False,
    ),
}
"""Each recorder model's factory and derived numbers (``docs/gauge-recorder.md`` states them)."""


def recorder_model(name: str) -> RecorderModel:
    """The model ``name`` of `._protocol.RECORDER_MODELS`, freshly built (its initial
    values are replaced by generic draws; the seed only makes the build repeatable)."""
    spec = dict(_RECORDER[name])
    torch.manual_seed(0)
    spec["model"] = spec["model"]()
    return RecorderModel(name=name, **spec)
