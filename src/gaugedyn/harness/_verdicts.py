"""A finding on a deterministic value, judged by the verdict-rule catalogue.

:func:`deterministic`: a finding whose measured value has no sampling error (one deterministic
integration), judged by the catalogue's rule ``deterministic`` (:data:`gaugedyn.stats.RULES`):
its interval the point itself, the one value in ``per_seed``; with no noise its verdict at the
paper's value is certain, so its power is 1 when the paper's value lies on the claimed side and
0 otherwise.
"""

from __future__ import annotations

from typing import Any

from ..stats import judge
from ._protocol import Claim, judged

DETERMINISTIC = "deterministic"
"""The catalogue's rule for a finding on a deterministic value (``RULES["deterministic"]``:
listed by the audit, not simulated, as there is no noise)."""


def deterministic(
    id: str,
    statement: str,
    value: float,
    threshold: float,
    direction: str = ">",
    *,
    measure: Any,
    expected: Any = None,
    extra: dict | None = None,
) -> Claim:
    """A finding on a deterministic value (see the module docstring): rule
    ``deterministic`` of the catalogue on the one value, judged by :func:`judged` with its
    declared ``measure`` (kind ``exact``)."""
    j = judge(DETERMINISTIC, [float(value)], threshold=threshold, direction=direction)
    return judged(
        id,
        statement,
        j,
        measure=measure,
        expected=expected if expected is not None else f"{direction} {threshold:g}",
        extra=extra,
    )
