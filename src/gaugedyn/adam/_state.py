r"""Adam state surgery: read, write, exchange, reset and rescale the moments of a live optimizer.

Pure functions over a ``torch.optim.Adam`` or ``AdamW`` (single-tensor, ``foreach`` and
``fused`` paths alike: they all keep, per parameter ``p``, ``state[p] = {"step", "exp_avg",
"exp_avg_sq"}``), with parameters selected by name or glob over ``model.named_parameters()``.
Torch's update at step ``t`` (counted after the increment) is

$$
m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t,\quad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2,\quad
\hat m = m_t/(1-\beta_1^t),\quad \hat v = v_t/(1-\beta_2^t),\quad
p \leftarrow p - \eta\,\hat m/(\sqrt{\hat v}+\epsilon).
$$

Every operation writes in place (the tensors keep their identity, so ``foreach``/``fused``
kernels, ``AdamRecorder`` hooks and any other reference stay valid) and returns a
`StateRecord` naming the tensors it changed with their norms before and after, for result
metadata. It also tells the recorders watching those parameters what it wrote
(`gaugedyn.adam.notify_state()`), so an ``AdamRecorder`` or ``GaugeRecorder`` on the same
optimizer moves or resets its own shadow state to match. ``batch_dims = k`` treats the first ``k`` axes of every tensor as a batch of independent
models (many seeds trained as one program): means, norms and scales are then taken per batch
element, over the remaining axes of the selection.

**Rows.** ``transplant``, ``exchange``, ``reset``, ``scalarise_v``, ``mean_adaptive_scale`` and
``equalise_adaptive_scale`` take ``rows``: a sequence of indices along axis 0 of every selected
tensor (the units of a layer: rows of a weight, entries of a bias), or a mapping
``{name: (axis, indices)}`` that selects per tensor (a unit's outgoing weights are a column,
``axis = 1``; `gaugedyn.gauge.unit_rows()` builds it for a unit of a model). Only those
entries are read and written. ``reset(..., rows=..., restart=True)`` gives the reset rows their
own step count: see `reset()`.

**Checks.** ``amsgrad``'s ``max_exp_avg_sq`` travels with ``v`` in every operation that moves
``v`` (exchange, transplant, reset, restore); ``scalarise_v`` and the adaptive-scale operations,
which are defined on ``v`` itself, refuse an ``amsgrad`` optimizer. Shapes must match exactly (no
broadcasting), and an operation that would spread a non-finite value over other coordinates
(a mean, a common scale) refuses non-finite state, before anything is written.
"""

from __future__ import annotations

import fnmatch
import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .._errors import InputError
from ._notify import StateChange, notify_state

COMPONENTS = {"m": ("exp_avg",), "v": ("exp_avg_sq",), "both": ("exp_avg", "exp_avg_sq")}
"""Component names accepted by the toolkit and the optimizer-state keys they stand for."""

PER = ("tensor", "layer", "selection")
"""Groupings for scalarisation and scale equalisation: each tensor, each layer (the parameter
name up to its last dot: ``enc.0.weight`` and ``enc.0.bias`` form layer ``enc.0``), or the
whole selection at once."""

Names = str | Sequence[str] | None
Rows = Sequence[int] | torch.Tensor | Mapping[str, tuple[int, Sequence[int]]] | None
_Spec = tuple[int, torch.Tensor] | None


@dataclass
class StateRecord:
    """What one operation changed: its name, the component, and per tensor the norms before and
    after (Euclidean norm over the whole tensor, batch included), plus operation details."""

    operation: str
    component: str = ""
    entries: list[dict] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def add(self, name: str, key: str, before: torch.Tensor, after: torch.Tensor) -> None:
        self.entries.append(
            {
                "name": name,
                "tensor": key,
                "norm_before": float(before.double().norm()),
                "norm_after": float(after.double().norm()),
            }
        )

    def to_dict(self) -> dict:
        return {
            "operation": self.operation,
            "component": self.component,
            "entries": list(self.entries),
            "details": dict(self.details),
        }


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
        raise InputError(
            f"optimizer={type(optimizer).__name__} is not allowed; "
            "use torch.optim.Adam or torch.optim.AdamW"
        )


def select(model: torch.nn.Module, names: Names = None) -> list[tuple[str, torch.nn.Parameter]]:
    """``(name, parameter)`` pairs of ``model`` whose name matches one of ``names``, in
    ``named_parameters()`` order.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose ``named_parameters()`` are selected from.
    names : str or Sequence[str] or None
        Exact names or ``fnmatch`` globs such as ``"encoder.0.*"``; ``None`` selects all.

    Returns
    -------
    list[tuple[str, torch.nn.Parameter]]
        The selected pairs.

    Raises
    ------
    InputError
        When a pattern matches no parameter.
    """
    pairs = list(model.named_parameters())
    if names is None:
        return pairs
    patterns = [names] if isinstance(names, str) else list(names)
    chosen = []
    for pat in patterns:
        if not any(fnmatch.fnmatchcase(n, pat) for n, _ in pairs):
            raise InputError(
                f"names={pat!r} matches no parameter; allowed: one of "
                f"{', '.join(n for n, _ in pairs)} or a glob over them"
            )
    for n, p in pairs:
        if any(fnmatch.fnmatchcase(n, pat) for pat in patterns):
            chosen.append((n, p))
    return chosen


