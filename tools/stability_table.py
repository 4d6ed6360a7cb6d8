"""Print the findings table of docs/adam-stability.md from a run's summary.json.

Usage: ``python tools/stability_table.py results/spike_boundary/summary.json`` (or adam_edge's).
One row per claim: the primary reading's estimate and 95% interval, the verdict (with
"underpowered" where the catalogue says so), and the verdict under each documented reading,
abbreviated: window ``S``/``T`` (settled/transient), rows ``9``/``A`` (beta1 >= 0.9 / all),
start ``o``/``g`` (orbit/generic); ``H``/``N``/``U`` for HELD/NOT HELD/UNRESOLVED.
"""

from __future__ import annotations

import json
import sys

ABBR = {
    "settled": "S",
    "transient": "T",
    "beta1>=0.9": "9",
    "all rows": "A",
    "orbit start": "o",
    "generic start": "g",
}
WORD = {"HELD": "H", "NOT HELD": "N", "UNRESOLVED": "U"}


def _num(v) -> str:
    return f"{float(v):.3g}"


def rows(summary: dict) -> list[str]:
    out = [
        "| finding | primary reading: estimate [95% interval] | verdict | per reading |",
        "|---|---|---|---|",
    ]
    for c in summary["claims"]:
        if c.get("kind") == "check":
            out.append(
                f"| `{c['id']}` (check) | {_num(c['measured'])} (tolerance "
                f"{c['tolerance']:g}) | {'PASS' if c['passed'] else 'FAIL'} | - |"
            )
            continue
        if c.get("kind") != "finding":
            out.append(f"| `{c['id']}` (measurement) | {c['measured']} | - | - |")
            continue
        iv = c.get("interval") or ["nan", "nan"]
        r = c.get("readings") or {}
        per = (
            " ".join(
                "".join(ABBR.get(p, p) for p in k.split(", ")) + ":" + WORD[v] for k, v in r.items()
            )
            if len(r) > 1
            else "-"
        )
        extra = " (underpowered)" if c.get("underpowered") else ""
        out.append(
            f"| `{c['id']}` | {_num(c['measured'])} [{_num(iv[0])}, {_num(iv[1])}] | "
            f"{c['verdict']}{extra} | {per} |"
        )
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        print("\n".join(rows(json.load(fh))))
