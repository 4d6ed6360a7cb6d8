"""A toy sparse autoencoder with periodic resampling of dead latents, and Adam's state of the
resampled units: reset by rows, reset as whole tensors, or left alone.

Protocol (fixed before the run; the settings below are the only constants):

- data: ``x = sum_i a_i f_i`` over ``FEATURES`` unit directions ``f_i`` in ``DIM`` dimensions
  (Gaussian, normalised), each present with probability ``P_ACTIVE`` with ``a_i ~ U(0, 1)``; a
  fresh batch of ``BATCH`` every step from the seed's generator;
- SAE: ``h = relu(W_e (x - b_d) + b_e)``, ``x^ = W_d h + b_d`` with ``LATENTS`` latents, loss
  ``mean |x - x^|^2 + L1 mean |h|_1``; ``torch.optim.Adam`` (``LR``, betas ``BETAS``);
- resampling every ``EVERY`` steps (``STEPS / EVERY - 1`` events): a latent that fired on no
  example of the last ``EVERY`` batches is dead; each dead latent gets a batch example drawn with
  probability proportional to its squared reconstruction error, ``W_d[:, j] = x/|x|``,
  ``W_e[j] = ENC_SCALE mean_alive |W_e[k]| x/|x|``, ``b_e[j] = 0`` (Anthropic's scheme, small);
- arms (Adam's state of the resampled latents, through a :class:`gaugedyn.monitor.Monitor`
  event ``"resample"`` and :func:`gaugedyn.monitor.reset_state`): ``none``; ``rows``: ``m`` and
  ``v`` of the resampled rows of ``W_e``, entries of ``b_e`` and columns of ``W_d`` zeroed;
  ``whole``: those three tensors' ``m`` and ``v`` zeroed entirely. Two readings: the reset
  entries keep the optimizer's step count (``restart=False``, what sparse_autoencoder PR #115
  does) or start afresh with their own bias correction (``restart=True``);
- readout: the spike amplitude of an event at step ``r``: ``max log10 L`` over the ``WINDOW``
  steps after it minus the median ``log10 L`` over the ``WINDOW`` steps before it (decades); per
  seed, the mean over the events that resampled at least one latent;
- the step size ``LR`` and ``L1`` were chosen on a pilot (seed 0, no reset, 1200 steps) by the
  defining property alone: resampling events find dead latents (at ``LR = 2e-3`` none died
  for any ``L1`` up to 1); the amplitudes were not looked at;
- findings (per reading, ``median_threshold`` rule of :data:`gaugedyn.stats.RULES` on the
  per-seed paired differences, the same seed and data in every arm): ``rows`` below ``none``
  (< 0) and ``rows`` below ``whole`` (< 0); the arms' medians with their intervals beside them.

    .venv/bin/python examples/sae_resampling.py --out examples/data/sae_resampling
    .venv/bin/python examples/sae_resampling.py --quick --out /tmp/sae
    .venv/bin/python examples/sae_resampling.py --table examples/data/sae_resampling/summary.json

writes ``summary.json`` (settings, per-seed values, judgements, versions), ``curves.npz`` (the
mean log10 loss over seeds per reading and arm, step by step) and ``sae_resampling.png`` (mean
loss around the events per arm; per-seed amplitudes); ``--figure DIR --png PATH`` redraws the
figure from a stored run (the docs figure is the committed run's)::

    .venv/bin/python examples/sae_resampling.py --figure examples/data/sae_resampling \\
        --png docs/figures/sae_resampling.png
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from gaugedyn import stats
from gaugedyn.monitor import Monitor, reset_state

DIM, FEATURES, P_ACTIVE, LATENTS = 24, 48, 0.06, 96
BATCH, STEPS, EVERY, WINDOW = 128, 2000, 400, 50
LR, BETAS, L1, ENC_SCALE = 1e-2, (0.9, 0.999), 0.1, 0.2
ARMS = ("none", "rows", "whole")
READINGS = {"keep step count": False, "fresh start": True}
SEEDS = 12


class SAE(nn.Module):
    def __init__(self, dim: int, latents: int):
        super().__init__()
        self.enc = nn.Linear(dim, latents)
        self.dec = nn.Linear(latents, dim)

    def forward(self, x):
        h = torch.relu(self.enc(x - self.dec.bias))
        return self.dec(h), h


def unit_rows(idx: torch.Tensor) -> dict:
    """The Adam-state rows of latents ``idx``: encoder rows and bias entries, decoder columns."""
    return {"enc.weight": (0, idx), "enc.bias": (0, idx), "dec.weight": (1, idx)}


def resample(model: SAE, x: torch.Tensor, dead: torch.Tensor, gen: torch.Generator) -> None:
    with torch.no_grad():
        err = ((model(x)[0] - x) ** 2).sum(1)
        pick = torch.multinomial(err**2 + 1e-12, dead.numel(), replacement=True, generator=gen)
        u = x[pick] / x[pick].norm(dim=1, keepdim=True)
        alive = torch.ones(model.enc.weight.shape[0], dtype=torch.bool)
        alive[dead] = False
        scale = model.enc.weight[alive].norm(dim=1).mean() if alive.any() else 1.0
        model.dec.weight[:, dead] = u.T
        model.enc.weight[dead] = ENC_SCALE * scale * u
        model.enc.bias[dead] = 0.0


def run(seed: int, arm: str, restart: bool, steps: int = STEPS) -> dict:
    """One training run; every arm of a seed sees the same initialisation and batches."""
    gen = torch.Generator().manual_seed(seed)
    feats = torch.randn(FEATURES, DIM, generator=gen)
    feats /= feats.norm(dim=1, keepdim=True)
    torch.manual_seed(seed)
    model = SAE(DIM, LATENTS)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS)
    mon = Monitor(opt, model, adam=False, gauge=False, spikes=False)
    if arm != "none":
        mon.on("resample", reset_state("both", rows=arm == "rows", restart=restart))
    fired = torch.zeros(LATENTS, dtype=torch.bool)
    events = []
    for t in range(1, steps + 1):
        on = torch.rand(BATCH, FEATURES, generator=gen) < P_ACTIVE
        x = (on * torch.rand(BATCH, FEATURES, generator=gen)) @ feats
        opt.zero_grad()
        xh, h = model(x)
        loss = ((xh - x) ** 2).sum(1).mean() + L1 * h.abs().sum(1).mean()
        loss.backward()
        mon.take_step(loss)
        fired |= (h > 0).any(0)
        if t % EVERY == 0 and t < steps:
            dead = torch.nonzero(~fired).reshape(-1)
            if dead.numel():
                resample(model, x, dead, gen)
                mon.emit("resample", rows=unit_rows(dead))
            events.append((t, int(dead.numel())))
            fired[:] = False
    mon.detach()
    return {"loss": np.array(mon.history["loss"]), "events": events}


def amplitude(log_loss: np.ndarray, step: int, window: int = WINDOW) -> float:
    """``max`` of ``log_loss`` over the ``window`` steps after ``step`` minus its median over the
    ``window`` steps up to ``step`` (``log_loss[t - 1]`` is step ``t``'s loss)."""
    before = log_loss[max(0, step - window) : step]
    after = log_loss[step : step + window]
    if before.size == 0 or after.size == 0:
        return math.nan
    return float(after.max() - np.median(before))


def seed_amplitude(res: dict) -> float:
    ell = np.log10(res["loss"])
    amps = [amplitude(ell, t) for t, n in res["events"] if n > 0]
    return float(np.mean(amps)) if amps else math.nan


def study(seeds: int, steps: int) -> dict:
    values: dict = {}
    curves: dict = {}
    dead: dict = {}
    for reading, restart in READINGS.items():
        for arm in ARMS:
            if arm == "none" and reading != next(iter(READINGS)):
                values[(reading, arm)] = values[(next(iter(READINGS)), arm)]
                curves[(reading, arm)] = curves[(next(iter(READINGS)), arm)]
                continue
            runs = [run(s, arm, restart, steps) for s in range(seeds)]
            values[(reading, arm)] = [seed_amplitude(r) for r in runs]
            ell = np.log10([r["loss"] for r in runs])
            with warnings.catch_warnings():  # a step where every seed has diverged stays nan
                warnings.simplefilter("ignore", RuntimeWarning)
                curves[(reading, arm)] = np.nanmean(np.where(np.isfinite(ell), ell, np.nan), 0)
            dead[(reading, arm)] = [r["events"] for r in runs]
    return {"values": values, "curves": curves, "dead": dead}


def judgements(values: dict) -> dict:
    out = {}
    for reading in READINGS:
        v = {arm: np.array(values[(reading, arm)]) for arm in ARMS}
        arms = {
            arm: stats.judge("median_threshold", v[arm], threshold=0.0, direction=">").as_dict()
            for arm in ARMS
        }
        findings = {
            f"rows_below_{other}": stats.judge(
                "median_threshold", v["rows"] - v[other], threshold=0.0, direction="<"
            ).as_dict()
            for other in ("none", "whole")
        }
        out[reading] = {"arms": arms, "findings": findings}
    return out


def figure(values: dict, curves: dict, path: Path) -> None:
    """Left: the mean log10 loss over seeds per arm (the first reading) with the events; right:
    each seed's amplitude per reading and arm, the median as a bar. ``values`` and ``curves``
    are keyed ``(reading, arm)``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    colors = {"none": "C3", "rows": "C0", "whole": "C2"}
    reading = next(iter(READINGS))
    steps = len(curves[(reading, ARMS[0])])
    t = np.arange(1, steps + 1)
    for arm in ARMS:
        a.plot(t, curves[(reading, arm)], color=colors[arm], lw=0.8, label=arm)
    for r in range(EVERY, steps, EVERY):
        a.axvline(r, color="0.8", lw=0.6, zorder=0)
    a.set(
        xlabel="step",
        ylabel="mean log10 loss over seeds",  # a seed's steps after it diverged left out
        title=f"resampling every {EVERY} steps ({reading})",
    )
    a.legend(frameon=False)
    width = len(ARMS) + 1
    for i, rd in enumerate(READINGS):
        for j, arm in enumerate(ARMS):
            y = np.array(values[(rd, arm)], dtype=float)
            x = i * width + j + np.linspace(-0.15, 0.15, y.size)
            b.plot(x, y, "o", ms=3, color=colors[arm], alpha=0.7)
            b.plot(i * width + j, np.nanmedian(y), "_", ms=18, color="k")
    b.set_xticks([i * width + j for i in range(len(READINGS)) for j in range(len(ARMS))])
    b.set_xticklabels([arm for _ in READINGS for arm in ARMS], fontsize=8)
    groups = b.secondary_xaxis("bottom")
    groups.set_xticks([i * width + (len(ARMS) - 1) / 2 for i in range(len(READINGS))])
    groups.set_xticklabels(list(READINGS), fontsize=9)
    groups.tick_params(length=0, pad=16)
    b.axhline(0, color="0.6", lw=0.6)
    b.set(ylabel=f"spike amplitude (decades, {WINDOW} steps)", title="per seed; bar: median")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _key(reading: str, arm: str) -> str:
    return f"{reading} | {arm}"


def redraw(folder: Path, png: Path) -> None:
    """The figure of a stored run (``summary.json`` and ``curves.npz`` in ``folder``)."""
    summary = json.loads((folder / "summary.json").read_text())
    with np.load(folder / "curves.npz") as z:
        curves = {(rd, arm): z[_key(rd, arm)] for rd in READINGS for arm in ARMS}
    values = {
        (rd, arm): [math.nan if v == "nan" else v for v in summary["values"][_key(rd, arm)]]
        for rd in READINGS
        for arm in ARMS
    }
    figure(values, curves, png)


def table(summary: dict) -> str:
    """The Markdown table of a ``summary.json``: per reading, each arm's median amplitude with
    its interval and the two findings with their verdicts (what the docs show)."""
    head = (
        "| reading | none | rows | whole | rows - none | rows - whole |\n|---|---|---|---|---|---|"
    )
    lines = [head]
    for reading, j in summary["judgements"].items():
        cells = []
        for a in ARMS:
            lo, hi = (float(v) for v in j["arms"][a]["interval"])
            cells.append(f"{float(j['arms'][a]['estimate']):.3f} [{lo:.3f}, {hi:.3f}]")
        for f in ("rows_below_none", "rows_below_whole"):
            x = j["findings"][f]
            lo, hi = (float(v) for v in x["interval"])
            cells.append(f"{float(x['estimate']):+.3f} [{lo:+.3f}, {hi:+.3f}] **{x['verdict']}**")
        lines.append(f"| {reading} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for summary.json and the figure")
    ap.add_argument("--table", metavar="SUMMARY", help="print the docs table of a summary.json")
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--quick", action="store_true", help="3 seeds, 1300 steps (a smoke run)")
    ap.add_argument(
        "--figure",
        metavar="DIR",
        help="redraw the figure of a stored run (DIR/summary.json, DIR/curves.npz) to --png",
    )
    ap.add_argument("--png", help="where --figure writes (default: DIR/sae_resampling.png)")
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return
    if args.figure:
        folder = Path(args.figure)
        if not (folder / "summary.json").is_file() or not (folder / "curves.npz").is_file():
            ap.error(f"--figure {folder}: allowed: a folder holding summary.json and curves.npz")
        redraw(folder, Path(args.png) if args.png else folder / "sae_resampling.png")
        return
    if not args.out:
        ap.error("--out is required (or --table SUMMARY, or --figure DIR)")
    seeds, steps = (3, 1300) if args.quick else (args.seeds, STEPS)
    if seeds < 1:
        ap.error(f"--seeds {seeds}: allowed: an integer >= 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    result = study(seeds, steps)
    from gaugedyn._json import strict
    from gaugedyn._meta import versions

    summary = {
        "example": "sae_resampling",
        "quick": bool(args.quick),
        "seeds": seeds,
        "steps": steps,
        "settings": {
            k: v
            for k, v in globals().items()
            if k.isupper() and isinstance(v, int | float | tuple | dict)
        },
        "values": {_key(r, a): v for (r, a), v in result["values"].items()},
        "resampled": {_key(r, a): v for (r, a), v in result["dead"].items()},
        "judgements": judgements(result["values"]),
        "versions": versions(),
        "seconds": time.perf_counter() - t0,
    }
    (out / "summary.json").write_text(json.dumps(strict(summary), indent=1, allow_nan=False) + "\n")
    np.savez_compressed(
        out / "curves.npz", **{_key(r, a): c for (r, a), c in result["curves"].items()}
    )
    figure(result["values"], result["curves"], out / "sae_resampling.png")
    print(f"wrote {out / 'summary.json'}, curves.npz and the figure in {summary['seconds']:.0f} s")


if __name__ == "__main__":
    main()
