"""Settings declared once, beside their engines: every command-line option of ``solve``,
``check-activation`` and ``train`` is an engine's declaration (or one the command alone has), its
help states the declaration's bounds and default, a bad value is refused with the declaration's
text (exit status 2), the engines' own defaults are the declarations', and no engine imports a
command-line module."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
from pathlib import Path

import pytest

from gaugedyn._options import Param, value_text
from gaugedyn.cli import build_parser, main

SRC = Path(__file__).resolve().parents[1] / "src" / "gaugedyn"

BASE = {  # a valid command for each, as {flag: value}
    "solve": {"--setup": "single", "--dim": "10", "--t-max": "50"},
    "check-activation": {},
    "train": {"--dim": "10", "--samples": "20", "--steps": "2", "--seeds": "1"},
}
POSITIONAL = {"check-activation": ["relu"]}
OWN = {  # the options only the command line has, declared in its module
    "solve": {"setup", "scale"},
    "check-activation": set(),
    "train": {"setup", "dim", "scale", "strength"},
}
OWN_DEFAULTS = {("train", "seeds"): 4}  # a command's default that differs from the engine's
WORKED_OUT = {("solve", "gauge"), ("train", "gauge"), ("train", "samples"), ("train", "lr")}
"""Options the command leaves unset by default where the engine has a default value: the gauge
is for ``--setup single`` only, ``--samples`` and ``--online`` exclude each other, and the step
size is ``0.5 / (s D)``."""


def _options(command: str) -> dict[str, Param]:
    from gaugedyn.theory import _activation
    from gaugedyn.theory import _cli as solve_cli
    from gaugedyn.training import _cli as train_cli

    return {
        "solve": solve_cli.OPTIONS,
        "check-activation": _activation.PARAMS,
        "train": train_cli.OPTIONS,
    }[command]


def _engine_params(command: str) -> dict[str, Param]:
    from gaugedyn.theory import PARAMS as THEORY
    from gaugedyn.theory import _activation
    from gaugedyn.training._params import PARAMS as TRAINING

    if command == "check-activation":
        return dict(_activation.PARAMS)
    return {**THEORY, **(TRAINING if command == "train" else {})}


def _subparser(command: str):
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices[command]


def _help_of(command: str) -> dict[str, str]:
    """Each option's help as ``--help`` prints it (``%`` expanded, not wrapped), by destination."""
    sub = _subparser(command)
    formatter = sub._get_formatter()
    return {
        a.dest: formatter._expand_help(a)
        for a in sub._actions
        if a.option_strings and a.help is not None
    }


@pytest.mark.parametrize("command", sorted(BASE))
def test_every_option_is_its_engines_declaration(command):
    options, engine = _options(command), _engine_params(command)
    for name, option in options.items():
        if name in OWN[command]:
            assert name not in engine or engine[name] is not option, name
        else:
            assert engine[name] is option, f"{command} --{name} restates its declaration"
    assert OWN[command] <= set(options)


@pytest.mark.parametrize("command", sorted(BASE))
def test_every_option_help_states_the_declared_bounds_and_default(command):
    options = _options(command)
    helps = _help_of(command)
    actions = {a.dest: a for a in _subparser(command)._actions}
    assert set(options) <= set(helps)
    for name, option in options.items():
        help_, action = helps[name], actions[name]
        assert action.option_strings == [option.flag]
        assert option.help and help_.startswith(option.help), name
        assert option.describe() in help_, name  # the range (or choices) and why
        if action.required:
            assert help_.endswith("; required"), name
            continue
        default = OWN_DEFAULTS.get((command, name), option.default)
        if action.default is None:  # a default the command works out, said in words
            assert "; default: " in help_, name
            assert option.default is None or (command, name) in WORKED_OUT, name
        else:
            assert action.default == default, name
            assert help_.endswith(f"; default: {value_text(default)}"), name
            assert option.parse(action.default) == default, name  # the default is allowed


