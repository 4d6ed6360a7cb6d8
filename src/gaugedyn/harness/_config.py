"""Declared configurations: a TOML file naming an experiment, its root seed and its parameters.

A configuration file reads::

    experiment = "dimension_scaling"   # gaugedyn.experiments.<name>, or "package.module:ATTR"
    seed = 0                           # root seed; every task seed derives from it
    description = "optional text"

    [params]                           # validated against the experiment's ``params`` schema
    dims = [10, 100, 1000, 10000]

    [quick]                            # optional: values used under --quick
    dims = [10, 100]

    [space.rtol]                       # optional: narrow or extend the declared set-up space
    values = [1e-8, 1e-10]
    why = "both resolve the event times"

Resolution order of a parameter: the schema default, then ``[params]``; under ``--quick`` the
schema's ``quick`` value and then ``[quick]`` take precedence; ``--set key=value`` overrides last.
Every user-supplied value is checked (type, finiteness, the schema's ``check``), then the
experiment's optional ``validate(config)`` checks the settings together; the experiment's
set-up space (``space``, with the file's ``[space]`` tables applied) and its known-answer controls
are checked as declarations; a rejected value raises `gaugedyn.InputError` naming the key,
the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import InputError, oneline
from .._json import plain
from ._protocol import Experiment, Param
from ._registry import EXPERIMENTS

TOP_LEVEL_KEYS = ("experiment", "seed", "description", "params", "quick", "space")
MAX_SEED = 2**64 - 1
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class RunConfig:
    """A validated configuration: the experiment, its root seed, its parameters and its tasks."""

    spec: str | None
    experiment: Experiment
    name: str
    seed: int
    params: dict[str, Any]
    quick: bool = False
    source: str | None = None
    description: str = ""
    overrides: tuple[str, ...] = ()
    tasks: list[dict] = field(default_factory=list)
    space: dict = field(default_factory=dict)
    """The declared set-up space (setting -> `._space.Choice`), the file's ``[space]``
    tables applied; checked."""
    shared: tuple[str, ...] = ()
    """The settings a multiverse's shared pass gave this configuration
    (`gaugedyn.harness.Experiment.shared_values()`): they leave its runs and findings as they
    are, so they never make a run "provisional" (`._summary.label_keys()`)."""

    @property
    def module(self) -> str:
        """The module that defines the experiment (the scope of its code identity)."""
        if self.spec is not None:
            return self.spec.partition(":")[0] if ":" in self.spec else EXPERIMENTS[self.spec]
        return type(self.experiment).__module__

    def code_identity(self) -> dict:
        """`gaugedyn._meta.code_identity()` of the experiment's code (cached per process)."""
        from .._meta import code_identity

        return code_identity(self.module)

    def to_dict(self) -> dict:
        return plain(
            {
                "experiment": self.spec if self.spec is not None else self.name,
                "name": self.name,
                "seed": self.seed,
                "quick": self.quick,
                "source": self.source,
                "description": self.description,
                "overrides": list(self.overrides),
                "params": self.params,
            }
        )


def available_experiments() -> list[str]:
    """Names of the experiments shipped in `gaugedyn.experiments` (the registry's keys).

    Returns
    -------
    list of str
        The registered experiment names, sorted; each is a valid ``experiment`` value of a
        configuration file.
    """
    return sorted(EXPERIMENTS)


