"""Each system declared once (``experiments/<system>/system.toml``): the registry, the papers, the
site's navigation and the package data all come from the declarations, and a bad declaration is
refused naming its file and key."""

from __future__ import annotations

import fnmatch
import shutil
import tomllib
from pathlib import Path

import pytest
import yaml

from gaugedyn import InputError
from gaugedyn.harness import DECLARATIONS, EXPERIMENTS, SYSTEM_NAMES, SYSTEMS, parse_system
from gaugedyn.papers import PAPERS, paper_of
from gaugedyn.publish import publish, render_nav

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "gaugedyn"

GOOD = """
name = "Toy"
subject = "a toy"
experiments = ["toy_one", "toy_two"]

[docs]
page = "systems/toy.md"
nav = "Toy system"
"""


def test_every_system_folder_is_registered_and_declared():
    folders = sorted(
        p.name for p in (PACKAGE / "experiments").iterdir() if (p / "__init__.py").is_file()
    )
    assert sorted(SYSTEM_NAMES) == folders, (
        f"folders not in SYSTEM_NAMES (harness/_registry.py): "
        f"{sorted(set(folders) - set(SYSTEM_NAMES))}"
    )
    for name in folders:
        assert (PACKAGE / "experiments" / name / "system.toml").is_file(), name


def test_registry_and_papers_are_the_declarations():
    assert tuple(DECLARATIONS) == SYSTEM_NAMES
    assert PAPERS == tuple(DECLARATIONS.values())
    for system in PAPERS:
        assert SYSTEMS[system.system] == system.experiments
        for name in system.experiments:
            assert EXPERIMENTS[name] == f"gaugedyn.experiments.{system.system}.{name}"
            assert paper_of(name) is system
        for _, page in system.nav_entries:
            assert (ROOT / "docs" / page).is_file(), page
    assert len(EXPERIMENTS) == sum(len(s.experiments) for s in PAPERS)


def test_a_declaration_is_parsed_with_its_optional_keys():
    toy = parse_system("toy", GOOD)
    assert (toy.title, toy.authors, toy.experiments) == (None, None, ("toy_one", "toy_two"))
    assert toy.nav_entries == (("Toy system", "systems/toy.md"),)
    full = parse_system(
        "toy",
        GOOD.replace('name = "Toy"', 'name = "Toy"\ntitle = """A\n  Title"""\nauthors = ["A. B."]')
        + 'more = [{ nav = "P", '
        'page = "p.md" }]\n',
    )
    assert (full.title, full.authors) == ("A Title", ("A. B.",))
    assert full.nav_entries == (("Toy system", "systems/toy.md"), ("P", "p.md"))


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda t: t + 'colour = "red"\n', "colour"),
        (lambda t: t.replace('subject = "a toy"\n', ""), "subject"),
        (lambda t: t.replace('["toy_one", "toy_two"]', "[]"), "experiments"),
        (lambda t: t.replace('["toy_one", "toy_two"]', '["toy_one", "toy_one"]'), "experiments"),
        (lambda t: t.replace('"toy_two"', '"Toy-Two"'), "Toy-Two"),
        (lambda t: t.replace('"systems/toy.md"', '"systems/toy.html"'), "docs.page"),
        (lambda t: t.replace('"systems/toy.md"', '"../toy.md"'), "docs.page"),
        (lambda t: t.replace('nav = "Toy system"', 'nav = " "'), "docs.nav"),
        (lambda t: t.replace('nav = "Toy system"', ""), "[docs]"),
        (lambda t: t + 'more = [{ nav = "P" }]\n', "docs.more"),
        (lambda t: t.replace('name = "Toy"', 'name = "Toy"\nauthors = []'), "authors"),
        (lambda t: t.replace('name = "Toy"', 'name = "Toy'), "not valid TOML"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_file_and_key(edit, named):
    with pytest.raises(InputError, match="experiments/toy/system.toml") as err:
        parse_system("toy", edit(GOOD))
    assert named in str(err.value)


def test_an_experiment_declared_by_two_systems_is_refused(monkeypatch):
    from gaugedyn.harness import _registry

    monkeypatch.setattr(_registry, "read_system", lambda name: parse_system(name, GOOD))
    with pytest.raises(InputError, match="'toy_one' is declared by two systems: a and b"):
        _registry._declarations(("a", "b"))


def test_a_system_without_a_declaration_is_refused():
    from gaugedyn.harness import read_system

    with pytest.raises(InputError, match="experiments/nothing/system.toml is missing"):
        read_system("nothing")


def test_the_site_navigation_is_the_declarations_as_yaml_reads_it():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    systems = next(entry["Systems"] for entry in nav if "Systems" in entry)
    assert systems == [{title: page} for s in PAPERS for title, page in s.nav_entries]


def _site(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "results-data", root / "results-data")
    shutil.copy(ROOT / "README.md", root / "README.md")
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_a_stale_navigation_is_found_and_rewritten(tmp_path):
    root = _site(tmp_path)
    site = root / "mkdocs.yml"
    good = site.read_text()
    assert publish(root, check=True) == []
    site.write_text(good.replace("      - Tied-beta Adam: systems/tied-beta-adam.md\n", ""))
    assert publish(root, check=True) == [site]
    assert publish(root) == [site] and site.read_text() == good
    site.write_text(good.replace("Adam stability: systems/", "Stability: systems/"))
    assert publish(root, check=True) == [site]


def test_titles_that_yaml_would_misread_are_quoted(tmp_path, monkeypatch):
    import gaugedyn.publish as publish_module
    from gaugedyn.harness import System

    titles = [
        "Plain title",
        "With: colon",
        "#hash",
        "quote's",
        '"quoted"',
        "[list]",
        "a, b",
        "ends: ",
        "A (parenthesis) - dash",
    ]
    papers = tuple(
        System(
            system=f"s{i}",
            name=t,
            title=None,
            authors=None,
            subject="x",
            experiments=(f"e{i}",),
            page="index.md",
            nav=t,
        )
        for i, t in enumerate(titles)
    )
    monkeypatch.setattr(publish_module, "PAPERS", papers)
    root = tmp_path
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# x\n")
    text = "nav:\n  - Systems:\n      # publish:nav\n      # /publish\n"
    out = render_nav(text, root / "mkdocs.yml", root)
    read = yaml.safe_load(out)["nav"][0]["Systems"]
    assert read == [{t: "index.md"} for t in titles]
    assert "      - Plain title: index.md" in out


def test_a_navigation_without_its_markers_is_refused(tmp_path):
    with pytest.raises(InputError, match="publish:nav"):
        render_nav("nav:\n  - Home: index.md\n", tmp_path / "mkdocs.yml", ROOT)
    with pytest.raises(InputError, match="no closing"):
        render_nav("nav:\n  # publish:nav\n  - Home: index.md\n", tmp_path / "mkdocs.yml", ROOT)


def test_package_data_patterns_ship_every_data_file_of_every_system():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["gaugedyn"]
    files = [
        p.relative_to(PACKAGE).as_posix()
        for p in (PACKAGE / "experiments").rglob("*")
        if p.is_file()
        and p.suffix not in (".py", ".pyc")
        and "__pycache__" not in p.parts
        and not p.name.startswith(".")
    ]
    assert any(f.endswith("system.toml") for f in files)
    missing = [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert not missing, f"not shipped by pyproject.toml's package-data: {missing}"
    assert not any("adam_state" in pat or "adam_stability" in pat for pat in patterns)
