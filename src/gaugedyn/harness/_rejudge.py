"""``gaugedyn rejudge RUN``: every verdict of a run recomputed from its ``summary.json`` alone.

Its findings, and its checks judged by a catalogue rule (`gaugedyn.harness.checked()`, which
stores the rule, the per-seed values, the claim and the uniform draw; `recompute_check()`).

Every finding stores, for every reading it was judged under, the rule, the per-seed values, the
claim and a randomised rule's uniform draw (``tolerance.reading_detail``;
`gaugedyn.harness.judged()`). `recompute()` judges each reading again from that record
and combines the readings as the run did; a reading whose verdict or interval differs, a
finding whose verdict is not its readings', or a reading whose values were never stored is
reported by name, and the command exits 1. A finding kept from an earlier judgement because its
other readings' values were never stored is marked so in the summary
(``tolerance.judged_under``) and is listed, not failed.

`rejudge_current()` judges a published run's stored values again under the current rules
(the rule each finding's declared measure chooses, the degenerate-sample and slope conditions
of the catalogue, the power at the declared smallest effect) and records what changed and why;
a finding whose rule changed keeps its verdicts per set-up dimension (``tolerance.by_*``, judged
by the analysis on values the summary does not store) marked with the rule that judged them
(``tolerance.breakdown_judged_under``), and re-words a statement that names another location
than its rule judges ("the mean over seeds" under a median rule; `_reword()`)
(``rejudged``): ``gaugedyn rejudge RUN --current-rules --out DIR`` writes it for ``gaugedyn
publish --add DIR``.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from .._errors import InputError
from .._json import strict
from ._audit_plan import stored_readings
from ._protocol import reading_record

OLD_RULES = (
    "the verdict rules before issue 41 (its other readings' per-seed values were not stored, "
    "so it cannot be judged again from the summary; the experiment's next published run judges "
    "it under the current rules)"
)


def judge_record(rec: dict, rule: str | None = None, rng: Any = None) -> Any:
    """A stored reading judged again (by its own rule, or by ``rule``; a randomised rule with
    its stored draw, or, where none was stored because the reading was judged by another
    rule, a draw from ``rng``)."""
    name = rule or rec["rule"]
    r = stats.RULES[name]
    values = rec["per_seed"]
    if r.cells and np.size(values) == 0:  # JSON keeps no shape: no seeds of (seeds, cells)
        values = np.empty((0, 1))
    samples = values if (r.paired or r.estimator == "slope") else [values]
    threshold = rec["threshold"]
    if r.claim in ("inside", "outside"):
        threshold = tuple(threshold)
    draw = rec.get("uniform_draw") if r.randomised and name == rec["rule"] else None
    rng = rng if r.randomised and draw is None else None
    direction = None if r.claim in ("inside", "outside") else rec["direction"]
    return stats.judge(name, *samples, threshold=threshold, direction=direction, draw=draw, rng=rng)


def _close(a: Any, b: Any) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(
        np.all((np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=1e-9, atol=1e-12))
    )


def recompute(claim: dict) -> tuple[str, list[str]]:
    """``(status, problems)`` of one finding: ``"same"``, ``"differs"``, ``"missing"`` (a
    reading's values not stored) or ``"marked"`` (kept from an earlier judgement, with the
    reason in ``tolerance.judged_under``)."""
    tol = claim.get("tolerance") or {}
    records, complete = stored_readings(claim)
    if not complete:
        if tol.get("judged_under"):
            return "marked", [str(tol["judged_under"])]
        missing = sorted(set(claim.get("readings") or {}) - set(records))
        return "missing", [f"reading {m!r}: per-seed values not stored" for m in missing]
    problems, words = [], {}
    undrawn = [
        f"reading {name!r}: its uniform draw is not stored"
        for name, rec in records.items()
        if rec.get("rule") in stats.RULES
        and stats.RULES[rec["rule"]].randomised
        and rec.get("uniform_draw") is None
    ]
    if undrawn:
        return "missing", undrawn
    for name, rec in records.items():
        if rec.get("rule") not in stats.RULES:
            problems.append(f"reading {name!r}: rule {rec.get('rule')!r} is not in the catalogue")
            continue
        j = judge_record(rec)
        words[name] = j.verdict
        stored = rec.get("verdict", (claim.get("readings") or {}).get(name))
        if stored is not None and j.verdict != stored:
            problems.append(f"reading {name!r}: stored {stored}, recomputed {j.verdict}")
        if "interval" in rec and not _close(rec["interval"], [j.low, j.high]):
            problems.append(
                f"reading {name!r}: stored interval {rec['interval']}, recomputed {[j.low, j.high]}"
            )
        edge = None if j.edge_interval is None else list(j.edge_interval)
        if "edge_interval" in rec and (edge is None or not _close(rec["edge_interval"], edge)):
            problems.append(
                f"reading {name!r}: stored 97.5% interval {rec['edge_interval']}, recomputed {edge}"
            )
    if not problems:
        again = stats.combine_readings(words)
        if again["verdict"] != claim.get("verdict"):
            problems.append(
                f"verdict: stored {claim.get('verdict')}, recomputed {again['verdict']}"
            )
        stored_words = claim.get("readings") or {}
        if set(stored_words) == set(words) and stored_words != again["readings"]:
            problems.append(f"readings: stored {stored_words}, recomputed {again['readings']}")
    return ("differs" if problems else "same"), problems


def recompute_check(claim: dict) -> tuple[str, list[str]]:
    """``(status, problems)`` of one check judged by a catalogue rule
    (`gaugedyn.harness.checked()`): its stored rule, per-seed values, claim and uniform draw
    judged again; ``"same"``, ``"differs"`` (the verdict, estimate, interval, count or
    pass/fail differs from the stored one) or ``"missing"`` (a randomised rule's draw, or the
    values, not stored)."""
    tol = claim.get("tolerance") or {}
    rule = claim.get("rule")
    if rule not in stats.RULES:
        return "differs", [f"rule {rule!r} is not in the catalogue"]
    if claim.get("per_seed") is None:
        return "missing", ["per-seed values not stored"]
    if stats.RULES[rule].randomised and tol.get("uniform_draw") is None:
        return "missing", ["its uniform draw is not stored"]
    rec = {
        "rule": rule,
        "per_seed": claim["per_seed"],
        "threshold": tol.get("threshold"),
        "direction": tol.get("direction"),
        "uniform_draw": tol.get("uniform_draw"),
    }
    j = judge_record(rec)
    problems = []
    if j.verdict != tol.get("verdict"):
        problems.append(f"verdict: stored {tol.get('verdict')}, recomputed {j.verdict}")
    if "n" in tol and tol["n"] != j.n:
        problems.append(f"count: stored {tol['n']}, recomputed {j.n}")
    if not _close(claim.get("measured", math.nan), j.estimate):
        problems.append(f"estimate: stored {claim.get('measured')}, recomputed {j.estimate}")
    if "interval" in claim and not _close(claim["interval"], [j.low, j.high]):
        problems.append(f"interval: stored {claim['interval']}, recomputed {[j.low, j.high]}")
    expect = tol.get("expect", "HELD")
    passed = j.verdict == "HELD" if expect == "HELD" else j.verdict != "HELD"
    if claim.get("passed") is not passed:
        problems.append(
            f"passed: stored {claim.get('passed')}, recomputed {passed} ({j.verdict}, "
            f"expects {expect})"
        )
    return ("differs" if problems else "same"), problems


def judged_checks(summary: dict) -> list[dict]:
    """The checks of a summary judged by a rule (``rule`` recorded; `gaugedyn.harness.checked()`);
    checks that state what happened (no rule) are not judged and not listed."""
    return [c for c in summary.get("claims", []) if c.get("kind") == "check" and c.get("rule")]


def check_summary(summary: dict) -> list[tuple[str, str, list[str]]]:
    """``(id, status, problems)`` of every finding (`recompute()`) and every check judged by a
    catalogue rule (`recompute_check()`) of a summary, findings first."""
    findings = [
        (c["id"], *recompute(c)) for c in summary.get("claims", []) if c.get("kind") == "finding"
    ]
    return findings + [(c["id"], *recompute_check(c)) for c in judged_checks(summary)]


# --- judging stored values under the current rules ------------------------------------------


def _paper(claim: dict) -> float | None:
    tol = claim.get("tolerance") or {}
    m = tol.get("measure")
    if isinstance(m, dict) and m.get("paper") is not None:
        return float(m["paper"])
    v = tol.get("paper_value")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _why(old_rule: str, j: Any) -> str:
    if old_rule != j.rule:
        return f"rule {old_rule} -> {j.rule} (the finding's declared measure chooses it)"
    if j.reason:
        return j.reason
    return "the catalogue's rule changed"


def _current(experiment: str, claim: dict, changes: list[dict], seed: Any) -> dict:
    """One finding judged again under the current rules (see `rejudge_current()`); a
    rule that now takes a uniform draw takes it from ``seed`` (the run's analysis seed), the
    finding's id and the reading."""
    from ._config import resolve_experiment

    c = copy.deepcopy(claim)
    tol = c.setdefault("tolerance", {})
    measure = stats.measure_of(resolve_experiment(experiment).measures, c["id"]).at(_paper(c))
    records, complete = stored_readings(c)
    primary = _primary(c, records)
    value = measure.power_value(records[primary]["threshold"], records[primary]["direction"])
    if not complete:
        return _current_stored(c, records, primary, measure, value, changes, seed)
    new = {}
    for name, rec in records.items():
        want = measure.rule(stats.form_of(rec["rule"]))
        j = judge_record(rec, want, stats.generator(seed, "rejudge", c["id"], name))
        new[name] = j
        if j.verdict != rec.get("verdict"):
            changes.append(
                {
                    "id": c["id"],
                    "reading": name,
                    "old": rec.get("verdict"),
                    "new": j.verdict,
                    "why": _why(rec["rule"], j),
                }
            )
    j = new[primary]
    combined = stats.combine_readings(new)
    moved = [
        f"{name}: {rec['rule']} -> {new[name].rule}"
        for name, rec in records.items()
        if new[name].rule != rec["rule"]
    ]
    if moved or combined["verdict"] != c.get("verdict"):
        note = f"re-judged under the current rules ({'; '.join(moved) or 'same rule'}): "
        note += f"{j.rule} gives {j.estimate:.4g} [{j.low:.4g}, {j.high:.4g}], {j.verdict}"
        c["statement"] = f"{c.get('statement', '')} [{note}{'; ' + j.reason if j.reason else ''}]"
    if combined["verdict"] != c.get("verdict"):
        changes.append(
            {"id": c["id"], "reading": None, "old": c.get("verdict"), "new": combined["verdict"]}
        )
    old_words = c.get("rule_text")
    c |= {
        "verdict": combined["verdict"],
        "passed": combined["verdict"] == "HELD",
        "readings": combined["readings"],
        "rule": j.rule,
        "rule_text": j.words,
        "measured": j.estimate,
        "interval": [j.low, j.high],
        "per_seed": j.values,
    }
    if c.get("expected") == old_words:
        c["expected"] = j.words
    tol |= {
        "measure": measure.as_dict() | {"power_at": value},
        "primary_reading": primary,
        "reading_detail": {k: reading_record(v) for k, v in new.items()},
    }
    old_rules = sorted(
        {rec["rule"] for name, rec in records.items() if new[name].rule != rec["rule"]}
    )
    if old_rules and any(k.startswith("by_") and isinstance(v, dict) for k, v in tol.items()):
        tol["breakdown_judged_under"] = ", ".join(old_rules)  # by_* not re-judged: no values
    stored = tol.get("cells")
    names = (
        stored
        if isinstance(stored, list) and not all(isinstance(v, dict) for v in stored)
        else None
    )
    for key in ("reason", "cells", "uniform_draw"):
        tol.pop(key, None)
    for key, v in (("reason", j.reason), ("cells", j.cells), ("uniform_draw", j.draw)):
        if v is not None:
            tol[key] = v
    if names is not None:  # the analysis's names of the cells (judged()'s extra), not the rule's
        tol["cells"] = names  # records, which stay in the readings' reading_detail
    _set_power(c, stats.power_at(j, value, reps=2000).rate)
    return c


def _current_stored(
    c: dict,
    records: dict,
    primary: str,
    measure: stats.Measure,
    value: Any,
    changes: list[dict],
    seed: Any,
) -> dict:
    """A finding whose readings are not all stored: its stored primary reading judged again
    under its old rule; a verdict that would not stand is withdrawn (UNRESOLVED)."""
    tol, rec = c["tolerance"], records[primary]
    old = judge_record(rec, rng=stats.generator(seed, "rejudge", c["id"], primary))
    tol["judged_under"] = OLD_RULES
    if rec.get("verdict") is not None and old.verdict != rec["verdict"]:
        tol["judged_under"] += (
            f"; its stored reading says {old.verdict} under the current rules "
            f"({old.reason or 'the catalogue changed'}), so this verdict would not stand"
        )
        if c.get("verdict") in ("HELD", "NOT HELD"):  # no longer asserted: UNRESOLVED
            changes.append(
                {
                    "id": c["id"],
                    "reading": None,
                    "old": c["verdict"],
                    "new": "UNRESOLVED",
                    "why": f"its stored reading says {old.verdict} under the current rules",
                }
            )
            c |= {"verdict": "UNRESOLVED", "passed": False}
            tol["reason"] = old.reason or "the stored reading's verdict does not stand"
    tol["measure"] = measure.as_dict() | {"power_at": value}
    _set_power(c, stats.power_at(old, value, reps=2000).rate)
    return c


def _primary(c: dict, records: dict) -> str:
    """The reading whose estimate a finding shows: recorded as ``primary_reading``, else the
    stored reading whose values and claim are the finding's own."""
    tol = c.get("tolerance") or {}
    if tol.get("primary_reading") in records:
        return tol["primary_reading"]
    for name, rec in records.items():
        if rec.get("per_seed") == c.get("per_seed") and rec.get("threshold") == tol.get(
            "threshold"
        ):
            return name
    return next(iter(records))


_OVER_SEEDS = {"mean": "the mean over seeds", "median": "the median over seeds"}


def _reword(c: dict) -> dict | None:
    """A finding's statement made to name the location its rule judges: a statement that says
    "the mean over seeds" where every reading's rule judges the median (`Rule.center`), or the
    reverse, says the rule's instead (a statement written before its finding's rule moved).
    Returns the record of the change (id, old and new words, why), or None when the words
    already agree, the statement names neither, or the readings' rules judge different
    locations."""
    if c.get("rule") not in stats.RULES:
        return None
    rules = {c["rule"]} | {
        rec["rule"]
        for rec in ((c.get("tolerance") or {}).get("reading_detail") or {}).values()
        if isinstance(rec, dict) and rec.get("rule") in stats.RULES
    }
    centers = {stats.rule(name).center for name in rules}
    if len(centers) != 1:
        return None
    center = centers.pop()
    right = _OVER_SEEDS[center]
    wrong = next(words for key, words in _OVER_SEEDS.items() if key != center)
    statement = c.get("statement") or ""
    if wrong not in statement:
        return None
    c["statement"] = statement.replace(wrong, right)
    return {
        "id": c["id"],
        "old": wrong,
        "new": right,
        "why": f"its rule {c['rule']} judges the {center} over seeds",
    }


def _set_power(c: dict, power: float) -> None:
    c["power"] = float(power)
    c["underpowered"] = None if math.isnan(power) else bool(power < stats.UNDERPOWERED)


def rejudge_current(summary: dict, *, command: str = "", commit: str = "") -> dict:
    """``summary`` with every finding judged again from its stored values under the current
    rules: the rule its declared measure chooses (`Experiment.measures`), the
    catalogue's conditions for degenerate samples and slopes, and its power at the declared
    smallest effect on resamples of its own values. A finding whose other readings' values
    were never stored keeps its verdict, marked (``tolerance.judged_under``), with its power
    recomputed at the declared effect. A rule that now takes a uniform draw (a median rule)
    takes it from the run's analysis seed (`analysis_seed()` of its recorded seed), the
    label ``"rejudge"``, the finding's id and the reading, and stores it. The summary gains
    ``rejudged``: the date, the command,
    the code's commit, every changed verdict with why, the findings kept, and every statement
    re-worded to name the location its rule judges (`_reword()`: "the mean over seeds" under a
    median rule, or the reverse) (an earlier ``rejudged`` record moves to its ``earlier``
    list)."""
    from ._protocol import analysis_seed

    out = copy.deepcopy(summary)
    seed = analysis_seed(int(out["configuration"]["seed"]), out["experiment"])
    changes: list[dict] = []
    claims = []
    for c in out.get("claims", []):
        new = _current(out["experiment"], c, changes, seed) if c.get("kind") == "finding" else c
        claims.append(new)
    out["claims"] = claims
    reworded = [r for c in claims if c.get("kind") == "finding" and (r := _reword(c))]
    kept = [
        c["id"]
        for c in claims
        if c.get("kind") == "finding" and (c.get("tolerance") or {}).get("judged_under")
    ]
    out["rejudged"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "commit": commit,
        "rules": "verdict rules of issue 41 (measures declared per finding; degenerate "
        "samples and slopes with fewer than 6 rows UNRESOLVED; median rules' p-values from "
        "their own test; power at the declared smallest effect on resampled values)",
        "changed": changes,
        "kept_under_old_rules": kept,
        "reworded": reworded,
    }
    before = summary.get("rejudged")
    if before:  # an earlier re-judgement's record is kept, newest last
        earlier = before.get("earlier", [])
        out["rejudged"]["earlier"] = [*earlier, {k: v for k, v in before.items() if k != "earlier"}]
    return out


# --- command line ---------------------------------------------------------------------------


def register(sub) -> None:
    p = sub.add_parser(
        "rejudge",
        help="recompute every verdict of a run from its summary.json",
        description="Judge every finding of each RUN (a run folder or its summary.json) again "
        "from the rule, per-seed values, claim and uniform draw its summary stores for every "
        "reading, and every check judged by a catalogue rule from the same records, and report "
        "any difference (exit 1, naming each). With --current-rules, "
        "judge the stored values under the current rules instead and write the re-judged "
        "summary to --out, with a record of what changed and why (a statement that names "
        "the mean over seeds where its rule judges the median, or the reverse, is re-worded "
        "and listed).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="a run folder or a summary.json")
    p.add_argument(
        "--current-rules",
        action="store_true",
        help="judge the stored values under the current rules (one RUN; needs --out)",
    )
    p.add_argument("--out", metavar="DIR", help="where --current-rules writes summary.json")
    p.set_defaults(func=_main)


def _read(run: str) -> dict:
    path = Path(run)
    path = path / "summary.json" if path.is_dir() else path
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"RUN {run}: no readable summary.json ({err})") from None


def _main(args) -> int:
    summaries = [(run, _read(run)) for run in args.runs]  # every input checked first
    if args.current_rules:
        if len(summaries) != 1 or not args.out:
            raise InputError("--current-rules takes one RUN and --out DIR")
        from ..publish import code_version

        out = Path(args.out)
        if (out / "summary.json").exists():
            raise InputError(f"--out {args.out}: holds a summary.json already; choose another")
        run, summary = summaries[0]
        command = f"gaugedyn rejudge {run} --current-rules --out {args.out}"
        new = rejudge_current(
            summary, command=command, commit=code_version(Path(".")).get("commit", "")
        )
        out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(strict(new), indent=1, sort_keys=True, allow_nan=False)
        (out / "summary.json").write_text(text + "\n")
        r = new["rejudged"]
        for ch in r["changed"]:
            where = f" [{ch['reading']}]" if ch.get("reading") else ""
            print(f"{ch['id']}{where}: {ch['old']} -> {ch['new']} ({ch.get('why', 'readings')})")
        for rw in r["reworded"]:
            print(f"{rw['id']}: statement says {rw['new']!r}, not {rw['old']!r} ({rw['why']})")
        print(
            f"{len(r['changed'])} verdict change(s); {len(r['kept_under_old_rules'])} finding(s) "
            f"kept under the old rules; {len(r['reworded'])} statement(s) re-worded; wrote "
            f"{out / 'summary.json'}"
        )
        return 0
    bad = 0
    for run, summary in summaries:
        rows = check_summary(summary)
        n_checks = len(judged_checks(summary))
        found, checks = rows[: len(rows) - n_checks], rows[len(rows) - n_checks :]
        counts = {
            s: sum(r[1] == s for r in found) for s in ("same", "differs", "missing", "marked")
        }
        again = {s: sum(r[1] == s for r in checks) for s in ("same", "differs", "missing")}
        print(
            f"{run}: {len(found)} findings; {counts['same']} recompute, {counts['differs']} "
            f"differ, {counts['missing']} not stored, {counts['marked']} kept from an earlier "
            f"judgement (marked); {n_checks} checks judged by a catalogue rule; "
            f"{again['same']} recompute, {again['differs']} differ, {again['missing']} not stored"
        )
        for fid, status, problems in rows:
            if status == "same":
                continue
            stream = sys.stdout if status == "marked" else sys.stderr
            for p in problems:
                print(f"  {fid}: {status.upper()}: {p}", file=stream)
            bad += status in ("differs", "missing")
    return 1 if bad else 0
