"""The reproduction report: every claim with its verdict, every figure with its caption.

``DIR/reproduce.json`` lists the experiments a ``reproduce`` ran (and any that crashed);
``DIR/report.md`` is rebuilt from it and the run folders' ``summary.json`` alone.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

from ._store import atomic_write

INDEX = "reproduce.json"
REPORT = "report.md"


def write_index(root: Path, index: dict) -> None:
    atomic_write(root / INDEX, json.dumps(index, indent=1, default=str).encode())


def read_index(root: Path) -> dict:
    try:
        return json.loads((root / INDEX).read_text())
    except (OSError, ValueError):
        names = sorted(p.parent.name for p in root.glob("*/summary.json"))
        return {"runs": names, "errors": {}}


def fmt(value: Any, limit: int = 48) -> str:
    """A compact rendering of a measured / expected / tolerance value.

    Parameters
    ----------
    value : Any
        The value: ``None`` renders as ``-``, a bool as ``yes``/``no``, a finite float to four
        significant digits (a non-finite one as ``nan``/``inf``), lists and dicts element by
        element, anything else through ``str``; runs of whitespace collapse to one space.
    limit : int
        The most characters of the result (of each element too); longer text is cut to
        ``limit - 3`` characters followed by ``...``. A float or bool is never cut.

    Returns
    -------
    str
        The rendering, on one line.
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, list):
        text = "[" + ", ".join(fmt(v, limit) for v in value) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {fmt(v, limit)}" for k, v in value.items()) + "}"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fails_run(claim: dict) -> bool:
    """Whether a stored claim fails its run (failed checks do; findings never do)."""
    return claim.get("kind", "check") == "check" and not claim.get("passed")


FINDING_WORDS = ("HELD", "NOT HELD", "UNRESOLVED", "depends on the reading")


def verdict_word(claim: dict) -> str:
    """``PASS``/``FAIL`` for checks, ``HELD``/``NOT HELD``/``UNRESOLVED`` for findings,
    ``MEASURED``.

    Parameters
    ----------
    claim : dict
        A stored claim (an entry of ``summary.json``'s ``claims``): its ``kind`` (``"check"``
        when absent, ``"finding"`` or ``"measurement"``), ``passed`` and, for a finding judged
        under several readings, ``verdict``.

    Returns
    -------
    str
        ``MEASURED`` for a measurement; a finding's stored ``verdict`` when it has one (which may
        be ``depends on the reading``), else ``HELD``/``NOT HELD`` from ``passed``; ``PASS`` or
        ``FAIL`` for a check.
    """
    if claim.get("kind") == "measurement":
        return "MEASURED"
    if claim.get("kind", "check") == "finding":
        if claim.get("verdict"):
            return claim["verdict"]
        return "HELD" if claim.get("passed") else "NOT HELD"
    return "PASS" if claim.get("passed") else "FAIL"


def marks(claim: dict) -> str:
    """What a finding's verdict needs beside it: ``underpowered`` (its power at the paper's value
    below the bar) and, when the documented readings disagree, each reading's verdict."""
    out = []
    if claim.get("underpowered"):
        out.append(f"underpowered (power {fmt(claim.get('power'))})")
    readings = claim.get("readings") or {}
    if len(set(readings.values())) > 1:
        out.append("; ".join(f"{k}: {v}" for k, v in readings.items()))
    return f" [{'; '.join(out)}]" if out else ""


def _detail(claim: dict) -> dict:
    """The primary reading's judgement of a finding (estimate, interval, threshold, direction,
    rule), else what the claim itself stores."""
    tol: dict = claim["tolerance"] if isinstance(claim.get("tolerance"), dict) else {}
    details = tol.get("reading_detail") or {}
    primary = tol.get("primary_reading")
    detail = details.get(primary) if primary in details else next(iter(details.values()), None)
    if detail:
        return detail
    return {
        "estimate": claim.get("measured"),
        "interval": claim.get("interval"),
        "threshold": tol.get("threshold"),
        "direction": tol.get("direction"),
        "rule": claim.get("rule"),
    }


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _bounds(interval: Any) -> tuple[float, float] | None:
    if isinstance(interval, list | tuple) and len(interval) == 2 and all(map(_finite, interval)):
        return float(interval[0]), float(interval[1])
    return None


