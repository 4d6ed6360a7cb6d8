"""Known-answer controls of the gauge experiments' instruments (``PROTOCOL.md``).

The gauge system's findings are read off solved flows and trained networks by a few instruments,
each the one definition the experiments use. Each gets a case with the effect present, of known
size or location, and one with it absent, run through that very function:

- **specialization readout** (`gaugedyn.theory.specialization()` at the threshold of
  `gaugedyn.theory.Definitions`): a student at cosine 0.99 with the teacher is
  specialised; one at cosine 0.5 is not;
- **owner readout** (`gaugedyn.theory.owners()`): of two students along the teacher, the one
  with the larger coefficient ``a |w|`` owns it (index 1, known); two identical copies tie
  (``-1``, no owner);
- **pruning readout** (`gaugedyn.theory.pruning_time()`, "pruned from then on"): a
  coefficient falling through the tolerance at a known output time and staying below is pruned
  then; one that dips below and recovers is not pruned;
- **power-law fit** (`gaugedyn.stats.loglog_fit()`): ``y = 3 x^2`` reads slope 2, a
  constant reads slope 0;
- **path distance** (the clock's arc-length resampling with Hausdorff and Frechet distances): a
  path and its copy shifted by 0.1 read 0.1 by both; a path and a time-reparametrised copy read
  0 (no change of time moves a path);
- **clock** (running integral of a mobility read at a time): mobility 2 read at ``t = 3``
  gives 6; a time never reached reads ``nan``;
- **dissipation split** (reaction ``(d rho/dt)^2 / mu_R`` and transport from a trajectory):
  ``rho = e^-t``, ``mu_R = 1`` reads a reaction ``e^-2t`` (its integral within 1e-3 of the
  closed form); constant ``rho`` and alignment read zero;
- **selection gap and outcome** (``ownership_patterns``: `._analysis.gap_of()`,
  `._analysis.classify()`): levels (3, 1, 2) read a gap 1, an owner on the most
  favourable level with no function left reads outcome 0; a tie reads outcome 2;
- **prediction gap** (``gauge_on_networks``: `._digits.gap()`): a change ten times the
  allowed error off its prediction reads 10, a change equal to its prediction reads 0;
- **time matching** (`gaugedyn.training.match_times()`): record times inside the
  reference grid are matched to their indices; times off the grid are refused.
"""

from __future__ import annotations

import math

import numpy as np

from ...harness import Control
from ...stats import loglog_fit
from ...theory import Definitions, owners, pruning_time, specialization
from ...training import match_times

ALL = (
    "specialization",
    "owner",
    "pruning",
    "power_law",
    "path",
    "clock",
    "dissipation",
    "selection_gap",
    "prediction_gap",
    "time_matching",
)


def _pair(cos: float, d: int = 4):
    """``(Q, R, T)`` of two students (the first at cosine ``cos`` with the teacher ``e_0``, the
    second orthogonal to it) and one teacher."""
    v = np.eye(d)[:1]
    w = np.stack([cos * np.eye(d)[0] + math.sqrt(1 - cos * cos) * np.eye(d)[1], np.eye(d)[2]])
    return w @ w.T, w @ v.T, v @ v.T


def _specialization() -> list[Control]:
    thr = Definitions().threshold

    def spec(cos):
        return float(specialization(*_pair(cos))[0])

    return [
        Control(
            "specialization.aligned",
            "specialization readout (theory.specialization)",
            "positive",
            f"a student at cosine 0.99 with the teacher: specialised (s >= {thr:g})",
            "the readout sees a learned feature",
            lambda: (s := spec(0.99), s >= thr),
        ),
        Control(
            "specialization.unaligned",
            "specialization readout (theory.specialization)",
            "negative",
            "a student at cosine 0.5: not specialised",
            "a feature not learned reads unlearned",
            lambda: (s := spec(0.5), s < thr),
        ),
    ]


