"""The audit of the verdict rules: their error rates, coverage and power, by simulation.

For a rule, a number of seeds ``n`` (and of cells), and a noise shape, four scenarios are
simulated ``reps`` times each, every one with its own generator spawned from one
``numpy.random.SeedSequence``. Distances are in standard deviations of one observation (for a
slope: of one residual, with ``x`` standardised; for a proportion: ``sqrt(p0 (1 - p0))`` at
``p0 = 1/2``), measured from the claim's boundary (a threshold at 0, or the band ``(-1, 1)``):

- ``true``: the claim holds with ``margin`` to spare; NOT HELD here is a *false NOT HELD*;
- ``boundary``: the parameter sits on the boundary; HELD here is the test's size;
- ``false``: the claim fails by ``margin``; HELD here is a *false HELD*;
- ``power``: the claim holds by ``effect``; HELD here is the power.

Cell rules take the least favourable configuration: for ``every_cell`` the false claim has one
cell ``margin`` on the wrong side and the others 5 sd on the right side; for ``some_cell`` the
true claim (and the power) has one cell on the right side and the others 5 sd on the wrong side.
Coverage is that of the rule's 95% interval for the true parameter over the ``true``,
``boundary`` and ``false`` scenarios (per cell for a cell rule; the ``joint`` coverage is that
of the interval for ``min_c theta_c`` or ``max_c theta_c``, conservative by construction).
Every rate carries its Monte Carlo standard error ``sqrt(r (1 - r) / reps)``.

The ``deterministic`` rule (a single exact value) is listed, not simulated: it has no sampling
error, so its verdict is certain and its power is 1 or 0 (:data:`NOT_SIMULATED`).

A proportion rule is audited at the trial counts of the experiments' proportion findings
(:data:`TRIALS`) instead of the seed counts, and its coverage is also measured at each true
success probability of :data:`COVERAGE_P` (``coverage_by_p``; the bar applies to each).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._errors import InputError
from ._rules import CANDIDATES, RULES, Rule

SHAPES = ("normal", "t3", "lognormal")
"""Noise shapes by name; ``empirical`` (resamples of given values) is open to the Python API."""
BARRED_SHAPES = ("normal", "t3", "bernoulli")
"""Shapes on which a rule must meet the bars."""
SCENARIOS = ("true", "boundary", "false", "power")
MARGIN = 0.5
EFFECT = 0.8
FAR = 5.0
ERROR_BAR = 0.05
COVERAGE_BAR = (0.93, 0.97)
SEEDS = (10, 40)
"""Seed counts of the experiments' findings (prototypes: 10 seeds; shared_representation: 40)."""
TRIALS = (6, 10, 16, 32, 39, 64, 96, 160)
"""Trial counts of the experiments' proportion findings: gauge_on_networks, 6 seeds per
optimizer (quick) and 16 (full); gauge_under_adam, seeds x (beta1, beta2) configurations over
the tied, the untied and all configurations, 16 / 16 / 32 (quick) and 64 / 96 / 160 (full);
ownership_patterns, the patterns inside the claimed region (39 in the full run, none in the
quick run, which leaves that finding UNRESOLVED); 10, the smallest seed count of the other
rules."""
COVERAGE_P = (0.05, 0.25, 0.5, 0.75, 0.8, 0.95)
"""True success probabilities at which a proportion rule's coverage is measured (0.25, 0.5 and
0.75 are the false, boundary and true scenarios; 0.8 is ownership_patterns' threshold)."""
CELLS = (6, 42)
"""Cell counts of the claims over many cells (prototypes: 6 sizes, and 6 sizes x 7 variants)."""
REPS = 20000
NOT_SIMULATED = (
    "not simulated: a deterministic value has no sampling error (its interval is the point)"
)
QUICK = {"seeds": SEEDS, "trials": TRIALS, "cells": (42,), "reps": 2000}
_BLOCK = 2_000_000


