"""Analysis and figures of the ``prototypes`` experiment (its findings' protocol is in
``derivations/prototypes.md`` and the module docstring of :mod:`.prototypes`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ... import stats
from ...harness import Claim, finding
from . import _model as model
from . import prototypes as ex

COV, SEP, OV, PLAIN = (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)


def _min_of_means(*samples, axis=-1):
    return np.min(np.stack([np.mean(s, axis=axis) for s in samples]), axis=0)


def _max_of_means(*samples, axis=-1):
    return np.max(np.stack([np.mean(s, axis=axis) for s in samples]), axis=0)


def _mean_of_means(*samples, axis=-1):
    return np.mean(np.stack([np.mean(s, axis=axis) for s in samples]), axis=0)


def collect(config: dict, tasks: list[dict], results: list[dict]) -> dict:
    """Stack the tasks into ``{init: {measure: (n_sizes, S, V)}}`` plus the stored extras."""
    sizes = [int(n) for n in config["sizes"]]
    by = {(t["n"], t["init"]): r for t, r in zip(tasks, results)}
    out = {}
    for init in config["inits"]:
        rows = [by[(n, init)] for n in sizes]
        d = {k: np.stack([np.asarray(r[k], dtype=float) for r in rows]) for k in ex.MEASURES}
        d["fit_history"] = np.stack([np.asarray(r["fit_history"], dtype=float) for r in rows])
        d["positions"] = np.asarray(rows[-1]["prototypes"], dtype=float)
        d["x_last"] = np.asarray(rows[-1]["x"], dtype=float)
        out[init] = d
    return out


class Judge:
    """Builds the findings of one run; ``root`` seeds every bootstrap (with the finding's id)."""

    def __init__(self, config: dict, data: dict, root: np.random.SeedSequence):
        self.config, self.data, self.root = config, data, root
        self.col = lambda mask, cov=None, tau=None: ex.variant_index(config, mask, cov, tau=tau)
        self.note = " [provisional (quick)]" if ex._quick(config) else ""
        self.n_sizes = len(config["sizes"])

    def claim(self, id: str, statement: str, samples: Sequence[np.ndarray], stat: Callable,
              threshold: float, direction: str, cells) -> Claim:
        iv = stats.paired_ci(samples, stat, rng=stats.generator(self.root, id))
        return finding(id, statement + self.note, iv, threshold, direction, cells=cells)

    def diffs(self, init: str, measure: str, pairs, sizes=None) -> list[np.ndarray]:
        """Per seed ``measure[with] - measure[without]`` for every size and ``(with, without)``
        column pair, in order (size-major)."""
        m = self.data[init][measure]
        sizes = range(self.n_sizes) if sizes is None else sizes
        return [m[i, :, j] - m[i, :, k] for i in sizes for j, k in pairs]

    def coverage_lowest_error(self, init: str, cov: str) -> Claim:
        c = self.col(COV, cov)
        others = [self.col(m, cov) for m in model.COMBINATIONS if m != COV]
        samples = self.diffs(init, "reconstruction_error", [(k, c) for k in others])
        return self.claim(
            f"coverage_lowest_error[init={init},coverage={cov}]",
            "coverage-only gives the lowest mean reconstruction error at every N: min over N and "
            "the other seven combinations of mean(err_other - err_cov) > 0",
            samples, _min_of_means, 0.0, ">", cells=f"{self.n_sizes} sizes x 7 combinations")

    def coverage_usage(self, init: str, cov: str, usage: str) -> Claim:
        samples = self.diffs(init, f"usage_{usage}", [(self.col(COV, cov), self.col(PLAIN))])
        return self.claim(
            f"coverage_usage_above_plain[init={init},coverage={cov},usage={usage}]",
            "coverage-only raises the prototype-usage specialization ratio over the plain fit: "
            "mean over N of mean(usage_cov - usage_plain) > 0",
            samples, _mean_of_means, 0.0, ">", cells=f"{self.n_sizes} sizes")

    def overlap_harmful(self, init: str) -> Claim:
        samples = self.diffs(init, "reconstruction_error", [(self.col(OV), self.col(PLAIN))])
        return self.claim(
            f"overlap_harmful[init={init}]",
            "overlap-only reconstructs worse than the plain fit at every N: min over N of "
            "mean(err_ov - err_plain) > 0", samples, _min_of_means, 0.0, ">",
            cells=f"{self.n_sizes} sizes")

    def overlap_pairs(self, cov: str) -> list[tuple[int, int]]:
        masks = [m for m in model.COMBINATIONS if m[2] == 0]
        return [(self.col((m[0], m[1], 1), cov), self.col(m, cov)) for m in masks]

    def overlap_fits(self, init: str, cov: str) -> Claim:
        pairs = self.overlap_pairs(cov)
        fit, var = self.data[init]["fit_error"], model.TARGET_VARIANCE[self.config["target"]]
        samples = [np.mean([(fit[i, :, j] - fit[i, :, k]) / var for j, k in pairs], axis=0)
                   for i in range(self.n_sizes)]
        return self.claim(
            f"overlap_fits_as_well[init={init},coverage={cov}]",
            "overlap-active runs fit as well as overlap-free ones: max over N of the mean over "
            f"the four pairs of (fit_with - fit_without) / var(y) < {ex.FIT_TOLERANCE:g}",
            samples, _max_of_means, ex.FIT_TOLERANCE, "<",
            cells=f"{self.n_sizes} sizes x 4 pairs")

    def overlap_fit_ratio(self, init: str, cov: str) -> Claim:
        pairs = self.overlap_pairs(cov)
        fit = self.data[init]["fit_error"]
        num = np.mean([fit[:, :, j] for j, _ in pairs], axis=(0, 1))
        den = np.mean([fit[:, :, k] for _, k in pairs], axis=(0, 1))
        iv = stats.ratio_ci(num, den, rng=stats.generator(self.root, "ratio", init, cov))
        return Claim(id=f"overlap_fit_ratio[init={init},coverage={cov}]",
                     statement="mean fit error of overlap-active runs over that of their "
                     "overlap-free counterparts (pooled over N and pairs)" + self.note,
                     measured=iv.estimate, expected=None, tolerance=None, passed=True,
                     kind="measurement", interval=iv.as_list())

    def overlap_expels(self, init: str) -> Claim:
        samples = self.diffs(init, "outside_fraction", [(self.col(OV), self.col(PLAIN))])
        return self.claim(
            f"overlap_expels[init={init}]",
            "overlap pushes prototypes outside the hull: mean over N of "
            "mean(out_ov - out_plain) > 0", samples, _mean_of_means, 0.0, ">",
            cells=f"{self.n_sizes} sizes")

    def coverage_keeps_inside(self, init: str, cov: str) -> Claim:
        masks = [m for m in model.COMBINATIONS if m[0] == 0]
        pairs = [(self.col((1, m[1], m[2]), cov), self.col(m)) for m in masks]
        samples = self.diffs(init, "outside_fraction", pairs)
        return self.claim(
            f"coverage_keeps_inside[init={init},coverage={cov}]",
            "coverage keeps prototypes inside the hull: mean over N and the four pairs of "
            "(out_with_cov - out_without) < 0", samples, _mean_of_means, 0.0, "<",
            cells=f"{self.n_sizes} sizes x 4 pairs")

    def separation_tau(self, init: str) -> Claim:
        n = int(self.config["sizes"][-1])
        taus = [float(t) for t in self.config["taus"]]
        small = [t for t in taus if t <= 1.0 / n]
        out = self.data[init]["outside_fraction"][-1]
        plain = out[:, self.col(PLAIN)]
        samples = [out[:, self.col(SEP, tau=max(taus))] - plain]
        samples += [out[:, self.col(SEP, tau=t)] - plain for t in small]
        margin = ex.EXPULSION_MARGIN

        def stat(large, *rest, axis=-1):
            worst = np.max(np.stack([np.mean(r, axis=axis) for r in rest]), axis=0)
            return np.minimum(np.mean(large, axis=axis) - margin, margin - worst)

        return self.claim(
            f"separation_large_tau_only[init={init}]",
            f"separation expels prototypes only at large tau: at N = {n}, D(tau) = "
            f"mean(out_sep(tau) - out_plain) exceeds {margin:g} at tau = {max(taus):g} and stays "
            f"below it at every tau <= 1/N ({', '.join(f'{t:g}' for t in small)}): "
            f"min(D(tau_max) - {margin:g}, {margin:g} - max D(small tau)) > 0",
            samples, stat, 0.0, ">", cells=f"N = {n}, {1 + len(small)} taus")


def plain_fit(config: dict, data: dict, col: Callable, init: str) -> Claim:
    """The plain fit's worst mean relative fit error over N: a check for the ``inside``
    initialisation (the budget is chosen for it), a measurement for ``broad`` (where few
    prototypes start in the data and a small network may lack the neurons to fit)."""
    d = data[init]
    rel = np.mean(d["fit_error"][:, :, col(PLAIN)], axis=1) / model.TARGET_VARIANCE[config["target"]]
    i = int(np.argmax(rel))
    worst = float(rel[i])
    text = (f"init={init}: the plain fit's mean over seeds of fit_error / var(y), worst over N "
            f"(at N = {config['sizes'][i]})")
    if init != "inside":
        return Claim(id=f"plain_fit_error[init={init}]", statement=text, measured=worst,
                     expected=None, tolerance=None, passed=True, kind="measurement")
    return Claim(id=f"plain_fit_converged[init={init}]",
                 statement=text + f" is below {ex.CONVERGED:g}: the budget lets the plain fit "
                 "converge", measured=worst, expected=f"< {ex.CONVERGED:g}",
                 tolerance=ex.CONVERGED, passed=bool(worst < ex.CONVERGED))


def claims_of(config: dict, data: dict, root: np.random.SeedSequence) -> list[Claim]:
    """Every claim of a run, readings in the order of the configuration."""
    j = Judge(config, data, root)
    out = []
    for init in config["inits"]:
        out += [plain_fit(config, data, j.col, init), j.overlap_harmful(init), j.overlap_expels(init), j.separation_tau(init)]
        for cov in config["coverages"]:
            out += [j.coverage_lowest_error(init, cov), j.coverage_keeps_inside(init, cov),
                    j.overlap_fits(init, cov), j.overlap_fit_ratio(init, cov)]
            out += [j.coverage_usage(init, cov, u) for u in ("nearest", "argmax")]
    return out


def intervals(config: dict, data: dict, root: np.random.SeedSequence) -> dict[str, np.ndarray]:
    """Bootstrap intervals behind the figures: ``ci__{measure}__{init}`` of shape
    ``(n_sizes, V, 3)`` (mean, low, high over seeds) and ``tau_ci__{init}`` of shape
    ``(n_sizes, n_taus, 3)`` for the paired excess ``out_sep(tau) - out_plain``."""
    out = {}
    plain = ex.variant_index(config, PLAIN, None)
    sweep = [ex.variant_index(config, SEP, None, tau=float(t)) for t in config["taus"]]
    for init, d in data.items():
        for m in ("reconstruction_error", "usage_nearest", "usage_argmax"):
            rng = stats.generator(root, "figure", m, init)
            out[f"ci__{m}__{init}"] = np.array(
                [[tuple(stats.bootstrap_ci(d[m][i, :, j], rng=rng)) for j in range(d[m].shape[2])]
                 for i in range(d[m].shape[0])])
        o = d["outside_fraction"]
        rng = stats.generator(root, "figure", "tau", init)
        out[f"tau_ci__{init}"] = np.array(
            [[tuple(stats.mean_difference_ci(o[i, :, j], o[i, :, plain], rng=rng)) for j in sweep]
             for i in range(o.shape[0])])
    return out


def analyse(config: dict, tasks: list[dict], results: list[dict], seed: np.random.SeedSequence):
    """Arrays behind the figures, the claims and diagnostics (plain fit error, run count)."""
    data = collect(config, tasks, results)
    claims = claims_of(config, data, seed)
    arrays = {"sizes": np.asarray(config["sizes"], dtype=float),
              "taus": np.asarray(config["taus"], dtype=float)}
    arrays |= intervals(config, data, seed)
    for init, d in data.items():
        for k in (*ex.MEASURES, "positions", "x_last", "fit_history"):
            arrays[f"{k}__{init}"] = d[k]
    col = ex.variant_index(config, PLAIN, None)
    var = model.TARGET_VARIANCE[config["target"]]
    plain = {init: (np.mean(d["fit_error"][:, :, col], axis=1) / var).tolist()
             for init, d in data.items()}
    n_core = len(model.COMBINATIONS) * len(config["sizes"]) * int(config["seeds"])
    n_trained = sum(np.asarray(r["fit_error"]).size for r in results)
    diagnostics = {"plain_relative_fit_error": plain, "runs_per_reading": n_core,
                   "runs_trained": int(n_trained)}
    return arrays, claims, diagnostics


def plot(arrays: dict, config: dict, outdir) -> list:
    from ._plots import plot as draw

    return draw(arrays, config, outdir)
