"""The declared set-up space: the constants a paper leaves open, and the specifications over them.

A paper fixes its claims but rarely every constant a test of them needs (a detector's rise
threshold, a step size, when a control arm is frozen). An experiment declares each such constant
once, as a setting of its ``params`` (so ``--set`` reaches it) with a `Choice` in its
``space``: its alternatives or its range and one line on why they are plausible. The setting's
default is the **primary specification**; the space is the set of specifications a referee could
equally have chosen. ``gaugedyn multiverse`` (`._multiverse`) reruns the findings over it.

The specifications (`specifications()`) are

- the primary one (every constant at its value in the configuration);
- every constant at each end of its range (each alternative of a list) with the others at the
  primary value (``one at a time``: these name the constants that flip a verdict);
- ``samples`` joint specifications, drawn from a generator seeded by the root seed: a range
  uniformly (log-uniformly with ``scale="log"``; integers rounded), a list uniformly.

A configuration file may narrow or extend the code's declaration with ``[space.NAME]`` tables
(``values = [...]`` or ``lo``, ``hi``, ``scale``, and ``why``). Every declaration is checked
before any work (`check_space()`): the name is a setting, the alternatives are allowed values
of it, a range is not empty, the default lies in it; one `InputError` names what is wrong.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from .._json import plain
from .._options import show

SCALES = ("linear", "log")


@dataclass(frozen=True)
class Choice:
    """The declared alternatives of one set-up constant.

    Either ``values`` (alternatives, the default among them or not; at least two distinct values
    in all) or a numeric range ``lo < hi`` (``scale``: ``"linear"`` or ``"log"``, how the random
    sample spreads over it). ``why``: one line on why the alternatives are plausible (the paper
    gives no value; a referee would accept any of them).
    """

    values: tuple = ()
    lo: float | None = None
    hi: float | None = None
    scale: str = "linear"
    why: str = ""

    @property
    def is_range(self) -> bool:
        return self.lo is not None or self.hi is not None

    def ends(self, default: Any) -> list:
        """The values a one-at-a-time specification sets: both ends of a range, every listed
        alternative; those equal to ``default`` left out."""
        vals = [self.lo, self.hi] if self.is_range else list(self.values)
        out: list = []
        for v in vals:
            if v != default and v not in out:
                out.append(v)
        return out

    def draw(self, rng: np.random.Generator, kind: type, default: Any) -> Any:
        """One random value: uniform over the range (log-uniform on ``scale="log"``; an integer
        setting rounded) or uniform over the alternatives and the default."""
        if not self.is_range:
            options = [default, *[v for v in self.values if v != default]]
            return options[int(rng.integers(len(options)))]
        lo, hi = float(self.lo), float(self.hi)  # type: ignore[arg-type]
        u = rng.uniform()
        x = (
            math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
            if self.scale == "log"
            else (lo + u * (hi - lo))
        )
        return int(round(x)) if kind is int else float(x)

    def describe(self, default: Any) -> dict:
        """The declaration as data: ``default``, ``values`` or ``lo``/``hi``/``scale``, ``why``."""
        out: dict[str, Any] = {"default": default}
        if self.is_range:
            out |= {"lo": self.lo, "hi": self.hi, "scale": self.scale}
        else:
            out["values"] = list(self.values)
        out["why"] = self.why
        return plain(out)


def _param_type(param) -> type:
    types = param.type if isinstance(param.type, tuple) else (param.type,)
    return int if types == (int,) else float if float in types else types[0]


def _unknown(key: str, allowed, where: str, prefix: str) -> InputError:
    allowed = sorted(allowed)
    near = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {prefix}{near[0]}?)" if near else ""
    return InputError(
        f"{where}: unknown key {prefix}{key}{hint}; allowed: "
        f"{', '.join(prefix + k for k in allowed) or '(none)'}"
    )


def check_param(label: str, value: Any, param, where: str) -> Any:
    """``value`` checked against the setting's declaration (type and `Param.validate()`)."""
    types = param.type if isinstance(param.type, tuple) else (param.type,)
    if float in types and type(value) is int and int not in types:
        value = float(value)
    ok_type = isinstance(value, types) and (bool in types or not isinstance(value, bool))
    problem = param.validate(value) if ok_type else param.describe()
    if problem is not None:
        raise InputError(f"{where}: {label} = {show(value)} is not allowed; allowed: {problem}")
    return value