class Rate(NamedTuple):
    """A simulated probability and its Monte Carlo standard error."""

    rate: float
    se: float

    @classmethod
    def of(cls, hits: float, total: int) -> Rate:
        r = hits / total
        return cls(float(r), float(math.sqrt(max(r * (1 - r), 0.0) / total)))


def noise(
    rng: np.random.Generator, shape: str, size: tuple, center: str = "mean", values: Any = None
) -> np.ndarray:
    """Draws of standard deviation 1 whose ``center`` (``"mean"`` or ``"median"``) is 0:
    ``normal``; ``t3`` (Student t with 3 degrees of freedom over ``sqrt 3``); ``lognormal``
    (``exp Z``, ``Z`` standard normal, standardised); ``empirical`` (resamples with replacement
    of ``values``, centred and scaled by their own centre and standard deviation)."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "t3":
        return rng.standard_t(3, size) / math.sqrt(3.0)
    if shape == "lognormal":
        sd = math.sqrt((math.e - 1) * math.e)
        shift = math.exp(0.5) if center == "mean" else 1.0
        return (np.exp(rng.standard_normal(size)) - shift) / sd
    if shape == "empirical":
        v = np.asarray(values, dtype=float).ravel()
        v = v[np.isfinite(v)]
        c = v.mean() if center == "mean" else np.median(v)
        return rng.choice((v - c) / v.std(), size=size, replace=True)
    raise InputError(f"shape={shape!r} is not a noise shape: one of {SHAPES + ('empirical',)}")


def _claim(rule: Rule) -> tuple[Any, str]:
    if rule.claim in ("inside", "outside"):
        return (-1.0, 1.0), rule.claim
    return (0.5 if rule.estimator == "proportion" else 0.0), ">"


def _offsets(rule: Rule, scenario: str, cells: int, margin: float, effect: float) -> np.ndarray:
    """The true parameter per cell (one entry for a rule without cells), in sd units."""
    d = {"true": margin, "boundary": 0.0, "false": -margin, "power": effect}[scenario]
    if rule.claim == "inside":
        return np.array([1.0 - d])
    if rule.claim == "outside":
        return np.array([1.0 + d])
    if not rule.cells:
        return np.array([d])
    out = np.full(cells, d)
    if rule.claim == "every_cell" and scenario == "false":
        out[1:] = FAR
    if rule.claim == "some_cell" and scenario in ("true", "power"):
        out[1:] = -FAR
    return out


def _simulate(rule: Rule, rng, reps: int, n: int, offsets: np.ndarray, shape: str, values):
    """Samples for ``rule.evaluate`` and the true parameter per cell."""
    if rule.estimator == "proportion":
        p = np.clip(0.5 + 0.5 * offsets[0], 0.0, 1.0)
        return ((rng.random((reps, n)) < p).astype(float),), np.array([p])
    if rule.estimator == "slope":
        x = np.linspace(-1.0, 1.0, n)
        x = (x - x.mean()) / x.std()
        y = offsets[0] * x + noise(rng, shape, (reps, n), "mean", values)
        return (x, y), offsets
    if rule.estimator == "paired":
        y = rng.standard_normal((reps, n))
        return (y + offsets[0] + noise(rng, shape, (reps, n), "mean", values), y), offsets
    if rule.cells:
        e = noise(rng, shape, (reps, n, offsets.size), rule.center, values)
        return (offsets + e,), offsets
    return (offsets[0] + noise(rng, shape, (reps, n), rule.center, values),), offsets


def _run(rule: Rule, rng, reps: int, n: int, offsets: np.ndarray, shape: str, values) -> dict:
    """Counts of HELD / NOT HELD, coverage hits (per cell) and joint coverage hits."""
    threshold, direction = _claim(rule)
    if rule.estimator == "bootstrap":  # a rejected candidate resamples with the scenario's rng
        rule = dataclasses.replace(rule, options={**rule.options, "rng": rng})
    block = max(1, _BLOCK // (n * offsets.size))
    held = not_held = joint = 0
    covered: float = 0
    done = 0
    while done < reps:
        r = min(block, reps - done)
        samples, truth = _simulate(rule, rng, r, n, offsets, shape, values)
        out = rule.evaluate(samples, threshold, direction, rng=rng)
        held += int(np.sum(out["code"] == 1))
        not_held += int(np.sum(out["code"] == -1))
        if rule.cells:
            covered += float(np.mean((out["cell_low"] <= truth) & (truth <= out["cell_high"]))) * r
            minimum = (rule.claim == "every_cell") == (direction == ">")
            target = truth.min() if minimum else truth.max()
            joint += int(np.sum((out["low"] <= target) & (target <= out["high"])))
        else:
            covered += int(np.sum((out["low"] <= truth[0]) & (truth[0] <= out["high"])))
        done += r
    return {"held": held, "not_held": not_held, "covered": covered, "joint": joint}


LIMITS = {"n": 100_000, "seeds": 100_000, "trials": 100_000, "cells": 10_000, "reps": 10_000_000}
"""Upper bounds of the audit's counts: beyond them one scenario would take hours."""


