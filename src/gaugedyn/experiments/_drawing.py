"""Figures: drawn by the experiment's ``plot`` from stored arrays, and redrawn from a run folder.

:func:`draw` calls ``experiment.plot`` under the package's style and lists the figures it wrote
(name, caption, files). :func:`redraw` redraws the figures of a run folder, or of every run in a
reproduce folder, from ``arrays.npz`` and ``summary.json`` alone: nothing is recomputed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._arrays import caption_of, load_arrays
from ._config import resolve_experiment
from ._folders import (
    FIGURES,
    MARKER,
    SUMMARY,
    claim_output_dir,
    commit,
    marker_kind,
    run_folders,
    staging_dir,
)
from ._protocol import Experiment
from ._summary import read_summary, write_summary


def draw(
    experiment: Experiment, arrays: dict, params: dict, outdir: Path, backend: str | None = None
) -> list[dict]:
    """Call ``experiment.plot`` under the shared style; list the figures it wrote.

    A figure's caption is the one ``plot`` returned with it, else the experiment's ``captions``
    entry, else the caption stored in the arrays (:func:`._arrays.caption_of`).
    """
    from ..plotting import style

    outdir.mkdir(parents=True, exist_ok=True)
    with style(backend):
        returned = experiment.plot(arrays, dict(params), outdir) or []
    captions = dict(getattr(experiment, "captions", {}) or {})
    items = returned.items() if isinstance(returned, dict) else returned
    listed: dict[str, str] = {}
    for item in items:
        name, caption = (item, "") if isinstance(item, str) else (str(item[0]), str(item[1]))
        listed[name] = caption or captions.get(name, "") or caption_of(arrays, name)
    for png in sorted(outdir.glob("*.png")):
        listed.setdefault(png.stem, captions.get(png.stem, "") or caption_of(arrays, png.stem))
    figures = []
    for name, caption in listed.items():
        files = [f"{FIGURES}/{name}.{ext}" for ext in ("png", "pdf") if (outdir / f"{name}.{ext}").exists()]
        figures.append({"name": name, "caption": caption, "files": files})
    for path in outdir.iterdir():
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    return figures


def redraw(folder: str | Path, backend: str | None = None) -> list[Path]:
    """Redraw the figures of a run folder, or of every run in a reproduce folder, from
    ``arrays.npz`` and ``summary.json`` alone; return the run folders redrawn."""
    runs = run_folders(folder)
    summaries = {run: read_summary(run) for run in runs}
    done = []
    for run, summary in summaries.items():
        if summary.get("arrays_sha256") is None:
            continue
        spec = summary["configuration"].get("experiment")
        experiment = resolve_experiment(spec, f"{run / SUMMARY}: experiment")
        arrays = load_arrays(run, summary)
        with claim_output_dir(run, "run"), staging_dir(run) as staging:
            params = summary["configuration"].get("params", {})
            summary["figures"] = draw(experiment, arrays, params, staging / FIGURES, backend)
            write_summary(staging, summary)
            commit(run, staging, arrays=False)
        done.append(run)
    folder = Path(folder)
    if (folder / MARKER).is_file() and marker_kind(folder / MARKER) == "reproduce":
        from ._report import write_report

        write_report(folder)
    return done