def _state(optimizer, name: str, p: torch.Tensor) -> dict:
    if not any(q is p for g in optimizer.param_groups for q in g["params"]):
        raise InputError(
            f"parameter {name!r} is not managed by this optimizer (it is in none of its "
            "param_groups); pass the model whose parameters the optimizer was built with"
        )
    st = optimizer.state.get(p)
    if not st or "exp_avg" not in st:
        raise InputError(
            f"parameter {name!r} has no Adam state yet; take one optimizer step "
            "before operating on its state"
        )
    return st


def _refuse_bad_v(name: str, key: str, value: torch.Tensor) -> None:
    """A second moment written into an optimizer must not be negative (a negative ``v`` makes
    the next step's square root NaN)."""
    if key in ("exp_avg_sq", "max_exp_avg_sq") and bool((value < 0).any()):
        raise InputError(
            f"{name!r}.{key} holds negative entries (the smallest {float(value.min()):.3g}); "
            "allowed: a second moment, >= 0"
        )


def _tell(operation: str, entries: Iterable[tuple[torch.Tensor, tuple[str, ...], _Spec]]) -> None:
    """Tell the recorders watching these parameters what ``operation`` wrote."""
    notify_state([StateChange(p, tuple(keys), spec, None, operation) for p, keys, spec in entries])


def _keys(component: str) -> tuple[str, ...]:
    if component not in COMPONENTS:
        raise InputError(
            f"component={component!r} is not allowed; allowed: one of {', '.join(COMPONENTS)}"
        )
    return COMPONENTS[component]


def _group_of(optimizer, p: torch.Tensor) -> dict:
    for g in optimizer.param_groups:
        if any(q is p for q in g["params"]):
            return g
    raise InputError("a selected parameter is not managed by this optimizer")


def _row_specs(
    pairs: Sequence[tuple[str, torch.Tensor]], rows: Rows, batch_dims: int = 0
) -> tuple[list[tuple[str, torch.Tensor]], dict[str, _Spec]]:
    """The selected pairs restricted to ``rows`` (a mapping selects by name) and, per name, the
    ``(axis, indices)`` to read and write (``None``: the whole tensor)."""
    if rows is None:
        return list(pairs), {n: None for n, _ in pairs}
    names = [n for n, _ in pairs]
    raw: dict[str, tuple[int, Any]]
    if isinstance(rows, Mapping):
        unknown = [k for k in rows if k not in names]
        if unknown:
            raise InputError(
                f"rows names {unknown} are not allowed; allowed: the selected parameters {names}"
            )
        raw = {k: rows[k] for k in rows}
        pairs = [(n, p) for n, p in pairs if n in raw]
    else:
        raw = {n: (0, rows) for n in names}
    specs: dict[str, _Spec] = {}
    for n, p in pairs:
        try:
            axis, idx = _integer(raw[n][0]), _indices(raw[n][1])
        except (TypeError, ValueError, IndexError, RuntimeError) as err:
            raise InputError(
                f"rows[{n!r}]={raw[n]!r} is not allowed; allowed: (axis, indices) "
                "with an integer axis and integer indices"
            ) from err
        if not batch_dims <= axis < p.dim():
            raise InputError(
                f"rows axis={axis} for {n!r} is not allowed; allowed: "
                f"{batch_dims}..{p.dim() - 1} (shape {tuple(p.shape)})"
            )
        size = p.shape[axis]
        if idx.numel() == 0 or int(idx.min()) < 0 or int(idx.max()) >= size:
            raise InputError(
                f"rows for {n!r} are not allowed: indices must be non-empty and in "
                f"0..{size - 1} along axis {axis}"
            )
        if torch.unique(idx).numel() != idx.numel():
            raise InputError(f"rows for {n!r} are not allowed: repeated indices")
        specs[n] = (axis, idx)
    return list(pairs), specs


