"""The line -> tests map of the mutation runs (``tools/mutate.py --generated``): which tests
execute each line of the mutated areas' source files.

The suite runs once under ``coverage`` with one context per test (``tools/mutation_context.py``),
split into parts by test file (``--scope area``, the default: the areas' own test files as
listed in ``tools/mutants.py``; ``--scope suite``: every test file) (each part its own process, so parts can run side by side or in
separate sittings), measuring only the areas' files (``tools/mutants.py``). ``combine`` merges
the parts into ``map.json``: for every measured line the node ids of the tests that ran it, each
test's duration and outcome, the commit and a hash of every measured file. Everything lives in
``tools/.mutation-cache/<hash of the measured files>/<scope>/`` (git-ignored); ``tools/mutate.py`` uses the newest map whose
file hashes equal the working tree's. Run from the repository root::

    python tools/covmap.py run --part 1 --of 4      # one part of the suite under coverage
    python tools/covmap.py combine --of 4           # the parts into map.json
    python tools/covmap.py show                     # the map in use: its commit and sizes

A test run only in a subprocess (the CLI tests) is not seen: its lines count as not covered
by that test. Lines run only at import (module constants, definitions) carry no test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutants  # noqa: E402  (tools/ is not a package)

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "tools" / ".mutation-cache"


def area_files() -> list[str]:
    """Every mutated source file and every caller of a compiled one, relative to the
    repository root."""
    files = {f for files, _ in mutants.AREAS.values() for f in files}
    files |= {c for callers in mutants.COMPILED_CALLERS.values() for c in callers}
    return sorted(mutants.SRC + f for f in files)


def source_hashes() -> dict[str, str]:
    return {f: hashlib.sha256((ROOT / f).read_bytes()).hexdigest()[:16] for f in area_files()}


def source_key() -> str:
    """The cache's key: a hash of the measured files (a commit that leaves them alone keeps
    the map; the commit of the run is recorded in it)."""
    return hashlib.sha256(json.dumps(source_hashes(), sort_keys=True).encode()).hexdigest()[:12]


def commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def test_files(scope: str) -> list[str]:
    """``suite``: every test file; ``area``: the areas' test files (``tools/mutants.py``)."""
    if scope == "area":
        return sorted({t for _, tests in mutants.AREAS.values() for t in tests})
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))


def parts(n: int, weights: dict[str, float], scope: str) -> list[list[str]]:
    """The test files dealt into ``n`` parts of about equal weight (largest first, each to the
    lightest part); a file without a known weight weighs its size in kB / 10 seconds."""
    files = test_files(scope)
    w = {f: weights.get(f, (ROOT / f).stat().st_size / 10_000) for f in files}
    out: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    for f in sorted(files, key=lambda f: -w[f]):
        i = load.index(min(load))
        out[i].append(f)
        load[i] += w[f]
    return [sorted(p) for p in out]


def _weights() -> dict[str, float]:
    """Seconds per test file from the newest map, if any."""
    maps = sorted(CACHE.glob("*/*/map.json"), key=lambda p: p.stat().st_mtime)
    if not maps:
        return {}
    tests = json.loads(maps[-1].read_text(encoding="utf-8"))["tests"]
    out: dict[str, float] = {}
    for nodeid, t in tests.items():
        f = nodeid.split("::")[0]
        out[f] = out.get(f, 0.0) + float(t.get("seconds", 0.0))
    return out


def run(part: int, of: int, scope: str, weights: str = "", extra: str = "") -> int:
    """Part ``part`` of ``of`` under coverage; with ``extra`` (a name), instead the test files
    added to the areas' lists since the parts ran that no part ran (``combine`` merges them)."""
    where = CACHE / source_key() / scope
    where.mkdir(parents=True, exist_ok=True)
    if extra:
        done = {f for p in json.loads((where / f"parts-of-{of}.json").read_text()) for f in p}
        files = [f for f in test_files(scope) if f not in done]
        if not files:  # pytest given no file would run every test under its testpaths
            print(f"part {extra}: every test file of the areas is in a part already; nothing run")
            return 0
        return _coverage(where, extra, files)
    # the partition is fixed by the first part that runs, so that test files added between
    # parts are neither lost nor run twice
    frozen = where / f"parts-of-{of}.json"
    if not frozen.exists():
        known = json.loads(Path(weights).read_text(encoding="utf-8")) if weights else _weights()
        frozen.write_text(json.dumps(parts(of, known, scope)), encoding="utf-8")
    files = json.loads(frozen.read_text(encoding="utf-8"))[part - 1]
    return _coverage(where, str(part), files)


