"""``beta_grid``'s declared extensions, the bfloat16 reading of its stacked pass
(``PROTOCOL.md`` section 12), and the table that compares its run with float32's.

`EXTENSIONS` declares the reading as a run of the experiment with one setting changed
(``gaugedyn run simulations/beta_grid.toml --set matmul=bfloat16``), and float32 run afresh by
the same code (``--set matmul=float32``); ``gaugedyn publish --add`` stores both under
``results-data/beta_grid/extensions/``. `table()` states each run's agreement with the
published (re-judged) run, then sets the bfloat16 run's findings beside the fresh float32
run's: per finding, both verdicts, both estimates and intervals (the ``current/squared``
reading's, as a finding shows them), the largest shift of any reading's estimate as a fraction
of float32's interval width, and how many readings keep their verdict; above the table, whether
the reading meets section 12's bar (`_protocol.MATMUL_SHIFT_TOL`) and how many of each run's
checks passed (a failed one named with its value and tolerance).
"""

from __future__ import annotations

import math

from ._protocol import MATMUL_SHIFT_TOL

EXTENSIONS: dict[str, dict] = {
    "published": {},
    "float32": {"matmul": "float32"},
    "bfloat16": {"matmul": "bfloat16"},
}
"""The declared extensions (name -> the settings changed): ``published`` is the published run
itself; ``float32`` the same configuration run afresh by the code that runs the reading (its
tasks are the published run's, its findings judged as a fresh run judges them: the published
run was re-judged by ``gaugedyn rejudge``); ``bfloat16`` the reading of ``PROTOCOL.md``
section 12, declared before any run of it (``float32`` added after it ran, section 12)."""


def _findings(summary: dict) -> dict[str, dict]:
    return {c["id"]: c for c in summary.get("claims", []) if c.get("kind") == "finding"}


def _readings(claim: dict) -> dict[str, dict]:
    """Each reading's ``{verdict, estimate, interval}`` of a finding (one, ``as judged``, for a
    finding that does not depend on the reading)."""
    detail = (claim.get("tolerance") or {}).get("reading_detail") or {}
    if detail:
        return {k: v for k, v in detail.items() if isinstance(v, dict)}
    return {
        "as judged": {
            "verdict": claim.get("verdict"),
            "estimate": claim.get("measured"),
            "interval": claim.get("interval"),
        }
    }


def _shift(a: dict, b: dict) -> float:
    """``|estimate b - estimate a|`` over the width of ``a``'s interval (nan where either is
    missing; inf for a moved estimate over a zero-width interval)."""
    try:
        ea, eb = float(a["estimate"]), float(b["estimate"])
        lo, hi = (float(x) for x in a["interval"])
    except (KeyError, TypeError, ValueError):
        return math.nan
    d, w = abs(eb - ea), hi - lo
    if not all(map(math.isfinite, (d, w))):
        return math.nan
    return d / w if w > 0 else (0.0 if d == 0 else math.inf)


def compare(base: dict, other: dict) -> dict:
    """Finding by finding, ``other``'s run against ``base``'s: ``rows`` (id, both verdicts,
    both primary estimates and intervals, the largest reading shift, readings agreeing / compared),
    ``findings_agree``, ``readings_agree``, ``readings``, ``largest_shift`` (with its finding),
    ``missing`` (findings of one run only) and ``meets`` (every verdict of every reading equal
    and every shift at most `MATMUL_SHIFT_TOL`)."""
    a, b = _findings(base), _findings(other)
    rows: list[dict] = []
    row_shifts: list[float] = []
    agree, r_agree, r_total = 0, 0, 0
    largest, where = 0.0, None
    for fid in a:
        if fid not in b:
            continue
        ra, rb = _readings(a[fid]), _readings(b[fid])
        same = sum(ra[k].get("verdict") == rb.get(k, {}).get("verdict") for k in ra)
        shifts = [_shift(ra[k], rb[k]) for k in ra if k in rb]
        finite = [s for s in shifts if not math.isnan(s)]
        shift = max(finite) if finite else math.nan
        if finite and shift > largest:
            largest, where = shift, fid
        agree += a[fid].get("verdict") == b[fid].get("verdict")
        r_agree, r_total = r_agree + same, r_total + len(ra)
        row_shifts.append(shift)
        rows.append(
            {
                "id": fid,
                "verdicts": (a[fid].get("verdict"), b[fid].get("verdict")),
                "estimates": (a[fid].get("measured"), b[fid].get("measured")),
                "intervals": (a[fid].get("interval"), b[fid].get("interval")),
                "shift": shift,
                "readings": (same, len(ra)),
            }
        )
    missing = sorted(set(a) ^ set(b))
    meets = (
        not missing
        and agree == len(rows)
        and r_agree == r_total
        and all(not math.isnan(x) and x <= MATMUL_SHIFT_TOL for x in row_shifts)
    )
    return {
        "rows": rows,
        "findings_agree": agree,
        "readings_agree": r_agree,
        "readings": r_total,
        "largest_shift": largest,
        "largest_at": where,
        "missing": missing,
        "meets": meets,
    }


