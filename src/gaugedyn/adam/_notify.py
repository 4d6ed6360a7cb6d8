"""What state surgery changed, told to the recorders that keep shadow state of those parameters.

A recorder keeps state of its own beside the optimizer's (``AdamRecorder``: the first moment with
the second moment's memory ``w``; ``GaugeRecorder``: the momentum recursion's carry). When the
state toolkit (`gaugedyn.adam`'s ``reset``, ``exchange``, ``transplant``, ...;
`gaugedyn.gauge.rescale_units()`) writes a parameter's optimizer state or the parameter
itself, it calls `notify_state()` with one `StateChange` per parameter, and every
callback registered for that parameter with `watch_state()` moves or resets its shadow state
to match, before the next step. Code that writes optimizer state by other means calls
`notify_state()` itself.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

KEYS = ("param", "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer")
"""What a `StateChange` may name as written: the parameter, or a key of its optimizer
state (``step``: its step count, or the own step count of reset rows)."""


@dataclass(frozen=True)
class StateChange:
    """One parameter's optimizer state (or the parameter itself), as one operation wrote it.

    ``param``: the parameter tensor; ``keys``: what was written (of `KEYS`); ``rows``:
    ``(axis, indices)`` of the entries written (``None``: the whole tensor); ``scale``: for a
    rescaling of the written entries (`gaugedyn.gauge.rescale_units()`), the factor the
    first moment (``exp_avg``, ``momentum_buffer``) was multiplied by, broadcastable to the
    selected entries (``None``: the entries were replaced); ``operation``: the toolkit
    function's name."""

    param: Any
    keys: tuple[str, ...]
    rows: tuple[int, Any] | None = None
    scale: Any = None
    operation: str = ""

    def __post_init__(self) -> None:
        unknown = [k for k in self.keys if k not in KEYS]
        if unknown:
            raise ValueError(f"StateChange keys {unknown} are not among {KEYS}")


_WATCHERS: dict[int, tuple[weakref.ref, list[weakref.ref]]] = {}


class _Handle:
    """Removes one `watch_state()` registration (``remove()``, idempotent)."""

    def __init__(self, ids: list[int], ref: weakref.ref):
        self._ids, self._ref = ids, ref

    def remove(self) -> None:
        for key in self._ids:
            entry = _WATCHERS.get(key)
            if entry is not None:
                entry[1][:] = [r for r in entry[1] if r is not self._ref]
                if not entry[1]:
                    del _WATCHERS[key]
        self._ids = []


def _ref(callback: Callable) -> weakref.ref:
    """A weak reference to ``callback`` (a bound method's object is not kept alive by it)."""
    if hasattr(callback, "__self__") and hasattr(callback, "__func__"):
        return weakref.WeakMethod(callback)
    return weakref.ref(callback)


def watch_state(params: Iterable[Any], callback: Callable[[list[StateChange]], None]) -> _Handle:
    """Call ``callback(changes)`` after every `notify_state()` naming one of ``params``,
    with the changes of those parameters; returns a handle whose ``remove()`` stops it. The
    callback is held weakly (a recorder that is gone is not called, nor kept alive).

    Parameters
    ----------
    params : Iterable[Any]
        The parameter tensors watched (matched by identity).
    callback : Callable[[list[StateChange]], None]
        Called once per `notify_state()` that names any of ``params``, with those parameters'
        changes in order; held by a weak reference (a bound method by `weakref.WeakMethod`).

    Returns
    -------
    _Handle
        A handle whose ``remove()`` (idempotent) ends this registration.
    """
    ref = _ref(callback)
    ids = []
    for p in params:
        key = id(p)
        entry = _WATCHERS.get(key)
        if entry is None or entry[0]() is not p:
            entry = _WATCHERS[key] = (weakref.ref(p), [])
        entry[1].append(ref)
        ids.append(key)
    return _Handle(ids, ref)


def notify_state(changes: Sequence[StateChange]) -> None:
    """Tell every watcher of the changed parameters what was written (each watcher once, with
    its parameters' changes in order).

    Parameters
    ----------
    changes : Sequence[StateChange]
        What one operation wrote, one `StateChange` per parameter; changes of parameters no
        one watches are skipped.
    """
    calls: dict[int, tuple[Callable, list[StateChange]]] = {}
    for change in changes:
        entry = _WATCHERS.get(id(change.param))
        if entry is None or entry[0]() is not change.param:
            continue
        for ref in list(entry[1]):
            callback = ref()
            if callback is None:
                entry[1].remove(ref)
                continue
            calls.setdefault(id(ref), (callback, []))[1].append(change)
    for callback, mine in calls.values():
        callback(mine)
