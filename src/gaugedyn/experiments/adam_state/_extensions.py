"""The extension settings of the paper's Table 3, declared, and its four criteria read from a run.

Table 3 of the paper lists, per extension setting, whether four ten-update claims hold (``Y``:
the criterion is satisfied; ``N``: an interval establishes failure; ``?``: unresolved):

- **endpoints**: every endpoint interval inside its tolerance (``endpoints.favoured`` and
  ``endpoints.opposed``);
- **common-scale pattern effect**: a positive interval (``pattern.common_scale``);
- **reversal**: the own contrast positive and the exchanged-``v`` contrast negative
  (``table4.own`` and ``table4.exchange_v``, Table 4's seeds; a sign criterion);
- **reset equivalence**: the reset contrast inside ``+-0.02`` (``table2.reset.combined``).

Each extension (`EXTENSIONS`) is the declared experiment with one set-up setting changed,
run with the same protocol (``gaugedyn run simulations/shared_representation.toml --set ...``:
another set-up family, so it calibrates its own choice by the same rule, from the seed the same
settings give; `calibration_command()` stores that calibration beside the full one as
`calibration_file()`, which the run then reuses, one task per table); `criteria()` reads the four letters
of each acquisition reading from the run's findings, and `table()` sets them beside the
paper's (`PAPER_TABLE3`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping

EXTENSIONS: dict[str, dict] = {
    "baseline": {},
    "width 64": {"width": 64},
    "ReLU": {"activation": "relu"},
    "rho = 0": {"rho": 0.0},
    "beta2 = 0.9": {"beta2": 0.9},
    "beta2 = 0.99": {"beta2": 0.99},
    "formation 1500": {"formation_steps": 1500},
    "three targets": {"targets": 3, "d_Z": [2, 3], "acquisition": ["rate", "step"]},
}
"""The declared extension settings (name -> the settings changed), fixed before any run. The
first six are Table 3's; ``three targets`` is the abstract's three-target comparison at the
set-up `THREE_TARGET_SEARCH` selects (its first setting, where the full search found a candidate
of every defining property; added after that search and before any run of it)."""

CRITERIA: dict[str, tuple[str, ...]] = {
    "endpoints": ("endpoints.favoured", "endpoints.opposed"),
    "common-scale pattern effect": ("pattern.common_scale",),
    "reversal": ("table4.own", "table4.exchange_v"),
    "reset equivalence": ("table2.reset.combined",),
}
"""Table 3's criteria and the findings each needs (all HELD: Y; any NOT HELD: N; else ?)."""

PAPER_TABLE3: dict[str, str | None] = {
    "baseline": "YYYY",
    "width 64": "YYYN",
    "ReLU": "YYYY",
    "rho = 0": "YYYY",
    "beta2 = 0.9": "YYNN",
    "beta2 = 0.99": "YYYY",
    "formation 1500": None,
    "three targets": None,
}
"""The paper's letters per setting, in `CRITERIA`'s order (``None``: not in Table 3)."""

_LETTER = {"HELD": "Y", "NOT HELD": "N"}


def overrides(name: str) -> list[str]:
    """Extension ``name``'s settings as ``--set`` values (a list as its TOML literal)."""
    return [
        f"{k}={json.dumps(v) if isinstance(v, list) else v}" for k, v in EXTENSIONS[name].items()
    ]


def _sets(name: str) -> str:
    return "".join(f" --set {shlex.quote(o)}" for o in overrides(name))


def command(name: str) -> str:
    """The command that runs extension ``name``."""
    return "gaugedyn run simulations/shared_representation.toml" + _sets(name)


def calibration_file(name: str) -> str:
    """The file beside ``calibration.json`` that stores extension ``name``'s calibration
    (``calibration.beta2-0.9.json``; `._calibration.OTHER_FAMILIES`)."""
    tag = "_".join(
        f"{k}-{'+'.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in EXTENSIONS[name].items()
    )
    return f"calibration.{tag}.json" if tag else "calibration.json"


def calibration_command(name: str) -> str:
    """The command that stores extension ``name``'s calibration (its set-up family searched by
    the declared rule from the seed its settings give, as a run that calibrates would)."""
    return (
        "python -m gaugedyn.experiments.adam_state._calibration "
        f"simulations/shared_representation.toml{_sets(name)} "
        f"--out src/gaugedyn/experiments/adam_state/{calibration_file(name)}"
    )


def _letters(verdicts: list[str]) -> str:
    got = [_LETTER.get(v, "?") for v in verdicts]
    if "N" in got:
        return "N"
    return "Y" if got and all(g == "Y" for g in got) else "?"


def criteria(claims: list[Mapping]) -> dict[str, dict[str, str]]:
    """Per acquisition reading of a run, the letter of each criterion of `CRITERIA`
    (from the findings' ``tolerance.by_acquisition``; a finding missing from the run: ``?``)."""
    found = {
        str(c["id"]).removeprefix("shared_representation."): c
        for c in claims
        if c.get("kind") == "finding"
    }
    meanings: list[str] = []
    for c in found.values():
        for m in (c.get("tolerance") or {}).get("by_acquisition", {}):
            if m not in meanings:
                meanings.append(m)
    out: dict[str, dict[str, str]] = {}
    for m in meanings:
        out[m] = {}
        for name, ids in CRITERIA.items():
            verdicts = [
                (found[i].get("tolerance") or {}).get("by_acquisition", {}).get(m, "UNRESOLVED")
                if i in found
                else "UNRESOLVED"
                for i in ids
            ]
            out[m][name] = _letters(verdicts)
    return out