def _owner() -> list[Control]:
    v = np.eye(3)[:1]
    T, b = v @ v.T, np.array([1.0])

    def owner_of(a, scale):
        w = np.eye(3)[[0, 0]] * np.asarray(scale)[:, None]
        return int(owners(np.asarray(a, float), w @ w.T, w @ v.T, T, b)[0])

    return [
        Control(
            "owner.larger_share",
            "owner readout (theory.owners)",
            "positive",
            "two students along the teacher, coefficients 0.5 and 2: owner 1",
            "the readout names the student that carries the feature",
            lambda: (o := owner_of([0.5, 1.0], [1.0, 2.0]), o == 1),
        ),
        Control(
            "owner.tie",
            "owner readout (theory.owners)",
            "negative",
            "two identical students: a tie, no owner (-1)",
            "equal shares name no owner",
            lambda: (o := owner_of([1.0, 1.0], [1.0, 1.0]), o == -1),
        ),
    ]


def _pruning() -> list[Control]:
    tol = Definitions().prune_tol
    t = np.linspace(0.0, 10.0, 101)
    falls = np.where(t < 4.0, 1.0, 0.1 * tol)[:, None]
    dips = np.where((t > 4.0) & (t < 6.0), 0.1 * tol, 1.0)[:, None]
    return [
        Control(
            "pruning.falls",
            "pruning readout (theory.pruning_time)",
            "positive",
            f"|rho| falls below {tol:g} at t = 4 and stays: pruned at 4",
            "the readout dates a pruning where it happens",
            lambda: (p := float(pruning_time(t, falls, tol)[0]), p == 4.0),
        ),
        Control(
            "pruning.recovers",
            "pruning readout (theory.pruning_time)",
            "negative",
            "|rho| dips below the tolerance on (4, 6) and recovers: not pruned",
            "a transient dip is no pruning",
            lambda: (p := float(pruning_time(t, dips, tol)[0]), math.isnan(p)),
        ),
    ]


def _power_law() -> list[Control]:
    x = np.logspace(0, 3, 8)
    return [
        Control(
            "power_law.square",
            "power-law fit (stats.loglog_fit)",
            "positive",
            "y = 3 x^2 on 8 points: slope 2 (within 1e-9)",
            "the fit reads a known exponent",
            lambda: (s := loglog_fit(x, 3 * x**2).slope, abs(s - 2) < 1e-9),
        ),
        Control(
            "power_law.flat",
            "power-law fit (stats.loglog_fit)",
            "negative",
            "y = 5: slope 0",
            "no dependence reads no exponent",
            lambda: (s := loglog_fit(x, np.full_like(x, 5.0)).slope, abs(s) < 1e-9),
        ),
    ]


def _path() -> list[Control]:
    from . import _paths as paths

    s = np.linspace(0, 1, 400)
    x, y = s, s**2

    def dist(x2, y2):
        P, Q = paths.resample_path(x, y, 200), paths.resample_path(x2, y2, 200)
        return [paths.hausdorff(P, Q), paths.frechet(P, Q)]

    u = np.linspace(0, 1, 137) ** 3  # the same path, another clock
    return [
        Control(
            "path.shifted",
            "path distance (Hausdorff, Frechet)",
            "positive",
            "a path and its copy shifted by 0.1: both read 0.1 (within 1e-3)",
            "the distances read how far two paths lie apart",
            lambda: (d := dist(x, y + 0.1), all(abs(v - 0.1) < 1e-3 for v in d)),
        ),
        Control(
            "path.reparametrised",
            "path distance (Hausdorff, Frechet)",
            "negative",
            "a path and the same path run on another clock: both read 0 (within 1e-3)",
            "a change of time moves no path",
            lambda: (d := dist(u, u**2), all(v < 1e-3 for v in d)),
        ),
    ]


def _clock() -> list[Control]:
    from . import _quadrature as quad
    from ._analysis import clock_at

    t = np.linspace(0.0, 5.0, 51)
    c = quad.cumulative(t, np.full_like(t, 2.0))
    return [
        Control(
            "clock.constant",
            "clock (cumulative mobility, clock_at)",
            "positive",
            "mobility 2 read at t = 3: 6 (within 1e-12)",
            "the clock integrates its mobility",
            lambda: (v := clock_at(t, c, 3.0), abs(v - 6.0) < 1e-12),
        ),
        Control(
            "clock.never",
            "clock (cumulative mobility, clock_at)",
            "negative",
            "a time never reached (nan, or past the run): nan",
            "no reading without a time",
            lambda: (
                v := [clock_at(t, c, math.nan), clock_at(t, c, 9.0)],
                all(math.isnan(x) for x in v),
            ),
        ),
    ]


