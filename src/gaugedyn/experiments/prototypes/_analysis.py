"""Analysis of the ``prototypes`` experiment (its findings' protocol is in
``derivations/prototypes.md`` and ``docs/prototypes.md``).

A run judges one **specification** of the declared set-up space: the step size ``lr``, the
budget reading (``budget``: the fixed budget ``steps``, or settled), ``lambda`` (``weight``) and
the nominal ``tau``, each one of the values every task trains (`._protocol.SPECIFICATION`),
so ``gaugedyn multiverse`` judges the whole space from one run's tasks. Every finding is judged
there by the rule its declared kind chooses (`._protocol.rule_of`) through
`gaugedyn.harness.judged`, under its primary reading (the four approaches the abstract
names) and, where the combinations of several losses were trained (the reference ``lambda`` and
``tau``), under the second comparison reading (the eight masks, or the four pairs of masks with
and without the loss); a finding whose readings disagree says "depends on the reading".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import stats
from ...harness import Claim, judged
from . import _model as model
from ._protocol import (
    COMBINATIONS,
    CONVERGED,
    COV,
    DRIFT_MARGIN,
    EXPULSION_MARGIN,
    FIT_TOLERANCE,
    MEASURES,
    OV,
    PLAIN,
    REFERENCE_TAU,
    REFERENCE_WEIGHT,
    SEP,
    measure_of,
    rule_of,
    variant_index,
)

APPROACHES = ("plain", "cov", "sep", "ov", "sep at the largest tau")
"""The approaches whose drift rate is measured: the four the abstract names and separation at
the largest ``tau`` of the sweep."""


def budget_key(config: dict) -> str:
    """The stored budget reading a configuration judges: ``steps<T>`` or ``settled``."""
    return "settled" if config["budget"] == "settled" else f"steps{int(config['steps'])}"


def _held(h: np.ndarray) -> np.ndarray:
    """``h`` ``(K, ...)`` with every ``nan`` after the first checkpoint replaced by the last
    value before it (a task whose runs had all settled stopped; settled runs hold)."""
    out = np.array(h, dtype=float)
    for k in range(1, out.shape[0]):
        out[k] = np.where(np.isnan(out[k]), out[k - 1], out[k])
    return out


def collect(config: dict, tasks: list[dict], results: list[dict]) -> dict:
    """Stack the tasks into ``{init: {lr: {budget key: {measure: (n_sizes, S, V)}, ...}}}`` plus
    the stored extras per ``(init, lr)`` (``settled_at`` ``(n_sizes, S, V)``,
    ``outside_history`` ``(n_sizes, K, S, V)`` held after a task stopped early, the positions
    and inputs at the largest N), and ``checkpoints`` ``(K,)``."""
    sizes = [int(n) for n in config["sizes"]]
    by = {(t["n"], t["init"], float(t["lr"])): r for t, r in zip(tasks, results)}
    k = int(config["cap"]) // int(config["window"]) + 1
    keys = [f"steps{int(b)}" for b in sorted(config["budgets"])] + ["settled"]
    out: dict[str, Any] = {}
    for init in config["inits"]:
        out[init] = {}
        for lr in map(float, config["lrs"]):
            rows = [by[(n, init, lr)] for n in sizes]
            d: dict[str, Any] = {
                b: {
                    m: np.stack([np.asarray(r[f"{b}__{m}"], dtype=float) for r in rows])
                    for m in MEASURES
                }
                for b in keys
            }
            d["fit_history"] = np.stack([np.asarray(r["fit_history"], dtype=float) for r in rows])
            d["positions"] = {
                b: np.asarray(rows[-1][f"{b}__prototypes"], dtype=float) for b in keys
            }
            d["x_last"] = np.asarray(rows[-1]["x"], dtype=float)
            d["settled_at"] = np.stack([np.asarray(r["settled_at"], dtype=float) for r in rows])
            hist = np.full((len(sizes), k, *d["settled_at"].shape[1:]), np.nan)
            for i, r in enumerate(rows):
                h = np.asarray(r["outside_history"], dtype=float)
                hist[i, : h.shape[0]] = h
                hist[i] = _held(hist[i])
            d["outside_history"] = hist
            out[init][lr] = d
    out["checkpoints"] = np.arange(k) * int(config["window"])
    return out


def drift_window(config: dict, end: int) -> np.ndarray:
    """The checkpoints a drift rate at budget ``end`` is fitted over: from the last checkpoint
    at or before ``end / 2`` to ``end`` (at least two)."""
    w = int(config["window"])
    start = min((end // 2) // w * w, end - w)
    return np.arange(start, end + 1, w)


def drift_rates(config: dict, history: np.ndarray, end: int) -> np.ndarray:
    """Per run, the least-squares slope of the outside fraction against steps over
    `drift_window` ``(end)``, per 1,000 steps: ``history`` ``(..., K, S, V)`` ->
    ``(..., S, V)``."""
    t = drift_window(config, end)
    h = np.take(history, t // int(config["window"]), axis=-3)
    tc = (t - t.mean()) / 1000.0
    shape = (1,) * (h.ndim - 3) + (len(t), 1, 1)
    hc = h - h.mean(axis=-3, keepdims=True)
    return np.sum(hc * tc.reshape(shape), axis=-3) / np.sum(tc**2)


def _g(v) -> str:
    return f"{float(v):g}"


class Judge:
    """Builds the findings of one specification from the collected measures."""

    def __init__(self, config: dict, data: dict, root: np.random.SeedSequence):
        self.config, self.data, self.root = config, data, root
        self.sizes = [int(n) for n in config["sizes"]]
        self.lam, self.tau = float(config["weight"]), float(config["tau"])
        self.lr = float(config["lr"])
        self.bkey = budget_key(config)
        self.reference = self.lam == REFERENCE_WEIGHT and self.tau == REFERENCE_TAU
        self.end = int(config["cap"]) if config["budget"] == "settled" else int(config["steps"])

    @property
    def spec(self) -> str:
        """The specification in words, as every statement ends."""
        budget = (
            f"fixed budget {int(self.config['steps'])} steps"
            if self.config["budget"] == "fixed"
            else f"settled (cap {int(self.config['cap'])})"
        )
        return f"lr={_g(self.lr)}, {budget}, lambda={_g(self.lam)}, tau={_g(self.tau)}"

    def col(self, mask, cov=None, lam=None, tau=None) -> int:
        """The column of ``mask`` at ``lambda = lam`` and ``tau`` (the specification's when
        ``None``)."""
        lam = self.lam if lam is None else float(lam)
        tau = self.tau if tau is None else float(tau)
        return variant_index(self.config, mask, cov, weight=lam, tau=tau)

    def ref(self, mask, cov=None) -> int:
        """The column of ``mask`` at the reference ``lambda`` and ``tau``."""
        return variant_index(self.config, mask, cov)

    def task(self, init: str) -> dict:
        return self.data[init][self.lr]

    def measure(self, init: str, name: str) -> np.ndarray:
        return self.task(init)[self.bkey][name]

    def diff(self, init, name, a, b) -> np.ndarray:
        """``(S, n_sizes)`` per seed ``measure[a] - measure[b]`` (columns ``a``, ``b``)."""
        m = self.measure(init, name)
        return (m[:, :, a] - m[:, :, b]).T

    def rates(self, init: str) -> np.ndarray:
        """``(n_sizes, S, V)`` drift rates of the outside fraction per 1,000 steps over the
        second half of the specification's budget (of the cap when settled)."""
        return drift_rates(self.config, self.task(init)["outside_history"], self.end)

    def pairs(self, init, name, bit: int, cov: str | None) -> np.ndarray:
        """``(S, n_sizes)``: the all-mask reading of one loss's effect at the reference, the
        mean over the four masks without loss ``bit`` (0 coverage, 1 separation, 2 overlap) of
        ``measure[mask with it] - measure[mask]`` (coverage reading ``cov``)."""
        out = []
        for m in (m for m in COMBINATIONS if m[bit] == 0):
            on = tuple(1 if i == bit else v for i, v in enumerate(m))
            out.append(self.diff(init, name, self.ref(on, cov), self.ref(m, cov)))
        return np.mean(out, axis=0)

    def all_masks(self, init, name, bit: int, reduce: bool = False) -> dict:
        """The all-mask readings of one loss's effect per coverage reading (the mean over N per
        seed with ``reduce``); none away from the reference."""
        if not self.reference:
            return {}
        out = {}
        for cov in self.config["coverages"] if bit != 0 else (None,):
            v = self.pairs(init, name, bit, cov)
            label = "four pairs" + (f" (coverage {cov})" if cov else "")
            out[label] = v.mean(axis=1) if reduce else v
        return out

    def finding(
        self,
        id: str,
        statement: str,
        values: np.ndarray,
        form: str,
        threshold: float,
        direction: str,
        *,
        extra: dict | None = None,
        cells: str | None = None,
    ) -> Claim:
        """The finding ``id`` judged at the specification by the rule its declared kind chooses
        for a claim of ``form`` (`._protocol.rule_of`), under the named comparison
        (primary) and each reading of ``extra``."""
        measure = measure_of(id)
        rule = measure.rule(form)
        readings = {"named approaches": values, **(extra or {})}
        js = {
            k: stats.judge(
                rule,
                v,
                threshold=threshold,
                direction=direction,
                rng=stats.generator(self.root, id, k),
            )
            for k, v in readings.items()
        }
        v = np.asarray(values, dtype=float)
        sign = 1.0 if direction == ">" else -1.0
        summary = {
            "specification": {
                "lr": self.lr,
                "budget": self.config["budget"],
                "steps": int(self.config["steps"]),
                "weight": self.lam,
                "tau": self.tau,
            },
            "primary_reading": "named approaches",
            "form": form,
            "kind": measure.kind,
            "mean": np.nanmean(v, axis=0).tolist(),
            "median": np.nanmedian(v, axis=0).tolist(),
            "share_on_claimed_side": float(np.mean(sign * (v - threshold) > 0)),
        }
        if cells:
            summary["cells_are"] = cells
        summary["reading_estimates"] = {k: j.estimate for k, j in js.items()}
        return judged(
            id,
            f"{statement} [{self.spec}]",
            js["named approaches"],
            measure=measure,
            readings=js,
            extra=summary,
        )

    # -- findings ---------------------------------------------------------------------------

    def log_ratios(self, init, a, b) -> np.ndarray:
        """``(S, n_sizes)`` per seed ``log(err[a] / err[b])`` (reconstruction errors)."""
        m = self.measure(init, "reconstruction_error")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(m[:, :, a] / m[:, :, b]).T

    def coverage_lowest_error(self, init: str, cov: str) -> Claim:
        c = self.col(COV, cov)
        named = np.hstack([self.log_ratios(init, self.col(k, cov), c) for k in (PLAIN, SEP, OV)])
        extra = {}
        if self.reference:
            r = self.ref(COV, cov)
            extra["all 8 masks"] = np.hstack(
                [self.log_ratios(init, self.ref(k, cov), r) for k in COMBINATIONS if k != COV]
            )
        n = len(self.sizes)
        return self.finding(
            f"coverage_lowest_error[init={init},coverage={cov}]",
            "coverage-only gives the lowest reconstruction error at every N, against the "
            "approaches the abstract names (plain fit, separation, overlap): the median paired "
            f"log ratio log(err_k / err_cov) > 0 in every cell ({n} N x 3 k; errors are "
            "long-tailed and span decades over N, judged by the medians of their ratios, whose "
            "sign is the sign of the paired difference); second reading: against all seven "
            "other masks",
            named,
            "every_cell",
            0.0,
            ">",
            extra=extra,
            cells="approach-major: (plain, sep, ov) x N",
        )

    def coverage_usage(self, init: str, cov: str, usage: str) -> Claim:
        name = f"usage_{usage}"
        values = self.diff(init, name, self.col(COV, cov), self.col(PLAIN)).mean(axis=1)
        extra = (
            {"four pairs": self.pairs(init, name, 0, cov).mean(axis=1)} if self.reference else {}
        )
        return self.finding(
            f"coverage_usage_above_plain[init={init},coverage={cov},usage={usage}]",
            "coverage-only raises the prototype-usage specialization ratio over the plain fit: "
            "the median over seeds of (mean over N of usage_cov - usage_plain) > 0 (a ratio: "
            "judged by its median); second reading: the mean over the four pairs (a mask with "
            "coverage, the same without)",
            values,
            "threshold",
            0.0,
            ">",
            extra=extra,
        )

    def overlap_harmful(self, init: str) -> Claim:
        return self.finding(
            f"overlap_harmful[init={init}]",
            "overlap is systematically harmful: overlap-only reconstructs worse than the plain "
            "fit at every N, judged on the median paired difference err_ov - err_plain per N "
            "(the error is heavy-tailed; means stored beside medians); second reading: the "
            "mean over the four pairs (a mask with overlap, the same without)",
            self.diff(init, "reconstruction_error", self.col(OV), self.col(PLAIN)),
            "every_cell",
            0.0,
            ">",
            cells="N",
            extra=self.all_masks(init, "reconstruction_error", 2),
        )

    def separation_mixed(self, init: str) -> Claim:
        values = self.diff(init, "reconstruction_error", self.col(SEP), self.col(PLAIN))
        claim = self.finding(
            f"separation_mixed[init={init}]",
            "separation has mixed effects, not overlap's systematic harm: at some N the median "
            "paired difference err_sep - err_plain is below 0 (Holm over N); 'worse at some N' "
            "is stored beside it; second reading: the mean over the four pairs (a mask with "
            "separation, the same without)",
            values,
            "some_cell",
            0.0,
            "<",
            cells="N",
            extra=self.all_masks(init, "reconstruction_error", 1),
        )
        worse = stats.judge(
            rule_of(claim.id, "some_cell"),
            values,
            threshold=0.0,
            direction=">",
            rng=stats.generator(self.root, claim.id, "worse at some N"),
        )
        claim.tolerance["worse_at_some_N"] = worse.verdict
        return claim

    def overlap_fits(self, init: str) -> Claim:
        var = model.TARGET_VARIANCE[self.config["target"]]
        named = self.diff(init, "fit_error", self.col(OV), self.col(PLAIN)) / var
        extra = {k: v / var for k, v in self.all_masks(init, "fit_error", 2).items()}
        return self.finding(
            f"overlap_fits_as_well[init={init}]",
            "overlap-active runs fit the data as well as overlap-free ones: at every N, "
            f"the median of (fit_ov - fit_plain) / var(y) < {FIT_TOLERANCE:g} (an error "
            "difference: every cell by its median); second reading: the mean over the four "
            "pairs (a mask with overlap, the same without)",
            named,
            "every_cell",
            FIT_TOLERANCE,
            "<",
            extra=extra,
            cells="N",
        )

    def overlap_fit_ratio(self, init: str, cov: str) -> Claim | None:
        if not self.reference:
            return None
        masks = [m for m in COMBINATIONS if m[2] == 0]
        fit = self.measure(init, "fit_error")
        num = np.mean([fit[:, :, self.ref((m[0], m[1], 1), cov)] for m in masks], axis=(0, 1))
        den = np.mean([fit[:, :, self.ref(m, cov)] for m in masks], axis=(0, 1))
        rng = stats.generator(self.root, "ratio", init, cov)
        iv = stats.ratio_ci(num, den, rng=rng)
        return Claim(
            id=f"overlap_fit_ratio[init={init},coverage={cov}]",
            statement="mean fit error of overlap-active runs over that of their "
            f"overlap-free counterparts (pooled over N and pairs) [{self.spec}]",
            measured=iv.estimate,
            expected=None,
            tolerance=None,
            passed=True,
            kind="measurement",
            interval=iv.as_list(),
        )

    def overlap_expels(self, init: str) -> Claim:
        values = self.diff(init, "outside_fraction", self.col(OV), self.col(PLAIN)).mean(axis=1)
        return self.finding(
            f"overlap_expels[init={init}]",
            "overlap pushes prototypes outside the data's hull at the nominal choice: the "
            "median over seeds of (mean over N of out_ov - out_plain) > 0 (judged by its "
            "median); second reading: the mean over the four pairs (a mask with overlap, the "
            "same without)",
            values,
            "threshold",
            0.0,
            ">",
            extra=self.all_masks(init, "outside_fraction", 2, reduce=True),
        )

    def coverage_keeps_inside(self, init: str, cov: str) -> Claim:
        out = "outside_fraction"
        named = self.diff(init, out, self.col(COV, cov), self.col(PLAIN)).mean(axis=1)
        extra = {"four pairs": self.pairs(init, out, 0, cov).mean(axis=1)} if self.reference else {}
        return self.finding(
            f"coverage_keeps_inside[init={init},coverage={cov}]",
            "coverage keeps prototypes inside the hull: the median over seeds of (mean over N of "
            "out_cov - out_plain) < 0; second reading: the mean over the four pairs (a mask "
            "with coverage, the same without)",
            named,
            "threshold",
            0.0,
            "<",
            extra=extra,
        )

    def separation_no_expulsion(self, init: str) -> Claim:
        m = EXPULSION_MARGIN
        return self.finding(
            f"separation_no_expulsion_at_nominal_tau[init={init}]",
            "separation does not expel at the nominal temperature: at every N, the median "
            f"excess out_sep - out_plain is below {m:g}; second reading: the mean over the four "
            "pairs (a mask with separation, the same without)",
            self.diff(init, "outside_fraction", self.col(SEP), self.col(PLAIN)),
            "every_cell",
            m,
            "<",
            cells="N",
            extra=self.all_masks(init, "outside_fraction", 1),
        )

    def separation_expels_large_tau(self, init: str) -> Claim:
        m, big = EXPULSION_MARGIN, max(float(t) for t in self.config["taus"])
        values = self.diff(init, "outside_fraction", self.col(SEP, tau=big), self.col(PLAIN)).mean(
            axis=1
        )
        return self.finding(
            f"separation_expels_at_large_tau[init={init}]",
            f"separation expels at large temperature: at tau = {big:g}, the median over seeds "
            f"of (mean over N of out_sep - out_plain) > {m:g} (the tau sweep runs on the "
            "separation-only mask, so this finding has no all-mask reading)",
            values,
            "threshold",
            m,
            ">",
        )

    def overlap_expulsion_rate(self, init: str) -> Claim:
        r = self.rates(init)
        values = (r[:, :, self.col(OV)] - r[:, :, self.col(PLAIN)]).T.mean(axis=1)
        t = drift_window(self.config, self.end)
        return self.finding(
            f"overlap_expulsion_rate[init={init}]",
            "overlap keeps pushing prototypes out (expulsion as a drift): the median over "
            "seeds of (mean over N of the excess drift rate of the outside fraction, overlap-only "
            f"minus plain, per 1,000 steps over steps {t[0]}-{t[-1]}) > 0",
            values,
            "threshold",
            0.0,
            ">",
        )

    def separation_expulsion_rate(self, init: str) -> Claim:
        r = self.rates(init)
        values = (r[:, :, self.col(SEP)] - r[:, :, self.col(PLAIN)]).T
        t = drift_window(self.config, self.end)
        return self.finding(
            f"separation_expulsion_rate_at_nominal_tau[init={init}]",
            "separation does not keep expelling at the nominal temperature (expulsion as a "
            "drift): at every N, the median excess drift rate of the outside fraction, "
            f"separation-only minus plain, per 1,000 steps over steps {t[0]}-{t[-1]}, is below "
            f"{DRIFT_MARGIN:g}",
            values,
            "every_cell",
            DRIFT_MARGIN,
            "<",
            cells="N",
        )

    def drift(self, init: str) -> list[Claim]:
        """The drift rate of each approach of `APPROACHES` (measurements): the mean over
        seeds of the per-seed mean over N, with its t interval."""
        r = self.rates(init)
        big = max(float(t) for t in self.config["taus"])
        cols = dict(
            zip(
                APPROACHES,
                (
                    self.col(PLAIN),
                    self.col(COV, self.config["coverages"][-1]),
                    self.col(SEP),
                    self.col(OV),
                    self.col(SEP, tau=big),
                ),
            )
        )
        t = drift_window(self.config, self.end)
        out = []
        for name, j in cols.items():
            iv = stats.mean_ci(r[:, :, j].mean(axis=0))
            out.append(
                Claim(
                    id=f"outside_drift[init={init},approach={name}]",
                    statement=f"init={init}: drift rate of the outside fraction of {name} per "
                    f"1,000 steps over steps {t[0]}-{t[-1]} (mean over seeds of the mean "
                    f"over N, t interval) [{self.spec}]",
                    measured=iv.estimate,
                    expected=None,
                    tolerance=None,
                    passed=True,
                    kind="measurement",
                    interval=iv.as_list(),
                )
            )
        return out


