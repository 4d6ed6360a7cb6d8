"""Compare two results (run folders or reproduce folders): the same claims, values and arrays?

For a restructuring that must leave behaviour unchanged, run the reproduction before and after
and compare::

    git stash; .venv/bin/gaugedyn reproduce --quick --out /tmp/before; git stash pop
    .venv/bin/gaugedyn reproduce --quick --out /tmp/after
    .venv/bin/python tools/compare_runs.py /tmp/before /tmp/after

For every experiment present in both it reports whether the claims (id, kind, measured,
expected, tolerance, verdict, interval) are identical, whether every array is identical bit for
bit (NaNs in the same places count as equal) and, where one is not, the largest absolute
difference; and which experiments, claims or arrays exist on one side only. Exit status 0 when
everything present on both sides is identical and nothing is missing, 1 otherwise, 2 when a
folder is not a gaugedyn result.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from gaugedyn import InputError
from gaugedyn.harness._arrays import load_arrays
from gaugedyn.harness._folders import run_folders
from gaugedyn.harness._summary import read_summary

CLAIM_FIELDS = ("kind", "measured", "expected", "tolerance", "passed", "verdict", "interval")


def runs(folder: Path) -> dict[str, Path]:
    """Run folders by experiment name."""
    return {read_summary(run).get("experiment", run.name): run for run in run_folders(folder)}


def array_difference(a: np.ndarray, b: np.ndarray) -> str | None:
    """``None`` when identical, else a short description of the difference."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/dtype {a.shape} {a.dtype} against {b.shape} {b.dtype}"
    if np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
        return None
    if a.dtype.kind in "fciub":
        with np.errstate(invalid="ignore"):
            diff = np.abs(a.astype(complex if a.dtype.kind == "c" else float) - b)
        return f"max |difference| {np.nanmax(diff):.3g}"
    return "differs"


def compare_run(old: Path, new: Path) -> list[str]:
    """The differences between two run folders of one experiment."""
    problems = []
    s_old, s_new = read_summary(old), read_summary(new)
    c_old = {c["id"]: c for c in s_old.get("claims", [])}
    c_new = {c["id"]: c for c in s_new.get("claims", [])}
    for ident in sorted(set(c_old) ^ set(c_new)):
        problems.append(f"claim {ident}: only in {'old' if ident in c_old else 'new'}")
    for ident in sorted(set(c_old) & set(c_new)):
        changed = [f for f in CLAIM_FIELDS if c_old[ident].get(f) != c_new[ident].get(f)]
        if changed:
            problems.append(f"claim {ident}: {', '.join(changed)} differ "
                            f"(measured {c_old[ident].get('measured')!r} against "
                            f"{c_new[ident].get('measured')!r})")
    if s_old.get("status") != s_new.get("status"):
        problems.append(f"status {s_old.get('status')!r} against {s_new.get('status')!r}")
    has = [s.get("arrays_sha256") is not None for s in (s_old, s_new)]
    if has != [True, True]:
        if has[0] != has[1]:
            problems.append("arrays.npz on one side only")
        return problems
    if s_old["arrays_sha256"] == s_new["arrays_sha256"]:
        return problems
    a_old, a_new = load_arrays(old, s_old), load_arrays(new, s_new)
    for key in sorted(set(a_old) ^ set(a_new)):
        problems.append(f"array {key}: only in {'old' if key in a_old else 'new'}")
    for key in sorted(set(a_old) & set(a_new)):
        what = array_difference(a_old[key], a_new[key])
        if what:
            problems.append(f"array {key}: {what}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Compare the claims and arrays of two results.")
    p.add_argument("old", type=Path, help="a run folder or a reproduce folder")
    p.add_argument("new", type=Path, help="a run folder or a reproduce folder")
    args = p.parse_args(argv)
    try:
        old, new = runs(args.old), runs(args.new)
    except InputError as err:
        print(f"compare_runs: {err}", file=sys.stderr)
        return 2
    failed = False
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            print(f"{name}: only in {'old' if name in old else 'new'}")
            failed = True
            continue
        problems = compare_run(old[name], new[name])
        print(f"{name}: {'identical claims and arrays' if not problems else 'DIFFERS'}")
        for line in problems:
            print(f"  {line}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
