"""Property-based: generated malformed configurations, overrides and options (well over 500 in
all) are each rejected with exit status 2 and one error line, never a traceback, nothing written.

Two generators read the declarations, so what is added later is covered without editing this
file: every setting of every shipped experiment (its :class:`Param`: type, bounds, choices,
lengths) and every option of ``solve`` and ``train`` (their ``OPTIONS``)."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from toy_experiments import TOY, config_text, invoke, to_toml, toml_value

from gaugedyn.experiments import Param
from gaugedyn.harness._config import TOP_LEVEL_KEYS

TESTS = Path(__file__).parent
SPEC = "toy_experiments:TOY"
SETTINGS = dict(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
INTS = ("n_tasks", "size")
FLOATS = ("scale", "sleep", "bound")
LISTS = ("fail_on", "diverge_on")

valid_params = st.fixed_dictionaries(
    {},
    optional={
        "n_tasks": st.integers(1, 3),
        "size": st.integers(1, 20),
        "scale": st.floats(0.1, 10),
        "sleep": st.just(0.0),
        "gauge": st.sampled_from(["w", "a"]),
        "fail_on": st.lists(st.integers(0, 5), max_size=2),
    },
)

not_int = st.one_of(
    TEXT,
    st.floats().filter(lambda x: not float(x).is_integer()),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(IDENT, st.integers(), max_size=1),
)
not_float = st.one_of(
    TEXT,
    st.booleans(),
    st.lists(st.floats(), max_size=2),
    st.dictionaries(IDENT, st.integers(), max_size=1),
)
not_str = st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(TEXT, max_size=2))
not_list = st.one_of(
    st.integers(),
    TEXT,
    st.floats(),
    st.booleans(),
    st.dictionaries(IDENT, st.integers(), max_size=1),
)


def wrong_type():
    return st.one_of(
        st.tuples(st.sampled_from(INTS), not_int),
        st.tuples(st.sampled_from(FLOATS), not_float),
        st.tuples(st.just("gauge"), not_str),
        st.tuples(st.sampled_from(LISTS), not_list),
    )


def out_of_range():
    return st.one_of(
        st.tuples(
            st.just("n_tasks"), st.one_of(st.integers(max_value=0), st.integers(min_value=201))
        ),
        st.tuples(
            st.just("size"), st.one_of(st.integers(max_value=0), st.integers(10_001, 2**63 - 1))
        ),
        st.tuples(st.sampled_from(["scale", "bound"]), st.floats(max_value=0.0, allow_nan=False)),
        st.tuples(
            st.just("sleep"),
            st.one_of(
                st.floats(max_value=-1e-9, allow_nan=False),
                st.floats(min_value=2.0001, allow_nan=False),
            ),
        ),
        st.tuples(st.sampled_from(FLOATS), st.sampled_from([math.nan, math.inf, -math.inf])),
        st.tuples(st.just("gauge"), TEXT.filter(lambda s: s not in ("w", "a"))),
        st.tuples(
            st.sampled_from(LISTS),
            st.lists(
                st.one_of(
                    st.integers(max_value=-1), st.integers(min_value=10_000), TEXT, st.floats()
                ),
                min_size=1,
                max_size=3,
            ),
        ),
    )


bad_seed = st.one_of(
    st.integers(max_value=-1), st.floats(), TEXT, st.booleans(), st.lists(st.integers(), max_size=2)
)
bad_spec = st.one_of(
    st.integers(),
    st.lists(TEXT, max_size=2),
    st.booleans(),
    IDENT.map(lambda s: "no_such_" + s),
    IDENT.map(lambda s: "no_such_module_zz." + s + ":EXPERIMENT"),
    st.tuples(TEXT, st.sampled_from([" ", "-", "/", "!", "A", ".."])).map("".join),
)


@st.composite
def malformed_config(draw):
    data = {"experiment": SPEC, "seed": draw(st.integers(0, 2**32)), "params": draw(valid_params)}
    quick = draw(st.booleans())
    table = "quick" if quick and draw(st.booleans()) else "params"
    data.setdefault(table, {})
    kind = draw(
        st.sampled_from(
            ["top", "param", "type", "range", "seed", "spec", "table", "missing", "description"]
        )
    )
    if kind == "top":
        data[draw(IDENT.filter(lambda k: k not in TOP_LEVEL_KEYS))] = draw(st.integers())
    elif kind == "param":
        data[table][draw(IDENT.filter(lambda k: k not in TOY.params))] = draw(st.integers())
    elif kind in ("type", "range"):
        key, value = draw(wrong_type() if kind == "type" else out_of_range())
        data[table][key] = value
    elif kind == "seed":
        data["seed"] = draw(bad_seed.filter(lambda v: type(v) is not int or v < 0))
    elif kind == "spec":
        data["experiment"] = draw(bad_spec)
    elif kind == "table":
        data[draw(st.sampled_from(["params", "quick"]))] = draw(st.one_of(st.integers(), TEXT))
    elif kind == "missing":
        del data["experiment"]
    else:
        data["description"] = draw(st.one_of(st.integers(), st.lists(st.integers(), max_size=2)))
    return to_toml(data), quick


def snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@contextlib.contextmanager
def sandbox(config: str | bytes | None = None):
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        root = Path(tmp)
        if config is not None:
            path = root / "cfg.toml"
            path.write_bytes(config if isinstance(config, bytes) else config.encode())
        yield root


def assert_rejected(argv, root: Path, capsys) -> None:
    before = snapshot(root)
    code, out, err = invoke(argv, capsys)
    assert code == 2, (argv, code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert (
        lines[0].startswith("gaugedyn")
        and "error" in lines[0]
        and "Traceback" not in err
        and out == ""
    )
    assert snapshot(root) == before, argv


@settings(max_examples=180, **SETTINGS)
@given(case=malformed_config())
def test_malformed_configurations(case, capsys):
    text, quick = case
    with sandbox(text) as root:
        assert_rejected(
            ["run", "cfg.toml", "--out", "out", *(["--quick"] if quick else [])], root, capsys
        )


BREAKERS = [
    "=",
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    "\n[",
    "= =",
    "[[",
    ",",
    "\\",
    "\x00",
    "\x7f",
    ".",
    "\n=",
    "#\n=",
    '"""',
    "\n[params]\n",
]