def plain_fit(config: dict, data: dict, init: str) -> Claim:
    """The plain fit's worst mean relative fit error over N at the largest step size and budget
    trained: a check for the ``inside`` initialisation (the budget is chosen for it), a
    measurement for ``broad``."""
    lr, steps = max(map(float, config["lrs"])), max(int(b) for b in config["budgets"])
    fit = data[init][lr][f"steps{steps}"]["fit_error"][:, :, variant_index(config, PLAIN)]
    rel = np.mean(fit, axis=1) / model.TARGET_VARIANCE[config["target"]]
    i = int(np.argmax(rel))
    worst = float(rel[i])
    text = (
        f"init={init}: the plain fit's mean over seeds of fit_error / var(y) at lr={lr:g} "
        f"after {steps} steps, worst over N (at N = {config['sizes'][i]})"
    )
    if init != "inside":
        return Claim(
            id=f"plain_fit_error[init={init}]",
            statement=text,
            measured=worst,
            expected=None,
            tolerance=None,
            passed=True,
            kind="measurement",
        )
    return Claim(
        id=f"plain_fit_converged[init={init}]",
        statement=text + f" is below {CONVERGED:g}: the budget lets the plain fit converge",
        measured=worst,
        expected=f"< {CONVERGED:g}",
        tolerance=CONVERGED,
        passed=bool(worst < CONVERGED),
    )