def check_choice(name: str, choice: Any, params: Mapping, where: str) -> None:
    """One declared constant checked against the experiment's settings (module doc)."""
    if name not in params:
        raise _unknown(name, params, where, "space.")
    if not isinstance(choice, Choice):
        raise InputError(f"{where}: space.{name} = {show(choice)} is not a Choice")
    param = params[name]
    label = f"space.{name}"
    if not isinstance(choice.why, str) or not choice.why.strip():
        raise InputError(f"{where}: {label}: why is empty; say in one line why it is plausible")
    defaults = [param.default] + ([param.quick] if param.quick is not None else [])
    if choice.is_range:
        kind = _param_type(param)
        if kind not in (int, float) or choice.values:
            raise InputError(
                f"{where}: {label}: a range (lo, hi) needs a numeric setting and no values; "
                "use values = [...] for alternatives"
            )
        if choice.lo is None or choice.hi is None or not choice.lo < choice.hi:
            raise InputError(
                f"{where}: {label}: the range [{choice.lo}, {choice.hi}] is empty; allowed: lo < hi"
            )
        if choice.scale not in SCALES or (choice.scale == "log" and choice.lo <= 0):
            raise InputError(
                f"{where}: {label}: scale {choice.scale!r} is not allowed; allowed: "
                "'linear', or 'log' with lo > 0"
            )
        for end in (choice.lo, choice.hi):
            check_param(label, kind(end), param, where)
        for d in defaults:
            if not choice.lo <= d <= choice.hi:
                raise InputError(
                    f"{where}: {label}: the default {show(d)} lies outside the range "
                    f"[{choice.lo:g}, {choice.hi:g}]; allowed: a range that holds it"
                )
        return
    values = list(choice.values)
    distinct = []
    for v in values:
        check_param(label, v, param, where)
        if v not in distinct:
            distinct.append(v)
    if len([v for v in distinct if v != param.default]) < 1:
        raise InputError(
            f"{where}: {label}: no alternative to the default {show(param.default)}; allowed: "
            "values with at least one other allowed value"
        )


def check_space(space: Mapping, params: Mapping, where: str = "space") -> dict:
    """Every declared constant checked (`check_choice()`); returns the space as a dict."""
    if not isinstance(space, Mapping):
        raise InputError(f"{where}: space must be a table of Choice declarations")
    for name, choice in space.items():
        check_choice(str(name), choice, params, where)
    return dict(space)


def choice_from_toml(name: str, table: Any, where: str) -> Choice:
    """A ``[space.NAME]`` table of a configuration file as a `Choice`."""
    if not isinstance(table, Mapping):
        raise InputError(f"{where}: space.{name} = {show(table)} must be a table")
    allowed = ("values", "lo", "hi", "scale", "why")
    for key in table:
        if key not in allowed:
            raise _unknown(str(key), allowed, where, f"space.{name}.")
    values = table.get("values", [])
    if not isinstance(values, list):
        raise InputError(f"{where}: space.{name}.values = {show(values)} must be a list")
    for key in ("lo", "hi"):
        v = table.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise InputError(f"{where}: space.{name}.{key} = {show(v)} must be a number")
    return Choice(
        values=tuple(values),
        lo=table.get("lo"),
        hi=table.get("hi"),
        scale=str(table.get("scale", "linear")),
        why=str(table.get("why", "")),
    )


def declared_space(experiment: Any, overrides: Any = None, where: str = "space") -> dict:
    """The experiment's ``space`` with a configuration's ``[space]`` tables applied, checked."""
    space = dict(getattr(experiment, "space", {}) or {})
    if overrides:
        if not isinstance(overrides, Mapping):
            raise InputError(f"{where}: space must be a table ([space.NAME] tables)")
        for name, table in overrides.items():
            space[str(name)] = choice_from_toml(str(name), table, where)
    return check_space(space, experiment.params, where)


def spec_id(values: Mapping) -> str:
    """A readable name of a specification: ``primary`` or ``name=value, ...``."""
    if not values:
        return "primary"
    return ", ".join(f"{k}={plain(v)!r}" for k, v in values.items())


def specifications(
    space: Mapping, params: Mapping, config: Mapping, samples: int, seed: int
) -> list[dict]:
    """The specifications of the module doc: ``{"id", "kind", "values"}`` with ``kind`` one of
    ``primary``, ``end`` (one constant at an end), ``joint`` (a random draw); ``values`` maps
    each constant that differs from ``config`` to its value. Duplicates are dropped.

    Parameters
    ----------
    space : Mapping
        The declared set-up space: setting name to `Choice`.
    params : Mapping
        The experiment's schema (name to `Param`); a range's values take its setting's type.
    config : Mapping
        The primary specification's resolved parameters.
    samples : int
        The number of random joint specifications drawn (fewer are kept when a draw repeats
        one already listed).
    seed : int
        The run's root seed; the joint draws derive from it and the space's names alone.

    Returns
    -------
    list of dict
        The primary specification first, then one ``end`` per constant and value (both ends of
        a range, each listed alternative; the primary value left out), then the ``joint``
        draws, each ``{"id", "kind", "values"}`` with ``values`` JSON-safe.
    """
    from .._meta import task_seed

    out = [{"id": "primary", "kind": "primary", "values": {}}]
    seen = {repr([])}

    def add(kind: str, values: dict) -> None:
        values = {k: v for k, v in values.items() if v != config[k]}
        key = repr(sorted(values.items()))
        if key in seen:
            return
        seen.add(key)
        label = (
            spec_id(values)
            if kind == "end"
            else f"joint {sum(1 for s in out if s['kind'] == 'joint') + 1}"
        )
        out.append({"id": label, "kind": kind, "values": plain(values)})

    for name, choice in space.items():
        for v in choice.ends(config[name]):
            add("end", {name: _param_type(params[name])(v) if choice.is_range else v})
    rng = np.random.default_rng(task_seed(seed, "multiverse", sorted(space)))
    for _ in range(int(samples)):
        add(
            "joint",
            {
                name: choice.draw(rng, _param_type(params[name]), config[name])
                for name, choice in space.items()
            },
        )
    return out
