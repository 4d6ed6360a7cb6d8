"""The extension settings of the paper's Table 3, declared, and its four criteria read from a run.

Table 3 of the paper lists, per extension setting, whether four ten-update claims hold (``Y``:
the criterion is satisfied; ``N``: an interval establishes failure; ``?``: unresolved):

- **endpoints**: every endpoint interval inside its tolerance (``endpoints.favoured`` and
  ``endpoints.opposed``);
- **common-scale pattern effect**: a positive interval (``pattern.common_scale``);
- **reversal**: the own contrast positive and the exchanged-``v`` contrast negative
  (``table4.own`` and ``table4.exchange_v``, Table 4's seeds; a sign criterion);
- **reset equivalence**: the reset contrast inside ``+-0.02`` (``table2.reset.combined``).

Each extension (:data:`EXTENSIONS`) is the declared experiment with one set-up setting changed,
run with the same protocol (``gaugedyn run simulations/shared_representation.toml --set ...``:
another set-up family, so it calibrates its own choice); :func:`criteria` reads the four letters
of each acquisition reading from the run's findings, and :func:`table` sets them beside the
paper's (:data:`PAPER_TABLE3`).
"""

from __future__ import annotations

from collections.abc import Mapping

EXTENSIONS: dict[str, dict] = {
    "baseline": {},
    "width 64": {"width": 64},
    "ReLU": {"activation": "relu"},
    "rho = 0": {"rho": 0.0},
    "beta2 = 0.9": {"beta2": 0.9},
    "beta2 = 0.99": {"beta2": 0.99},
    "formation 1500": {"formation_steps": 1500},
}
"""The declared extension settings (name -> the settings changed), fixed before any run."""

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
}
"""The paper's letters per setting, in :data:`CRITERIA`'s order (``None``: not in Table 3)."""

_LETTER = {"HELD": "Y", "NOT HELD": "N"}


def command(name: str) -> str:
    """The command that runs extension ``name``."""
    sets = " ".join(f"--set {k}={v}" for k, v in EXTENSIONS[name].items())
    return ("gaugedyn run simulations/shared_representation.toml " + sets).strip()


def _letters(verdicts: list[str]) -> str:
    got = [_LETTER.get(v, "?") for v in verdicts]
    if "N" in got:
        return "N"
    return "Y" if got and all(g == "Y" for g in got) else "?"


def criteria(claims: list[Mapping]) -> dict[str, dict[str, str]]:
    """Per acquisition reading of a run, the letter of each criterion of :data:`CRITERIA`
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
            ours = "; ".join(f"{m}: {v[crit]}" for m, v in got.items()) or "not run"
            cells[i] = f"paper {cells[i]}, ours {ours}"
        lines.append(f"| {name} | `{command(name)}` | " + " | ".join(cells) + " |")
    return lines