def _coverage(where: Path, part: str, files: list[str]) -> int:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "tools")]),
        GAUGEDYN_COVMAP_TESTS=str(where / f"tests.{part}.json"),
        CI="1",
    )
    command = [
        sys.executable,
        "-m",
        "coverage",
        "run",
        f"--data-file={where / f'cov.{part}'}",
        f"--include={','.join(str(ROOT / f) for f in area_files())}",
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "-p",
        "mutation_context",
        *files,
    ]
    print(f"part {part}: {len(files)} test files: {' '.join(files)}", flush=True)
    done = subprocess.run(command, cwd=ROOT, env=env)
    # a failing test is recorded (and never selected), not a reason to lose the part
    return 0 if done.returncode in (0, 1) else done.returncode


def combine(of: int, scope: str) -> int:
    import coverage

    where = CACHE / source_key() / scope
    lines: dict[str, dict[str, list[str]]] = {}
    tests: dict[str, dict[str, object]] = {}
    extras = sorted(p.name.split(".", 1)[1] for p in where.glob("cov.extra*"))
    for part in [*map(str, range(1, of + 1)), *extras]:
        data_file, tests_file = where / f"cov.{part}", where / f"tests.{part}.json"
        if not data_file.exists() or not tests_file.exists():
            print(f"part {part} of {of} has not run (no {data_file.name} or {tests_file.name})")
            return 1
        tests.update(json.loads(tests_file.read_text(encoding="utf-8")))
        data = coverage.CoverageData(basename=str(data_file))
        data.read()
        for path in data.measured_files():
            rel = str(Path(path).resolve().relative_to(ROOT))
            per_line = lines.setdefault(rel, {})
            for line, contexts in data.contexts_by_lineno(path).items():
                ids = per_line.setdefault(str(line), [])
                ids.extend(c for c in contexts if c)
    for per_line in lines.values():
        for line in per_line:
            per_line[line] = sorted(set(per_line[line]))
    out = {
        "commit": commit(),
        "sources": source_hashes(),
        "parts": of,
        "scope": scope,
        "lines": lines,
        "tests": tests,
    }
    (where / "map.json").write_text(json.dumps(out, sort_keys=True), encoding="utf-8")
    failed = sorted(t for t, v in tests.items() if v.get("outcome") == "failed")
    print(
        f"map.json: {len(tests)} tests, {sum(map(len, lines.values()))} lines in {len(lines)} "
        f"files; failing on the unmutated code (never selected): {', '.join(failed) or 'none'}"
    )
    return 0


def current() -> dict | None:
    """The newest map whose file hashes equal the working tree's, or ``None``."""
    hashes = source_hashes()
    for path in sorted(CACHE.glob("*/*/map.json"), key=lambda p: -p.stat().st_mtime):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["sources"] == hashes:
            return data
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one part of the suite under coverage")
    r.add_argument("--part", type=int, required=True)
    r.add_argument("--of", type=int, required=True)
    r.add_argument(
        "--extra",
        default="",
        help="a name (extra1, ...): run the areas' test files no part ran, as that part",
    )
    r.add_argument(
        "--weights",
        default="",
        help="JSON {test file: seconds} to balance the parts (default: the newest map's)",
    )
    c = sub.add_parser("combine", help="the parts into map.json")
    c.add_argument("--of", type=int, required=True)
    for q in (r, c):
        q.add_argument(
            "--scope",
            choices=("area", "suite"),
            default="area",
            help="the test files run: the areas' (default) or the whole suite's",
        )
    sub.add_parser("show", help="the map in use")
    args = p.parse_args(argv)
    if args.command in ("run", "combine") and args.of < 1:
        p.error(f"--of {args.of} is not allowed; allowed: a positive count")
    if args.command == "run" and not 1 <= args.part <= args.of:
        p.error(f"--part {args.part} is not allowed; allowed: 1 to --of ({args.of})")
    if args.command == "run":
        return run(args.part, args.of, args.scope, args.weights, args.extra)
    if args.command == "combine":
        return combine(args.of, args.scope)
    data = current()
    if data is None:
        print("no map matches the working tree's source files; run `covmap.py run` first")
        return 1
    print(
        f"commit {data['commit']}, scope {data['scope']}: {len(data['tests'])} tests, "
        f"{len(data['lines'])} files"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