VALUE_SECONDS = {"bootstrap": 7e-6, "default": 5e-8}
"""Seconds of one simulated value (one seed of one cell of one experiment) by estimator: 20-50 ns
for the vectorised rules, 3.5-6.5 us for the bootstrap candidates, measured with
:func:`audit_rule` at 40 seeds and 42 cells on a loaded two-core x86-64; the estimate takes the
top of each range."""
PROPORTION_SECONDS = 1e-4
"""Seconds of one simulated proportion experiment: the randomised exact interval is a root find
per experiment (about 40 us measured with :func:`audit_rule` at 10 trials on an idle two-core
x86-64, whatever the trial count), so its cost follows experiments, not values; the estimate
takes 2.5 times that."""


def work_seconds(rule: Rule, n: int, cells: int, reps: int) -> float:
    """Estimated seconds of one audit row: ``len(SCENARIOS) reps n cells`` simulated values
    at :data:`VALUE_SECONDS` each; a proportion row, ``(len(SCENARIOS) + len(COVERAGE_P)) reps``
    experiments at :data:`PROPORTION_SECONDS` each."""
    if rule.estimator == "proportion":
        return (len(SCENARIOS) + len(COVERAGE_P)) * float(reps) * cells * PROPORTION_SECONDS
    each = VALUE_SECONDS.get(rule.estimator, VALUE_SECONDS["default"])
    return len(SCENARIOS) * float(reps) * n * cells * each


def _check_work(rows: list[tuple], reps: int) -> None:
    from .._options import check_work

    seconds = sum(work_seconds(r, n, c, reps) for r, n, c in rows)
    check_work(
        f"the audit of {len(rows)} row(s) at reps={reps}, seeds up to "
        f"{max(n for _, n, _ in rows)} and cells up to {max(c for *_, c in rows)}",
        seconds,
        f"{len(SCENARIOS)} scenarios x reps x seeds x cells simulated values at "
        f"{VALUE_SECONDS['default'] * 1e9:g} ns each, {VALUE_SECONDS['bootstrap'] * 1e6:g} "
        f"us for a bootstrap; {PROPORTION_SECONDS * 1e6:g} us per proportion experiment",
        "choose fewer reps, seeds, cells, shapes or rules",
    )


def _check_count(name: str, value: Any, lo: int) -> int:
    hi = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not lo <= value <= hi:
        raise InputError(
            f"{name}={value!r} is not allowed: an integer in [{lo}, {hi}] (above "
            f"{hi} one scenario would take hours)"
        )
    return int(value)


