"""Bring the committed audit of the verdict rules up to date with the plan without simulating
its unchanged rows again.

Every row of the full audit (``gaugedyn audit-rules --write``) is simulated from its own seed,
derived from the audit's root seed and the row's key (:func:`gaugedyn.stats._audit.audit_seed`),
so a row whose specification is unchanged is the same row bit for bit whether it is simulated
again or kept. This tool computes the plan now (the published runs, the configurations, the
declared measures), keeps each committed row whose key and specification are the plan's (a
resampled row's stored values are compared through the plan's fingerprint of the old data:
rows are kept only for experiments whose published summary is unchanged since the data were
written, listed as ``--unchanged``), simulates the others at the committed data's repetitions,
and writes the data in the plan's order with the plan's fingerprint. Run from the repository
root::

    .venv/bin/python tools/audit_rules_update.py --workers 2 --unchanged EXP [EXP ...]

``--rules RULE ...`` simulates every row of those rules again (a rule whose decision changed).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gaugedyn.harness import _audit_plan as ap  # noqa: E402


def _stored_key(row: dict) -> str:
    if "finding" in row:
        return json.dumps([row["experiment"], row["finding"], row["reading"], row["rule"]])
    return json.dumps([row["rule"], row["seeds"], row["cells"], row["shape"]])


def _plan_key(spec: dict) -> str:
    return json.dumps(ap._key(spec), default=str)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--unchanged",
        nargs="*",
        default=None,
        help="experiments whose published values are unchanged since the data (default: every "
        "experiment of the old data)",
    )
    parser.add_argument(
        "--rules",
        nargs="*",
        default=(),
        help="rules whose rows are simulated again though their specification is unchanged "
        "(the rule itself changed)",
    )
    args = parser.parse_args(argv)
    old = ap.read_data(ROOT)
    if old is None:
        print(f"no {ap.AUDIT_DATA}: run the full audit (gaugedyn audit-rules --write)")
        return 1
    p = ap.plan(ROOT)
    keep_exp = set(args.unchanged) if args.unchanged is not None else None
    jobs, rows = [], {}
    for group in ("named", "resampled", "candidates"):
        stored = {_stored_key(r): r for r in old[group]}
        rows[group] = []
        for spec in p[group]:
            row = stored.get(_plan_key(spec))
            if row is not None and "experiment" in spec and keep_exp is not None:
                row = row if spec["experiment"] in keep_exp else None
            if row is not None and row["rule"] in args.rules:
                row = None
            rows[group].append(row)
            if row is None:
                jobs.append((group, len(rows[group]) - 1, spec))
    print(f"{len(jobs)} rows to simulate, {sum(map(len, rows.values())) - len(jobs)} kept")
    one = partial(
        ap.run_row,
        seed=old["seed"],
        reps=old["reps"],
        resampled_reps=old["resampled_reps"],
    )
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        done = pool.map(_run, [(one, g, s) for g, _, s in jobs], chunksize=1)
        for (g, i, _), row in zip(jobs, done, strict=True):
            rows[g][i] = row
    data = {
        "fingerprint": ap.fingerprint(p),
        "date": old["date"],
        "seed": old["seed"],
        "reps": old["reps"],
        "resampled_reps": old["resampled_reps"],
        "candidate_reps": old["candidate_reps"],
        "command": old.get("command", ""),
        "commit": old.get("commit", "unknown"),
        "updated": (old.get("updated") or [])
        + [
            {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "command": "tools/audit_rules_update.py " + " ".join(argv or sys.argv[1:]),
                "simulated": len(jobs),
                "kept": sum(map(len, rows.values())) - len(jobs),
            }
        ],
        **rows,
    }
    path = ROOT / ap.AUDIT_DATA
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


def _run(job: tuple) -> dict:
    one, group, spec = job
    return one(group, spec)


if __name__ == "__main__":
    raise SystemExit(main())
