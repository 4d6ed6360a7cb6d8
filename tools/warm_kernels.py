"""Compile the package's cached numba kernels ahead of use (``tools/setup.sh`` runs it).

Every kernel declared ``@njit(..., cache=True)`` compiles on its first call with a new signature
and stores the machine code in numba's cache (the kernel module's ``__pycache__``, or
``NUMBA_CACHE_DIR``); later processes load it instead of compiling. A fresh checkout has no
cache, so the first test run compiled every kernel inside the tests, and under ``pytest -n 2``
the two workers each compiled the kernels both met (a cold process compiling every signature
below costs about 43 CPU-s). This compiles the signatures listed in
``tools/kernel_signatures.txt`` from the source, once, into that same cache; what the tests (and
a user's runs) then load is exactly what a cold first call would have compiled, since numba keys
each entry by the source file's stamp, the signature and the CPU. A signature not listed still
compiles on first use, as before. Run from the repository root::

    python tools/warm_kernels.py            # compile every listed signature into the cache
    python tools/warm_kernels.py --record   # rewrite the list from the cache a full test run left

A listed kernel that no longer exists or no longer takes the listed arguments is reported
(``--record`` after a full test run renews the list; ``tests/test_structure.py`` checks that
every listed kernel exists and takes that many arguments).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LIST = Path(__file__).with_name("kernel_signatures.txt")
HEADER = (
    "# The signatures tools/warm_kernels.py compiles into numba's cache (tools/setup.sh).\n"
    "# One line per signature: <module>.<kernel> <argument types, as numba writes them>.\n"
    "# Renewed by `python tools/warm_kernels.py --record` after a full test run.\n"
)


def kernel_modules() -> list[str]:
    """The package's modules that declare cached kernels (``cache=True`` in their source)."""
    names = []
    for path in sorted((SRC / "gaugedyn").rglob("*.py")):
        if "cache=True" in path.read_text():
            names.append(".".join(path.relative_to(SRC).with_suffix("").parts))
    return names


def cached_kernels() -> dict[str, object]:
    """``{"module.kernel": dispatcher}`` for every cached numba kernel of the package."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for name in kernel_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, Dispatcher) and value._cache.__class__.__name__ != "NullCache":
                if value.py_func.__module__ == name:
                    found[f"{name}.{attr}"] = value
    return found


def read_list(path: Path = LIST) -> list[tuple[str, str]]:
    """The listed ``(kernel, signature)`` pairs."""
    pairs = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            kernel, signature = line.split(" ", 1)
            pairs.append((kernel, signature))
    return pairs


def signature_types(signature: str) -> tuple:
    """The numba argument types that ``signature`` (as `repr` writes them) names."""
    from numba.core import types

    namespace = {k: v for k, v in vars(types).items() if not k.startswith("_")}
    namespace["NumPyRandomGeneratorType"] = types.NumPyRandomGeneratorType(
        "NumPyRandomGeneratorType"
    )  # the type of a numpy Generator argument, written by its name alone
    value = eval(signature, {"__builtins__": {}}, namespace)  # noqa: S307 (our own list)
    return tuple(value)


def record() -> int:
    """Rewrite the list from the signatures in the kernels' caches (no literal arguments:
    those are a kernel's calls from another kernel, compiled with their caller)."""
    lines = []
    for name, dispatcher in sorted(cached_kernels().items()):
        index = dispatcher._cache._cache_file._load_index()
        for key in index:
            signature = repr(tuple(key[0]))
            if "Literal" not in signature:
                lines.append(f"{name} {signature}")
    LIST.write_text(HEADER + "".join(f"{line}\n" for line in sorted(set(lines))))
    print(f"{len(set(lines))} signatures of {len(cached_kernels())} kernels -> {LIST.name}")
    return 0


def warm() -> int:
    """Compile every listed signature into the cache; report the stale entries."""
    start = time.perf_counter()
    kernels = cached_kernels()
    stale = []
    pairs = read_list()
    for kernel, signature in pairs:
        dispatcher = kernels.get(kernel)
        if dispatcher is None:
            stale.append(f"{kernel}: no such cached kernel")
            continue
        try:
            dispatcher.compile(signature_types(signature))
        except Exception as err:  # a stale list must not stop set-up: name it instead
            stale.append(f"{kernel}{signature}: {type(err).__name__}")
    took = time.perf_counter() - start
    print(f"numba: {len(pairs) - len(stale)} kernel signatures compiled or loaded ({took:.0f} s)")
    for line in stale:
        print(f"numba: stale entry of {LIST.name} (renew with --record): {line}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="rewrite the list from the cache")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(SRC))
    return record() if args.record else warm()


if __name__ == "__main__":
    sys.exit(main())
