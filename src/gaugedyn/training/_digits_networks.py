"""The three digits networks two systems train: a ReLU MLP, a small CNN and a tiny transformer.

In float64, read by `digits_inputs()` from the rows of `gaugedyn.training.load_digits()`
(64 pixels scaled to ``[0, 1]``), ten outputs:

- ``mlp``: ``Linear(64, h) - ReLU - Linear(h, h) - ReLU - Linear(h, 10)``;
- ``cnn``: ``Conv2d(1, c, 3, pad 1) - ReLU - MaxPool2d(2) - Conv2d(c, c, 3, pad 1) - ReLU -
  Flatten - Linear(16 c, 10)`` on the 8 x 8 images;
- ``transformer``: the image's 8 rows as 8 tokens of 8 pixels, ``Linear(8, E)`` embedding, one
  ``MultiheadAttention(E, H)`` with a residual, then ``Linear(E, W) - ReLU - Linear(W, 10)`` per
  token, averaged over tokens.

Defaults ``h = 32``, ``c = 4``, ``E = 16``, ``H = 2``, ``W = 32``; drawn from torch's global
generator in a fixed order, so a seed fixes the initial network.
"""

from __future__ import annotations

import torch
from torch import nn

from .._errors import InputError

DIGITS_MODELS = ("mlp", "cnn", "transformer")
"""The digits networks, by name."""


class DigitsTransformer(nn.Module):
    """The digits transformer (module docstring)."""

    def __init__(self, embed: int = 16, heads: int = 2, width: int = 32):
        super().__init__()
        self.embed = nn.Linear(8, embed)
        self.att = nn.MultiheadAttention(embed, heads, batch_first=True)
        self.up = nn.Linear(embed, width)
        self.down = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.embed(x)
        h, _ = self.att(e, e, e, need_weights=False)
        return self.down(torch.relu(self.up(h + e))).mean(dim=1)


def digits_network(
    model: str,
    *,
    hidden: int = 32,
    channels: int = 4,
    embed: int = 16,
    heads: int = 2,
    width: int = 32,
) -> nn.Module:
    r"""A fresh float64 digits ``model`` (one of `DIGITS_MODELS`, module docstring), drawn from
    torch's global generator.

    Parameters
    ----------
    model : str
        ``"mlp"``, ``"cnn"`` or ``"transformer"``.
    hidden : int
        The MLP's hidden width $h$ (``mlp`` only).
    channels : int
        The CNN's channels $c$ (``cnn`` only).
    embed : int
        The transformer's embedding width $E$ (``transformer`` only); divisible by ``heads``.
    heads : int
        The transformer's attention heads $H$ (``transformer`` only).
    width : int
        The transformer's feed-forward width $W$ (``transformer`` only).

    Returns
    -------
    torch.nn.Module
        The network in float64, reading `digits_inputs()` and giving ten outputs.

    Raises
    ------
    InputError
        When ``model`` is not one of `DIGITS_MODELS`.
    """
    net: nn.Module
    if model == "mlp":
        net = nn.Sequential(
            nn.Linear(64, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 10),
        )
    elif model == "cnn":
        net = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(16 * channels, 10),
        )
    elif model == "transformer":
        net = DigitsTransformer(embed, heads, width)
    else:
        raise InputError(f"model={model!r} is not allowed; use one of {DIGITS_MODELS}")
    return net.double()


def digits_inputs(model: str, x: torch.Tensor) -> torch.Tensor:
    """The digits rows ``x`` in the shape ``model`` reads.

    Parameters
    ----------
    model : str
        ``"mlp"`` (rows as given), ``"cnn"`` (``(N, 1, 8, 8)`` images) or ``"transformer"``
        (``(N, 8, 8)``: 8 tokens of 8 pixels).
    x : torch.Tensor
        Digits rows ``(N, 64)``.

    Returns
    -------
    torch.Tensor
        ``x`` reshaped (a view) for ``model``.
    """
    return {"cnn": x.reshape(-1, 1, 8, 8), "transformer": x.reshape(-1, 8, 8)}.get(model, x)


def digits_tensors(samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(x, y)``: the first ``samples`` digits rows and their one-hot targets, float64.

    Parameters
    ----------
    samples : int
        How many rows of `load_digits()` to take, in its order (at most the 1,797 it holds).

    Returns
    -------
    tuple[torch.Tensor, torch.Tensor]
        Pixels ``(samples, 64)`` scaled to $[0, 1]$ and one-hot targets ``(samples, 10)``.
    """
    from ._digits import load_digits

    X, labels = load_digits()
    x = torch.as_tensor(X[:samples], dtype=torch.float64)
    y = nn.functional.one_hot(torch.as_tensor(labels[:samples]), 10).double()
    return x, y
