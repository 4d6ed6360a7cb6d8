"""Findings and measurements of ``shared_representation`` from its stored results.

Every finding's criterion is the paper's pre-specified one and is fixed here before any run;
its verdict comes from a rule of the catalogue (`gaugedyn.stats.RULES`) on the per-seed
values (a seed's value is its mean over the mirrored directions):

- a contrast claimed above or below a threshold (``> 0.05``, ``> 0``, ``< 0``):
  ``paired_difference``, the 95% Student t interval of the mean over seeds of ``x - y`` (the
  two routes, or a condition's contrast and its reference condition's, on the same seed);
- a contrast claimed inside ``+-m`` (reset, exchange ``m``, heads, endpoints; the weight-history
  control's ``+-0.01``): ``equivalence`` (two one-sided tests at 2.5%: HELD when the 95% t
  interval of the mean difference lies inside ``(-m, m)``, NOT HELD when it lies wholly outside).

Every finding that reads specialization is judged under both readouts (`._model.READOUTS`:
the heads, primary, and a linear probe on the representation) as *readings*
(`gaugedyn.harness.judged()`): its verdict is "depends on the reading" when they disagree.
Every table is judged on its own confirmatory seeds (`._protocol.TABLES`). When the
calibration found no candidate with every defining property, each finding is UNRESOLVED with
that reason (its numbers are still reported), never judged on a set-up without them.

``paper_value`` is the paper's estimate of the same difference (`._protocol.PAPER_VALUE`,
from the numbers in `._protocol.PAPER`); a finding's ``power`` is its rule's probability of HELD there for the
seeds used. Measurements (the paper gives them no decision rule) keep their paired
seed-bootstrap intervals (`gaugedyn.stats.mean_difference_ci()`).
"""

from __future__ import annotations

import json

import numpy as np

from ... import stats
from ...harness import Claim, judged
from . import _calibration as sc
from ._protocol import FINDING_MEASURES, PAPER, PAPER_VALUE

SUFFIX = {"heads": "", "probe": "_probe"}


def _seedwise(x) -> np.ndarray:
    """A seed's value: the mean over its directions (``[S, K] -> [S]``)."""
    x = np.asarray(x, dtype=float)
    return x.mean(axis=-1) if x.ndim > 1 else x


