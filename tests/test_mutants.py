"""The mutation generator (``tools/mutants.py``): every generated mutant is one valid edit at
its place, the draw is reproducible, and a mutant whose place moved is refused."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import mutants  # noqa: E402


@pytest.mark.parametrize("area", sorted(mutants.AREAS))
def test_every_drawn_mutant_is_one_valid_edit_at_its_place(area):
    drawn = mutants.sample(area, 60, seed=0)
    assert drawn == mutants.sample(area, 60, seed=0)
    assert drawn != mutants.sample(area, 60, seed=1)
    assert 50 <= len(drawn) <= 65
    assert set(Counter(g.kind for g in drawn)) <= set(mutants.KINDS)
    assert len({g.id for g in drawn}) == len(drawn)
    for g in drawn:
        text = (ROOT / g.file).read_text(encoding="utf-8")
        planted = mutants.plant(text, g)
        assert planted is not None and planted != text, g.id
        ast.parse(planted)  # the mutant is valid Python
        changed = [
            i for i, (a, b) in enumerate(zip(text.splitlines(), planted.splitlines())) if a != b
        ]
        assert changed == [g.line - 1], g.id
    for tests in mutants.AREAS[area][1]:
        assert (ROOT / tests).is_file(), tests


def test_each_kind_makes_the_edit_it_names():
    source = "def f(x, y, k):\n    if x < y:\n        return g(x, y)[k + 1] * 2 - -x\n    return range(k)\n"
    tree = ast.parse(source)
    edits = {
        (kind, ast.unparse(new)) for node in ast.walk(tree) for kind, new in mutants._edits(node)
    }
    assert ("comparison", "x <= y") in edits
    assert ("off-by-one", "g(x, y)[k + 2]") in edits
    assert ("off-by-one", "range(k + 1)") in edits
    assert ("swap", "g(y, x)") in edits
    assert ("factor", "g(x, y)[k + 1]") in edits
    assert ("sign", "x") in edits
    assert ("sign", "g(x, y)[k + 1] * 2 + -x") in edits


def test_a_mutant_whose_place_moved_is_refused():
    g = mutants.sample("stats", 5, seed=0)[0]
    text = (ROOT / g.file).read_text(encoding="utf-8")
    assert mutants.plant("\n" + text, g) is None
    assert mutants.plant(text[: len(text) // 100], g) is None or g.line < 5
