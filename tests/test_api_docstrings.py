"""Every public function of a documented namespace has a numpy-style docstring whose Parameters
section names each parameter, with Returns where it returns something and Raises where it
raises; the API reference renders these sections as tables (mkdocs.yml: docstring_style numpy).

The namespaces are converted one at a time: ``DOCUMENTED`` are checked in full, ``PENDING`` are
not yet (their docstrings state the contract in prose), and every public namespace is in one of
the two, so a new namespace has to be placed.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED = (
    "gaugedyn.gauge",
    "gaugedyn.symbolic",
    "gaugedyn.papers",
    "gaugedyn.monitor",
    "gaugedyn.adam",
    "gaugedyn.theory",
    "gaugedyn.training",
    "gaugedyn.stats",
    "gaugedyn.harness",
    "gaugedyn.experiments",
    "gaugedyn.experiments.prototypes",
    "gaugedyn.publish",
    "gaugedyn.plotting",
    "gaugedyn.cli",
)
PENDING: tuple[str, ...] = ()


def _hooks():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import mkdocs_hooks
    finally:
        sys.path.pop(0)
    return mkdocs_hooks


def missing_sections(func, docstring: str | None) -> list[str]:
    """What a function's numpy docstring lacks: a Parameters entry per parameter (``self``,
    ``cls`` aside), Returns when it is annotated to return something, Raises when its source
    raises."""
    from griffe import Docstring, DocstringSectionKind

    if not docstring:
        return ["a docstring"]
    sections = Docstring(docstring).parse("numpy", warn_unknown_params=False)
    kinds = {s.kind for s in sections}
    named = {
        p.name.lstrip("*")
        for s in sections
        if s.kind is DocstringSectionKind.parameters
        for p in s.value
    }
    out = []
    func = inspect.unwrap(func)  # a decorated function (torch.no_grad) is checked as written
    signature = inspect.signature(func)
    for name in signature.parameters:
        if name in ("self", "cls"):
            continue
        if name not in named:
            out.append(f"parameter {name}")
    returns = signature.return_annotation
    if returns not in (inspect.Signature.empty, None, "None") and not (
        kinds & {DocstringSectionKind.returns, DocstringSectionKind.yields}
    ):
        out.append("Returns")
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        source = ""
    body = source.split('"""', 2)[-1] if source.count('"""') >= 2 else source
    if re.search(r"^\s+raise \w", body, re.M) and DocstringSectionKind.raises not in kinds:
        out.append("Raises")
    return out


def test_every_public_namespace_is_placed():
    import pkgutil

    import gaugedyn

    namespaces = {
        f"gaugedyn.{info.name}"
        for info in pkgutil.iter_modules(gaugedyn.__path__)
        if not info.name.startswith("_")
    } | {"gaugedyn.experiments.prototypes"}
    assert not set(DOCUMENTED) & set(PENDING)
    unplaced = namespaces - set(DOCUMENTED) - set(PENDING)
    assert not unplaced, f"public namespaces in neither DOCUMENTED nor PENDING: {sorted(unplaced)}"


@pytest.mark.parametrize("namespace", DOCUMENTED)
def test_every_public_function_has_parameter_returns_and_raises_sections(namespace):
    hooks = _hooks()
    module = importlib.import_module(namespace)
    lacking = {}
    for name in hooks.public_names(namespace):
        func = getattr(module, name)
        if not inspect.isfunction(func):
            continue
        missing = missing_sections(func, inspect.getdoc(func))
        if missing:
            lacking[f"{namespace}.{name}"] = missing
    assert not lacking, "docstrings lacking numpy sections:\n" + "\n".join(
        f"  {k}: {', '.join(v)}" for k, v in sorted(lacking.items())
    )


def test_the_checker_finds_what_is_missing():
    def f(x: int, *, y: float = 1.0) -> int:
        if x < 0:
            raise ValueError(x)
        return x

    assert missing_sections(f, "Does f.") == ["parameter x", "parameter y", "Returns", "Raises"]
    full = """Does f.

    Parameters
    ----------
    x : int
        The input.
    y : float
        Unused.

    Returns
    -------
    int
        ``x``.

    Raises
    ------
    ValueError
        When ``x < 0``.
    """
    assert missing_sections(f, inspect.cleandoc(full)) == []


def test_math_in_docstrings_survives_python_escapes():
    """A docstring with LaTeX must be a raw string: in a plain one ``\\beta`` is a backspace and
    ``\\frac`` a form feed, and the rendered formula silently loses them."""
    import ast

    bad = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "$" in node.value:
                if any(c in node.value for c in "\x07\x08\x0b\x0c\r\t"):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, f"LaTeX in a non-raw string (add the r prefix): {bad}"


@pytest.mark.parametrize("namespace", DOCUMENTED)
def test_a_documented_namespace_lists_its_functions(namespace):
    """The reference and the check above read a namespace's names through the site hook; a
    package that re-exports from private modules without ``__all__`` lists none, so its page is
    empty and the check passes on nothing (``gaugedyn.theory`` and ``gaugedyn.stats`` did)."""
    module = importlib.import_module(namespace)
    functions = [
        n for n in _hooks().public_names(namespace) if inspect.isfunction(getattr(module, n))
    ]
    assert functions, f"{namespace}: the site hook finds no public function (declare __all__)"


def test_every_public_namespace_has_a_reference_section():
    """Each namespace's docstrings render somewhere: an ``<!-- api NAMESPACE -->`` marker in
    ``docs/reference/`` (the site hook fills it)."""
    markers = "\n".join(p.read_text() for p in (ROOT / "docs" / "reference").glob("*.md"))
    absent = [ns for ns in (*DOCUMENTED, *PENDING) if f"<!-- api {ns} -->" not in markers]
    assert not absent, f"namespaces without a reference section: {absent}"
