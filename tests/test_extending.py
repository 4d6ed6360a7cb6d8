"""``docs/extending.md`` followed literally, in a copy of the repository.

A sixth system (its ``__init__.py``, its ``system.toml``, one experiment and its TOML, its folder
name in the registry, its docs page, then ``gaugedyn publish``) appears in the registry, in
``gaugedyn.papers``, in the site's navigation and its check, and runs with ``gaugedyn run ...
--quick``. A closed-form activation (``g(z) = z + z^3``, whose Gaussian kernels are polynomials)
is refused by ``gaugedyn derive`` until it is registered, then gets its closed form, and its
kernels pass the Monte Carlo check.

Each step runs the package from the copy (``PYTHONPATH``), in a subprocess, as a user would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "extending.md"


def _copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.nbi", "*.nbc")
    for folder in ("src", "simulations", "docs", "results-data", "derivations", "tests"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=ignore)
    for name in ("pyproject.toml", "mkdocs.yml", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    return repo


def _run(repo: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(repo / "src"), NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout
    )


def _gaugedyn(repo: Path, command: str, *more: str) -> subprocess.CompletedProcess:
    """``gaugedyn <command words> <more>`` run from the copy."""
    return _run(repo, "-m", "gaugedyn", *command.split(), *more)


def _pytest(repo: Path, *tests: str) -> subprocess.CompletedProcess:
    """The copy's own tests ``tests`` (``file::name``), run on the copy."""
    return _run(repo, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *tests)


REGISTRY_TEST = (
    "tests/test_structure.py::test_the_registry_names_exactly_the_modules_that_define_experiments"
)


def _section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _edit(path: Path, anchor: str, insert: str, *, after: bool = False) -> None:
    """Insert ``insert`` before (or after) the first ``anchor`` of ``path``."""
    text = path.read_text()
    assert anchor in text, f"{path}: anchor {anchor!r} not found; update this walkthrough"
    i = text.index(anchor) + (len(anchor) if after else 0)
    path.write_text(text[:i] + insert + text[i:])


# --- a sixth system -------------------------------------------------------------------------

SYSTEM_TOML = """name = "Walkthrough toy"
title = "A Toy Paper for the Extending Guide"
authors = ["A. Tester"]
subject = "the mean of seeded standard normal draws is near zero"
experiments = ["toy_mean"]

[docs]
page = "systems/walkthrough.md"
nav = "Walkthrough toy"
more = [{ nav = "Walkthrough: protocol", page = "walkthrough-protocol.md" }]
"""

EXPERIMENT = '''"""The mean of seeded standard normal draws, one task per seed."""

from __future__ import annotations

import numpy as np

from gaugedyn.harness import Claim, Experiment, Param


class ToyMean(Experiment):
    name = "toy_mean"
    description = "mean of seeded standard normal draws"
    params = {
        "seeds": Param(int, 8, quick=3, lo=1, hi=100, why="a toy"),
        "draws": Param(int, 1000, quick=200, lo=1, hi=10**6, why="a toy"),
    }

    def tasks(self, config):
        return [{"seed": s, "draws": config["draws"]} for s in range(config["seeds"])]

    def run_task(self, task, seed):
        x = np.random.default_rng(seed).standard_normal(task["draws"])
        return {"mean": float(x.mean())}

    def analyse(self, config, tasks, results, seed):
        means = np.array([r["mean"] for r in results])
        se = 1.0 / np.sqrt(config["draws"])
        worst = float(np.max(np.abs(means)) / se)
        claim = Claim(id="toy_mean.near_zero", statement="every seed's mean is within 6 SE of 0",
                      measured=worst, expected=0.0, tolerance=6.0, passed=worst < 6.0)
        return {"means": means}, [claim]


EXPERIMENT = ToyMean()
'''


