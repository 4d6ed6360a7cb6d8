"""Findings, measurements and figures of ``shared_representation`` from its stored arrays.

Every finding's criterion is the paper's pre-specified one and is fixed here before any run:
intervals are 95% paired seed-bootstrap intervals (:func:`gaugedyn.stats.mean_difference_ci`,
resampling seeds; a seed's value is its mean over the mirrored directions). An equivalence
criterion ("inside +-m") is judged on the interval of ``|x|``: ``[0, max(|lo|, |hi|)]`` when the
interval of ``x`` contains 0, else ``[min, max]`` of ``|lo|, |hi|``; HELD when it lies below ``m``,
NOT HELD when it lies wholly at or above ``m`` (the signed interval is recorded beside it).
"""

from __future__ import annotations

import json

import numpy as np

from ... import stats
from ...harness import Claim, finding

PAPER = {
    "switch": "67.5% of acquisition-formed vs 0% of update-formed checkpoints",
    "t2_acquisition_own": "0.1668 [0.1601, 0.1736]", "t2_update_own": "0.1510 [0.1456, 0.1562]",
    "t2_combined_own": "0.1951 [0.1880, 0.2021]", "t2_acquisition_reset": "0.0011 [-0.0010, 0.0035]",
    "t2_update_reset": "0.0120 [0.0093, 0.0149]", "t2_combined_reset": "0.0103 [0.0079, 0.0129]",
    "xm": "own 0.1968, exchange m 0.1982 [0.1912, 0.2054]",
    "xv": "-0.1265 [-0.1348, -0.1183]", "ctl_own": "0.0324 [0.0294, 0.0354]",
    "ctl_xv": "-0.0141 [-0.0176, -0.0110]",
    "pattern": "0.1028 [0.0947, 0.1109] (Table 7, beta2 0.999, 500 steps)",
    "enc": "first layer 0.0115 [0.0060, 0.0171] vs second layer 0.0611 [0.0558, 0.0665]",
    "heads": "own 0.1907, both heads 0.1911 [0.1838, 0.1978]",
    "move": "0.0303 [0.0269, 0.0338]",
    "t6": "native acquisition: native v 0.3551, projected-history v 0.3079",
}


def _seedwise(x) -> np.ndarray:
    """A seed's value: the mean over its directions (``[S, K] -> [S]``)."""
    x = np.asarray(x, dtype=float)
    return x.mean(axis=-1) if x.ndim > 1 else x


def _iv(r: dict, key_a: str, key_b: str, rng) -> stats.Interval:
    return stats.mean_difference_ci(_seedwise(r[key_a]), _seedwise(r[key_b]), rng=rng)


def absolute(iv: stats.Interval) -> stats.Interval:
    """The interval of ``|x|`` from that of ``x`` (see the module docstring)."""
    lo, hi = abs(iv.low), abs(iv.high)
    top = max(lo, hi)
    bottom = 0.0 if iv.low <= 0 <= iv.high else min(lo, hi)
    return stats.Interval(abs(iv.estimate), bottom, top)