def _dissipation() -> list[Control]:
    from . import _quadrature as quad
    from ._analysis import split_from_trajectory

    t = np.concatenate([[0.0], np.logspace(-4, 1, 400)])
    one = np.ones_like(t)

    def decay():
        reaction, transport = split_from_trajectory(t, np.exp(-t), 0.5 * one, one, one)
        total = quad.integrate_log(t[1:], reaction)
        exact = 0.5 * (math.exp(-2 * t[1]) - math.exp(-2 * t[-1]))
        ok = abs(total - exact) < 1e-3 and float(np.max(np.abs(transport))) < 1e-12
        return [total, exact], ok

    def still():
        reaction, transport = split_from_trajectory(t, one, 0.5 * one, one, one)
        m = float(max(np.max(np.abs(reaction)), np.max(np.abs(transport))))
        return m, m < 1e-12

    return [
        Control(
            "dissipation.decay",
            "dissipation split (split_from_trajectory)",
            "positive",
            "rho = e^-t, mu_R = 1, alignment constant: reaction integrates to its closed "
            "form (within 1e-3), transport 0",
            "the split reads the dissipation of a known trajectory",
            decay,
        ),
        Control(
            "dissipation.still",
            "dissipation split (split_from_trajectory)",
            "negative",
            "constant rho and alignment: both parts 0",
            "a trajectory that does not move dissipates nothing",
            still,
        ),
    ]


def _selection_gap() -> list[Control]:
    from ._analysis import classify, gap_of

    return [
        Control(
            "selection.owner_on_top",
            "selection gap and outcome (gap_of, classify)",
            "positive",
            "levels (3, 1, 2): gap 1; owner 0 on the top level, no function left: outcome 0",
            "the readouts name a selection by the most favourable level",
            lambda: (r := [gap_of([3, 1, 2]), classify(0, [3, 1, 2], 0.0, 1e-3)], r == [1.0, 0]),
        ),
        Control(
            "selection.tie",
            "selection gap and outcome (gap_of, classify)",
            "negative",
            "a tie (owner -1): outcome 2, no selection",
            "a tie reads as none",
            lambda: (r := classify(-1, [3, 1, 2], 0.0, 1e-3), r == 2),
        ),
    ]


def _prediction_gap() -> list[Control]:
    from ._digits import gap

    def units(off: float) -> dict:
        pred = np.full((5, 2), 1e-3)
        allowed = 0.1 * (0.01**2 * 2.0 + pred) + 4 * np.finfo(np.float64).eps * 2.0
        return {
            "change": pred + off * allowed,
            "predicted": pred,
            "in_sq": np.ones((5, 2)),
            "out_sq": np.ones((5, 2)),
            "g_in_sq": np.ones((5, 2)),
            "g_out_sq": np.ones((5, 2)),
        }

    return [
        Control(
            "prediction_gap.off",
            "prediction gap (_digits.gap)",
            "positive",
            "changes ten allowed errors off their prediction: 10 (within 1e-9)",
            "the gap reads a broken conservation law",
            lambda: (g := gap(units(10.0), 0.01, 0.1), abs(g - 10) < 1e-9),
        ),
        Control(
            "prediction_gap.exact",
            "prediction gap (_digits.gap)",
            "negative",
            "changes equal to their prediction: 0",
            "a kept law reads no gap",
            lambda: (g := gap(units(0.0), 0.01, 0.1), g == 0.0),
        ),
    ]


