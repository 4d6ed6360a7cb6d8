"""Figures from stored results: one shared style, PNG and PDF side by side.

Experiments draw in their ``plot(arrays, config, outdir)`` from the stored arrays alone and save
through `save_figure()`; the command line wraps the call in `style()` on the Agg backend,
with the formats of the run (`figure_formats()`: PNG and PDF for a full configuration, PNG
alone for a ``--quick`` one, whose figures are previews read in its report)::

    from gaugedyn.plotting import save_figure, subplots

    def plot(self, arrays, config, outdir):
        fig, ax = subplots()
        ax.loglog(arrays["D"], arrays["t_spec"])
        return [save_figure(fig, outdir, "scaling", caption="Specialization time against D.")]
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STYLE = Path(__file__).with_name("gaugedyn.mplstyle")
FORMATS = ("png", "pdf")
"""The formats `save_figure()` writes by default, and those a run may ask for."""
QUICK_FORMATS = ("png",)
"""The formats of a ``--quick`` run: the PNG its report shows (the PDF, most of a figure's
cost, is written by full runs, whose figures are the published ones)."""
_FORMATS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "gaugedyn_figure_formats", default=FORMATS
)


def figure_formats(quick: bool) -> tuple[str, ...]:
    """The formats a run writes: `QUICK_FORMATS` for a quick run, else `FORMATS`."""
    return QUICK_FORMATS if quick else FORMATS


@contextlib.contextmanager
def style(backend: str | None = None, formats: tuple[str, ...] | None = None) -> Iterator[None]:
    """The gaugedyn style sheet; ``backend="Agg"`` also selects the non-interactive backend;
    ``formats`` (a non-empty subset of
    `FORMATS` holding ``"png"``) are the files `save_figure()` writes inside."""
    import matplotlib

    if formats is not None:
        formats = tuple(formats)
        if not formats or "png" not in formats or not set(formats) <= set(FORMATS):
            raise ValueError(
                f"formats={formats!r} is not allowed: a subset of {FORMATS} holding 'png'"
            )
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
    """``matplotlib.pyplot.subplots`` under the gaugedyn style: ``(figure, axes)``."""
    import matplotlib.pyplot as plt

    with plt.style.context(str(STYLE)):
        return plt.subplots(*args, **kwargs)


def save_figure(fig: Any, outdir: str | Path, name: str, caption: str = "") -> tuple[str, str]:
    """Write ``outdir/name.png`` and ``outdir/name.pdf`` (or the formats `style()` set),
    close ``fig``; return ``(name, caption)``.

    The figure's layout engine (constrained layout, from the style) runs once, for the first
    file; the others reuse its positions instead of laying the figure out again. The PDF
    carries no creation date, so redrawing the same arrays gives the same file.
    """
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    try:
        for i, fmt in enumerate(_FORMATS.get()):
            metadata = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
            fig.savefig(outdir / f"{name}.{fmt}", format=fmt, metadata=metadata)
            if i == 0 and fig.get_layout_engine() is not None:
                fig.set_layout_engine("none")  # keep the positions just computed
    finally:
        plt.close(fig)
    return name, caption