class Builder:
    """Collects findings and measurements with the run's seed-derived generators."""

    def __init__(self, config: dict, results: dict, full: int, seed: np.random.SeedSequence):
        self.c, self.r, self.seed = config, results, seed
        self.claims: list[Claim] = []
        self.table: dict[str, list[float]] = {}
        self.note = "" if config["seeds"] >= full else (
            f"provisional ({config['seeds']} confirmatory seeds, not {full}): ")

    def rng(self, label: str):
        """A generator from the run's analysis seed and ``label``."""
        return stats.generator(self.seed, "shared_representation", label)

    def contrast(self, key: str, other: str | None = None) -> stats.Interval:
        """Route contrast of condition ``key`` (``key_a - key_b``), or its change from ``other``."""
        a, b = _seedwise(self.r[f"{key}_a"]), _seedwise(self.r[f"{key}_b"])
        x = a - b
        if other is None:
            iv = stats.mean_difference_ci(a, b, rng=self.rng(key))
        else:
            y = _seedwise(self.r[f"{other}_a"]) - _seedwise(self.r[f"{other}_b"])
            iv = stats.mean_difference_ci(x, y, rng=self.rng(key + "-" + other))
        self.table[key if other is None else f"{key}-{other}"] = [*iv]
        return iv

    def add(self, id_: str, text: str, iv: stats.Interval, thr: float, direction: str,
            paper: str, equivalence: bool = False, cells=None) -> None:
        extra = {"paper": paper}
        if equivalence:
            extra["signed_interval"] = [iv.estimate, iv.low, iv.high]
            iv = absolute(iv)
        self.claims.append(finding(f"shared_representation.{id_}", self.note + text, iv, thr,
                                   direction, expected=f"{direction} {thr:g} (paper: {paper})",
                                   cells=cells, extra=extra))

    def measure(self, id_: str, text: str, iv: stats.Interval, paper: str = "") -> None:
        self.claims.append(Claim(id=f"shared_representation.{id_}", statement=self.note + text,
                                 measured=float(iv.estimate), expected=paper or "-",
                                 tolerance=None, passed=True, kind="measurement",
                                 interval=iv.as_list()))


def _endpoints(b: Builder, mode: str) -> None:
    r, tol = b.r, b.c["tolerance"]
    for side, name in (("f", "favoured"), ("o", "opposed")):
        iv = stats.mean_difference_ci(r[f"end_{mode}_a_{side}"], r[f"end_{mode}_u_{side}"],
                                      rng=b.rng(f"end-{side}"))
        b.add(f"endpoints.{name}", f"endpoint matching: route difference in the {name} target's "
              f"readout precision r_{side} at the formation endpoint ({mode} evaluation "
              f"distribution) lies inside +-{tol:g}", iv, tol, "<",
              "all endpoint intervals inside tolerance", equivalence=True)


def _table2(b: Builder) -> None:
    m = b.c["margin"]
    for kind in ("acquisition", "update", "combined"):
        b.add(f"table2.inherited.{kind}", f"{kind} pulse, inherited Adam state: acquisition-"
              "formed minus update-formed specialization lost after the pulse exceeds +0.05",
              b.contrast(f"t2_{kind}_own"), 0.05, ">", PAPER[f"t2_{kind}_own"])
        b.add(f"table2.reset.{kind}", f"{kind} pulse, Adam state and step reset: the route "
              f"contrast lies inside +-{m:g}", b.contrast(f"t2_{kind}_reset"), m, "<",
              PAPER[f"t2_{kind}_reset"], equivalence=True)


def _switch(b: Builder) -> None:
    r = b.r
    sa, su = r["t2_combined_own_switch_a"], r["t2_combined_own_switch_b"]
    iv = stats.mean_difference_ci(_seedwise(sa), _seedwise(su), rng=b.rng("switch"))
    b.add("switch.rate_difference", "the more precisely readable target switches within the "
          "pulse more often in acquisition-formed than in update-formed checkpoints (paired "
          "per-seed switch-rate difference > 0)", iv, 0.0, ">", PAPER["switch"])
    for tag, x in (("acquisition", sa), ("update", su)):
        x = np.asarray(x)
        b.measure(f"switch.rate.{tag}", f"switch rate of {tag}-formed checkpoints (Wilson "
                  "interval over checkpoints)", stats.proportion_ci(int(x.sum()), x.size),
                  PAPER["switch"])


