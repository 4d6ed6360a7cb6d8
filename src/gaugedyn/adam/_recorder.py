"""A recorder of the update decomposition for a live ``torch.optim.Adam`` / ``AdamW``."""

from __future__ import annotations

import numpy as np
import torch

from .._errors import InputError
from ._decomposition import PARTS, bias_corrections, shares, split_update

NORM_NAMES: tuple[str, ...] = (*PARTS, "residual", "update")
SAMPLE_FIELDS: tuple[str, ...] = ("grad", "m", "v", "w", *PARTS, "update", "param")


class AdamRecorder:
    r"""Records, per optimizer step and parameter group, the split of Adam's update.

    Attaches step pre/post hooks to an existing ``torch.optim.Adam`` or ``AdamW`` and reads the
    optimizer's own state ``(m_t, v_t, t)``; it keeps one extra tensor per parameter, the first
    moment with the second moment's memory ``w_t = b2 w_{t-1} + (1-b2) g_t`` (none when
    ``b1 == b2``: then ``w`` *is* ``m`` and the lag part is exactly zero). The effective gradient
    ``g_t`` includes coupled weight decay, ``maximize`` and the fused path's ``grad_scale``.
    A step whose state counter did not advance (an AMP ``GradScaler`` skip) is not recorded and
    leaves ``w`` unchanged.

    Per recorded step and group: the Euclidean norms of the parts
    ``sign, lag, transition, ratio, eps``, of ``residual = transition + ratio + eps`` and of the
    update ``u = m^/(sqrt(v^)+eps)``, plus the fraction of coordinates in transition. With
    ``sample > 0`` it also records, at a fixed random sample of coordinates per group, the
    gradient, ``m``, ``v``, ``w``, the parts, the update and the parameter after the step.

    ``compile=True`` computes the aggregates in one fused ``torch.compile`` kernel per parameter
    (one pass over memory instead of about twenty; needs a working inductor backend and pays a
    one-off compilation). ``every = k`` computes the aggregates only at steps ``t`` divisible by ``k`` (``w`` is still
    updated every step). Closures that compute gradients inside ``step(closure)`` are not seen by
    the pre-hook and are not supported. Attach before the first step for exact ``w``; attached later, ``w`` starts from ``m`` (noted in
    ``metadata()['attached_at_step']``).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, *, sample: int = 0, seed: int = 0,
                 every: int = 1, compile: bool = False):
        if not isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
            raise InputError(
                f"optimizer={type(optimizer).__name__} is not allowed; use torch.optim.Adam or AdamW"
            )
        if int(every) < 1:
            raise InputError(f"every={every!r} is not allowed; use an integer >= 1")
        if int(sample) < 0:
            raise InputError(f"sample={sample!r} is not allowed; use an integer >= 0")
        for g in optimizer.param_groups:
            if g.get("amsgrad", False):
                raise InputError("amsgrad=True is not allowed; the decomposition assumes v^ itself")
        self.optimizer = optimizer
        self.sample = int(sample)
        self.every = int(every)
        self.compile = bool(compile)
        self._seed = int(seed)
        self._w: dict[torch.Tensor, torch.Tensor] = {}
        self._g: dict[torch.Tensor, torch.Tensor] = {}
        self._prev: dict[torch.Tensor, int] = {}
        self._buffers: dict = {}
        self._sample_idx: list[list[tuple[torch.Tensor, torch.Tensor, np.ndarray]]] | None = None
        self._steps: list[int] = []
        self._norms: list[np.ndarray] = []
        self._trans: list[np.ndarray] = []
        self._samples: list[dict[str, np.ndarray]] = []
        self._counts = np.array([sum(p.numel() for p in g["params"]) for g in optimizer.param_groups])
        self.skipped = 0
        self.attached_at_step = self._max_step()
        self._handles = [
            optimizer.register_step_pre_hook(self._pre),
            optimizer.register_step_post_hook(self._post),
        ]

    def _scratch(self, like: torch.Tensor) -> list[torch.Tensor]:
        key = (like.device, like.dtype)
        bufs = self._buffers.get(key)
        if bufs is None:
            bufs = [torch.empty(_CHUNK, device=like.device, dtype=like.dtype) for _ in range(5)]
            self._buffers[key] = bufs
        return bufs

    def _max_step(self) -> int:
        steps = [int(st["step"]) for st in self.optimizer.state.values() if "step" in st]
        return max(steps, default=0)

    def detach(self) -> None:
        """Remove the hooks and release the extra state."""
        for h in self._handles:
            h.remove()
        self._handles = []
        self._w.clear()
        self._g.clear()
        self._buffers.clear()

    @staticmethod
    def _decoupled(optimizer, group) -> bool:
        return bool(group.get("decoupled_weight_decay", isinstance(optimizer, torch.optim.AdamW)))

    @torch.no_grad()
    def _pre(self, optimizer, args, kwargs):
        self._g.clear()
        scale = getattr(optimizer, "grad_scale", None)
        for group in optimizer.param_groups:
            wd = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group.get("maximize", False):
                    g = -g
                if group.get("fused") and scale is not None:
                    g = g / scale.to(g.device)
                if wd != 0 and not self._decoupled(optimizer, group):
                    g = g.add(p, alpha=wd)
                self._g[p] = g
                st = optimizer.state.get(p, {})
                self._prev[p] = int(st["step"]) if "step" in st else 0
        return None

    def _init_samples(self) -> None:
        rng = np.random.default_rng(self._seed)
        out = []
        for group in self.optimizer.param_groups:
            sizes = np.array([p.numel() for p in group["params"]])
            total = int(sizes.sum())
            k = min(self.sample, total)
            flat = np.sort(rng.choice(total, size=k, replace=False)) if k else np.zeros(0, int)
            offsets = np.concatenate([[0], np.cumsum(sizes)])
            per = []
            for i, p in enumerate(group["params"]):
                sel = flat[(flat >= offsets[i]) & (flat < offsets[i + 1])] - offsets[i]
                if sel.size:
                    per.append((p, torch.as_tensor(sel, device=p.device), sel))
            out.append(per)
        self._sample_idx = out

    @torch.no_grad()
    def _post(self, optimizer, args, kwargs):
        if self.sample and self._sample_idx is None:
            self._init_samples()
        n_groups = len(optimizer.param_groups)
        recorded = advanced = False
        trans = np.zeros(n_groups)
        samp = {f: [[] for _ in range(n_groups)] for f in SAMPLE_FIELDS} if self.sample else None
        step_seen = 0
        rows = []
        for gi, group in enumerate(optimizer.param_groups):
            b1, b2 = group["betas"]
            b1, b2 = float(b1), float(b2)
            eps = float(group["eps"])
            sq = None
            for p in group["params"]:
                g = self._g.get(p)
                st = optimizer.state.get(p)
                if g is None or not st or "step" not in st:
                    continue
                step = int(st["step"])
                if step == self._prev.get(p, 0):
                    continue
                m, v = st["exp_avg"], st["exp_avg_sq"]
                if b1 == b2:
                    w = m
                else:
                    w = self._w.get(p)
                    if w is None:
                        w = m.clone() if step > 1 else torch.zeros_like(m)
                        if step > 1:
                            bc1, bc2, _ = bias_corrections(step - 1, b1, b2)
                            w.mul_(bc2 / bc1)
                        self._w[p] = w
                    w.lerp_(g.to(w.dtype), 1 - b2)
                advanced = True
                if step % self.every:
                    continue
                bc1, bc2, bc2_sqrt = bias_corrections(step, b1, b2)
                if self.compile:
                    row = _fused_norms_squared(m, v, w, g, bc1, bc2, bc2_sqrt, eps, w is m)
                else:
                    row = _norms_squared(m, v, w, g, bc1, bc2, bc2_sqrt, eps, w is m,
                                         self._scratch(m))
                sq = row if sq is None else sq + row.to(sq.device)
                recorded = True
                step_seen = max(step_seen, step)
                if samp is not None:
                    for q, idx, _ in self._sample_idx[gi]:
                        if q is p:
                            _sample_into(samp, gi, idx, g, m, v, w, p, bc1, bc2, bc2_sqrt, eps)
            rows.append(sq)
        self._g.clear()
        if not recorded:
            self.skipped += not advanced
            return
        norms = np.zeros((n_groups, len(NORM_NAMES)))
        for gi, sq in enumerate(rows):
            if sq is not None:
                row = sq.double().cpu().numpy()
                norms[gi] = np.sqrt(row[: len(NORM_NAMES)])
                t2, t1 = row[len(NORM_NAMES):]  # sum t^2 = n1 + 4 n2, sum |t| = n1 + 2 n2
                trans[gi] = (t1 - (t2 - t1) / 2) / max(int(self._counts[gi]), 1)
        self._steps.append(step_seen)
        self._norms.append(norms)
        self._trans.append(trans)
        if samp is not None:
            self._samples.append(
                {f: [torch.cat(x).numpy() if x else np.zeros(0) for x in samp[f]]
                 for f in SAMPLE_FIELDS}
            )

    def __len__(self) -> int:
        return len(self._steps)

    def norms(self) -> np.ndarray:
        """Norms, shape ``(recorded steps, groups, len(NORM_NAMES))``."""
        if not self._norms:
            return np.zeros((0, len(self.optimizer.param_groups), len(NORM_NAMES)))
        return np.stack(self._norms)

    def shares(self, group: int | None = None) -> dict[str, np.ndarray]:
        """Sign, lag and residual shares per step (``share_k = |p_k| / sum_j |p_j|``).

        ``group=None`` pools the groups (norms combined in quadrature).
        """
        n = self.norms()
        n = np.sqrt((n**2).sum(axis=1)) if group is None else n[:, group]
        return shares({k: n[:, i] for i, k in enumerate(NORM_NAMES)})

    def export(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, metadata)`` ready for the result store.

        ``arrays``: ``step (S,)``, ``norms (S, G, 7)``, ``transition_frac (S, G)``,
        ``n_coords (G,)`` and, with sampling, ``sample_<field>_g<i> (S, K_i)``.
        """
        arrays = {
            "step": np.asarray(self._steps, dtype=np.int64),
            "norms": self.norms(),
            "transition_frac": np.stack(self._trans) if self._trans else np.zeros((0, 0)),
            "n_coords": self._counts.astype(np.int64),
        }
        if self._samples:
            for gi in range(len(self.optimizer.param_groups)):
                for f in SAMPLE_FIELDS:
                    arrays[f"sample_{f}_g{gi}"] = np.stack([s[f][gi] for s in self._samples])
        return arrays, self.metadata()

    def metadata(self) -> dict:
        from .._meta import versions

        groups = [
            {
                "betas": [float(b) for b in g["betas"]],
                "eps": float(g["eps"]),
                "lr": float(g["lr"]) if not torch.is_tensor(g["lr"]) else float(g["lr"].item()),
                "weight_decay": float(g["weight_decay"]),
                "decoupled_weight_decay": self._decoupled(self.optimizer, g),
                "foreach": g.get("foreach"),
                "fused": g.get("fused"),
                "maximize": bool(g.get("maximize", False)),
            }
            for g in self.optimizer.param_groups
        ]
        return {
            "optimizer": type(self.optimizer).__name__,
            "groups": groups,
            "norm_names": list(NORM_NAMES),
            "sample_fields": list(SAMPLE_FIELDS) if self.sample else [],
            "sample": self.sample,
            "every": self.every,
            "compile": self.compile,
            "skipped_steps": self.skipped,
            "attached_at_step": self.attached_at_step,
            "definitions": {
                "update": "u = m^/(sqrt(v^)+eps), m^ = m/(1-b1^t), v^ = v/(1-b2^t) (torch.optim.Adam)",
                "w": "w_t = b2 w_{t-1} + (1-b2) g_t, w^ = w/(1-b2^t); w = m when b1 == b2",
                "sign": "sign(g_t)",
                "lag": "(m^ - w^)/(sqrt(v^)+eps)",
                "transition": "sign(w^) - sign(g_t)",
                "ratio": "w^/sqrt(v^) - sign(w^)",
                "eps": "-eps w^/(sqrt(v^)(sqrt(v^)+eps))",
                "residual": "transition + ratio + eps",
                "share": "|p_k|_2 / (|sign|_2 + |lag|_2 + |residual|_2)",
                "transition_frac": "fraction of coordinates with transition != 0",
            },
            "versions": versions(),
        }


