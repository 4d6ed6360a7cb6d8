"""Known-answer controls: every instrument shown to work on cases whose answer is known.

An *instrument* is whatever turns raw results into the numbers a finding judges: a detector (the
spike detector), a readout (the owner of a teacher feature, a probe of a representation), a fit
(a slope, an edge of a probability map), a control arm (a frozen-``v`` copy), a selection step.
A `Control` runs one instrument, through the very function the experiment's analysis
calls, on a case built so that the answer is known beforehand:

- a **positive** control has the effect present, with a known size or location (a planted
  spike of 3 decades at step 5000 is found there, and no other);
- a **negative** control has it absent (stationary noise reads quiet; an unspecialised
  representation reads no specialisation).

Every instrument an experiment declares has at least one of each. The controls run first, in
quick and full runs alike (`run_controls()`), and are stored in ``summary.json`` under
``controls``; a failed control stops the run before any task (status ``controls failed``) and
names its instrument, because an instrument that misreads a known case must not judge unknown
ones. An experiment declares its controls with ``controls(config) -> list[Control]`` beside its
findings; the configuration is passed so a control exercises the instrument at the settings the
run uses (its sampling, its thresholds).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._errors import InputError, oneline
from .._json import plain, strict

KINDS = ("positive", "negative")
"""A control's kind: the effect present (with a known size or location), or absent."""

_ID = re.compile(r"[a-z0-9][a-z0-9_.:=\-]*")


class Reading(NamedTuple):
    """What a control's instrument read on its case, and whether that is the known answer."""

    measured: Any
    passed: bool


@dataclass(frozen=True)
class Control:
    """One known-answer case of one instrument.

    ``id``: unique within the experiment (lower case, digits, ``_.:=-``); ``instrument``: the
    instrument's name, as the report shows it (the function or readout it exercises);
    ``kind``: ``"positive"`` or ``"negative"`` (`KINDS`); ``case``: the case and its known
    answer, in words; ``proves``: one line on what passing shows; ``run``: runs the instrument
    on the case and returns a `Reading` (or a ``(measured, passed)`` pair). ``run`` calls
    the same code the experiment's analysis calls, so a broken instrument fails its control.
    """

    id: str
    instrument: str
    kind: str
    case: str
    proves: str
    run: Callable[[], Any]

    def describe(self) -> dict:
        """The declaration without its function (what ``summary.json`` and the docs list)."""
        return {
            "id": self.id,
            "instrument": self.instrument,
            "kind": self.kind,
            "case": self.case,
            "proves": self.proves,
        }


def declared_controls(experiment: Any, config: dict, where: str = "controls") -> list[Control]:
    """``experiment.controls(config)`` checked: `Control` records with unique, well-formed
    ids, a known kind, words for the instrument, the case and what it proves, and at least one
    positive and one negative control per instrument; else `InputError` naming the
    experiment, the control and what is wrong.

    Parameters
    ----------
    experiment : Any
        A registered experiment; its ``controls(config)`` method, when it has one, declares the
        controls (none declared: an empty list).
    config : dict
        The run's configuration, passed (as a copy) to ``controls``.
    where : str
        Where the controls come from, as the error messages name it.

    Returns
    -------
    list of Control
        The declared controls, in declaration order.

    Raises
    ------
    InputError
        When an entry is not a `Control`, an id is malformed or declared twice, a kind is not in
        `KINDS`, ``instrument``/``case``/``proves`` is empty, ``run`` is not callable, or an
        instrument lacks a positive or a negative control.
    """
    name = getattr(experiment, "name", "") or type(experiment).__name__
    method = getattr(experiment, "controls", None)
    controls = list(method(dict(config))) if method is not None else []
    seen: set[str] = set()
    kinds: dict[str, set[str]] = {}
    for c in controls:
        if not isinstance(c, Control):
            raise InputError(f"{where} of {name}: {c!r} is not a Control")
        if not isinstance(c.id, str) or not _ID.fullmatch(c.id):
            raise InputError(
                f"{where} of {name}: id {c.id!r} is not allowed; allowed: lower-case letters, "
                "digits and _.:=- (starting with a letter or digit)"
            )
        if c.id in seen:
            raise InputError(f"{where} of {name}: id {c.id!r} is declared twice")
        seen.add(c.id)
        if c.kind not in KINDS:
            raise InputError(
                f"{where} of {name}: {c.id}: kind {c.kind!r} is not allowed; allowed: "
                + ", ".join(KINDS)
            )
        for field in ("instrument", "case", "proves"):
            if not isinstance(getattr(c, field), str) or not getattr(c, field).strip():
                raise InputError(f"{where} of {name}: {c.id}: {field} is empty; say it in words")
        if not callable(c.run):
            raise InputError(f"{where} of {name}: {c.id}: run is not callable")
        kinds.setdefault(c.instrument, set()).add(c.kind)
    for instrument, found in kinds.items():
        missing = [k for k in KINDS if k not in found]
        if missing:
            raise InputError(
                f"{where} of {name}: instrument {instrument!r} has no {missing[0]} control; "
                "every instrument needs a positive (effect present) and a negative "
                "(effect absent) known-answer case"
            )
    return controls


def run_control(control: Control) -> dict:
    """Run one control: its declaration, ``measured``, ``passed`` and ``seconds``; a control that
    raises fails, with the error as its ``measured`` value."""
    start = time.perf_counter()
    try:
        out = control.run()
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"run returned {out!r}, not a Reading (measured, passed)")
        measured, passed = out[0], bool(out[1])
    except Exception as err:  # a broken instrument fails its control, naming the error
        measured, passed = f"{type(err).__name__}: {oneline(err)}", False
    return {
        **control.describe(),
        "measured": strict(plain(measured)),
        "passed": passed,
        "seconds": time.perf_counter() - start,
    }


def run_controls(experiment: Any, config: dict) -> list[dict]:
    """Every declared control of ``experiment`` at ``config``, in declaration order.

    A control whose instrument raises fails (with the error as its ``measured`` value); it does
    not stop the others.

    Parameters
    ----------
    experiment : Any
        A registered experiment declaring ``controls(config)``.
    config : dict
        The run's configuration (the controls exercise the instrument at its settings).

    Returns
    -------
    list of dict
        One record per control: its declaration (``id``, ``instrument``, ``kind``, ``case``,
        ``proves``), ``measured`` (JSON-safe), ``passed`` and ``seconds``.

    Raises
    ------
    InputError
        When the declaration is malformed (`declared_controls()`).
    """
    return [run_control(c) for c in declared_controls(experiment, config)]


def failed_controls(records: list[dict] | None) -> list[dict]:
    """The records of the controls that failed."""
    return [r for r in records or [] if not r.get("passed")]


def failure_text(records: list[dict]) -> str:
    """``id (instrument: name)`` of every failed control, comma-separated."""
    return ", ".join(f"{r['id']} (instrument: {r['instrument']})" for r in failed_controls(records))


def close(value: float, target: float, tol: float) -> bool:
    """``|value - target| <= tol`` for finite numbers (a helper of the controls' answers)."""
    return math.isfinite(float(value)) and abs(float(value) - float(target)) <= tol