def resolve_experiment(spec: Any, where: str = "experiment") -> Experiment:
    """The experiment object named by ``spec``: ``"name"`` or ``"package.module:ATTR"``.

    Parameters
    ----------
    spec : Any
        A registered experiment name (`available_experiments()`) or ``"package.module:ATTR"``
        naming an `Experiment` instance in an importable module.
    where : str
        What the value is, as error messages name it (``"<file>: experiment"``).

    Returns
    -------
    Experiment
        The experiment object.

    Raises
    ------
    InputError
        When ``spec`` is not a string, is neither a well-formed name nor ``package.module:ATTR``,
        names no registered experiment or no importable module, or the attribute is not an
        `Experiment` instance.
    """
    if not isinstance(spec, str):
        raise InputError(f"{where} = {show(spec)} must be a string naming an experiment")
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        if not _DOTTED.fullmatch(module_name) or not attr.isidentifier():
            raise InputError(
                f"{where} = {show(spec)} is not allowed; allowed: an experiment name or "
                "'package.module:ATTRIBUTE'"
            )
    else:
        if not _NAME.fullmatch(spec):
            raise InputError(
                f"{where} = {show(spec)} is not allowed; allowed: one of "
                f"{', '.join(available_experiments()) or '(none installed)'}"
            )
        if spec not in EXPERIMENTS:
            raise InputError(
                f"{where} = {show(spec)}: no such experiment; allowed: one of "
                f"{', '.join(available_experiments())}, or 'package.module:ATTRIBUTE'"
            )
        module_name, attr = EXPERIMENTS[spec], "EXPERIMENT"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not module_name.startswith(err.name):
            raise
        choices = ", ".join(available_experiments()) or "(none installed)"
        raise InputError(
            f"{where} = {show(spec)}: no such experiment; allowed: one of {choices}, "
            "or 'package.module:ATTRIBUTE'"
        ) from None
    experiment = getattr(module, attr, None)
    if not isinstance(experiment, Experiment):
        raise InputError(
            f"{where} = {show(spec)}: {module_name}.{attr} is not a gaugedyn Experiment instance"
        )
    return experiment


def show(value: Any, limit: int = 60) -> str:
    """A one-line rendering of a user value for error messages.

    Parameters
    ----------
    value : Any
        The value: JSON when it is JSON-serialisable (ASCII only), else its ``repr`` with
        non-ASCII characters escaped; line breaks are shown as ``\\n`` and ``\\r``.
    limit : int
        The most characters; longer text is cut to ``limit - 3`` and ends in ``...``.

    Returns
    -------
    str
        The rendering, on one line.
    """
    try:
        text = json.dumps(plain(value), ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value).encode("ascii", "backslashreplace").decode()
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_names(types: tuple[type, ...]) -> str:
    """The types in words with their article: ``an integer or number``, ``a string``."""
    names = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list"}
    text = " or ".join(names.get(t, t.__name__) for t in types)
    return ("an " if text[:1].lower() in "aeiou" else "a ") + text


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def check_param(name: str, value: Any, param: Param, where: str) -> Any:
    """``value`` converted to the schema's type, or `InputError` naming what is allowed."""
    types = param.type if isinstance(param.type, tuple) else (param.type,)
    if float in types and type(value) is int and int not in types:
        value = float(value)
    if list in types and isinstance(value, tuple):
        value = list(value)
    allowed = param.describe() or _type_names(types)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise InputError(
            f"{where}: {name} = {show(value)} has the wrong type ({type(value).__name__}); "
            f"allowed: {_type_names(types)}"
            + (f", {param.allowed}" if param.allowed else f" ({allowed})")
        )
    if not _finite(value):
        raise InputError(
            f"{where}: {name} = {show(value)} is not allowed (nan or inf); allowed: {allowed}"
        )
    problem = param.validate(value)
    if problem is not None:
        raise InputError(f"{where}: {name} = {show(value)} is not allowed; allowed: {problem}")
    return value


def check_seed(value: Any, where: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_SEED:
        raise InputError(
            f"{where}: seed = {show(value)} is not allowed; allowed: an integer in [0, 2**64)"
        )
    return value


def _unknown(key: str, allowed: Iterable[str], where: str, prefix: str = "") -> InputError:
    allowed = sorted(allowed)
    near = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {prefix}{near[0]}?)" if near else ""
    return InputError(
        f"{where}: unknown key {show(prefix + key)}{hint}; allowed: "
        f"{', '.join(prefix + k for k in allowed) or '(none)'}"
    )


