"""Property-based: generated malformed configurations, overrides and options (well over 500 in
all) are each rejected with exit status 2 and one error line, never a traceback, nothing written."""

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

from gaugedyn.experiments._config import TOP_LEVEL_KEYS

TESTS = Path(__file__).parent
SPEC = "toy_experiments:TOY"
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])
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

not_int = st.one_of(TEXT, st.floats().filter(lambda x: not float(x).is_integer()), st.booleans(),
                    st.lists(st.integers(), max_size=2), st.dictionaries(IDENT, st.integers(), max_size=1))
not_float = st.one_of(TEXT, st.booleans(), st.lists(st.floats(), max_size=2),
                      st.dictionaries(IDENT, st.integers(), max_size=1))
not_str = st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(TEXT, max_size=2))
not_list = st.one_of(st.integers(), TEXT, st.floats(), st.booleans(),
                     st.dictionaries(IDENT, st.integers(), max_size=1))


def wrong_type():
    return st.one_of(
        st.tuples(st.sampled_from(INTS), not_int),
        st.tuples(st.sampled_from(FLOATS), not_float),
        st.tuples(st.just("gauge"), not_str),
        st.tuples(st.sampled_from(LISTS), not_list),
    )


def out_of_range():
    return st.one_of(
        st.tuples(st.just("n_tasks"), st.one_of(st.integers(max_value=0), st.integers(min_value=201))),
        st.tuples(st.just("size"), st.one_of(st.integers(max_value=0), st.integers(10_001, 2**63 - 1))),
        st.tuples(st.sampled_from(["scale", "bound"]), st.floats(max_value=0.0, allow_nan=False)),
        st.tuples(st.just("sleep"), st.one_of(st.floats(max_value=-1e-9, allow_nan=False),
                                              st.floats(min_value=2.0001, allow_nan=False))),
        st.tuples(st.sampled_from(FLOATS), st.sampled_from([math.nan, math.inf, -math.inf])),
        st.tuples(st.just("gauge"), TEXT.filter(lambda s: s not in ("w", "a"))),
        st.tuples(st.sampled_from(LISTS), st.lists(
            st.one_of(st.integers(max_value=-1), st.integers(min_value=10_000), TEXT, st.floats()),
            min_size=1, max_size=3)),
    )


bad_seed = st.one_of(st.integers(max_value=-1), st.floats(), TEXT, st.booleans(),
                     st.lists(st.integers(), max_size=2))
bad_spec = st.one_of(
    st.integers(), st.lists(TEXT, max_size=2), st.booleans(),
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
    kind = draw(st.sampled_from(
        ["top", "param", "type", "range", "seed", "spec", "table", "missing", "description"]))
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
    assert lines[0].startswith("gaugedyn") and "error" in lines[0] and "Traceback" not in err and out == ""
    assert snapshot(root) == before, argv


@settings(max_examples=180, **SETTINGS)
@given(case=malformed_config())
def test_malformed_configurations(case, capsys):
    text, quick = case
    with sandbox(text) as root:
        assert_rejected(["run", "cfg.toml", "--out", "out", *(["--quick"] if quick else [])], root, capsys)


BREAKERS = ["=", "[", "]", "{", "}", '"', "'", "\n[", "= =", "[[", ",", "\\", "\x00", "\x7f", ".",
            "\n=", "#\n=", '"""', "\n[params]\n"]


@settings(max_examples=100, **SETTINGS)
@given(
    base=valid_params,
    edits=st.lists(st.tuples(st.floats(0, 1), st.sampled_from(BREAKERS), st.integers(0, 3)),
                   min_size=1, max_size=3),
)
def test_syntax_errors(base, edits, capsys):
    text = config_text(seed=1, **base)
    for where, token, drop in edits:
        i = int(where * len(text))
        text = text[:i] + token + text[i + drop:]
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
        junk = draw(st.one_of(TEXT, st.sampled_from(["[1,", "{a=", '"x', "1 2", "[[]", "0x", "1e"]))
                    .filter(lambda j: not toml_literal(j.strip())))  # never a TOML value
        key = draw(st.sampled_from([*INTS, *LISTS]))
        return f"{key}={junk}"
    if kind == "seed":
        return f"seed={toml_value(draw(bad_seed))}"
    key, value = draw(wrong_type() if kind == "type" else out_of_range())
    return f"{key}={toml_value(value)}"


@settings(max_examples=120, **SETTINGS)
@given(bad=bad_override(), good=st.lists(st.sampled_from(["n_tasks=2", "seed=4", "gauge=a"]), max_size=2),
       before=st.booleans())
def test_bad_overrides(bad, good, before, capsys):
    sets = [bad, *good] if before else [*good, bad]
    argv = ["run", "cfg.toml", "--out", "out"]
    for item in sets:
        argv += [f"--set={item}"]
    with sandbox(config_text(n_tasks=1)) as root:
        assert_rejected(argv, root, capsys)


@st.composite
def bad_options(draw):
    kind = draw(st.sampled_from(
        ["workers", "executor", "scheduler", "out", "flag", "missing", "extra", "command",
         "reproduce", "plot"]))
    base = ["run", "cfg.toml"]
    if kind == "workers":
        value = draw(st.one_of(st.integers(max_value=0), st.integers(min_value=4097),
                               TEXT.filter(lambda s: not valid_workers(s))))
        return [*base, "--out", "out", f"--workers={value}"], None
    if kind == "executor":
        value = draw(TEXT.filter(lambda s: s not in ("process", "thread", "serial", "dask")))
        return [*base, "--out", "out", f"--executor={value}"], None
    if kind == "scheduler":
        kind_ = draw(st.sampled_from(["process", "thread", "serial"]))
        return [*base, "--out", "out", "--executor", kind_, "--scheduler", "tcp://127.0.0.1:8786"], None
    if kind == "out":
        where = draw(st.sampled_from(["file", "under", "foreign", "empty", "nul"]))
        return [*base, "--out", {"file": "cfg.toml", "under": "cfg.toml/sub", "foreign": "mine",
                                 "empty": "", "nul": "a\0b"}[where]], where
    if kind == "flag":
        return [*base, "--out", "out", f"--zz{draw(IDENT)}"], None
    if kind == "missing":
        return [*base, "--out", "out", draw(st.sampled_from(["--workers", "--set", "--executor",
                                                             "--out", "--scheduler"]))], None
    if kind == "extra":
        return [*base, draw(IDENT), "--out", "out"], None
    if kind == "command":
        return [f"zz{draw(IDENT)}"], None
    if kind == "reproduce":
        option = draw(st.sampled_from(["only", "simulations", "out"]))
        if option == "only":
            return ["reproduce", "--simulations", "sims", "--out", "out", "--only", f"zz{draw(IDENT)}"], "sims"
        if option == "simulations":
            return ["reproduce", "--simulations", draw(st.sampled_from(["nowhere", "cfg.toml"])), "--out", "out"], None
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
    ],
)
def test_real_subprocesses_reject_cleanly(tmp_path, argv):
    (tmp_path / "cfg.toml").write_text(config_text(n_tasks=1))
    (tmp_path / "deep.toml").write_text(f'experiment = "{SPEC}"\nx = ' + "[" * 3000 + "]" * 3000 + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    before = snapshot(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "gaugedyn", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert snapshot(tmp_path) == before
