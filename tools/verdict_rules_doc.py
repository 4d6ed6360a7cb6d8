"""Regenerate the tables of ``docs/verdict-rules.md`` from ``gaugedyn audit-rules``.

Each block of the page between ``<!-- audit-rules ARGS -->`` and ``<!-- end audit-rules -->`` is
replaced by the output of ``gaugedyn audit-rules ARGS --markdown --no-progress`` (the output
names the command and the date it ran). The audit is deterministic for a given ``--seed``, so a
rerun on unchanged code changes only the date. Run from the repository root::

    .venv/bin/python tools/verdict_rules_doc.py            # rewrite the page in place
    .venv/bin/python tools/verdict_rules_doc.py --check    # exit 1 if a table is stale

``--check`` reruns every audit and compares it with the page, ignoring only the date line
(the full audit takes minutes).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "verdict-rules.md"
STAMP = re.compile(r"^(Produced by `[^`]*`) on [^\n]*$", re.M)
BLOCK = re.compile(
    r"(<!-- audit-rules(?P<args>[^>]*)-->\n)(?P<body>.*?)(<!-- end audit-rules -->)", re.S
)


def _run(args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [
        sys.executable,
        "-m",
        "gaugedyn",
        "audit-rules",
        *args.split(),
        "--markdown",
        "--no-progress",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode not in (0, 1):  # 1: a candidate misses a bar, which the page shows
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="rerun the audits and exit 1 if the page differs (dates aside)",
    )
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    new = BLOCK.sub(lambda m: m.group(1) + _run(m.group("args")) + m.group(4), text)
    if args.check:
        old_lines = STAMP.sub(r"\1", text).splitlines()
        new_lines = STAMP.sub(r"\1", new).splitlines()
        if old_lines != new_lines:
            sys.stdout.writelines(
                line + "\n"
                for line in difflib.unified_diff(
                    old_lines, new_lines, "page", "regenerated", lineterm="", n=0
                )
            )
            print(f"{PAGE.relative_to(ROOT)} is stale: run tools/verdict_rules_doc.py")
            return 1
        print(f"{PAGE.relative_to(ROOT)} is up to date ({len(BLOCK.findall(text))} tables)")
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"rewrote {PAGE.relative_to(ROOT)} ({len(BLOCK.findall(text))} tables)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
