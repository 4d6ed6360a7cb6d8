"""Figures from stored results: one shared style, PNG and PDF side by side.

Experiments draw in their ``plot(arrays, config, outdir)`` from the stored arrays alone and save
through `save_figure()`; the command line wraps the call in `style()` on the Agg backend,
with the formats of the run (`figure_formats()`: PNG and PDF for a full configuration, PNG
alone for a ``--quick`` one, whose figures are previews read in its report).
``GAUGEDYN_FIGURE_FORMATS=png`` in the environment makes full configurations write PNG alone
too (the test suite sets it: its runs read no PDF but one, which asks for it)::

    from gaugedyn.plotting import save_figure, subplots

    def plot(self, arrays, config, outdir):
        fig, ax = subplots()
        ax.loglog(arrays["D"], arrays["t_spec"])
        return [save_figure(fig, outdir, "scaling", caption="Specialization time against D.")]
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STYLE = Path(__file__).with_name("gaugedyn.mplstyle")
FORMATS = ("png", "pdf")
"""The formats `save_figure()` writes by default, and those a run may ask for."""
QUICK_FORMATS = ("png",)
"""The formats of a ``--quick`` run: the PNG its report shows (the PDF, most of a figure's
cost, is written by full runs, whose figures are the published ones)."""
FORMATS_VARIABLE = "GAUGEDYN_FIGURE_FORMATS"
"""The environment variable that, when set (formats separated by commas, such as ``png``),
replaces `FORMATS` as the formats of a full run and of `save_figure()` outside `style()`."""
_FORMATS: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "gaugedyn_figure_formats", default=None
)


def _checked_formats(formats: tuple[str, ...], what: str) -> tuple[str, ...]:
    from ._errors import InputError

    if not formats or "png" not in formats or not set(formats) <= set(FORMATS):
        raise InputError(f"{what}={formats!r} is not allowed: a subset of {FORMATS} holding 'png'")
    return formats


def default_formats() -> tuple[str, ...]:
    """The formats of a full run: `FORMATS`, or those ``GAUGEDYN_FIGURE_FORMATS`` names.

    Returns
    -------
    tuple of str
        ``("png", "pdf")`` unless the variable is set (to a subset of `FORMATS` holding
        ``"png"``, separated by commas).

    Raises
    ------
    ValueError
        When the variable names no format, lacks ``"png"`` or names a format outside `FORMATS`
        (gaugedyn's ``InputError``; a run checks it before any task).
    """
    value = os.environ.get(FORMATS_VARIABLE)
    if value is None:
        return FORMATS
    formats = tuple(f.strip() for f in value.split(",") if f.strip())
    return _checked_formats(formats, FORMATS_VARIABLE)


def figure_formats(quick: bool) -> tuple[str, ...]:
    """The formats a run writes: `QUICK_FORMATS` for a quick run, else `default_formats()`.

    Parameters
    ----------
    quick : bool
        Whether the run is a ``--quick`` one (its figures are previews).

    Returns
    -------
    tuple of str
        ``("png",)`` for a quick run, ``("png", "pdf")`` otherwise (unless
        ``GAUGEDYN_FIGURE_FORMATS`` says otherwise); pass it to `style()`.
    """
    return QUICK_FORMATS if quick else default_formats()


@contextlib.contextmanager
def style(backend: str | None = None, formats: tuple[str, ...] | None = None) -> Iterator[None]:
    """The gaugedyn style sheet; ``backend="Agg"`` also selects the non-interactive backend;
    ``formats`` (a non-empty subset of
    `FORMATS` holding ``"png"``) are the files `save_figure()` writes inside.

    A context manager: the style sheet and the formats hold inside the ``with`` block, and the
    formats in force before it are restored on leaving it.

    Parameters
    ----------
    backend : str, optional
        A matplotlib backend to switch to (forced) on entry, such as ``"Agg"``; ``None`` keeps
        the backend in use.
    formats : tuple of str, optional
        The files `save_figure()` writes inside the block: a non-empty subset of `FORMATS`
        that holds ``"png"``; ``None`` keeps the formats in force.

    Returns
    -------
    contextlib.AbstractContextManager
        The context; it yields ``None``.

    Raises
    ------
    ValueError
        When ``formats`` is empty, lacks ``"png"`` or names a format outside `FORMATS`.
    """
    import matplotlib

    if formats is not None:
        formats = _checked_formats(tuple(formats), "formats")
    if backend is not None:  # a no-op when it is the backend already in use
        matplotlib.use(backend, force=True)
    import matplotlib.pyplot as plt

    token = _FORMATS.set(formats) if formats is not None else None
    try:
        with plt.style.context(str(STYLE)):
            yield
    finally:
        if token is not None:
            _FORMATS.reset(token)


def subplots(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``matplotlib.pyplot.subplots`` under the gaugedyn style: ``(figure, axes)``.

    Parameters
    ----------
    *args : Any
        Positional arguments of ``matplotlib.pyplot.subplots`` (``nrows``, ``ncols``).
    **kwargs : Any
        Keyword arguments of ``matplotlib.pyplot.subplots`` (``figsize``, ``sharex``, ...).

    Returns
    -------
    tuple
        ``(figure, axes)``, as ``matplotlib.pyplot.subplots`` returns them, laid out by the
        style's constrained layout.
    """
    import matplotlib.pyplot as plt

    with plt.style.context(str(STYLE)):
        return plt.subplots(*args, **kwargs)


def save_figure(fig: Any, outdir: str | Path, name: str, caption: str = "") -> tuple[str, str]:
    """Write ``outdir/name.png`` and ``outdir/name.pdf`` (or the formats `style()` set, else
    `default_formats()`), close ``fig``; return ``(name, caption)``.

    The figure's layout engine (constrained layout, from the style) runs once, for the first
    file; the others reuse its positions instead of laying the figure out again. The PDF
    carries no creation date, so redrawing the same arrays gives the same file. Tick labels
    that overprint are thinned (`declutter()`) after the first layout.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to write; it is closed afterwards, whether or not writing succeeded.
    outdir : str or Path
        The folder to write into; created (with its parents) when missing.
    name : str
        The file name without extension; the files are ``outdir/name.<format>``.
    caption : str
        The figure's caption, passed through to the report.

    Returns
    -------
    tuple of (str, str)
        ``(name, caption)``, the entry an experiment's ``plot`` returns for this figure.
    """
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    try:
        for i, fmt in enumerate(_FORMATS.get() or default_formats()):
            metadata = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
            fig.savefig(outdir / f"{name}.{fmt}", format=fmt, metadata=metadata)
            if i == 0:
                if fig.get_layout_engine() is not None:
                    fig.set_layout_engine("none")  # keep the positions just computed
                if declutter(fig):  # labels thinned: the first file again, as it now looks
                    fig.savefig(outdir / f"{name}.{fmt}", format=fmt, metadata=metadata)
    finally:
        plt.close(fig)
    return name, caption


COLOUR_NAMES = {
    "black": "#000000",
    "dark grey": "#404040",
    "grey": "#bfbfbf",
    "white": "#ffffff",
    "red": "#d62728",
    "dark red": "#7f0000",
    "orange": "#ff7f0e",
    "yellow": "#ffff00",
    "pale yellow": "#fcfdbf",
    "green": "#2ca02c",
    "dark green": "#00441b",
    "blue": "#1f77b4",
    "dark blue": "#08306b",
    "light blue": "#9ecae1",
    "purple": "#7f3f98",
    "dark purple": "#3b0f70",
    "magenta": "#b73779",
    "pink": "#f4a6c6",
    "brown": "#8c564b",
}
"""The plain colour names `colour_name()` chooses from, each with the colour it stands for."""


def colour_name(colour: Any) -> str:
    """The plain name of a colour (the nearest entry of `COLOUR_NAMES` in RGB), for captions
    generated from a figure's own settings rather than written beside them.

    Parameters
    ----------
    colour : Any
        Any matplotlib colour: a name, a hex string, a grey level string such as ``"0.75"`` or
        an RGB(A) tuple (such as a colour map's value).

    Returns
    -------
    str
        The name in `COLOUR_NAMES` whose colour is nearest (Euclidean distance in RGB).

    Raises
    ------
    ValueError
        When matplotlib does not read ``colour`` as a colour.
    """
    from matplotlib.colors import to_rgb

    rgb = to_rgb(colour)
    return min(
        COLOUR_NAMES,
        key=lambda name: sum((x - y) ** 2 for x, y in zip(to_rgb(COLOUR_NAMES[name]), rgb)),
    )


def _tick_labels(axis: Any, which: str = "both") -> list[Any]:
    """The visible, non-empty tick labels of ``axis``: major and minor (``which="both"``), or
    ``"major"`` or ``"minor"`` alone."""
    return [t for t in axis.get_ticklabels(which=which) if t.get_visible() and t.get_text()]


def label_overlaps(fig: Any) -> list[str]:
    """The pairs of tick labels (major or minor) that overprint each other on any axis of
    ``fig`` (as laid out by its last draw), each as ``"axes title / x: 'a' over 'b'"``.

    Two labels overprint when their display boxes intersect by more than half a pixel both
    ways; hidden and empty labels are ignored.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure already drawn (saved or ``fig.canvas.draw()``), so its labels have positions.

    Returns
    -------
    list of str
        One entry per overprinting pair, naming the axes (its title, else its label, else
        ``axes k``), the axis (``x`` or ``y``) and the two labels; empty when none overprint.
    """
    renderer = fig.canvas.get_renderer()
    out = []
    for k, ax in enumerate(fig.axes):
        where = ax.get_title() or ax.get_label() or f"axes {k}"
        for side, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _tick_labels(axis)
            boxes = [t.get_window_extent(renderer) for t in labels]
            for i in range(len(boxes)):
                for j in range(i + 1, len(boxes)):
                    if _overlap(boxes[i], boxes[j]):
                        a, b = labels[i].get_text(), labels[j].get_text()
                        out.append(f"{where} / {side}: {a!r} over {b!r}")
    return out


def _overlap(a: Any, b: Any, pad: float = 0.5) -> bool:
    """Whether two display boxes intersect by more than ``pad`` pixels both ways."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > pad and min(a.y1, b.y1) - max(a.y0, b.y0) > pad


def _collide(axis: Any, renderer: Any) -> bool:
    """Whether any two visible tick labels of ``axis`` overprint."""
    boxes = [t.get_window_extent(renderer) for t in _tick_labels(axis)]
    return any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def declutter(fig: Any) -> bool:
    """Hide the minor tick labels, then every other major label (then every third, ...) on each
    axis of ``fig`` whose labels overprint, until none does; the ticks themselves stay. Returns
    whether anything changed.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure already drawn, so its labels have positions; its tick labels' visibility is
        changed in place.

    Returns
    -------
    bool
        Whether any label was hidden (the figure then needs saving again to show it).
    """
    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            minor = _tick_labels(axis, "minor")
            if minor and _collide(
                axis, renderer
            ):  # minor labels (a log axis over few decades) go first
                for t in minor:
                    t.set_visible(False)
                changed = True
            labels = _tick_labels(axis, "major")
            for step in range(2, max(len(labels), 2) + 1):
                if not _collide(axis, renderer):
                    break
                for i, t in enumerate(labels):
                    t.set_visible(i % step == 0)
                changed = True
    return changed
