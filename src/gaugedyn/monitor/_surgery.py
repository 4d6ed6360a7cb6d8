"""Adam state surgery run on an event: a resampling of dead units, a spike.

A handler is a function ``handler(monitor, **info)`` registered with `Monitor.on()`; these
build handlers that call the state toolkit's public functions (`gaugedyn.adam.reset()`) on the
monitor's optimizer and model between two steps, and return its `StateRecord` (kept in
``monitor.events``). Recorders attached to the same optimizer see the surgery exactly as they
see any other use of the toolkit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._errors import InputError


def reset_state(
    component: str = "both",
    names: str | Sequence[str] | None = None,
    *,
    rows: bool = True,
    restart: bool = False,
) -> Callable[..., Any]:
    """A handler resetting Adam's ``component`` (``m``, ``v`` or ``both``) of the selected
    parameters (``names``: names or globs; ``None``: all): the event's ``rows`` only
    (``rows=True``: the event must carry ``rows=``, a sequence of indices along axis 0 or a
    ``{name: (axis, indices)}`` mapping such as `gaugedyn.gauge.unit_rows()` builds), or
    whole tensors (``rows=False``: the event's ``rows`` and ``names`` name the tensors, every
    entry of them is reset). ``restart``: the reset entries start afresh (their own bias
    correction; `gaugedyn.adam.reset()`).

    Parameters
    ----------
    component : str
        ``"m"``, ``"v"`` or ``"both"``: which of Adam's moments to reset.
    names : str or sequence of str, optional
        Parameter names or globs over ``model.named_parameters()``; ``None`` selects all. An
        event's own ``names=`` takes precedence.
    rows : bool
        ``True``: reset only the rows the event carries (``rows=``); ``False``: whole tensors.
    restart : bool
        Whether the reset entries restart their bias correction (their own step count).

    Returns
    -------
    callable
        ``handler(monitor, **info)``, to register on a `Monitor` event; it returns
        `gaugedyn.adam.reset()`'s record of what it changed.

    Raises
    ------
    InputError
        When the handler runs on a monitor built without the model, or (``rows=True``) on an
        event that carries no ``rows=``.
    """

    def handler(monitor: Any, **info: Any) -> Any:
        from ..adam import reset

        if monitor.model is None:
            raise InputError("state surgery needs the model: Monitor(optimizer, model, ...)")
        sel = info.get("names", names)
        spec = info.get("rows")
        if rows and spec is None:
            raise InputError(
                "this event carries no rows=; emit it with rows=... or build the "
                "handler with rows=False (whole tensors)"
            )
        if not rows and isinstance(spec, dict):
            sel = list(spec)
        return reset(
            monitor.optimizer,
            monitor.model,
            component,
            sel,
            rows=spec if rows else None,
            restart=restart,
        )

    return handler
