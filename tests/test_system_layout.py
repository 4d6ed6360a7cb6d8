"""Every system folder has one layout: its protocol in ``PROTOCOL.md`` (saying where each piece
lives), the protocol's fixed numbers in ``_protocol.py`` (importing nothing of its own system, so
every module can use them), experiment modules that declare and run (analysis in
``_analysis.py``, figures in ``_figures.py``), no import circle, and no experiment that labels
its own quick findings (the harness does)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from gaugedyn.harness import available_experiments, resolve_experiment

SYSTEMS_DIR = Path(__file__).resolve().parents[1] / "src" / "gaugedyn" / "experiments"
SYSTEMS = sorted(p.name for p in SYSTEMS_DIR.iterdir() if (p / "__init__.py").is_file())
CLAIM_BUILDERS = {"Claim", "judged", "finding", "deterministic"}
LABELS = {"labelled", "provisional"}
"""Names that label findings: the harness labels every quick finding (an analysis may still
read :func:`gaugedyn.harness.configuration_label` for a caption's text)."""


def _systems():
    return list(SYSTEMS)


def _modules(folder: Path) -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text()) for p in sorted(folder.glob("*.py"))}


def _imports(system: str, tree: ast.Module) -> tuple[set[str], set[str]]:
    """Modules of ``system`` that ``tree`` imports (function-level imports included) and every
    name it imports from anywhere."""
    own, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.name for a in node.names}
            if node.level == 1:
                own |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
            elif node.level == 0 and (node.module or "").startswith(
                f"gaugedyn.experiments.{system}."
            ):
                own.add(node.module.split(".")[3])
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return own, names


def _experiment_modules(system: str) -> set[str]:
    out = set()
    for name in available_experiments():
        module = type(resolve_experiment(name)).__module__.split(".")
        if module[2] == system:
            out.add(module[3])
    return out


@pytest.mark.parametrize("system", _systems())
def test_every_system_folder_has_one_layout(system):
    folder = SYSTEMS_DIR / system
    modules = _modules(folder)
    protocol = folder / "PROTOCOL.md"
    assert protocol.is_file(), f"{system}: no PROTOCOL.md"
    text = protocol.read_text()
    assert "## Where each piece lives" in text, f"{system}/PROTOCOL.md: no 'Where each piece lives'"
    unnamed = [
        m
        for m in modules
        if m != "__init__"
        and f"`{m}.py`" not in text
        and not (m in _experiment_modules(system) and "`<experiment>.py`" in text)
    ]
    assert not unnamed, f"{system}/PROTOCOL.md does not say where these live: {unnamed}"

    assert "_protocol" in modules, f"{system}: no _protocol.py"
    own, _ = _imports(system, modules["_protocol"])
    assert not own, f"{system}/_protocol.py imports its own system's {sorted(own)}"
    constants = [n for n in modules["_protocol"].body if isinstance(n, ast.Assign | ast.AnnAssign)]
    assert constants, f"{system}/_protocol.py fixes no number"

    experiments = _experiment_modules(system)
    assert experiments, f"{system}: no registered experiment"
    for name in sorted(experiments):
        _, names = _imports(system, modules[name])
        assert not names & CLAIM_BUILDERS, f"{system}/{name}.py builds claims: move to _analysis"
        assert not names & {"matplotlib", "matplotlib.pyplot", "save_figure", "subplots"}, (
            f"{system}/{name}.py draws figures: move to _figures"
        )
    analyses = {
        m for m in modules if m == "_analysis" or (m.startswith("_") and m.endswith("_analysis"))
    }
    assert analyses and "_figures" in modules, (
        f"{system}: no _analysis.py (or _<experiment>_analysis.py) or _figures.py"
    )

    graph = {}
    for name, tree in modules.items():
        own, names = _imports(system, tree)
        graph[name] = {other for other in own if other in modules}
        assert not names & LABELS, f"{system}/{name}.py labels quick findings itself"
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as err:
        raise AssertionError(f"{system}: an import circle {err.args[1]}") from None


def test_the_layout_checks_see_their_offenders(tmp_path, monkeypatch):
    """Each check fails on a folder built to break it."""
    import test_system_layout as layout

    def broken(**files):
        folder = tmp_path / "toy_system"
        folder.mkdir(exist_ok=True)
        base = {
            "__init__.py": "",
            "_protocol.py": "X = 1\n",
            "_analysis.py": "",
            "_figures.py": "",
            "PROTOCOL.md": "## Where each piece lives\n`_protocol.py` "
            "`_analysis.py` `_figures.py` `toy.py`\n",
            "toy.py": "from . import _analysis\n",
        }
        for name, text in (base | files).items():
            (folder / name).write_text(text)
        return folder

    monkeypatch.setattr(layout, "SYSTEMS_DIR", tmp_path)
    monkeypatch.setattr(layout, "_experiment_modules", lambda system: {"toy"})
    broken()
    layout.test_every_system_folder_has_one_layout("toy_system")  # the built folder passes
    for files, message in [
        ({"PROTOCOL.md": "## Where each piece lives\n`_protocol.py`\n"}, "does not say where"),
        ({"_protocol.py": "from . import _analysis\nX = 1\n"}, "imports its own system"),
        ({"_protocol.py": "def f():\n    return 1\n"}, "fixes no number"),
        ({"toy.py": "from ...harness import judged\n"}, "builds claims"),
        ({"toy.py": "def plot():\n    import matplotlib.pyplot as plt\n"}, "draws figures"),
        ({"_analysis.py": "from ...harness import labelled\n"}, "labels quick findings"),
        ({"_analysis.py": "def f():\n    from . import toy\n"}, "an import circle"),
    ]:
        for p in tmp_path.glob("toy_system/*"):
            p.unlink()
        broken(**files)
        with pytest.raises(AssertionError, match=message):
            layout.test_every_system_folder_has_one_layout("toy_system")