@pytest.mark.slow
def test_a_sixth_system_as_the_guide_says(tmp_path):
    guide = _section("A system (a sixth paper)")
    for named in (
        "experiments/<system>/__init__.py",
        "experiments/<system>/system.toml",
        "harness/_registry.py",
        "SYSTEM_NAMES",
        "docs/systems/<page>.md",
        "gaugedyn publish",
        "simulations/<name>.toml",
    ):
        assert named in guide, f"the guide no longer names {named}"
    repo = _copy(tmp_path)
    folder = repo / "src" / "gaugedyn" / "experiments" / "walkthrough"
    folder.mkdir()
    # 1. __init__.py; 2. system.toml
    (folder / "__init__.py").write_text('"""A toy system: the extending guide\'s walkthrough."""\n')
    (folder / "system.toml").write_text(SYSTEM_TOML)
    # 3. the folder's name in SYSTEM_NAMES
    registry = repo / "src" / "gaugedyn" / "harness" / "_registry.py"
    text = registry.read_text()
    close = text.index("\n)", text.index("SYSTEM_NAMES: tuple[str, ...] = ("))
    registry.write_text(text[:close] + '\n    "walkthrough",' + text[close:])
    # 4. the experiment and its TOML
    (folder / "toy_mean.py").write_text(EXPERIMENT)
    (repo / "simulations" / "toy_mean.toml").write_text(
        'experiment = "toy_mean"\nseed = 3\ndescription = "the walkthrough\'s toy"\n'
    )
    # before its page: publish refuses, naming the page
    done = _gaugedyn(repo, "publish --check")
    assert done.returncode == 2 and "systems/walkthrough.md" in done.stderr, done.stderr
    # 5. its pages
    (repo / "docs" / "systems" / "walkthrough.md").write_text("# Walkthrough toy\n\nA toy.\n")
    (repo / "docs" / "walkthrough-protocol.md").write_text("# Walkthrough: protocol\n\nNone.\n")
    # 6. gaugedyn publish: stale before, current after, the navigation written
    done = _gaugedyn(repo, "publish --check")
    assert done.returncode == 1 and "mkdocs.yml: stale" in done.stderr, done.stderr
    done = _gaugedyn(repo, "publish")
    assert done.returncode == 0, done.stderr
    assert "mkdocs.yml: rewritten" in done.stdout and "README.md: rewritten" in done.stdout
    assert _gaugedyn(repo, "publish --check").returncode == 0
    nav = (repo / "mkdocs.yml").read_text()
    assert (
        "      - Walkthrough toy: systems/walkthrough.md\n"
        '      - "Walkthrough: protocol": walkthrough-protocol.md\n      # /publish'
    ) in nav
    assert "[Walkthrough toy](docs/systems/walkthrough.md)" in (repo / "README.md").read_text()

    # the registry, the papers, the site's nav check and the structure tests see it
    probe = (
        "import json; from gaugedyn.harness import SYSTEMS, EXPERIMENTS; "
        "from gaugedyn.papers import PAPERS, paper_of; "
        "print(json.dumps([SYSTEMS['walkthrough'], EXPERIMENTS['toy_mean'], "
        "paper_of('toy_mean').title, PAPERS[-1].system]))"
    )
    done = _run(repo, "-c", probe)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        ["toy_mean"],
        "gaugedyn.experiments.walkthrough.toy_mean",
        "A Toy Paper for the Extending Guide",
        "walkthrough",
    ]
    done = _pytest(
        repo,
        REGISTRY_TEST,
        "tests/test_structure.py::test_tomls_do_not_restate_code_defaults",
        "tests/test_structure.py::test_every_numeric_setting_has_an_upper_bound_with_a_clear_error",
        "tests/test_docs.py::test_the_nav_names_only_existing_pages_or_awaited_ones",
    )
    assert done.returncode == 0, done.stdout + done.stderr

    # gaugedyn run ... --quick
    out = tmp_path / "run"
    done = _gaugedyn(repo, "run simulations/toy_mean.toml --quick -q --out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "passed"
    assert [c["id"] for c in summary["claims"]] == ["toy_mean.near_zero"]


def test_a_folder_left_out_of_the_registry_is_found(tmp_path):
    """Step 3 forgotten: the structure test names the folder."""
    repo = _copy(tmp_path)
    folder = repo / "src" / "gaugedyn" / "experiments" / "walkthrough"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A toy system."""\n')
    (folder / "system.toml").write_text(SYSTEM_TOML)
    (folder / "toy_mean.py").write_text(EXPERIMENT)
    done = _pytest(repo, REGISTRY_TEST)
    assert done.returncode == 1 and "walkthrough" in done.stdout, done.stdout


# --- a closed-form activation ---------------------------------------------------------------

GAUSSIAN_CUBIC = '''"""Gaussian expectations of the cubic feature g(z) = z + z^3, from the moment-generating function."""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, latex

NAME = "gaussian_cubic"


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    q, q1, q2 = sp.symbols("q q1 q2", positive=True)
    c, t1, t2 = sp.symbols("c t1 t2", real=True)
    mgf = sp.exp((q1 * t1**2 + 2 * c * t1 * t2 + q2 * t2**2) / 2)
    coefficients = {1: 1, 3: 1}  # g(z) = z + z^3: E[g(x1) g(x2)] = sum a_i a_j E[x1^i x2^j]
    pair = sp.expand(sum(a * b * sp.diff(mgf, t1, i, t2, j).subs({t1: 0, t2: 0})
                         for i, a in coefficients.items() for j, b in coefficients.items()))
    mgf1 = sp.exp(q * t1**2 / 2)
    self_ = sp.expand(sum(a * b * sp.diff(mgf1, t1, i + j).subs(t1, 0)
                          for i, a in coefficients.items() for j, b in coefficients.items()))
    return dict(symbols=dict(q=q, q1=q1, q2=q2, c=c), pair=pair, self=self_)


def verify() -> None:
    d = derive()
    s = d["symbols"]
    q = s["q"]
    check(d["pair"].subs({s["q1"]: q, s["q2"]: q, s["c"]: q}).expand() == d["self"],
          "F(q, q, q) must be S(q)")
    check(d["self"] == q + 6 * q**2 + 15 * q**3, "E[(x + x^3)^2] must be q + 6 q^2 + 15 q^3")


def build() -> str:
    d = derive()
    return document(
        "Gaussian expectations of cubic features",
        "g(z) = z + z^3, the extending guide's walkthrough.",
        [("Pair kernel", r"\\mathbb{E}[g(x_1) g(x_2)] = " + latex(d["pair"])),
         ("Self kernel", r"\\mathbb{E}[g(x)^2] = " + latex(d["self"]))],
        ["(x1, x2) ~ N(0, [[q1, c], [c, q2]]), x ~ N(0, q)."],
        ["E[x1^i x2^j] is the (i, j) derivative of the moment-generating function at 0."],
        ["`verify()` checks the diagonal and the self kernel with sympy."],
    )
'''

CUBIC_FUNCTIONS = """

def _cubic(z):
    return z + z * z * z


def _cubic_prime(z):
    return 1.0 + 3.0 * z * z


def _cubic_second(z):
    return 6.0 * z
"""

CUBIC_ENTRY = """
        _builtin("cubic", _cubic, _cubic_prime, _cubic_second, code=None,
                 description="z + z^3 (the extending guide's walkthrough)"),"""


@pytest.mark.slow
def test_a_closed_form_activation_as_the_guide_says(tmp_path):
    guide = _section("An activation")
    for named in (
        "theory/_activation.py",
        "_builtin(",
        "_sympy_builtins",
        "symbolic/_gaussian_<name>.py",
        'NAME = "gaussian_<name>"',
        "gaugedyn derive",
        "gaugedyn derive --only gaussian_<name>",
        "theory/_generated_kernels.py",
        "gaugedyn check-activation <name>",
    ):
        assert named in guide, f"the guide no longer names {named}"
    repo = _copy(tmp_path)
    src = repo / "src" / "gaugedyn"
    kernels = src / "theory" / "_generated_kernels.py"
    before = kernels.read_text()

    # step 3 before step 1: derive refuses the module of an activation it does not know
    (src / "symbolic" / "_gaussian_cubic.py").write_text(GAUSSIAN_CUBIC)
    done = _gaugedyn(repo, "derive")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "_gaussian_cubic.py derives the kernels of 'cubic'" in done.stderr
    assert "theory/_activation.py" in done.stderr
    assert (
        kernels.read_text() == before and not (repo / "derivations" / "gaussian_cubic.md").exists()
    )

    # step 1: register it in theory/_activation.py (functions, ACTIVATIONS entry, sympy form)
    activation = src / "theory" / "_activation.py"
    _edit(activation, "\n\ndef _sympy_builtins", CUBIC_FUNCTIONS)
    text = activation.read_text()
    table = text.index("ACTIVATIONS: dict[str, Activation] = {")
    close = text.index("\n    )\n}", table)
    activation.write_text(text[:close] + CUBIC_ENTRY + text[close:])
    _edit(activation, '"he3": z**3 - 3 * z,', ' "cubic": z + z**3,', after=True)
    probe = "from gaugedyn.theory import ACTIVATIONS; print(ACTIVATIONS['cubic'].rule)"
    done = _run(repo, "-c", probe)
    assert done.returncode == 0 and done.stdout.startswith("Hermite expansion"), done.stderr

    # step 4: gaugedyn derive writes its document and its closed forms (--only: the other
    # documents' derivations, unchanged by this one, are checked by test_symbolic_derive.py)
    done = _gaugedyn(repo, "derive --only gaussian_cubic")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kernels of relu, erf, linear, cubic (closed forms)" in done.stdout
    assert "derivations/gaussian_cubic.md" in done.stdout
    assert "def pair_cubic(q1, q2, c, s=None):" in kernels.read_text()
    assert '"cubic": (pair_cubic,' in kernels.read_text()
    assert (repo / "derivations" / "gaussian_cubic.md").is_file()
    done = _run(repo, "-c", probe)
    assert done.returncode == 0 and done.stdout.strip() == "closed form", done.stderr

    # the check: the closed form against Monte Carlo, g' against autograd and sympy
    done = _gaugedyn(repo, "check-activation cubic --samples 200000 --configurations 6")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["kernels"] == "closed form" and report["passed"]
    assert report["derivative_vs_sympy"] < 1e-9 and report["function_vs_sympy"] < 1e-9


def test_derive_refuses_what_it_does_not_know(tmp_path, monkeypatch):
    """The guide's silent failure made loud: an unregistered kernel derivation, a derivation
    module outside the registry, a wrong NAME, a closed form whose derivation is gone."""
    from gaugedyn.symbolic import _kernels, _registry
    from gaugedyn.symbolic._codegen import TARGET

    assert _registry.declaration_problems() == []
    assert re.search(r"gaugedyn\.symbolic\._gaussian_relu", " ".join(_registry.DERIVATIONS))
    folder = tmp_path / "symbolic"
    shutil.copytree(
        Path(_registry.__file__).parent, folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    (folder / "_gaussian_cubic.py").write_text(GAUSSIAN_CUBIC)
    (folder / "_extra.py").write_text(
        'NAME = "extra"\n\n\ndef build():\n    return ""\n\n\ndef verify():\n    pass\n'
    )
    linear = folder / "_gaussian_linear.py"
    linear.write_text(
        linear.read_text().replace('NAME = "gaussian_linear"', 'NAME = "linear_kernels"')
    )
    (folder / "_gaussian_erf.py").unlink()
    monkeypatch.setattr(_kernels, "FOLDER", folder)
    monkeypatch.setattr(_registry, "FOLDER", folder)
    problems = _registry.declaration_problems(kernels=TARGET)
    text = "\n".join(problems)
    assert "_gaussian_cubic.py derives the kernels of 'cubic'" in text
    assert "_extra.py defines a derivation" in text
    assert "_gaussian_linear.py: NAME = 'linear_kernels'" in text
    assert "activation 'erf' has closed-form kernels" in text
    assert len(problems) == 4, text
    report = _registry.derive(tmp_path / "docs", kernels=tmp_path / "k.py")
    assert not report.ok and len(report.failures) == 3  # no kernel file there: erf's is not missed
    assert not (tmp_path / "docs").exists() and not (tmp_path / "k.py").exists()
