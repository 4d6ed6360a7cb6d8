"""Judge every published run again from its stored values under the current verdict rules, and
republish it through ``gaugedyn publish`` (issue 41: rules chosen from declared measures,
degenerate samples and short slopes UNRESOLVED, power at the declared smallest effect).

For each ``results-data/<experiment>/summary.json`` with findings: ``gaugedyn rejudge
results-data/<experiment> --current-rules --out OUT/<experiment>`` (the re-judged summary records
every changed verdict and why, and the findings kept under the rules they were judged by because
their other readings' values were never stored), then ``gaugedyn publish --add OUT/<experiment>``
and, at the end, ``gaugedyn publish``. Run from the repository root::

    .venv/bin/python tools/rejudge_published.py /tmp/rejudged

One published run needs its readings' uniform draws filled in first: ``gauge_under_adam`` stored
the draw of its primary reading only. Each reading's draw is the first uniform of
``gaugedyn.stats.generator(analysis_seed(seed, "gauge_under_adam"), "owner_rate", D, reading)``
(the analysis's own labels, from the run's recorded seed); the primary reading's reconstructed
draw must equal the stored one, which checks the reconstruction.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gaugedyn import stats  # noqa: E402
from gaugedyn.harness._protocol import analysis_seed  # noqa: E402


def fill_gauge_under_adam_draws(summary: dict) -> int:
    """Store each owner-rate reading's uniform draw (module docstring); returns how many."""
    seed = analysis_seed(int(summary["configuration"]["seed"]), "gauge_under_adam")
    filled = 0
    for c in summary["claims"]:
        if c.get("kind") != "finding" or not c["id"].startswith("finding:owner_rate:D"):
            continue
        D = int(c["id"].rsplit(":D", 1)[1])
        tol = c["tolerance"]
        for reading, rec in tol["reading_detail"].items():
            draw = float(stats.generator(seed, "owner_rate", D, reading).random())
            if reading == "all configurations" and draw != tol["uniform_draw"]:
                raise SystemExit(
                    f"{c['id']}: reconstructed draw {draw} != stored {tol['uniform_draw']}"
                )
            rec["uniform_draw"] = draw
            filled += 1
    return filled


def main(out: str) -> int:
    base = Path(out)
    gaugedyn = [sys.executable, "-m", "gaugedyn"]
    for path in sorted((ROOT / "results-data").glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        if not any(c.get("kind") == "finding" for c in summary.get("claims", [])):
            continue
        name = summary["experiment"]
        source = path.parent
        if name == "gauge_under_adam":
            print(f"{name}: filled {fill_gauge_under_adam_draws(summary)} reading draws")
            source = base / "filled" / name
            source.mkdir(parents=True, exist_ok=True)
            (source / "summary.json").write_text(
                json.dumps(summary, indent=1, sort_keys=True) + "\n"
            )
        target = base / name
        subprocess.run(
            [*gaugedyn, "rejudge", str(source), "--current-rules", "--out", str(target)],
            check=True,
            cwd=ROOT,
        )
        subprocess.run([*gaugedyn, "publish", "--add", str(target)], check=True, cwd=ROOT)
    subprocess.run([*gaugedyn, "publish"], check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(
            "usage: tools/rejudge_published.py OUT_FOLDER (empty, for the re-judged summaries)"
        )
    raise SystemExit(main(sys.argv[1]))