def _table4(b: Builder) -> None:
    m = b.c["margin"]
    own = b.contrast("t2_combined_own")
    b.add("table4.exchange_m", f"exchanging m changes the combined-pulse route contrast by "
          f"less than the margin +-{m:g} (own {own.estimate:.4f})",
          b.contrast("iv_xm", "t2_combined_own"), m, "<", PAPER["xm"], equivalence=True)
    b.add("table4.exchange_v", "exchanging v reverses the route contrast (interval below 0)",
          b.contrast("iv_xv"), 0.0, "<", PAPER["xv"])
    b.add("table4.control_own", "equal-mean weight-history control: constant minus variable "
          "loss-weight history at fixed acquisition gains, own state, contrast above 0",
          b.contrast("ctl_own"), 0.0, ">", PAPER["ctl_own"])
    b.add("table4.control_exchange_v", "equal-mean weight-history control with v exchanged: "
          "contrast below 0", b.contrast("ctl_xv"), 0.0, "<", PAPER["ctl_xv"])
    for key, text in (("ctl_xm", "exchange m"), ("ctl_reset", "reset")):
        b.measure(f"table4.control_{key[4:]}", f"weight-history control contrast, {text}",
                  b.contrast(key))


def _pattern(b: Builder) -> None:
    b.add("pattern.common_scale", "common-scale pattern effect: at equalised mean adaptive "
          "scale a_v, the route contrast minus the contrast with v exchanged is above 0",
          b.contrast("iv_eq", "iv_eq+xv"), 0.0, ">", PAPER["pattern"])
    for key, text in (("iv_scal", "v scalarised per tensor"), ("iv_eq", "a_v equalised"),
                      ("iv_scal+eq", "v scalarised and a_v equalised")):
        b.measure(f"pattern.{key[3:]}", f"route contrast with {text}", b.contrast(key))


def _table5(b: Builder) -> None:
    m = b.c["margin"]
    b.add("table5.first_layer_carries_most", "exchanging the first encoder layer's v moves the "
          "contrast further than exchanging the second's: contrast(second) - contrast(first) > 0",
          b.contrast("iv_xv:enc1", "iv_xv:enc0"), 0.0, ">", PAPER["enc"])
    b.add("table5.heads_change_little", f"exchanging both heads' v changes the contrast by less "
          f"than +-{m:g}", b.contrast("iv_xv:heads", "t2_combined_own"), m, "<", PAPER["heads"],
          equivalence=True)
    b.add("table5.equal_movement", "with every update rescaled to the routes' common norm "
          "(equal movement), the contrast stays above 0", b.contrast("iv_move"), 0.0, ">",
          PAPER["move"])


def _table6(b: Builder) -> None:
    r = b.r
    iv = stats.mean_difference_ci(_seedwise(r["t6_acq_projected"]), _seedwise(r["t6_acq_native"]),
                                  rng=b.rng("t6"))
    b.add("table6.projected_v", "in the native acquisition recipient (weights, m, step fixed), "
          "the projected-history v lowers the specialization lost: projected minus native < 0",
          iv, 0.0, "<", PAPER["t6"])
    iv = stats.mean_difference_ci(_seedwise(r["t6_proj_projected"]),
                                  _seedwise(r["t6_proj_native"]), rng=b.rng("t6p"))
    b.measure("table6.projected_recipient", "projected recipient: projected minus native v", iv)


def _horizon(b: Builder) -> dict:
    r = b.r
    marks = np.asarray(r["horizon_marks"])
    out = {"horizon_marks": marks}
    for name in ("inherited", "fresh", "sgd"):
        a, u = np.asarray(r[f"hz_{name}_a"]), np.asarray(r[f"hz_{name}_b"])
        rows = [stats.mean_difference_ci(_seedwise(a[i]), _seedwise(u[i]),
                                         rng=b.rng(f"hz-{name}-{i}")) for i in range(len(marks))]
        out[f"horizon_{name}"] = np.array([list(x) for x in rows])
        b.measure(f"horizon.{name}", f"continued combined opposition, {name}: route contrast "
                  f"after {int(marks[-1])} updates (no decision rule in the paper)", rows[-1])
    return out


