"""Specification curves: each finding's estimate and interval over the declared set-up space.

Drawn from the ``multiverse__*`` arrays a multiverse stores (`._multiverse`), nothing else:
one panel per finding, its specifications sorted by estimate, each a point with its 95%
interval coloured by its verdict and a dash at its threshold (where the finding has one number),
the primary specification drawn larger and black-edged; up to
`PANELS` panels per figure (``specification_curve_1``, ``_2``, ...).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ._protocol import VERDICTS

CURVE_PREFIX = "multiverse__"
PANELS = 12
COLOURS = {0: "#2a9d3f", 1: "#c0392b", 2: "#8c8c8c", 3: "#e08a1e"}
"""Verdict code (``VERDICTS`` order: HELD, NOT HELD, UNRESOLVED, depends) -> colour."""


def _panel(ax, est, low, high, thr, code, primary: int, title: str) -> None:
    order = np.argsort(np.where(np.isfinite(est), est, np.inf), kind="stable")
    for rank, j in enumerate(order):
        if code[j] < 0:
            continue
        colour = COLOURS[int(code[j])]
        if np.isfinite(thr[j]):
            ax.plot([rank - 0.35, rank + 0.35], [thr[j], thr[j]], color="black", lw=0.8)
        if np.isfinite(low[j]) and np.isfinite(high[j]):
            ax.plot([rank, rank], [low[j], high[j]], color=colour, lw=1.2)
        big = j == primary
        ax.plot(
            rank,
            est[j],
            "o",
            color=colour,
            ms=6 if big else 4,
            mec="black" if big else colour,
            mew=1.2 if big else 0.5,
        )
    ax.set_title(title, fontsize=7)
    ax.set_xticks([])
    ax.tick_params(labelsize=6)


def specification_curves(arrays: dict, outdir: Path) -> list[tuple[str, str]]:
    """Draw the specification curves of ``arrays`` into ``outdir``; ``(name, caption)`` each."""
    from ..plotting import save_figure, subplots

    ids = [str(x) for x in arrays[f"{CURVE_PREFIX}findings"]]
    kinds = [str(x) for x in arrays[f"{CURVE_PREFIX}kinds"]]
    primary = kinds.index("primary") if "primary" in kinds else -1
    est, low, high, code = (
        np.asarray(arrays[f"{CURVE_PREFIX}{k}"]) for k in ("estimate", "low", "high", "verdict")
    )
    thr = np.asarray(arrays.get(f"{CURVE_PREFIX}threshold", np.full(est.shape, np.nan)))
    out = []
    for k in range(math.ceil(len(ids) / PANELS)):
        chunk = list(range(k * PANELS, min(len(ids), (k + 1) * PANELS)))
        cols = min(3, len(chunk))
        rows = math.ceil(len(chunk) / cols)
        fig, axes = subplots(rows, cols, figsize=(3.2 * cols, 2.3 * rows), squeeze=False)
        for ax in axes.ravel()[len(chunk) :]:
            ax.axis("off")
        for ax, i in zip(axes.ravel(), chunk):
            _panel(ax, est[i], low[i], high[i], thr[i], code[i], primary, ids[i])
        legend = ", ".join(f"{w}: {c}" for w, c in zip(VERDICTS, COLOURS.values()))
        name = f"specification_curve_{k + 1}"
        caption = (
            f"Specification curves of findings {chunk[0] + 1}-{chunk[-1] + 1} of {len(ids)}: "
            f"each finding's estimate and 95% interval in each of {len(kinds)} specifications "
            f"of the declared set-up space, sorted by estimate, coloured by verdict ({legend}); "
            "the primary specification is drawn larger, edged in black; a black dash marks the "
            "specification's threshold where the finding has one number."
        )
        out.append(save_figure(fig, outdir, name, caption))
    return out