def table(runs: Mapping[str, Mapping | None]) -> list[str]:
    """Markdown lines: per declared setting, the paper's letters and each acquisition reading's
    from its run's summary (``runs[name]``; ``None``: not run yet)."""
    head = "| setting | command | " + " | ".join(CRITERIA) + " |"
    lines = [head, "|---|---|" + "---|" * len(CRITERIA)]
    for name in EXTENSIONS:
        paper = PAPER_TABLE3[name]
        cells = [paper[i] if paper else "-" for i in range(len(CRITERIA))]
        summary = runs.get(name)
        got = criteria(summary.get("claims", [])) if summary else {}
        for i, crit in enumerate(CRITERIA):
            ours = "; ".join(f"{m}: {v[crit]}" for m, v in got.items()) or (
                "no verdict per meaning (an earlier protocol's run)" if summary else "not run"
            )
            cells[i] = f"paper {cells[i]}, ours {ours}"
        lines.append(f"| {name} | `{command(name)}` | " + " | ".join(cells) + " |")
    return lines


THREE_TARGET_SEARCH: tuple[dict, ...] = (
    {"targets": 3, "d_Z": [2, 3], "acquisition": ["rate", "step"]},
    {"targets": 3, "d_Z": [2, 3], "acquisition": ["rate", "step"], "formation_steps": 1500},
    {"targets": 3, "d_Z": [2, 3], "acquisition": ["rate", "step"], "width": 64},
    {
        "targets": 3,
        "d_Z": [2, 3],
        "acquisition": ["rate", "step"],
        "width": 64,
        "formation_steps": 1500,
    },
)
"""The declared search for a three-target family whose representation (width ``d_Z >= 2``)
specializes, in order, fixed before any run: the paper's capacities ``d_Z`` 2 and 3 at three
targets (``d_Z = 2`` cannot hold every target, so it must allocate), then the two levers the
paper's "capacities" suggest, more formation (1500 updates) and a wider first encoder layer (64),
then both. Each is calibrated with the declared family's rule; the search stops at the first
setting with a candidate of every defining property, which is then the three-target set-up."""


def search(
    toml: str,
    base: tuple[str, ...] = (),
    settings=THREE_TARGET_SEARCH,
    workers: int = 1,
    progress=None,
) -> dict:
    """Calibrate each setting of ``settings`` in order (the configuration of ``toml`` with
    ``base`` overrides, then the setting's), stopping at the first with a choice: per setting,
    its overrides, the choice (or ``None``), each candidate's probe specialization (the smaller
    of the two routes') and properties. The record is the search's, whether or not it finds one;
    ``progress(record)`` is called after every setting (the command line writes it then)."""
    import json

    from ...harness import load_config
    from . import _calibration as sc

    record: dict = {"settings": [], "found": None, "base": list(base)}
    for over in settings:
        sets = [*base, *(f"{k}={json.dumps(v)}" for k, v in over.items()), "recalibrate=true"]
        cfg = load_config(toml, overrides=sets)
        task = cfg.tasks[0]
        seed = sc.calibration_seed(task, sc.setup_keys(cfg.params), cfg.seed)
        cal = sc.run_calibration(task, seed, workers)
        record["settings"].append(
            {
                "overrides": over,
                "choice": cal["choice"],
                "seed": sc.seed_record(seed),
                "candidates": [
                    {
                        "name": r["name"],
                        "probe_specialization": min(r["probe_specialization"].values()),
                        "properties": r["properties"],
                    }
                    for r in cal["candidates"]
                ],
            }
        )
        if cal["choice"]:
            record["found"] = over
        record["complete"] = bool(cal["choice"]) or len(record["settings"]) == len(settings)
        if progress is not None:
            progress(record)
        if cal["choice"]:
            break
    return record


def search_table(record: Mapping) -> list[str]:
    """Markdown lines of a search record (`search()`): per setting and candidate, the smaller
    probe specialization of the two routes and the three defining properties."""
    lines = [
        "| setting | candidate | probe specialization | matched | specialized | conflicting |",
        "|---|---|---|---|---|---|",
    ]
    for s in record["settings"]:
        over = ", ".join(f"{k} = {v}" for k, v in s["overrides"].items())
        for c in s["candidates"]:
            p = c["properties"]
            yes = ["yes" if p[k] else "no" for k in ("matched", "specialized", "conflicting")]
            lines.append(
                f"| {over} | {c['name']} | {c['probe_specialization']:.3f} | "
                + " | ".join(yes)
                + " |"
            )
    return lines


def main(argv=None) -> int:
    import argparse
    import json
    import sys
    from pathlib import Path

    p = argparse.ArgumentParser(
        description="the declared three-target search of shared_representation (THREE_TARGET_SEARCH)"
    )
    p.add_argument("config", help="the configuration file (simulations/shared_representation.toml)")
    p.add_argument("--out", required=True, help="where to write the search's record (JSON)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an override under every setting (a full run's settings by default)",
    )
    p.add_argument(
        "--workers", type=int, default=1, choices=range(1, 65), metavar="N", help="processes"
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        print(f"--out {out}: exists; give a new path (nothing is overwritten)", file=sys.stderr)
        return 2

    def write(rec: dict) -> None:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(rec, indent=1) + "\n")
        tmp.replace(out)

    record = search(args.config, tuple(args.set), workers=args.workers, progress=write)
    found = record["found"]
    print(f"{out}: " + (f"found {found}" if found else "no setting of the search specializes"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
