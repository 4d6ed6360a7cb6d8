r"""The shared-representation networks of ``shared_representation``, many seeds as one program.

A *world* per seed: ``K`` Gaussian latent targets ``z ~ N(0, (1-rho) I + rho 11^T)`` seen through a
fixed mixing ``M`` (``D x K``, entries ``N(0, 1/D)``) with per-target gains ``g`` plus noise,
``x = M (g * z) + sigma xi``. A *cohort* holds ``S`` seeds x ``R`` variants of the network
``x -> act(W0 x + b0) -> act(W1 h + b1) -> (W_h h + b_h)`` (encoder ``D -> width -> bottleneck``,
one linear head per target, the ``K`` rows of ``heads``), every parameter a tensor with a leading
batch axis ``b = s R + r``, trained by one ``torch.optim.Adam`` (elementwise, so one optimizer over
the batch is ``S R`` independent optimizers sharing a step count). A variant is a gains vector,
a label-observation vector ``q`` (target ``k``'s label enters the loss with probability ``q_k``,
drawn per sample or per step) and a loss-weight schedule; its loss is
``sum_k w_k(t) mean_n o_nk (y_k - z_k)^2`` with ``o_nk`` the observation indicator (1 when
``q = 1``). Readouts (`readouts()`) are the one definition of readout precision, by the heads
and by a linear probe fitted on the representation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

ACTS = {"tanh": torch.tanh, "relu": torch.relu}
ENCODER = ("encoder.0.*", "encoder.1.*")
READOUTS = ("heads", "probe")
"""The two readouts of readout precision: the network's own heads, and a linear probe fitted on
the representation (the encoder output) on held-out inputs."""
PROBE_RIDGE = 1e-6
"""Ridge of the probe's least squares, relative to the mean squared representation entry (only
to keep a rank-deficient representation solvable)."""


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

    def represent(self, x: torch.Tensor) -> torch.Tensor:
        """The shared representation ``h = act(W1 act(W0 x + b0) + b1)`` (``[B, n, d_Z]``)."""
        f = ACTS[self.act]
        return f(self.encoder[1](f(self.encoder[0](x))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads(self.represent(x))


@dataclass
class World:
    """Per-seed mixing and noise; draws batches with an explicit generator."""

    mixing: torch.Tensor  # [S, D, K]
    chol: torch.Tensor  # [K, K]
    sigma: float

    @classmethod
    def draw(
        cls, gen: torch.Generator, seeds: int, dim: int, targets: int, rho: float, sigma: float
    ) -> World:
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
    """One formation variant: gains, label-observation rates ``observe`` (per ``per`` =
    ``"sample"`` or ``"step"``), loss weights (constant, or alternating every ``period`` steps
    between ``weights`` and ``alt``), the favoured target and the projection flag."""

    role: str
    fav: int
    gains: tuple[float, ...]
    weights: tuple[float, ...]
    alt: tuple[float, ...] | None = None
    period: int = 50
    projected: bool = False
    observe: tuple[float, ...] | None = None
    per: str = "sample"

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

    def observe(self) -> torch.Tensor:
        """Label-observation rates ``[R, K]`` (1 where a variant observes every label)."""
        K = self.hp["targets"]
        return self.tensor([v.observe or (1.0,) * K for v in self.variants])

    def per_step(self) -> torch.Tensor:
        return torch.tensor([v.per == "step" for v in self.variants])

    def weights(self, t: int) -> torch.Tensor:
        """Loss weights ``[S R, K]`` at formation step ``t``."""
        w = self.tensor([v.weights_at(t) for v in self.variants])
        return w.repeat(self.seeds, 1)


def make_optimizer(net: Net, hp: dict) -> torch.optim.Adam:
    return torch.optim.Adam(
        net.parameters(), lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"], foreach=True
    )


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
        opt.state[p_new] = {
            "step": st["step"].clone(),
            "exp_avg": st["exp_avg"][idx].clone(),
            "exp_avg_sq": st["exp_avg_sq"][idx].clone(),
        }
    return Cohort(net, opt, variants, int(rows.shape[0]), src.hp)


def label_mask(
    gen: torch.Generator, seeds: int, n: int, observe: torch.Tensor, per_step: torch.Tensor
) -> torch.Tensor | None:
    """Observation indicators ``o [S R, n, K]``: target ``k``'s label observed with probability
    ``observe[r, k]``, drawn per sample, or once per step for the variants in ``per_step``. One
    uniform draw per seed serves every variant (common random numbers); ``None`` (and no draw)
    when every label is always observed."""
    if bool((observe >= 1).all()):
        return None
    K = observe.shape[1]
    u_sample = torch.rand(seeds, 1, n, K, generator=gen)
    u_step = torch.rand(seeds, 1, 1, K, generator=gen)
    u = torch.where(per_step[None, :, None, None], u_step, u_sample)
    return (u < observe[None, :, None, :]).float().reshape(-1, n, K)


def task_losses(
    net: Net, x: torch.Tensor, z: torch.Tensor, R: int, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Per network and target, ``mean_n o_nk (y_k - z_k)^2``: ``[S R, K]`` (``z`` is
    ``[S, n, K]``; ``o = mask``, all ones by default)."""
    y = net(x)
    zz = z[:, None].expand(z.shape[0], R, *z.shape[1:]).reshape(y.shape)
    err = (y - zz) ** 2
    return (err if mask is None else err * mask).mean(dim=1)


def _dot(a: list[torch.Tensor], b: list[torch.Tensor]) -> torch.Tensor:
    return cast(torch.Tensor, sum((x * y).flatten(1).sum(1) for x, y in zip(a, b)))