def reason(claim: dict) -> str:
    """One line on why a claim got its verdict, from its rule and numbers: which bound of the
    interval crossed which threshold (or which band edge), why no interval could be formed, or
    which readings disagreed."""
    word = verdict_word(claim)
    if word == "MEASURED":
        return "a measurement: reported with its interval, not judged"
    if word in ("PASS", "FAIL"):
        expected, measured = claim.get("expected"), claim.get("measured")
        tol = claim.get("tolerance")
        within = "within" if word == "PASS" else "outside"
        if _finite(measured) and _finite(expected) and _finite(tol):
            return f"measured {fmt(measured)} is {within} {fmt(expected)} +- {fmt(tol)}"
        return f"measured {fmt(measured)} against {fmt(expected)}: {within} the tolerance"
    readings = claim.get("readings") or {}
    if word == "depends on the reading":
        return "the readings disagree: " + "; ".join(f"{k} {v}" for k, v in readings.items())
    detail = _detail(claim)
    if detail.get("reason"):
        return str(detail["reason"])
    agree = f" (all {len(readings)} readings agree)" if len(readings) > 1 else ""
    bounds = _bounds(detail.get("interval"))
    threshold, direction = detail.get("threshold"), detail.get("direction")
    if bounds is None:
        return f"no finite interval of the estimate {fmt(detail.get('estimate'))}" + agree
    lo, hi = bounds
    shown = f"[{fmt(lo)}, {fmt(hi)}]"
    if isinstance(threshold, list | tuple) and len(threshold) == 2:
        a, b = (fmt(t) for t in threshold)
        text = {
            "HELD": f"the interval {shown} lies inside the band [{a}, {b}]",
            "NOT HELD": f"the interval {shown} lies outside the band [{a}, {b}]",
        }.get(word, f"the interval {shown} crosses an edge of the band [{a}, {b}]")
        return text + agree
    if _finite(threshold) and direction in (">", "<"):
        t = fmt(threshold)
        if direction == ">":
            text = {
                "HELD": f"lower bound {fmt(lo)} > {t}",
                "NOT HELD": f"upper bound {fmt(hi)} <= {t}",
            }.get(word, f"the interval {shown} contains the threshold {t}")
        else:
            text = {
                "HELD": f"upper bound {fmt(hi)} < {t}",
                "NOT HELD": f"lower bound {fmt(lo)} >= {t}",
            }.get(word, f"the interval {shown} contains the threshold {t}")
        return text + agree
    return f"{detail.get('rule') or 'rule'}: interval {shown} against {fmt(claim.get('expected'))}"


def artefact(claim: dict, quick: bool) -> str | None:
    """Why a quick run's finding is an artefact of its size, not evidence (no finite estimate, no
    finite interval, or a zero-width interval from a sampling rule), else None. A full run's findings
    are never labelled: there an empty interval is a real UNRESOLVED."""
    if not quick or claim.get("kind") != "finding":
        return None
    detail = _detail(claim)
    if not _finite(detail.get("estimate")) and not isinstance(detail.get("estimate"), list):
        return "quick-run artefact: no finite estimate (nothing to count at this size)"
    bounds = _bounds(detail.get("interval"))
    if bounds is None:
        why = f" ({detail['reason']})" if detail.get("reason") else ""
        return f"quick-run artefact: no finite interval at this size{why}"
    if detail.get("rule") != "deterministic" and bounds[0] == bounds[1]:
        return "quick-run artefact: a zero-width interval from too few samples"
    return None