def _norms_squared(m, v, w, g, bc1, bc2, bc2_sqrt, eps, tied, buf) -> torch.Tensor:
    """Squared norms of the parts (order ``NORM_NAMES``), then ``sum t^2``, ``sum |t|`` of the
    transition part ``t``; in place in five chunk-sized scratch buffers (no allocation of parameter size).

    ``s`` is clamped to the smallest normal number where it is zero: there ``w = 0``, so the
    ratio and eps parts are 0 and the residual is ``-sign g``, as in :func:`split_update`.
    """
    m, v, w, g = (x.reshape(-1) for x in (m, v, w, g))
    n = m.numel()
    total = None
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        part = _chunk_sums(m[lo:hi], v[lo:hi], w[lo:hi] if not tied else None, g[lo:hi],
                           bc1, bc2, bc2_sqrt, eps, [b[: hi - lo] for b in buf])
        total = part if total is None else total + part
    return total


_CHUNK = 1 << 18


def _chunk_sums(m, v, w, g, bc1, bc2, bc2_sqrt, eps, buf) -> torch.Tensor:
    # A = c s, B = c d with c = sqrt(1 - b2^t): the bias correction is folded into scalars
    A, B, C, D, E = buf
    c = bc2_sqrt
    dot = torch.dot
    tied = w is None
    if tied:
        w = m
    torch.clamp(v, min=torch.finfo(A.dtype).tiny, out=A).rsqrt_()  # 1 / (c s); rsqrt is cheap
    torch.mul(v, A, out=B).add_(eps * c).reciprocal_()  # 1 / (c d)
    torch.mul(m, B, out=C)  # update * bc1 / c
    u2 = dot(C, C) * (c / bc1) ** 2
    if tied:
        lag2 = torch.zeros_like(u2)
    else:
        C.addcmul_(w, B, value=-bc1 / bc2)  # lag * bc1 / c
        lag2 = dot(C, C) * (c / bc1) ** 2
    torch.sign(w, out=D)
    torch.sign(g, out=E)
    s2 = dot(E, E)
    torch.mul(w, B, out=C).sub_(E, alpha=bc2 / c)  # residual * bc2 / c
    r2 = dot(C, C) * (c / bc2) ** 2
    torch.mul(w, A, out=C).sub_(D, alpha=bc2 / c)  # ratio * bc2 / c
    q2 = dot(C, C) * (c / bc2) ** 2
    torch.mul(w, A, out=C).mul_(B)  # eps part * -bc2 / (eps c^2)
    e2 = dot(C, C) * (eps * c * c / bc2) ** 2
    torch.sub(D, E, out=C)  # transition
    t2 = dot(C, C)
    t1 = C.abs_().sum()
    return torch.stack([s2, lag2, t2, q2, e2, r2, u2, t2, t1])


