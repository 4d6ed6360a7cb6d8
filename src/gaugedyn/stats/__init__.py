"""Statistics shared by every experiment: intervals, fits, verdicts and theory-against-simulation.

Everything here is a thin layer over `scipy.stats` (``bootstrap``, ``binomtest``,
``linregress``, ``t``), so that an interval means the same thing wherever it is quoted:

- `bootstrap_ci()` / `paired_ci()` / `independent_ci()`: 95% bootstrap intervals of
  a statistic of one sample, of paired samples resampled together (a seed is one pair), or of
  independent samples resampled each on its own;
- `proportion_ci()`: the Wilson interval of a binomial proportion;
- `line_fit()` / `loglog_fit()`: least squares with a t interval on the slope;
- `verdict()`: an interval and a threshold to ``HELD`` / ``NOT HELD`` / ``UNRESOLVED``;
- `compare()`: a theory curve against a simulated one, both error measures;
- `generator()`: a ``numpy.random.Generator`` derived from a run's seed and a label, so no
  resampling is ever seeded with a constant;
- `RULES`: the catalogue of verdict rules by name (`Rule`, `judge()`), each
  turning per-seed values into a `Judgement` (verdict, interval, rule words, values),
  with `combine_readings()` and `finding_record()` for findings judged under several
  readings; `audit()` measures every rule's error rates, coverage and power by simulation
  (``gaugedyn audit-rules``);
- `Measure`: what a finding measures, declared before its run: the kind of its per-seed
  values (`KINDS`), which chooses its rule (`rule_for()`), and the smallest effect of
  interest in its own units, at which `power_at()` simulates its power on resamples of its
  own values.
"""

from __future__ import annotations

from ._audit import AUDIT_CANDIDATE_REPS as AUDIT_CANDIDATE_REPS
from ._audit import AUDIT_CELLS as AUDIT_CELLS
from ._audit import AUDIT_HEADER as AUDIT_HEADER
from ._audit import AUDIT_QUICK as AUDIT_QUICK
from ._audit import AUDIT_RATE_KEYS as AUDIT_RATE_KEYS
from ._audit import AUDIT_REPS as AUDIT_REPS
from ._audit import AUDIT_RESAMPLED_REPS as AUDIT_RESAMPLED_REPS
from ._audit import AUDIT_SEEDS as AUDIT_SEEDS
from ._audit import AUDIT_SHAPES as AUDIT_SHAPES
from ._audit import AUDIT_TRIALS as AUDIT_TRIALS
from ._audit import EFFECT as EFFECT
from ._audit import MARGIN as MARGIN
from ._audit import SIZE_BAR as SIZE_BAR
from ._audit import Rate as Rate
from ._audit import audit as audit
from ._audit import audit_legend as audit_legend
from ._audit import audit_rows as audit_rows
from ._audit import audit_rule as audit_rule
from ._audit import audit_seed as audit_seed
from ._audit import audit_values as audit_values
from ._audit import barred_shapes as barred_shapes
from ._audit import coverage_by_p_rows as coverage_by_p_rows
from ._audit import format_table as format_table
from ._audit import markdown_table as markdown_table
from ._audit import power as power
from ._audit import power_at as power_at
from ._audit import rate_percent as rate_percent
from ._audit import rules_markdown as rules_markdown
from ._estimators import holm as holm
from ._estimators import median_bounds as median_bounds
from ._estimators import t_bounds as t_bounds
from ._intervals import CONFIDENCE as CONFIDENCE
from ._intervals import DIRECTIONS as DIRECTIONS
from ._intervals import N_RESAMPLES as N_RESAMPLES
from ._intervals import Interval as Interval
from ._intervals import LineFit as LineFit
from ._intervals import band as band
from ._intervals import bootstrap_ci as bootstrap_ci
from ._intervals import compare as compare
from ._intervals import generator as generator
from ._intervals import independent_ci as independent_ci
from ._intervals import line_fit as line_fit
from ._intervals import local_slopes as local_slopes
from ._intervals import loglog_fit as loglog_fit
from ._intervals import mean_ci as mean_ci
from ._intervals import mean_difference_ci as mean_difference_ci
from ._intervals import paired_ci as paired_ci
from ._intervals import proportion_ci as proportion_ci
from ._intervals import ratio_ci as ratio_ci
from ._intervals import rule_text as rule_text
from ._intervals import verdict as verdict
from ._measures import FORMS as FORMS
from ._measures import KINDS as KINDS
from ._measures import Measure as Measure
from ._measures import form_of as form_of
from ._measures import kinds_of as kinds_of
from ._measures import measure_of as measure_of
from ._measures import measures_markdown as measures_markdown
from ._measures import rule_for as rule_for
from ._rules import DEPENDS as DEPENDS
from ._rules import RULES as RULES
from ._rules import UNDERPOWERED as UNDERPOWERED
from ._rules import Judgement as Judgement
from ._rules import Rule as Rule
from ._rules import combine_readings as combine_readings
from ._rules import finding_record as finding_record
from ._rules import judge as judge
from ._rules import rule as rule

__all__ = [
    "AUDIT_CANDIDATE_REPS",
    "AUDIT_CELLS",
    "AUDIT_HEADER",
    "AUDIT_QUICK",
    "AUDIT_RATE_KEYS",
    "AUDIT_REPS",
    "AUDIT_RESAMPLED_REPS",
    "AUDIT_SEEDS",
    "AUDIT_SHAPES",
    "AUDIT_TRIALS",
    "EFFECT",
    "MARGIN",
    "SIZE_BAR",
    "Rate",
    "audit",
    "audit_legend",
    "audit_rows",
    "audit_rule",
    "audit_seed",
    "audit_values",
    "barred_shapes",
    "coverage_by_p_rows",
    "format_table",
    "markdown_table",
    "power",
    "power_at",
    "rate_percent",
    "rules_markdown",
    "holm",
    "median_bounds",
    "t_bounds",
    "CONFIDENCE",
    "DIRECTIONS",
    "N_RESAMPLES",
    "Interval",
    "LineFit",
    "band",
    "bootstrap_ci",
    "compare",
    "generator",
    "independent_ci",
    "line_fit",
    "local_slopes",
    "loglog_fit",
    "mean_ci",
    "mean_difference_ci",
    "paired_ci",
    "proportion_ci",
    "ratio_ci",
    "rule_text",
    "verdict",
    "FORMS",
    "KINDS",
    "Measure",
    "form_of",
    "kinds_of",
    "measure_of",
    "measures_markdown",
    "rule_for",
    "DEPENDS",
    "RULES",
    "UNDERPOWERED",
    "Judgement",
    "Rule",
    "combine_readings",
    "finding_record",
    "judge",
    "rule",
]