def parse_override(text: str) -> tuple[str, Any]:
    """``"key=value"`` with ``value`` a TOML literal (a bare word reads as a string).

    Parameters
    ----------
    text : str
        One ``--set`` argument, ``key=value``; a ``params.`` prefix of the key is dropped, and
        ``value`` is a TOML literal (``3``, ``0.5``, ``true``, ``"text"``, ``[1, 2]``) or a bare
        word (letters, digits, ``_.-``), read as a string.

    Returns
    -------
    tuple of (str, Any)
        ``(key, value)``, the value parsed; `make_config()` checks both against the schema.

    Raises
    ------
    InputError
        When ``text`` holds no ``=``, the key is empty, or the value is neither a TOML literal
        nor a bare word.
    """
    if not isinstance(text, str) or "=" not in text:
        raise InputError(f"--set {show(text)}: expected key=value, e.g. --set dims=[10,100]")
    key, _, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if key.startswith("params."):
        key = key[len("params.") :]
    if not key:
        raise InputError(f"--set {show(text)}: the key is empty; expected key=value")
    parsed = None
    if "\n" not in raw and "\r" not in raw:
        try:
            parsed = tomllib.loads(f"v = {raw}")
        except (tomllib.TOMLDecodeError, RecursionError, ValueError):
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", raw):
                return key, raw
    if parsed is None or set(parsed) != {"v"}:
        raise InputError(
            f"--set {show(text)}: the value {show(raw)} is not a TOML value "
            '(e.g. 3, 0.5, true, "text", [1, 2])'
        )
    return key, parsed["v"]


