"""Figures of the gauge experiments: captions stored with the arrays, saving, fit rows."""

from __future__ import annotations

import numpy as np


def caption(arrays: dict, name: str) -> str:
    """The caption stored with the arrays under ``caption_<name>``."""
    value = arrays.get(f"caption_{name}", "")
    return str(np.asarray(value).item()) if np.size(value) else ""


def save(fig, outdir, name: str, arrays: dict, legends=()) -> tuple[str, str]:
    """Write ``name.png`` and ``name.pdf`` (shared style); return ``(name, caption)``.

    Each axis in ``legends`` gets its legend (font size 7) first.
    """
    from ...plotting import save_figure

    for ax in legends:
        ax.legend(fontsize=7)
    return save_figure(fig, outdir, name, caption=caption(arrays, name))


def fit_row(fit) -> np.ndarray:
    """A :class:`gaugedyn.stats.LineFit` as the stored row ``[slope, intercept, low, high]``."""
    return np.array([fit.slope, fit.intercept, fit.slope_low, fit.slope_high])