def _formation(b: Builder) -> dict:
    r = b.r
    vf, cancel = np.asarray(r["form_v_final"]), np.asarray(r["form_cancel"])
    b.measure("formation.encoder_v", "first encoder layer's final mean v, acquisition minus "
              "update route (the paper links small encoder v to cancellation)",
              stats.mean_difference_ci(vf[0, :, 0], vf[0, :, 1], rng=b.rng("fv")))
    b.measure("formation.cancellation", "accumulated cancellation fraction -C/S, acquisition "
              "minus update route", stats.mean_difference_ci(cancel[:, 0], cancel[:, 1],
                                                             rng=b.rng("fc")))
    return {"form_t": np.asarray(r["form_t"]), "form_v": np.asarray(r["form_v"]),
            "form_v_ancestor": np.asarray(r["form_v_ancestor"]),
            "form_cancel": np.array([list(stats.mean_ci(cancel[:, i]))
                                     for i in range(cancel.shape[1])])}


def analyse(config: dict, results: dict, full: int, seed: np.random.SeedSequence):
    """``(arrays, claims, diagnostics)`` of one run (see the module docstring)."""
    b = Builder(config, results, full, seed)
    cal = json.loads(str(results["calibration"]))
    chosen = next(c for c in cal["candidates"] if c["name"] == cal["choice"])
    mode = chosen["eval"]
    _endpoints(b, mode)
    _switch(b)
    _table2(b)
    _table4(b)
    _pattern(b)
    _table5(b)
    _table6(b)
    arrays = _horizon(b) | _formation(b)
    names = sorted(b.table)
    arrays |= {"contrast_names": np.array(names),
               "contrasts": np.array([b.table[n] for n in names])}
    r = results
    ends = {f"{mode}_{tag}_{side}": float(np.mean(r[f"end_{mode}_{tag}_{side}"]))
            for mode in ("own", "common") for tag in ("a", "u") for side in ("f", "o")}
    arrays |= {"endpoints": np.array([[r[f"end_{mode}_{t}_{s}"] for s in ("f", "o")]
                                      for t in ("a", "u")], dtype=float)}
    diag = {"calibration": cal, "chosen": chosen, "endpoint_means": ends,
            "interventions": json.loads(str(r["records"]))}
    return arrays, b.claims, diag


ROLES = ("acquisition", "update", "variable", "projected")


def _plot_contrasts(arrays: dict, config: dict, outdir):
    from ...plotting import save_figure, subplots

    names = [str(n) for n in arrays["contrast_names"]]
    iv = np.asarray(arrays["contrasts"], dtype=float)
    fig, ax = subplots(figsize=(6.5, 0.28 * len(names) + 1.2))
    y = np.arange(len(names))
    ax.errorbar(iv[:, 0], y, xerr=[iv[:, 0] - iv[:, 1], iv[:, 2] - iv[:, 0]], fmt="o", ms=3)
    m = config["margin"]
    ax.axvspan(-m, m, color="0.85", zorder=0, label=f"+-{m:g} margin")
    ax.axvline(0.05, ls="--", color="0.4", lw=0.8, label="+0.05 (Table 2)")
    ax.set_yticks(y, names, fontsize=7)
    ax.set(xlabel="route contrast (specialization lost, A - U) or its change",
           title="pulse responses per intervention")
    ax.legend(fontsize=7)
    return save_figure(fig, outdir, "shared_representation_contrasts",
                       "Route contrast (acquisition-formed minus update-formed specialization "
                       "lost; ctl_: constant minus variable weight history) per condition, and "
                       "differences between conditions (a-b), with 95% intervals.")