def _integer(value: Any) -> int:
    """``value`` as an int, refusing a float, a bool or anything else that is not an integer."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | torch.Tensor)
        and not (hasattr(value, "dtype") and "int" in str(value.dtype))
    ):
        raise TypeError(f"{value!r} is not an integer")
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.numel() != 1):
        raise TypeError(f"{value!r} is not an integer")
    return int(value)


def _indices(value: Any) -> torch.Tensor:
    """Integer indices as a 1-D long tensor; float, complex and boolean indices are refused
    (a float would be truncated: rows=[0.5] would touch row 0)."""
    idx = torch.as_tensor(value)
    if idx.numel() and (idx.dtype == torch.bool or idx.is_floating_point() or idx.is_complex()):
        raise TypeError(f"indices {value!r} are not integers")
    return idx.to(torch.long).reshape(-1)


def _get(t: torch.Tensor, spec: _Spec) -> torch.Tensor:
    return t if spec is None else t.index_select(spec[0], spec[1].to(t.device))


def _put(t: torch.Tensor, spec: _Spec, value: torch.Tensor) -> None:
    if value.shape != _get(t, spec).shape:
        raise InputError(
            f"shape {tuple(value.shape)} does not match the destination's "
            f"{tuple(_get(t, spec).shape)}; shapes must match exactly"
        )
    if spec is None:
        t.copy_(value)
    else:
        t.index_copy_(spec[0], spec[1].to(t.device), value.to(t.dtype))


def _with_max(keys: tuple[str, ...], st: dict) -> tuple[str, ...]:
    """``keys`` plus ``max_exp_avg_sq`` (amsgrad) wherever ``v`` is among them."""
    return keys + (("max_exp_avg_sq",) if "exp_avg_sq" in keys and "max_exp_avg_sq" in st else ())


def _refuse_amsgrad(optimizer, operation: str) -> None:
    if any(g.get("amsgrad", False) for g in optimizer.param_groups):
        raise InputError(
            f"amsgrad=True is not allowed for {operation}: the operation is defined "
            "on v, and amsgrad's denominator uses max_exp_avg_sq"
        )


def _refuse_nonfinite(name: str, key: str, t: torch.Tensor, operation: str) -> None:
    if not bool(torch.isfinite(t).all()):
        raise InputError(
            f"parameter {name!r} has non-finite {key}; {operation} would spread it "
            "over the other coordinates of its group"
        )


def snapshot(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    names: Names = None,
    *,
    weights: bool = True,
) -> dict[str, dict[str, torch.Tensor]]:
    """A deep copy of the selected parameters' state.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    weights : bool
        Also copy the parameters themselves (``"param"``).

    Returns
    -------
    dict[str, dict[str, torch.Tensor]]
        ``{name: {"step", "exp_avg", "exp_avg_sq", ["max_exp_avg_sq"], ["param"]}}``.

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet.
    """
    _check_optimizer(optimizer)
    out = {}
    for n, p in select(model, names):
        st = _state(optimizer, n, p)
        out[n] = {k: v.detach().clone() for k, v in st.items() if torch.is_tensor(v)}
        if weights:
            out[n]["param"] = p.detach().clone()
    return out


@torch.no_grad()
def restore(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    snap: dict[str, dict[str, torch.Tensor]],
    names: Names = None,
) -> StateRecord:
    """Write a `snapshot()` back: every stored tensor (weights too, if stored) of the
    selected parameters is copied in place, so the next step is bit for bit the one the
    snapshotted optimizer would have taken. Everything is checked before anything is written.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    snap : dict[str, dict[str, torch.Tensor]]
        A `snapshot()` holding every selected parameter.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or the snapshot lacks a selected name, holds a key this optimizer's state
        lacks, a tensor of another shape, or a negative second moment.
    """
    _check_optimizer(optimizer)
    rec = StateRecord("restore", "all")
    plan = []
    for n, p in select(model, names):
        if n not in snap:
            raise InputError(f"snapshot has no entry {n!r}; it holds {', '.join(snap)}")
        st = _state(optimizer, n, p)
        for key, val in snap[n].items():
            if key != "param" and key not in st:
                raise InputError(
                    f"snapshot entry {n!r} holds {key!r}, which this optimizer's "
                    "state lacks (amsgrad on one side only?)"
                )
            dest = p if key == "param" else st[key]
            if tuple(val.shape) != tuple(dest.shape):
                raise InputError(
                    f"snapshot {n!r}.{key} has shape {tuple(val.shape)}, the "
                    f"destination {tuple(dest.shape)}; shapes must match exactly"
                )
            _refuse_bad_v(f"snapshot {n}", key, val)
        plan.append((n, p, st))
    for n, p, st in plan:
        for key, val in snap[n].items():
            dest = p if key == "param" else st[key]
            before = dest.detach().clone()
            dest.copy_(val)
            rec.add(n, key, before, dest)
    _tell("restore", [(p, tuple(snap[n]), None) for n, p, _ in plan])
    return rec


@torch.no_grad()
def transplant(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    snap: dict[str, dict[str, torch.Tensor]],
    component: str = "v",
    names: Names = None,
    *,
    rows: Rows = None,
) -> StateRecord:
    """Copy one component from a `snapshot()` (of any optimizer with the same parameter names
    and exactly the same shapes) into ``optimizer``, whole tensors or the given ``rows`` (the
    same rows of the snapshot); weights and step counts stay.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    snap : dict[str, dict[str, torch.Tensor]]
        A `snapshot()` holding the component for every selected parameter.
    component : str
        ``"m"``, ``"v"`` or ``"both"`` (`COMPONENTS`); ``v`` brings amsgrad's
        ``max_exp_avg_sq``.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    rows : Sequence[int] or torch.Tensor or Mapping or None
        Indices along axis 0 of every selected tensor, or ``{name: (axis, indices)}`` per
        tensor (module doc); ``None``: whole tensors.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``rows`` names an unselected parameter, an axis out of range or indices that are
        empty, repeated, out of range or not integers, ``component`` is
        not one of `COMPONENTS`, or the snapshot lacks an entry or key, holds another shape
        or a negative second moment.
    """
    _check_optimizer(optimizer)
    rec = StateRecord("transplant", component)
    pairs, specs = _row_specs(select(model, names), rows)
    plan = []
    touched = []
    for n, p in pairs:
        if n not in snap:
            raise InputError(f"snapshot has no entry {n!r}; it holds {', '.join(snap)}")
        st = _state(optimizer, n, p)
        for key in _with_max(_keys(component), st):
            if key not in snap[n]:
                raise InputError(f"snapshot entry {n!r} has no {key!r} (amsgrad on one side only?)")
            if tuple(snap[n][key].shape) != tuple(st[key].shape):
                raise InputError(
                    f"snapshot {n!r}.{key} has shape {tuple(snap[n][key].shape)}, "
                    f"the optimizer's {tuple(st[key].shape)}; shapes must match "
                    "exactly"
                )
            value = _get(snap[n][key], specs[n])
            _refuse_bad_v(f"snapshot {n}", key, value)
            plan.append((n, key, st[key], value, specs[n]))
        touched.append((p, _with_max(_keys(component), st), specs[n]))
    for n, key, dest, val, spec in plan:
        before = _get(dest, spec).clone()
        _put(dest, spec, val)
        rec.add(n, key, before, _get(dest, spec))
    _tell("transplant", touched)
    return rec


@torch.no_grad()
def exchange(
    opt_a: torch.optim.Optimizer,
    model_a: torch.nn.Module,
    opt_b: torch.optim.Optimizer,
    model_b: torch.nn.Module,
    component: str = "v",
    names: Names = None,
    *,
    rows: Rows = None,
) -> StateRecord:
    r"""Swap a component between two optimizers, tensor by tensor (matched by name), whole or
    the given ``rows`` of both: ``m_a <-> m_b`` and/or ``v_a <-> v_b``. Weights and step
    counts stay, so each optimizer's next step uses its own bias correction $1 - \beta^t$ with
    the other's moments. The swap is an exact copy: exchanging twice restores both states bit
    for bit.

    Parameters
    ----------
    opt_a : torch.optim.Optimizer
        The first ``Adam``/``AdamW``.
    model_a : torch.nn.Module
        Its model; ``names`` selects from it.
    opt_b : torch.optim.Optimizer
        The second ``Adam``/``AdamW``.
    model_b : torch.nn.Module
        Its model, with a parameter of the same name and shape for each selected one.
    component : str
        ``"m"``, ``"v"`` or ``"both"`` (`COMPONENTS`); ``v`` brings amsgrad's
        ``max_exp_avg_sq``, which both must then have.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model_a.named_parameters()`` (`select()`);
        ``None``: every parameter.
    rows : Sequence[int] or torch.Tensor or Mapping or None
        Indices along axis 0 of every selected tensor, or ``{name: (axis, indices)}`` per
        tensor (module doc); ``None``: whole tensors.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When an optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``rows`` names an unselected parameter, an axis out of range or indices that are
        empty, repeated, out of range or not integers, ``component`` is
        not one of `COMPONENTS`, a parameter has no counterpart of its shape in ``model_b``,
        only one optimizer keeps ``max_exp_avg_sq``, or state shapes differ.
    """
    _check_optimizer(opt_a)
    _check_optimizer(opt_b)
    keys = _keys(component)
    other = dict(select(model_b, None))
    rec = StateRecord("exchange", component)
    pairs, specs = _row_specs(select(model_a, names), rows)
    plan = []
    touched: list[tuple[torch.Tensor, tuple[str, ...], _Spec]] = []
    for n, pa in pairs:
        if n not in other or other[n].shape != pa.shape:
            raise InputError(
                f"parameter {n!r} has no counterpart of shape {tuple(pa.shape)} in the second model"
            )
        sa, sb = _state(opt_a, n, pa), _state(opt_b, n, other[n])
        ka, kb = _with_max(keys, sa), _with_max(keys, sb)
        if ka != kb:
            raise InputError(
                f"parameter {n!r}: one optimizer keeps max_exp_avg_sq (amsgrad) "
                "and the other does not; exchange needs both or neither"
            )
        for key in ka:
            if sa[key].shape != sb[key].shape:
                raise InputError(
                    f"parameter {n!r}: {key} shapes {tuple(sa[key].shape)} and "
                    f"{tuple(sb[key].shape)} differ; shapes must match exactly"
                )
            plan.append((n, key, sa[key], sb[key], specs[n]))
        touched += [(pa, ka, specs[n]), (other[n], ka, specs[n])]
    for n, key, ta, tb, spec in plan:
        before = _get(ta, spec).clone()
        _put(ta, spec, _get(tb, spec))
        _put(tb, spec, before)
        rec.add(n, f"a.{key}", before, _get(ta, spec))
        rec.add(n, f"b.{key}", _get(ta, spec), _get(tb, spec))
    _tell("exchange", touched)
    return rec


@torch.no_grad()
def reset(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    component: str = "both",
    names: Names = None,
    *,
    rows: Rows = None,
    restart: bool = False,
) -> StateRecord:
    r"""Zero a component in place, whole tensors or the given ``rows``, keeping the step
    count ``t``.

    Bias-correction consequence: the next step has $m = (1-\beta_1) g$ but divides by
    $1-\beta_1^{t+1}$ (near 1 for large ``t``), so $\hat m \approx (1-\beta_1) g$ instead of
    ``g`` (likewise $\hat v \approx (1-\beta_2) g^2$): zeroed moments with a kept step count are
    under-corrected and rebuild over $1/(1-\beta)$ steps. Resetting ``both`` and then the step
    (`reset_step()`) is exactly a fresh optimizer's next step.

    With ``restart=True`` whole tensors get step count 0 (as `reset_step()`); reset ``rows``
    get their own step count ``s`` (steps since the reset), kept by the toolkit in step hooks
    on the optimizer: after each step it recomputes those rows' parameters as torch's Adam does
    with ``s`` in place of ``t``,
    $p = p_{before} - \eta\,\frac{m/(1-\beta_1^s)}{\sqrt{v/(1-\beta_2^s)} + \epsilon}$ (after
    AdamW's decay $p_{before}(1 - \eta\lambda)$; amsgrad's running maximum in place of ``v``),
    so each reset row follows a fresh optimizer's trajectory on that row exactly (to rounding).
    The rows are released once $1-\beta^s$ and $1-\beta^t$ are equal in float64. Steps
    skipped by a ``GradScaler`` (the count did not advance) are left alone.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    component : str
        ``"m"``, ``"v"`` or ``"both"`` (`COMPONENTS`); ``v`` brings amsgrad's
        ``max_exp_avg_sq``.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    rows : Sequence[int] or torch.Tensor or Mapping or None
        Indices along axis 0 of every selected tensor, or ``{name: (axis, indices)}`` per
        tensor (module doc); ``None``: whole tensors.
    restart : bool
        Make the reset entries start afresh (above); needs ``component="both"``.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``rows`` names an unselected parameter, an axis out of range or indices that are
        empty, repeated, out of range or not integers, ``component`` is
        not one of `COMPONENTS`, or ``restart=True`` with a component other than ``"both"``.
    """
    _check_optimizer(optimizer)
    if restart and component != "both":
        raise InputError(
            f"restart=True with component={component!r} is not allowed; a fresh "
            "start needs component='both'"
        )
    rec = StateRecord("reset", component, details={"restart": True} if restart else {})
    pairs, specs = _row_specs(select(model, names), rows)
    states = [(n, p, _state(optimizer, n, p)) for n, p in pairs]
    for n, p, st in states:
        for key in _with_max(_keys(component), st):
            before = _get(st[key], specs[n]).clone()
            _put(st[key], specs[n], torch.zeros_like(before))
            rec.add(n, key, before, _get(st[key], specs[n]))
        if restart:
            clock = _RowClock.of(optimizer)
            spec = specs[n]
            if spec is None:
                clock.forget(p)
                st["step"].fill_(0)
            else:
                clock.add(p, spec, float(st["step"]))
    if restart:
        rec.details["row_clock"] = any(specs[n] is not None for n, _, _ in states)
    _tell(
        "reset",
        [
            (p, _with_max(_keys(component), st) + (("step",) if restart else ()), specs[n])
            for n, p, st in states
        ],
    )
    return rec


class _RowClock:
    """Per-row step counts of one optimizer (see `reset()`), applied in step hooks."""

    _clocks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, optimizer) -> _RowClock:
        if optimizer not in cls._clocks:
            cls._clocks[optimizer] = cls(optimizer)
        return cls._clocks[optimizer]

    def __init__(self, optimizer):
        self.optimizer = weakref.ref(optimizer)
        self.rows: dict[int, tuple[torch.Tensor, list[list]]] = {}
        self.hooks = [
            optimizer.register_step_pre_hook(self._pre),
            optimizer.register_step_post_hook(self._post),
        ]
        # first among the post hooks, so a recorder attached earlier reads the rows' parameters
        # as the clock leaves them
        post = getattr(optimizer, "_optimizer_step_post_hooks", None)
        if hasattr(post, "move_to_end"):
            post.move_to_end(self.hooks[1].id, last=False)

    def steps(self, p: torch.Tensor, t: float) -> torch.Tensor | None:
        """Per entry of ``p`` its step count (``t``, or ``s`` on reset rows), float64; ``None``
        when no row of ``p`` keeps a count of its own."""
        entry = self.rows.get(id(p))
        if entry is None or entry[0] is not p or not entry[1]:
            return None
        counts = torch.full(p.shape, float(t), dtype=torch.float64, device=p.device)
        for axis, idx, t0, _, _ in entry[1]:
            counts.index_fill_(axis, idx.to(p.device), float(t) - t0)
        return counts

    def forget(self, p: torch.Tensor) -> None:
        self.rows.pop(id(p), None)

    def add(self, p: torch.Tensor, spec: tuple[int, torch.Tensor], t0: float) -> None:
        axis, idx = spec
        _, items = self.rows.setdefault(id(p), (p, []))
        for item in items:  # a row reset again restarts from now
            if item[0] == axis:
                keep = ~torch.isin(item[1], idx)
                item[1] = item[1][keep]
        items[:] = [it for it in items if it[1].numel()]
        items.append([axis, idx.clone(), t0, None, t0])

    @torch.no_grad()
    def _pre(self, optimizer, args, kwargs) -> None:
        for p, items in self.rows.values():
            for item in items:
                item[3] = p.detach().index_select(item[0], item[1].to(p.device)).clone()

    @torch.no_grad()
    def _post(self, optimizer, args, kwargs) -> None:
        for key, (p, items) in list(self.rows.items()):
            st = optimizer.state.get(p)
            if not st:
                continue
            group = _group_of(optimizer, p)
            t = float(st["step"])
            b1, b2 = (float(b) for b in group["betas"])
            lr, eps = float(group["lr"]), float(group["eps"])
            wd = float(group["weight_decay"])
            decoupled = bool(
                group.get("decoupled_weight_decay", isinstance(optimizer, torch.optim.AdamW))
            )
            v_key = "max_exp_avg_sq" if group.get("amsgrad", False) else "exp_avg_sq"
            for item in items:
                axis, idx, t0, before, last = item
                if before is None or t == last:
                    continue  # no pre-step copy, or the step was skipped
                item[4] = t
                s = t - t0
                i = idx.to(p.device)
                m, v = st["exp_avg"].index_select(axis, i), st[v_key].index_select(axis, i)
                new = before * (1 - lr * wd) if decoupled and wd != 0 else before
                denom = (v.sqrt() / math.sqrt(1 - b2**s)).add_(eps)
                new = new.addcdiv(m, denom, value=-lr / (1 - b1**s))
                p.detach().index_copy_(axis, i, new)
                if 1 - b1**s == 1 - b1**t and 1 - b2**s == 1 - b2**t:
                    item[1] = idx[:0]
            items[:] = [it for it in items if it[1].numel()]
            if not items:
                del self.rows[key]


def row_steps(optimizer: torch.optim.Optimizer, p: torch.Tensor) -> torch.Tensor | None:
    """Per entry of ``p`` the step count its bias correction uses now (float64), where rows of
    ``p`` were reset with ``restart=True`` and keep their own count; else ``None`` (every entry
    uses the state's ``step``)."""
    clock = _RowClock._clocks.get(optimizer)
    st = optimizer.state.get(p)
    if clock is None or not st or "step" not in st:
        return None
    return clock.steps(p, float(st["step"]))


@torch.no_grad()
def reset_step(
    optimizer: torch.optim.Optimizer, model: torch.nn.Module, step: int = 0, names: Names = None
) -> StateRecord:
    r"""Set the step count ``t`` to ``step``, keeping the moments.

    Bias-correction consequence: the next step divides the kept moments by $1-\beta^{step+1}$;
    with ``step = 0`` that is $1-\beta_1 = 0.1$ and $1-\beta_2 = 0.001$ for the defaults, so
    kept moments are over-corrected ($\hat m \approx m/(1-\beta_1)$): the first updates are
    larger, by up to $\sqrt{1-\beta_2}/(1-\beta_1)$ in ratio, until $\beta^t$ decays.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    step : int
        The new step count, at least 0.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``step < 0``.
    """
    _check_optimizer(optimizer)
    if int(step) < 0:
        raise InputError(f"step={step!r} is not allowed; allowed: an integer >= 0")
    rec = StateRecord("reset_step", "step", details={"step": int(step)})
    touched: list[tuple[torch.Tensor, tuple[str, ...], _Spec]] = []
    for n, p in select(model, names):
        st = _state(optimizer, n, p)
        before = st["step"].clone()
        st["step"].fill_(int(step))
        rec.add(n, "step", before, st["step"])
        touched.append((p, ("step",), None))
    _tell("reset_step", touched)
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
    tot: torch.Tensor | float = 0.0
    cnt = 0
    for t in tensors:
        tot = tot + _reduce_shape(_batch_sum(t.double(), batch_dims), batch_dims)
        cnt += t[(0,) * batch_dims].numel() if batch_dims else t.numel()
    assert isinstance(tot, torch.Tensor), "a mean over no tensors"
    return tot / cnt


def _expand(value: torch.Tensor, like: torch.Tensor, batch_dims: int) -> torch.Tensor:
    return value.reshape(value.shape + (1,) * (like.dim() - batch_dims)).to(like.dtype)


@torch.no_grad()
def scalarise_v(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    names: Names = None,
    *,
    per: str = "tensor",
    batch_dims: int = 0,
    rows: Rows = None,
) -> StateRecord:
    r"""Replace ``v`` by its mean within each group: $v_i \leftarrow \bar v = \frac1n\sum_j v_j$
    (per batch element; over the given ``rows`` only, when given). The mean of ``v`` over each
    group is kept (up to the rounding of $\bar v$ itself, computed in float64); the coordinate
    pattern of ``v`` is removed, so only its scale is left.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    per : str
        The group: ``"tensor"``, ``"layer"`` or ``"selection"`` (`PER`).
    batch_dims : int
        The first ``batch_dims`` axes of every tensor are a batch of independent models.
    rows : Sequence[int] or torch.Tensor or Mapping or None
        Indices along axis 0 of every selected tensor, or ``{name: (axis, indices)}`` per
        tensor (module doc); ``None``: whole tensors.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``rows`` names an unselected parameter, an axis out of range or indices that are
        empty, repeated, out of range or not integers, ``per`` is not one
        of `PER`, the optimizer uses amsgrad, or some selected ``v`` is not finite.
    """
    _check_optimizer(optimizer)
    _refuse_amsgrad(optimizer, "scalarise_v")
    rec = StateRecord("scalarise_v", "v", details={"per": per, "batch_dims": int(batch_dims)})
    pairs, specs = _row_specs(select(model, names), rows, int(batch_dims))
    plan = []
    for group in _groups(pairs, per):
        vs = [_get(_state(optimizer, n, p)["exp_avg_sq"], specs[n]) for n, p in group]
        for (n, _), v in zip(group, vs):
            _refuse_nonfinite(n, "v", v, "scalarise_v")
        plan.append((group, vs, _group_mean(vs, batch_dims)))
    for group, vs, mean in plan:
        for (n, p), before in zip(group, vs):
            v = _state(optimizer, n, p)["exp_avg_sq"]
            _put(v, specs[n], _expand(mean, before, batch_dims).expand_as(before).to(v.dtype))
            rec.add(n, "exp_avg_sq", before, _get(v, specs[n]))
    _tell("scalarise_v", [(p, ("exp_avg_sq",), specs[n]) for n, p in pairs])
    return rec


def _bias2(optimizer, p: torch.Tensor, st: dict) -> tuple[float, float]:
    g = _group_of(optimizer, p)
    b2 = float(g["betas"][1])
    return 1.0 - b2 ** float(st["step"]), float(g["eps"])


def mean_adaptive_scale(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    names: Names = None,
    *,
    batch_dims: int = 0,
    rows: Rows = None,
) -> torch.Tensor:
    r"""$\bar a_v = \mathrm{mean}_i\, 1/(\sqrt{\hat v_i} + \epsilon)$ over the selection (its
    ``rows``, when given), with $\hat v = v/(1-\beta_2^t)$.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW`` managing ``model``'s parameters.
    model : torch.nn.Module
        The model whose parameters the optimizer was built with.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    batch_dims : int
        The first ``batch_dims`` axes of every tensor are a batch of independent models.
    rows : Sequence[int] or torch.Tensor or Mapping or None
        Indices along axis 0 of every selected tensor, or ``{name: (axis, indices)}`` per
        tensor (module doc); ``None``: whole tensors.

    Returns
    -------
    torch.Tensor
        $\bar a_v$, float64, of the batch shape (0-d without a batch).

    Raises
    ------
    InputError
        When the optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``rows`` names an unselected parameter, an axis out of range or indices that are
        empty, repeated, out of range or not integers, the optimizer uses
        amsgrad, or some selected ``v`` is not finite.
    """
    _check_optimizer(optimizer)
    _refuse_amsgrad(optimizer, "mean_adaptive_scale")
    terms = []
    pairs, specs = _row_specs(select(model, names), rows, int(batch_dims))
    for n, p in pairs:
        st = _state(optimizer, n, p)
        v = _get(st["exp_avg_sq"], specs[n])
        _refuse_nonfinite(n, "v", v, "the mean adaptive scale")
        bc2, eps = _bias2(optimizer, p, st)
        terms.append(1.0 / ((v.double() / bc2).sqrt() + eps))
    return _group_mean(terms, batch_dims)


def _scale_for(
    vhat: list[torch.Tensor],
    eps: list[float],
    target: torch.Tensor,
    batch_dims: int,
    iters: int = 200,
) -> torch.Tensor:
    r"""Per batch element the ``c > 0`` with $mean 1/(c \sqrt{\hat v} + \epsilon) = target$
    (bisection in ``log c``; the left side decreases strictly in ``c``)."""
    root = [v.sqrt() for v in vhat]
    lo = torch.full_like(target, -60.0)
    hi = torch.full_like(target, 60.0)
    for _ in range(iters):
        mid = (lo + hi) / 2
        c = mid.exp()
        a = _group_mean(
            [1.0 / (_expand(c, r, batch_dims) * r + e) for r, e in zip(root, eps)], batch_dims
        )
        too_big = a > target
        lo = torch.where(too_big, mid, lo)
        hi = torch.where(too_big, hi, mid)
    return ((lo + hi) / 2).exp()


@torch.no_grad()
def equalise_adaptive_scale(
    opt_a: torch.optim.Optimizer,
    model_a: torch.nn.Module,
    opt_b: torch.optim.Optimizer,
    model_b: torch.nn.Module,
    names: Names = None,
    *,
    batch_dims: int = 0,
    rows: Rows = None,
) -> StateRecord:
    r"""Rescale ``v`` of both states so both have the same mean adaptive scale
    $\bar a_v = \mathrm{mean}\,1/(\sqrt{\hat v}+\epsilon)$ over the selection (its ``rows``,
    when given; the same rows in both), equal to the arithmetic mean of the two:
    $v \leftarrow c^2 v$ with ``c`` solving
    $\mathrm{mean}\,1/(c\sqrt{\hat v}+\epsilon) = (\bar a_v^A + \bar a_v^B)/2$ per state and
    batch element (exact up to the bisection, to float64 rounding). The pattern of ``v``
    (ratios between coordinates) is kept; only its scale moves. Refuses amsgrad and non-finite
    ``v`` in either state before writing anything.

    Parameters
    ----------
    opt_a : torch.optim.Optimizer
        The first ``Adam``/``AdamW``.
    model_a : torch.nn.Module
        Its model.
    opt_b : torch.optim.Optimizer
        The second ``Adam``/``AdamW``.
    model_b : torch.nn.Module
        Its model (the same names are selected in both).
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``each model's named_parameters()`` (`select()`);
        ``None``: every parameter.
    batch_dims : int
        The first ``batch_dims`` axes of every tensor are a batch of independent models.
    rows : Sequence[int] or torch.Tensor or Mapping or None
        Indices along axis 0 of every selected tensor, or ``{name: (axis, indices)}`` per
        tensor (module doc); ``None``: whole tensors.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When an optimizer is not ``Adam``/``AdamW``, a name matches no parameter, or a
        selected parameter is not managed by the optimizer or has no Adam state yet, or ``rows`` names an unselected parameter, an axis out of range or indices that are
        empty, repeated, out of range or not integers, either optimizer
        uses amsgrad, or some selected ``v`` is not finite (`mean_adaptive_scale()`).
    """
    targets = [
        mean_adaptive_scale(o, m, names, batch_dims=batch_dims, rows=rows)
        for o, m in ((opt_a, model_a), (opt_b, model_b))
    ]
    target = (targets[0] + targets[1]) / 2
    rec = StateRecord(
        "equalise_adaptive_scale",
        "v",
        details={
            "a_v_before": [t.flatten().tolist() for t in targets],
            "a_v_target": target.flatten().tolist(),
            "batch_dims": int(batch_dims),
        },
    )
    for tag, opt, model in (("a", opt_a, model_a), ("b", opt_b, model_b)):
        pairs, specs = _row_specs(select(model, names), rows, int(batch_dims))
        states = [_state(opt, n, p) for n, p in pairs]
        info = [_bias2(opt, p, st) for (_, p), st in zip(pairs, states)]
        vs = [_get(st["exp_avg_sq"], specs[n]) for (n, _), st in zip(pairs, states)]
        vhat = [v.double() / bc2 for v, (bc2, _) in zip(vs, info)]
        c = _scale_for(vhat, [e for _, e in info], target, batch_dims)
        for (n, _), st, before in zip(pairs, states, vs):
            v = st["exp_avg_sq"]
            _put(v, specs[n], before * _expand(c * c, before, batch_dims))
            rec.add(n, f"{tag}.exp_avg_sq", before, _get(v, specs[n]))
        _tell("equalise_adaptive_scale", [(p, ("exp_avg_sq",), specs[n]) for n, p in pairs])
    return rec


def weights(model: torch.nn.Module, names: Names = None) -> dict[str, torch.Tensor]:
    """Copies of the selected parameters, the ``before`` of `update_norm()` and
    `rescale_update()`.

    Parameters
    ----------
    model : torch.nn.Module
        The model.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.

    Returns
    -------
    dict[str, torch.Tensor]
        Detached copies by name.

    Raises
    ------
    InputError
        When a name matches no parameter.
    """
    return {n: p.detach().clone() for n, p in select(model, names)}


def update_norm(
    model: torch.nn.Module,
    before: dict[str, torch.Tensor],
    names: Names = None,
    *,
    batch_dims: int = 0,
) -> torch.Tensor:
    r"""$\|\Delta\| = \sqrt{\sum_i (p_i - p_i^{before})^2}$ over the selection, per batch
    element (float64).

    Parameters
    ----------
    model : torch.nn.Module
        The model after the update.
    before : dict[str, torch.Tensor]
        The parameters before it (`weights()` on the same selection).
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    batch_dims : int
        The first ``batch_dims`` axes of every tensor are a batch of independent models.

    Returns
    -------
    torch.Tensor
        $\|\Delta\|$, float64, of the batch shape.

    Raises
    ------
    InputError
        When a name matches no parameter.
    """
    sq = [(p.detach().double() - before[n].double()) ** 2 for n, p in select(model, names)]
    return (_group_mean(sq, batch_dims) * _numel(sq, batch_dims)).sqrt()


def _numel(tensors: list[torch.Tensor], batch_dims: int) -> int:
    return sum(t[(0,) * batch_dims].numel() if batch_dims else t.numel() for t in tensors)


@torch.no_grad()
def rescale_update(
    model: torch.nn.Module,
    before: dict[str, torch.Tensor],
    norm: float | torch.Tensor,
    names: Names = None,
    *,
    batch_dims: int = 0,
) -> StateRecord:
    r"""Equal-movement control: rescale the update just taken to a stated norm,
    $p \leftarrow p^{before} + \Delta\, \nu/\|\Delta\|$ with $\Delta = p - p^{before}$ and
    $\|\Delta\|$ over the selection per batch element (`update_norm()`). A zero update stays
    zero. The optimizer state is not touched: the moments still carry the gradient, only the
    movement is controlled.

    Parameters
    ----------
    model : torch.nn.Module
        The model after the update; its selected parameters are written in place.
    before : dict[str, torch.Tensor]
        The parameters before the update (`weights()` on the same selection).
    norm : float or torch.Tensor
        $\nu$: a number or a tensor of the batch shape.
    names : str or Sequence[str] or None
        Parameter names or ``fnmatch`` globs over ``model.named_parameters()`` (`select()`);
        ``None``: every parameter.
    batch_dims : int
        The first ``batch_dims`` axes of every tensor are a batch of independent models.

    Returns
    -------
    StateRecord
        The tensors changed, with their norms before and after.

    Raises
    ------
    InputError
        When a name matches no parameter, ``before`` lacks a selected parameter or holds
        another shape, or some update is not finite.
    """
    for n, p in select(model, names):
        if n not in before or before[n].shape != p.shape:
            raise InputError(
                f"before has no entry {n!r} of shape {tuple(p.shape)}; take it "
                "with weights() on the same selection"
            )
        _refuse_nonfinite(n, "update", p.detach() - before[n], "rescale_update")
    now = update_norm(model, before, names, batch_dims=batch_dims)
    nu = torch.as_tensor(norm, dtype=torch.float64, device=now.device)
    factor = torch.where(now > 0, nu / now.clamp_min(1e-300), torch.zeros_like(now))
    rec = StateRecord(
        "rescale_update",
        "weights",
        details={
            "norm_before": now.flatten().tolist(),
            "norm_target": nu.expand_as(now).flatten().tolist(),
        },
    )
    for n, p in select(model, names):
        delta = p.detach().double() - before[n].double()
        old = p.detach().clone()
        p.copy_((before[n].double() + delta * _expand(factor, p, batch_dims)).to(p.dtype))
        rec.add(n, "param", old, p)
    _tell("rescale_update", [(p, ("param",), None) for _, p in select(model, names)])
    return rec
