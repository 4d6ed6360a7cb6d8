r"""The shared-representation networks of ``shared_representation``, many seeds as one program.

A *world* per seed: ``K`` Gaussian latent targets ``z ~ N(0, (1-rho) I + rho 11^T)`` seen through a
fixed mixing ``M`` (``D x K``, entries ``N(0, 1/D)``) with per-target gains ``g`` plus noise,
``x = M (g * z) + sigma xi``. A *cohort* holds ``S`` seeds x ``R`` variants of the network
``x -> act(W0 x + b0) -> act(W1 h + b1) -> (W_h h + b_h)`` (encoder ``D -> width -> bottleneck``,
one linear head per target, the ``K`` rows of ``heads``), every parameter a tensor with a leading
batch axis ``b = s R + r``, trained by one ``torch.optim.Adam`` (elementwise, so one optimizer over
the batch is ``S R`` independent optimizers sharing a step count). A variant is a gains vector and
a loss-weight schedule; its loss is ``sum_k w_k(t) mean_n (y_k - z_k)^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

ACTS = {"tanh": torch.tanh, "relu": torch.relu}
ENCODER = ("encoder.0.*", "encoder.1.*")


class _Layer(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.weight = torch.nn.Parameter(weight)
        self.bias = torch.nn.Parameter(bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias[:, None, :], h, self.weight.transpose(1, 2))


class Net(torch.nn.Module):
    """Batched encoder-heads network; parameter names ``encoder.0.weight`` ... ``heads.bias``."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]], act: str):
        super().__init__()
        self.encoder = torch.nn.ModuleList([_Layer(*layers[0]), _Layer(*layers[1])])
        self.heads = _Layer(*layers[2])
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = ACTS[self.act]
        return self.heads(f(self.encoder[1](f(self.encoder[0](x)))))


@dataclass
class World:
    """Per-seed mixing and noise; draws batches with an explicit generator."""

    mixing: torch.Tensor  # [S, D, K]
    chol: torch.Tensor  # [K, K]
    sigma: float

    @classmethod
    def draw(cls, gen: torch.Generator, seeds: int, dim: int, targets: int, rho: float,
             sigma: float) -> World:
        cov = (1 - rho) * torch.eye(targets) + rho * torch.ones(targets, targets)
        mixing = torch.randn(seeds, dim, targets, generator=gen) / math.sqrt(dim)
        return cls(mixing, torch.linalg.cholesky(cov), float(sigma))

    @property
    def seeds(self) -> int:
        return self.mixing.shape[0]

    def sample(self, gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        S, D, K = self.mixing.shape
        z = torch.randn(S, n, K, generator=gen) @ self.chol.T
        return z, torch.randn(S, n, D, generator=gen)

    def inputs(self, z: torch.Tensor, xi: torch.Tensor, gains: torch.Tensor) -> torch.Tensor:
        """``x`` for every variant: ``gains [R, K]`` -> ``[S R, n, D]``."""
        gz = z[:, None] * gains[None, :, None, :]  # [S, R, n, K]
        x = torch.einsum("srnk,sdk->srnd", gz, self.mixing) + self.sigma * xi[:, None]
        return x.reshape(-1, *x.shape[2:])


@dataclass
class Variant:
    """One formation variant: gains, loss weights (constant, or alternating every ``period``
    steps between ``weights`` and ``alt``), the favoured target and the projection flag."""

    role: str
    fav: int
    gains: tuple[float, ...]
    weights: tuple[float, ...]
    alt: tuple[float, ...] | None = None
    period: int = 50
    projected: bool = False

    def weights_at(self, t: int) -> tuple[float, ...]:
        if self.alt is None or (t // self.period) % 2 == 0:
            return self.weights
        return self.alt


@dataclass
class Cohort:
    """``S`` seeds x ``R`` variants: the batched network, its Adam and the variants."""

    net: Net
    opt: torch.optim.Adam
    variants: list[Variant]
    seeds: int
    hp: dict = field(default_factory=dict)

    @property
    def R(self) -> int:
        return len(self.variants)

    def tensor(self, rows: list[tuple[float, ...]]) -> torch.Tensor:
        return torch.tensor(rows, dtype=torch.float32)

    def gains(self) -> torch.Tensor:
        return self.tensor([v.gains for v in self.variants])

    def weights(self, t: int) -> torch.Tensor:
        """Loss weights ``[S R, K]`` at formation step ``t``."""
        w = self.tensor([v.weights_at(t) for v in self.variants])
        return w.repeat(self.seeds, 1)


def make_optimizer(net: Net, hp: dict) -> torch.optim.Adam:
    return torch.optim.Adam(net.parameters(), lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]),
                            eps=hp["eps"], foreach=True)