def power(
    rule: Rule,
    n: int,
    effect: float,
    *,
    cells: int = 1,
    shape: str = "normal",
    reps: int = 4000,
    seed: int = 0,
    values: Any = None,
) -> Rate:
    """P(HELD) when the claim holds by ``effect`` sd (the audit's ``power`` scenario); for the
    ``deterministic`` rule, 1 when ``effect > 0`` and 0 otherwise (no noise)."""
    if rule.estimator == "point":
        if not (isinstance(effect, int | float) and math.isfinite(effect)):
            raise InputError(f"effect={effect!r} is not allowed: a finite number")
        return Rate(float(effect > 0), 0.0)
    n = _check_count("n", n, 3 if rule.estimator == "slope" else 2)
    reps = _check_count("reps", reps, 1)
    cells = _check_count("cells", cells, 1)
    if not (isinstance(effect, int | float) and math.isfinite(effect)):
        raise InputError(f"effect={effect!r} is not allowed: a finite number of sd")
    shape = "bernoulli" if rule.estimator == "proportion" else shape
    if shape != "bernoulli":
        noise(np.random.default_rng(0), shape, (1,), values=values)  # validates the shape
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    offsets = _offsets(rule, "power", cells if rule.cells else 1, MARGIN, float(effect))
    counts = _run(rule, rng, reps, n, offsets, shape, values)
    return Rate.of(counts["held"], reps)


def _scaled_samples(rule: Rule, values: list, value: float, rng, reps: int, shape: str):
    """``reps`` data sets shaped like ``values`` whose parameter is ``value`` everywhere, with
    the spread ``sd`` of ``values`` (per-seed sd; residual sd for a slope; pooled over cells);
    returns ``(samples, sd)``."""
    if rule.estimator == "proportion":
        n = len(values)
        return ((rng.random((reps, n)) < np.clip(value, 0, 1)).astype(float),), 1.0
    if rule.estimator == "slope":
        x, y = (np.asarray(v, dtype=float) for v in values)
        b = np.polyfit(x, y, 1)
        sd = float(np.std(y - np.polyval(b, x), ddof=2))
        return (x, value * x + sd * noise(rng, shape, (reps, x.size), "mean")), sd
    if rule.estimator == "paired":
        d = np.subtract(*(np.asarray(v, dtype=float) for v in values))
        sd = float(np.std(d, ddof=1))
        return (
            value + sd * noise(rng, shape, (reps, d.size), "mean"),
            np.zeros((reps, d.size)),
        ), sd
    v = np.asarray(values, dtype=float)
    if rule.cells:
        sd = float(np.sqrt(np.nanmean(np.nanvar(v, axis=0, ddof=1))))
    else:
        sd = float(np.std(v, ddof=1))
    return (value + sd * noise(rng, shape, (reps, *v.shape), rule.center),), sd


def power_at(
    judgement: Any, value: float, *, reps: int = 4000, seed: int = 0, shape: str = "normal"
) -> Rate:
    """P(HELD) of ``judgement``'s rule, claim and seed count if the truth were ``value`` (the
    paper's value) in every cell, with the spread of the judged per-seed values and noise of
    ``shape``: the power of the finding as run. A spread of zero or fewer values than the rule
    needs give ``Rate(nan, nan)``."""
    from ._rules import rule as by_name

    rule = by_name(judgement.rule)
    reps = _check_count("reps", reps, 1)
    if not (isinstance(value, int | float) and math.isfinite(value)):
        raise InputError(f"value={value!r} is not allowed: a finite number (the paper's value)")
    if rule.estimator == "point":  # no noise: the verdict at the value is certain
        out = rule.evaluate((np.array([float(value)]),), judgement.threshold, judgement.direction)
        return Rate(float(out["code"] == 1), 0.0)
    if rule.estimator != "proportion":
        noise(np.random.default_rng(0), shape, (1,))
    if not math.isfinite(judgement.low) and not rule.cells:
        return Rate(math.nan, math.nan)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    with np.errstate(invalid="ignore", divide="ignore"):
        samples, sd = _scaled_samples(rule, judgement.values, float(value), rng, reps, shape)
    if not (math.isfinite(sd) and sd > 0):
        return Rate(math.nan, math.nan)
    out = rule.evaluate(samples, judgement.threshold, judgement.direction, rng=rng)
    return Rate.of(int(np.sum(out["code"] == 1)), reps)


