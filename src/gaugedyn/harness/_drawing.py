"""Figures: drawn by the experiment's ``plot`` from stored arrays, and redrawn from a run folder.

`draw()` calls ``experiment.plot`` under the package's style and lists the figures it wrote
(name, caption, files). `redraw()` redraws the figures of a run folder, or of every run in a
reproduce folder, from ``arrays.npz`` and ``summary.json`` alone: nothing is recomputed, and
nothing is replaced unless every run checks out and draws.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from pathlib import Path

from .._errors import InputError, oneline
from ._arrays import caption_of, load_arrays, schema_problems
from ._config import _validate, resolve_experiment
from ._folders import (
    ARRAYS,
    FIGURES,
    MARKER,
    SUMMARY,
    claim_output_dir,
    commit,
    marker_kind,
    read_summary,
    run_folders,
    staging_dir,
)
from ._protocol import Experiment
from ._summary import write_summary


def draw(
    experiment: Experiment,
    arrays: dict,
    params: dict,
    outdir: Path,
    backend: str | None = None,
    quick: bool = False,
) -> list[dict]:
    """Call ``experiment.plot`` under the shared style; list the figures it wrote (a ``quick``
    run's in PNG alone, `gaugedyn.plotting.figure_formats()`).

    A figure's caption is the one ``plot`` returned with it, else the experiment's ``captions``
    entry, else the caption stored in the arrays (`._arrays.caption_of()`).
    """
    from ..plotting import figure_formats, style
    from ._curves import CURVE_PREFIX, specification_curves

    outdir.mkdir(parents=True, exist_ok=True)
    own = {k: v for k, v in arrays.items() if not k.startswith(CURVE_PREFIX)}
    with style(backend, figure_formats(quick)):
        try:
            drawn = experiment.plot(own, dict(params), outdir) or []
            returned = list(drawn.items() if isinstance(drawn, dict) else drawn)
            if len(own) < len(arrays):
                returned += specification_curves(arrays, outdir)
        except Exception as err:
            cause = _os_error_behind(err)
            if cause is None:
                raise
            raise cause from None  # e.g. a full disk, which matplotlib's PDF writer buries
    captions = dict(getattr(experiment, "captions", {}) or {})
    listed: dict[str, str] = {}
    for item in returned:
        name, caption = (item, "") if isinstance(item, str) else (str(item[0]), str(item[1]))
        listed[name] = caption or captions.get(name, "") or caption_of(arrays, name)
    for png in sorted(outdir.glob("*.png")):
        listed.setdefault(png.stem, captions.get(png.stem, "") or caption_of(arrays, png.stem))
    figures = []
    for name, caption in listed.items():
        files = [
            f"{FIGURES}/{name}.{ext}"
            for ext in ("png", "pdf")
            if (outdir / f"{name}.{ext}").exists()
        ]
        figures.append({"name": name, "caption": caption, "files": files})
    for path in outdir.iterdir():
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    return figures


def _os_error_behind(err: BaseException) -> OSError | None:
    """The `OSError` that ``err`` was raised while handling, if any (a full disk while
    writing a PDF surfaces from matplotlib as an ``AttributeError`` in its clean-up)."""
    seen = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _checked_arrays(run: Path, summary: dict) -> dict:
    """The run's arrays, read without pickles and matching the names, shapes and dtypes its
    summary lists; else `InputError` naming the run and the mismatch."""
    try:
        arrays = load_arrays(run, summary)
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as err:
        raise InputError(
            f"{run}: arrays.npz cannot be read as plain arrays ({oneline(err)})"
        ) from None
    problems = schema_problems(arrays)
    if problems:
        raise InputError(f"{run}: arrays.npz breaks the array schema ({problems[0]})")
    listed = summary.get("arrays")
    found = {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()}
    if listed != found:
        listed_names = sorted(listed) if isinstance(listed, dict) else listed
        raise InputError(
            f"{run}: arrays.npz holds {show_arrays(found)} but summary.json lists "
            f"{show_arrays(listed) if isinstance(listed, dict) else listed_names}"
        )
    return arrays


def show_arrays(arrays: dict, limit: int = 120) -> str:
    text = (
        ", ".join(
            f"{k}{tuple(v.get('shape', ()))}:{v.get('dtype')}" if isinstance(v, dict) else str(k)
            for k, v in arrays.items()
        )
        or "no arrays"
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _checked_summary(run: Path, summary: dict, experiment: Experiment, params: dict) -> dict:
    """The summary's parameters checked against the experiment's declarations (the checks a run
    makes of its configuration) and its claims checked as `Claim` records; returns the
    checked parameters, else `InputError` naming the run and what is wrong."""
    from ._config import _unknown, check_param
    from ._protocol import Claim

    where = f"{run / SUMMARY}: configuration"
    schema = dict(getattr(experiment, "params", {}) or {})
    checked = {}
    for key, value in params.items():
        if key not in schema:
            raise _unknown(str(key), schema, where, "params.")
        checked[key] = check_param(f"params.{key}", value, schema[key], where)
    claims = summary.get("claims", [])
    if not isinstance(claims, list):
        raise InputError(f"{run / SUMMARY}: claims is not a list of claims")
    fields = {f for f in Claim.__dataclass_fields__}
    for i, claim in enumerate(claims):
        try:
            if (
                not isinstance(claim, dict)
                or not set(claim) <= fields
                or not isinstance(claim.get("id"), str)
                or not isinstance(claim.get("passed"), bool)
            ):
                raise ValueError("not a claim record")
            Claim(**claim)
        except (TypeError, ValueError) as err:
            raise InputError(
                f"{run / SUMMARY}: claims[{i}] is not a valid claim ({oneline(err)})"
            ) from None
    return checked


def _check_report_target(folder: Path) -> None:
    from ._report import REPORT

    target = folder / REPORT
    if (target.exists() or target.is_symlink()) and not target.is_file():
        raise InputError(
            f"{target}: exists and is not a file; nothing was redrawn (move it "
            "away and run plot again)"
        )


def redraw(folder: str | Path, backend: str | None = None) -> list[Path]:
    """Redraw every run of ``folder`` (a run or a reproduce folder), all or nothing.

    Everything is checked first (each summary, experiment and ``arrays.npz`` against its checksum
    and the summary's listing); then every run's figures are drawn into a staging folder; only
    when all have been drawn are they moved into place. A tampered or corrupt run thus gives one
    error line and leaves every figure as it was.

    A reproduce folder's ``report.md`` is written again after its runs are redrawn.

    Parameters
    ----------
    folder : str or Path
        A run folder (holding ``summary.json``), or a folder whose subfolders are run folders
        (what ``gaugedyn reproduce`` writes). A run with no stored arrays (every task of it
        failed) is skipped.
    backend : str, optional
        The matplotlib backend to draw with (``"Agg"`` on the command line); ``None`` keeps the
        one in use.

    Returns
    -------
    list of Path
        The run folders whose figures were redrawn.

    Raises
    ------
    InputError
        With nothing redrawn: when ``folder`` is not a folder or holds no run, a summary is
        unreadable, lacks the arrays' checksum or ``configuration.params``, names an experiment
        that cannot be resolved or settings it refuses, the arrays do not match the checksum or
        the summary's listing or do not fit the experiment's ``plot``, another gaugedyn command
        holds a run folder, or a reproduce folder's ``report.md`` is not a file.
    """
    todo = []
    for run in run_folders(folder):
        summary = read_summary(run)
        if summary.get("arrays_sha256") is None:
            if (run / ARRAYS).exists():
                raise InputError(
                    f"{run / SUMMARY}: records no checksum for the arrays.npz "
                    "beside it (an edited summary?); nothing was redrawn"
                )
            continue
        configuration = summary.get("configuration")
        if not isinstance(configuration, dict) or "params" not in configuration:
            raise InputError(
                f"{run / SUMMARY}: records no configuration.params (the settings the figures "
                "were drawn with); nothing was redrawn"
            )
        if not isinstance(params := configuration["params"], dict):
            raise InputError(f"{run / SUMMARY}: configuration.params is not a table")
        experiment = resolve_experiment(
            configuration.get("experiment"), f"{run / SUMMARY}: experiment"
        )
        params = _checked_summary(run, summary, experiment, params)
        _validate(experiment, params, f"{run / SUMMARY}: configuration")
        todo.append((run, summary, experiment, params, _checked_arrays(run, summary)))
    folder = Path(folder)
    reproduce = (folder / MARKER).is_file() and marker_kind(folder / MARKER) == "reproduce"
    if reproduce:
        _check_report_target(folder)
    with contextlib.ExitStack() as stack:
        staged = []
        for run, summary, experiment, params, arrays in todo:
            stack.enter_context(claim_output_dir(run, "run"))
            staging = stack.enter_context(staging_dir(run))
            try:
                summary["figures"] = draw(
                    experiment,
                    arrays,
                    params,
                    staging / FIGURES,
                    backend,
                    quick=summary["configuration"].get("quick") is True,
                )
            except (KeyError, IndexError, ValueError, TypeError, AttributeError) as err:
                raise InputError(
                    f"{run}: the stored arrays do not fit experiment "
                    f"{experiment.name or type(experiment).__name__}; nothing was "
                    f"redrawn ({type(err).__name__}: {oneline(err)})"
                ) from None
            write_summary(staging, summary)
            staged.append((run, staging))
        for run, staging in staged:
            commit(run, staging, arrays=False)
    if reproduce:
        from ._report import write_report

        write_report(folder)
    return [run for run, *_ in todo]
