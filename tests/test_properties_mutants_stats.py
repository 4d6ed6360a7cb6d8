"""Properties written for generated mutants that survived the suite (``tools/mutate.py
--generated --select coverage``; the record is ``tools/mutation-data/generated.json``): each
states what the function guarantees, and fails on the mutant named beside it."""

from __future__ import annotations

import operator
import re

from _properties import properties
from hypothesis import given
from hypothesis import strategies as st

from gaugedyn import stats

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@properties(25)
@given(
    threshold=st.floats(-1e6, 1e6, allow_nan=False),
    direction=st.sampled_from([">", "<"]),
    width=st.floats(1e-3, 1e3),
)
def test_the_rule_words_state_the_relations_verdict_applies(threshold, direction, width):
    # stats:_intervals:613:20:comparison (the NOT HELD relation of the words reversed)
    text = stats.rule_text(threshold, direction)
    held = re.search(r"HELD if the \S+ interval lies wholly (\S+) ", text)
    not_held = re.search(r"NOT HELD if it lies wholly (\S+) ", text)
    assert held and not_held, text
    assert held.group(1) == direction
    # an interval wholly on each side, touching the threshold: the words' relation holds for
    # both ends exactly when verdict() says the word
    for interval in ([threshold - width, threshold], [threshold, threshold + width]):
        for word, relation in (("HELD", held.group(1)), ("NOT HELD", not_held.group(1))):
            says = all(_OPS[relation](x, threshold) for x in interval)
            assert says == (stats.verdict(interval, threshold, direction) == word), (
                text,
                interval,
            )
