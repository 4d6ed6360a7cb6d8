"""Lazy exports for the package's subpackages (SPEC 1), through the ``lazy_loader`` package.

A subpackage whose names need torch or sympy lists them by private module; ``attach`` returns the
module's ``__getattr__``, ``__dir__`` and ``__all__``, so ``import gaugedyn.adam`` stays light
while ``dir()`` and tab completion show every export, eager or lazy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import lazy_loader


def attach(
    package: str, lazy: dict[str, Iterable[str]], eager: Iterable[str] = ()
) -> tuple[Callable, Callable, list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``: ``lazy`` maps a private module name
    (relative to ``package``, without the leading dot) to the names it exports lazily; ``eager``
    names the exports the package imports itself."""
    getattr_, _, lazy_all = lazy_loader.attach(
        package, submod_attrs={module: list(names) for module, names in lazy.items()}
    )
    names = sorted({*eager, *lazy_all})

    def __dir__() -> list[str]:
        return list(names)

    return getattr_, __dir__, names
