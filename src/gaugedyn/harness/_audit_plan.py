"""The audit of the verdict rules on what the experiments use, kept as data.

`plan()` reads what the rules judge: every published finding (``results-data/*/summary.json``)
with each stored reading's rule, per-seed values and claim, its declared measure (stored with
it, or the experiment's declaration, `Experiment.measures`) and so the rule its kind
chooses; and the seed counts of every configuration (``simulations/*.toml``, full and quick).
From these come the rows:

- *named* rows: every rule a finding uses or its measure chooses, or a check on random values
  is judged by (`gaugedyn.harness.checked`), at every seed (trial, row) count and cell count
  those findings, checks and configurations use, on every named noise shape
  (`gaugedyn.stats.AUDIT_SHAPES`; Bernoulli outcomes for a proportion rule, the tie shapes
  for the sign rule), barred where the rule's kinds meet the shape;
- *resampled* rows: every stored reading of every finding, its own per-seed values resampled
  (`gaugedyn.stats._resample.Resampler`) onto, beside and beyond its threshold, under
  the rule it was judged by and, where that differs, the rule its measure chooses now; and
  every check judged by a catalogue rule other than a proportion rule (whose noise is its
  Bernoulli outcomes, the named rows), its values under its rule (reading ``"check"``);
- the rejected candidates at the ad-hoc audit's sizes.

`run_plan()` simulates them (each row from its own seed, `gaugedyn.stats.audit_seed()`
of its key, so any row recomputes alone) and returns the data ``gaugedyn audit-rules --write``
commits to `AUDIT_DATA`, with the plan's `fingerprint()`; ``docs/verdict-rules.md``
is generated from it (``tools/verdict_rules_doc.py``, ``--check`` in CI, which also refuses data
whose fingerprint no longer matches the published runs, the configurations and the
declarations).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from .._errors import InputError

AUDIT_DATA = "results-data/audit-rules/audit.json"
CHECK_READING = "check"
"""The reading name of a check's resampled row (a check is judged under one reading)."""
"""Where the committed audit lives, relative to the repository root."""
DATA = "results-data"
CONFIGS = "simulations"


def declared_measure(experiment: str, finding: dict) -> stats.Measure | None:
    """A published finding's measure: the one it stores, else its experiment's declaration
    (``None`` where neither exists)."""
    stored = (finding.get("tolerance") or {}).get("measure")
    if isinstance(stored, dict) and "kind" in stored:
        return stats.Measure.from_dict(stored)
    from ._config import resolve_experiment

    try:
        table = resolve_experiment(experiment).measures
    except InputError:
        return None
    try:
        return stats.measure_of(table, finding["id"])
    except InputError:
        return None


def stored_readings(finding: dict) -> tuple[dict[str, dict], bool]:
    """``({reading: record}, complete)``: every reading whose rule, values and claim the
    finding stores (``tolerance.reading_detail``; a finding of one reading stores it at its
    top level), and whether that is every reading it was judged under."""
    tol = finding.get("tolerance") or {}
    detail = tol.get("reading_detail")
    names = list((finding.get("readings") or {"as judged": None}).keys())
    if isinstance(detail, dict) and detail:
        out = {k: v for k, v in detail.items() if "per_seed" in v}
        return out, set(names) <= set(out)
    one = len(names) == 1
    primary = tol.get("primary_reading") or (names[0] if one else "primary (name not recorded)")
    record = {
        "rule": finding.get("rule"),
        "per_seed": finding.get("per_seed"),
        "threshold": tol.get("threshold"),
        "direction": tol.get("direction"),
        "uniform_draw": tol.get("uniform_draw"),
        "verdict": (finding.get("readings") or {}).get(primary, finding.get("verdict"))
        if one or finding.get("verdict") in ("HELD", "NOT HELD")
        else None,
    }
    return {primary: record}, one


