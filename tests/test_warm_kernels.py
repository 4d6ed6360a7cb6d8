"""``tools/warm_kernels.py`` (run by ``tools/setup.sh``): its list names the package's cached numba
kernels, each with as many argument types as the kernel takes, and a listed signature it
compiles into an empty cache is loaded, not compiled again, by the next process."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import warm_kernels  # noqa: E402  (tools/ is not a package)


def test_every_listed_signature_names_a_cached_kernel_with_that_many_arguments():
    kernels = warm_kernels.cached_kernels()
    assert len(kernels) >= 60
    pairs = warm_kernels.read_list()
    assert pairs
    for kernel, signature in pairs:
        assert kernel in kernels, f"{kernel} is not a cached kernel: renew with --record"
        arguments = inspect.signature(kernels[kernel].py_func).parameters
        assert len(warm_kernels.signature_types(signature)) == len(arguments), kernel


def test_a_warmed_signature_is_loaded_by_a_first_call(tmp_path):
    line = next(k for k in warm_kernels.read_list() if k[0].endswith("series_blocks"))
    probe = (
        "import importlib, sys; sys.path.insert(0, 'tools'); import warm_kernels as w; "
        "m, _, name = sys.argv[1].rpartition('.'); k = getattr(importlib.import_module(m), name); "
        "k.compile(w.signature_types(sys.argv[2])); "
        "print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT / "src"), "PATH": ""}
    run = [sys.executable, "-c", probe, *line]
    first = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.returncode == 0 and first.stdout.split() == ["0", "1"], first.stderr
    then = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True)
    assert then.returncode == 0 and then.stdout.split() == ["1", "0"], then.stderr