def settled_share(config: dict, data: dict, init: str, lr: float) -> Claim:
    """The share of runs at step size ``lr`` that settled before the cap (a measurement)."""
    s = data[init][lr]["settled_at"]
    share = float(np.mean(s >= 0))
    return Claim(
        id=f"settled_share[init={init},lr={lr:g}]",
        statement=f"init={init}, lr={lr:g}: share of runs whose largest prototype displacement "
        f"per {config['window']} steps fell below {config['settle_tolerance']:g} within "
        f"{config['cap']} steps (the rest are read at the cap)",
        measured=share,
        expected=None,
        tolerance=None,
        passed=True,
        kind="measurement",
    )


def claims_of(config: dict, data: dict, root: np.random.SeedSequence) -> list[Claim]:
    """Every claim of a run, readings in the order of the configuration."""
    j = Judge(config, data, root)
    out: list[Claim | None] = []
    for init in config["inits"]:
        out += [plain_fit(config, data, init)]
        out += [settled_share(config, data, init, float(lr)) for lr in config["lrs"]]
        out += [
            j.overlap_harmful(init),
            j.overlap_expels(init),
            j.overlap_expulsion_rate(init),
            j.overlap_fits(init),
            j.separation_mixed(init),
            j.separation_no_expulsion(init),
            j.separation_expulsion_rate(init),
            j.separation_expels_large_tau(init),
        ]
        out += j.drift(init)
        for cov in config["coverages"]:
            out += [
                j.coverage_lowest_error(init, cov),
                j.coverage_keeps_inside(init, cov),
                j.overlap_fit_ratio(init, cov),
            ]
            out += [j.coverage_usage(init, cov, u) for u in ("nearest", "argmax")]
    return [c for c in out if c is not None]


