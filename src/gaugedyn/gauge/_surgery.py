r"""Gauge transformations of a live model and its optimizer state.

``rescale_units`` applies the rescaling symmetry of `gaugedyn.gauge._units` to chosen units
``j`` of one group, with ``c_j > 0``:

$$
X_j \leftarrow c_j X_j,\qquad Y_j \leftarrow Y_j / c_j
$$

(``X``: the unit's input weights and bias, or ``W_Q``/``W_V`` of a head; ``Y``: its output
weights, or ``W_K``/``W_O``; a scale unit has only ``X``). The function is unchanged. Since
``L(c X, Y / c) = L(X, Y)``, the gradients at the new point are ``g_X / c`` and ``g_Y c``; the
optimizer state is transformed the same way, so that it is the state the optimizer would hold had
it seen the transformed gradient history:

- ``Adam``/``AdamW``: ``m_X / c``, ``v_X / c^2``, ``m_Y c``, ``v_Y c^2`` (amsgrad's
  ``max_exp_avg_sq`` like ``v``); the step count is kept;
- ``SGD``: the momentum buffer like ``m``.

Weight decay enters torch's moments as ``lambda P``, which transforms like the parameters, not the
gradients: with weight decay the transformed state equals the transformed gradient history's
only for its gradient part (the symmetry itself is broken by the decay).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._errors import InputError
from ..adam import StateChange, StateRecord, notify_state
from ._units import UnitGroup, find_units

_STATE_POWERS = {"exp_avg": 1, "exp_avg_sq": 2, "max_exp_avg_sq": 2, "momentum_buffer": 1}


def _group(model: torch.nn.Module, layer: str) -> UnitGroup:
    groups, _ = find_units(model)
    names = [g.name for g in groups]
    if layer not in names:
        raise InputError(
            f"layer={layer!r} is not allowed; use one of {names} (the groups "
            "gaugedyn.gauge.find_units finds)"
        )
    return next(g for g in groups if g.name == layer)


def _units(group: UnitGroup, units) -> torch.Tensor:
    try:
        raw = torch.as_tensor(units)
        if raw.numel() and (raw.dtype == torch.bool or raw.is_floating_point() or raw.is_complex()):
            raise TypeError("not integers")  # a float would be truncated: 0.5 -> unit 0
        idx = raw.to(torch.long).reshape(-1)
    except (TypeError, ValueError, RuntimeError) as err:
        raise InputError(f"units={units!r} is not allowed; use integer unit indices") from err
    if idx.numel() == 0 or int(idx.min()) < 0 or int(idx.max()) >= group.n_units:
        raise InputError(
            f"units={units!r} is not allowed; use indices in 0..{group.n_units - 1}"
            f" of group {group.name!r}"
        )
    if torch.unique(idx).numel() != idx.numel():
        raise InputError(f"units={units!r} is not allowed: repeated indices")
    return idx


def unit_rows(
    model: torch.nn.Module, layer: str, units: Sequence[int]
) -> dict[str, tuple[int, torch.Tensor]]:
    """The rows of the given units of group ``layer``, on both sides of the unit.

    Parameters
    ----------
    model : torch.nn.Module
        The model.
    layer : str
        A group name of `find_units()`.
    units : sequence of int
        Unit (or head) indices within the group.

    Returns
    -------
    dict of str to (int, torch.Tensor)
        ``{parameter name: (axis, indices)}``: the ``rows`` argument of the Adam state toolkit
        (`gaugedyn.adam`).

    Raises
    ------
    InputError
        For an unknown ``layer``, or ``units`` that are not distinct integer indices in range.
    """
    group = _group(model, layer)
    idx = _units(group, units)
    out: dict[str, tuple[int, torch.Tensor]] = {}
    for side in (*group.inputs, *group.outputs):
        rows = side.indices(idx)
        if side.name in out:  # W_Q and W_K rows of one in_proj_weight: disjoint blocks
            axis, known = out[side.name]
            if axis != side.axis:
                raise InputError(
                    f"group {layer!r} uses {side.name!r} along two axes; select its rows by hand"
                )
            rows = torch.cat([known, rows])
        out[side.name] = (side.axis, rows)
    return out


@torch.no_grad()
def rescale_units(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None,
    layer: str,
    units: Sequence[int],
    c: float | Sequence[float],
) -> StateRecord:
    """Multiply the chosen units' input weights (and bias) by ``c`` and their output weights by
    ``1/c``, and transform ``optimizer``'s state as the gradients transform (module docstring).

    ``layer``: a group name of `find_units()` (kind ``rescale``, ``scale``
    or an attention pair ``qk``/``vo``, where ``c`` multiplies a head's ``W_Q`` or ``W_V`` and
    divides its ``W_K`` or ``W_O``); ``units``: unit (or head) indices; ``c``: one positive
    finite number or one per unit. ``optimizer``: ``None``, ``torch.optim.Adam``, ``AdamW`` or
    ``SGD``; parameters without state yet (before the first step) have only their weights
    changed.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose weights are rescaled in place.
    optimizer : torch.optim.Optimizer or None
        ``None``, ``torch.optim.Adam``, ``AdamW`` or ``SGD``: its state is transformed with
        the weights.
    layer : str
        A group name of `find_units()` (kind ``rescale``, ``scale``, ``qk`` or ``vo``).
    units : sequence of int
        Unit (or head) indices within the group.
    c : float or sequence of float
        One positive finite factor, or one per unit.

    Returns
    -------
    StateRecord
        The norms of each changed slice before and after (`gaugedyn.adam.StateRecord`).

    Raises
    ------
    InputError
        Before anything changes, for an unknown ``layer``, bad ``units``, an optimizer other
        than the three, or a ``c`` that is not positive and finite.
    """
    if optimizer is not None and not isinstance(
        optimizer, torch.optim.Adam | torch.optim.AdamW | torch.optim.SGD
    ):
        raise InputError(
            f"optimizer={type(optimizer).__name__} is not allowed; use None, "
            "torch.optim.Adam, AdamW or SGD"
        )
    group = _group(model, layer)
    idx = _units(group, units)
    cs = torch.as_tensor(c, dtype=torch.float64).reshape(-1)
    if cs.numel() == 1:
        cs = cs.expand(idx.numel())
    if cs.numel() != idx.numel() or not bool(torch.isfinite(cs).all()) or bool((cs <= 0).any()):
        raise InputError(
            f"c={c!r} is not allowed; use one positive finite number or one per "
            f"unit ({idx.numel()})"
        )
    params = dict(model.named_parameters())
    rec = StateRecord(
        "rescale_units",
        "all",
        details={"layer": layer, "kind": group.kind, "units": idx.tolist(), "c": cs.tolist()},
    )
    changes: list[StateChange] = []
    for power, sides in ((1, group.inputs), (-1, group.outputs)):
        for side in sides:
            p = params[side.name]
            rows = side.indices(idx).to(p.device)
            factor = cs.repeat_interleave(side.block).to(p.device)
            shape = [1] * p.dim()
            shape[side.axis] = -1
            tensors = [("param", p.detach(), power)]
            st = optimizer.state.get(p, {}) if optimizer is not None else {}
            tensors += [
                (k, st[k], -power * q)
                for k, q in _STATE_POWERS.items()
                if torch.is_tensor(st.get(k))
            ]
            for key, t, q in tensors:
                before = t.index_select(side.axis, rows)
                f = (factor**q).reshape(shape)
                after = (before.double() * f).to(t.dtype)
                t.index_copy_(side.axis, rows, after)
                rec.add(side.name, key, before, after)
            changes.append(
                StateChange(
                    p,
                    tuple(k for k, _, _ in tensors),
                    (side.axis, rows),
                    (factor ** (-power)).reshape(shape),
                    "rescale_units",
                )
            )
    notify_state(changes)
    return rec


@torch.no_grad()
def duplicate_unit(
    model: torch.nn.Module,
    layer: str,
    source: int,
    target: int,
    gauges: tuple[float, float] = (1.0, 1.0),
) -> StateRecord:
    r"""Make unit ``target`` of rescaling group ``layer`` a duplicate of unit ``source`` that
    shares its output, then give the two copies their gauges:

    $$
    X_t \leftarrow X_s,\quad Y_s, Y_t \leftarrow Y_s / 2,\qquad
    \text{then } (X_s, Y_s) \to (c_s X_s, Y_s / c_s),\ (X_t, Y_t) \to (c_t X_t, Y_t / c_t)
    $$

    with ``(c_s, c_t) = gauges``. The pair computes exactly what ``source`` computed (both copies
    carry $\rho = |a_s|\,|w_s|/2$ along one direction); ``target``'s former contribution is
    removed, so the model's function changes by that contribution alone. ``c < 1`` makes a copy
    a-heavy ($\delta > 0$ grows), ``c > 1`` w-heavy. Weights only: apply it before building
    the optimizer, or reset the two units' state rows.

    Parameters
    ----------
    model : torch.nn.Module
        The model, changed in place.
    layer : str
        A rescaling group of `find_units()`.
    source, target : int
        The unit copied and the unit overwritten by the copy.
    gauges : tuple of float
        ``(c_s, c_t)``: the positive finite gauges of the two copies.

    Returns
    -------
    StateRecord
        The record of the operation (`gaugedyn.adam.StateRecord`).

    Raises
    ------
    InputError
        Before anything changes, for a group that is not a rescaling group, bad unit indices or
        gauges that are not two positive finite numbers.
    """
    group = _group(model, layer)
    if group.kind != "rescale":
        raise InputError(
            f"layer={layer!r} is a {group.kind} group; duplicate_unit needs a rescaling group"
        )
    idx = _units(group, [source, target])
    cs = torch.as_tensor(gauges, dtype=torch.float64).reshape(-1)
    if cs.numel() != 2 or not bool(torch.isfinite(cs).all()) or bool((cs <= 0).any()):
        raise InputError(f"gauges={gauges!r} is not allowed; use two positive finite numbers")
    params = dict(model.named_parameters())
    rec = StateRecord(
        "duplicate_unit",
        "weights",
        details={
            "layer": layer,
            "source": int(idx[0]),
            "target": int(idx[1]),
            "gauges": cs.tolist(),
        },
    )
    for half, sides in ((False, group.inputs), (True, group.outputs)):
        for side in sides:
            p = params[side.name].detach()
            src, dst = side.indices(idx[:1]), side.indices(idx[1:])
            before = p.index_select(side.axis, torch.cat([src, dst])).clone()
            val = p.index_select(side.axis, src)
            if half:
                val = val / 2
                p.index_copy_(side.axis, src, val)
            p.index_copy_(side.axis, dst, val)
            rec.add(side.name, "param", before, p.index_select(side.axis, torch.cat([src, dst])))
            notify_state([StateChange(params[side.name], ("param",), None, None, "duplicate_unit")])
    for unit, c in zip(idx.tolist(), cs.tolist()):
        rescale_units(model, None, layer, [unit], c)
    return rec
