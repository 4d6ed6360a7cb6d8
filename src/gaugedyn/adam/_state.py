r"""Adam state surgery: read, write, exchange, reset and rescale the moments of a live optimizer.

Pure functions over a ``torch.optim.Adam`` or ``AdamW`` (single-tensor, ``foreach`` and
``fused`` paths alike: they all keep, per parameter ``p``, ``state[p] = {"step", "exp_avg",
"exp_avg_sq"}``), with parameters selected by name or glob over ``model.named_parameters()``.
Torch's update at step ``t`` (counted after the increment) is

.. math::

    m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t,\quad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2,\quad
    \hat m = m_t/(1-\beta_1^t),\quad \hat v = v_t/(1-\beta_2^t),\quad
    p \leftarrow p - \eta\,\hat m/(\sqrt{\hat v}+\epsilon).

Every operation writes in place (the tensors keep their identity, so ``foreach``/``fused``
kernels, ``AdamRecorder`` hooks and any other reference stay valid) and returns a
:class:`StateRecord` naming the tensors it changed with their norms before and after, for result
metadata. ``batch_dims = k`` treats the first ``k`` axes of every tensor as a batch of independent
models (many seeds trained as one program): means, norms and scales are then taken per batch
element, over the remaining axes of the selection.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .._errors import InputError

COMPONENTS = {"m": ("exp_avg",), "v": ("exp_avg_sq",), "both": ("exp_avg", "exp_avg_sq")}
"""Component names accepted by the toolkit and the optimizer-state keys they stand for."""

PER = ("tensor", "layer", "selection")
"""Groupings for scalarisation and scale equalisation: each tensor, each layer (the parameter
name up to its last dot: ``enc.0.weight`` and ``enc.0.bias`` form layer ``enc.0``), or the
whole selection at once."""

Names = str | Sequence[str] | None


@dataclass
class StateRecord:
    """What one operation changed: its name, the component, and per tensor the norms before and
    after (Euclidean norm over the whole tensor, batch included), plus operation details."""

    operation: str
    component: str = ""
    entries: list[dict] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def add(self, name: str, key: str, before: torch.Tensor, after: torch.Tensor) -> None:
        self.entries.append({"name": name, "tensor": key,
                             "norm_before": float(before.double().norm()),
                             "norm_after": float(after.double().norm())})

    def to_dict(self) -> dict:
        return {"operation": self.operation, "component": self.component,
                "entries": list(self.entries), "details": dict(self.details)}


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
        raise InputError(f"optimizer={type(optimizer).__name__} is not allowed; "
                         "use torch.optim.Adam or torch.optim.AdamW")


def select(model: torch.nn.Module, names: Names = None) -> list[tuple[str, torch.nn.Parameter]]:
    """``(name, parameter)`` pairs of ``model`` whose name matches one of ``names`` (exact names
    or ``fnmatch`` globs such as ``"encoder.0.*"``), in ``named_parameters()`` order;
    ``None`` selects all. A pattern that matches nothing is an :class:`InputError`."""
    pairs = list(model.named_parameters())
    if names is None:
        return pairs
    patterns = [names] if isinstance(names, str) else list(names)
    chosen = []
    for pat in patterns:
        if not any(fnmatch.fnmatchcase(n, pat) for n, _ in pairs):
            raise InputError(f"names={pat!r} matches no parameter; allowed: one of "
                             f"{', '.join(n for n, _ in pairs)} or a glob over them")
    for n, p in pairs:
        if any(fnmatch.fnmatchcase(n, pat) for pat in patterns):
            chosen.append((n, p))
    return chosen


def _state(optimizer, name: str, p: torch.Tensor) -> dict:
    st = optimizer.state.get(p)
    if not st or "exp_avg" not in st:
        raise InputError(f"parameter {name!r} has no Adam state yet; take one optimizer step "
                         "before operating on its state")
    return st


def _keys(component: str) -> tuple[str, ...]:
    if component not in COMPONENTS:
        raise InputError(f"component={component!r} is not allowed; allowed: one of "
                         f"{', '.join(COMPONENTS)}")
    return COMPONENTS[component]


def _group_of(optimizer, p: torch.Tensor) -> dict:
    for g in optimizer.param_groups:
        if any(q is p for q in g["params"]):
            return g
    raise InputError("a selected parameter is not managed by this optimizer")


def snapshot(optimizer: torch.optim.Optimizer, model: torch.nn.Module,
             names: Names = None, *, weights: bool = True) -> dict[str, dict[str, torch.Tensor]]:
    """A deep copy of the selected parameters' state: ``{name: {"step", "exp_avg",
    "exp_avg_sq", ["max_exp_avg_sq"], ["param"]}}`` (``param`` with ``weights=True``)."""
    _check_optimizer(optimizer)
    out = {}
    for n, p in select(model, names):
        st = _state(optimizer, n, p)
        out[n] = {k: v.detach().clone() for k, v in st.items() if torch.is_tensor(v)}
        if weights:
            out[n]["param"] = p.detach().clone()
    return out


@torch.no_grad()
def restore(optimizer: torch.optim.Optimizer, model: torch.nn.Module,
            snap: dict[str, dict[str, torch.Tensor]], names: Names = None) -> StateRecord:
    """Write a :func:`snapshot` back: every stored tensor (weights too, if stored) of the
    selected parameters is copied in place, so the next step is bit for bit the one the
    snapshotted optimizer would have taken."""
    _check_optimizer(optimizer)
    rec = StateRecord("restore", "all")
    for n, p in select(model, names):
        if n not in snap:
            raise InputError(f"snapshot has no entry {n!r}; it holds {', '.join(snap)}")
        st = _state(optimizer, n, p)
        for key, val in snap[n].items():
            dest = p if key == "param" else st[key]
            before = dest.detach().clone()
            dest.copy_(val)
            rec.add(n, key, before, dest)
    return rec


@torch.no_grad()
def transplant(optimizer: torch.optim.Optimizer, model: torch.nn.Module,
               snap: dict[str, dict[str, torch.Tensor]], component: str = "v",
               names: Names = None) -> StateRecord:
    """Copy one component (``m``, ``v`` or ``both``) from a :func:`snapshot` (of any optimizer
    with the same parameter names and shapes) into ``optimizer``; weights and step counts stay."""
    _check_optimizer(optimizer)
    rec = StateRecord("transplant", component)
    for n, p in select(model, names):
        if n not in snap:
            raise InputError(f"snapshot has no entry {n!r}; it holds {', '.join(snap)}")
        st = _state(optimizer, n, p)
        for key in _keys(component):
            before = st[key].clone()
            st[key].copy_(snap[n][key])
            rec.add(n, key, before, st[key])
    return rec


@torch.no_grad()
def exchange(opt_a: torch.optim.Optimizer, model_a: torch.nn.Module,
             opt_b: torch.optim.Optimizer, model_b: torch.nn.Module, component: str = "v",
             names: Names = None) -> StateRecord:
    """Swap a component between two optimizers, tensor by tensor (matched by name):
    ``m_a <-> m_b`` and/or ``v_a <-> v_b``. Weights and step counts stay, so each optimizer's
    next step uses its own bias correction ``1 - beta^t`` with the other's moments. The swap is
    an exact copy: exchanging twice restores both states bit for bit."""
    _check_optimizer(opt_a)
    _check_optimizer(opt_b)
    keys = _keys(component)
    other = dict(select(model_b, None))
    rec = StateRecord("exchange", component)
    for n, pa in select(model_a, names):
        if n not in other or other[n].shape != pa.shape:
            raise InputError(f"parameter {n!r} has no counterpart of shape {tuple(pa.shape)} "
                             "in the second model")
        sa, sb = _state(opt_a, n, pa), _state(opt_b, n, other[n])
        for key in keys:
            before = sa[key].clone()
            sa[key].copy_(sb[key])
            sb[key].copy_(before)
            rec.add(n, f"a.{key}", before, sa[key])
            rec.add(n, f"b.{key}", sa[key], sb[key])
    return rec


@torch.no_grad()
def reset(optimizer: torch.optim.Optimizer, model: torch.nn.Module, component: str = "both",
          names: Names = None) -> StateRecord:
    r"""Zero a component (``m``, ``v`` or ``both``) in place, keeping the step count ``t``.

    Bias-correction consequence: the next step has ``m = (1-\beta_1) g`` but divides by
    ``1-\beta_1^{t+1}`` (near 1 for large ``t``), so ``\hat m \approx (1-\beta_1) g`` instead of
    ``g`` (likewise ``\hat v \approx (1-\beta_2) g^2``): zeroed moments with a kept step count are
    under-corrected and rebuild over ``1/(1-\beta)`` steps. Resetting ``both`` and then the step
    (:func:`reset_step`) is exactly a fresh optimizer's next step.
    """
    _check_optimizer(optimizer)
    rec = StateRecord("reset", component)
    for n, p in select(model, names):
        st = _state(optimizer, n, p)
        for key in _keys(component) + (("max_exp_avg_sq",) if component != "m"
                                       and "max_exp_avg_sq" in st else ()):
            before = st[key].clone()
            st[key].zero_()
            rec.add(n, key, before, st[key])
    return rec


@torch.no_grad()
def reset_step(optimizer: torch.optim.Optimizer, model: torch.nn.Module, step: int = 0,
               names: Names = None) -> StateRecord:
    r"""Set the step count ``t`` to ``step`` (default 0), keeping the moments.

    Bias-correction consequence: the next step divides the kept moments by ``1-\beta^{step+1}``;
    with ``step = 0`` that is ``1-\beta_1 = 0.1`` and ``1-\beta_2 = 0.001`` for the defaults, so
    kept moments are over-corrected (``\hat m \approx m/(1-\beta_1)``): the first updates are
    larger, by up to ``\sqrt{1-\beta_2}/(1-\beta_1)`` in ratio, until ``\beta^t`` decays.
    """
    _check_optimizer(optimizer)
    if int(step) < 0:
        raise InputError(f"step={step!r} is not allowed; allowed: an integer >= 0")
    rec = StateRecord("reset_step", "step", details={"step": int(step)})
    for n, p in select(model, names):
        st = _state(optimizer, n, p)
        before = st["step"].clone()
        st["step"].fill_(int(step))
        rec.add(n, "step", before, st["step"])
    return rec


def _groups(pairs: list[tuple[str, torch.Tensor]], per: str) -> list[list[tuple[str, Any]]]:
    if per not in PER:
        raise InputError(f"per={per!r} is not allowed; allowed: one of {', '.join(PER)}")
    if per == "tensor":
        return [[pair] for pair in pairs]
    if per == "selection":
        return [pairs]
    layers: dict[str, list] = {}
    for n, p in pairs:
        layers.setdefault(n.rpartition(".")[0], []).append((n, p))
    return list(layers.values())


def _batch_sum(x: torch.Tensor, batch_dims: int) -> torch.Tensor:
    """Sum over the non-batch axes, keeping them as size-1 axes for broadcasting."""
    dims = tuple(range(batch_dims, x.dim()))
    return x.sum(dim=dims, keepdim=True) if dims else x


def _reduce_shape(x: torch.Tensor, batch_dims: int) -> torch.Tensor:
    return x.reshape(x.shape[:batch_dims]) if x.dim() >= batch_dims else x


def _group_mean(tensors: Iterable[torch.Tensor], batch_dims: int) -> torch.Tensor:
    """Per batch element, the float64 mean over every coordinate of ``tensors``."""
    tot, cnt = 0.0, 0
    for t in tensors:
        tot = tot + _reduce_shape(_batch_sum(t.double(), batch_dims), batch_dims)
        cnt += t[(0,) * batch_dims].numel() if batch_dims else t.numel()
    return tot / cnt


def _expand(value: torch.Tensor, like: torch.Tensor, batch_dims: int) -> torch.Tensor:
    return value.reshape(value.shape + (1,) * (like.dim() - batch_dims)).to(like.dtype)


@torch.no_grad()
def scalarise_v(optimizer: torch.optim.Optimizer, model: torch.nn.Module, names: Names = None,
                *, per: str = "tensor", batch_dims: int = 0) -> StateRecord:
    r"""Replace ``v`` by its mean within each group: ``v_i \leftarrow \bar v = \frac1n\sum_j v_j``
    (``per = "tensor"``, ``"layer"`` or ``"selection"``; per batch element). The mean of ``v``
    over each group is kept (up to the rounding of ``\bar v`` itself, computed in float64); the
    coordinate pattern of ``v`` is removed, so only its scale is left."""
    _check_optimizer(optimizer)
    rec = StateRecord("scalarise_v", "v", details={"per": per, "batch_dims": int(batch_dims)})
    pairs = select(model, names)
    for group in _groups(pairs, per):
        states = [_state(optimizer, n, p) for n, p in group]
        mean = _group_mean((st["exp_avg_sq"] for st in states), batch_dims)
        for (n, _), st in zip(group, states):
            v = st["exp_avg_sq"]
            before = v.clone()
            v.copy_(_expand(mean, v, batch_dims).expand_as(v))
            rec.add(n, "exp_avg_sq", before, v)
    return rec


def _bias2(optimizer, p: torch.Tensor, st: dict) -> tuple[float, float]:
    g = _group_of(optimizer, p)
    b2 = float(g["betas"][1])
    return 1.0 - b2 ** float(st["step"]), float(g["eps"])


def mean_adaptive_scale(optimizer: torch.optim.Optimizer, model: torch.nn.Module,
                        names: Names = None, *, batch_dims: int = 0) -> torch.Tensor:
    r"""``\bar a_v = \mathrm{mean}_i\, 1/(\sqrt{\hat v_i} + \epsilon)`` over the selection, with
    ``\hat v = v/(1-\beta_2^t)``; a float64 tensor of the batch shape (a 0-d tensor without a
    batch)."""
    _check_optimizer(optimizer)
    terms = []
    for n, p in select(model, names):
        st = _state(optimizer, n, p)
        bc2, eps = _bias2(optimizer, p, st)
        terms.append(1.0 / ((st["exp_avg_sq"].double() / bc2).sqrt() + eps))
    return _group_mean(terms, batch_dims)


def _scale_for(vhat: list[torch.Tensor], eps: list[float], target: torch.Tensor,
               batch_dims: int, iters: int = 200) -> torch.Tensor:
    r"""Per batch element the ``c > 0`` with ``mean 1/(c \sqrt{\hat v} + \epsilon) = target``
    (bisection in ``log c``; the left side decreases strictly in ``c``)."""
    root = [v.sqrt() for v in vhat]
    lo = torch.full_like(target, -60.0)
    hi = torch.full_like(target, 60.0)
    for _ in range(iters):
        mid = (lo + hi) / 2
        c = mid.exp()
        a = _group_mean([1.0 / (_expand(c, r, batch_dims) * r + e) for r, e in zip(root, eps)],
                        batch_dims)
        too_big = a > target
        lo = torch.where(too_big, mid, lo)
        hi = torch.where(too_big, hi, mid)
    return ((lo + hi) / 2).exp()


@torch.no_grad()
def equalise_adaptive_scale(opt_a: torch.optim.Optimizer, model_a: torch.nn.Module,
                            opt_b: torch.optim.Optimizer, model_b: torch.nn.Module,
                            names: Names = None, *, batch_dims: int = 0) -> StateRecord:
    r"""Rescale ``v`` of both states so both have the same mean adaptive scale
    ``\bar a_v = \mathrm{mean}\,1/(\sqrt{\hat v}+\epsilon)`` over the selection, equal to the
    arithmetic mean of the two: ``v \leftarrow c^2 v`` with ``c`` solving
    ``\mathrm{mean}\,1/(c\sqrt{\hat v}+\epsilon) = (\bar a_v^A + \bar a_v^B)/2`` per state and batch
    element (exact up to the bisection, to float64 rounding). The pattern of ``v`` (ratios between
    coordinates) is kept; only its scale moves."""
    targets = [mean_adaptive_scale(o, m, names, batch_dims=batch_dims)
               for o, m in ((opt_a, model_a), (opt_b, model_b))]
    target = (targets[0] + targets[1]) / 2
    rec = StateRecord("equalise_adaptive_scale", "v",
                      details={"a_v_before": [t.flatten().tolist() for t in targets],
                               "a_v_target": target.flatten().tolist(),
                               "batch_dims": int(batch_dims)})
    for tag, opt, model in (("a", opt_a, model_a), ("b", opt_b, model_b)):
        pairs = select(model, names)
        states = [_state(opt, n, p) for n, p in pairs]
        info = [_bias2(opt, p, st) for (_, p), st in zip(pairs, states)]
        vhat = [st["exp_avg_sq"].double() / bc2 for st, (bc2, _) in zip(states, info)]
        c = _scale_for(vhat, [e for _, e in info], target, batch_dims)
        for (n, _), st in zip(pairs, states):
            v = st["exp_avg_sq"]
            before = v.clone()
            v.mul_(_expand(c * c, v, batch_dims))
            rec.add(n, f"{tag}.exp_avg_sq", before, v)
    return rec


def weights(model: torch.nn.Module, names: Names = None) -> dict[str, torch.Tensor]:
    """Copies of the selected parameters, the ``before`` of :func:`update_norm` and
    :func:`rescale_update`."""
    return {n: p.detach().clone() for n, p in select(model, names)}


def update_norm(model: torch.nn.Module, before: dict[str, torch.Tensor], names: Names = None,
                *, batch_dims: int = 0) -> torch.Tensor:
    r"""``\|\Delta\| = \sqrt{\sum_i (p_i - p_i^{before})^2}`` over the selection, per batch
    element (float64)."""
    sq = [(p.detach().double() - before[n].double()) ** 2 for n, p in select(model, names)]
    return (_group_mean(sq, batch_dims) * _numel(sq, batch_dims)).sqrt()


def _numel(tensors: list[torch.Tensor], batch_dims: int) -> int:
    return sum(t[(0,) * batch_dims].numel() if batch_dims else t.numel() for t in tensors)


@torch.no_grad()
def rescale_update(model: torch.nn.Module, before: dict[str, torch.Tensor],
                   norm: float | torch.Tensor, names: Names = None, *,
                   batch_dims: int = 0) -> StateRecord:
    r"""Equal-movement control: rescale the update just taken to a stated norm,
    ``p \leftarrow p^{before} + \Delta\, \nu/\|\Delta\|`` with ``\Delta = p - p^{before}`` and
    ``\|\Delta\|`` over the selection per batch element (:func:`update_norm`); ``norm`` (``\nu``)
    is a number or a tensor of the batch shape. A zero update stays zero. The optimizer state is
    not touched: the moments still carry the gradient, only the movement is controlled."""
    now = update_norm(model, before, names, batch_dims=batch_dims)
    nu = torch.as_tensor(norm, dtype=torch.float64, device=now.device)
    factor = torch.where(now > 0, nu / now.clamp_min(1e-300), torch.zeros_like(now))
    rec = StateRecord("rescale_update", "weights",
                      details={"norm_before": now.flatten().tolist(),
                               "norm_target": nu.expand_as(now).flatten().tolist()})
    for n, p in select(model, names):
        delta = p.detach().double() - before[n].double()
        old = p.detach().clone()
        p.copy_((before[n].double() + delta * _expand(factor, p, batch_dims)).to(p.dtype))
        rec.add(n, "param", old, p)
    return rec
