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

``--rtol R`` (with ``--atol A``, default 0) compares to a tolerance instead, for a change that
may move numbers at round-off (a batched program against the loop it replaces): every string and
flag of every claim (its verdict, the verdict of each reading, the rule) must be equal, every
number of it (estimate, interval, per-seed values, the readings' details) must satisfy
``|a - b| <= A + R max(|a|, |b|)``, and arrays likewise; the largest relative difference of the
claims' numbers is printed. A side without its ``arrays.npz`` (a published
``results-data/<experiment>`` folder keeps only ``summary.json``) is compared on its claims::

    .venv/bin/python tools/compare_runs.py results-data/beta_grid /tmp/full/beta_grid --rtol 1e-3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from gaugedyn import InputError
from gaugedyn.harness._arrays import load_arrays
from gaugedyn.harness._folders import read_summary, run_folders

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


class Tolerance:
    """``|a - b| <= atol + rtol max(|a|, |b|)``; records the largest relative difference seen."""

    def __init__(self, rtol: float, atol: float = 0.0):
        if not (rtol >= 0 and atol >= 0):
            raise InputError(f"rtol={rtol!r}, atol={atol!r} are not allowed; use numbers >= 0")
        self.rtol, self.atol, self.largest = float(rtol), float(atol), 0.0

    def close(self, a, b) -> bool:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
            return False
        ok = ~np.isnan(a)
        a, b = a[ok], b[ok]
        if not np.array_equal(np.isinf(a), np.isinf(b)) or np.any(a[np.isinf(a)] != b[np.isinf(b)]):
            return False
        fin = np.isfinite(a)
        a, b = a[fin], b[fin]
        if a.size:
            scale = np.maximum(np.abs(a), np.abs(b))
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(scale > 0, np.abs(a - b) / scale, 0.0)
            self.largest = max(self.largest, float(rel.max()))
        return bool(
            np.all(np.abs(a - b) <= self.atol + self.rtol * np.maximum(np.abs(a), np.abs(b)))
        )


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or x is None


def differing(a, b, tol: Tolerance, path: str = "") -> list[str]:
    """Paths where two JSON values differ: strings, flags and structure exactly, numbers (and
    ``null``, the summary's NaN) to ``tol``."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differing(a[k], b[k], tol, f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path} (length {len(a)} against {len(b)})"]
        if a and all(_number(x) for x in a + b):
            fa = [np.nan if x is None else x for x in a]
            fb = [np.nan if x is None else x for x in b]
            return [] if tol.close(fa, fb) else [path]
        return [
            p for i, (x, y) in enumerate(zip(a, b)) for p in differing(x, y, tol, f"{path}[{i}]")
        ]
    if _number(a) and _number(b):
        return [] if tol.close(np.nan if a is None else a, np.nan if b is None else b) else [path]
    return [] if a == b else [path]


def compare_run(old: Path, new: Path, tol: Tolerance | None = None) -> list[str]:
    """The differences between two run folders of one experiment (bitwise, or to ``tol``)."""
    problems = []
    s_old, s_new = read_summary(old), read_summary(new)
    c_old = {c["id"]: c for c in s_old.get("claims", [])}
    c_new = {c["id"]: c for c in s_new.get("claims", [])}
    for ident in sorted(set(c_old) ^ set(c_new)):
        problems.append(f"claim {ident}: only in {'old' if ident in c_old else 'new'}")
    for ident in sorted(set(c_old) & set(c_new)):
        if tol is not None:
            fields = [f for f in c_old[ident] if f not in ("statement", "expected")]
            fields = sorted(set(fields) | set(c_new[ident]) - {"statement", "expected"})
            changed = [
                p.lstrip(".")
                for f in fields
                for p in differing(c_old[ident].get(f), c_new[ident].get(f), tol, f)
            ]
        else:
            changed = [f for f in CLAIM_FIELDS if c_old[ident].get(f) != c_new[ident].get(f)]
        if changed:
            shown = ", ".join(changed[:6]) + (
                f" and {len(changed) - 6} more" if len(changed) > 6 else ""
            )
            problems.append(
                f"claim {ident}: {shown} differ "
                f"(measured {c_old[ident].get('measured')!r} against "
                f"{c_new[ident].get('measured')!r})"
            )
    if s_old.get("status") != s_new.get("status"):
        problems.append(f"status {s_old.get('status')!r} against {s_new.get('status')!r}")
    has = [s.get("arrays_sha256") is not None for s in (s_old, s_new)]
    if tol is not None:
        has = [h and (run / "arrays.npz").is_file() for h, run in zip(has, (old, new))]
        if has != [True, True]:
            return problems
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
        if tol is not None and a_old[key].dtype.kind in "fiub" and a_new[key].dtype.kind in "fiub":
            what = None if tol.close(a_old[key], a_new[key]) else "beyond the tolerance"
        else:
            what = array_difference(a_old[key], a_new[key])
        if what:
            problems.append(f"array {key}: {what}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Compare the claims and arrays of two results.")
    p.add_argument("old", type=Path, help="a run folder or a reproduce folder")
    p.add_argument("new", type=Path, help="a run folder or a reproduce folder")
    p.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="compare numbers to this relative tolerance (verdicts exactly)",
    )
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance with --rtol")
    args = p.parse_args(argv)
    try:
        tol = None if args.rtol is None else Tolerance(args.rtol, args.atol)
        if tol is None and args.atol:
            raise InputError(f"--atol {args.atol!r} is allowed only with --rtol")
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
        problems = compare_run(old[name], new[name], tol)
        if tol is None:
            print(f"{name}: {'identical claims and arrays' if not problems else 'DIFFERS'}")
        else:
            print(
                f"{name}: {'DIFFERS' if problems else 'the same'} to rtol {tol.rtol:g}, atol "
                f"{tol.atol:g} (verdicts exactly); largest relative difference of the numbers "
                f"{tol.largest:.2g}"
            )
            tol.largest = 0.0
        for line in problems:
            print(f"  {line}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
