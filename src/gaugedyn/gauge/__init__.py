"""The gauge toolkit for any torch model: its symmetries, a recorder of their invariants, and
gauge-aware optimizer-state surgery.

``find_units`` finds the positively homogeneous units (rescaling and scale symmetries), the
attention pairs and the linear pairs of a model; ``GaugeRecorder`` records their invariants, drift
and predicted drift per optimizer step; ``rescale_units`` applies a gauge transformation to
weights and optimizer state together; ``conservation_laws`` counts the independent conservation
laws of a model's gradient flow (and its symmetries) at generic points, and checks known laws
against the count. Torch loads on first use of a name, so ``import gaugedyn.gauge`` stays light.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "_recorder": ["GaugeRecorder", "FIELDS", "DERIVED"],
        "_units": ["find_units", "UnitGroup", "Side", "KINDS"],
        "_surgery": ["rescale_units", "unit_rows", "duplicate_unit"],
        "_laws": ["conservation_laws", "ConservationLaws", "decide_rank", "RankDecision"],
        "_invariants": ["group_invariants", "group_generators"],
        "_attention": ["GroupedQueryAttention"],
    },
)
