"""``gaugedyn derive``: documents current, --check catches edits and failed identities."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gaugedyn.cli import main
from gaugedyn.symbolic import _registry
from gaugedyn.symbolic._registry import DEFAULT_DIR, derive


@pytest.fixture()
def fresh(tmp_path):
    target = tmp_path / "derivations"
    shutil.copytree(DEFAULT_DIR, target)
    return target


def test_repository_documents_are_current(capsys):
    assert main(["derive", "--check"]) == 0, capsys.readouterr()


def test_check_passes_on_fresh_copy_and_names_an_edited_document(fresh, capsys):
    assert main(["derive", "--check", "--dir", str(fresh)]) == 0
    capsys.readouterr()
    doc = fresh / "reaction_transport.md"
    doc.write_text(
        doc.read_text(encoding="utf-8").replace("mobilities", "mobilitys", 1), encoding="utf-8"
    )
    assert main(["derive", "--check", "--dir", str(fresh)]) != 0
    captured = capsys.readouterr()
    assert "reaction_transport.md" in captured.err
    assert "gaussian_relu.md" not in captured.err


def test_check_names_a_deleted_document(fresh, capsys):
    (fresh / "adam_series.md").unlink()
    assert main(["derive", "--check", "--dir", str(fresh)]) == 1
    assert "adam_series.md" in capsys.readouterr().err


def test_check_names_the_document_whose_identity_fails(fresh, capsys, monkeypatch):
    from gaugedyn.symbolic import _homogeneous

    def broken():
        raise AssertionError("delta is not conserved")

    monkeypatch.setattr(_homogeneous, "verify", broken)
    assert main(["derive", "--check", "--dir", str(fresh)]) == 1
    err = capsys.readouterr().err
    assert "homogeneous_flow.md" in err and "delta is not conserved" in err


def test_write_is_deterministic_and_skips_missing_optional_module(tmp_path, capsys):
    modules = ("gaugedyn.symbolic._gaussian_linear", "gaugedyn.adam._not_written_yet")
    r1 = derive(tmp_path / "a", kernels=tmp_path / "k.py", modules=modules)
    assert r1.ok and r1.skipped == ["gaugedyn.adam._not_written_yet"]
    assert "warning: derivation module gaugedyn.adam._not_written_yet" in capsys.readouterr().err
    first = (tmp_path / "a" / "gaussian_linear.md").read_text(encoding="utf-8")
    r2 = derive(tmp_path / "a", kernels=tmp_path / "k.py", modules=modules)
    assert r2.written == [] and len(r2.unchanged) == 2
    assert (tmp_path / "a" / "gaussian_linear.md").read_text(encoding="utf-8") == first
    assert "20" not in first.split("\n")[2]  # no timestamp in the header comment


def test_registry_includes_the_adam_decomposition():
    assert "gaugedyn.adam._derivation" in _registry.DERIVATIONS


def test_symbolic_package_and_cli_import_light():
    code = (
        "import sys, gaugedyn, gaugedyn.symbolic, gaugedyn.symbolic._cli; "
        "assert 'sympy' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent)