def audit_rule(
    rule: Rule | str,
    n: int,
    *,
    cells: int = 1,
    shape: str = "normal",
    reps: int = REPS,
    seed: int | np.random.SeedSequence = 0,
    margin: float = MARGIN,
    effect: float = EFFECT,
    values: Any = None,
) -> dict:
    """One row of the audit: ``rule`` at ``n`` seeds (and ``cells`` cells for a cell rule)
    under noise ``shape`` (``empirical`` resamples ``values``, e.g. an experiment's stored
    per-seed values). Returns the rates of the module docstring, each a :class:`Rate`, and
    ``bar``: ``"ok"`` or the bars missed (judged only on :data:`BARRED_SHAPES`). A proportion
    rule's row also holds ``coverage_by_p``: ``{p: Rate}`` at each of :data:`COVERAGE_P`."""
    if isinstance(rule, str):
        from ._rules import rule as by_name

        rule = by_name(rule)
    if rule.estimator == "point":
        return {
            "rule": rule.name,
            "seeds": 1,
            "cells": 1,
            "shape": "none",
            "reps": 0,
            **dict.fromkeys(
                (
                    "false_held",
                    "held_at_boundary",
                    "false_not_held",
                    "coverage",
                    "joint_coverage",
                    "power",
                )
            ),
            "bar": NOT_SIMULATED,
        }
    n = _check_count("seeds", n, 3 if rule.estimator == "slope" else 2)
    reps = _check_count("reps", reps, 1)
    cells = _check_count("cells", cells, 1) if rule.cells else 1
    if rule.estimator == "proportion":
        shape = "bernoulli"
    else:
        noise(np.random.default_rng(0), shape, (1,), values=values)
    _check_work([(rule, n, cells)], reps)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    extra = COVERAGE_P if rule.estimator == "proportion" else ()
    rngs = [np.random.default_rng(s) for s in root.spawn(len(SCENARIOS) + len(extra))]
    counts = {
        sc: _run(rule, rng, reps, n, _offsets(rule, sc, cells, margin, effect), shape, values)
        for sc, rng in zip(SCENARIOS, rngs)
    }
    judged = SCENARIOS[:3]
    row = {
        "rule": rule.name,
        "seeds": n,
        "cells": cells,
        "shape": shape,
        "reps": reps,
        "false_held": Rate.of(counts["false"]["held"], reps),
        "held_at_boundary": Rate.of(counts["boundary"]["held"], reps),
        "false_not_held": Rate.of(counts["true"]["not_held"], reps),
        "coverage": Rate.of(sum(counts[s]["covered"] for s in judged), 3 * reps),
        "joint_coverage": (
            Rate.of(sum(counts[s]["joint"] for s in judged), 3 * reps) if rule.cells else None
        ),
        "power": Rate.of(counts["power"]["held"], reps),
    }
    if extra:  # the success probability p is 1/2 + offset / 2 (see _simulate)
        row["coverage_by_p"] = {
            p: Rate.of(
                _run(rule, rng, reps, n, np.array([2 * p - 1]), shape, values)["covered"], reps
            )
            for p, rng in zip(extra, rngs[len(SCENARIOS) :])
        }
    row["bar"] = _bar(rule, row)
    return row


def _bar(rule: Rule, row: dict) -> str:
    if row["shape"] not in BARRED_SHAPES:
        return "not barred"
    misses = []
    for key in ("false_held", "false_not_held"):
        r = row[key]
        if r.rate > ERROR_BAR + 2 * r.se:
            misses.append(key.replace("_", "-"))
    coverages = [row["coverage"], *row.get("coverage_by_p", {}).values()]
    if not all(COVERAGE_BAR[0] <= c.rate <= COVERAGE_BAR[1] for c in coverages):
        misses.append("coverage")
    return "ok" if not misses else "MISS: " + ", ".join(misses)