def _bands(x: np.ndarray, center: str) -> np.ndarray:
    """``(..., 3)``: centre (mean or median) and 95% interval over the last axis (seeds): the t
    interval of the mean, or the distribution-free interval of the median."""
    with np.errstate(invalid="ignore", divide="ignore"):
        b = (stats.t_bounds if center == "mean" else stats.median_bounds)(x, 0.975)
    return np.stack([b.estimate, b.lower, b.upper], axis=-1)


def drift_ends(config: dict) -> list[int]:
    """The budgets a drift rate is measured at: each of ``budgets`` and the cap."""
    return sorted({*(int(b) for b in config["budgets"]), int(config["cap"])})


def drift_table(config: dict, d: dict) -> np.ndarray:
    """``(n_ends, len(APPROACHES), 3)``: the drift rate per approach at each of
    `drift_ends` (the mean over seeds of the per-seed mean over N, t interval)."""
    big = max(float(t) for t in config["taus"])
    cols = [
        variant_index(config, PLAIN),
        variant_index(config, COV, config["coverages"][-1]),
        variant_index(config, SEP),
        variant_index(config, OV),
        variant_index(config, SEP, tau=big),
    ]
    rows = []
    for end in drift_ends(config):
        r = drift_rates(config, d["outside_history"], end).mean(axis=0)  # (S, V)
        rows.append(_bands(r[:, cols].T, "mean"))
    return np.stack(rows)


