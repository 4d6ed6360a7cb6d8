"""Analysis of the ``prototypes`` experiment (its findings' protocol is in
``derivations/prototypes.md`` and ``docs/prototypes.md``).

Every finding is judged by a rule of the verdict-rule catalogue (`gaugedyn.stats.RULES`)
through `gaugedyn.harness.judged()`, under its primary reading (the four approaches the
abstract names, the fixed step budget, the nominal ``lambda`` and ``tau``) and under each
documented alternative reading (the eight-mask comparison set, the settled budget, every
plausible ``lambda`` and ``tau``); all verdicts are stored and a finding whose verdict changes
across readings says "depends on the reading".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import stats
from ...harness import Claim, judged
from . import _model as model
from ._protocol import (
    BUDGETS,
    COMBINATIONS,
    CONVERGED,
    COV,
    EXPULSION_MARGIN,
    FINDING_MEASURES,
    FIT_TOLERANCE,
    MEASURES,
    OV,
    PLAIN,
    SEP,
    variant_index,
)


def collect(config: dict, tasks: list[dict], results: list[dict]) -> dict:
    """Stack the tasks into ``{init: {budget: {measure: (n_sizes, S, V)}, ...}}`` plus the
    stored extras (``settled_at`` ``(n_sizes, S, V)``, ``outside_history`` ``(n_sizes, K, S, V)``
    padded with ``nan`` after a task stopped early, ``checkpoints`` ``(K,)``)."""
    sizes = [int(n) for n in config["sizes"]]
    by = {(t["n"], t["init"]): r for t, r in zip(tasks, results)}
    k = int(config["cap"]) // int(config["window"]) + 1
    out: dict[str, Any] = {}
    for init in config["inits"]:
        rows = [by[(n, init)] for n in sizes]
        d: dict[str, Any] = {
            b: {
                m: np.stack([np.asarray(r[f"{b}__{m}"], dtype=float) for r in rows])
                for m in MEASURES
            }
            for b in BUDGETS
        }
        d["fit_history"] = np.stack([np.asarray(r["fit_history"], dtype=float) for r in rows])
        d["positions"] = np.asarray(rows[-1]["fixed__prototypes"], dtype=float)
        d["x_last"] = np.asarray(rows[-1]["x"], dtype=float)
        d["settled_at"] = np.stack([np.asarray(r["settled_at"], dtype=float) for r in rows])
        hist = np.full((len(sizes), k, *d["settled_at"].shape[1:]), np.nan)
        for i, r in enumerate(rows):
            h = np.asarray(r["outside_history"], dtype=float)
            hist[i, : h.shape[0]] = h
        d["outside_history"] = hist
        out[init] = d
    out["checkpoints"] = np.arange(k) * int(config["window"])
    return out


def _g(v) -> str:
    return f"{float(v):g}"


class Judge:
    """Builds the findings of one run from the collected measures."""

    def __init__(self, config: dict, data: dict, root: np.random.SeedSequence):
        self.config, self.data, self.root = config, data, root
        self.sizes = [int(n) for n in config["sizes"]]
        self.lam, self.tau = float(config["weight"]), float(config["tau"])
        self.lams = [float(w) for w in config["weights"]]
        self.taus = [float(t) for t in config["nominal_taus"]]

    def col(self, mask, cov=None, lam=None, tau=None) -> int:
        """The column of ``mask`` at ``lambda = lam`` and ``tau`` (nominal when ``None``)."""
        mask = tuple(mask)
        lam = self.lam if lam is None or mask == PLAIN else float(lam)
        tau = self.tau if tau is None or not mask[1] else float(tau)
        if lam == self.lam and tau == self.tau:
            return variant_index(self.config, mask, cov)
        if lam == self.lam and mask == SEP:
            return variant_index(self.config, mask, None, tau=tau)
        if tau == self.tau:
            return variant_index(self.config, mask, cov, weight=lam)
        raise KeyError((mask, cov, lam, tau))

    def measure(self, init: str, budget: str, name: str) -> np.ndarray:
        return self.data[init][budget][name]

    def diff(self, init, budget, name, a, b) -> np.ndarray:
        """``(S, n_sizes)`` per seed ``measure[a] - measure[b]`` (columns ``a``, ``b``)."""
        m = self.measure(init, budget, name)
        return (m[:, :, a] - m[:, :, b]).T

    def pairs(self, init, budget, name, bit: int, cov: str) -> np.ndarray:
        """``(S, n_sizes)``: the all-mask reading of one loss's effect, the mean over the four
        masks without loss ``bit`` (0 coverage, 1 separation, 2 overlap) of ``measure[mask with
        it] - measure[mask]`` (coverage reading ``cov`` where a mask has coverage; nominal
        ``lambda`` and ``tau``)."""
        out = []
        for m in (m for m in COMBINATIONS if m[bit] == 0):
            on = tuple(1 if i == bit else v for i, v in enumerate(m))
            out.append(self.diff(init, budget, name, self.col(on, cov), self.col(m, cov)))
        return np.mean(out, axis=0)

    def all_masks(self, init, name, bit: int, reduce: bool = False) -> dict:
        """The all-mask readings of one loss's effect, per coverage reading and budget (the mean
        over N per seed with ``reduce``)."""
        out = {}
        for cov in self.config["coverages"] if bit != 0 else ():
            for b in BUDGETS:
                v = self.pairs(init, b, name, bit, cov)
                out[f"four pairs (coverage {cov}), {self.budget_name(b)}"] = (
                    v.mean(axis=1) if reduce else v
                )
        return out

    @staticmethod
    def budget_name(budget: str) -> str:
        return "fixed budget" if budget == "fixed" else "settled"

    def settings(self, sep: bool) -> list[tuple[str, float, float]]:
        """``(words, lambda, tau)`` of every reading of the nominal settings, nominal first:
        each plausible ``lambda`` at the nominal ``tau``, and (``sep``) each plausible ``tau``
        at the nominal ``lambda``."""
        out = [
            (
                f"lambda={_g(self.lam)}" + (f", tau={_g(self.tau)}" if sep else ""),
                self.lam,
                self.tau,
            )
        ]
        out += [
            (f"lambda={_g(w)}" + (f", tau={_g(self.tau)}" if sep else ""), w, self.tau)
            for w in self.lams
            if w != self.lam
        ]
        if sep:
            out += [
                (f"lambda={_g(self.lam)}, tau={_g(t)}", self.lam, t)
                for t in self.taus
                if t != self.tau
            ]
        return out

    def readings(
        self,
        fid: str,
        values,
        rule: str,
        threshold: float,
        direction: str,
        sep: bool,
        extra: dict | None = None,
    ) -> tuple[dict, dict]:
        """Judge ``values(budget, lam, tau)`` (per-seed values, or ``None`` when the reading
        does not exist) under every budget and nominal-setting reading, plus each
        ``extra[name] = (budget, values)``; returns ``(judgements, per-reading medians)``. A
        randomised rule's draws come from the run's analysis seed, the finding ``fid`` and the
        reading."""
        out = {}
        for budget in BUDGETS:
            for words, lam, tau in self.settings(sep):
                try:
                    v = values(budget, lam, tau)
                except KeyError:
                    continue
                out[f"{self.budget_name(budget)}, {words}"] = v
        for name, v in (extra or {}).items():
            out[name] = v
        judgements = {
            k: stats.judge(
                rule,
                v,
                threshold=threshold,
                direction=direction,
                rng=stats.generator(self.root, fid, k),
            )
            for k, v in out.items()
        }
        return judgements, out

    def finding(
        self,
        id: str,
        statement: str,
        values,
        form: str,
        threshold: float,
        direction: str,
        *,
        sep: bool = False,
        extra=None,
        cells: str | None = None,
    ) -> Claim:
        """The finding ``id`` judged under every reading by the rule its declared measure
        chooses for a claim of ``form`` (`._protocol.FINDING_MEASURES`)."""
        measure = stats.measure_of(FINDING_MEASURES, id)
        rule = measure.rule(form)
        js, vals = self.readings(id, values, rule, threshold, direction, sep, extra)
        primary = next(iter(js))
        v = np.asarray(vals[primary], dtype=float)
        sign = 1.0 if direction == ">" else -1.0
        summary = {
            "primary_reading": primary,
            "mean": np.nanmean(v, axis=0).tolist(),
            "median": np.nanmedian(v, axis=0).tolist(),
            "share_on_claimed_side": float(np.mean(sign * (v - threshold) > 0)),
        }
        if cells:
            summary["cells_are"] = cells
        summary["reading_estimates"] = {k: j.estimate for k, j in js.items()}
        return judged(
            id,
            statement,
            js[primary],
            measure=measure,
            readings=js,
            extra=summary,
        )

    # -- findings ---------------------------------------------------------------------------

    def coverage_lowest_error(self, init: str, cov: str) -> Claim:
        def named(budget, lam, tau):
            c = self.col(COV, cov, lam)
            return np.hstack(
                [
                    self.diff(init, budget, "reconstruction_error", self.col(k, cov, lam, tau), c)
                    for k in (PLAIN, SEP, OV)
                ]
            )

        def every(budget):
            c = self.col(COV, cov)
            return np.hstack(
                [
                    self.diff(init, budget, "reconstruction_error", self.col(k, cov), c)
                    for k in COMBINATIONS
                    if k != COV
                ]
            )

        extra = {f"all 8 masks, {self.budget_name(b)}": every(b) for b in BUDGETS}
        n = len(self.sizes)
        return self.finding(
            f"coverage_lowest_error[init={init},coverage={cov}]",
            "coverage-only gives the lowest reconstruction error at every N, against the "
            "approaches the abstract names (plain fit, separation, overlap): the median paired "
            f"difference err_k - err_cov > 0 in every cell (N x k, {n} x 3; errors are "
            "long-tailed, judged by their medians); second reading: against all seven other "
            "masks",
            named,
            "every_cell",
            0.0,
            ">",
            sep=True,
            extra=extra,
            cells="size-major: N x (plain, sep, ov)",
        )

    def coverage_usage(self, init: str, cov: str, usage: str) -> Claim:
        def values(budget, lam, tau):
            return self.diff(
                init, budget, f"usage_{usage}", self.col(COV, cov, lam), self.col(PLAIN)
            ).mean(axis=1)

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
            extra={
                f"four pairs, {self.budget_name(b)}": self.pairs(
                    init, b, f"usage_{usage}", 0, cov
                ).mean(axis=1)
                for b in BUDGETS
            },
        )

    def overlap_harmful(self, init: str) -> Claim:
        def values(budget, lam, tau):
            return self.diff(
                init, budget, "reconstruction_error", self.col(OV, lam=lam), self.col(PLAIN)
            )

        return self.finding(
            f"overlap_harmful[init={init}]",
            "overlap is systematically harmful: overlap-only reconstructs worse than the plain "
            "fit at every N, judged on the median paired difference err_ov - err_plain per N "
            "(the error is heavy-tailed; means stored beside medians); second reading: the "
            "mean over the four pairs (a mask with overlap, the same without)",
            values,
            "every_cell",
            0.0,
            ">",
            cells="N",
            extra=self.all_masks(init, "reconstruction_error", 2),
        )

    def separation_mixed(self, init: str) -> Claim:
        def values(budget, lam, tau):
            return self.diff(
                init,
                budget,
                "reconstruction_error",
                self.col(SEP, lam=lam, tau=tau),
                self.col(PLAIN),
            )

        claim = self.finding(
            f"separation_mixed[init={init}]",
            "separation has mixed effects, not overlap's systematic harm: at some N the median "
            "paired difference err_sep - err_plain is below 0 (some_cell_median, Holm over N); "
            "'worse at some N' is stored beside it; second reading: the mean over the four "
            "pairs (a mask with separation, the same without)",
            values,
            "some_cell",
            0.0,
            "<",
            sep=True,
            cells="N",
            extra=self.all_masks(init, "reconstruction_error", 1),
        )
        worse = stats.judge(
            stats.measure_of(FINDING_MEASURES, claim.id).rule("some_cell"),
            values("fixed", self.lam, self.tau),
            threshold=0.0,
            direction=">",
            rng=stats.generator(self.root, claim.id, "worse at some N"),
        )
        claim.tolerance["worse_at_some_N"] = worse.verdict
        return claim

    def overlap_fits(self, init: str) -> Claim:
        var = model.TARGET_VARIANCE[self.config["target"]]

        def named(budget, lam, tau):
            return (
                self.diff(init, budget, "fit_error", self.col(OV, lam=lam), self.col(PLAIN)) / var
            )

        def pairs(budget, cov):
            masks = [m for m in COMBINATIONS if m[2] == 0]
            return (
                np.mean(
                    [
                        self.diff(
                            init,
                            budget,
                            "fit_error",
                            self.col((m[0], m[1], 1), cov),
                            self.col(m, cov),
                        )
                        for m in masks
                    ],
                    axis=0,
                )
                / var
            )

        extra = {
            f"four pairs (coverage {cov}), {self.budget_name(b)}": pairs(b, cov)
            for cov in self.config["coverages"]
            for b in BUDGETS
        }
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

    def overlap_fit_ratio(self, init: str, cov: str) -> Claim:
        masks = [m for m in COMBINATIONS if m[2] == 0]
        fit = self.measure(init, "fixed", "fit_error")
        num = np.mean([fit[:, :, self.col((m[0], m[1], 1), cov)] for m in masks], axis=(0, 1))
        den = np.mean([fit[:, :, self.col(m, cov)] for m in masks], axis=(0, 1))
        rng = stats.generator(self.root, "ratio", init, cov)
        iv = stats.ratio_ci(num, den, rng=rng)
        return Claim(
            id=f"overlap_fit_ratio[init={init},coverage={cov}]",
            statement="mean fit error of overlap-active runs over that of their "
            "overlap-free counterparts (fixed budget, pooled over N and pairs)",
            measured=iv.estimate,
            expected=None,
            tolerance=None,
            passed=True,
            kind="measurement",
            interval=iv.as_list(),
        )

    def overlap_expels(self, init: str) -> Claim:
        def values(budget, lam, tau):
            return self.diff(
                init, budget, "outside_fraction", self.col(OV, lam=lam), self.col(PLAIN)
            ).mean(axis=1)

        return self.finding(
            f"overlap_expels[init={init}]",
            "overlap pushes prototypes outside the data's hull at the nominal choice: the mean "
            "over seeds of (mean over N of out_ov - out_plain) > 0; second reading: the mean "
            "over the four pairs (a mask with overlap, the same without)",
            values,
            "threshold",
            0.0,
            ">",
            extra=self.all_masks(init, "outside_fraction", 2, reduce=True),
        )

    def coverage_keeps_inside(self, init: str, cov: str) -> Claim:
        def named(budget, lam, tau):
            return self.diff(
                init, budget, "outside_fraction", self.col(COV, cov, lam), self.col(PLAIN)
            ).mean(axis=1)

        def pairs(budget):
            masks = [m for m in COMBINATIONS if m[0] == 0]
            return np.mean(
                [
                    self.diff(
                        init,
                        budget,
                        "outside_fraction",
                        self.col((1, m[1], m[2]), cov),
                        self.col(m),
                    )
                    for m in masks
                ],
                axis=(0, 2),
            )

        extra = {f"four pairs, {self.budget_name(b)}": pairs(b) for b in BUDGETS}
        return self.finding(
            f"coverage_keeps_inside[init={init},coverage={cov}]",
            "coverage keeps prototypes inside the hull: the mean over seeds of (mean over N of "
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

        def values(budget, lam, tau):
            return self.diff(
                init, budget, "outside_fraction", self.col(SEP, lam=lam, tau=tau), self.col(PLAIN)
            )

        return self.finding(
            f"separation_no_expulsion_at_nominal_tau[init={init}]",
            "separation does not expel at the nominal temperature: at every N, the mean excess "
            f"out_sep - out_plain is below {m:g} (every_cell), under each plausible nominal "
            "tau and lambda; second reading: the mean over the four pairs (a mask with "
            "separation, the same without)",
            values,
            "every_cell",
            m,
            "<",
            sep=True,
            cells="N",
            extra=self.all_masks(init, "outside_fraction", 1),
        )

    def separation_expels_large_tau(self, init: str) -> Claim:
        m, big = EXPULSION_MARGIN, max(float(t) for t in self.config["taus"])

        def values(budget, lam, tau):
            if lam != self.lam or tau != self.tau:
                raise KeyError(lam)
            return self.diff(
                init,
                budget,
                "outside_fraction",
                variant_index(self.config, SEP, None, tau=big),
                self.col(PLAIN),
            ).mean(axis=1)

        return self.finding(
            f"separation_expels_at_large_tau[init={init}]",
            f"separation expels at large temperature: at tau = {big:g}, the mean over seeds of "
            f"(mean over N of out_sep - out_plain) > {m:g} (the tau sweep runs on the "
            "separation-only mask, so this finding has no all-mask reading)",
            values,
            "threshold",
            m,
            ">",
        )


def plain_fit(config: dict, data: dict, col, init: str) -> Claim:
    """The plain fit's worst mean relative fit error over N at the fixed budget: a check for the
    ``inside`` initialisation (the budget is chosen for it), a measurement for ``broad``."""
    fit = data[init]["fixed"]["fit_error"][:, :, col(PLAIN)]
    rel = np.mean(fit, axis=1) / model.TARGET_VARIANCE[config["target"]]
    i = int(np.argmax(rel))
    worst = float(rel[i])
    text = (
        f"init={init}: the plain fit's mean over seeds of fit_error / var(y) at the fixed "
        f"budget, worst over N (at N = {config['sizes'][i]})"
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


def settled_share(config: dict, data: dict, init: str) -> Claim:
    """The share of runs that settled before the cap (a measurement)."""
    s = data[init]["settled_at"]
    share = float(np.mean(s >= 0))
    return Claim(
        id=f"settled_share[init={init}]",
        statement=f"init={init}: share of runs whose largest prototype displacement per "
        f"{config['window']} steps fell below {config['settle_tolerance']:g} within "
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
    out = []
    for init in config["inits"]:
        out += [
            plain_fit(config, data, j.col, init),
            settled_share(config, data, init),
            j.overlap_harmful(init),
            j.overlap_expels(init),
            j.overlap_fits(init),
            j.separation_mixed(init),
            j.separation_no_expulsion(init),
            j.separation_expels_large_tau(init),
        ]
        for cov in config["coverages"]:
            out += [
                j.coverage_lowest_error(init, cov),
                j.coverage_keeps_inside(init, cov),
                j.overlap_fit_ratio(init, cov),
            ]
            out += [j.coverage_usage(init, cov, u) for u in ("nearest", "argmax")]
    return out


def _bands(x: np.ndarray, center: str) -> np.ndarray:
    """``(..., 3)``: centre (mean or median) and 95% interval over the last axis (seeds): the t
    interval of the mean, or the distribution-free interval of the median."""
    with np.errstate(invalid="ignore", divide="ignore"):
        b = (stats.t_bounds if center == "mean" else stats.median_bounds)(x, 0.975)
    return np.stack([b.estimate, b.lower, b.upper], axis=-1)


def intervals(config: dict, data: dict) -> dict[str, np.ndarray]:
    """Arrays behind the figures, per initialisation and budget: ``{center}__{measure}__{budget}
    __{init}`` of shape ``(n_sizes, V, 3)`` (centre, low, high over seeds; centre ``mean`` and
    ``median``), ``tau__{budget}__{init}`` ``(n_sizes, n_taus, 3)`` for the paired excess
    ``out_sep(tau) - out_plain`` (mean), and ``history__{init}`` ``(n_sizes, K, V, 3)`` for the
    outside fraction at each checkpoint (mean)."""
    out = {}
    plain = variant_index(config, PLAIN, None)
    sweep = [variant_index(config, SEP, None, tau=float(t)) for t in config["taus"]]
    for init in config["inits"]:
        d = data[init]
        for budget in BUDGETS:
            for m in MEASURES:
                x = np.moveaxis(d[budget][m], 1, -1)  # (n_sizes, V, S)
                for center in ("mean", "median"):
                    out[f"{center}__{m}__{budget}__{init}"] = _bands(x, center)
            o = d[budget]["outside_fraction"]
            excess = np.moveaxis(o[:, :, sweep] - o[:, :, plain, None], 1, -1)
            out[f"tau__{budget}__{init}"] = _bands(excess, "mean")
        out[f"history__{init}"] = _bands(np.moveaxis(d["outside_history"], 2, -1), "mean")
    return out


def analyse(config: dict, tasks: list[dict], results: list[dict], seed: np.random.SeedSequence):
    """Arrays behind the figures, the claims and diagnostics (plain fit error, run count)."""
    data = collect(config, tasks, results)
    claims = claims_of(config, data, seed)
    arrays = {
        "sizes": np.asarray(config["sizes"], dtype=float),
        "taus": np.asarray(config["taus"], dtype=float),
        "checkpoints": data["checkpoints"].astype(float),
    }
    arrays |= intervals(config, data)
    for init in config["inits"]:
        d = data[init]
        for b in BUDGETS:
            for k in MEASURES:
                arrays[f"{b}__{k}__{init}"] = d[b][k]
        for k in ("positions", "x_last", "fit_history", "settled_at"):
            arrays[f"{k}__{init}"] = d[k]
    col = variant_index(config, PLAIN, None)
    var = model.TARGET_VARIANCE[config["target"]]
    plain = {
        init: (np.mean(data[init]["fixed"]["fit_error"][:, :, col], axis=1) / var).tolist()
        for init in config["inits"]
    }
    n_core = len(COMBINATIONS) * len(config["sizes"]) * int(config["seeds"])
    n_trained = sum(np.asarray(r["fixed__fit_error"]).size for r in results)
    diagnostics = {
        "plain_relative_fit_error": plain,
        "runs_per_reading": n_core,
        "runs_trained": int(n_trained),
        "settled_share": {
            init: float(np.mean(data[init]["settled_at"] >= 0)) for init in config["inits"]
        },
    }
    return arrays, claims, diagnostics