def checks(summary: dict) -> str:
    """One sentence: how many of a run's checks passed, and each failed one with its measured
    value and tolerance."""
    got = [c for c in summary.get("claims", []) if c.get("kind") == "check"]
    failed = [c for c in got if not c.get("passed")]
    text = f"{len(got) - len(failed)} of {len(got)} checks passed"
    if failed:
        text += "; failed: " + ", ".join(
            f"`{c['id']}` (measured {_num(c.get('measured'))}, tolerance "
            f"{_num(c.get('tolerance'))})"
            for c in failed
        )
    return text


def _when(summary: dict) -> str:
    pub = summary.get("published") or {}
    return f"`{pub.get('command', 'command not recorded')}`, {pub.get('date', 'date not recorded')}"


def _num(x) -> str:
    return "-" if x is None else f"{float(x):.4g}"


def _est(e, iv) -> str:
    if iv is None or len(iv) != 2:
        return _num(e)
    return f"{_num(e)} [{_num(iv[0])}, {_num(iv[1])}]"


def same_values(a: dict, b: dict) -> tuple[int, int]:
    """(findings whose per-seed values are equal in both runs, findings of both)."""
    fa, fb = _findings(a), _findings(b)
    both = [k for k in fa if k in fb]
    return sum(fa[k].get("per_seed") == fb[k].get("per_seed") for k in both), len(both)


def table(runs: dict[str, dict | None]) -> list[str]:
    """Markdown lines: the bfloat16 run's findings beside the fresh float32 run's (module
    docstring), after a sentence on each against the published run; or a sentence naming the
    runs not published."""
    base, other, pub = runs.get("float32"), runs.get("bfloat16"), runs.get("published")
    if base is None or other is None or pub is None:
        absent = [k for k in EXTENSIONS if runs.get(k) is None]
        return [
            f"Not published yet: {', '.join(absent)} (`gaugedyn run simulations/beta_grid.toml "
            "--set matmul=NAME`, then `gaugedyn publish --add`)."
        ]
    c = compare(base, other)
    fresh, of = same_values(pub, base)
    p32, p16 = compare(pub, base), compare(pub, other)
    lines = [
        f"The fresh float32 run ({_when(base)}) has the published run's per-seed values in "
        f"{fresh} of {of} findings; {p32['findings_agree']} of {len(p32['rows'])} findings and "
        f"{p32['readings_agree']} of {p32['readings']} readings keep the published verdict, "
        f"largest shift of an estimate {p32['largest_shift']:.1%} of the published interval "
        "width. The bfloat16 run against the published one: "
        f"{p16['findings_agree']} of {len(p16['rows'])} findings and {p16['readings_agree']} of "
        f"{p16['readings']} readings keep their verdict.",
        "",
        f"The bfloat16 reading ({_when(other)}) against the fresh float32 run: "
        f"**{c['findings_agree']} of {len(c['rows'])}** findings keep their verdict and "
        f"**{c['readings_agree']} of {c['readings']}** readings theirs; the largest shift of an "
        f"estimate is **{c['largest_shift']:.1%}** of float32's 95% interval width "
        f"(`{c['largest_at']}`). Section 12's bar (every verdict of every reading the same, every "
        f"shift at most {MATMUL_SHIFT_TOL:.0%}) is **{'met' if c['meets'] else 'not met'}**"
        + (f"; findings of one run only: {', '.join(c['missing'])}" if c["missing"] else "")
        + f". The bfloat16 run's {checks(other)} (the float32 run's {checks(base)}).",
        "",
        "| finding | float32 | bfloat16 | float32 estimate [interval] | bfloat16 estimate "
        "[interval] | largest shift / width | readings agreeing |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in c["rows"]:
        fid = r["id"].removeprefix("finding:")
        differs = r["verdicts"][0] != r["verdicts"][1]
        v = [f"**{x}**" if differs else str(x) for x in r["verdicts"]]
        shift = "-" if math.isnan(r["shift"]) else f"{r['shift']:.1%}"
        lines.append(
            f"| `{fid}` | {v[0]} | {v[1]} | {_est(r['estimates'][0], r['intervals'][0])} | "
            f"{_est(r['estimates'][1], r['intervals'][1])} | {shift} | "
            f"{r['readings'][0]}/{r['readings'][1]} |"
        )
    return lines
