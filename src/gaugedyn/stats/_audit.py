r"""The audit of the verdict rules: their error rates, coverage and power, by simulation.

For a rule, a number of seeds ``n`` (and of cells) and a noise source, claims are simulated
``reps`` times each, every scenario with its own generator spawned from one
``numpy.random.SeedSequence``. The noise is a named shape (`AUDIT_SHAPES`: normal, Student t
with 3 degrees of freedom, lognormal of log-sd 0.5 and 1 with its long tail pointing away from
the claimed side, ``toward``, or into it, ``away``) or resamples of a finding's own stored
per-seed values (`gaugedyn.stats._resample.Resampler`, ``shape="resampled"``). Distances
are in units of the noise's spread (for a named shape, its standard deviation, the claim's
threshold at 0 or its band ``(-1, 1)``; for a slope, one residual with ``x`` standardised; for
a proportion, $\sqrt{p_0 (1 - p_0)}$ at $p_0 = 1/2$; for resampled values, each cell's standard
deviation, or $1.4826\,\mathrm{MAD}$ for a median rule, from the finding's own threshold), measured
onto the claimed side:

- ``false HELD``: the claim fails by ``margin``; HELD there is a false HELD;
- ``false NOT HELD``: the claim holds by ``margin``; NOT HELD there is a false NOT HELD;
- ``HELD at bound`` and ``NOT HELD at bound``: the parameter on the threshold; each is one side
  of the test's size, 2.5%. For a cell rule, the larger over two configurations: every cell on
  the threshold, and one cell on it with the others ``FAR`` on the side that leaves the verdict
  to that cell (the least favourable configuration for HELD of ``every_cell`` and for NOT HELD
  of ``some_cell``);
- ``NOT HELD, one cell on bound`` (cell rules): one cell on the threshold and the others
  ``margin`` on the true side;
- ``power``: the claim holds by ``effect``; HELD there is the power.

For ``every_cell`` the false claim has one cell ``margin`` on the wrong side and the others
``FAR`` on the right side; for ``some_cell`` the true claim (and the power) has one cell on the
right side and the others ``FAR`` on the wrong side. Coverage is that of the rule's 95% interval
for the true parameter over the true, boundary and false scenarios (per cell for a cell rule;
``joint`` for the interval of $\min_c \theta_c$ or $\max_c \theta_c$). Every rate carries its
Monte Carlo standard error $\sqrt{r (1 - r) / \mathit{reps}}$.

A row is **barred** where its rule is used on data of its shape: the shapes of every kind of
measure whose choice the rule is (`gaugedyn.stats._measures.KINDS`), and resamples of the
values of every finding the rule judges. There the boundary rates must be at most 2.5% + 2
s.e., the margin rates at most 5% + 2 s.e. and (named shapes) the coverage 93-97%. A barred row
that misses is simulated again on a fresh stream with four times the reps, and the bar is read
off that confirmation alone (exact tests sit at 2.5% and would miss 2 s.e. one time in 40 by
chance; a rule that really misses misses both). Rows the rule is not used on are reported, not
barred. The ``deterministic`` rule is listed, not simulated (`NOT_SIMULATED`).

A proportion rule is audited at the trial counts of the experiments' proportion findings
instead of the seed counts, on Bernoulli outcomes, with its coverage also at each true success
probability of `COVERAGE_P` (``coverage_by_p``; the bar applies to each).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._errors import InputError
from ._intervals import generator
from ._measures import KINDS, LOGNORMAL_SHAPES, TIE_SHAPES, kinds_of
from ._resample import Resampler
from ._rules import _MIN_N, CANDIDATES, RULES, Rule

AUDIT_SHAPES = ("normal", "t3", *LOGNORMAL_SHAPES)
"""Named noise shapes; ``resampled`` (a finding's stored values) is open to the Python API."""
CANDIDATE_SHAPES = ("normal", "t3", "bernoulli")
"""Shapes on which a rejected candidate must meet the bars (it judges no finding)."""
MARGIN = 0.5
EFFECT = 0.8
FAR = 5.0
ERROR_BAR = 0.05
SIZE_BAR = 0.025
COVERAGE_BAR = (0.93, 0.97)
CONFIRM = 4
"""A barred row that misses is simulated again with this many times the reps."""
AUDIT_SEEDS = (10, 40)
"""Seed counts of the ad-hoc audit (the full audit takes the experiments' own counts,
`gaugedyn.stats._audit_plan.plan()`)."""
AUDIT_TRIALS = (6, 10, 16, 32, 39, 64, 96, 160)
"""Trial counts of the ad-hoc audit's proportion rows."""
COVERAGE_P = (0.05, 0.25, 0.5, 0.75, 0.8, 0.95)
"""True success probabilities at which a proportion rule's coverage is measured (0.25, 0.5 and
0.75 are the false, boundary and true scenarios; 0.8 is ownership_patterns' threshold)."""
AUDIT_CELLS = (6, 42)
"""Cell counts of the ad-hoc audit's cell rules."""
AUDIT_REPS = 20000
AUDIT_RESAMPLED_REPS = 4000
"""Simulated experiments per scenario of a resampled row (one per finding and reading)."""
AUDIT_CANDIDATE_REPS = 4000
"""Simulated experiments per scenario of a rejected candidate's row (the bootstrap candidates
cost 7 us a value)."""
NOT_SIMULATED = (
    "not simulated: a deterministic value has no sampling error (its interval is the point)"
)
AUDIT_QUICK = {
    "seeds": AUDIT_SEEDS,
    "trials": AUDIT_TRIALS,
    "cells": (max(AUDIT_CELLS),),
    "proportion_cells": (min(AUDIT_CELLS),),
    "reps": 2000,
}
"""The quick audit's sizes (``gaugedyn audit-rules --quick`` and the quick audit test pass
them to `audit()`): every rule at the ad-hoc seed and trial counts, the cell rules at 42
cells, except the every-cell rule of 0/1 outcomes at 6 (about 2 million randomised root finds
per row at 42 cells; the full audit runs it at the sizes of the published checks)."""
_BLOCK = 2_000_000
AUDIT_RATE_KEYS = (
    "false_held",
    "false_not_held",
    "held_at_boundary",
    "not_held_at_boundary",
    "one_cell_not_held",
    "coverage",
    "joint_coverage",
    "power",
)


class Rate(NamedTuple):
    """A simulated probability and its Monte Carlo standard error."""

    rate: float
    se: float

    @classmethod
    def of(cls, hits: float, total: int) -> Rate:
        r = hits / total
        return cls(float(r), float(math.sqrt(max(r * (1 - r), 0.0) / total)))


def _lognormal(name: str) -> tuple[float, str]:
    sigma, side = name.removeprefix("lognormal").split("-")
    return float(sigma), side


def noise(
    rng: np.random.Generator,
    shape: str,
    size: tuple,
    center: str = "mean",
    skew: int = 1,
) -> np.ndarray:
    r"""Draws of standard deviation 1 whose ``center`` (``"mean"`` or ``"median"``) is 0:
    ``normal``; ``t3`` (Student t with 3 degrees of freedom over $\sqrt 3$); lognormal
    ``lognormal<s>-<side>`` ($e^{s Z}$, $Z$ standard normal, standardised), right-skewed
    for ``skew=1`` and mirrored for ``skew=-1`` (the audit sets ``skew`` from the claimed side
    and the shape's ``side``)."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "t3":
        return rng.standard_t(3, size) / math.sqrt(3.0)
    if shape.startswith("lognormal") and shape in LOGNORMAL_SHAPES:
        s, _ = _lognormal(shape)
        sd = math.sqrt((math.exp(s * s) - 1) * math.exp(s * s))
        shift = math.exp(s * s / 2) if center == "mean" else 1.0
        return skew * (np.exp(s * rng.standard_normal(size)) - shift) / sd
    raise InputError(
        f"shape={shape!r} is not a noise shape: one of {AUDIT_SHAPES + ('resampled',)}"
    )


def _signs(estimator: str) -> bool:
    r"""Whether a rule's noise is 0/1 outcomes or signs at a simulated share (the proportion
    and the sign rules: distances are in $\sqrt{p_0 (1 - p_0)}$ at $p_0 = 1/2$)."""
    return estimator in ("proportion", "paired_sign")


def _ties(shape: str) -> float:
    """The tie probability of a `TIE_SHAPES` shape (``ties0.9``: 0.9)."""
    return float(shape.removeprefix("ties"))


def _check_shape(shape: str) -> None:
    if shape not in (*AUDIT_SHAPES, *TIE_SHAPES, "bernoulli", "resampled"):
        noise(np.random.default_rng(0), shape, (1,))


# --- the simulated scene ---------------------------------------------------------------------


@dataclasses.dataclass
class Scene:
    """A rule, its claim and its noise: ``draw(rng, reps)`` gives ``(reps, n, cells)`` noise
    with each cell's centre at 0 and ``scale`` its unit; ``truth(d)`` the parameter per cell
    at ``d`` units onto the claimed side of the boundary (the threshold, or a band's upper
    end; a distance into the band stops at its centre, so a band narrower than the distance
    keeps the truth inside it, and outside it for an ``outside`` claim's false side); ``x``
    the slope rules' fixed abscissae."""

    rule: Rule
    n: int
    cells: int
    threshold: Any
    direction: str
    scale: np.ndarray
    x: np.ndarray | None
    draw: Any
    ties: float = 0.0

    def truth(self, d: Any) -> np.ndarray:
        d = np.broadcast_to(np.asarray(d, dtype=float), (self.cells,)) * self.scale
        if self.rule.claim in ("inside", "outside"):
            lo, hi = (float(v) for v in self.threshold)
            # the band's side of its upper end stops at its centre: a band narrower than the
            # distance would otherwise put the truth past its lower end, on the other side
            if self.rule.claim == "inside":
                t = hi - np.minimum(d, (hi - lo) / 2)
            else:
                t = hi + np.maximum(d, -(hi - lo) / 2)
            return np.clip(t, 0.0, 1.0) if _signs(self.rule.estimator) else t
        if _signs(self.rule.estimator):
            return np.clip(0.5 + 0.5 * d, 0.0, 1.0)
        return self.threshold + d if self.direction == ">" else self.threshold - d

    def samples(self, rng: np.random.Generator, reps: int, truth: np.ndarray) -> tuple:
        if self.rule.estimator == "proportion" and self.rule.cells:
            return ((rng.random((reps, self.n, self.cells)) < truth).astype(float),)
        if self.rule.estimator == "proportion":
            return ((rng.random((reps, self.n)) < truth[0]).astype(float),)
        if self.rule.estimator == "paired_sign":  # ties with probability `ties`, else a sign
            tied = rng.random((reps, self.n)) < self.ties
            sign = np.where(rng.random((reps, self.n)) < truth[0], 1.0, -1.0)
            d = np.where(tied, 0.0, sign)
            return (self.threshold + d, np.zeros_like(d))
        e = self.draw(rng, reps)
        if self.rule.cells:
            return (truth + e,)
        e = e[..., 0]
        if self.rule.paired:
            return (truth[0] + e, np.zeros_like(e))
        if self.rule.estimator == "slope":
            assert self.x is not None
            return (self.x, truth[0] * self.x + e)
        return (truth[0] + e,)


def _claimed_sign(rule: Rule, direction: str) -> int:
    """+1 when the claimed side is above the boundary (``>``, ``outside`` its upper end)."""
    if rule.claim == "inside":
        return -1
    return 1 if direction in (">", "outside") else -1


def proportion_band_width(n: int) -> float:
    r"""The half-width of the band a proportion band rule is audited at, $n$ trials: four
    binomial standard errors at $p = 1/2$, $2 / \sqrt{n}$ (the band the symmetric controls
    declare), at most 0.45 so the band stays inside $(0, 1)$."""
    return min(2.0 / math.sqrt(n), 0.45)


def named_scene(rule: Rule, n: int, cells: int, shape: str) -> Scene:
    """The audit's scene of a named shape: threshold 0 (``>``) or the band ``(-1, 1)``."""
    threshold: Any
    if rule.claim in ("inside", "outside") and rule.estimator == "proportion":
        w = proportion_band_width(n)
        threshold, direction = (0.5 - w, 0.5 + w), rule.claim
        return Scene(rule, n, 1, threshold, direction, np.full(1, 0.5), None, None)
    if rule.claim in ("inside", "outside"):
        threshold, direction = (-1.0, 1.0), rule.claim
    else:
        threshold, direction = (0.5 if rule.estimator == "proportion" else 0.0), ">"
    skew = 1
    if shape in LOGNORMAL_SHAPES:  # toward: the long tail points away from the claimed side
        side = _claimed_sign(rule, direction)
        skew = -side if _lognormal(shape)[1] == "toward" else side
    x = None
    if rule.estimator == "slope":
        x = np.linspace(-1.0, 1.0, n)
        x = (x - x.mean()) / x.std()
    width = cells if rule.cells else 1
    if rule.estimator == "paired_sign":  # only the share of ties matters: none in a continuous
        tied = _ties(shape) if shape in TIE_SHAPES else 0.0  # shape (the truth is the share)
        return Scene(rule, n, 1, threshold, direction, np.ones(1), None, None, tied)

    def draw(rng, reps):
        return noise(rng, shape, (reps, n, width), rule.center, skew)

    return Scene(rule, n, width, threshold, direction, np.ones(width), x, draw)


def resampled_scene(rule: Rule, values: Any, threshold: Any, direction: str) -> Scene:
    """The scene of a finding's own values (`Resampler`), at its own claim (a sign rule: its
    seeds' share of ties, the untied signs drawn at the simulated share)."""
    if rule.estimator == "paired_sign":
        n, tied = _tie_share(values, threshold)
        return Scene(rule, n, 1, threshold, direction, np.ones(1), None, None, tied)
    r = Resampler(rule, values)
    x, scale = None, r.scale
    if r.x is not None:
        x, scale = r.x - r.x.mean(), r.scale / max(float(np.std(r.x)), 1e-300)
    return Scene(rule, r.n, r.cells, threshold, direction, np.asarray(scale), x, r.noise)


def _tie_share(values: Any, threshold: Any) -> tuple[int, float]:
    """``(n, share of ties)`` of stored paired values ``[x, y]``: the complete pairs and the
    share of them whose difference is exactly ``threshold``."""
    x, y = (np.asarray(v, dtype=float).ravel() for v in values)
    keep = np.isfinite(x) & np.isfinite(y)
    d = (x - y)[keep]
    if d.size < 2:
        raise InputError(f"values: {d.size} complete pair(s); at least 2 are needed to resample")
    return int(d.size), float(np.mean(d == float(threshold)))


def _configurations(rule: Rule, cells: int, margin: float, effect: float) -> dict:
    """Per scenario, the distance of each cell from the boundary onto the claimed side."""
    one = np.ones(cells)
    out = {
        "true": margin * one,
        "false": -margin * one,
        "bound": 0 * one,
        "power": effect * one,
    }
    if rule.claim == "every_cell":
        out["false"] = np.r_[-margin, FAR * one[1:]]
        out["bound_one"] = np.r_[0.0, FAR * one[1:]]
        out["one_cell"] = np.r_[0.0, margin * one[1:]]
    if rule.claim == "some_cell":
        out["true"] = np.r_[margin, -FAR * one[1:]]
        out["power"] = np.r_[effect, -FAR * one[1:]]
        out["bound_one"] = np.r_[0.0, -FAR * one[1:]]
        out["one_cell"] = np.r_[0.0, margin * one[1:]]
    return out


def _run(scene: Scene, rng, reps: int, d: np.ndarray, truth: Any = None) -> dict:
    """Counts of HELD / NOT HELD, coverage hits (per cell) and joint coverage hits, with the
    truth ``d`` units onto the claimed side of the boundary (or ``truth`` itself)."""
    rule = scene.rule
    if rule.estimator == "bootstrap":  # a rejected candidate resamples with the scenario's rng
        rule = dataclasses.replace(rule, options={**rule.options, "rng": rng})
    truth = scene.truth(d) if truth is None else np.asarray(truth, dtype=float)
    block = max(1, _BLOCK // (scene.n * scene.cells))
    held = not_held = joint = 0
    covered: float = 0
    done = 0
    while done < reps:
        r = min(block, reps - done)
        samples = scene.samples(rng, r, truth)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = rule.evaluate(samples, scene.threshold, scene.direction, rng=rng)
        held += int(np.sum(out["code"] == 1))
        not_held += int(np.sum(out["code"] == -1))
        if rule.cells:
            hit = (out["cell_low"] <= truth) & (truth <= out["cell_high"])
            covered += float(np.mean(hit)) * r
            minimum = (rule.claim == "every_cell") == (scene.direction == ">")
            target = truth.min() if minimum else truth.max()
            joint += int(np.sum((out["low"] <= target) & (target <= out["high"])))
        else:
            covered += int(np.sum((out["low"] <= truth[0]) & (truth[0] <= out["high"])))
        done += r
    return {"held": held, "not_held": not_held, "covered": covered, "joint": joint}


def _rates(scene: Scene, root: np.random.SeedSequence, reps: int, margin, effect) -> dict:
    """The rates of one row (module docstring) from generators spawned from ``root``."""
    rule = scene.rule
    configs = _configurations(rule, scene.cells, margin, effect)
    extra = COVERAGE_P if _signs(rule.estimator) else ()
    rngs = [np.random.default_rng(s) for s in root.spawn(len(configs) + len(extra))]
    c = {k: _run(scene, rng, reps, d) for (k, d), rng in zip(configs.items(), rngs)}
    bounds = [c["bound"]] + ([c["bound_one"]] if "bound_one" in c else [])
    judged = ("true", "bound", "false")
    row: dict[str, Any] = {
        "false_held": Rate.of(c["false"]["held"], reps),
        "false_not_held": Rate.of(c["true"]["not_held"], reps),
        "held_at_boundary": max((Rate.of(b["held"], reps) for b in bounds), key=lambda r: r[0]),
        "not_held_at_boundary": max(
            (Rate.of(b["not_held"], reps) for b in bounds), key=lambda r: r[0]
        ),
        "one_cell_not_held": (
            Rate.of(c["one_cell"]["not_held"], reps) if "one_cell" in c else None
        ),
        "coverage": Rate.of(sum(c[s]["covered"] for s in judged), 3 * reps),
        "joint_coverage": (
            Rate.of(sum(c[s]["joint"] for s in judged), 3 * reps) if rule.cells else None
        ),
        "power": Rate.of(c["power"]["held"], reps),
    }
    if extra:  # at success probability p: 1/2 + d / 2 for a threshold (Scene.truth), else p
        band = rule.claim in ("inside", "outside")
        row["coverage_by_p"] = {
            p: Rate.of(
                _run(scene, rng, reps, np.array([2 * p - 1]), np.array([p]) if band else None)[
                    "covered"
                ],
                reps,
            )
            for p, rng in zip(extra, rngs[len(configs) :])
        }
    return row


def misses(row: dict, coverage: bool = True) -> list[str]:
    """The bars a row's rates miss (module docstring)."""
    out = []
    for key, bar in (
        ("false_held", ERROR_BAR),
        ("false_not_held", ERROR_BAR),
        ("held_at_boundary", SIZE_BAR),
        ("not_held_at_boundary", SIZE_BAR),
        ("one_cell_not_held", SIZE_BAR),
    ):
        r = row.get(key)
        if r is not None and r.rate > bar + 2 * r.se:
            out.append(key.replace("_", "-"))
    if coverage:
        coverages = [row["coverage"], *row.get("coverage_by_p", {}).values()]
        if not all(COVERAGE_BAR[0] <= c.rate <= COVERAGE_BAR[1] for c in coverages):
            out.append("coverage")
    return out


def barred_shapes(rule: Rule) -> tuple[str, ...]:
    """The named shapes a rule is used on: those of every kind whose choice it is (a rejected
    candidate's: `CANDIDATE_SHAPES`, with the lognormal shapes for a median candidate).

    Parameters
    ----------
    rule : Rule
        A catalogue rule or a rejected candidate.

    Returns
    -------
    tuple[str, ...]
        The shapes, without repeats, in the order of `KINDS`.
    """
    if rule.name in CANDIDATES:  # a median candidate would judge long-tailed measures
        return CANDIDATE_SHAPES + (LOGNORMAL_SHAPES if rule.center == "median" else ())
    return tuple(dict.fromkeys(s for k in kinds_of(rule.name) for s in KINDS[k].shapes))


def _row(scene, root, reps, margin, effect, barred, coverage_barred, why_not) -> dict:
    """One audited row: the rates, and where ``barred`` the bar, confirmed on a fresh stream
    with `CONFIRM` times the reps when the first simulation misses."""
    screen_root, confirm_root = root.spawn(2)
    rates = _rates(scene, screen_root, reps, margin, effect)
    row = {"reps": reps, **rates, "confirmed": False}
    if not barred:
        return row | {"bar": f"not barred ({why_not})"}
    if misses(rates, coverage_barred):
        row["screen"] = {k: rates[k] for k in AUDIT_RATE_KEYS}
        row |= _rates(scene, confirm_root, CONFIRM * reps, margin, effect)
        row["reps"], row["confirmed"] = CONFIRM * reps, True
    missed = misses(row, coverage_barred)
    return row | {"bar": "ok" if not missed else "MISS: " + ", ".join(missed)}


# --- public entry points ---------------------------------------------------------------------

LIMITS = {"n": 100_000, "seeds": 100_000, "trials": 100_000, "cells": 10_000, "reps": 10_000_000}
"""Upper bounds of the audit's counts: beyond them one scenario would take hours."""

VALUE_SECONDS = {"bootstrap": 7e-6, "default": 5e-8}
"""Seconds of one simulated value (one seed of one cell of one experiment) by estimator: 20-50 ns
for the vectorised rules, 3.5-6.5 us for the bootstrap candidates, measured with
`audit_rule()` at 40 seeds and 42 cells on a loaded two-core x86-64; the estimate takes the
top of each range."""
PROPORTION_SECONDS = 1e-4
"""Seconds of one simulated proportion experiment: the randomised exact interval is a root find
per experiment (about 40 us measured with `audit_rule()` at 10 trials on an idle two-core
x86-64, whatever the trial count), so its cost follows experiments, not values; the estimate
takes 2.5 times that."""
SCENARIOS = ("true", "false", "bound", "bound_one", "one_cell", "power")


def work_seconds(rule: Rule, n: int, cells: int, reps: int) -> float:
    """Estimated seconds of one audit row (its confirmation aside): ``len(SCENARIOS) reps n
    cells`` simulated values at `VALUE_SECONDS` each; a proportion row,
    ``(len(SCENARIOS) + len(COVERAGE_P)) reps`` experiments at `PROPORTION_SECONDS`."""
    if _signs(rule.estimator):
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


def _by_name(rule: Rule | str) -> Rule:
    if isinstance(rule, str):
        if rule in CANDIDATES:
            return CANDIDATES[rule]
        from ._rules import rule as by_name

        return by_name(rule)
    return rule


def audit_seed(root: int, *key: Any) -> np.random.SeedSequence:
    """The ``SeedSequence`` of one audit row: from the root seed and the row's key (rule,
    size, shape or finding), not from its position, so any row can be recomputed alone.

    Parameters
    ----------
    root : int
        The audit's root seed.
    *key : Any
        The row's key, hashed in order (`generator()`).

    Returns
    -------
    numpy.random.SeedSequence
        The row's seed sequence.
    """
    seq = generator(root, *key).bit_generator.seed_seq
    assert isinstance(seq, np.random.SeedSequence)
    return seq


def power(
    rule: Rule,
    n: int,
    effect: float,
    *,
    cells: int = 1,
    shape: str = "normal",
    reps: int = 4000,
    seed: int = 0,
) -> Rate:
    r"""P(HELD) when the claim holds by ``effect`` sd of a named ``shape`` (the audit's power
    scenario); for the ``deterministic`` rule, 1 when $\mathit{effect} > 0$ and 0 otherwise.

    Parameters
    ----------
    rule : Rule
        The catalogue rule.
    n : int
        Seeds per experiment (trials for a proportion rule): at least 2 (3 for a slope rule).
    effect : float
        How far the truth lies on the claimed side of the threshold, in sd of the noise.
    cells : int
        Cells per experiment, for a cell rule (ignored otherwise); at least 1.
    shape : str
        The noise shape, one of `AUDIT_SHAPES`.
    reps : int
        Simulated experiments, at least 1.
    seed : int
        The seed of the simulation's ``SeedSequence``.

    Returns
    -------
    Rate
        The share of ``reps`` experiments judged HELD, with its Monte Carlo standard error.

    Raises
    ------
    InputError
        When ``effect`` is not finite, a count is outside its allowed range (`LIMITS`), or
        ``shape`` is not a noise shape.
    """
    if not (isinstance(effect, int | float) and math.isfinite(effect)):
        raise InputError(f"effect={effect!r} is not allowed: a finite number of sd")
    if rule.estimator == "point":
        return Rate(float(effect > 0), 0.0)
    n = _check_count("n", n, 3 if rule.estimator == "slope" else 2)
    reps = _check_count("reps", reps, 1)
    cells = _check_count("cells", cells, 1)
    _check_shape(shape)
    scene = named_scene(rule, n, cells if rule.cells else 1, shape)
    d = _configurations(rule, scene.cells, MARGIN, float(effect))["power"]
    counts = _run(scene, np.random.default_rng(np.random.SeedSequence(seed)), reps, d)
    return Rate.of(counts["held"], reps)


def power_at(
    judgement: Any, value: float, *, reps: int = 4000, seed: int = 0, shape: str = "resampled"
) -> Rate:
    """P(HELD) of ``judgement``'s rule, claim and seed count if the truth were ``value`` (the
    paper's value, or the threshold moved by the smallest effect of interest) in every cell:
    the power of the finding as run, in the measure's own units. The noise is resamples of the
    judged values themselves (``shape="resampled"``, per cell, a seed's row kept together:
    `gaugedyn.stats._resample.Resampler`) or a named shape scaled to each cell's
    standard deviation; a proportion rule's outcomes are Bernoulli at ``value`` (a rate in
    [0, 1]) in every cell, at each cell's count, and the sign rule's untied seeds fall on the
    claimed side with probability ``value``. Fewer values (rows) than the rule's minimum
    give ``Rate(0, 0)``: the rule says UNRESOLVED at that count whatever the truth. Otherwise
    values without spread (every cell's values the same), or fewer than two complete rows, give
    ``Rate(nan, nan)``: the power cannot be computed from them. A median rule's cells whose
    MAD is 0 (most values tied) but whose values vary are resampled as they are: a cell that
    stays tied is UNRESOLVED in every simulated experiment, as the rule judges it.

    Parameters
    ----------
    judgement : Any
        A `Judgement` (or one read back from a summary): its ``rule``, ``threshold``,
        ``direction``, ``values`` and ``reason`` are used.
    value : float
        The true value the power is computed at, a finite number in the measure's units; a
        probability in [0, 1] for a proportion rule and for the sign rule (``paired_sign``).
    reps : int
        Simulated experiments, at least 1.
    seed : int
        The seed of the simulation's ``SeedSequence``.
    shape : str
        ``"resampled"`` (the judged values), or a named shape of `AUDIT_SHAPES`.

    Returns
    -------
    Rate
        The share of ``reps`` experiments judged HELD, with its Monte Carlo standard error.

    Raises
    ------
    InputError
        When ``value`` is not finite (or, for a proportion or sign rule, outside [0, 1]),
        ``reps`` is outside its range, ``shape`` is not a noise shape, or the judgement's rule
        is not a catalogue rule.
    """
    from ._rules import rule as by_name

    rule = by_name(judgement.rule)
    reps = _check_count("reps", reps, 1)
    if not (isinstance(value, int | float) and math.isfinite(value)):
        raise InputError(f"value={value!r} is not allowed: a finite number (the paper's value)")
    if rule.estimator in ("proportion", "paired_sign") and not 0 <= value <= 1:
        raise InputError(
            f"value={value!r} is not allowed for rule {rule.name!r}: a probability in [0, 1] "
            "(the true rate of its 0/1 outcomes, or of the untied seeds' claimed side)"
        )
    _check_shape(shape)
    if rule.estimator == "point":  # no noise: the verdict at the value is certain
        out = rule.evaluate((np.array([float(value)]),), judgement.threshold, judgement.direction)
        return Rate(float(out["code"] == 1), 0.0)
    if (judgement.reason or "").startswith("too few"):  # below the rule's minimum count
        return Rate(0.0, 0.0)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    if rule.estimator == "proportion":  # every cell's outcomes Bernoulli at the value
        v = np.asarray(judgement.values, dtype=float)
        size = (reps, v.shape[0], v.size // max(v.shape[0], 1)) if rule.cells else (reps, v.size)
        samples: tuple = ((rng.random(size) < value).astype(float),)
    elif rule.estimator == "paired_sign":  # the seeds' own share of ties, signs at the value
        try:
            scene = resampled_scene(rule, judgement.values, judgement.threshold, "")
        except InputError:
            return Rate(math.nan, math.nan)
        samples = scene.samples(rng, reps, np.array([float(value)]))
    else:
        try:
            r = Resampler(rule, judgement.values)
        except InputError:
            return Rate(math.nan, math.nan)
        if not np.any(r.points.std(axis=0) > 0):  # every cell's values the same
            return Rate(math.nan, math.nan)
        if shape == "resampled":
            samples = r.samples(rng, reps, float(value))
        else:  # a named shape, scaled to each cell's standard deviation
            scene = resampled_scene(rule, judgement.values, judgement.threshold, "")
            sd = r.sd
            scene.draw = lambda g, k: sd * noise(g, shape, (k, r.n, r.cells), rule.center)
            samples = scene.samples(rng, reps, np.full(r.cells, float(value)))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = rule.evaluate(samples, judgement.threshold, judgement.direction, rng=rng)
    return Rate.of(int(np.sum(out["code"] == 1)), reps)


def shape_list(rule: Rule, shapes: Sequence[str] = AUDIT_SHAPES) -> tuple[str, ...]:
    """The noise shapes a rule is simulated on: Bernoulli outcomes for a proportion rule,
    `TIE_SHAPES` for the sign rule, else ``shapes``."""
    if rule.estimator == "proportion":
        return ("bernoulli",)
    if rule.estimator == "paired_sign":
        return TIE_SHAPES
    return tuple(shapes)


def _not_simulated(rule: Rule) -> dict:
    return {
        "rule": rule.name,
        "seeds": 1,
        "cells": 1,
        "shape": "none",
        "reps": 0,
        **dict.fromkeys(AUDIT_RATE_KEYS),
        "confirmed": False,
        "bar": NOT_SIMULATED,
    }


def audit_rule(
    rule: Rule | str,
    n: int,
    *,
    cells: int = 1,
    shape: str = "normal",
    reps: int = AUDIT_REPS,
    seed: int | np.random.SeedSequence = 0,
    margin: float = MARGIN,
    effect: float = EFFECT,
    barred: bool | None = None,
) -> dict:
    """One row of the audit: ``rule`` at ``n`` seeds (and ``cells`` cells for a cell rule)
    under the named noise ``shape`` (`AUDIT_SHAPES`; a proportion rule: Bernoulli outcomes at
    ``n`` trials). The ``deterministic`` rule gives a row marked not simulated.

    Parameters
    ----------
    rule : Rule or str
        A catalogue rule, a rejected candidate, or the name of either.
    n : int
        Seeds (trials for a proportion rule): at least 2 (3 for a slope rule).
    cells : int
        Cells, for a cell rule (ignored otherwise); at least 1.
    shape : str
        The noise shape, one of `AUDIT_SHAPES`.
    reps : int
        Simulated experiments per scenario, at least 1.
    seed : int or numpy.random.SeedSequence
        The row's root seed (see `audit_seed()`).
    margin : float
        How far (in sd) the false and true scenarios lie from the threshold.
    effect : float
        How far (in sd) the truth lies on the claimed side in the power scenario.
    barred : bool or None
        Whether the bars apply; ``None``: when ``shape`` is one the rule is used on
        (`barred_shapes()`).

    Returns
    -------
    dict
        ``rule``, ``seeds``, ``cells``, ``shape``, ``reps``, the rates of the module docstring (each
        a `Rate`), ``confirmed``, and ``bar``: ``"ok"``, the bars missed, or why the row is not
        barred.

    Raises
    ------
    InputError
        When ``rule`` is not a rule or candidate, a count is outside its range (`LIMITS`),
        ``shape`` is not a noise shape, or the estimated work is too long.
    """
    rule = _by_name(rule)
    if rule.estimator == "point":
        return _not_simulated(rule)
    n = _check_count("seeds", n, 3 if rule.estimator == "slope" else 2)
    reps = _check_count("reps", reps, 1)
    cells = _check_count("cells", cells, 1) if rule.cells else 1
    shape = "bernoulli" if rule.estimator == "proportion" else shape
    if shape not in ("bernoulli", *TIE_SHAPES):
        noise(np.random.default_rng(0), shape, (1,))
    _check_work([(rule, n, cells)], reps)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    use = barred_shapes(rule)
    barred = shape in use if barred is None else barred
    why = f"{rule.name} judges no measure of this shape; it is used on {', '.join(use)}"
    scene = (
        named_scene(rule, n, cells, "normal")
        if rule.estimator == "proportion"
        else named_scene(rule, n, cells, shape)
    )
    few = n < _MIN_N.get(rule.estimator, 1)  # always UNRESOLVED: its coverage means nothing
    row = _row(scene, root, reps, margin, effect, barred, not few, why)
    return {"rule": rule.name, "seeds": n, "cells": cells, "shape": shape, **row}


def audit_values(
    rule: Rule | str,
    values: Any,
    threshold: Any,
    direction: str,
    *,
    reps: int = AUDIT_RESAMPLED_REPS,
    seed: int | np.random.SeedSequence = 0,
    margin: float = MARGIN,
    effect: float = EFFECT,
    barred: bool = True,
    source: str = "",
) -> dict:
    """One resampled row: ``rule`` on resamples of stored per-seed ``values`` (as a finding
    stores them) at the claim ``threshold``, ``direction`` (module docstring: distances in each
    cell's own spread). Barred by default (the values are data the rule judges); the coverage
    is reported, not barred.

    Parameters
    ----------
    rule : Rule or str
        A catalogue rule, a rejected candidate, or the name of either.
    values : Any
        The per-seed values as a finding stores them (a list, a pair of lists for a paired or
        slope rule, rows of cells for a cell rule).
    threshold : Any
        The finding's threshold: a number, or a band ``(lo, hi)`` (a list is taken as a tuple).
    direction : str
        The finding's direction: ``">"``, ``"<"``, ``"inside"`` or ``"outside"``.
    reps : int
        Simulated experiments per scenario, at least 1.
    seed : int or numpy.random.SeedSequence
        The row's root seed (see `audit_seed()`).
    margin : float
        How far (in each cell's spread) the false and true scenarios lie from the threshold.
    effect : float
        How far (in each cell's spread) the truth lies on the claimed side for the power.
    barred : bool
        Whether the bars apply.
    source : str
        Where the values come from (a finding's id), recorded in the row.

    Returns
    -------
    dict
        ``rule``, ``seeds``, ``cells``, ``shape`` (``"resampled"``), ``source``, ``reps``, the rates
        (each a `Rate`), ``confirmed`` and ``bar``.

    Raises
    ------
    InputError
        When ``rule`` is not a rule or candidate, ``reps`` is outside its range, or ``values``
        cannot be resampled for the rule.
    """
    rule = _by_name(rule)
    reps = _check_count("reps", reps, 1)
    if isinstance(threshold, list):
        threshold = tuple(threshold)
    scene = resampled_scene(rule, values, threshold, direction)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    why = "the finding was judged by this rule under the old rules; its measure now chooses another"
    row = _row(scene, root, reps, margin, effect, barred, False, why)
    return {
        "rule": rule.name,
        "seeds": scene.n,
        "cells": scene.cells if rule.cells else 1,
        "shape": "resampled",
        "source": source,
        **row,
    }


def audit(
    rules: Iterable[str] | None = None,
    *,
    seeds: Sequence[int] = AUDIT_SEEDS,
    trials: Sequence[int] = AUDIT_TRIALS,
    cells: Sequence[int] = AUDIT_CELLS,
    shapes: Sequence[str] = AUDIT_SHAPES,
    reps: int = AUDIT_REPS,
    seed: int = 0,
    margin: float = MARGIN,
    effect: float = EFFECT,
    progress: bool = False,
    candidates: bool = False,
    proportion_cells: Sequence[int] | None = None,
) -> list[dict]:
    r"""An ad-hoc audit table: `audit_rule()` for every rule (default: all of
    `RULES`; with ``candidates``, the rejected `gaugedyn.stats._rules.CANDIDATES`
    instead), seed count, cell count (cell rules) and shape (a proportion rule: every trial
    count of ``trials``, Bernoulli outcomes), each row's generators from
    `audit_seed()` ``(seed, rule, n, cells, shape)``. The full audit of what the experiments
    use is `gaugedyn.stats._audit_plan.run_plan()`.

    Parameters
    ----------
    rules : Iterable[str] or None
        The rules' names; ``None``: every rule of `RULES` (with ``candidates``, every candidate).
    seeds : Sequence[int]
        Seed counts, each at least 3.
    trials : Sequence[int]
        Trial counts of the proportion rules, each at least 2.
    cells : Sequence[int]
        Cell counts of the cell rules, each at least 1.
    shapes : Sequence[str]
        Noise shapes, each one of `AUDIT_SHAPES`.
    reps : int
        Simulated experiments per scenario, at least 1.
    seed : int
        The root seed, an integer $\ge 0$.
    margin : float
        How far (in sd) the false and true scenarios lie from the threshold, positive.
    effect : float
        How far (in sd) the truth lies on the claimed side in the power scenario, positive.
    progress : bool
        Show a progress bar (``tqdm``) over the rows.
    candidates : bool
        Audit the rejected candidates instead of the catalogue.
    proportion_cells : Sequence[int] or None
        Cell counts of the cell rules of 0/1 outcomes (``every_cell_proportion``), each at
        least 1; ``None``: ``cells``.

    Returns
    -------
    list[dict]
        One row per rule, count and shape, as `audit_rule()` returns it.

    Raises
    ------
    InputError
        Before any simulation: when a rule is unknown (or not a candidate, with ``candidates``),
        a count, ``seed``, ``margin`` or ``effect`` is out of range, a shape is not a noise shape,
        a list is empty, or the estimated work (`work_seconds()`) exceeds about a day.
    """
    from tqdm import tqdm

    if candidates:
        unknown = [r for r in rules or () if r not in CANDIDATES]
        if unknown:
            raise InputError(
                f"rules={unknown[0]!r} is not allowed with candidates; allowed: "
                f"{', '.join(CANDIDATES)} (the rejected candidates)"
            )
        chosen = [CANDIDATES[r] for r in (CANDIDATES if rules is None else rules)]
    else:
        chosen = [_by_name(r) for r in (RULES if rules is None else rules)]
    seeds = [_check_count("seeds", s, 3) for s in seeds]
    trials = [_check_count("trials", s, 2) for s in trials]
    cells = [_check_count("cells", c, 1) for c in cells]
    pcells = cells if proportion_cells is None else list(proportion_cells)
    pcells = [_check_count("cells", c, 1) for c in pcells]
    reps = _check_count("reps", reps, 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed={seed!r} is not allowed: an integer >= 0")
    for name, v in (("margin", margin), ("effect", effect)):
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise InputError(f"{name}={v!r} is not allowed: a positive number of sd")
    for s in shapes:
        noise(np.random.default_rng(0), s, (1,))
    if not seeds or not trials or not shapes or not cells or not pcells:
        raise InputError(
            "seeds, trials, cells, proportion_cells and shapes: each needs at least one value"
        )
    jobs = []
    for r in chosen:
        if r.estimator == "point":
            jobs.append((r, 1, 1, "none"))
            continue
        for n in trials if r.estimator == "proportion" else seeds:
            for s in shape_list(r, shapes):
                for c in (pcells if r.estimator == "proportion" else cells) if r.cells else (1,):
                    jobs.append((r, n, c, s))
    _check_work([(r, n, c) for r, n, c, _ in jobs], reps)
    return [
        audit_rule(
            r,
            n,
            cells=c,
            shape=s,
            reps=reps,
            seed=audit_seed(seed, r.name, n, c, s),
            margin=margin,
            effect=effect,
        )
        for r, n, c, s in tqdm(jobs, disable=not progress, desc="audit-rules", unit="row")
    ]


# --- tables ----------------------------------------------------------------------------------


def rate_percent(r: Rate | None) -> str:
    """A rate as the tables print it: percent, with its Monte Carlo standard error in brackets.

    Parameters
    ----------
    r : Rate or None
        The rate; ``None`` where the row has none.

    Returns
    -------
    str
        ``"12.3 (0.4)"``, or ``"-"`` for ``None``.
    """
    return "-" if r is None else f"{100 * r.rate:.1f} ({100 * r.se:.1f})"


AUDIT_HEADER = (
    "rule",
    "seeds",
    "cells",
    "shape",
    "false HELD",
    "false NOT HELD",
    "HELD at bound",
    "NOT HELD at bound",
    "NOT HELD, one cell on bound",
    "coverage",
    "joint cov.",
    "power",
    "bar",
)


def row_cells(r: dict) -> list[str]:
    """One row of `AUDIT_HEADER` (a confirmed row's reps marked ``c``)."""
    bar = r["bar"] + (f" (confirmed on {r['reps']} reps)" if r.get("confirmed") else "")
    return [
        r["rule"],
        str(r["seeds"]),
        str(r["cells"]),
        r["shape"],
        rate_percent(r["false_held"]),
        rate_percent(r["false_not_held"]),
        rate_percent(r["held_at_boundary"]),
        rate_percent(r["not_held_at_boundary"]),
        rate_percent(r["one_cell_not_held"]),
        rate_percent(r["coverage"]),
        rate_percent(r["joint_coverage"]),
        rate_percent(r["power"]),
        bar,
    ]


def audit_rows(rows: list[dict]) -> list[list[str]]:
    """The audit's rows as cells of `AUDIT_HEADER` (`row_cells()`).

    Parameters
    ----------
    rows : list[dict]
        Audit rows, as `audit_rule()` and `audit_values()` return them.

    Returns
    -------
    list[list[str]]
        One list of cells per row.
    """
    return [row_cells(r) for r in rows]


def coverage_by_p_rows(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The proportion rules' coverage at each true ``p`` (`COVERAGE_P`): a header and
    one row per rule and trial count (empty when no row has ``coverage_by_p``).

    Parameters
    ----------
    rows : list[dict]
        Audit rows; only those with ``coverage_by_p`` (proportion rules) are used.

    Returns
    -------
    tuple[list[str], list[list[str]]]
        The header and the rows of cells.
    """
    rows = [r for r in rows if "coverage_by_p" in r]
    if not rows:
        return [], []
    ps = list(rows[0]["coverage_by_p"])
    header = ["rule", "trials", *(f"p = {p:g}" for p in ps)]
    return header, [
        [r["rule"], str(r["seeds"]), *(rate_percent(r["coverage_by_p"][p]) for p in ps)]
        for r in rows
    ]


def rules_markdown(rules: Iterable[Rule]) -> str:
    """The rules as a markdown table: name, statistic, interval, verdict in words (threshold
    ``c``, band ``(lo, hi)``), the kinds of measure it judges and its assumptions, each from
    the rule object and the kinds' declarations.

    Parameters
    ----------
    rules : Iterable[Rule]
        The rules, in the order of the rows.

    Returns
    -------
    str
        The table, ending in a newline.
    """
    lines = [
        "| rule | statistic | verdict | judges | assumptions |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        band = r.claim in ("inside", "outside")
        words = r.words(("lo", "hi") if band else "c").split(": ", 1)[1]
        kinds = ", ".join(kinds_of(r.name)) or "no measure (rejected)"
        lines.append(f"| `{r.name}` | {r.statistic} | {words} | {kinds} | {r.assumptions} |")
    return "\n".join(lines) + "\n"


def audit_legend(reps: Sequence[int], margin: float = MARGIN, effect: float = EFFECT) -> str:
    """The legend printed under the audit table: what each rate means, the scenarios' distances and
    the bars.

    Parameters
    ----------
    reps : Sequence[int]
        The simulated experiments per scenario of the table's rows.
    margin : float
        The false and true scenarios' distance from the threshold, in sd.
    effect : float
        The power scenario's distance on the claimed side, in sd.

    Returns
    -------
    str
        One paragraph.
    """
    return (
        f"Rates in % (Monte Carlo s.e.), {', '.join(map(str, reps))} simulated experiments "
        f"per scenario. false HELD: claim false by {margin:g} sd; false NOT HELD: claim true "
        f"by {margin:g} sd; HELD / NOT HELD at bound: parameter on the threshold (cell rules: "
        f"the larger of every cell on it and one cell on it with the others {FAR:g} sd on the "
        f"side that leaves the verdict to it); NOT HELD, one cell on bound: one cell on the "
        f"threshold, the others {margin:g} sd on the true side; coverage: 95% interval (per "
        f"cell for cell rules); joint cov.: the cell rules' interval for min/max over cells; "
        f"power: P(HELD) with the claim true by {effect:g} sd. Bars, where the rule is used on "
        f"the shape: at bound <= {SIZE_BAR:.1%} + 2 s.e., false HELD and false NOT HELD <= "
        f"{ERROR_BAR:.0%} + 2 s.e., coverage {COVERAGE_BAR[0]:.0%}-{COVERAGE_BAR[1]:.0%} (for a "
        f"proportion rule also at every true p of its coverage table; its seeds column is the "
        f"number of trials); a row that misses is simulated again with {CONFIRM} times the "
        f"reps and judged on that. A rate of 0 out of R has s.e. 0 and a 95% upper bound of 3/R."
    )


def format_table(
    rows: list[dict],
    *,
    markdown: bool = False,
    margin: float = MARGIN,
    effect: float = EFFECT,
    command: str = "",
) -> str:
    """The audit as a plain-text table (or markdown, with the command and date that made it).
    Rates in percent, Monte Carlo standard errors in brackets; the proportion rules' coverage by
    true ``p`` follows where the rows have it.

    Parameters
    ----------
    rows : list[dict]
        Audit rows, as `audit()` returns them.
    markdown : bool
        Markdown (with the rules table, the command and the UTC date) instead of plain text.
    margin : float
        The margin the rows were simulated at, for the legend.
    effect : float
        The power effect the rows were simulated at, for the legend.
    command : str
        The command quoted in the markdown header (default ``gaugedyn audit-rules --markdown``).

    Returns
    -------
    str
        The table with its legend, ending in a newline.
    """
    body = audit_rows(rows)
    reps = sorted({r["reps"] for r in rows if r["reps"]})
    text_legend = audit_legend(reps, margin, effect)
    by_p_header, by_p = coverage_by_p_rows(rows)
    if markdown:
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        names = list(dict.fromkeys(r["rule"] for r in rows))
        every = {**RULES, **CANDIDATES}
        lines = [
            f"Produced by `{command or 'gaugedyn audit-rules --markdown'}` on {stamp}.",
            "",
            rules_markdown(every[n] for n in names),
            text_legend,
            "",
            *markdown_table(AUDIT_HEADER, body),
        ]
        if by_p:
            lines += [
                "",
                "Coverage (%) of the proportion rules' 95% interval by true success "
                "probability p and number of trials:",
                "",
                *markdown_table(by_p_header, by_p),
            ]
        return "\n".join(lines) + "\n"
    text = _plain(AUDIT_HEADER, body) + "\n" + text_legend + "\n"
    if by_p:
        text += "\nCoverage (%) of the proportion rules by true p:\n" + _plain(by_p_header, by_p)
    return text


def markdown_table(header: Sequence[str], body: list[list[str]]) -> list[str]:
    """A markdown table's lines.

    Parameters
    ----------
    header : Sequence[str]
        The column names.
    body : list[list[str]]
        The rows, each with one cell per column.

    Returns
    -------
    list[str]
        The header line, the rule line and one line per row.
    """
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in body),
    ]


def _plain(header: Sequence[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header)] + [fmt.format(*row) for row in body]) + "\n"
