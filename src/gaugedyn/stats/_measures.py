r"""What a finding measures, declared before its run: the kind of per-seed values (which fixes the
rule that judges them) and the smallest effect of interest in the measure's own units (at which
the finding's power is computed).

A rule is never chosen after looking at the data. Each finding declares a `Measure`:

- ``kind``, a property of the measure known before any run (`KINDS`): a signed quantity
  whose per-seed values are close to symmetric (``symmetric``: a difference or mean of like
  terms, a share away from its bounds, the log of a positive ratio or time), a positive
  quantity with a long right tail or a difference of such (``long-tailed``: an error, a time, a
  ratio), a quantity of no assured shape (``any shape``: declared where the audit refused the
  mean rule on resamples of the published values), 0/1 outcomes (``outcome``), a paired
  difference that is mostly exactly tied (``tied``: judged by its signs), a least-squares
  slope over rows (``exponent``) or one deterministic value (``exact``). The kind and the claim's form (a threshold, a paired
  difference, a band, every cell, some cell) give the rule (`rule_for()`): mean rules for
  symmetric values, median rules for long-tailed ones (a median is also the log scale's: the
  median of $\log x$ is the log of the median of $x$), the randomised exact proportion for
  outcomes, the sign test for mostly tied paired differences, the slope rules for exponents. The audit (``gaugedyn audit-rules``) simulates each
  kind's rules on the noise shapes of the kind (`Kind.shapes`) and on resamples of the
  published values of every finding that uses them; a rule that misses the bars on a shape of
  its kind is not allowed there (``tests/test_measures.py``).
- ``effect``, the smallest effect of interest in the measure's units (the paper's value where
  it gives one, as ``paper``): the finding's power is the rule's probability of HELD with the
  truth that far on the claimed side of the threshold (or at ``paper``), simulated per cell on
  resamples of the finding's own per-seed values (`gaugedyn.stats.power_at()`).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .._errors import InputError

LOGNORMAL_SHAPES = (
    "lognormal0.5-toward",
    "lognormal0.5-away",
    "lognormal1-toward",
    "lognormal1-away",
)
"""Lognormal noise of log-sd 0.5 and 1, its long tail pointing away from the claimed side
(``toward``: the bulk of the values leans toward the claimed side, the failure of a mean rule
that says HELD too often) or into it (``away``: the bulk leans away, the failure that says NOT
HELD too often)."""

TIE_SHAPES = ("ties0", "ties0.5", "ties0.9")
"""Paired differences of three values, ``-1``, ``0`` and ``+1``, with ``0`` (a tie) of
probability 0, 0.5 or 0.9 and the untied ones ``+1`` with the simulated share: the noise of a
``tied`` measure (the audit's shapes of `gaugedyn.stats.RULES` ``paired_sign``)."""

FORMS = ("threshold", "paired", "inside", "outside", "every_cell", "some_cell")
"""The forms of a claim: one parameter against a threshold, a paired difference against a
threshold, inside a band, outside a band, in every cell, in some cell."""


@dataclass(frozen=True)
class Kind:
    """A kind of measure: what it is, the noise shapes it meets (the audit's barred shapes for
    its rules) and the rule for each form of claim."""

    name: str
    text: str
    shapes: tuple[str, ...]
    rules: Mapping[str, str] = field(default_factory=dict)


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "symmetric",
            "a signed quantity whose per-seed values are close to symmetric: a difference or a "
            "mean of like terms, a share away from its bounds, the log of a positive ratio or "
            "time (a log-scale rule)",
            ("normal", "t3"),
            {
                "threshold": "mean_threshold",
                "paired": "paired_difference",
                "inside": "equivalence",
                "outside": "relevant_difference",
                "every_cell": "every_cell",
                "some_cell": "some_cell",
            },
        ),
        Kind(
            "long-tailed",
            "a positive quantity with a long right tail, or a difference of such: an error, a "
            "time, a ratio (judged by its median, which any monotone rescaling such as the log "
            "keeps)",
            ("normal", "t3", *LOGNORMAL_SHAPES),
            {
                "threshold": "median_threshold",
                "paired": "paired_median",
                "inside": "median_band",
                "outside": "median_relevant_difference",
                "every_cell": "every_cell_median",
                "some_cell": "some_cell_median",
            },
        ),
        Kind(
            "any shape",
            "a quantity of no assured shape: declared where the kind's mean rule missed the "
            "size bar on resamples of the published values (few seeds, outliers, a share near "
            "its bound); judged distribution-free by its median",
            ("normal", "t3", *LOGNORMAL_SHAPES),
            {
                "threshold": "median_threshold",
                "paired": "paired_median",
                "inside": "median_band",
                "outside": "median_relevant_difference",
                "every_cell": "every_cell_median",
                "some_cell": "some_cell_median",
            },
        ),
        Kind(
            "outcome",
            "0/1 outcomes, one per trial",
            ("bernoulli",),
            {
                "threshold": "proportion",
                "inside": "proportion_band",
                "every_cell": "every_cell_proportion",
            },
        ),
        Kind(
            "tied",
            "a paired difference of few distinct values, most seeds exactly tied (such as two "
            "shares of one or two 0/1 outcomes per seed): judged by the sign of each seed's "
            "difference, ties dropped (the sign test; McNemar's exact test for paired 0/1 "
            "outcomes), a claim that the difference falls on the claimed side more often than "
            "on the other",
            TIE_SHAPES,
            {"paired": "paired_sign"},
        ),
        Kind(
            "exponent",
            "a least-squares slope over rows (a log-log exponent), residuals close to normal",
            ("normal", "t3"),
            {"threshold": "slope_threshold", "inside": "slope_band"},
        ),
        Kind(
            "exact",
            "one deterministic value (a numerical integration): no sampling error",
            (),
            {"threshold": "deterministic"},
        ),
    )
}
"""The kinds of measure by name."""


