"""The gauge toolkit for any torch model: its symmetries, a recorder of their invariants, and
gauge-aware optimizer-state surgery.

``find_units`` finds the positively homogeneous units (rescaling and scale symmetries) and the
attention pairs of a model; ``GaugeRecorder`` records their invariants, drift and predicted drift
per optimizer step; ``rescale_units`` applies a gauge transformation to weights and optimizer
state together. Torch loads on first use of a name, so ``import gaugedyn.gauge`` stays light.
"""

from __future__ import annotations

_LAZY = {
    "GaugeRecorder": "._recorder",
    "FIELDS": "._recorder",
    "DERIVED": "._recorder",
    "find_units": "._units",
    "UnitGroup": "._units",
    "Side": "._units",
    "KINDS": "._units",
    "rescale_units": "._surgery",
    "unit_rows": "._surgery",
    "duplicate_unit": "._surgery",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