def published(root: Path) -> list[dict]:
    """Every finding of every published run: ``{experiment, id, verdict, measure, readings,
    complete}`` (`stored_readings()`)."""
    out = []
    for path in sorted((root / DATA).glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        for c in summary.get("claims", []):
            if c.get("kind") != "finding":
                continue
            readings, complete = stored_readings(c)
            out.append(
                {
                    "experiment": summary["experiment"],
                    "id": c["id"],
                    "verdict": c.get("verdict"),
                    "measure": declared_measure(summary["experiment"], c),
                    "readings": readings,
                    "complete": complete,
                    "old_rules": bool((c.get("tolerance") or {}).get("judged_under")),
                }
            )
    return out


def published_checks(root: Path) -> list[dict]:
    """Every check of a published run judged by a catalogue rule (`gaugedyn.harness.checked`):
    ``{experiment, id, rule, values, threshold, direction}``."""
    out = []
    for path in sorted((root / DATA).glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        for c in summary.get("claims", []):
            if c.get("kind") == "check" and c.get("rule") in stats.RULES:
                tol = c.get("tolerance") or {}
                out.append(
                    {
                        "experiment": summary["experiment"],
                        "id": c["id"],
                        "rule": c["rule"],
                        "values": c.get("per_seed"),
                        "threshold": tol.get("threshold"),
                        "direction": tol.get("direction"),
                    }
                )
    return out


def _shape_of(rule: Any, values: Any) -> tuple[int, int] | None:
    """``(n, cells)`` of stored values (n: seeds, trials or rows), ``None`` when there are
    none to simulate (a deterministic value, or no values)."""
    if values is None or rule.estimator == "point":
        return None
    v = np.asarray(values, dtype=float)
    if v.size == 0:  # a reading judged on no seeds (stored as []: JSON keeps no (0, cells))
        return None
    if rule.paired or rule.estimator == "slope":
        return int(np.all(np.isfinite(v), axis=0).sum()), 1
    if rule.cells:
        return int(v.shape[0]), int(v.shape[1])
    return int(np.isfinite(v).sum()), 1


def config_seeds(root: Path) -> dict[str, set[int]]:
    """Experiment -> the seed counts of its configuration (full and quick), read from
    ``simulations/*.toml`` through the experiment's declared settings."""
    from ._config import load_config

    out: dict[str, set[int]] = {}
    for path in sorted((root / CONFIGS).glob("*.toml")):
        for quick in (False, True):
            cfg = load_config(path, quick=quick)
            seeds = cfg.params.get("seeds")
            if isinstance(seeds, int) and not isinstance(seeds, bool):
                out.setdefault(cfg.name, set()).add(seeds)
    return out


def _rules_of(f: dict) -> list[tuple[str, str, dict, bool]]:
    """``(role, rule, record, barred)`` of every stored reading of a finding: the rule it was
    judged by (``published``) and the rule its measure chooses (``declared``) where they
    differ. A published rule the finding's measure no longer chooses (a finding kept under the
    old rules) is audited on its values but not barred: nothing will judge them by it again."""
    out = []
    for reading, rec in f["readings"].items():
        if rec.get("rule") not in stats.RULES:
            continue
        m, want = f["measure"], rec["rule"]
        if m is not None:
            try:
                want = m.rule(stats.form_of(rec["rule"]))
            except InputError:
                want = rec["rule"]
        out.append(("published", rec["rule"], rec | {"reading": reading}, want == rec["rule"]))
        if want != rec["rule"]:
            out.append(("declared", want, rec | {"reading": reading}, True))
    return out


def plan(root: Path | str = ".") -> dict:
    """What the full audit simulates (module docstring): ``{"named": [...], "resampled":
    [...], "candidates": [...]}``, each a list of row specifications."""
    root = Path(root)
    findings = published(root)
    seeds = config_seeds(root)
    sizes: dict[str, set[tuple[int, int]]] = {name: set() for name in stats.RULES}
    resampled = []
    for f in findings:
        for role, rule_name, rec, barred in _rules_of(f):
            rule = stats.RULES[rule_name]
            shape = _shape_of(rule, rec.get("per_seed"))
            if shape is None:
                continue
            n, cells = shape
            sizes[rule_name].add((n, cells))
            for s in seeds.get(f["experiment"], ()):
                if rule.estimator not in ("slope", "proportion"):
                    sizes[rule_name].add((s, cells))
            if rule.estimator != "proportion" and n >= 2:
                resampled.append(
                    {
                        "experiment": f["experiment"],
                        "finding": f["id"],
                        "reading": rec["reading"],
                        "role": role,
                        "rule": rule_name,
                        "threshold": rec["threshold"],
                        "direction": rec["direction"],
                        "values": rec["per_seed"],
                        "barred": barred,
                    }
                )
    for check in published_checks(root):
        rule = stats.RULES[check["rule"]]
        shape = _shape_of(rule, check["values"])
        if shape is None:
            continue
        sizes[check["rule"]].add(shape)
        if rule.estimator != "proportion" and shape[0] >= 2:  # its own values, as a finding's
            resampled.append(
                {
                    "experiment": check["experiment"],
                    "finding": check["id"],
                    "reading": CHECK_READING,
                    "role": "check",
                    "rule": check["rule"],
                    "threshold": check["threshold"],
                    "direction": check["direction"],
                    "values": check["values"],
                    "barred": True,
                }
            )
    named = []
    for name, rule in stats.RULES.items():
        if rule.estimator == "point":
            named.append({"rule": name, "n": 1, "cells": 1, "shape": "none"})
            continue
        low = 3 if rule.estimator == "slope" else 2
        used = {(n, c) for n, c in sizes[name] if n >= low}
        if not used:  # no experiment uses the rule: the ad-hoc audit's sizes
            counts = stats.AUDIT_TRIALS if rule.estimator == "proportion" else stats.AUDIT_SEEDS
            used = {(n, c) for n in counts for c in (stats.AUDIT_CELLS if rule.cells else (1,))}
        kinds = stats._audit.shape_list(rule)
        for n, c in sorted(used):
            for noise in kinds:
                named.append({"rule": name, "n": n, "cells": c, "shape": noise})
    candidates = []
    for name, rule in stats._rules.CANDIDATES.items():
        counts = stats.AUDIT_TRIALS if rule.estimator == "proportion" else stats.AUDIT_SEEDS
        noises = tuple(x for x in stats.barred_shapes(rule) if x != "bernoulli")
        noises = ("bernoulli",) if rule.estimator == "proportion" else noises
        for n in counts:
            for noise in noises:
                candidates.append({"rule": name, "n": n, "cells": 1, "shape": noise})
    return {"named": named, "resampled": resampled, "candidates": candidates}


def _key(spec: dict) -> list:
    if "finding" in spec:
        return [spec["experiment"], spec["finding"], spec["reading"], spec["rule"]]
    return [spec["rule"], spec["n"], spec["cells"], spec["shape"]]


def fingerprint(p: dict) -> str:
    """A hash of a plan: its rows' keys and, for resampled rows, the values and claims (so a
    republished run, a new configuration or a new declaration makes the audit stale)."""
    h = hashlib.sha256()
    for group in ("named", "resampled", "candidates"):
        for spec in p[group]:
            h.update(json.dumps([group, spec], sort_keys=True, default=str).encode())
    return h.hexdigest()


def _plain(row: dict) -> dict:
    """A row as JSON: every `Rate` as ``[rate, se]``."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, stats.Rate):
            out[k] = [v.rate, v.se]
        elif isinstance(v, dict) and k in ("coverage_by_p", "screen"):
            out[k] = {str(kk): [vv.rate, vv.se] if vv is not None else None for kk, vv in v.items()}
        else:
            out[k] = v
    return out


def as_rates(row: dict) -> dict:
    """A stored row with its ``[rate, se]`` pairs back as `Rate` (for the tables)."""
    out = dict(row)
    for k in stats.AUDIT_RATE_KEYS:
        if isinstance(row.get(k), list):
            out[k] = stats.Rate(*row[k])
    if "coverage_by_p" in row:
        out["coverage_by_p"] = {float(p): stats.Rate(*v) for p, v in row["coverage_by_p"].items()}
    return out


def run_row(group: str, spec: dict, *, seed: int, reps: int, resampled_reps: int) -> dict:
    """One row of the plan, from its own seed (`gaugedyn.stats.audit_seed()`)."""
    child = stats.audit_seed(seed, group, *_key(spec))
    if group == "resampled":
        row = stats.audit_values(
            spec["rule"],
            spec["values"],
            spec["threshold"],
            spec["direction"],
            reps=resampled_reps,
            seed=child,
            barred=spec["barred"],
            source=f"{spec['experiment']}: {spec['finding']} [{spec['reading']}]",
        )
        keep = ("experiment", "finding", "reading", "role")
        return _plain(row | {k: spec[k] for k in keep})
    if group == "candidates":
        row = stats.audit_rule(
            spec["rule"],
            spec["n"],
            shape=spec["shape"],
            reps=stats.AUDIT_CANDIDATE_REPS,
            seed=child,
        )
        return _plain(row)
    return _plain(
        stats.audit_rule(
            spec["rule"], spec["n"], cells=spec["cells"], shape=spec["shape"], reps=reps, seed=child
        )
    )


def _run_job(job: tuple[str, dict], **kw: Any) -> dict:
    return run_row(job[0], job[1], **kw)


def run_plan(
    p: dict,
    *,
    seed: int = 0,
    reps: int = stats.AUDIT_REPS,
    resampled_reps: int = stats.AUDIT_RESAMPLED_REPS,
    progress: bool = False,
    groups: Iterable[str] = ("named", "resampled", "candidates"),
    workers: int = 1,
) -> dict:
    """Simulate every row of the plan ``p``: the audit's data (module docstring). Each row
    comes from its own seed, so ``workers`` processes give the same data as one."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from tqdm import tqdm

    jobs = [(g, spec) for g in groups for spec in p[g]]
    rows: dict[str, list] = {g: [] for g in groups}
    one = partial(_run_job, seed=seed, reps=reps, resampled_reps=resampled_reps)
    bar = partial(tqdm, total=len(jobs), disable=not progress, desc="audit-rules", unit="row")
    if workers <= 1:
        done = bar(map(one, jobs))
    else:
        pool = ProcessPoolExecutor(max_workers=workers)
        done = bar(pool.map(one, jobs, chunksize=1))
    for (g, _), row in zip(jobs, done, strict=True):
        rows[g].append(row)
    if workers > 1:
        pool.shutdown()
    from datetime import UTC, datetime

    return {
        "fingerprint": fingerprint(p),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "seed": seed,
        "reps": reps,
        "resampled_reps": resampled_reps,
        "candidate_reps": stats.AUDIT_CANDIDATE_REPS,
        **rows,
    }


def read_data(root: Path | str = ".") -> dict | None:
    """The committed audit (`AUDIT_DATA`), or ``None`` where there is none.

    Parameters
    ----------
    root : Path or str
        The repository root; the audit is read from
        ``root/results-data/audit-rules/audit.json``.

    Returns
    -------
    dict or None
        The audit's rows and settings as ``gaugedyn audit-rules`` wrote them; ``None`` when the
        file is missing, unreadable or not JSON.
    """
    path = Path(root) / AUDIT_DATA
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def refused(data: dict) -> list[str]:
    """Where a rule is used on data it fails in the audit: every barred row (a named shape of
    a kind whose rule it is, at a size an experiment uses; a published finding's own resampled
    values under the rule that judges them now or will judge them next) that misses a bar."""
    out = []
    for r in data.get("named", []):
        if str(r.get("bar", "")).startswith("MISS"):
            out.append(
                f"{r['rule']} at {r['seeds']} seeds x {r['cells']} cells, {r['shape']}: {r['bar']}"
            )
    for r in data.get("resampled", []):
        if str(r.get("bar", "")).startswith("MISS"):
            out.append(
                f"{r['rule']} ({r['role']}) on {r['experiment']}: {r['finding']} "
                f"[{r['reading']}]: {r['bar']}"
            )
    return out


def boundary_rate(data: dict | None, experiment: str, claim: dict, word: str) -> float:
    """The audited probability that a published finding's rule says ``word`` (HELD or NOT HELD)
    by chance with its parameter on the threshold: the largest over its stored readings'
    resampled rows under the rule it was judged by (its own noise), else over the barred named
    rows of that rule at its size; the nominal 2.5% where the audit has neither."""
    key = "held_at_boundary" if word == "HELD" else "not_held_at_boundary"
    if not data:
        return stats.SIZE_BAR
    own = [
        r[key][0]
        for r in data.get("resampled", [])
        if (r.get("experiment"), r.get("finding"), r.get("role"))
        == (experiment, claim["id"], "published")
        and isinstance(r.get(key), list)
    ]
    if own:
        return float(max(own))
    n = (claim.get("tolerance") or {}).get("n")
    named = [
        r[key][0]
        for r in data.get("named", [])
        if r.get("rule") == claim.get("rule")
        and r.get("seeds") == n
        and isinstance(r.get(key), list)
        and not str(r.get("bar", "")).startswith("not barred")
    ]
    return float(max(named)) if named else stats.SIZE_BAR


def expected_wrong(findings: Iterable[tuple[str, dict]], data: dict | None) -> float:
    r"""How many of the HELD and NOT HELD verdicts among ``findings`` (``(experiment, claim)``
    pairs) are expected to be wrong by chance if every claim sat exactly on its threshold (the
    least favourable truth for each): the sum of each verdict's audited boundary rate
    (`boundary_rate()`). Findings whose readings disagree, and UNRESOLVED ones, assert
    nothing and add nothing.

    Parameters
    ----------
    findings : Iterable[tuple[str, dict]]
        ``(experiment, claim)`` pairs, each claim a stored finding of ``summary.json``.
    data : dict or None
        The committed audit (`read_audit()`); ``None``: every verdict counts at the nominal
        size bar, 2.5%.

    Returns
    -------
    float
        The expected number of wrong verdicts, $\sum_i \alpha_i$ over the HELD and NOT HELD
        findings, $\alpha_i$ the audited rate at which finding $i$'s rule gives its verdict at
        the boundary.
    """
    total = 0.0
    for experiment, c in findings:
        word = c.get("verdict")
        if word in ("HELD", "NOT HELD"):
            total += boundary_rate(data, experiment, c, word)
    return total


# --- the page's tables, from the data ----------------------------------------------------------


def _kinds_table() -> list[str]:
    lines = ["| kind | what it is | noise shapes audited (barred) | rules by form of claim |"]
    lines.append("|---|---|---|---|")
    for k in stats.KINDS.values():
        rules = "; ".join(f"{form}: `{rule}`" for form, rule in k.rules.items())
        lines.append(f"| `{k.name}` | {k.text} | {', '.join(k.shapes) or '-'} | {rules} |")
    return lines


def _worst(rows: list[dict], key: str) -> str:
    """The largest rate of ``key`` over ``rows`` with the finding it belongs to."""
    have = [r for r in rows if isinstance(r.get(key), list)]
    if not have:
        return "-"
    r = max(have, key=lambda r: r[key][0])
    return f"{stats.rate_percent(stats.Rate(*r[key]))} `{r['finding']}`"


def _resampled_table(rows: list[dict]) -> list[str]:
    """Per experiment, rule and role, the worst rates over its findings' resampled rows."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["rule"], r["role"]), []).append(r)
    head = [
        "experiment",
        "rule",
        "role",
        "rows (seeds)",
        "HELD at bound, worst",
        "NOT HELD at bound, worst",
        "NOT HELD, one cell on bound, worst",
        "false HELD, worst",
        "false NOT HELD, worst",
        "bar",
    ]
    body = []
    for (experiment, rule, role), rs in sorted(groups.items()):
        missed = [r for r in rs if str(r["bar"]).startswith("MISS")]
        n = sorted({r["seeds"] for r in rs})
        bar = "ok" if not missed else f"MISS in {len(missed)} of {len(rs)}"
        body.append(
            [
                experiment,
                f"`{rule}`",
                role,
                f"{len(rs)} ({', '.join(map(str, n))})",
                _worst(rs, "held_at_boundary"),
                _worst(rs, "not_held_at_boundary"),
                _worst(rs, "one_cell_not_held"),
                _worst(rs, "false_held"),
                _worst(rs, "false_not_held"),
                bar,
            ]
        )
    return stats.markdown_table(head, body)


def checks_table(root: Path | str = ".") -> list[str]:
    """The checks on random values of the published runs: each check judged by a catalogue
    rule (`gaugedyn.harness.checked`, its stored verdict and the word it expects) and each one
    its experiment declares off the catalogue (`Experiment.off_catalogue`, with why)."""
    from ._config import resolve_experiment

    on, off = [], []
    for path in sorted((Path(root) / DATA).glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        experiment = summary["experiment"]
        declared = resolve_experiment(experiment).off_catalogue
        for c in summary.get("claims", []):
            if c.get("kind") != "check":
                continue
            tol = c.get("tolerance") or {}
            if c.get("rule") in stats.RULES:
                word = f"{tol.get('verdict', '?')} (expects {tol.get('expect', 'HELD')})"
                on.append([experiment, f"`{c['id']}`", f"`{c['rule']}`", word])
            elif c["id"] in declared:
                off.append([experiment, f"`{c['id']}`", "off the catalogue", declared[c["id"]]])
    lines = [
        f"{len(on) + len(off)} checks on random values in the published runs "
        f"(`{DATA}/`): {len(on)} judged by a catalogue rule, {len(off)} not yet.",
        "",
    ]
    head = ["experiment", "check", "rule", "stored verdict, or why no rule"]
    return lines + stats.markdown_table(head, on + off)


def render_block(name: str, data: dict, root: Path | str = ".") -> str:
    """One generated block of ``docs/verdict-rules.md`` from the audit's data: ``kinds``,
    ``catalogue``, ``named``, ``resampled`` or ``candidates``; ``checks`` from the published
    runs under ``root`` (`checks_table()`)."""
    if name == "checks":
        return "\n".join(checks_table(root)) + "\n"
    stamp = (
        f"From `{AUDIT_DATA}`, produced by `{data.get('command', '?')}` on "
        f"{data.get('date', '?')} at commit {str(data.get('commit', '?'))[:10]}."
    )
    if name == "kinds":
        return "\n".join(_kinds_table()) + "\n"
    if name == "catalogue":
        return stats.rules_markdown(stats.RULES.values())
    if name in ("named", "candidates"):
        rows = [as_rates(r) for r in data[name]]
        reps = sorted({r["reps"] for r in rows if r["reps"]})
        lines = [
            stamp,
            "",
            stats.audit_legend(reps),
            "",
            *stats.markdown_table(stats.AUDIT_HEADER, stats.audit_rows(rows)),
        ]
        header, by_p = stats.coverage_by_p_rows(rows)
        if by_p:
            lines += [
                "",
                "Coverage (%) of the proportion rules' 95% interval by true success "
                "probability p and number of trials:",
                "",
                *stats.markdown_table(header, by_p),
            ]
        return "\n".join(lines) + "\n"
    if name == "resampled":
        rows = data["resampled"]
        lines = [
            stamp,
            "",
            f"Each published finding's stored per-seed values, resampled ({data.get('resampled_reps')} "
            "simulated experiments per scenario, each reading on its own), with each cell's "
            "centre moved onto its threshold, 0.5 of its spread onto the true side and onto "
            "the false side (spread: the standard deviation; 1.4826 MAD for a median rule). "
            "`published`: the rule the finding was judged by; `declared`: the rule its "
            "measure chooses now, where that differs (the finding's run is judged under it "
            "next); `check`: a check on random values judged by a catalogue rule "
            "(`gaugedyn.harness.checked`; a proportion rule's checks are its Bernoulli rows "
            "above), its stored values under its rule. Worst: the largest rate over the rows, "
            "with its finding or check. Every row is in the data.",
            "",
            *_resampled_table(rows),
        ]
        return "\n".join(lines) + "\n"
    raise InputError(f"block {name!r}: one of kinds, catalogue, named, resampled, candidates")
