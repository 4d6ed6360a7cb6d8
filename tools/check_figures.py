"""Redraw the figures of a run or reproduce folder and check each written file: no tick labels
overprint and every colour-mapped image, mesh or scatter has a colour bar.

    python tools/check_figures.py DIR [DIR ...]

Redraws from the stored arrays (``gaugedyn plot``; the figures are replaced by the same
drawing), watching every ``savefig``; the state at a file's last save is what it shows. Prints
one line per problem and exits 1 when there is any.
"""

from __future__ import annotations

import sys
from pathlib import Path


def colour_maps_without_bar(fig) -> list[str]:
    """The colour-mapped artists of ``fig`` (images, meshes, scatters with an array) whose
    mapping no colour bar of the figure shows (contour lines drawn in fixed colours and artists
    with a legend entry aside). One bar shows every artist that shares its mappable's norm
    object and colour map (panels drawn on one ``Normalize`` and one bar)."""
    import matplotlib.cm

    bars = [getattr(a, "colorbar", None) for ax in fig.axes for a in (*ax.images, *ax.collections)]
    shown = {id(b.mappable) for b in bars if b is not None}
    shared = {(id(b.mappable.norm), b.mappable.cmap.name) for b in bars if b is not None}
    out = []
    for k, ax in enumerate(fig.axes):
        if getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>":
            continue
        for artist in (*ax.images, *ax.collections):
            if not isinstance(artist, matplotlib.cm.ScalarMappable):
                continue
            if artist.get_array() is None or id(artist) in shown:
                continue
            if (id(artist.norm), artist.cmap.name) in shared:
                continue
            if getattr(artist, "colors", None) is not None:  # contour lines in fixed colours
                continue
            if not str(artist.get_label()).startswith("_"):  # explained by a legend entry
                continue
            title = ax.get_title() or f"axes {k}"
            out.append(f"{title}: a {type(artist).__name__} with no colour bar")
    return out


def check(folder: Path) -> list[str]:
    import matplotlib.figure

    from gaugedyn.harness._drawing import redraw
    from gaugedyn.plotting import label_overlaps

    last: dict[str, list[str]] = {}
    real = matplotlib.figure.Figure.savefig

    def spy(self, fname, *args, **kwargs):
        real(self, fname, *args, **kwargs)
        name = Path(str(fname)).name
        last[name] = [f"overprinted labels: {x}" for x in label_overlaps(self)] + [
            f"colour map: {x}" for x in colour_maps_without_bar(self)
        ]

    matplotlib.figure.Figure.savefig = spy
    try:
        redraw(folder, backend="Agg")
    finally:
        matplotlib.figure.Figure.savefig = real
    print(f"{folder}: {len(last)} figure files checked")
    return [f"{folder} / {name}: {p}" for name, problems in sorted(last.items()) for p in problems]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    problems = [p for folder in argv for p in check(Path(folder))]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