def grad_of(p: torch.Tensor) -> torch.Tensor:
    """``p.grad``, which a backward pass has set."""
    if p.grad is None:
        raise RuntimeError(
            f"a parameter of shape {tuple(p.shape)} has no gradient: no backward pass reached it"
        )
    return p.grad


def _expand(c: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return c.reshape(-1, *([1] * (like.dim() - 1)))


def per_task_gradients(net: Net, losses: torch.Tensor, w: torch.Tensor) -> list[list[torch.Tensor]]:
    """``g_k = grad of sum_b w_bk L_bk`` for each target ``k`` (lists over parameters)."""
    params = list(net.parameters())
    K = losses.shape[1]
    return [
        list(
            torch.autograd.grad(
                (w[:, k] * losses[:, k]).sum(), params, retain_graph=k < K - 1, allow_unused=False
            )
        )
        for k in range(K)
    ]


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
        if self.cross is None or self.sq is None:
            raise ValueError("no formation step was recorded: no cancellation to report")
        return -self.cross / np.maximum(self.sq, 1e-300)


def encoder_v_means(c: Cohort) -> np.ndarray:
    out = []
    for layer in c.net.encoder:
        assert isinstance(layer, _Layer)
        v = [
            c.opt.state[p]["exp_avg_sq"] if c.opt.state.get(p) else torch.zeros_like(p)
            for p in (layer.weight, layer.bias)
        ]
        tot = cast(torch.Tensor, sum(t.double().flatten(1).sum(1) for t in v))
        out.append((tot / sum(t[0].numel() for t in v)).numpy())
    return np.stack(out)


def train(
    c: Cohort,
    world: World,
    gen: torch.Generator,
    steps: int,
    batch: int,
    record: FormationRecord | None = None,
) -> None:
    """``steps`` Adam steps of every variant on fresh batches (the same draw for all variants
    of a seed). Per-task gradients are formed when a record is kept or a variant projects."""
    gains, observe, per_step = c.gains(), c.observe(), c.per_step()
    proj = torch.tensor([v.projected for v in c.variants]).repeat(c.seeds)
    per_task = record is not None or bool(proj.any())
    n_enc = 4
    for t in range(steps):
        z, xi = world.sample(gen, batch)
        mask = label_mask(gen, c.seeds, batch, observe, per_step)
        losses = task_losses(c.net, world.inputs(z, xi, gains), z, c.R, mask)
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
                p.grad = cast(torch.Tensor, sum(g[i] for g in grads))
        c.opt.step()
        if record is not None and (t + 1) % record.every == 0:
            record.v_mean.append(encoder_v_means(c))


def _accumulate(record: FormationRecord, grads: list[list[torch.Tensor]], n_enc: int) -> None:
    K = len(grads)
    enc = [g[:n_enc] for g in grads]
    sq = cast(torch.Tensor, sum(_dot(e, e) for e in enc)).double().numpy()
    total = sum(_dot(enc[j], enc[k]) for j in range(K) for k in range(K) if j != k)
    cross = total.double().numpy() if isinstance(total, torch.Tensor) else np.zeros_like(sq)
    record.sq = sq if record.sq is None else record.sq + sq
    record.cross = cross if record.cross is None else record.cross + cross


@dataclass
class EvalDraw:
    """A stage's fixed evaluation draw ``(z, xi)`` and the held-out draw the probe is fitted on."""

    z: torch.Tensor
    xi: torch.Tensor
    z_fit: torch.Tensor
    xi_fit: torch.Tensor

    @classmethod
    def draw(cls, world: World, gen: torch.Generator, n: int) -> EvalDraw:
        z_fit, xi_fit = world.sample(gen, n)
        z, xi = world.sample(gen, n)
        return cls(z, xi, z_fit, xi_fit)


def _expanded(z: torch.Tensor, R: int) -> torch.Tensor:
    return z[:, None].expand(z.shape[0], R, *z.shape[1:]).reshape(-1, *z.shape[1:])


@torch.no_grad()
def readouts(
    net: Net, world: World, ev: EvalDraw, gains: torch.Tensor, R: int
) -> dict[str, torch.Tensor]:
    r"""Readout precision ``r_k = 1 - mean_n (yhat_k - z_k)^2 / Var z_k`` (``Var z_k = 1``) per
    network and target (``[S R, K]``) on the evaluation draw seen with ``gains [R, K]``, under
    both readouts: ``heads`` (``yhat`` the network's output) and ``probe`` (``yhat = [h, 1] B``
    with ``B`` the least-squares fit of ``z`` on the representation ``h`` and a constant, fitted
    per network on the held-out draw ``(z_fit, xi_fit)``; ridge `PROBE_RIDGE` times the
    mean squared entry of ``[h, 1]``)."""
    x = world.inputs(ev.z, ev.xi, gains)
    h = net.represent(x)
    z = _expanded(ev.z, R)
    heads = 1.0 - ((net.heads(h) - z) ** 2).mean(dim=1)
    hf = net.represent(world.inputs(ev.z_fit, ev.xi_fit, gains)).double()
    one = torch.ones(*hf.shape[:2], 1, dtype=hf.dtype)
    A = torch.cat([hf, one], dim=2)
    G = A.transpose(1, 2) @ A
    lam = PROBE_RIDGE * G.diagonal(dim1=1, dim2=2).mean(1) + 1e-300
    G = G + lam[:, None, None] * torch.eye(G.shape[1], dtype=G.dtype)
    B = torch.linalg.solve(G, A.transpose(1, 2) @ _expanded(ev.z_fit, R).double())
    Ae = torch.cat([h.double(), torch.ones(*h.shape[:2], 1, dtype=torch.float64)], dim=2)
    probe = 1.0 - ((Ae @ B - z.double()) ** 2).mean(dim=1)
    return {"heads": heads, "probe": probe.float()}