def on_scale(claim: dict) -> str:
    """A finding's measured value as its statement reads it: a value measured as a logarithm
    of a ratio (the measure's declared unit says ``log10(...)`` or ``log(...)`` of a ratio)
    is shown with the ratio it stands for; any other value as it is."""
    measured = claim.get("measured")
    text = fmt(measured)
    tol = claim.get("tolerance")
    measure = tol.get("measure") if isinstance(tol, dict) else None
    unit = str(measure.get("unit", "")) if isinstance(measure, dict) else ""
    if not isinstance(measured, int | float) or not _finite(measured):
        return text
    if "slope" in unit or "exponent" in unit:
        return text
    base = 10.0 if "log10" in unit else math.e if re.search(r"\blog\s*\(", unit) else None
    if base is None or not ("ratio" in unit or "/" in unit) or "difference" in unit:
        return text
    ratio = base ** float(measured) if abs(float(measured)) < 300 else math.inf
    return f"{text} (a ratio of {fmt(ratio)})"


def claim_row(experiment: str, claim: dict, quick: bool = False) -> dict:
    label = artefact(claim, quick)
    return {
        "experiment": experiment,
        "id": claim["id"],
        "measured": fmt(claim.get("measured")),
        "expected": fmt(claim.get("expected")),
        "tolerance": fmt(claim.get("tolerance")),
        "interval": fmt(claim.get("interval")),
        "passed": not fails_run(claim),
        "expected_full": fmt(claim.get("expected"), limit=10**6),
        "verdict": verdict_word(claim) + marks(claim),
        "word": verdict_word(claim),
        "reason": label or reason(claim),
        "on_scale": on_scale(claim),
        "artefact": label is not None,
    }


def failing(rows: list[dict]) -> list[str]:
    """``experiment:claim`` of every row that fails its run."""
    return [f"{r['experiment']}:{r['id']}" for r in rows if not r["passed"]]


def _runs(root: Path, index: dict) -> list[tuple[str, str | None, dict | None]]:
    """``(name, crash message, summary)`` of each run an index lists, each summary read once."""
    errors = index.get("errors", {})
    return [(name, errors.get(name), _summary(root / name)) for name in index.get("runs", [])]


def _rows(runs: list[tuple[str, str | None, dict | None]], quick: bool = False) -> list[dict]:
    """One row per claim (and per crashed or failed run) of a reproduce folder."""
    rows = []
    for name, error, summary in runs:
        if error is not None or summary is None:
            rows.append(_failed_row(name, "(run)", error or "no summary.json"))
            continue
        if summary.get("failed_tasks"):
            n = len(summary["failed_tasks"])
            rows.append(_failed_row(name, "(tasks)", f"{n} task(s) failed"))
        for control in summary.get("controls") or []:
            if not control.get("passed"):
                rows.append(
                    _failed_row(
                        name,
                        f"control:{control.get('id')}",
                        f"instrument {control.get('instrument')} misread its known case",
                    )
                )
        rows += [claim_row(name, claim, quick) for claim in summary.get("claims", [])]
    return rows


def _failed_row(name: str, ident: str, measured: str) -> dict:
    return {
        "experiment": name,
        "id": ident,
        "measured": fmt(measured, 60),
        "expected": "-",
        "tolerance": "-",
        "interval": "-",
        "passed": False,
        "verdict": "FAIL",
        "word": "FAIL",
        "reason": fmt(measured, 60),
        "on_scale": fmt(measured, 60),
        "artefact": False,
    }


def _summary(run: Path) -> dict | None:
    try:
        return json.loads((run / "summary.json").read_text())
    except (OSError, ValueError):
        return None


CELL = 48
"""The widest cell of the terminal table; a longer one is cut with ``...`` (the report and the
summary keep the whole text)."""


def _cell(x: Any) -> str:
    text = " ".join(str(x).split())
    return text if len(text) <= CELL else text[: CELL - 3] + "..."


