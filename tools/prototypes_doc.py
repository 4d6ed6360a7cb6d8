"""Write the results table of ``docs/prototypes.md`` from a run's ``summary.json``.

The block of the page between ``<!-- prototypes-results -->`` and ``<!-- end prototypes-results
-->`` is replaced by a table of every finding of the run (rule, primary reading's estimate and
interval, verdict, power, and the verdict under each reading) and its measurements, headed by
the run's command, configuration label and date. Run from the repository root::

    .venv/bin/python tools/prototypes_doc.py RESULTS/summary.json   # rewrite the page in place
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "prototypes.md"
BLOCK = re.compile(r"(<!-- prototypes-results -->\n).*?(<!-- end prototypes-results -->)", re.S)


def _g(x) -> str:
    if x is None:
        return "-"
    try:
        return f"{float(x):.3g}"
    except (TypeError, ValueError):
        return str(x)


def command(summary: dict) -> str:
    """The ``gaugedyn run`` command line of a summary's ``command`` record."""
    c = summary.get("command") or {}
    if not isinstance(c, dict):
        return str(c)
    words = ["gaugedyn", c.get("command", "run"), str(c.get("config", ""))]
    words += ["--quick"] if c.get("quick") else []
    words += [f"--set {o}" for o in c.get("overrides") or []]
    return " ".join(words)


def table(summary: dict, when: str) -> str:
    d = summary.get("diagnostics", {})
    label = d.get("provisional") or "full configuration"
    cmd = command(summary)
    tasks = d.get("tasks", {})
    lines = [f"Run: `{cmd}` ({label}), summarised on {when}; tasks computed in "
             f"{tasks.get('compute_seconds', float('nan')):.0f} CPU-seconds, "
             f"{d.get('wall_seconds', float('nan')):.0f} s wall with {d.get('executor', '?')} "
             "on a loaded two-core machine.", "",
             "| finding | rule | primary estimate [95% interval] | verdict | power | "
             "verdict per reading |", "|---|---|---|---|---|---|"]
    for c in summary["claims"]:
        if c["kind"] != "finding":
            continue
        lo, hi = c.get("interval") or (None, None)
        readings = "; ".join(f"{k}: {v}" for k, v in (c.get("readings") or {}).items())
        power = _g(c.get("power")) + (" (underpowered)" if c.get("underpowered") else "")
        lines.append(f"| `{c['id']}` | `{c.get('rule')}` | {_g(c.get('measured'))} "
                     f"[{_g(lo)}, {_g(hi)}] | **{c['verdict']}** | {power} | {readings} |")
    lines += ["", "| measurement or check | value | status |", "|---|---|---|"]
    for c in summary["claims"]:
        if c["kind"] == "finding":
            continue
        status = "measured" if c["kind"] == "measurement" else ("passed" if c["passed"]
                                                                  else "FAILED")
        lines.append(f"| `{c['id']}` | {_g(c.get('measured'))} | {status} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.exit("usage: tools/prototypes_doc.py RESULTS/summary.json")
    summary = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = PAGE.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        sys.exit(f"{PAGE} has no <!-- prototypes-results --> block")
    PAGE.write_text(BLOCK.sub(lambda m: m.group(1) + table(summary, when) + m.group(2), text),
                    encoding="utf-8")
    print(f"rewrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