@settings(max_examples=100, **SETTINGS)
@given(
    base=valid_params,
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from(BREAKERS), st.integers(0, 3)),
        min_size=1,
        max_size=3,
    ),
)
def test_syntax_errors(base, edits, capsys):
    text = config_text(seed=1, **base)
    for where, token, drop in edits:
        i = int(where * len(text))
        text = text[:i] + token + text[i + drop :]
    try:
        tomllib.loads(text)
        assume(False)  # still valid TOML: not a syntax case
    except tomllib.TOMLDecodeError:
        pass
    with sandbox(text) as root:
        assert_rejected(["run", "cfg.toml", "--out", "out"], root, capsys)


@settings(max_examples=40, **SETTINGS)
@given(blob=st.one_of(st.binary(max_size=200), TEXT.map(str.encode)))
def test_arbitrary_bytes(blob, capsys):
    with sandbox(blob) as root:
        assert_rejected(["run", "cfg.toml", "--out", "out"], root, capsys)


def toml_literal(text: str) -> bool:
    try:
        return set(tomllib.loads(f"v = {text}")) == {"v"}
    except (tomllib.TOMLDecodeError, RecursionError):
        return False


def valid_workers(text: str) -> bool:
    try:
        return 1 <= int(text) <= 4096
    except ValueError:
        return False


@st.composite
def bad_override(draw):
    kind = draw(st.sampled_from(["noeq", "unknown", "literal", "type", "range", "seed"]))
    if kind == "noeq":
        return draw(TEXT.filter(lambda s: "=" not in s))
    if kind == "unknown":
        return f"{draw(IDENT.filter(lambda k: k not in TOY.params and k != 'seed'))}=1"
    if kind == "literal":
        junk = draw(
            st.one_of(TEXT, st.sampled_from(["[1,", "{a=", '"x', "1 2", "[[]", "0x", "1e"])).filter(
                lambda j: not toml_literal(j.strip())
            )
        )  # never a TOML value
        key = draw(st.sampled_from([*INTS, *LISTS]))
        return f"{key}={junk}"
    if kind == "seed":
        return f"seed={toml_value(draw(bad_seed))}"
    key, value = draw(wrong_type() if kind == "type" else out_of_range())
    return f"{key}={toml_value(value)}"


@settings(max_examples=120, **SETTINGS)
@given(
    bad=bad_override(),
    good=st.lists(st.sampled_from(["n_tasks=2", "seed=4", "gauge=a"]), max_size=2),
    before=st.booleans(),
)
def test_bad_overrides(bad, good, before, capsys):
    sets = [bad, *good] if before else [*good, bad]
    argv = ["run", "cfg.toml", "--out", "out"]
    for item in sets:
        argv += [f"--set={item}"]
    with sandbox(config_text(n_tasks=1)) as root:
        assert_rejected(argv, root, capsys)


