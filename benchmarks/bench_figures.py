"""The figure stage of a run: :func:`gaugedyn.plotting.save_figure` against the save it replaced.

    .venv/bin/python benchmarks/bench_figures.py [--rounds 5] [--points 501]

One figure shaped like the clock experiment's (two panels, log-log curves of ``--points``
points, legends, the package style, Agg backend) saved in three ways, interleaved over
``--rounds`` rounds in rotating order:

- ``peer``: PNG then PDF, each save laying the figure out again (constrained layout), as
  ``save_figure`` did before;
- ``full``: ``save_figure`` under a full run's formats, PNG then PDF, laid out once;
- ``quick``: ``save_figure`` under a quick run's formats, PNG alone.

Per way, the median wall and CPU seconds (``time.process_time``) of one figure and the ratio to
the peer. The figure is built anew for each save (building it is timed too, as in a run).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gaugedyn.plotting import figure_formats, save_figure, style, subplots  # noqa: E402


def _figure(points: int):
    t = np.logspace(-2, 3, points)
    fig, axes = subplots(1, 2, figsize=(9, 3.8))
    for k, scale in enumerate((1.0, 100.0)):
        axes[0].loglog(t, scale / (1 + t), "-", label=f"mu_R, gauge {k}")
        axes[0].loglog(t, scale * np.exp(-t / 300), "--", label=f"mu_T, gauge {k}")
        axes[1].loglog(t, scale * np.log1p(t), "-", label=f"reaction clock, gauge {k}")
        axes[1].loglog(t, scale * t, "--", label=f"transport clock, gauge {k}")
    axes[0].set(xlabel="time t", ylabel="mobility", title="reaction and transport mobility")
    axes[1].set(xlabel="time t", ylabel="int_0^t mu ds", title="reaction and transport clocks")
    for ax in axes:
        ax.legend(fontsize=7)
    return fig


def _peer(fig, outdir: Path, name: str) -> None:
    for fmt in ("png", "pdf"):
        metadata = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
        fig.savefig(outdir / f"{name}.{fmt}", format=fmt, metadata=metadata)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--points", type=int, default=501)
    args = ap.parse_args(argv)
    ways = {
        "peer": (None, _peer),
        "full": (figure_formats(False), save_figure),
        "quick": (figure_formats(True), save_figure),
    }
    wall = {k: [] for k in ways}
    cpu = {k: [] for k in ways}
    out = Path(tempfile.mkdtemp(prefix="bench_figures_"))
    names = list(ways)
    with style("Agg"):
        _peer(_figure(args.points), out, "warm")  # fonts and caches loaded once
    for r in range(args.rounds):
        for name in names[r % 3 :] + names[: r % 3]:
            formats, save = ways[name]
            with style("Agg", formats):
                w, c = time.perf_counter(), time.process_time()
                save(_figure(args.points), out, f"{name}{r}")
                cpu[name].append(time.process_time() - c)
                wall[name].append(time.perf_counter() - w)
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(
        f"one clock-like figure ({args.points} points per curve), median of {args.rounds} "
        f"interleaved rounds; 1-minute load average at the end {load}"
    )
    print(
        f"{'way':6s} {'files':10s} {'wall s':>8s} {'CPU s':>8s} {'wall ratio':>11s} "
        f"{'CPU ratio':>10s}"
    )
    w0, c0 = statistics.median(wall["peer"]), statistics.median(cpu["peer"])
    for name, (formats, _) in ways.items():
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        files = "+".join(formats or ("png", "pdf"))
        print(f"{name:6s} {files:10s} {w:8.3f} {c:8.3f} {w / w0:11.2f} {c / c0:10.2f}")


if __name__ == "__main__":
    main()