def init_cohort(gen: torch.Generator, seeds: int, hp: dict, variant: Variant) -> Cohort:
    """The shared ancestor's starting point: one variant, ``N(0, 1/fan_in)`` weights, zero biases."""
    sizes = [hp["dim"], hp["width"], hp["bottleneck"], hp["targets"]]
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = torch.randn(seeds, fan_out, fan_in, generator=gen) / math.sqrt(fan_in)
        layers.append((w, torch.zeros(seeds, fan_out)))
    net = Net(layers, hp["activation"])
    return Cohort(net, make_optimizer(net, hp), [variant], seeds, hp)


def replicate(src: Cohort, variants: list[Variant], rows: torch.Tensor | None = None) -> Cohort:
    """A new cohort whose variant ``r`` of seed ``s`` starts from row ``rows[s, r]`` of ``src``
    (weights and Adam state copied; by default every variant from the seed's single row)."""
    if rows is None:
        if src.R != 1:
            raise ValueError("replicate without rows needs a one-variant source")
        rows = torch.arange(src.seeds)[:, None].expand(src.seeds, len(variants))
    idx = rows.reshape(-1)
    layers = []
    for layer in (*src.net.encoder, src.net.heads):
        layers.append((layer.weight.detach()[idx].clone(), layer.bias.detach()[idx].clone()))
    net = Net(layers, src.net.act)
    opt = make_optimizer(net, src.hp)
    for p_new, p_old in zip(net.parameters(), src.net.parameters()):
        st = src.opt.state.get(p_old)
        if not st:  # no step taken yet: the copy starts fresh too
            continue
        opt.state[p_new] = {"step": st["step"].clone(), "exp_avg": st["exp_avg"][idx].clone(),
                            "exp_avg_sq": st["exp_avg_sq"][idx].clone()}
    return Cohort(net, opt, variants, int(rows.shape[0]), src.hp)


def task_losses(net: Net, x: torch.Tensor, z: torch.Tensor, R: int) -> torch.Tensor:
    """Per network and target, ``mean_n (y_k - z_k)^2``: ``[S R, K]`` (``z`` is ``[S, n, K]``)."""
    y = net(x)
    zz = z[:, None].expand(z.shape[0], R, *z.shape[1:]).reshape(y.shape)
    return ((y - zz) ** 2).mean(dim=1)


def _dot(a: list[torch.Tensor], b: list[torch.Tensor]) -> torch.Tensor:
    return sum((x * y).flatten(1).sum(1) for x, y in zip(a, b))


