"""Tick labels never overprint: `save_figure` thins the labels of any axis whose labels
collide (the ticks stay), and `label_overlaps` finds collisions on a figure built to have them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

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


def test_one_colour_bar_shows_every_panel_on_its_norm():
    """Panels drawn on one ``Normalize`` object and one colour map share one bar; a panel on
    its own norm (even with the same limits) or another map still needs its own."""
    import sys
    from pathlib import Path

    from matplotlib.colors import Normalize

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    try:
        from check_figures import colour_maps_without_bar
    finally:
        sys.path.pop(0)
    norm = Normalize(0.0, 1.0)
    fig, axes = subplots(1, 4)
    for ax, title in zip(axes, ("a", "b", "own norm", "other map")):
        ax.set_title(title)
    meshes = [ax.pcolormesh(np.eye(3), norm=norm, cmap="magma") for ax in axes[:2]]
    axes[2].pcolormesh(np.eye(3), norm=Normalize(0.0, 1.0), cmap="magma")
    axes[3].pcolormesh(np.eye(3), norm=norm, cmap="viridis")
    fig.colorbar(meshes[0], ax=axes)
    assert colour_maps_without_bar(fig) == [
        "own norm: a QuadMesh with no colour bar",
        "other map: a QuadMesh with no colour bar",
    ]
    plt.close(fig)


def test_colour_names_come_from_the_colours():
    from gaugedyn.plotting import COLOUR_NAMES, colour_name

    magma = plt.get_cmap("magma")
    assert (colour_name(magma(0.0)), colour_name(magma(1.0))) == ("black", "pale yellow")
    assert colour_name("0.75") == "grey"
    assert colour_name(plt.get_cmap("viridis")(1.0)) == "yellow"
    assert all(colour_name(c) == name for name, c in COLOUR_NAMES.items())
    with pytest.raises(ValueError):
        colour_name("not a colour")


def test_minor_tick_labels_that_overprint_are_found_and_hidden_first(tmp_path):
    """A log axis over less than two decades labels its minor ticks; crowded, they overprint:
    the check sees them, and declutter hides the minor labels before any major one."""
    with style("Agg", ("png",)):
        fig, ax = subplots(figsize=(3.0, 2.0))
        ax.set(xscale="log", xlim=(1.5e-2, 0.45), title="log")
        ax.plot([1.5e-2, 0.45], [0, 1])
        fig.canvas.draw()
        assert any("/ x:" in x for x in label_overlaps(fig))
        assert declutter(fig)
        fig.canvas.draw()
        assert label_overlaps(fig) == []
        majors = [t.get_text() for t in ax.xaxis.get_ticklabels() if t.get_visible()]
        assert any("10^{-1}" in m for m in majors)
        minor = ax.xaxis.get_ticklabels(which="minor")
        assert not [t for t in minor if t.get_visible() and t.get_text()]
        plt.close(fig)