def _time_matching() -> list[Control]:
    ref = np.linspace(0.0, 1.0, 11)

    def off():
        try:
            match_times(np.array([0.25]), ref)
        except RuntimeError as err:
            return str(err), True
        return "matched", False

    return [
        Control(
            "times.on_grid",
            "time matching (training.match_times)",
            "positive",
            "record times 0.2 and 0.7 on a grid of tenths: indices 2 and 7",
            "simulation and theory are compared at the same times",
            lambda: (i := match_times(np.array([0.2, 0.7]), ref).tolist(), i == [2, 7]),
        ),
        Control(
            "times.off_grid",
            "time matching (training.match_times)",
            "negative",
            "a record time 0.25 off the grid: refused",
            "no comparison at the wrong time",
            off,
        ),
    ]


BUILDERS = {
    "specialization": _specialization,
    "owner": _owner,
    "pruning": _pruning,
    "power_law": _power_law,
    "path": _path,
    "clock": _clock,
    "dissipation": _dissipation,
    "selection_gap": _selection_gap,
    "prediction_gap": _prediction_gap,
    "time_matching": _time_matching,
}


def controls(*instruments: str) -> list[Control]:
    """The controls of the named instruments (`ALL`), in that order."""
    return [c for name in instruments for c in BUILDERS[name]()]


_LANDSCAPE = (
    (
        "finder_present",
        "plateau finder (theory.flat_stretches)",
        "positive",
        "a loss with two drops (at t = 10 and 1000): one interior flat stretch, its ends within "
        "one sample of the roots of |d ln L / d ln t| = flatness",
        "the finder locates a plateau where it is",
    ),
    (
        "finder_absent",
        "plateau finder (theory.flat_stretches)",
        "negative",
        "a power law, an exponential decay and a steady drop: no interior stretch",
        "a loss that never levels off has no plateau",
    ),
    (
        "refiner_saddle",
        "critical-point refiner (theory.critical_point)",
        "positive",
        "the erf single saddle a = 0, w.v = 0 from a nearby start: loss 1/6, index 1, lambda_+ "
        "its closed form to 1e-8",
        "the refiner finds a saddle and its unstable rate",
    ),
    (
        "refiner_minimum",
        "critical-point refiner (theory.critical_point)",
        "positive",
        "started at the teacher (ReLU and erf, K = M = 3): |grad| < 1e-12, loss < 1e-12, index 0",
        "the refiner keeps a minimum a minimum",
    ),
    (
        "refiner_absent",
        "critical-point refiner (theory.critical_point)",
        "negative",
        "one iteration from a point that is not critical: not reported as critical",
        "a start that is not critical is not called one",
    ),
    (
        "escape_present",
        "escape time (theory.escape_times)",
        "positive",
        "the closed-form saddle from eps = 1e-2 to 1e-5: slope of T on ln(1/eps) times lambda_+ "
        "is 1 within 1%",
        "the instrument reads the escape law where it holds",
    ),
    (
        "escape_absent",
        "escape time (theory.escape_times)",
        "negative",
        "a minimum (no unstable direction): refused",
        "no escape time where there is nothing to escape",
    ),
    (
        "dedup_present",
        "catalogue identity (theory.same_point)",
        "positive",
        "a ReLU point and its permuted and gauge-transformed copies: one point",
        "copies of one point are one catalogue entry",
    ),
    (
        "dedup_absent",
        "catalogue identity (theory.same_point)",
        "negative",
        "two different critical points, and a point and a copy with one coefficient 10% "
        "larger: two points each",
        "different points stay apart",
    ),
)


def landscape(config: dict) -> list[Control]:
    """The ``landscape`` experiment's controls: the plateau finder, the critical-point refiner,
    the escape time and the catalogue's identity, each on the cases of
    `._landscape.CASES` at the run's ``flatness``, ``min_span`` and ``band`` (the same
    cases the run judges as ``landscape.control.*`` checks)."""
    from . import _landscape as lr

    def run(name: str):
        keys = lr.SETTINGS_OF.get(name, ())
        return lambda: lr.CASES[name](**{k: config[k] for k in keys})

    return [
        Control(f"landscape.{name}", instrument, kind, case, proves, run(name))
        for name, instrument, kind, case, proves in _LANDSCAPE
    ]