def _bad_values(option: Param) -> list[str]:
    if option.choices is not None:
        return ["not-a-" + option.name]
    bad = []
    if option.hi is not None:
        hi = option.hi
        bad.append(
            value_text(hi)
            if option.hi_open
            else str(int(hi) + 1)
            if option.type is int
            else repr(hi * 10 if hi > 0 else hi + 1)
        )
    if option.lo is not None:
        lo = option.lo
        bad.append(
            value_text(lo)
            if option.lo_open
            else str(math.ceil(lo) - 1)
            if option.type is int
            else repr(lo / 10 if lo > 0 else lo - 1)
        )
    return bad


CASES = [
    (command, name, bad)
    for command in sorted(BASE)
    for name, option in _options(command).items()
    for bad in _bad_values(option)
]


@pytest.mark.parametrize("command,name,bad", CASES, ids=[f"{c}-{n}-{b}" for c, n, b in CASES])
def test_a_bad_value_is_refused_with_the_declarations_text(command, name, bad, capsys):
    option = _options(command)[name]
    args = {**BASE[command], option.flag: bad}
    argv = [command, *POSITIONAL.get(command, []), *(x for kv in args.items() for x in kv)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"gaugedyn {command}: error: {option.flag}={bad!r} is not allowed; "
        f"allowed: {option.describe()}"
    )


def test_the_bad_values_are_out_of_bounds():
    from gaugedyn._errors import InputError

    for command, name, bad in CASES:
        with pytest.raises(InputError, match="is not allowed"):
            _options(command)[name].parse(bad)
    assert len(CASES) > 40


def _engine_defaults():
    from gaugedyn.theory import (
        PARAMS,
        Definitions,
        _activation,
        check_activation,
        duplicates,
        initial_state,
        single,
        solve,
        solve_batch,
    )
    from gaugedyn.training import TrainConfig, train
    from gaugedyn.training._params import PARAMS as TRAINING

    for fn in (single, duplicates, solve, solve_batch, initial_state):
        yield fn, PARAMS
    yield check_activation, _activation.PARAMS
    yield train, TRAINING
    yield from ((Definitions, PARAMS), (TrainConfig, TRAINING))


def test_the_engines_defaults_are_their_declarations():
    checked = 0
    for fn, params in _engine_defaults():
        if dataclasses.is_dataclass(fn):
            defaults = {f.name: f.default for f in dataclasses.fields(fn)}
        else:
            defaults = {p.name: p.default for p in inspect.signature(fn).parameters.values()}
        for name, default in defaults.items():
            if name in params and default is not inspect.Parameter.empty:
                assert default == params[name].default, f"{fn.__name__}({name}={default!r})"
                checked += 1
    assert checked >= 30


def test_a_refused_engine_argument_names_the_declaration():
    from gaugedyn._errors import InputError
    from gaugedyn.theory import PARAMS, Definitions, single, solve
    from gaugedyn.training import TrainConfig
    from gaugedyn.training._params import PARAMS as TRAINING

    with pytest.raises(InputError) as err:
        solve(single(4, "w-heavy"), rtol=1.0, t_max=1.0)
    assert str(err.value).endswith(PARAMS["rtol"].describe())
    with pytest.raises(InputError) as err:
        Definitions(threshold=1.0)
    assert str(err.value).endswith(PARAMS["threshold"].describe())
    with pytest.raises(InputError) as err:
        TrainConfig(weight_decay=1e4)
    assert str(err.value).endswith(TRAINING["weight_decay"].describe())


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
            names.update("." * node.level + (node.module or "") + "." + a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_engine_imports_a_command_line_module():
    offenders = []
    for folder in ("theory", "training"):
        for path in sorted((SRC / folder).glob("*.py")):
            if path.name == "_cli.py":
                continue
            offenders += [
                f"{folder}/{path.name} imports {name}"
                for name in _imports(path)
                if name.split(".")[-1] == "_cli"
            ]
    assert not offenders, "\n".join(offenders)