@st.composite
def bad_options(draw):
    kind = draw(
        st.sampled_from(
            [
                "workers",
                "executor",
                "scheduler",
                "out",
                "flag",
                "missing",
                "extra",
                "command",
                "reproduce",
                "plot",
            ]
        )
    )
    base = ["run", "cfg.toml"]
    if kind == "workers":
        value = draw(
            st.one_of(
                st.integers(max_value=0),
                st.integers(min_value=4097),
                TEXT.filter(lambda s: not valid_workers(s)),
            )
        )
        return [*base, "--out", "out", f"--workers={value}"], None
    if kind == "executor":
        value = draw(TEXT.filter(lambda s: s not in ("process", "thread", "serial", "dask")))
        return [*base, "--out", "out", f"--executor={value}"], None
    if kind == "scheduler":
        kind_ = draw(st.sampled_from(["process", "thread", "serial"]))
        return [
            *base,
            "--out",
            "out",
            "--executor",
            kind_,
            "--scheduler",
            "tcp://127.0.0.1:8786",
        ], None
    if kind == "out":
        where = draw(st.sampled_from(["file", "under", "foreign", "empty", "nul"]))
        return [
            *base,
            "--out",
            {
                "file": "cfg.toml",
                "under": "cfg.toml/sub",
                "foreign": "mine",
                "empty": "",
                "nul": "a\0b",
            }[where],
        ], where
    if kind == "flag":
        return [*base, "--out", "out", f"--zz{draw(IDENT)}"], None
    if kind == "missing":
        return [
            *base,
            "--out",
            "out",
            draw(st.sampled_from(["--workers", "--set", "--executor", "--out", "--scheduler"])),
        ], None
    if kind == "extra":
        return [*base, draw(IDENT), "--out", "out"], None
    if kind == "command":
        return [f"zz{draw(IDENT)}"], None
    if kind == "reproduce":
        option = draw(st.sampled_from(["only", "simulations", "out"]))
        if option == "only":
            return [
                "reproduce",
                "--simulations",
                "sims",
                "--out",
                "out",
                "--only",
                f"zz{draw(IDENT)}",
            ], "sims"
        if option == "simulations":
            return [
                "reproduce",
                "--simulations",
                draw(st.sampled_from(["nowhere", "cfg.toml"])),
                "--out",
                "out",
            ], None
        return ["reproduce", "--simulations", "sims", "--out", "cfg.toml"], "sims"
    return ["plot", draw(st.sampled_from(["nowhere", "cfg.toml", "."]))], None