def rule_for(kind: str, form: str) -> str:
    """The rule that judges a claim of ``form`` (`FORMS`) on a measure of ``kind`` (`KINDS`).

    Parameters
    ----------
    kind : str
        A kind of measure, a key of `KINDS` (``"symmetric"``, ``"long-tailed"``, ...).
    form : str
        A form of claim the kind allows, one of `FORMS` (``"threshold"``, ``"paired"``, ...).

    Returns
    -------
    str
        The name of the catalogue rule (a key of `RULES`).

    Raises
    ------
    InputError
        When ``kind`` is not a kind of measure, or ``form`` is not a form that kind judges (the
        message names the allowed ones).
    """
    if kind not in KINDS:
        raise InputError(f"kind={kind!r} is not a kind of measure: one of {', '.join(KINDS)}")
    rules = KINDS[kind].rules
    if form not in rules:
        raise InputError(
            f"form={form!r} is not allowed for a {kind} measure: one of {', '.join(rules)}"
        )
    return rules[form]


def form_of(rule_name: str) -> str:
    """The form of claim a catalogue rule judges (`FORMS`): ``"paired"`` for a paired rule, else
    the rule's claim.

    Parameters
    ----------
    rule_name : str
        A rule of the catalogue (a key of `RULES`).

    Returns
    -------
    str
        One of `FORMS`.

    Raises
    ------
    InputError
        When ``rule_name`` is not a catalogue rule (raised by `rule()`).
    """
    from ._rules import rule

    r = rule(rule_name)
    return "paired" if r.paired else r.claim


def kinds_of(rule_name: str) -> tuple[str, ...]:
    """The kinds of measure a rule may judge (those whose choice it is).

    Parameters
    ----------
    rule_name : str
        A rule's name; one that no kind chooses gives an empty tuple.

    Returns
    -------
    tuple[str, ...]
        The names of the kinds (keys of `KINDS`) whose rules include ``rule_name``, in `KINDS`
        order.
    """
    return tuple(k.name for k in KINDS.values() if rule_name in k.rules.values())