def _plot_endpoints(arrays: dict, outdir):
    from ...plotting import save_figure, subplots

    e = np.asarray(arrays["endpoints"], dtype=float)  # [route, side, seed]
    fig, ax = subplots(figsize=(4.5, 3.5))
    for i, (route, color) in enumerate((("acquisition-formed", "C0"), ("update-formed", "C1"))):
        mf, mo = (stats.mean_ci(e[i, 0]), stats.mean_ci(e[i, 1]))
        ax.errorbar([mf.estimate], [mo.estimate], xerr=[[mf.estimate - mf.low],
                    [mf.high - mf.estimate]], yerr=[[mo.estimate - mo.low],
                    [mo.high - mo.estimate]], fmt="o", color=color, label=route)
        ax.plot(e[i, 0], e[i, 1], ".", color=color, alpha=0.3, ms=3)
    ax.set(xlabel="r_f (favoured target)", ylabel="r_o (opposed target)",
           title="formation endpoints")
    ax.legend(fontsize=7)
    return save_figure(fig, outdir, "shared_representation_endpoints",
                       "Readout precisions of the favoured and the opposed target at the "
                       "formation endpoint per seed (dots) and their means with 95% t intervals.")


def _plot_horizon(arrays: dict, config: dict, outdir):
    from ...plotting import save_figure, subplots

    marks = np.asarray(arrays["horizon_marks"], dtype=float)
    fig, ax = subplots(figsize=(5, 3.5))
    for name, color in (("inherited", "C0"), ("fresh", "C1"), ("sgd", "C2")):
        iv = np.asarray(arrays[f"horizon_{name}"], dtype=float)
        ax.plot(marks, iv[:, 0], "o-", color=color, label=f"{name} " + (
            "Adam" if name != "sgd" else "(calibrated SGD)"))
        ax.fill_between(marks, iv[:, 1], iv[:, 2], color=color, alpha=0.2)
    m = config["margin"]
    ax.axhspan(-m, m, color="0.85", zorder=0)
    ax.set_xscale("log")
    ax.set(xlabel="opposing updates", ylabel="route contrast", title="continued opposition")
    ax.legend(fontsize=7)
    return save_figure(fig, outdir, "shared_representation_horizon",
                       "Route contrast under continued combined opposition with inherited Adam, "
                       "fresh Adam and SGD calibrated to Adam's first update norm; bands are 95% "
                       "paired seed-bootstrap intervals; the grey band is the ten-update margin.")


def _plot_formation(arrays: dict, outdir):
    from ...plotting import save_figure, subplots

    t, v = np.asarray(arrays["form_t"]), np.asarray(arrays["form_v"])  # v: [T, layer, role]
    anc = np.asarray(arrays["form_v_ancestor"])
    fig, axes = subplots(1, 3, figsize=(11, 3.4))
    for layer in (0, 1):
        for j, role in enumerate(ROLES):
            axes[layer].semilogy(t, v[:, layer, j], color=f"C{j}", label=role)
        axes[layer].semilogy(t, anc[:, layer], "k--", lw=0.8, label="ancestor, discounted")
        axes[layer].set(xlabel="formation step", ylabel="mean v per parameter",
                        title=f"encoder layer {layer}")
    c = np.asarray(arrays["form_cancel"])
    axes[2].bar(range(len(ROLES)), c[:, 0], yerr=[c[:, 0] - c[:, 1], c[:, 2] - c[:, 0]],
                color=[f"C{j}" for j in range(len(ROLES))])
    axes[2].set_xticks(range(len(ROLES)), ROLES, fontsize=7)
    axes[2].set(ylabel="-C/S (accumulated)", title="gradient cancellation in the encoder")
    axes[0].legend(fontsize=7)
    return save_figure(fig, outdir, "shared_representation_formation",
                       "Formation-time accounting: mean second moment per encoder parameter along "
                       "each route (dashed: the shared ancestor's v discounted by beta2^t) and "
                       "the accumulated cancellation fraction -C/S between task gradients.")


def plot(arrays: dict, config: dict, outdir) -> list:
    return [_plot_contrasts(arrays, config, outdir), _plot_endpoints(arrays, outdir),
            _plot_horizon(arrays, config, outdir), _plot_formation(arrays, outdir)]
