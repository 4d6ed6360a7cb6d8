"""``gaugedyn derive`` clears the numba caches compiled from the generated modules it rewrites.

Numba checks a cached function against its own file only, so a cached function of
``theory/_compiled_kernels.py`` that inlines a kernel of ``theory/_generated_kernels.py`` loads
its old machine code after the generated file changes (measured: the compiled ``pair`` kept
returning the old ``F_erf`` while the numpy kernel returned the new one).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gaugedyn
from gaugedyn.symbolic._registry import COMPILED_FROM, clear_numba_cache, compiled_from

PACKAGE = Path(gaugedyn.__file__).resolve().parent

# F_erf(1, 1, 1/2) from the compiled kernel family 1 (erf) and from the numpy kernel
PROBE = """
import json
from gaugedyn.theory import generated_kernels as gk
from gaugedyn.theory._compiled_kernels import pair
print(json.dumps({"compiled": pair(1, 0.0, 0.0, 1.0, 1.0, 0.5),
                  "numpy": float(gk.pair_erf(1.0, 1.0, 0.5)),
                  "hits": sum(pair.stats.cache_hits.values())}))
"""


def _run(args, root: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root / "src")
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=root, capture_output=True, text=True, check=True
    )


def _probe(root: Path) -> dict:
    return json.loads(_run(["-c", PROBE], root).stdout)


@pytest.mark.slow
def test_derive_rewriting_the_kernels_clears_the_stale_compiled_cache(tmp_path):
    src = tmp_path / "src" / "gaugedyn"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("__pycache__"))
    kernels = src / "theory" / "_generated_kernels.py"
    text = kernels.read_text(encoding="utf-8")
    old = "return 2*np.arcsin(c/(np.sqrt(q1 + 1)*np.sqrt(q2 + 1)))/np.pi"
    assert text.count(old) == 1
    # a stale generated module (same size: the compiled module's file is untouched either way)
    kernels.write_text(text.replace(old, old.replace("2*", "3*")), encoding="utf-8")

    first = _probe(tmp_path)
    assert first["compiled"] == pytest.approx(first["numpy"], rel=1e-12)
    assert _probe(tmp_path)["hits"] == 1  # cached, and loaded from the cache

    (tmp_path / "docs").mkdir()
    out = _run(
        ["-m", "gaugedyn", "derive", "--only", "gaussian_linear", "--dir", str(tmp_path / "docs")],
        tmp_path,
    ).stdout
    assert kernels.read_text(encoding="utf-8") == text

    after = _probe(tmp_path)
    assert after["numpy"] == pytest.approx(first["numpy"] * 2 / 3, rel=1e-12)
    assert after["compiled"] == pytest.approx(after["numpy"], rel=1e-12)
    assert after["hits"] == 0
    assert "cleared" in out and "_compiled_kernels.py" in out


def test_clear_numba_cache_removes_only_that_modules_files(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text("x = 1\n", encoding="utf-8")
    cache = tmp_path / "__pycache__"
    cache.mkdir(exist_ok=True)
    mine = [cache / "mod.f-3.py311.nbi", cache / "mod.f-3.py311.1.nbc"]
    others = [cache / "mod_two.f-3.py311.nbi", cache / "mod.cpython-311.pyc"]
    for path in (*mine, *others):
        path.write_bytes(b"")
    import numba

    if numba.config.CACHE_DIR:
        pytest.skip("NUMBA_CACHE_DIR is set for this process: the cache is not beside the file")
    assert sorted(clear_numba_cache(source)) == sorted(mine)
    assert all(not p.exists() for p in mine) and all(p.exists() for p in others)


def test_compiled_from_resolves_in_the_written_package_only(tmp_path):
    assert compiled_from(PACKAGE / "theory" / "_generated_kernels.py") == (
        PACKAGE / "theory" / "_compiled_kernels.py",
        PACKAGE / "training" / "_online_kernels.py",
    )
    assert compiled_from(tmp_path / "_generated_kernels.py") == ()


def _cached_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cache=True" in path.read_text(encoding="utf-8"):
            yield path


def test_every_cached_module_that_compiles_a_generated_module_is_declared():
    """A module with ``cache=True`` functions that imports a generated module (or
    ``jit_generated``, which compiles ``theory/_generated_kernels.py``) is in `COMPILED_FROM`
    under that generated module."""
    uses = {
        "_generated_kernels": ("theory", "_generated_kernels.py"),
        "generated_kernels": ("theory", "_generated_kernels.py"),
        "jit_generated": ("theory", "_generated_kernels.py"),
        "_auxiliary_generated": ("training", "_auxiliary_generated.py"),
    }
    found: dict[tuple[str, str], set[tuple[str, str]]] = {key: set() for key in COMPILED_FROM}
    for path in _cached_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(a.name for a in node.names)]
                for name in names:
                    key = uses.get(name.rpartition(".")[2])
                    if key is not None:
                        found[key].add((path.parent.name, path.name))
    assert found == {key: set(value) for key, value in COMPILED_FROM.items()}
