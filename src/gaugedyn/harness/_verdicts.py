"""Two helpers the experiments share when they judge findings by the verdict-rule catalogue.

- :func:`margin_value`: where the paper gives no value of a judged parameter, a finding's power
  is computed at the threshold moved by the audit's margin (:data:`gaugedyn.stats._audit.MARGIN`
  = 0.5 standard deviations of one per-seed value; for a proportion, of one trial at ``p = 1/2``)
  onto the claimed side, the point at which ``gaugedyn audit-rules`` measures a rule's false
  NOT HELD rate. The finding records the value and why (:func:`no_paper_value`).
- :func:`deterministic`: a finding whose measured value has no sampling error (one
  deterministic integration), judged by the catalogue's rule ``deterministic``
  (:data:`gaugedyn.stats.RULES`): its interval the point itself, the one value in ``per_seed``;
  with no noise its verdict at the paper's value is certain, so its power is 1 when the paper's
  value lies on the claimed side and 0 otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..stats import MARGIN, RULES, judge
from ._protocol import Claim, judged

DETERMINISTIC = "deterministic"
"""The catalogue's rule for a finding on a deterministic value (``RULES["deterministic"]``:
listed by the audit, not simulated, as there is no noise)."""


def _spread(judgement: Any) -> float:
    rule = RULES[judgement.rule]
    if rule.estimator == "proportion":
        return 0.5
    if rule.estimator == "paired":
        x, y = (np.asarray(v, dtype=float) for v in judgement.values)
        d = (x - y)[np.isfinite(x - y)]
        return float(np.std(d, ddof=1)) if d.size > 1 else math.nan
    if rule.estimator == "slope":
        x, y = (np.asarray(v, dtype=float) for v in judgement.values)
        if x.size < 3:
            return math.nan
        b = np.polyfit(x, y, 1)
        return float(np.std(y - np.polyval(b, x), ddof=2) / np.std(x))
    v = np.asarray(judgement.values, dtype=float)
    if rule.cells:
        with np.errstate(invalid="ignore"):
            return float(np.sqrt(np.nanmean(np.nanvar(v, axis=0, ddof=1))))
    v = v[np.isfinite(v)]
    return float(np.std(v, ddof=1)) if v.size > 1 else math.nan


def margin_value(judgement: Any, margin: float = MARGIN) -> float:
    """The threshold of ``judgement``'s claim moved ``margin`` standard deviations of one
    per-seed value onto the claimed side (a band: its centre). Where the spread is zero or not
    computable, the threshold itself (the power is then ``nan``: not computable)."""
    thr = judgement.threshold
    if isinstance(thr, tuple | list):  # a band: its centre
        return float(sum(thr) / 2)
    sd = _spread(judgement)
    if not (math.isfinite(sd) and sd > 0):
        return float(thr)
    value = thr + margin * sd if judgement.direction == ">" else thr - margin * sd
    if RULES[judgement.rule].estimator == "proportion":
        value = min(max(value, 0.0), 1.0)
    return float(value)


def no_paper_value(judgement: Any) -> tuple[float, dict]:
    """``(value, extra)``: :func:`margin_value` and what a finding records about it."""
    value = margin_value(judgement)
    return value, {
        "paper_value": None,
        "power_at": value,
        "power_at_reason": f"the paper gives no value: power at the threshold "
        f"moved {MARGIN:g} sd onto the claimed side (the audit's "
        "margin)",
    }


def deterministic(
    id: str,
    statement: str,
    value: float,
    threshold: float,
    direction: str = ">",
    *,
    paper_value: float,
    expected: Any = None,
    extra: dict | None = None,
) -> Claim:
    """A finding on a deterministic value (see the module docstring): rule
    ``deterministic`` of the catalogue on the one value, judged by :func:`judged`."""
    j = judge(DETERMINISTIC, [float(value)], threshold=threshold, direction=direction)
    p = float(paper_value)
    return judged(
        id,
        statement,
        j,
        paper_value=p,
        expected=expected if expected is not None else f"{direction} {threshold:g}",
        extra={"paper_value": p} | (extra or {}),
    )