@dataclass(frozen=True)
class Measure:
    """What a finding measures, declared in its experiment before the run and stated in its
    protocol: the ``kind`` (`KINDS`, which fixes the rule), the ``unit`` (what one
    per-seed value is, in words), the smallest ``effect`` of interest in that unit, and the
    paper's value of the judged parameter (``paper``; ``None`` where the paper gives none). The
    finding's power is computed at ``paper`` where there is one, otherwise at the threshold
    moved ``effect`` onto the claimed side (`power_value()`)."""

    kind: str
    unit: str
    effect: float
    paper: float | None = None
    why: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise InputError(
                f"kind={self.kind!r} is not a kind of measure: one of {', '.join(KINDS)}"
            )
        ok = isinstance(self.effect, int | float) and math.isfinite(self.effect)
        if not ok or self.effect <= 0:
            raise InputError(
                f"effect={self.effect!r} is not allowed: the smallest effect of interest, a "
                "positive finite number in the measure's units"
            )
        if self.paper is not None and not math.isfinite(float(self.paper)):
            raise InputError(f"paper={self.paper!r} is not allowed: a finite number or None")

    def at(self, paper: float | None) -> Measure:
        """This measure with the paper's value ``paper`` (one that depends on the run's
        configuration, such as $D^2$ at the configured ``D``); ``None`` keeps the declared
        one."""
        return self if paper is None else replace(self, paper=float(paper))

    def rule(self, form: str) -> str:
        """The rule for a claim of ``form`` on this measure (`rule_for()`)."""
        return rule_for(self.kind, form)

    def check(self, rule_name: str) -> None:
        """Refuse (`gaugedyn.InputError`) a rule that is not this measure's choice for
        its form: a finding cannot be judged by a rule its measure's kind does not allow."""
        form = form_of(rule_name)
        want = rule_for(self.kind, form)
        if rule_name != want:
            raise InputError(
                f"rule={rule_name!r} is not allowed for a {self.kind} measure "
                f"({self.unit}): its {form} claims are judged by {want!r}"
            )

    def power_value(self, threshold: Any, direction: str) -> float:
        """Where the power is computed: the paper's value, else the threshold moved ``effect``
        onto the claimed side (a band ``inside``: ``effect`` inside its upper end; ``outside``:
        ``effect`` beyond it)."""
        if self.paper is not None:
            return float(self.paper)
        if isinstance(threshold, tuple | list):
            hi = float(threshold[1])
            return hi - self.effect if direction == "inside" else hi + self.effect
        return float(threshold) + (self.effect if direction == ">" else -self.effect)

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "unit": self.unit,
            "effect": float(self.effect),
            "paper": None if self.paper is None else float(self.paper),
            "why": self.why,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Measure:
        return cls(d["kind"], d["unit"], d["effect"], d.get("paper"), d.get("why", ""))


def measure_of(table: Mapping[str, Measure], finding_id: str) -> Measure:
    """The declared measure of ``finding_id`` in an experiment's ``table``, so every finding has one.

    Parameters
    ----------
    table : Mapping[str, Measure]
        An experiment's measures: keys are ``fnmatch`` patterns of finding ids, tried in order.
    finding_id : str
        The finding's id.

    Returns
    -------
    Measure
        The measure of the first pattern that matches.

    Raises
    ------
    InputError
        When no pattern matches ``finding_id``.
    """
    for pattern, m in table.items():
        if fnmatch.fnmatchcase(finding_id, pattern):
            return m
    raise InputError(
        f"finding {finding_id!r} has no declared measure: add a pattern to its experiment's "
        "measures (kind, unit, smallest effect of interest)"
    )


def measures_markdown(table: Mapping[str, Measure]) -> str:
    """A markdown table of an experiment's declared measures (finding-id pattern, kind, the rules
    the kind chooses, unit, smallest effect, the paper's value, why), for its protocol.

    Parameters
    ----------
    table : Mapping[str, Measure]
        An experiment's measures by finding-id pattern, in the order the rows are written.

    Returns
    -------
    str
        The table, a header and one row per pattern, ending in a newline.
    """
    lines = [
        "| findings (pattern) | kind | rules | one per-seed value | smallest effect | paper | why |",
        "|---|---|---|---|---|---|---|",
    ]
    for pattern, m in table.items():
        rules = ", ".join(f"`{r}`" for r in dict.fromkeys(KINDS[m.kind].rules.values()))
        paper = "-" if m.paper is None else f"{m.paper:g}"
        cells = [f"`{pattern}`", m.kind, rules, m.unit, f"{m.effect:g}", paper, m.why or "-"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
