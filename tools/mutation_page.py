"""Write the score of the generated mutants into docs/testing.md from the stored record;
``--check`` compares instead.

The record is ``tools/mutation-data/generated.json`` (written mutant by mutant by
``tools/mutate.py --generated --select coverage``); the equivalent mutants and the reason each
cannot be told apart by any test are in ``tools/mutation-data/equivalent.toml``. The block
between ``<!-- mutation-score:start -->`` and ``<!-- mutation-score:end -->`` of the page is
replaced by the rendering: the score (killed over the mutants that are not equivalent), a table
per area, the runs (command, date, commit, load), the mutants killed only by a test added for
them, the equivalents with their reasons and the survivors. Nothing is typed in: ``--check``
(run by ``tests/test_mutation_page.py``) fails when the page differs from what the record gives.

    python tools/mutation_page.py [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tools" / "mutation-data" / "generated.json"
EQUIVALENT = ROOT / "tools" / "mutation-data" / "equivalent.toml"
PAGE = ROOT / "docs" / "testing.md"
START, END = "<!-- mutation-score:start -->", "<!-- mutation-score:end -->"
AREAS = ("stats", "theory", "training", "adam", "gauge", "findings")


def killed(entry: dict) -> bool:
    return entry["outcome"].startswith("killed")


def score(
    record: dict, equivalent: dict[str, str], drawn: set[str] | None = None
) -> tuple[int, int]:
    """``(killed, not equivalent)`` over the recorded mutants, or over those of them still in
    the ``drawn`` set (a record of a mutant no longer drawn measured a file that has changed
    since); a skipped one counts as not killed: its place moved and it must be regenerated."""
    entries = {
        k: v
        for k, v in record["mutants"].items()
        if k not in equivalent and (drawn is None or k in drawn)
    }
    return sum(killed(v) for v in entries.values()), len(entries)


def _added(entry: dict) -> bool:
    """Killed now, survived in an earlier run: killed by a test added for it."""
    return killed(entry) and any(not killed(h) for h in entry.get("history", []))


def _place(entry: dict) -> str:
    return f"`{entry['file'].removeprefix('src/gaugedyn/')}:{entry['line']}`"


def _selection(run: dict) -> str:
    m = run.get("map")
    if run.get("select") != "coverage" or not m:
        return "each mutant against whole test files"
    scope = "the areas' test files" if m["scope"] == "area" else "the whole suite"
    return (
        f"each mutant against the tests that run its line, from the coverage of "
        f"{scope} ({m['tests']} tests, commit `{m['commit']}`)"
    )


def the_set() -> list[str]:
    """The ids of the generated set (`tools/mutants.py`'s draw: 60 per area, seed 0)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import mutants

    return [g.id for area in mutants.AREAS for g in mutants.sample(area, 60, 0)]


def render(record: dict, equivalent: dict[str, str], drawn: list[str] | None = None) -> str:
    """The page's block: the score, the table and the lists over the mutants of the ``drawn``
    set (default `the_set()`); recorded mutants no longer drawn are counted apart, not scored."""
    unknown = sorted(set(equivalent) - set(record["mutants"]))
    if unknown:
        raise ValueError(f"equivalent.toml names mutants the record lacks: {', '.join(unknown)}")
    drawn = the_set() if drawn is None else drawn
    k, n = score(record, equivalent, set(drawn))
    missing = [i for i in drawn if i not in record["mutants"]]
    gone = [i for i in record["mutants"] if i not in set(drawn)]
    entries = {i: e for i, e in record["mutants"].items() if i in set(drawn)}
    equivalent = {i: why for i, why in equivalent.items() if i in entries}
    lines = [
        f"**{k} of {n} non-equivalent generated mutants killed ({100 * k / n:.1f}%)**; "
        f"{len(drawn) - len(missing)} of the {len(drawn)} mutants of the set run, "
        f"{len(equivalent)} equivalent; {len(missing)} not yet run"
        + (f" ({', '.join(sorted({i.split(':')[0] for i in missing}))})" if missing else "")
        + (
            f"; {len(gone)} recorded mutants no longer drawn (their file changed since)."
            if gone
            else "."
        )
        if n
        else "No mutant recorded yet.",
        "",
        "| area | mutants | killed | of them by the time limit | by a test added for it "
        "| equivalent | survived | of them on a line no test runs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for area in [*AREAS, "all"]:
        rows = [(i, e) for i, e in entries.items() if area == "all" or e["area"] == area]
        if not rows:
            continue
        eq = [i for i, _ in rows if i in equivalent]
        live = [e for i, e in rows if i not in equivalent]
        surv = [e for e in live if not killed(e)]
        cells = [
            len(rows),
            sum(killed(e) for e in live),
            sum(e["outcome"] == "killed (timeout)" for e in live),
            sum(_added(e) for e in live),
            len(eq),
            len(surv),
            sum(e["selection"] == "not covered" for e in surv),
        ]
        name = "**all**" if area == "all" else f"`{area}`"
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "The runs (each resumes the record where the previous one stopped):", ""]
    for r in record["runs"]:
        command = re.sub(
            r"--only (\S+)", lambda m: f"--only <{m.group(1).count(',') + 1} ids>", r["command"]
        )
        load = ", ".join(f"{x:.2f}" for x in r["load_start"])
        end = ", ".join(f"{x:.2f}" for x in r["load_end"])
        lines.append(
            f"- `{command}`: {r['started']} to {r['ended'][11:]}, commit `{r['commit']}`"
            f"{' (source changed)' if r['dirty'] else ''}, {r['mutants']} mutants, "
            f"{r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} CPU-s, load {load} at the start and "
            f"{end} at the end; {_selection(r)}."
        )
    added = sorted(i for i, e in entries.items() if i not in equivalent and _added(e))
    if added:
        lines += ["", "Killed by a test written for them after they survived:", ""]
        for i in added:
            e = entries[i]
            lines.append(f"- `{i}` ({_place(e)}, `{e['old']}` to `{e['new']}`): `{e['killed_by']}`")
    if equivalent:
        lines += ["", "Equivalent (no test can tell them from the code):", ""]
        for i in sorted(equivalent):
            e = entries[i]
            lines.append(f"- `{i}` ({_place(e)}, `{e['old']}` to `{e['new']}`): {equivalent[i]}")
    survivors = sorted(i for i, e in entries.items() if i not in equivalent and not killed(e))
    lines += ["", "Survivors:" if survivors else "Survivors: none.", ""]
    for i in survivors:
        e = entries[i]
        where = " (a line no test runs)" if e["selection"] == "not covered" else ""
        lines.append(f"- `{i}` ({_place(e)}, `{e['old']}` to `{e['new']}`){where}")
    return "\n".join(lines).rstrip() + "\n"


def load() -> tuple[dict, dict[str, str]]:
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    eq = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8")) if EQUIVALENT.exists() else {}
    return record, {k: v["reason"] for k, v in eq.items()}


def main(argv: list[str] | None = None, page: Path | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare the page, write nothing")
    args = p.parse_args(argv)
    page = page or PAGE
    text = page.read_text(encoding="utf-8")
    if text.count(START) != 1 or text.count(END) != 1:
        print(f"{page}: needs one {START} and one {END}", file=sys.stderr)
        return 2
    head, rest = text.split(START)
    _, tail = rest.split(END)
    new = head + START + "\n" + render(*load()) + END + tail
    if args.check:
        if new != text:
            print(f"{page} differs from the stored mutation record; run tools/mutation_page.py")
            return 1
        return 0
    page.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
