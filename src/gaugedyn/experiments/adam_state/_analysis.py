"""Findings and measurements of ``shared_representation`` from its stored results.

Every finding's criterion is the paper's pre-specified one and is fixed here before any run;
its verdict comes from the rule of the catalogue (`gaugedyn.stats.RULES`) that its declared
measure chooses (`._protocol.FINDING_MEASURES`) on the per-seed values (a seed's value is
its mean over the mirrored directions): a contrast claimed above or below a threshold (``> 0.05``,
``> 0``, ``< 0``) by the paired rule of its kind (``paired_median`` for a measure of any shape,
``paired_difference`` for a symmetric one, ``paired_sign`` for a mostly tied one: the
switch rates), a contrast claimed inside ``+-m`` (reset, exchange
``m``, heads, endpoints; the weight-history control's ``+-0.01``) by the band rule of its kind
(``median_band``, ``equivalence``).

Every finding is judged under every *reading* (`gaugedyn.harness.judged()`): each
acquisition meaning with its own chosen set-up (`._selection.reading_picks()`: per-sample label
observation and per-step label masking both qualify in the declared family), and, where the
finding reads specialization, both readouts (`._model.READOUTS`: the heads and a linear
probe on the representation); a reading is named ``{meaning}/{readout}`` (``rate/heads``), the
whole family's choice with the heads primary. The verdict is "depends on the reading" when the
readings disagree; ``tolerance.by_acquisition`` gives each meaning's own verdict (its readouts
combined). The weight-history control's findings are judged only under the meanings where its
endpoints are matched to the constant route's (both ``r_f`` and ``r_o`` by the heads, inside
``+-tolerance`` by ``equivalence``). Table 2's and the switching findings are also judged at
every declared pulse strength (``tolerance.by_strength``: the dose-response).
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
from typing import Any

import numpy as np

from ... import stats
from ...harness import Claim, judged
from . import _calibration as sc
from ._protocol import DOSE_PULSES, FINDING_MEASURES, PAPER, PAPER_VALUE, STRENGTHS
from ._selection import reading_picks

SUFFIX = {"heads": "", "probe": "_probe"}
SEP = "|"
"""Result names of a reading's arrays: ``{meaning}|{name}`` (`SharedRepresentation._run()`)."""


def split_readings(results: dict) -> dict[str, dict]:
    """``{meaning: {name: value}}`` from a run's results keyed ``{meaning}|{name}``."""
    out: dict[str, dict] = {}
    for key, value in results.items():
        if SEP in key:
            m, name = key.split(SEP, 1)
            out.setdefault(m, {})[name] = value
    return out


def _seedwise(x) -> np.ndarray:
    """A seed's value: the mean over its directions (``[S, K] -> [S]``)."""
    x = np.asarray(x, dtype=float)
    return x.mean(axis=-1) if x.ndim > 1 else x


def by_acquisition(js: dict) -> dict[str, str]:
    """Each acquisition meaning's own verdict: its readings (``{meaning}/{readout}``, or the
    meaning alone for a readout-free finding) combined (`gaugedyn.stats.combine_readings()`)."""
    groups: dict[str, dict] = {}
    for name, j in js.items():
        groups.setdefault(name.partition("/")[0], {})[name] = j
    return {m: stats.combine_readings(g)["verdict"] for m, g in groups.items()}