def _sums_expr(m, v, w, g, k):
    bc1, bc2, c, eps = k[0], k[1], k[2], k[3]
    A = torch.rsqrt(torch.clamp(v, min=torch.finfo(v.dtype).tiny))
    B = 1.0 / (v * A + eps * c)
    U = m * B * (c / bc1)
    L = (m * B - (bc1 / bc2) * (w * B)) * (c / bc1)
    sw, sg = torch.sign(w), torch.sign(g)
    R = (c / bc2) * (w * B) - sg
    Q = (c / bc2) * (w * A) - sw
    E = (eps * c * c / bc2) * (w * A * B)
    T = sw - sg
    t2 = (T * T).sum()
    return torch.stack([(sg * sg).sum(), (L * L).sum(), t2, (Q * Q).sum(), (E * E).sum(),
                        (R * R).sum(), (U * U).sum(), t2, T.abs().sum()])


_COMPILED = None


def _fused_norms_squared(m, v, w, g, bc1, bc2, bc2_sqrt, eps, tied) -> torch.Tensor:
    """As :func:`_norms_squared`, in one compiled kernel (scalars passed as a tensor so the
    kernel is compiled once per dtype/device, not once per step)."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = torch.compile(_sums_expr, dynamic=True)
    k = torch.tensor([bc1, bc2, bc2_sqrt, eps], dtype=m.dtype, device=m.device)
    out = _COMPILED(m.reshape(-1), v.reshape(-1), w.reshape(-1), g.reshape(-1), k)
    if tied:
        out[1] = 0.0
    return out


def _sample_into(samp, gi, idx, g, m, v, w, p, bc1, bc2, bc2_sqrt, eps) -> None:
    vals = {k: x.reshape(-1)[idx].double() for k, x in
            (("grad", g), ("m", m), ("v", v), ("w", w), ("param", p))}
    m_hat = vals["m"] / bc1
    w_hat = m_hat if w is m else vals["w"] / bc2
    parts = split_update(m_hat, w_hat, vals["v"].sqrt() / bc2_sqrt, vals["grad"], eps)
    vals.update(parts.as_dict())
    for f in SAMPLE_FIELDS:
        samp[f][gi].append(vals[f].cpu())