def read_toml(path: str | Path) -> dict:
    """The parsed TOML file, or `InputError` with the parser's line and column."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: configuration file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected a .toml configuration file") from None
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: cannot read the configuration file ({oneline(err)})") from None
    try:
        text = data.decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(
            f"{path}: malformed TOML: not UTF-8 text (at line {line}, byte {err.start})"
        ) from None
    except tomllib.TOMLDecodeError as err:
        message = oneline(err)
        if "(at end of document)" in message:
            line = text.count("\n") + 1
            column = len(text) - (text.rfind("\n") + 1) + 1
            message = message.replace(
                "(at end of document)", f"(at end of document, line {line}, column {column})"
            )
        raise InputError(f"{path}: malformed TOML: {message}") from None
    except RecursionError:
        raise InputError(f"{path}: malformed TOML: nested too deeply") from None
    except ValueError as err:  # an integer past Python's 4300-digit conversion limit
        digits = re.search(r"has (\d+) digits", str(err))
        raise InputError(
            f"{path}: an integer in the file is too long"
            + (f" ({digits[1]} digits)" if digits else "")
            + "; allowed: integers of at most 4300 digits (every setting's bound is far below)"
        ) from None


def load_config(
    path: str | Path, *, quick: bool = False, overrides: Iterable[str] = ()
) -> RunConfig:
    """Read, validate and resolve a configuration file (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The TOML configuration file.
    quick : bool
        Whether to resolve the ``--quick`` values (the schema's ``quick`` and the ``[quick]``
        table).
    overrides : Iterable[str]
        ``--set`` arguments, ``key=value`` each (`parse_override()`), applied last.

    Returns
    -------
    RunConfig
        The validated configuration, its tasks built.

    Raises
    ------
    InputError
        When the file is missing, unreadable or malformed TOML (naming the line and column), or
        any setting is rejected (`make_config()`).
    """
    data = read_toml(path)
    return make_config(data, quick=quick, overrides=overrides, source=str(path))


def make_config(
    data: Mapping[str, Any] | Experiment,
    *,
    quick: bool = False,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    source: str | None = None,
    seed: int | None = None,
) -> RunConfig:
    r"""Validate a configuration given as a parsed TOML mapping (or an experiment object).

    ``overrides`` are ``"key=value"`` strings or a mapping; the key ``seed`` sets the root seed.

    Parameters
    ----------
    data : Mapping[str, Any] or Experiment
        The parsed file: ``experiment`` (required), ``seed``, ``description``, ``params``,
        ``quick`` and ``space``, and no other key; an `Experiment` object stands for
        ``{"experiment": data, "seed": seed or 0}``.
    quick : bool
        Whether the ``--quick`` values take precedence over ``[params]``.
    overrides : Iterable[str] or Mapping[str, Any]
        Values applied last, each key once: ``"key=value"`` strings or a mapping; a key is a
        parameter of the schema or ``seed``.
    source : str, optional
        Where the configuration came from (its file), as error messages and the result name it.
    seed : int, optional
        The root seed when ``data`` is an `Experiment` (default 0); ignored for a mapping, whose
        ``seed`` key sets it.

    Returns
    -------
    RunConfig
        The validated configuration: the experiment, root seed, resolved parameters, applied
        overrides, declared set-up space and task list.

    Raises
    ------
    InputError
        When ``data`` is not a table, has an unknown key or no ``experiment``, the experiment
        cannot be resolved, the seed is not an integer in $[0, 2^{64})$, a parameter or override
        is unknown, of the wrong type, non-finite or outside what the schema allows, a key is
        overridden twice, or the experiment's ``validate``, set-up space or controls reject the
        settings.
    TypeError
        When the experiment's ``tasks`` returns an entry that is not a dict.
    """
    where = source or "configuration"
    if isinstance(data, Experiment):
        data = {"experiment": data, "seed": 0 if seed is None else seed}
    if not isinstance(data, Mapping):
        raise InputError(f"{where}: expected a table of settings")
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise _unknown(str(key), TOP_LEVEL_KEYS, where)
    if "experiment" not in data:
        raise InputError(f"{where}: missing key 'experiment' (the experiment to run)")
    spec = data["experiment"]
    if isinstance(spec, Experiment):
        experiment, spec = spec, None
    else:
        experiment = resolve_experiment(spec, f"{where}: experiment")
    name = experiment.name or (spec or type(experiment).__name__)
    root_seed = check_seed(data.get("seed", 0), where)
    description = data.get("description", experiment.description)
    if not isinstance(description, str):
        raise InputError(f"{where}: description = {show(description)} must be a string")

    schema = experiment.params
    tables = {}
    for table in ("params", "quick"):
        values = data.get(table, {})
        if not isinstance(values, Mapping):
            raise InputError(f"{where}: {table} = {show(values)} must be a table ([{table}])")
        for key, value in values.items():
            if key not in schema:
                raise _unknown(str(key), schema, where, f"{table}.")
            check_param(f"{table}.{key}", value, schema[key], where)
        tables[table] = values

    params: dict[str, Any] = {}
    for key, param in schema.items():
        value = param.default
        if key in tables["params"]:
            value = check_param(f"params.{key}", tables["params"][key], param, where)
        if quick:
            if key in tables["quick"]:
                value = check_param(f"quick.{key}", tables["quick"][key], param, where)
            elif param.quick is not None:
                value = param.quick
        params[key] = value

    items = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides)
    applied = []
    seen: set[str] = set()
    for key, value in items:
        if key in seen:
            raise InputError(
                f"--set: {key} is given twice; allowed: each key once (which value did you mean?)"
            )
        seen.add(key)
        if key == "seed":
            root_seed = check_seed(value, "--set")
        elif key in schema:
            params[key] = check_param(key, value, schema[key], "--set")
        else:
            raise _unknown(key, [*schema, "seed"], "--set")
        applied.append(f"{key}={show(value, limit=10**6)}")

    from ._controls import declared_controls
    from ._space import declared_space

    cfg = RunConfig(
        spec=spec,
        experiment=experiment,
        name=name,
        seed=root_seed,
        params=params,
        quick=quick,
        source=source,
        description=description,
        overrides=tuple(applied),
        space=declared_space(experiment, data.get("space"), where),
    )
    cfg = dataclasses.replace(cfg, tasks=_tasks(cfg, where))
    declared_controls(experiment, params, f"{where}: controls")
    return cfg


def _validate(experiment: Experiment, params: dict, where: str) -> None:
    """The experiment's optional ``validate(config)``: a check of the settings together (e.g. a
    fit needs two points above its threshold), run before any task is built."""
    validate = getattr(experiment, "validate", None)
    if validate is None:
        return
    try:
        validate(dict(params))
    except InputError as err:
        raise InputError(f"{where}: {oneline(err)}") from None


def _tasks(cfg: RunConfig, where: str) -> list[dict]:
    """The experiment's task list (after its optional ``validate``), checked to be
    JSON-serialisable dicts."""
    _validate(cfg.experiment, cfg.params, where)
    try:
        tasks = list(cfg.experiment.tasks(dict(cfg.params)))
    except InputError as err:
        raise InputError(f"{where}: {oneline(err)}") from None
    out = []
    for task in tasks:
        if not isinstance(task, Mapping):
            raise TypeError(f"{cfg.name}.tasks() returned {task!r}; each task must be a dict")
        value = plain(dict(task))
        json.dumps(value, sort_keys=True, allow_nan=False)
        out.append(value)
    return out