@settings(max_examples=100, **SETTINGS)
@given(case=bad_options())
def test_bad_options(case, capsys):
    argv, setup = case
    with sandbox(config_text(n_tasks=1)) as root:
        if setup == "foreign":
            (root / "mine").mkdir()
            (root / "mine" / "notes.txt").write_text("keep")
        if setup == "sims":
            (root / "sims").mkdir()
            (root / "sims" / "one.toml").write_text(config_text(n_tasks=1))
        assert_rejected(argv, root, capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "cfg.toml", "--out", "out", "--set", "n_tasks=[1,"],
        ["run", "cfg.toml", "--out", "out", "--workers", "-3"],
        ["run", "cfg.toml", "--out", "out", "--set", "size=" + "[" * 2000 + "]" * 2000],
        ["run", "deep.toml", "--out", "out"],
        ["plot", "nowhere"],
        ["solve", "--setup", "single", "--dim", "1000000000000000"],
        ["train", "--dim", "10", "--samples", "10", "--root-seed", "-1"],
        ["run", "cfg.toml", "--out", "out", "--scheduler", "not-an-address"],
    ],
)
def test_real_subprocesses_reject_cleanly(tmp_path, argv):
    (tmp_path / "cfg.toml").write_text(config_text(n_tasks=1))
    (tmp_path / "deep.toml").write_text(
        f'experiment = "{SPEC}"\nx = ' + "[" * 3000 + "]" * 3000 + "\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    before = snapshot(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gaugedyn", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------- every experiment


def _experiment_settings() -> list[tuple[str, str, object]]:
    from gaugedyn.experiments import available_experiments, resolve_experiment

    return [
        (name, key, param)
        for name in available_experiments()
        for key, param in resolve_experiment(name).params.items()
    ]


SETTINGS_OF_ALL = _experiment_settings()
NOT_NUMBER = TEXT.filter(lambda s: not _is_number(s))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _types(param) -> tuple:
    return param.type if isinstance(param.type, tuple) else (param.type,)


def beyond_bounds(param, integer: bool):
    """Numbers outside the declared ``[lo, hi]`` (nothing when no bound is declared)."""
    out = []
    if param.hi is not None:
        if integer:
            out.append(st.integers(min_value=math.floor(param.hi) + 1, max_value=2**63 - 1))
        else:
            out.append(
                st.floats(min_value=param.hi, allow_nan=False, allow_infinity=False).filter(
                    lambda v: v > param.hi or (param.hi_open and v == param.hi)
                )
            )
    if param.lo is not None:
        if integer:
            out.append(st.integers(min_value=-(2**63), max_value=math.ceil(param.lo) - 1))
        else:
            out.append(
                st.floats(max_value=param.lo, allow_nan=False, allow_infinity=False).filter(
                    lambda v: v < param.lo or (param.lo_open and v == param.lo)
                )
            )
    return out


def malformed_value(param):
    """Values that ``param`` must refuse, derived from its declaration alone: a wrong type,
    nan or infinity, a number beyond a declared bound, a string outside declared choices, a list
    longer than ``max_len`` or with an element beyond the bounds."""
    types = _types(param)
    numeric = (int in types or float in types) and list not in types
    options = [st.dictionaries(IDENT, st.integers(), min_size=1, max_size=2)]
    if bool not in types:
        options.append(st.booleans())
    if str not in types:
        options.append(NOT_NUMBER)
    if not numeric and str not in types:
        options.append(st.integers())
    if numeric:
        options += [
            st.sampled_from([math.nan, math.inf, -math.inf]),
            st.lists(st.integers(), max_size=2),
        ]
        if float not in types:
            options.append(
                st.floats(allow_nan=False, allow_infinity=False).filter(
                    lambda v: not v.is_integer()
                )
            )
        options += beyond_bounds(param, integer=float not in types)
    if str in types and param.choices is not None:
        options.append(TEXT.filter(lambda s: s not in param.choices))
    if list in types:
        if float in types:  # a bare number is allowed (one value fixes it): only beyond bounds
            options += beyond_bounds(param, integer=False)
        else:
            options.append(st.floats(allow_nan=False))
        if param.max_len is not None and param.default:
            options.append(st.just([param.default[0]] * (param.max_len + 1)))
        if param.default and isinstance(param.default[0], int | float):
            integer = all(type(x) is int for x in param.default)
            options += [
                st.builds(lambda bad: [*param.default[:1], bad], b)
                for b in beyond_bounds(param, integer)
            ]
            options.append(st.just([*param.default[:1], math.nan]))
        wrong_items = {
            int: st.one_of(
                TEXT, st.booleans(), st.floats(allow_nan=False).filter(lambda v: not v.is_integer())
            ),
            float: st.one_of(TEXT, st.booleans()),
            str: st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans()),
        }
        if param.choices is not None:
            options.append(
                st.builds(
                    lambda bad: [*param.default[:1], bad],
                    TEXT.filter(lambda t: t not in param.choices),
                )
            )
        if getattr(param, "item", None) in wrong_items:  # a list of one declared element type
            options.append(
                st.builds(lambda bad: [*param.default[:1], bad], wrong_items[param.item])
            )
    return st.one_of(options)


@st.composite
def malformed_setting(draw):
    name, key, param = draw(st.sampled_from(SETTINGS_OF_ALL))
    return name, key, draw(malformed_value(param)), draw(st.booleans())


@settings(max_examples=200, **SETTINGS)
@given(case=malformed_setting())
def test_every_setting_of_every_experiment_refuses_malformed_values(case, capsys):
    name, key, value, quick = case
    with sandbox(f'experiment = "{name}"\nseed = 0\n') as root:
        argv = ["run", "cfg.toml", "--out", "out", f"--set={key}={toml_value(value)}"]
        assert_rejected([*argv, *(["--quick"] if quick else [])], root, capsys)


def test_every_experiment_has_settings_to_fuzz():
    from gaugedyn.experiments import available_experiments

    assert {name for name, _, _ in SETTINGS_OF_ALL} == set(available_experiments())


# ---------------------------------------------------------------------------- every option


COMMANDS = {
    "solve": ["solve", "--setup", "single", "--dim", "10", "--t-max", "50"],
    "train": ["train", "--dim", "10", "--samples", "20", "--steps", "2", "--seeds", "1"],
}
FREE_FORM = {"solve": {"gauges"}, "train": {"gauges", "device"}}  # checked by hand, fuzzed below


