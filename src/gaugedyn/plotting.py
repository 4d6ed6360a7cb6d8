"""Figures from stored results: one shared style, PNG and PDF side by side.

Experiments draw in their ``plot(arrays, config, outdir)`` from the stored arrays alone and save
through :func:`save_figure`; the command line wraps the call in :func:`style` on the Agg backend::

    from gaugedyn.plotting import save_figure, subplots

    def plot(self, arrays, config, outdir):
        fig, ax = subplots()
        ax.loglog(arrays["D"], arrays["t_spec"])
        return [save_figure(fig, outdir, "scaling", caption="Specialization time against D.")]
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STYLE = Path(__file__).with_name("gaugedyn.mplstyle")
FORMATS = ("png", "pdf")


@contextlib.contextmanager
def style(backend: str | None = None) -> Iterator[None]:
    """The gaugedyn style sheet; ``backend="Agg"`` also selects the non-interactive backend."""
    import matplotlib

    if backend is not None:
        matplotlib.use(backend, force=True)
    import matplotlib.pyplot as plt

    with plt.style.context(str(STYLE)):
        yield


def subplots(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``matplotlib.pyplot.subplots`` under the gaugedyn style: ``(figure, axes)``."""
    import matplotlib.pyplot as plt

    with plt.style.context(str(STYLE)):
        return plt.subplots(*args, **kwargs)


def save_figure(fig: Any, outdir: str | Path, name: str, caption: str = "") -> tuple[str, str]:
    """Write ``outdir/name.png`` and ``outdir/name.pdf``, close ``fig``; return ``(name, caption)``.

    The PDF carries no creation date, so redrawing the same arrays gives the same file.
    """
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for fmt in FORMATS:
        metadata = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
        fig.savefig(outdir / f"{name}.{fmt}", format=fmt, metadata=metadata)
    plt.close(fig)
    return name, caption
