"""Regenerate the tables of ``docs/verdict-rules.md`` from the committed audit's data.

The full audit of the verdict rules on what the experiments use is run once and kept as data,
as published runs are::

    .venv/bin/gaugedyn audit-rules --write results-data/audit-rules/audit.json   # the full audit

Each block of the page between ``<!-- audit-data NAME -->`` and ``<!-- end audit-data -->`` is
then generated from that file (:func:`gaugedyn.harness._audit_plan.render_block`; NAME is
``kinds``, ``catalogue``, ``named``, ``resampled``, ``candidates`` or ``checks``, the last
from the published runs' checks). Run from the repository
root::

    .venv/bin/python tools/verdict_rules_doc.py            # rewrite the page in place
    .venv/bin/python tools/verdict_rules_doc.py --check    # exit 1 if the page or the data is stale

``--check`` simulates nothing: it compares the page with the data, and the data's fingerprint
with the plan of the audit now (the published runs, the configurations and the declared
measures), so a republished run, a new configuration or a new declaration that the audit has not
seen fails CI (rerun the full audit then).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gaugedyn.harness import _audit_plan as ap  # noqa: E402

PAGE = ROOT / "docs" / "verdict-rules.md"
BLOCK = re.compile(
    r"(<!-- audit-data (?P<name>\w+) -->\n)(?P<body>.*?)(<!-- end audit-data -->)", re.S
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the page differs from the data or the data from the audit's plan",
    )
    args = parser.parse_args(argv)
    data = ap.read_data(ROOT)
    if data is None:
        print(f"no {ap.AUDIT_DATA}: run gaugedyn audit-rules --write {ap.AUDIT_DATA}")
        return 1
    text = PAGE.read_text(encoding="utf-8")
    new = BLOCK.sub(
        lambda m: m.group(1) + ap.render_block(m.group("name"), data, ROOT) + m.group(4), text
    )
    if not args.check:
        PAGE.write_text(new, encoding="utf-8")
        print(f"rewrote {PAGE.relative_to(ROOT)} ({len(BLOCK.findall(text))} tables)")
        return 0
    stale = 0
    if new != text:
        sys.stdout.writelines(
            line + "\n"
            for line in difflib.unified_diff(
                text.splitlines(), new.splitlines(), "page", "from the data", lineterm="", n=0
            )
        )
        print(f"{PAGE.relative_to(ROOT)} is stale: run tools/verdict_rules_doc.py")
        stale = 1
    if data.get("fingerprint") != ap.fingerprint(ap.plan(ROOT)):
        print(
            f"{ap.AUDIT_DATA} is stale: the published runs, the configurations or the declared "
            f"measures changed since it was made; run gaugedyn audit-rules --write {ap.AUDIT_DATA}"
        )
        stale = 1
    if not stale:
        print(f"{PAGE.relative_to(ROOT)} and {ap.AUDIT_DATA} are up to date")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