def _specs(command: str) -> dict:
    from gaugedyn.theory._cli import OPTIONS as SOLVE
    from gaugedyn.training._cli import OPTIONS as TRAIN

    return {"solve": SOLVE, "train": TRAIN}[command]


def _value_options(command: str) -> set[str]:
    from gaugedyn.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {a.dest for a in sub._actions if a.option_strings and a.nargs != 0 and a.dest != "help"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_is_declared_with_its_bounds(command):
    specs = _specs(command)
    assert _value_options(command) == set(specs) | FREE_FORM[command]
    for name, spec in specs.items():
        # bounded from above, or a name its check resolves (an activation)
        assert spec.choices is not None or spec.hi is not None or spec.check is not None, name
        assert spec.choices is None or "" not in spec.choices


def malformed_option_text(spec):
    if spec.choices is not None:
        return TEXT.filter(lambda s: s not in spec.choices)
    if spec.type is str:  # a name (no ':', so no user module is imported here)
        return TEXT.filter(lambda s: ":" not in s and spec.validate(s) is not None)
    numbers = [
        st.sampled_from(["", "nan", "inf", "-inf", "1e400", "0x10", "1,5", "ten"]),
        NOT_NUMBER,
    ]
    if spec.type is int:
        numbers.append(
            st.floats(allow_nan=False, allow_infinity=False)
            .filter(lambda v: not v.is_integer())
            .map(repr)
        )
    if spec.hi is not None:
        numbers += [st.integers(min_value=math.floor(spec.hi) + 1, max_value=10**40).map(str)]
        numbers += [st.just(repr(float(spec.hi)))] if spec.hi_open else []
    if spec.lo is not None:
        numbers += [st.integers(max_value=math.ceil(spec.lo) - 1, min_value=-(10**40)).map(str)]
        numbers += [st.just(repr(float(spec.lo)))] if spec.lo_open else []
    return st.one_of(numbers)


@st.composite
def malformed_option(draw):
    command = draw(st.sampled_from(sorted(COMMANDS)))
    specs = _specs(command)
    name = draw(st.sampled_from(sorted(set(specs) | FREE_FORM[command])))
    flag = "--" + name.replace("_", "-")
    if name == "gauges":
        junk = draw(TEXT.filter(lambda s: s.strip() not in ("w-heavy", "a-heavy", "balanced")))
        return [*COMMANDS[command], "--setup", "duplicates", f"--gauges=w-heavy,{junk}"]
    if name == "device":
        return [*COMMANDS[command], f"--device={draw(TEXT.filter(lambda s: s != 'cpu'))}"]
    return [*COMMANDS[command], f"{flag}={draw(malformed_option_text(specs[name]))}"]


@settings(max_examples=150, **SETTINGS)
@given(argv=malformed_option())
def test_every_option_of_solve_and_train_refuses_malformed_values(argv, capsys):
    with sandbox() as root:
        assert_rejected(argv, root, capsys)


SYNTHETIC = {
    "count": Param(int, 5, lo=1, hi=10, why="test"),
    "rate": Param(float, 0.5, lo=0, hi=1, lo_open=True, hi_open=True, why="test"),
    "either": Param((int, float), 2, lo=1, hi=1e3, why="test"),
    "dims": Param(list, [10, 100], lo=2, hi=10**5, min_len=1, max_len=4, distinct=True, why="t"),
    "mode": Param(str, "a", choices=("a", "b")),
    "sizes": Param(list, [3], item=int, lo=1, hi=100, max_len=3, why="test"),
    "names": Param(list, ["a"], item=str, choices=("a", "b"), why="test"),
}


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_the_setting_generator_yields_only_refused_values(data):
    """The generator itself can fail: every value it draws must be refused by the declaration
    (so the test above cannot pass by generating values that are allowed)."""
    from gaugedyn import InputError
    from gaugedyn.harness._config import check_param

    key = data.draw(st.sampled_from(sorted(SYNTHETIC)))
    value = data.draw(malformed_value(SYNTHETIC[key]))
    with pytest.raises(InputError):
        check_param(key, value, SYNTHETIC[key], "test")


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_the_option_generator_yields_only_refused_values(data):
    from gaugedyn import InputError

    command = data.draw(st.sampled_from(sorted(COMMANDS)))
    specs = _specs(command)
    spec = specs[data.draw(st.sampled_from(sorted(specs)))]
    with pytest.raises(InputError):
        spec.parse(data.draw(malformed_option_text(spec)))