def intervals(config: dict, data: dict) -> dict[str, np.ndarray]:
    """Arrays behind the figures at the judged step size, per initialisation and budget
    reading (``fixed``: the judged ``steps``): ``{center}__{measure}__{budget}__{init}`` of
    shape ``(n_sizes, V, 3)`` (centre, low, high over seeds; centre ``mean`` and ``median``),
    ``tau__{budget}__{init}`` ``(n_sizes, n_taus, 3)`` for the paired excess
    ``out_sep(tau) - out_plain`` at the reference ``lambda`` (mean); and per step size of
    ``lrs`` (``lr<i>``, its index) ``history__{init}__lr<i>`` ``(n_sizes, K, V, 3)`` for the
    outside fraction at each checkpoint and ``drift__{init}__lr<i>`` (`drift_table`)."""
    out = {}
    lr = float(config["lr"])
    plain = variant_index(config, PLAIN)
    sweep = [variant_index(config, SEP, tau=float(t)) for t in config["taus"]]
    keys = {"fixed": f"steps{int(config['steps'])}", "settled": "settled"}
    for init in config["inits"]:
        d = data[init][lr]
        for budget, key in keys.items():
            for m in MEASURES:
                x = np.moveaxis(d[key][m], 1, -1)  # (n_sizes, V, S)
                for center in ("mean", "median"):
                    out[f"{center}__{m}__{budget}__{init}"] = _bands(x, center)
            o = d[key]["outside_fraction"]
            excess = np.moveaxis(o[:, :, sweep] - o[:, :, plain, None], 1, -1)
            out[f"tau__{budget}__{init}"] = _bands(excess, "mean")
        for i, each in enumerate(map(float, config["lrs"])):
            di = data[init][each]
            out[f"history__{init}__lr{i}"] = _bands(
                np.moveaxis(di["outside_history"], 2, -1), "mean"
            )
            out[f"drift__{init}__lr{i}"] = drift_table(config, di)
    return out


