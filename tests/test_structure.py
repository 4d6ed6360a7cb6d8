"""Repository-wide structure rules, each checked over every file or every experiment.

- a TOML in ``simulations/`` never restates a code default: no ``[params]`` value equals the
  experiment's ``Param.default`` and no ``[quick]`` value equals ``Param.quick``;
- every numeric setting has an upper bound (``hi``; for a list of numbers ``max_len`` and an
  element ``hi``), and a value above it is one error line naming the setting, the bound and why;
- no function in ``src/`` has a body longer than ``MAX_FUNCTION_LINES`` lines (from its first
  statement after the docstring to its last line, nested functions included);
- no file in ``src/`` cites a file outside the repository;
- every entry of ``gaugedyn.theory.METHODS`` is a callable;
- no module imports a private name (a module or attribute starting with ``_``) of another
  subpackage (``gaugedyn.theory``, ``.training``, ``.adam``, ``.gauge``, ``.stats``,
  ``.symbolic``, ``.harness``, each ``gaugedyn.experiments.<system>``) and no system imports
  another system; the package-root core modules (``CORE``) may be imported from anywhere;
- the import graph of ``src/`` (every import, function-level ones included) has no cycle;
- the harness imports no system, and the library neither the harness nor a system.

Each failure message lists every offender, not only the first.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

from gaugedyn import InputError
from gaugedyn.experiments import available_experiments, make_config, resolve_experiment
from gaugedyn.harness._config import read_toml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SIMULATIONS = ROOT / "simulations"
MAX_FUNCTION_LINES = 80
OUTSIDE_FILES = ("THEORY.md", "STYLE.md", "shared/seeds")
CORE = frozenset(
    f"gaugedyn.{m}" for m in ("_errors", "_json", "_meta", "_options", "_lazy", "_progress")
)
"""The package-root core modules every subpackage may import (private names included)."""


def _numeric(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _types(param) -> tuple[type, ...]:
    return param.type if isinstance(param.type, tuple) else (param.type,)


def _is_numeric_scalar(param) -> bool:
    types = _types(param)
    return list not in types and bool not in types and any(t in types for t in (int, float))


def _is_numeric_list(param) -> bool:
    if list not in _types(param) or param.choices is not None:
        return False
    if getattr(param, "item", None) in (int, float):
        return True
    samples = [v for v in (param.default, param.quick) if isinstance(v, list) and v]
    return bool(samples) and all(_numeric(x) for v in samples for x in v)


def _experiments():
    return [(name, resolve_experiment(name)) for name in available_experiments()]


def _same(a, b) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if _numeric(a) and _numeric(b):
        return a == b
    return type(a) is type(b) and a == b


def test_tomls_do_not_restate_code_defaults():
    offenders = []
    for path in sorted(SIMULATIONS.glob("*.toml")):
        data = read_toml(path)
        schema = resolve_experiment(data["experiment"]).params
        for key, value in data.get("params", {}).items():
            if key in schema and _same(value, schema[key].default):
                offenders.append(f"{path.name}: [params] {key} = {value!r} is the code default")
        for key, value in data.get("quick", {}).items():
            if key in schema and schema[key].quick is not None and _same(value, schema[key].quick):
                offenders.append(f"{path.name}: [quick] {key} = {value!r} is the code quick value")
    assert not offenders, f"{len(offenders)} restated defaults:\n" + "\n".join(offenders)


def _above(param, bound: float):
    """A value of the parameter's (or, for a list, its elements') type just above ``bound``."""
    types = _types(param)
    if list in types:
        item = getattr(param, "item", None)
        types = (item,) if item is not None else tuple({type(x) for x in param.default or []})
    if int in types and float not in types:
        return int(math.floor(bound)) + 1
    return bound + max(1.0, abs(bound))


def _bound_problems(name: str, experiment) -> list[str]:
    problems = []
    for key, param in experiment.params.items():
        if _is_numeric_scalar(param):
            if param.hi is None:
                problems.append(f"{name}.{key}: numeric setting without an upper bound (hi)")
                continue
            problems += _rejects(experiment, name, key, _above(param, param.hi), f"{param.hi:g}")
        elif _is_numeric_list(param):
            if param.max_len is None or param.hi is None:
                problems.append(f"{name}.{key}: list of numbers without max_len and element hi")
                continue
            element = _above(param, param.hi)
            problems += _rejects(experiment, name, key, [element], f"{param.hi:g}")
            sample = (param.default or param.quick)[0]
            problems += _rejects(
                experiment, name, key, [sample] * (param.max_len + 1), f"at most {param.max_len}"
            )
    return problems


def _rejects(experiment, name: str, key: str, value, bound_text: str) -> list[str]:
    """Problems with the error that ``key = value`` (above its bound) must raise."""
    param = experiment.params[key]
    try:
        make_config(experiment, overrides={key: value})
    except InputError as err:
        text = str(err)
    else:
        return [f"{name}.{key} = {value!r} is above its bound but was accepted"]
    missing = [
        what
        for what, needle in (("the setting", key), ("the bound", bound_text), ("why", param.why))
        if needle not in text
    ]
    if not param.why:
        missing.append("why (the Param declares none)")
    if "\n" in text:
        missing.append("a single line")
    return (
        [f"{name}.{key} = {value!r}: the error lacks {', '.join(missing)}: {text!r}"]
        if missing
        else []
    )


def test_every_numeric_setting_has_an_upper_bound_with_a_clear_error():
    problems = [p for name, experiment in _experiments() for p in _bound_problems(name, experiment)]
    assert not problems, f"{len(problems)} unbounded or unclear settings:\n" + "\n".join(problems)


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    first = body[0]
    if (
        len(body) > 1
        and isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        first = body[1]
    return node.end_lineno - first.lineno + 1


def test_no_function_in_src_is_longer_than_the_limit():
    long = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _body_lines(node)
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, f"{len(long)} functions longer than {MAX_FUNCTION_LINES} lines:\n" + "\n".join(
        long
    )


def test_src_cites_no_file_outside_the_repository():
    hits = []
    for path in sorted(
        p
        for p in SRC.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and not any(part.endswith(".egg-info") for part in p.parts)
    ):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            for needle in OUTSIDE_FILES:
                if needle in line:
                    hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not hits, f"{len(hits)} citations of files outside the repository:\n" + "\n".join(hits)


def test_every_theory_method_is_a_callable():
    from gaugedyn.theory import METHODS

    not_callable = [
        f"{name}: {type(entry).__name__} {entry!r}"
        for name, entry in METHODS.items()
        if not callable(entry)
    ]
    assert METHODS
    assert not not_callable, "METHODS entries that are not callable:\n" + "\n".join(not_callable)


def test_the_rules_see_their_offenders(tmp_path):
    """The detectors above flag what they are meant to: a long function, a citation, a default."""
    long = "def f():\n    '''doc'''\n" + "    x = 1\n" * (MAX_FUNCTION_LINES + 1)
    node = ast.parse(long).body[0]
    assert _body_lines(node) == MAX_FUNCTION_LINES + 1
    short = "def f():\n    '''doc\n" + "    more\n" * 100 + "    '''\n    return 1\n"
    assert _body_lines(ast.parse(short).body[0]) == 1
    assert _same([1, 2.0], [1.0, 2]) and not _same(True, 1) and not _same([1, 2], [1, 3])

    from gaugedyn.experiments import Experiment, Param

    class Toy(Experiment):
        name = "toy"
        params = {
            "n": Param(int, 3, lo=1, hi=10, why="a reason"),
            "xs": Param(list, [0.5], lo=0, hi=1, max_len=2, why="another reason"),
            "free": Param(float, 1.0, lo=0),
            "loose": Param(int, 3, lo=1, hi=10, check=lambda v: True),
            "modes": Param(list, ["a"], choices=("a", "b")),
        }

        def tasks(self, config):
            return []

    problems = _bound_problems("toy", Toy())
    assert not [p for p in problems if p.startswith(("toy.n", "toy.xs", "toy.modes"))], problems
    assert any(p.startswith("toy.free: numeric setting without") for p in problems), problems
    assert any(p.startswith("toy.loose") and "why" in p for p in problems), problems
    assert _is_numeric_list(Toy.params["xs"]) and not _is_numeric_list(Toy.params["modes"])


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defines_experiment(path: Path) -> bool:
    """A module assigns a top-level ``EXPERIMENT``."""
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(t, ast.Name) and t.id == "EXPERIMENT"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in tree.body
    )


def test_the_registry_names_exactly_the_modules_that_define_experiments():
    from gaugedyn.harness import EXPERIMENTS, SYSTEMS

    defining = {
        _module_name(p)
        for p in (SRC / "gaugedyn/experiments").rglob("*.py")
        if _defines_experiment(p)
    }
    registered = set(EXPERIMENTS.values())
    assert defining == registered, (
        f"defined but not registered: {sorted(defining - registered)}; "
        f"registered but not defined: {sorted(registered - defining)}"
    )
    folders = {
        p.name
        for p in (SRC / "gaugedyn/experiments").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    }
    assert folders == set(SYSTEMS)
    for name, module in EXPERIMENTS.items():
        assert module.rsplit(".", 1)[1] == name
        assert resolve_experiment(name).name == name


def _imports(path: Path) -> set[str]:
    """Absolute names of the gaugedyn modules ``path`` imports (relative imports resolved)."""
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {n for n in out if n.startswith("gaugedyn")}


def test_the_harness_imports_no_system_and_the_library_neither():
    offenders = []
    for path in sorted((SRC / "gaugedyn").rglob("*.py")):
        module = _module_name(path)
        in_harness = module.startswith("gaugedyn.harness")
        in_library = (
            not in_harness
            and not module.startswith("gaugedyn.experiments")
            and module
            not in ("gaugedyn.cli", "gaugedyn.__main__", "gaugedyn.publish", "gaugedyn.papers")
        )
        for name in _imports(path):
            if in_harness and name.startswith("gaugedyn.experiments"):
                offenders.append(f"{module} imports {name}")
            if in_library and (
                name.startswith("gaugedyn.experiments") or name.startswith("gaugedyn.harness")
            ):
                offenders.append(f"{module} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_dir_lists_every_lazy_export():
    import importlib

    for package in (
        "gaugedyn.adam",
        "gaugedyn.training",
        "gaugedyn.symbolic",
        "gaugedyn.gauge",
        "gaugedyn.monitor",
        "gaugedyn.experiments.prototypes",
    ):
        module = importlib.import_module(package)
        assert set(module.__all__) <= set(dir(module)), package
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{package}.{name}"


def test_command_line_choices_are_the_registries():
    from gaugedyn.theory import METHODS
    from gaugedyn.theory._activation import ACTIVATIONS
    from gaugedyn.theory._cli import OPTIONS as SOLVE
    from gaugedyn.theory._flows import FORMULATIONS
    from gaugedyn.theory._problem import GAUGE_NAMES
    from gaugedyn.training._cli import OPTIONS as TRAIN

    assert SOLVE["method"].choices == tuple(METHODS)
    assert SOLVE["formulation"].choices == FORMULATIONS
    for options in (SOLVE, TRAIN):
        assert options["gauge"].choices == GAUGE_NAMES
        for key in ("activation", "teacher_activation"):
            param = options[key]
            # every registered name is accepted and listed; anything else but a spec is refused
            assert all(param.validate(name) is None for name in ACTIVATIONS)
            assert all(name in param.describe() for name in ACTIVATIONS)
            assert param.validate("not_registered") is not None
            assert "MODULE:NAME" in param.describe()
    assert SOLVE["activation"].validate("torch:tanh") is None
    assert TRAIN["activation"].parse("torch:tanh") == "torch:tanh"


def test_systems_use_the_harness_through_its_public_names():
    offenders = [
        f"{_module_name(path)} imports {name}"
        for path in sorted((SRC / "gaugedyn/experiments").rglob("*.py"))
        for name in _imports(path)
        if name.startswith("gaugedyn.harness._")
    ]
    assert not offenders, "\n".join(offenders)


def _module_paths() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / "gaugedyn").rglob("*.py"))}


def _imported(path: Path, tree: ast.AST | None = None) -> list[tuple[int, str, str | None]]:
    """``(line, module, attribute)`` of every gaugedyn import in ``path`` at any depth
    (relative imports resolved; ``attribute`` is ``None`` for ``import x``), as written."""
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = []
    for node in ast.walk(tree if tree is not None else ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = (
                ".".join(
                    package[: len(package) - node.level + 1]
                    + ([node.module] if node.module else [])
                )
                if node.level
                else node.module or ""
            )
            out += [(node.lineno, base, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, None) for alias in node.names]
    return [(n, m, a) for n, m, a in out if m == "gaugedyn" or m.startswith("gaugedyn.")]


def _owner(module: str) -> str:
    """The unit that owns a module's private names: ``gaugedyn.experiments.<system>``, a
    library subpackage ``gaugedyn.<sub>``, or the package root ``gaugedyn``."""
    parts = module.split(".")
    if parts[1:2] == ["experiments"] and len(parts) > 2:
        return ".".join(parts[:3])
    if len(parts) > 2 or (len(parts) == 2 and (SRC / "gaugedyn" / parts[1]).is_dir()):
        return ".".join(parts[:2])
    return "gaugedyn"


def _private_offenders(
    path: Path, modules: dict[str, Path], tree: ast.AST | None = None
) -> list[str]:
    here = _module_name(path)
    out = []
    for line, module, attr in _imported(path, tree):
        names = module.split(".") + ([attr] if attr else [])
        where = f"{path.relative_to(ROOT)}:{line}"
        full = ".".join(names)
        if (
            _owner(here).startswith("gaugedyn.experiments.")
            and _owner(module).startswith("gaugedyn.experiments.")
            and _owner(module) != _owner(here)
        ):
            out.append(f"{where}: {here} imports {full} (another system)")
            continue
        for i, part in enumerate(names[1:], 1):
            if not (part.startswith("_") and not part.startswith("__")):
                continue
            private = ".".join(names[: i + 1])
            container = ".".join(names[:i])
            if private in CORE or (private not in modules and container in CORE):
                break
            if _owner(private if private in modules else container + "._") != _owner(here):
                out.append(
                    f"{where}: {here} imports {full}, private to "
                    f"{_owner(private if private in modules else container + '._')}"
                )
            break
    return out


def test_no_private_name_is_imported_across_subpackages_or_between_systems():
    modules = _module_paths()
    offenders = [o for path in modules.values() for o in _private_offenders(path, modules)]
    assert not offenders, (
        f"{len(offenders)} imports of another unit's private names:\n" + "\n".join(offenders)
    )


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """``module -> modules it imports`` (any depth of the file, ``from x import y`` counted as
    an import of ``x.y`` where that is a module, else of ``x``; packages' ``__init__`` files
    that a dotted import runs are not followed: only the named module)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for _, module, attr in _imported(path):
            target = f"{module}.{attr}" if attr and f"{module}.{attr}" in modules else module
            if target in modules and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out)


def test_the_import_graph_of_src_has_no_cycle():
    cycles = _cycles(_import_graph(_module_paths()))
    assert not cycles, (
        f"{len(cycles)} import cycles (each a set of modules that import each "
        "other, at any depth of the file):\n" + "\n".join(" <-> ".join(c) for c in cycles)
    )


def test_the_import_rules_see_their_offenders(tmp_path):
    """The detectors above flag a private import across units, an import of another system and
    a cycle, and pass a public import, an import inside a unit and a core module."""
    modules = _module_paths()
    path = SRC / "gaugedyn" / "experiments" / "adam_split" / "_probe_file.py"

    def offenders(code: str) -> list[str]:
        return _private_offenders(path, modules, ast.parse(code))

    assert offenders("from ...adam._probe import READINGS")
    assert offenders("from gaugedyn.training import _support")
    assert offenders("def f():\n    from ...training._support import single_thread")
    assert offenders("from ..adam_stability import spike_boundary")  # another system
    assert offenders("from ...theory._activation import LEAKY_SLOPE")
    assert not offenders("from ...adam import READINGS")
    assert not offenders("from ._batched import train_copies")  # inside the system
    assert not offenders("from ..._errors import InputError")  # a core module
    assert not offenders("from ...harness import Experiment")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