def _expand(c: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return c.reshape(-1, *([1] * (like.dim() - 1)))


def per_task_gradients(net: Net, losses: torch.Tensor, w: torch.Tensor) -> list[list[torch.Tensor]]:
    """``g_k = grad of sum_b w_bk L_bk`` for each target ``k`` (lists over parameters)."""
    params = list(net.parameters())
    K = losses.shape[1]
    return [list(torch.autograd.grad((w[:, k] * losses[:, k]).sum(), params,
                                     retain_graph=k < K - 1, allow_unused=False))
            for k in range(K)]


def project(grads: list[list[torch.Tensor]], mask: torch.Tensor, n_enc: int) -> None:
    r"""Gradient projection (PCGrad) on the encoder, in place, for the networks in ``mask``: for
    each target ``k`` and each other ``j`` in order, if ``g_k . g_j < 0`` then
    ``g_k <- g_k - (g_k . g_j / |g_j|^2) g_j`` (dot products over the encoder, per network)."""
    orig = [[t.clone() for t in g[:n_enc]] for g in grads]
    for k, gk in enumerate(grads):
        for j, gj in enumerate(orig):
            if j == k:
                continue
            d = _dot(gk[:n_enc], gj)
            c = torch.where((d < 0) & mask, d / _dot(gj, gj).clamp_min(1e-30), torch.zeros_like(d))
            for i in range(n_enc):
                gk[i] = gk[i] - _expand(c, gk[i]) * gj[i]


@dataclass
class FormationRecord:
    """Formation-time accounting per network: encoder-layer mean ``v`` every ``every`` steps,
    and accumulated ``C = sum_t sum_{j != k} g_j . g_k``, ``S = sum_t sum_k |g_k|^2`` over the
    encoder (the route's actual observations and loss weights)."""

    every: int
    v_mean: list[np.ndarray] = field(default_factory=list)  # each [layers, S R]
    cross: np.ndarray | None = None
    sq: np.ndarray | None = None

    def cancellation(self) -> np.ndarray:
        """``-C / S`` per network."""
        return -self.cross / np.maximum(self.sq, 1e-300)


def encoder_v_means(c: Cohort) -> np.ndarray:
    out = []
    for layer in c.net.encoder:
        v = [c.opt.state[p]["exp_avg_sq"] if c.opt.state.get(p) else torch.zeros_like(p)
             for p in (layer.weight, layer.bias)]
        tot = sum(t.double().flatten(1).sum(1) for t in v)
        out.append((tot / sum(t[0].numel() for t in v)).numpy())
    return np.stack(out)


def train(c: Cohort, world: World, gen: torch.Generator, steps: int, batch: int,
          record: FormationRecord | None = None) -> None:
    """``steps`` Adam steps of every variant on fresh batches (the same draw for all variants
    of a seed). Per-task gradients are formed when a record is kept or a variant projects."""
    gains = c.gains()
    proj = torch.tensor([v.projected for v in c.variants]).repeat(c.seeds)
    per_task = record is not None or bool(proj.any())
    n_enc = 4
    for t in range(steps):
        z, xi = world.sample(gen, batch)
        losses = task_losses(c.net, world.inputs(z, xi, gains), z, c.R)
        w = c.weights(t)
        c.opt.zero_grad(set_to_none=True)
        if not per_task:
            (w * losses).sum().backward()
        else:
            grads = per_task_gradients(c.net, losses, w)
            if record is not None:
                _accumulate(record, grads, n_enc)
            if proj.any():
                project(grads, proj, n_enc)
            for i, p in enumerate(c.net.parameters()):
                p.grad = sum(g[i] for g in grads)
        c.opt.step()
        if record is not None and (t + 1) % record.every == 0:
            record.v_mean.append(encoder_v_means(c))


def _accumulate(record: FormationRecord, grads: list[list[torch.Tensor]], n_enc: int) -> None:
    K = len(grads)
    enc = [g[:n_enc] for g in grads]
    sq = sum(_dot(e, e) for e in enc).double().numpy()
    cross = sum(_dot(enc[j], enc[k]) for j in range(K) for k in range(K) if j != k)
    cross = cross.double().numpy() if torch.is_tensor(cross) else np.zeros_like(sq)
    record.sq = sq if record.sq is None else record.sq + sq
    record.cross = cross if record.cross is None else record.cross + cross


@torch.no_grad()
def readouts(net: Net, world: World, z: torch.Tensor, xi: torch.Tensor, gains: torch.Tensor,
             R: int) -> torch.Tensor:
    r"""Readout precision ``r_k = 1 - mean_n (y_k - z_k)^2 / Var z_k`` (``Var z_k = 1``) per
    network and target on the evaluation draw ``(z, xi)`` seen with ``gains [R, K]``."""
    return 1.0 - task_losses(net, world.inputs(z, xi, gains), z, R)