class Builder:
    """Collects findings and measurements with the run's seed-derived generators."""

    def __init__(
        self,
        config: dict,
        results: dict,
        seed: np.random.SeedSequence,
        unresolved: str = "",
        modes: dict[str, str] | None = None,
    ):
        """``results``: ``{meaning: that reading's results}``, the primary meaning first;
        ``modes``: each meaning's evaluation distribution."""
        self.c, self.R, self.seed = config, results, seed
        self.meanings = list(results)
        self.primary = self.meanings[0]
        self.r = results[self.primary]
        self.modes = modes or {}
        self.claims: list[Claim] = []
        self.table: dict[str, list[float]] = {}
        self.unresolved = unresolved

    def readings(self, fn, meanings=None, readouts=tuple(SUFFIX)) -> dict:
        """``{"{meaning}/{readout}": fn(results, readout)}`` over the meanings and readouts."""
        return {
            f"{m}/{ro}": fn(self.R[m], ro)
            for m in (self.meanings if meanings is None else meanings)
            for ro in readouts
        }

    def rng(self, label: str):
        """A generator from the run's analysis seed and ``label``."""
        return stats.generator(self.seed, "shared_representation", label)

    def pair(
        self, key: str, other: str | None = None, readout: str = "heads", r: dict | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-seed ``(x, y)`` of the route contrast of condition ``key`` under ``readout``
        (``x`` the acquisition-formed route, ``y`` the other), or of its change from ``other``
        (``x`` the contrast of ``key``, ``y`` that of ``other``), in the results ``r`` (default:
        the primary reading's)."""
        r = self.r if r is None else r
        sfx = SUFFIX[readout]
        a, b = _seedwise(r[f"{key}_a{sfx}"]), _seedwise(r[f"{key}_b{sfx}"])
        if other is None:
            return a, b
        return a - b, (_seedwise(r[f"{other}_a{sfx}"]) - _seedwise(r[f"{other}_b{sfx}"]))

    def contrast(
        self, key: str, other: str | None = None, readout: str = "heads"
    ) -> stats.Interval:
        """A measured contrast (no decision rule): paired seed-bootstrap interval."""
        x, y = self.pair(key, other, readout)
        name = (key if other is None else f"{key}-{other}") + SUFFIX[readout]
        iv = stats.mean_difference_ci(x, y, rng=self.rng(name))
        self.table[name] = [*iv]
        return iv

    @staticmethod
    def measure_of(id_: str, paper_value: float | None = None) -> stats.Measure:
        """The declared measure of finding ``id_`` (`._protocol.FINDING_MEASURES`), its
        power placed at ``paper_value`` where the paper gives one."""
        return stats.measure_of(FINDING_MEASURES, f"shared_representation.{id_}").at(paper_value)

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
        unresolved: str = "",
        extra: dict | None = None,
    ) -> None:
        """A finding on per-seed ``pairs = {reading: (x, y)}`` (the first reading primary):
        ``x - y`` inside ``(-thr, thr)`` (``equivalence``), else ``x - y`` against ``thr``, by
        the rule its declared measure chooses (`._protocol.FINDING_MEASURES`); every
        reading judged by the same rule. ``unresolved`` (or the run's own reason) leaves it
        UNRESOLVED with that reason; ``extra`` goes into ``tolerance``, beside each acquisition
        meaning's own verdict (``by_acquisition``)."""
        fid = f"shared_representation.{id_}"
        measure = self.measure_of(id_, paper_value)
        js = {
            name: self._judge(p, thr, direction, equivalence, measure, f"{fid} {name}")
            for name, p in pairs.items()
        }
        j = next(iter(js.values()))
        if table is not None:
            for name, jj in js.items():
                m, _, ro = name.partition("/")
                if m == self.primary:
                    self.table[table + SUFFIX.get(ro, "")] = [jj.estimate, jj.low, jj.high]
        claim = f"inside +-{thr:g}" if equivalence else f"{direction} {thr:g}"
        expected = f"{claim} (paper: {paper})"
        extra = {"paper": paper, "paper_value": paper_value, **(extra or {})}
        unresolved = self.unresolved or unresolved
        own = {m: "UNRESOLVED" if unresolved else v for m, v in by_acquisition(js).items()}
        extra["by_acquisition"] = extra.get("by_acquisition", {}) | own
        if unresolved:
            self.claims.append(
                Claim(
                    id=fid,
                    statement=f"UNRESOLVED ({unresolved}): " + text,
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
                        "reason": unresolved,
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
        meanings: list[str] | None = None,
        unresolved: str = "",
        extra: dict | None = None,
    ) -> None:
        """`add()` on the contrast of ``key`` (or its change from ``other``), read by the
        heads and by the probe under every acquisition reading (or ``meanings``)."""
        name = key if other is None else f"{key}-{other}"
        pairs = self.readings(lambda r, ro: self.pair(key, other, ro, r), meanings)
        if not pairs:  # no meaning qualifies: the primary's numbers, reported unresolved
            pairs = self.readings(lambda r, ro: self.pair(key, other, ro, r), [self.primary])
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
            unresolved=unresolved,
            extra=extra,
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


def _endpoints(b: Builder) -> None:
    tol = b.c["tolerance"]
    for side, name in (("f", "favoured"), ("o", "opposed")):
        pairs = {
            f"{m}/{ro}": (
                b.R[m][f"end_{b.modes.get(m, 'common')}_a_{side}{sfx}"],
                b.R[m][f"end_{b.modes.get(m, 'common')}_u_{side}{sfx}"],
            )
            for m in b.meanings
            for ro, sfx in SUFFIX.items()
        }
        b.add(
            f"endpoints.{name}",
            f"endpoint matching (Table 2's seeds): route difference in "
            f"the {name} target's readout precision r_{side} at the formation endpoint "
            f"(each set-up's evaluation distribution) lies inside +-{tol:g}",
            pairs,
            tol,
            "<",
            PAPER["endpoints"],
            PAPER_VALUE["endpoints"],
            equivalence=True,
        )


def _table2(b: Builder) -> None:
    m = b.c["margin"]
    for kind in DOSE_PULSES:
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


def _switch_rates(r: dict, sfx: str, key: str = "t2_combined_own"):
    sw = [np.asarray(r[f"{key}_switch_{t}{sfx}"], dtype=float) for t in "ab"]
    den = [np.asarray(r[f"{key}_specialized_{t}{sfx}"], dtype=float) for t in "ab"]
    keep = (den[0].sum(-1) > 0) & (den[1].sum(-1) > 0)
    rate = tuple(s.sum(-1)[keep] / d.sum(-1)[keep] for s, d in zip(sw, den))
    return sw, den, keep, rate


def _switch(b: Builder) -> None:
    """Switching among checkpoints specialized before the pulse (the denominator reported):
    per seed, switched / specialized over its directions; seeds where either route has no
    specialized checkpoint drop out of the paired comparison, judged by the sign of each
    seed's difference with ties dropped (the declared ``tied`` measure's ``paired_sign``)."""
    per = b.readings(lambda r, ro: _switch_rates(r, SUFFIX[ro]))
    keep = per[f"{b.primary}/heads"][2]
    b.add(
        "switch.rate_difference",
        "among checkpoints specialized before the pulse, the more "
        "precisely readable target switches within the pulse more often in acquisition-formed "
        "than in update-formed checkpoints (per seed, the two routes' switch rates; the seeds "
        "whose rates differ favour the acquisition-formed route more often than not: the "
        f"paired sign test, ties dropped; {b.primary}/heads: {int(keep.sum())} of {keep.size} "
        "seeds have specialized checkpoints in both routes)",
        {ro: v[3] for ro, v in per.items()},
        0.0,
        ">",
        PAPER["switch"],
        PAPER_VALUE["switch"],
    )
    for ro in SUFFIX:
        sw, den, _, _ = per[f"{b.primary}/{ro}"]
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


def control_matched(b: Builder) -> dict[str, bool]:
    """Per acquisition meaning, whether the weight-history control ends formation matched to
    the constant route: ``r_f`` and ``r_o`` by the heads (the calibration's readout of
    matching) both inside ``+-tolerance``, each judged as its finding
    ``table4.control_endpoints.*`` judges the heads reading (its declared measure's rule, the
    same draw), as the main routes' endpoints."""
    tol = b.c["tolerance"]
    out = {}
    for m in b.meanings:
        r = b.R[m]
        verdicts = []
        for side, name in (("f", "favoured"), ("o", "opposed")):
            id_ = f"table4.control_endpoints.{name}"
            pair = (r[f"ctl_end_a_{side}"], r[f"ctl_end_v_{side}"])
            label = f"shared_representation.{id_} {m}/heads"
            j = b._judge(pair, tol, "<", True, b.measure_of(id_, PAPER_VALUE["endpoints"]), label)
            verdicts.append(j.verdict)
        out[m] = all(v == "HELD" for v in verdicts)
    return out


def _control_endpoints(b: Builder) -> None:
    tol = b.c["tolerance"]
    for side, name in (("f", "favoured"), ("o", "opposed")):
        pairs = b.readings(
            lambda r, ro, side=side: (
                r[f"ctl_end_a_{side}{SUFFIX[ro]}"],
                r[f"ctl_end_v_{side}{SUFFIX[ro]}"],
            )
        )
        b.add(
            f"table4.control_endpoints.{name}",
            "weight-history control matched (Table 4's seeds): constant minus variable "
            f"loss-weight history, the {name} target's readout precision r_{side} at the "
            f"formation endpoint lies inside +-{tol:g}",
            pairs,
            tol,
            "<",
            PAPER["endpoints"],
            PAPER_VALUE["endpoints"],
            equivalence=True,
        )


def _table4(b: Builder) -> None:
    m = b.c["margin"]
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
        "table4.own",
        "own Adam state, combined pulse: the route contrast on Table 4's seeds is above 0 "
        "(the reference whose sign exchanging v reverses; Table 3's reversal criterion)",
        "t4_own",
        0.0,
        ">",
        "t4_own",
    )
    b.judge_contrast(
        "table4.exchange_v",
        "exchanging v reverses the route contrast (interval below 0)",
        "iv_xv",
        0.0,
        "<",
        "xv",
    )
    _control(b)
    b.measure(
        "table4.reset", "route contrast with Adam reset (Table 4's seeds)", b.contrast("iv_reset")
    )


def _control(b: Builder) -> None:
    """The weight-history control: its endpoints, then its findings where it is matched."""
    cm = b.c["control_margin"]
    _control_endpoints(b)
    matched = control_matched(b)
    ok = [k for k, v in matched.items() if v]
    gate: dict[str, Any] = {
        "meanings": ok,
        "unresolved": ""
        if ok
        else "the weight-history control's endpoints are not matched to the constant route's "
        f"(control_period = {b.c['control_period']})",
        "extra": {
            "control_matched": matched,
            "control_period": b.c["control_period"],
            "by_acquisition": {k: "UNRESOLVED" for k, v in matched.items() if not v},
        },
    }
    b.judge_contrast(
        "table4.control_own",
        "equal-mean weight-history control: constant minus "
        "variable loss-weight history at fixed acquisition, own state, contrast "
        "above 0 (judged where the control is matched)",
        "ctl_own",
        0.0,
        ">",
        "ctl_own",
        **gate,
    )
    b.judge_contrast(
        "table4.control_exchange_v",
        "equal-mean weight-history control with v exchanged: contrast below 0",
        "ctl_xv",
        0.0,
        "<",
        "ctl_xv",
        **gate,
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
        **gate,
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
        **gate,
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
    pairs = b.readings(
        lambda rr, ro: (
            _seedwise(rr[f"t6_acq_projected{SUFFIX[ro]}"]),
            _seedwise(rr[f"t6_acq_native{SUFFIX[ro]}"]),
        )
    )
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
    cancel = np.asarray(r["t2_form_cancel"])
    vs = {m: np.asarray(b.R[m]["t2_form_v_final"]).sum(axis=0) for m in b.meanings}
    cs = {m: np.asarray(b.R[m]["t2_form_cancel"]) for m in b.meanings}
    b.add(
        "formation.encoder_v",
        "formation: the acquisition-formed route ends with smaller "
        "encoder second moments (sum over the two encoder layers of the mean v per parameter) "
        "than the update-formed route: acquisition minus update < 0 (readout-free: one reading "
        "per acquisition meaning)",
        {m: (v[:, 0], v[:, 1]) for m, v in vs.items()},
        0.0,
        "<",
        PAPER["form_v"],
        None,
    )
    b.add(
        "formation.cancellation",
        "formation: the acquisition-formed route accumulates "
        "stronger cancellation between task gradients: -C/S acquisition minus update > 0",
        {m: (c[:, 0], c[:, 1]) for m, c in cs.items()},
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


def _dose(b: Builder) -> dict:
    """The dose-response on Table 2's seeds: per acquisition meaning, declared strength, pulse
    kind, route and readout, the specialization lost (mean and 95% t interval over seeds) and,
    for the combined pulse, the switch count among checkpoints specialized before it (Wilson
    interval); the Table 2 and switching findings' verdicts at every strength go into their
    claims (``tolerance.by_strength``)."""
    names = [s for s in STRENGTHS if f"dose_{s}_combined_own_a" in b.r]
    if not names:
        return {}
    lost = np.full((len(b.meanings), len(names), len(DOSE_PULSES), 2, 2, 3), np.nan)
    switch = np.full((len(b.meanings), len(names), 2, 2, 3), np.nan)
    for i, m in enumerate(b.meanings):
        r = b.R[m]
        for j, st in enumerate(names):
            for k, kind in enumerate(DOSE_PULSES):
                for t, tag in enumerate("ab"):
                    for q, sfx in enumerate(SUFFIX.values()):
                        x = _seedwise(r[f"dose_{st}_{kind}_own_{tag}{sfx}"])
                        lost[i, j, k, t, q] = list(stats.mean_ci(x))
            for q, sfx in enumerate(SUFFIX.values()):
                sw, den, _, _ = _switch_rates(r, sfx, f"dose_{st}_combined_own")
                for t in range(2):
                    n = int(den[t].sum())
                    switch[i, j, t, q] = list(stats.proportion_ci(int(sw[t].sum()), max(n, 1)))
    by: dict[str, dict[str, str]] = {}
    m_ = b.c["margin"]
    for st in names:
        for kind in DOSE_PULSES:
            for state, thr, eq in (("own", 0.05, False), ("reset", m_, True)):
                key = f"dose_{st}_{kind}_{state}"
                fid = f"table2.{'inherited' if state == 'own' else 'reset'}.{kind}"
                ms = b.measure_of(fid)
                js = b.readings(lambda r, ro, key=key: b.pair(key, None, ro, r))
                js = {
                    k: b._judge(p, thr, "<" if eq else ">", eq, ms, f"{fid} {k} {st}")
                    for k, p in js.items()
                }
                by.setdefault(fid, {})[st] = stats.combine_readings(js)["verdict"]
        rates = b.readings(
            lambda r, ro, st=st: _switch_rates(r, SUFFIX[ro], f"dose_{st}_combined_own")[3]
        )
        ms = b.measure_of("switch.rate_difference")
        js = {
            k: b._judge(p, 0.0, ">", False, ms, f"switch.rate_difference {k} {st}")
            for k, p in rates.items()
        }
        by.setdefault("switch.rate_difference", {})[st] = stats.combine_readings(js)["verdict"]
    for c in b.claims:
        fid = c.id.removeprefix("shared_representation.")
        if fid in by and isinstance(c.tolerance, dict):
            c.tolerance["by_strength"] = (
                dict.fromkeys(by[fid], "UNRESOLVED") if b.unresolved else by[fid]
            )
    return {
        "dose_strengths": np.array(names),
        "dose_meanings": np.array(b.meanings),
        "dose_lost": lost,
        "dose_switch": switch,
        "dose_verdict_ids": np.array(sorted(by)),
        "dose_verdicts": np.array([[by[f][st] for st in names] for f in sorted(by)]),
    }


def merge(results: list[dict]) -> dict:
    """One result from the tasks' (one per table, or one for all): arrays side by side, each
    reading's intervention records joined, the calibration (the same in every task) once."""
    out: dict = {}
    records: dict = {}
    for r in results:
        out |= {k: v for k, v in r.items() if k != "records"}
        for meaning, recs in json.loads(str(r["records"])).items():
            records.setdefault(meaning, {}).update(recs)
    out["records"] = json.dumps(records)
    return out


def _unresolved_reason(cal: dict) -> str:
    if cal.get("choice"):
        return ""
    return (
        "no candidate of the family has every defining property: "
        + ", ".join(sorted({c["acquisition"] for c in cal["candidates"]}))
        + " acquisition, d_Z in "
        + str(sorted({c["d_Z"] for c in cal["candidates"]}))
        + ", lr in "
        + str(sorted({c["lr"] for c in cal["candidates"]}))
        + " tried"
    )


def _strength_source(config: dict, row: dict) -> str:
    if config.get("pulse", "auto") != "auto":
        return ", fixed by the configuration"
    if not row.get("dose"):
        return ", the earlier protocol's: the stored calibration carries no dose fractions"
    return ", by the dose rule"


def analyse(config: dict, results: dict, seed: np.random.SeedSequence):
    """``(arrays, claims, diagnostics)`` of one run (see the module docstring)."""
    cal = json.loads(str(results["calibration"]))
    cal.setdefault("source", "calibrate")
    picks = reading_picks(cal)
    rows = {c["name"]: c for c in cal["candidates"]}
    chosen = rows[cal["measured"]]
    unresolved = _unresolved_reason(cal)
    by_meaning = split_readings(results)
    modes = {m: rows[p["measured"]]["eval"] for m, p in picks.items()}
    b = Builder(config, {m: by_meaning[m] for m in picks}, seed, unresolved, modes)
    strengths = {
        m: (p["strength"] if config.get("pulse", "auto") == "auto" else config["pulse"])
        for m, p in picks.items()
    }
    b.claims.append(
        Claim(
            id="shared_representation.setup",
            statement="set-up of this run: "
            + sc.describe(cal)
            + "; readings: "
            + ", ".join(
                f"{m} acquisition ({p['measured']}, w* = {p['w_star']:g}, primary pulse "
                f"{strengths[m]}{_strength_source(config, rows[p['measured']])})"
                for m, p in picks.items()
            ),
            measured=cal["measured"],
            expected="a candidate with every defining property",
            tolerance=None,
            passed=True,
            kind="measurement",
        )
    )
    _endpoints(b)
    _switch(b)
    _table2(b)
    _table4(b)
    _pattern(b)
    _table5(b)
    _table6(b)
    arrays = _horizon(b) | _formation(b) | _dose(b)
    names = sorted(b.table)
    arrays |= {
        "contrast_names": np.array(names),
        "contrasts": np.array([b.table[n] for n in names]),
    }
    r = b.r
    mode = modes[b.primary]
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
        "readings": {
            m: {"candidate": p["measured"], "w_star": p["w_star"], "strength": strengths[m]}
            | {"dose_fractions": rows[p["measured"]].get("dose")}
            for m, p in picks.items()
        },
        "endpoint_means": ends,
        "unresolved": unresolved or None,
        "interventions": json.loads(str(results["records"])),
    }
    return arrays, b.claims, diag