def analyse(config: dict, tasks: list[dict], results: list[dict], seed: np.random.SeedSequence):
    """Arrays behind the figures, the claims and diagnostics (plain fit error, run count)."""
    data = collect(config, tasks, results)
    claims = claims_of(config, data, seed)
    arrays = {
        "sizes": np.asarray(config["sizes"], dtype=float),
        "taus": np.asarray(config["taus"], dtype=float),
        "lrs": np.asarray(config["lrs"], dtype=float),
        "drift_ends": np.asarray(drift_ends(config), dtype=float),
        "checkpoints": data["checkpoints"].astype(float),
    }
    arrays |= intervals(config, data)
    lr = float(config["lr"])
    key = budget_key(config)
    for init in config["inits"]:
        d = data[init][lr]
        for k in MEASURES:
            arrays[f"judged__{k}__{init}"] = d[key][k]
        arrays[f"positions__{init}"] = d["positions"][key]
        for k in ("x_last", "fit_history", "settled_at"):
            arrays[f"{k}__{init}"] = d[k]
    col = variant_index(config, PLAIN)
    var = model.TARGET_VARIANCE[config["target"]]
    plain = {
        init: (np.mean(data[init][lr][key]["fit_error"][:, :, col], axis=1) / var).tolist()
        for init in config["inits"]
    }
    n_core = len(COMBINATIONS) * len(config["sizes"]) * int(config["seeds"])
    n_trained = sum(np.asarray(r["settled__fit_error"]).size for r in results)
    diagnostics = {
        "plain_relative_fit_error": plain,
        "runs_per_reading": n_core,
        "runs_trained": int(n_trained),
        "settled_share": {
            init: {
                f"{float(each):g}": float(np.mean(data[init][float(each)]["settled_at"] >= 0))
                for each in config["lrs"]
            }
            for init in config["inits"]
        },
    }
    return arrays, claims, diagnostics
