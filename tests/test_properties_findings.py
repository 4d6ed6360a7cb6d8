"""Findings' measures against a second, plainly written implementation (hypothesis), on built
inputs that cover their branches: seeds kept and dropped, unspecialized checkpoints inside kept
seeds, every switch and none."""

from __future__ import annotations

import numpy as np
from _properties import properties
from hypothesis import given
from hypothesis import strategies as st

from gaugedyn.experiments.adam_state import _analysis as shared

PROPS = properties(25)


def _plain_switch_rates(switched, specialized):
    """Per seed and route: switched checkpoints over those specialized before the pulse; a seed
    is kept when both routes have a specialized checkpoint."""
    seeds = len(switched[0])
    keep, rates = [], ([], [])
    for s in range(seeds):
        counts = [sum(specialized[t][s]) for t in range(2)]
        kept = counts[0] > 0 and counts[1] > 0
        keep.append(kept)
        if kept:
            for t in range(2):
                rates[t].append(sum(switched[t][s]) / counts[t])
    return np.array(keep), rates


@PROPS
@given(data=st.data(), seeds=st.integers(1, 6), directions=st.integers(1, 5))
def test_switch_rates_are_switched_over_specialized_per_seed(data, seeds, directions):
    """A checkpoint switches only if it was specialized (``switched = top0 & ~top1``, so the
    inputs are built that way); unspecialized checkpoints inside a kept seed count in neither
    the numerator nor the denominator."""
    flags = st.lists(
        st.lists(st.sampled_from([0, 1]), min_size=directions, max_size=directions),
        min_size=seeds,
        max_size=seeds,
    )
    specialized = [data.draw(flags) for _ in range(2)]
    lost = [data.draw(flags) for _ in range(2)]
    switched = [
        [[sp & ls for sp, ls in zip(srow, lrow)] for srow, lrow in zip(spec, loss)]
        for spec, loss in zip(specialized, lost)
    ]
    for readout, sfx in shared.SUFFIX.items():
        results = {}
        for t, tag in enumerate("ab"):
            results[f"t2_combined_own_switch_{tag}{sfx}"] = switched[t]
            results[f"t2_combined_own_specialized_{tag}{sfx}"] = specialized[t]
        _, _, keep, rate = shared._switch_rates(results, sfx)
        ref_keep, ref_rates = _plain_switch_rates(switched, specialized)
        assert np.array_equal(keep, ref_keep), readout
        for got, ref in zip(rate, ref_rates):
            assert np.allclose(got, ref), readout
            assert np.all((0 <= got) & (got <= 1))