def table(rows: list[dict]) -> str:
    """A plain-text table of claim rows (for the terminal): cells of at most `CELL`
    characters, no trailing spaces."""
    head = ["experiment", "claim", "measured", "interval", "expected", "tolerance", "verdict"]
    body = [
        [
            r["experiment"],
            r["id"],
            r["measured"],
            r["interval"],
            r["expected"],
            r["tolerance"],
            r["verdict"],
        ]
        for r in rows
    ]
    body = [[_cell(x) for x in line] for line in body]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _md(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _counts(rows: list[dict]) -> str:
    """``"3 held, 1 not held, 0 unresolved, 0 depends on the reading"`` of finding rows, the
    quick-run artefacts left out and counted apart."""
    real = [r for r in rows if not r.get("artefact")]
    text = ", ".join(f"{sum(r['word'] == w for r in real)} {w.lower()}" for w in FINDING_WORDS)
    apart = len(rows) - len(real)
    return text + (f"; {apart} quick-run artefact(s) not counted" if apart else "")


def _by_chance(runs) -> str:
    """``; x.xx of k expected wrong by chance``: the sum over the HELD and NOT HELD findings of
    their rules' audited rates at the threshold (`._audit_plan.expected_wrong()`; the
    committed audit of the working folder's ``results-data/``, else the nominal 2.5%)."""
    from ._audit_plan import expected_wrong, read_data

    findings = [
        (name, c)
        for name, _, summary in runs
        if summary
        for c in summary.get("claims", [])
        if c.get("kind") == "finding"
    ]
    decided = sum(c.get("verdict") in ("HELD", "NOT HELD") for _, c in findings)
    if not decided:
        return ""
    wrong = expected_wrong(findings, read_data("."))
    return f"; {wrong:.2f} of the {decided} HELD and NOT HELD expected wrong by chance"


def _papers() -> list:
    """The papers, each with the experiments of its system (the systems' declarations, which
    `gaugedyn.papers` re-exports as ``PAPERS``)."""
    from ._registry import DECLARATIONS

    return list(DECLARATIONS.values())


def _paper_section(paper, runs, provisional: str, quick: bool = False) -> list[str]:
    """One paper: its title, its verdict counts, its findings (the paper's value in full) with
    their verdicts, its checks summarised, and its figures."""
    title = f": *{paper.title}*" if paper.title else ""
    by = f" ({', '.join(paper.authors)})" if paper.authors else ""
    out = [
        f"## {paper.name}{title}{by}",
        "",
        _md(paper.subject[:1].upper() + paper.subject[1:]) + ".",
        "",
    ]
    mine = [(n, e, s) for n, e, s in runs if n in paper.experiments]
    if not mine:
        return out + ["No experiment of this paper was run.", ""]
    rows = _rows(mine, quick)
    findings = [r for r in rows if r.get("word") in FINDING_WORDS]
    checks = [r for r in rows if r.get("word") in ("PASS", "FAIL")]
    failed = [r for r in rows if not r["passed"]]
    controls = [c for _, _, s in mine if s for c in s.get("controls") or []]
    out.append(
        f"Experiments: {', '.join(n for n, _, _ in mine)}. Findings{provisional}: "
        f"{len(findings)} ({_counts(findings)}{_by_chance(mine)}). Checks: "
        f"{sum(r['passed'] for r in checks)} of {len(checks)} passed. Known-answer controls: "
        f"{sum(bool(c.get('passed')) for c in controls)} of {len(controls)} passed"
        + (f"; **failing: {', '.join(r['id'] for r in failed)}**" if failed else "")
        + "."
    )
    out.append("")
    if findings:
        out += [
            "| experiment | finding | statement | measured | interval | paper / claimed | "
            "verdict | why |",
            "|---|---|---|---|---|---|---|---|",
        ]
        statements = {
            (n, c["id"]): c.get("statement", "")
            for n, _, s in mine
            if s
            for c in s.get("claims", [])
        }
        for r in findings:
            out.append(
                f"| {_md(r['experiment'])} | {_md(r['id'])} | "
                f"{_md(statements.get((r['experiment'], r['id']), ''))} | "
                f"{_md(r['on_scale'])} | {_md(r['interval'])} | {_md(r['expected_full'])} "
                f"| {r['verdict']} | {_md(r['reason'])} |"
            )
        out.append("")
    for name, _, summary in mine:
        out += _figures(summary, f"{name}/")
    return out


def _figures(summary: dict | None, link_prefix: str) -> list[str]:
    """Each figure of a run, inline with its caption."""
    out = []
    for fig in (summary or {}).get("figures", []):
        png = next((f for f in fig.get("files", []) if f.endswith(".png")), None)
        if png is not None:
            caption = fig.get("caption") or fig["name"]
            out += [
                f"![{fig['name']}]({link_prefix}{png})",
                "",
                f"*Figure {_md(fig['name'])}.* {_md(caption)}",
                "",
            ]
    return out


def write_report(root: Path) -> tuple[Path, list[dict]]:
    """Write ``root/report.md`` from the index and the run summaries; return its path and the
    claim rows (one per claim, and per crashed or failed run).

    The report opens with one section per paper (`gaugedyn.papers`: title, verdict counts,
    the findings with the paper's values in full, checks summarised, figures), then the
    experiments that belong to no paper; the full claims table and each run's configuration and
    details follow in appendices. Under a quick configuration every verdict is labelled
    provisional."""
    root = Path(root)
    index = read_index(root)
    runs = _runs(root, index)
    quick = bool(index.get("quick"))
    rows = _rows(runs, quick)
    failed = failing(rows)
    out = ["# gaugedyn reproduction report", ""]
    mode = "quick" if quick else "full"
    provisional = (
        " (provisional (quick): fewer seeds, steps or cells than the protocol's)" if quick else ""
    )
    out.append(
        f"Written {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {mode} configuration."
    )
    if index.get("command"):
        out.append(f"Command: `{index['command']}`.")
    verdict = "every check passed" if not failed else f"{len(failed)} failing: {', '.join(failed)}"
    findings = [r for r in rows if r.get("word") in FINDING_WORDS]
    if findings:
        verdict += (
            f"; {len(findings)} findings{provisional} (reported as measured, never "
            f"failing the run): {_counts(findings)}"
        )
    out += ["", f"**Verdict: {verdict}.**", ""]
    papers = _papers()
    claimed = {e for p in papers for e in p.experiments}
    for paper in papers:
        out += _paper_section(paper, runs, provisional, quick)
    others = [(n, e, s) for n, e, s in runs if n not in claimed]
    if others:
        out += ["## Other experiments", ""]
        for name, error, summary in others:
            other = _rows([(name, error, summary)], quick)
            out += [
                f"- {name}: {_counts([r for r in other if r.get('word') in FINDING_WORDS])}"
                f"; {sum(not r['passed'] for r in other)} failing.",
                "",
            ]
            out += _figures(summary, f"{name}/")
        out.append("")
    out += ["## Appendix A: every claim", ""]
    out.append(
        "| experiment | claim | measured | interval | expected | tolerance | verdict | why |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        verdict_cell = r["verdict"].lower() if r["passed"] else f"**{r['verdict']}**"
        out.append(
            f"| {_md(r['experiment'])} | {_md(r['id'])} | {_md(r['measured'])} | "
            f"{_md(r['interval'])} | {_md(r['expected'])} | {_md(r['tolerance'])} | {verdict_cell} "
            f"| {_md(r['reason'])} |"
        )
    out += ["", "## Appendix B: the runs", ""]
    versions = None
    for name, error, summary in runs:
        out += ["", f"### {name}", ""]
        if summary is None:
            out += [f"The run did not complete: {_md(error or 'no summary.json')}."]
            continue
        versions = versions or summary.get("versions")
        out += experiment_section(summary, f"{name}/", figures=False)
    if versions:
        out += ["", "## Versions", ""]
        out += [f"- {k}: {v}" for k, v in versions.items()]
    path = root / REPORT
    atomic_write(path, ("\n".join(out) + "\n").encode())
    return path, rows


WIDTH = 120
"""The widest line `summary_text()` prints."""


def _wrap(text: str, indent: str = "  ") -> list[str]:
    import textwrap

    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def summary_text(root: Path) -> str:
    """What ``reproduce`` prints: one paragraph per paper (its findings counted by verdict,
    quick-run artefacts apart, its checks and controls), then every failing row with its
    reason; lines of at most `WIDTH` characters. The whole table is in ``report.md``."""
    root = Path(root)
    index = read_index(root)
    runs = _runs(root, index)
    quick = bool(index.get("quick"))
    out = [f"gaugedyn reproduction ({'quick' if quick else 'full'}): {len(runs)} experiments"]
    papers = _papers()
    claimed = {e for p in papers for e in p.experiments}
    groups = [(p.name, [r for r in runs if r[0] in p.experiments]) for p in papers]
    groups.append(("other experiments", [r for r in runs if r[0] not in claimed]))
    failed: list[dict] = []
    for name, mine in groups:
        if not mine:
            continue
        rows = _rows(mine, quick)
        findings = [r for r in rows if r.get("word") in FINDING_WORDS]
        checks = [r for r in rows if r.get("word") in ("PASS", "FAIL")]
        failed += [r for r in rows if not r["passed"]]
        out += _wrap(
            f"- {name}: findings {_counts(findings)}; checks {sum(r['passed'] for r in checks)} "
            f"of {len(checks)} passed"
        )
    if failed:
        out.append(f"failing ({len(failed)}):")
        for r in failed[:20]:
            out += _wrap(f"  {r['experiment']}:{r['id']}: {r['reason']}", "    ")
        if len(failed) > 20:
            out.append(f"  ... and {len(failed) - 20} more (report.md)")
    return "\n".join(out)


def experiment_section(summary: dict, link_prefix: str = "", figures: bool = True) -> list[str]:
    """Markdown lines for one run: status, configuration, claims, figures, failed tasks."""
    out = []
    if summary.get("description"):
        out += [_md(summary["description"]), ""]
    stats = summary.get("diagnostics", {}).get("tasks", {})
    wall = summary.get("diagnostics", {}).get("wall_seconds")
    wall_text = f", {wall:.1f} s wall time" if isinstance(wall, int | float) else ""
    out.append(
        f"Status: **{summary.get('status')}**; {stats.get('tasks', '?')} tasks "
        f"({stats.get('reused', 0)} reused from the store, {stats.get('computed', 0)} computed, "
        f"{stats.get('failed', 0)} failed){wall_text}."
    )
    config = summary.get("configuration", {})
    out += ["", "Configuration:", "", "```json"]
    shown = {k: config.get(k) for k in ("experiment", "seed", "quick", "source", "overrides")}
    shown["params"] = config.get("params")
    out += [json.dumps(shown, indent=1), "```", ""]
    out += controls_section(summary.get("controls"))
    out += robustness_section(summary)
    claims = summary.get("claims", [])
    if claims:
        out += ["| claim | statement | measured | interval | expected | tolerance | verdict |"]
        out += ["|---|---|---|---|---|---|---|"]
        for c in claims:
            r = claim_row("", c)
            out.append(
                f"| {_md(r['id'])} | {_md(c.get('statement', ''))} | {_md(r['measured'])} | "
                f"{_md(r['interval'])} | {_md(r['expected'])} | {_md(r['tolerance'])} | {r['verdict']} |"
            )
        out.append("")
    for fig in summary.get("figures", []) if figures else []:
        png = next((f for f in fig.get("files", []) if f.endswith(".png")), None)
        if png is None:
            continue
        caption = fig.get("caption") or fig["name"]
        out += [
            f"![{fig['name']}]({link_prefix}{png})",
            "",
            f"*Figure {_md(fig['name'])}.* {_md(caption)}",
            "",
        ]
    failed = summary.get("failed_tasks", [])
    if failed:
        out += ["Failed tasks:", ""]
        for f in failed[:50]:
            out.append(f"- `{json.dumps(f.get('task'))}`: {f.get('type')}: {_md(f.get('message'))}")
        if len(failed) > 50:
            out.append(f"- ... and {len(failed) - 50} more (see summary.json)")
        out.append("")
    return out


def run_report(summary: dict) -> str:
    """``report.md`` of a single ``gaugedyn run`` folder."""
    out = [f"# gaugedyn run: {summary.get('experiment', '?')}", ""]
    mode = "quick" if summary.get("configuration", {}).get("quick") else "full"
    out += [f"{mode.capitalize()} configuration.", ""]
    out += experiment_section(summary)
    if summary.get("versions"):
        out += ["## Versions", ""]
        out += [f"- {k}: {v}" for k, v in summary["versions"].items()]
    return "\n".join(out) + "\n"


def controls_section(controls: list[dict] | None) -> list[str]:
    """The run's known-answer controls: instrument, kind, case, measured, result, what it proves."""
    if not controls:
        return ["Known-answer controls: none declared.", ""]
    passed = sum(bool(c.get("passed")) for c in controls)
    out = [
        f"Known-answer controls: {passed} of {len(controls)} passed"
        + ("" if passed == len(controls) else " (the run stopped before its tasks)")
        + ".",
        "",
        "| control | instrument | kind | case (known answer) | measured | result | proves |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in controls:
        result = "pass" if c.get("passed") else "**FAIL**"
        out.append(
            f"| {_md(c.get('id'))} | {_md(c.get('instrument'))} | {c.get('kind')} | "
            f"{_md(c.get('case'))} | {_md(fmt(c.get('measured'), 60))} | {result} | "
            f"{_md(c.get('proves'))} |"
        )
    return out + [""]


def robustness_text(robustness: dict | None) -> str:
    """One cell: ``robust``/``NOT robust``, the share per verdict, the flipping constants.

    Parameters
    ----------
    robustness : dict or None
        A finding's ``robustness`` record from a multiverse: ``robust`` (bool), ``shares``
        (verdict to fraction of specifications), ``specifications`` (their number) and
        ``flipping`` (the set-up constants that change the verdict).

    Returns
    -------
    str
        ``-`` when there is no record; else e.g. ``robust over 15 specs (HELD 100%)``, the word
        ``**NOT robust**`` in bold when it is not, and ``; flipped by ...`` when constants flip it.
    """
    if not robustness:
        return "-"
    shares = robustness.get("shares", {})
    parts = [f"{k} {100 * float(v):.0f}%" for k, v in shares.items() if float(v) > 0]
    word = "robust" if robustness.get("robust") else "**NOT robust**"
    flips = robustness.get("flipping") or []
    text = f"{word} over {robustness.get('specifications')} specs ({', '.join(parts)})"
    return text + (f"; flipped by {', '.join(flips)}" if flips else "")


def robustness_section(summary: dict) -> list[str]:
    """Each finding's verdict over the declared set-up space, when a multiverse judged it."""
    space = summary.get("space") or {}
    findings = [c for c in summary.get("claims", []) if c.get("kind") == "finding"]
    if not findings:
        return []
    if not any(c.get("robustness") for c in findings):
        names = ", ".join(space) or "none declared"
        return [
            f"Robustness: not judged in this run (declared set-up constants: {names}; "
            "`gaugedyn multiverse` judges every finding over them).",
            "",
        ]
    out = [
        "Robustness over the declared set-up space (robust: no specification gives the "
        "opposite of HELD / NOT HELD):",
        "",
        "| finding | verdict | over the space |",
        "|---|---|---|",
    ]
    for c in findings:
        out.append(
            f"| {_md(c['id'])} | {verdict_word(c)} | {_md(robustness_text(c.get('robustness')))} |"
        )
    return out + [""]
