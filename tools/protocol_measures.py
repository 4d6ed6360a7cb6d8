"""Write each system's declared finding measures into its protocol.

Each experiment declares, beside its findings and before its run, what each finding measures
(``FINDING_MEASURES`` in ``gaugedyn/experiments/<system>/_protocol.py``: the kind, which fixes
the verdict rule, the unit and the smallest effect of interest). The block of
``gaugedyn/experiments/<system>/PROTOCOL.md`` between ``<!-- measures -->`` and
``<!-- end measures -->`` is generated from it (:func:`gaugedyn.stats.measures_markdown`), so
the protocol states the same declaration the code judges by. Run from the repository root::

    .venv/bin/python tools/protocol_measures.py            # rewrite the blocks in place
    .venv/bin/python tools/protocol_measures.py --check    # exit 1 if a protocol is stale
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gaugedyn import stats  # noqa: E402

SYSTEMS = ROOT / "src" / "gaugedyn" / "experiments"
BLOCK = re.compile(r"(<!-- measures -->\n)(.*?)(<!-- end measures -->)", re.S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a protocol is stale")
    args = parser.parse_args(argv)
    stale = 0
    for path in sorted(SYSTEMS.glob("*/_protocol.py")):
        module = importlib.import_module(f"gaugedyn.experiments.{path.parent.name}._protocol")
        table = getattr(module, "FINDING_MEASURES", None)
        if table is None:
            continue
        page = path.parent / "PROTOCOL.md"
        text = page.read_text(encoding="utf-8")
        if not BLOCK.search(text):
            print(f"{page.relative_to(ROOT)}: no <!-- measures --> block")
            stale = 1
            continue
        body = stats.measures_markdown(table)
        new = BLOCK.sub(lambda m, body=body: m.group(1) + body + m.group(3), text)
        if new == text:
            continue
        if args.check:
            print(f"{page.relative_to(ROOT)} is stale: run tools/protocol_measures.py")
            stale = 1
        else:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