class Builder:
    """Collects findings and measurements with the run's seed-derived generators."""

    def __init__(
        self, config: dict, results: dict, seed: np.random.SeedSequence, unresolved: str = ""
    ):
        self.c, self.r, self.seed = config, results, seed
        self.claims: list[Claim] = []
        self.table: dict[str, list[float]] = {}
        self.unresolved = unresolved

    def rng(self, label: str):
        """A generator from the run's analysis seed and ``label``."""
        return stats.generator(self.seed, "shared_representation", label)

    def pair(
        self, key: str, other: str | None = None, readout: str = "heads"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-seed ``(x, y)`` of the route contrast of condition ``key`` under ``readout``
        (``x`` the acquisition-formed route, ``y`` the other), or of its change from ``other``
        (``x`` the contrast of ``key``, ``y`` that of ``other``)."""
        sfx = SUFFIX[readout]
        a, b = _seedwise(self.r[f"{key}_a{sfx}"]), _seedwise(self.r[f"{key}_b{sfx}"])
        if other is None:
            return a, b
        return a - b, (_seedwise(self.r[f"{other}_a{sfx}"]) - _seedwise(self.r[f"{other}_b{sfx}"]))

    def contrast(
        self, key: str, other: str | None = None, readout: str = "heads"
    ) -> stats.Interval:
        """A measured contrast (no decision rule): paired seed-bootstrap interval."""
        x, y = self.pair(key, other, readout)
        name = (key if other is None else f"{key}-{other}") + SUFFIX[readout]
        iv = stats.mean_difference_ci(x, y, rng=self.rng(name))
        self.table[name] = [*iv]
        return iv

    def _judge(self, pair, thr: float, direction: str, equivalence: bool, measure, label: str):
        x, y = (np.asarray(v, dtype=float) for v in pair)
        rng = self.rng(label)  # a randomised rule's draw (the median rules)
        if equivalence:
            return stats.judge(measure.rule("inside"), x - y, threshold=(-thr, thr), rng=rng)
        return stats.judge(
            measure.rule("paired"), x, y, threshold=thr, direction=direction, rng=rng
        )

    def add(
        self,
        id_: str,
        text: str,
        pairs: dict,
        thr: float,
        direction: str,
        paper: str,
        paper_value: float | None,
        equivalence: bool = False,
        table: str | None = None,
    ) -> None:
        """A finding on per-seed ``pairs = {reading: (x, y)}`` (the first reading primary):
        ``x - y`` inside ``(-thr, thr)`` (``equivalence``), else ``x - y`` against ``thr``, by
        the rule its declared measure chooses (`._protocol.FINDING_MEASURES`: ``equivalence`` or
        ``paired_difference`` for a symmetric one); every reading judged by the same rule."""
        fid = f"shared_representation.{id_}"
        measure = stats.measure_of(FINDING_MEASURES, fid).at(paper_value)
        js = {
            name: self._judge(p, thr, direction, equivalence, measure, f"{fid} {name}")
            for name, p in pairs.items()
        }
        j = next(iter(js.values()))
        if table is not None:
            for name, jj in js.items():
                self.table[table + SUFFIX.get(name, "")] = [jj.estimate, jj.low, jj.high]
        claim = f"inside +-{thr:g}" if equivalence else f"{direction} {thr:g}"
        expected = f"{claim} (paper: {paper})"
        extra = {"paper": paper, "paper_value": paper_value}
        if self.unresolved:
            self.claims.append(
                Claim(
                    id=fid,
                    statement=f"UNRESOLVED ({self.unresolved}): " + text,
                    measured=j.estimate,
                    expected=expected,
                    passed=False,
                    kind="finding",
                    verdict="UNRESOLVED",
                    interval=[j.low, j.high],
                    rule=j.rule,
                    rule_text=j.words,
                    tolerance={
                        "threshold": j.threshold,
                        "n": j.n,
                        "reason": self.unresolved,
                        **extra,
                        "readings_if_judged": {k: v.verdict for k, v in js.items()},
                    },
                )
            )
            return
        self.claims.append(
            judged(
                fid,
                text,
                j,
                measure=measure,
                readings=js if len(js) > 1 else None,
                expected=expected,
                extra=extra,
            )
        )

    def judge_contrast(
        self,
        id_: str,
        text: str,
        key: str,
        thr: float,
        direction: str,
        paper_key: str,
        other: str | None = None,
        equivalence: bool = False,
    ) -> None:
        """`add()` on the contrast of ``key`` (or its change from ``other``), read by the
        heads and by the probe."""
        name = key if other is None else f"{key}-{other}"
        pairs = {ro: self.pair(key, other, ro) for ro in SUFFIX}
        self.add(
            id_,
            text,
            pairs,
            thr,
            direction,
            PAPER[paper_key],
            PAPER_VALUE[paper_key],
            equivalence,
            table=name,
        )

    def measure(self, id_: str, text: str, iv: stats.Interval, paper: str = "") -> None:
        self.claims.append(
            Claim(
                id=f"shared_representation.{id_}",
                statement=text,
                measured=float(iv.estimate),
                expected=paper or "-",
                tolerance=None,
                passed=True,
                kind="measurement",
                interval=iv.as_list(),
            )
        )


def _endpoints(b: Builder, mode: str) -> None:
    r, tol = b.r, b.c["tolerance"]
    for side, name in (("f", "favoured"), ("o", "opposed")):
        pairs = {
            ro: (r[f"end_{mode}_a_{side}{sfx}"], r[f"end_{mode}_u_{side}{sfx}"])
            for ro, sfx in SUFFIX.items()
        }
        b.add(
            f"endpoints.{name}",
            f"endpoint matching (Table 2's seeds): route difference in "
            f"the {name} target's readout precision r_{side} at the formation endpoint "
            f"({mode} evaluation distribution) lies inside +-{tol:g}",
            pairs,
            tol,
            "<",
            PAPER["endpoints"],
            PAPER_VALUE["endpoints"],
            equivalence=True,
        )


def _table2(b: Builder) -> None:
    m = b.c["margin"]
    for kind in ("acquisition", "update", "combined"):
        b.judge_contrast(
            f"table2.inherited.{kind}",
            f"{kind} pulse, inherited Adam state: "
            "acquisition-formed minus update-formed specialization lost after the "
            "pulse exceeds +0.05",
            f"t2_{kind}_own",
            0.05,
            ">",
            f"t2_{kind}_own",
        )
        b.judge_contrast(
            f"table2.reset.{kind}",
            f"{kind} pulse, Adam state and step reset: the route contrast lies inside +-{m:g}",
            f"t2_{kind}_reset",
            m,
            "<",
            f"t2_{kind}_reset",
            equivalence=True,
        )


def _switch_rates(b: Builder, sfx: str):
    r = b.r
    sw = [np.asarray(r[f"t2_combined_own_switch_{t}{sfx}"], dtype=float) for t in "ab"]
    den = [np.asarray(r[f"t2_combined_own_specialized_{t}{sfx}"], dtype=float) for t in "ab"]
    keep = (den[0].sum(-1) > 0) & (den[1].sum(-1) > 0)
    rate = tuple(s.sum(-1)[keep] / d.sum(-1)[keep] for s, d in zip(sw, den))
    return sw, den, keep, rate


def _switch(b: Builder) -> None:
    """Switching among checkpoints specialized before the pulse (the denominator reported):
    per seed, switched / specialized over its directions; seeds where either route has no
    specialized checkpoint drop out of the paired comparison."""
    per = {ro: _switch_rates(b, sfx) for ro, sfx in SUFFIX.items()}
    keep = per["heads"][2]
    b.add(
        "switch.rate_difference",
        "among checkpoints specialized before the pulse, the more "
        "precisely readable target switches within the pulse more often in acquisition-formed "
        "than in update-formed checkpoints (paired per-seed switch-rate difference > 0; "
        f"heads: {int(keep.sum())} of {keep.size} seeds have specialized checkpoints in both "
        "routes)",
        {ro: v[3] for ro, v in per.items()},
        0.0,
        ">",
        PAPER["switch"],
        PAPER_VALUE["switch"],
    )
    for ro, (sw, den, _, _) in per.items():
        for tag, s, d in (("acquisition", sw[0], den[0]), ("update", sw[1], den[1])):
            n = int(d.sum())
            b.measure(
                f"switch.rate.{tag}{SUFFIX[ro]}",
                f"switch rate of {tag}-formed "
                f"checkpoints read by the {ro}: {int(s.sum())} switched of {n} "
                f"specialized before the pulse ({d.size} checkpoints; Wilson interval)",
                stats.proportion_ci(int(s.sum()), max(n, 1)),
                PAPER["switch"],
            )


def _table4(b: Builder) -> None:
    m, cm = b.c["margin"], b.c["control_margin"]
    b.judge_contrast(
        "table4.exchange_m",
        f"exchanging m changes the combined-pulse route "
        f"contrast by less than the margin +-{m:g} (Table 4's seeds)",
        "iv_xm",
        m,
        "<",
        "xm",
        other="t4_own",
        equivalence=True,
    )
    b.judge_contrast(
        "table4.exchange_v",
        "exchanging v reverses the route contrast (interval below 0)",
        "iv_xv",
        0.0,
        "<",
        "xv",
    )
    b.judge_contrast(
        "table4.control_own",
        "equal-mean weight-history control: constant minus "
        "variable loss-weight history at fixed acquisition, own state, contrast "
        "above 0",
        "ctl_own",
        0.0,
        ">",
        "ctl_own",
    )
    b.judge_contrast(
        "table4.control_exchange_v",
        "equal-mean weight-history control with v exchanged: contrast below 0",
        "ctl_xv",
        0.0,
        "<",
        "ctl_xv",
    )
    b.judge_contrast(
        "table4.control_exchange_m",
        f"weight-history control: exchanging m "
        f"changes the control contrast by less than +-{cm:g} (Figure 2b's margin)",
        "ctl_xm",
        cm,
        "<",
        "ctl_xm",
        other="ctl_own",
        equivalence=True,
    )
    b.judge_contrast(
        "table4.control_reset",
        f"weight-history control with Adam reset: the "
        f"contrast lies inside +-{cm:g} (Figure 2b's margin)",
        "ctl_reset",
        cm,
        "<",
        "ctl_reset",
        equivalence=True,
    )
    b.measure(
        "table4.reset", "route contrast with Adam reset (Table 4's seeds)", b.contrast("iv_reset")
    )


def _pattern(b: Builder) -> None:
    b.judge_contrast(
        "pattern.common_scale",
        "common-scale pattern effect: at equalised mean "
        "adaptive scale a_v, the route contrast minus the contrast with v exchanged "
        "is above 0 (own seeds)",
        "pattern_eq",
        0.0,
        ">",
        "pattern",
        other="pattern_eq+xv",
    )
    for key, text in (
        ("scal", "v scalarised per tensor"),
        ("eq", "a_v equalised"),
        ("scal+eq", "v scalarised and a_v equalised"),
    ):
        b.measure(f"pattern.{key}", f"route contrast with {text}", b.contrast(f"pattern_{key}"))


def _table5(b: Builder) -> None:
    m = b.c["margin"]
    b.judge_contrast(
        "table5.first_layer_carries_most",
        "exchanging the first encoder layer's v "
        "moves the contrast further than exchanging the second's: "
        "contrast(second) - contrast(first) > 0 (Table 5's seeds)",
        "t5_xv:enc1",
        0.0,
        ">",
        "enc",
        other="t5_xv:enc0",
    )
    b.judge_contrast(
        "table5.heads_change_little",
        f"exchanging both heads' v changes the contrast by less than +-{m:g}",
        "t5_xv:heads",
        m,
        "<",
        "heads",
        other="t5_own",
        equivalence=True,
    )
    b.judge_contrast(
        "table5.equal_movement",
        "with every update rescaled to the routes' common "
        "norm (equal movement), the contrast stays above 0",
        "t5_move",
        0.0,
        ">",
        "move",
    )
    b.measure(
        "table5.all_parameters",
        "route contrast with every parameter's v exchanged",
        b.contrast("t5_xv"),
    )


def _table6(b: Builder) -> None:
    r = b.r
    pairs = {
        ro: (_seedwise(r[f"t6_acq_projected{sfx}"]), _seedwise(r[f"t6_acq_native{sfx}"]))
        for ro, sfx in SUFFIX.items()
    }
    b.add(
        "table6.projected_v",
        "in the native acquisition recipient (weights, m, step fixed), "
        "the projected-history v lowers the specialization lost: projected minus native < 0 "
        "(Table 6's seeds, acquisition -C/S reported beside it)",
        pairs,
        0.0,
        "<",
        PAPER["t6"],
        PAPER_VALUE["t6"],
    )
    iv = stats.mean_difference_ci(
        _seedwise(r["t6_proj_projected"]), _seedwise(r["t6_proj_native"]), rng=b.rng("t6p")
    )
    b.measure("table6.projected_recipient", "projected recipient: projected minus native v", iv)
    c = np.asarray(r["t6_form_cancel"])
    b.measure(
        "table6.cancellation",
        "-C/S of the acquisition route on Table 6's seeds (the "
        "projection acts only where gradients conflict)",
        stats.mean_ci(c[:, 0]),
    )


def _horizon(b: Builder) -> dict:
    r = b.r
    marks = np.asarray(r["horizon_marks"])
    out = {"horizon_marks": marks}
    for name in ("inherited", "fresh", "sgd"):
        a, u = np.asarray(r[f"hz_{name}_a"]), np.asarray(r[f"hz_{name}_b"])
        rows = [
            stats.mean_difference_ci(_seedwise(a[i]), _seedwise(u[i]), rng=b.rng(f"hz-{name}-{i}"))
            for i in range(len(marks))
        ]
        out[f"horizon_{name}"] = np.array([list(x) for x in rows])
        b.measure(
            f"horizon.{name}",
            f"continued combined opposition, {name}: route contrast "
            f"after {int(marks[-1])} updates (no decision rule in the paper)",
            rows[-1],
        )
    return out


def _formation(b: Builder) -> dict:
    """Figure 5 on Table 2's seeds: the acquisition route's summed encoder mean ``v`` is smaller
    and its ``-C/S`` larger than the update route's (the paper's direction), both judged."""
    r = b.r
    vf, cancel = np.asarray(r["t2_form_v_final"]), np.asarray(r["t2_form_cancel"])
    v = vf.sum(axis=0)  # [S, route]: encoder second-moment sum over the two layers
    b.add(
        "formation.encoder_v",
        "formation: the acquisition-formed route ends with smaller "
        "encoder second moments (sum over the two encoder layers of the mean v per parameter) "
        "than the update-formed route: acquisition minus update < 0",
        {"formation (readout-free)": (v[:, 0], v[:, 1])},
        0.0,
        "<",
        PAPER["form_v"],
        None,
    )
    b.add(
        "formation.cancellation",
        "formation: the acquisition-formed route accumulates "
        "stronger cancellation between task gradients: -C/S acquisition minus update > 0",
        {"formation (readout-free)": (cancel[:, 0], cancel[:, 1])},
        0.0,
        ">",
        PAPER["form_cancel"],
        None,
    )
    for i, role in enumerate(("acquisition", "update")):
        b.measure(
            f"formation.cancellation.{role}",
            f"-C/S of the {role}-formed route",
            stats.mean_ci(cancel[:, i]),
        )
    return {
        "form_t": np.asarray(r["t2_form_t"]),
        "form_v": np.asarray(r["t2_form_v"]),
        "form_v_ancestor": np.asarray(r["t2_form_v_ancestor"]),
        "form_cancel": np.array(
            [list(stats.mean_ci(cancel[:, i])) for i in range(cancel.shape[1])]
        ),
    }


def merge(results: list[dict]) -> dict:
    """One result from the tasks' (one per table, or one for all): arrays side by side, the
    intervention records joined, the calibration (the same in every task) once."""
    out: dict = {}
    records: dict = {}
    for r in results:
        out |= {k: v for k, v in r.items() if k != "records"}
        records |= json.loads(str(r["records"]))
    out["records"] = json.dumps(records)
    return out


def analyse(config: dict, results: dict, seed: np.random.SeedSequence):
    """``(arrays, claims, diagnostics)`` of one run (see the module docstring)."""
    cal = json.loads(str(results["calibration"]))
    cal.setdefault("source", "calibrate")
    chosen = next(c for c in cal["candidates"] if c["name"] == cal["measured"])
    unresolved = (
        ""
        if cal.get("choice")
        else (
            "no candidate of the family has every defining property: "
            + ", ".join(sorted({c["acquisition"] for c in cal["candidates"]}))
            + " acquisition, d_Z in "
            + str(sorted({c["d_Z"] for c in cal["candidates"]}))
            + ", lr in "
            + str(sorted({c["lr"] for c in cal["candidates"]}))
            + " tried"
        )
    )
    b = Builder(config, results, seed, unresolved)
    mode = chosen["eval"]
    b.claims.append(
        Claim(
            id="shared_representation.setup",
            statement="set-up of this run: " + sc.describe(cal),
            measured=cal["measured"],
            expected="a candidate with every defining property",
            tolerance=None,
            passed=True,
            kind="measurement",
        )
    )
    _endpoints(b, mode)
    _switch(b)
    _table2(b)
    _table4(b)
    _pattern(b)
    _table5(b)
    _table6(b)
    arrays = _horizon(b) | _formation(b)
    names = sorted(b.table)
    arrays |= {
        "contrast_names": np.array(names),
        "contrasts": np.array([b.table[n] for n in names]),
    }
    r = results
    ends = {
        f"{m}_{tag}_{side}{sfx}": float(np.mean(r[f"end_{m}_{tag}_{side}{sfx}"]))
        for m in ("own", "common")
        for tag in ("a", "u")
        for side in ("f", "o")
        for sfx in SUFFIX.values()
    }
    arrays |= {
        "endpoints": np.array(
            [[r[f"end_{mode}_{t}_{s}"] for s in ("f", "o")] for t in ("a", "u")], dtype=float
        ),
        "endpoints_probe": np.array(
            [[r[f"end_{mode}_{t}_{s}_probe"] for s in ("f", "o")] for t in ("a", "u")], dtype=float
        ),
    }
    diag = {
        "calibration": cal,
        "setup": sc.describe(cal),
        "chosen": chosen,
        "endpoint_means": ends,
        "unresolved": unresolved or None,
        "interventions": json.loads(str(r["records"])),
    }
    return arrays, b.claims, diag
