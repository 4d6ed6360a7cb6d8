"""Tick labels never overprint: `save_figure` thins the labels of any axis whose labels
collide (the ticks stay), and `label_overlaps` finds collisions on a figure built to have them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gaugedyn.plotting import declutter, label_overlaps, save_figure, style, subplots  # noqa: E402


def crowded():
    fig, ax = subplots(figsize=(2.0, 1.5))
    ax.plot(np.arange(40), np.arange(40))
    ax.set_xticks(np.arange(40))
    ax.set_xticklabels([f"label {i}" for i in range(40)])
    ax.set_title("crowded")
    return fig, ax


def test_overlapping_labels_are_found_then_thinned():
    fig, ax = crowded()
    fig.canvas.draw()
    found = label_overlaps(fig)
    assert found and found[0].startswith("crowded / x:")
    assert declutter(fig)
    fig.canvas.draw()
    assert label_overlaps(fig) == []
    assert len(ax.get_xticks()) == 40  # the ticks stay, only labels hide
    plt.close(fig)


def test_a_clean_figure_is_left_alone():
    fig, ax = subplots()
    ax.plot([0, 1], [0, 1])
    fig.canvas.draw()
    assert label_overlaps(fig) == [] and not declutter(fig)
    plt.close(fig)


def test_save_figure_writes_no_overprinted_labels(tmp_path, monkeypatch):
    seen = []
    real = matplotlib.figure.Figure.savefig

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        seen.append(label_overlaps(self))

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    with style(backend="Agg", formats=("png",)):
        fig, _ = crowded()
        save_figure(fig, tmp_path, "crowded")
    assert seen[0] and seen[-1] == []  # the first draw collided, the written file does not


def test_the_figure_checker_finds_a_colour_map_without_a_bar():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    try:
        from check_figures import colour_maps_without_bar
    finally:
        sys.path.pop(0)
    fig, (left, right) = subplots(1, 2)
    left.imshow(np.eye(3))
    image = right.imshow(np.eye(3))
    fig.colorbar(image, ax=right)
    left.set_title("bare")
    assert colour_maps_without_bar(fig) == ["bare: a AxesImage with no colour bar"]
    plt.close(fig)
