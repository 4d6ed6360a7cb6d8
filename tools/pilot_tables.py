"""Write the stored pilots of ``spike_boundary`` into the Adam-stability page.

``spike_boundary``'s network tasks take their step size and scan range from a pilot stored in
``gaugedyn/experiments/adam_stability/pilots.json`` (`_calibration.calibration_pilot()`; the
rule that chose them, `_calibration.rule_met()`). The block of ``docs/adam-stability.md``
between ``<!-- pilots -->`` and ``<!-- end pilots -->`` is generated from that file
(`_calibration.pilot_markdown()`), one table per stored pilot, so the page shows the pilots the
code reads. The block between ``<!-- level pilot -->`` and ``<!-- end level pilot -->`` is
generated from ``level_pilot.json`` (`_level_pilot.pilot_markdown()`: the quadratic's edge level
against the detector's rise threshold). The block between ``<!-- family pilot -->`` and
``<!-- end family pilot -->`` is generated from ``family_pilot.json``
(`_family_pilot.pilot_markdown()`: the second network family chosen by its settled edges), the
one between ``<!-- family wall -->`` and ``<!-- end family wall -->`` from ``family_wall.json``
(`_family_wall.wall_markdown()`: the core-wall measurement on it), and the one between
``<!-- map pilot -->`` and ``<!-- end map pilot -->`` from ``map_pilot.json``
(`_map_pilot.pilot_markdown()`: the maps of ``n > 2`` on a fine grid and the design check of
their rows and grid); the one between ``<!-- task scan pilot -->`` and
``<!-- end task scan pilot -->`` from ``task_pilot.json`` (`_task_pilot.pilot_markdown()`: the
network tasks' third design). Run from the repository
root::

    .venv/bin/python tools/pilot_tables.py            # rewrite the block in place
    .venv/bin/python tools/pilot_tables.py --check    # exit 1 if the page is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gaugedyn.experiments.adam_stability import (  # noqa: E402
    _calibration,
    _family_pilot,
    _family_wall,
    _level_pilot,
    _map_pilot,
    _task_pilot,
)

PAGE = ROOT / "docs" / "adam-stability.md"
BLOCK = re.compile(r"(<!-- pilots -->\n)(.*?)(<!-- end pilots -->)", re.S)
LEVEL_BLOCK = re.compile(r"(<!-- level pilot -->\n)(.*?)(<!-- end level pilot -->)", re.S)
FAMILY_BLOCK = re.compile(r"(<!-- family pilot -->\n)(.*?)(<!-- end family pilot -->)", re.S)
WALL_BLOCK = re.compile(r"(<!-- family wall -->\n)(.*?)(<!-- end family wall -->)", re.S)
MAP_BLOCK = re.compile(r"(<!-- map pilot -->\n)(.*?)(<!-- end map pilot -->)", re.S)
TASK_BLOCK = re.compile(r"(<!-- task scan pilot -->\n)(.*?)(<!-- end task scan pilot -->)", re.S)


def body() -> str:
    """The block's text: every stored pilot's table, in the file's order."""
    parts = ["\n".join(_calibration.pilot_markdown(t)) for t in _calibration.STORED_PILOTS]
    return "\n\n".join(parts) + "\n"


def level_body() -> str:
    """The level block's text: the stored edge-level pilot's tables."""
    return "\n".join(_level_pilot.pilot_markdown()) + "\n"


def family_body() -> str:
    """The family block's text: the stored second-family pilot's tables."""
    return "\n".join(_family_pilot.pilot_markdown()) + "\n"


def wall_body() -> str:
    """The wall block's text: the stored core-wall measurement and its findings."""
    return "\n".join(_family_wall.wall_markdown()) + "\n"


def map_body() -> str:
    """The map block's text: the stored pilot of the maps of n > 2 and its design check."""
    return "\n".join(_map_pilot.pilot_markdown()) + "\n"


def task_body() -> str:
    """The block of the third task design's pilot (`_task_pilot.pilot_markdown()`)."""
    return "\n".join(_task_pilot.pilot_markdown()) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    blocks = (
        (BLOCK, "pilots", body),
        (LEVEL_BLOCK, "level pilot", level_body),
        (FAMILY_BLOCK, "family pilot", family_body),
        (WALL_BLOCK, "family wall", wall_body),
        (MAP_BLOCK, "map pilot", map_body),
        (TASK_BLOCK, "task scan pilot", task_body),
    )
    new = text
    for block, name, make in blocks:
        if not block.search(text):
            print(f"{PAGE.relative_to(ROOT)}: no <!-- {name} --> block")
            return 1
        new = block.sub(lambda m, make=make: m.group(1) + make() + m.group(3), new)
    if new == text:
        return 0
    if args.check:
        print(f"{PAGE.relative_to(ROOT)} is stale: run tools/pilot_tables.py")
        return 1
    PAGE.write_text(new, encoding="utf-8")
    print(f"rewrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
