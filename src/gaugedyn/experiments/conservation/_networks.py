r"""The networks whose recorded invariants the experiment compares with the count and whose drift
it fits: the documented examples of ``docs/gauge-recorder.md`` and the digits networks of
``gauge_on_networks``, each with its count derived before any run.

The digits networks (float64, squared error to one-hot targets of scikit-learn's shipped
``load_digits``, pixels / 16, the first ``samples`` images; the same architectures as
``gauge_on_networks``):

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

from dataclasses import dataclass
from typing import Any

import torch

nn = torch.nn


def digits(samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)``: the first ``samples`` digits images (pixels / 16) and one-hot targets,
    float64."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.as_tensor(data.data[:samples] / 16.0, dtype=torch.float64)
    y = nn.functional.one_hot(torch.as_tensor(data.target[:samples]), 10).double()
    return x, y


class Transformer(nn.Module):
    """The digits transformer (module docstring)."""

    def __init__(self, embed: int = 16, heads: int = 2, width: int = 32):
        super().__init__()
        self.embed = nn.Linear(8, embed)
        self.att = nn.MultiheadAttention(embed, heads, batch_first=True)
        self.up = nn.Linear(embed, width)
        self.down = nn.Linear(width, 10)

    def forward(self, x):
        e = self.embed(x)
        h, _ = self.att(e, e, e, need_weights=False)
        return self.down(torch.relu(self.up(h + e))).mean(dim=1)


def network(model: str, size: dict | None = None) -> nn.Module:
    """A fresh float64 digits ``model`` from torch's global generator, at the
    ``gauge_on_networks`` sizes unless ``size`` overrides them (``hidden``, ``channels``,
    ``embed``, ``heads``, ``width``)."""
    s = {"hidden": 32, "channels": 4, "embed": 16, "heads": 2, "width": 32} | (size or {})
    net: nn.Module
    if model == "mlp":
        h = s["hidden"]
        net = nn.Sequential(nn.Linear(64, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                            nn.Linear(h, 10))
    elif model == "cnn":
        c = s["channels"]
        net = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Flatten(),
                            nn.Linear(16 * c, 10))
    else:
        net = Transformer(s["embed"], s["heads"], s["width"])
    return net.double()


def inputs(model: str, x: torch.Tensor) -> torch.Tensor:
    """The digits ``x`` (``(N, 64)``) in the shape ``model`` reads."""
    return {"cnn": x.reshape(-1, 1, 8, 8), "transformer": x.reshape(-1, 8, 8)}.get(model, x)


@dataclass
class RecorderModel:
    """A model of the recorder comparison: its count and symmetries derived (``why``), the
    data shape per sample, and how the count is taken."""

    name: str
    model: Any
    sample: tuple
    outputs: int
    laws: int
    symmetries: int
    why: str
    recorded: str
    kwargs: dict
    rich: bool = True
    """Whether it needs the recorder's rich data (ReLU units with biases saturate slowly)."""


def recorder_model(name: str) -> RecorderModel:
    """The model ``name`` of :data:`._protocol.RECORDER_MODELS`."""
    torch.manual_seed(0)  # the module's initial values are replaced by generic draws
    if name == "docs_mlp":
        return RecorderModel(name, nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)),
                             (5,), 3, 16, 16, "one law per ReLU unit",
                             "all: the 16 units' delta", {})
    if name in ("docs_bn", "docs_bn_eps0"):
        bn = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.BatchNorm1d(8),
                           nn.ReLU(), nn.Linear(8, 2))
        exact = name == "docs_bn_eps0"
        return RecorderModel(
            name, bn, (4,), 2, 32 if exact else 24, 32,
            ("8 + 8 ReLU units, 8 frozen biases before the normalisation, 8 scale laws |w_j|^2"
             if exact else "8 + 8 ReLU units, 8 frozen biases; at eps = 1e-5 the scaling "
                           "w_j -> c w_j is a symmetry only with gamma_j rescaled by the batch's "
                           "sqrt(c^2 var_j + eps) / (c sqrt(var_j + eps)): 8 symmetries without "
                           "law"),
            ("all 32" if exact else "32, of which the 8 scale invariants are no laws at "
                                    "eps > 0 (they drift at first order in eps)"),
            {"norm_eps": 0.0} if exact else {})
    if name == "linear_chain":
        return RecorderModel(name, nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3),
                                                 nn.Linear(3, 3)), (3,), 3, 12, 24,
                             "GL(3) at two junctions: 12 laws; 18 GL directions and 6 bias "
                             "translations", "all: the two gl pairs (the units' delta are their "
                             "diagonals)", {})
    if name == "mha_bias":
        from ._architectures import MHA

        return RecorderModel(name, MHA(4, 2, bias=True), (3, 4), 12, 16, 24,
                             "12 of the heads, 4 frozen key-bias entries; 4 value-bias "
                             "translations silent", "all: qk, vo and the key bias", {}, rich=False)
    if name == "gqa_bias":
        from ._architectures import GQA

        return RecorderModel(name, GQA(6, 4, 2, 2, bias=True), (3, 6), 18, 16, 24,
                             "12 of the two key/value groups, 4 frozen key-bias entries",
                             "all: qk, vo (shared keys and values) and the key bias", {}, rich=False)
    if name == "digits_mlp":
        return RecorderModel(name, network("mlp", {"hidden": 8}), (64,), 10, 16, 16,
                             "one law per ReLU unit (hidden width 8)", "all", {"points": 8})
    if name == "digits_cnn":
        return RecorderModel(name, network("cnn"), (1, 8, 8), 10, 8, 8,
                             "one law per ReLU channel", "all", {"points": 8})
    if name == "digits_transformer":
        return RecorderModel(name, network("transformer", {"embed": 8, "width": 16}), (8, 8),
                             10, 100, 176, "40 of the heads, 8 key-bias entries, 16 ReLU units, "
                             "36 of the residual stream's GL(8) (module docstring)",
                             "64: missing the 36 laws of the residual stream's GL(8)", {},
                             rich=False)
    raise KeyError(name)