def audit(
    rules: Iterable[str] | None = None,
    *,
    seeds: Sequence[int] = SEEDS,
    trials: Sequence[int] = TRIALS,
    cells: Sequence[int] = CELLS,
    shapes: Sequence[str] = SHAPES,
    reps: int = REPS,
    seed: int = 0,
    margin: float = MARGIN,
    effect: float = EFFECT,
    values: Any = None,
    progress: bool = False,
    candidates: bool = False,
) -> list[dict]:
    """The audit table: :func:`audit_rule` for every rule (default: all of :data:`RULES`; with
    ``candidates``, the rejected :data:`gaugedyn.stats._rules.CANDIDATES` instead), seed count,
    cell count (cell rules) and shape (a proportion rule: every trial count of ``trials``,
    Bernoulli outcomes), each with generators spawned from
    ``numpy.random.SeedSequence(seed)``. Bad arguments, and a table whose estimated work
    (:func:`work_seconds`) exceeds about a day, raise :class:`gaugedyn.InputError` before any
    simulation."""
    from tqdm import tqdm

    from ._rules import rule as by_name

    if candidates:
        unknown = [r for r in rules or () if r not in CANDIDATES]
        if unknown:
            raise InputError(
                f"rules={unknown[0]!r} is not allowed with candidates; allowed: "
                f"{', '.join(CANDIDATES)} (the rejected candidates)"
            )
        chosen = [CANDIDATES[r] for r in (CANDIDATES if rules is None else rules)]
    else:
        chosen = [by_name(r) for r in (RULES if rules is None else rules)]
    seeds = [_check_count("seeds", s, 3) for s in seeds]
    trials = [_check_count("trials", s, 2) for s in trials]
    cells = [_check_count("cells", c, 1) for c in cells]
    reps = _check_count("reps", reps, 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed={seed!r} is not allowed: an integer >= 0")
    for name, v in (("margin", margin), ("effect", effect)):
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise InputError(f"{name}={v!r} is not allowed: a positive number of sd")
    for s in shapes:
        noise(np.random.default_rng(0), s, (1,), values=values)
    if not seeds or not trials or not shapes or not cells:
        raise InputError("seeds, trials, cells and shapes: each needs at least one value")
    jobs = []
    for r in chosen:
        if r.estimator == "point":
            jobs.append((r, 1, 1, "none"))
            continue
        for n in trials if r.estimator == "proportion" else seeds:
            for s in ("bernoulli",) if r.estimator == "proportion" else shapes:
                for c in cells if r.cells else (1,):
                    jobs.append((r, n, c, s))
    _check_work([(r, n, c) for r, n, c, _ in jobs], reps)
    children = np.random.SeedSequence(seed).spawn(len(jobs))
    return [
        audit_rule(
            r,
            n,
            cells=c,
            shape=s,
            reps=reps,
            seed=child,
            margin=margin,
            effect=effect,
            values=values,
        )
        for (r, n, c, s), child in tqdm(
            list(zip(jobs, children)), disable=not progress, desc="audit-rules", unit="row"
        )
    ]


def _pct(r: Rate | None) -> str:
    return "-" if r is None else f"{100 * r.rate:.1f} ({100 * r.se:.1f})"


HEADER = (
    "rule",
    "seeds",
    "cells",
    "shape",
    "false HELD",
    "HELD at bound",
    "false NOT HELD",
    "coverage",
    "joint cov.",
    "power",
    "bar",
)


def rows_as_text(rows: list[dict]) -> list[list[str]]:
    return [
        [
            r["rule"],
            str(r["seeds"]),
            str(r["cells"]),
            r["shape"],
            _pct(r["false_held"]),
            _pct(r["held_at_boundary"]),
            _pct(r["false_not_held"]),
            _pct(r["coverage"]),
            _pct(r["joint_coverage"]),
            _pct(r["power"]),
            r["bar"],
        ]
        for r in rows
    ]


def coverage_by_p_rows(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The proportion rules' coverage at each true ``p`` (:data:`COVERAGE_P`): a header and
    one row per rule and trial count (empty when no row has ``coverage_by_p``)."""
    rows = [r for r in rows if "coverage_by_p" in r]
    if not rows:
        return [], []
    ps = list(rows[0]["coverage_by_p"])
    header = ["rule", "trials", *(f"p = {p:g}" for p in ps)]
    return header, [
        [r["rule"], str(r["seeds"]), *(_pct(r["coverage_by_p"][p]) for p in ps)] for r in rows
    ]


def catalogue_markdown(rules: Iterable[Rule]) -> str:
    """The rules as a markdown table: name, statistic, interval, verdict in words (threshold
    ``c``, band ``(lo, hi)``) and assumptions, each from the rule object itself."""
    lines = ["| rule | statistic | verdict | assumptions |", "|---|---|---|---|"]
    for r in rules:
        band = r.claim in ("inside", "outside")
        words = r.words(("lo", "hi") if band else "c").split(": ", 1)[1]
        lines.append(f"| `{r.name}` | {r.statistic} | {words} | {r.assumptions} |")
    return "\n".join(lines) + "\n"


def format_table(
    rows: list[dict],
    *,
    markdown: bool = False,
    margin: float = MARGIN,
    effect: float = EFFECT,
    command: str = "",
) -> str:
    """The audit as a plain-text table (or markdown, with the command and date that made it).
    Rates in percent, Monte Carlo standard errors in brackets."""
    body = rows_as_text(rows)
    reps = sorted({r["reps"] for r in rows if r["reps"]})
    legend = (
        f"Rates in % (Monte Carlo s.e.), {', '.join(map(str, reps))} simulated experiments "
        f"per scenario. false HELD: claim false by {margin:g} sd; HELD at bound: parameter "
        f"on the threshold; false NOT HELD: claim true by {margin:g} sd; coverage: 95% "
        f"interval (per cell for cell rules); joint cov.: the cell rules' interval for "
        f"min/max over cells; power: P(HELD) with the claim true by {effect:g} sd. Bars "
        f"(normal, t3, bernoulli): false HELD and false NOT HELD <= 5% + 2 s.e., "
        f"coverage 93-97% (for a proportion rule also at every true p of the second "
        f"table; its seeds column is the number of trials). A rate of 0 out of R has s.e. "
        f"0 and a 95% upper bound of 3/R."
    )
    by_p_header, by_p = coverage_by_p_rows(rows)
    if markdown:
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        names = list(dict.fromkeys(r["rule"] for r in rows))
        every = {**RULES, **CANDIDATES}
        lines = [
            f"Produced by `{command or 'gaugedyn audit-rules --markdown'}` on {stamp}.",
            "",
            catalogue_markdown(every[n] for n in names),
            legend,
            "",
            "| " + " | ".join(HEADER) + " |",
            "|" + "|".join("---" for _ in HEADER) + "|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        if by_p:
            lines += [
                "",
                "Coverage (%) of the proportion rules' 95% interval by true success "
                "probability p and number of trials:",
                "",
                "| " + " | ".join(by_p_header) + " |",
                "|" + "|".join("---" for _ in by_p_header) + "|",
            ]
            lines += ["| " + " | ".join(row) + " |" for row in by_p]
        return "\n".join(lines) + "\n"
    text = _plain(HEADER, body) + "\n" + legend + "\n"
    if by_p:
        text += "\nCoverage (%) of the proportion rules by true p:\n" + _plain(by_p_header, by_p)
    return text


def _plain(header: Sequence[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header)] + [fmt.format(*row) for row in body]) + "\n"
