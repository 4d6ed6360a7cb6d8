"""``gaugedyn train``: train one named set-up over several seeds and print one JSON object."""

from __future__ import annotations

import argparse
import json
import math


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="train a named set-up on Gaussian data (batched seeds); print JSON",
        description="Train the 'single' or 'duplicates' set-up by full-batch GD, mini-batch or "
        "online SGD, or Adam, S seeds as one batched computation; print final observables, the "
        "specialization time per seed and the settings as one JSON object.")
    p.add_argument("--setup", choices=("single", "duplicates"), default="single")
    p.add_argument("--dim", type=int, required=True, help="input dimension D")
    p.add_argument("--gauge", help="gauge of the single neuron: w-heavy, a-heavy or balanced")
    p.add_argument("--gauges", help="comma-separated gauges of the duplicates, e.g. a-heavy,w-heavy")
    p.add_argument("--scale", type=float, default=1.0, help="initial coefficient rho0 = s")
    p.add_argument("--strength", type=float, default=None, help="gauge strength (default D)")
    p.add_argument("--activation", default="relu", help="relu, erf or linear")
    data = p.add_mutually_exclusive_group()
    data.add_argument("--samples", type=int, default=None, help="fixed sample size n")
    data.add_argument("--online", action="store_true", help="fresh samples every step")
    p.add_argument("--optimizer", default="gd", help="gd, sgd or adam")
    p.add_argument("--lr", type=float, default=None, help="step size eta (default 0.5/(s D))")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=None, help="mini-batch size (sgd, adam)")
    p.add_argument("--schedule", default="constant", help="constant, cosine or inverse")
    p.add_argument("--seeds", type=int, default=4, help="number of seeds S (trained batched)")
    p.add_argument("--root-seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=0.95, help="specialization threshold")
    p.add_argument("--prune-tol", type=float, default=1e-3)
    p.add_argument("--dtype", default="float64", help="float32 or float64")
    p.add_argument("--device", default=None, help="cpu, cuda (default: cuda if available)")
    p.set_defaults(func=_handle)


def _finite(x):
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _handle(args: argparse.Namespace) -> int:
    import numpy as np

    from .._errors import InputError
    from ..theory import Definitions, duplicates, single, with_gauge
    from ._trainer import TrainConfig, train

    if args.setup == "single":
        if args.gauges is not None:
            raise InputError("--gauges is for --setup duplicates; use --gauge with --setup single")
        gauges = [args.gauge or "w-heavy"]
        problem = single(args.dim, gauges[0], scale=args.scale, activation=args.activation)
    else:
        if args.gauge is not None or not args.gauges:
            raise InputError("--setup duplicates needs --gauges (comma-separated), not --gauge")
        gauges = [g.strip() for g in args.gauges.split(",")]
        problem = duplicates(args.dim, gauges, scale=args.scale, activation=args.activation)
    if args.strength is not None:
        problem = with_gauge(problem, names=gauges, strength=args.strength)
    if not args.online and args.samples is None:
        raise InputError("give --samples N (fixed sample) or --online")
    if args.seeds < 1 or args.seeds > 100000:
        raise InputError(f"--seeds {args.seeds} is not allowed; it must lie in [1, 100000]")
    lr = args.lr if args.lr is not None else 0.5 / (args.scale * args.dim)
    cfg = TrainConfig(optimizer=args.optimizer, lr=lr, steps=args.steps,
                      samples=None if args.online else args.samples, batch=args.batch,
                      schedule=args.schedule)
    definitions = Definitions(threshold=args.threshold, prune_tol=args.prune_tol)
    res = train(problem, cfg, seeds=args.seeds, root_seed=args.root_seed, dtype=args.dtype,
                device=args.device, definitions=definitions)
    final = res.final()
    out = {
        "setup": args.setup, "dim": args.dim, "gauges": gauges, "activation": args.activation,
        "seeds": res.seeds, "root_seed": res.root_seed,
        "time_final": float(res.time[-1]), "steps": int(res.steps[-1]),
        "specialization_time": res.specialization_time()[:, 0].tolist(),
        "owner": final["owner"][:, 0].tolist(),
        "loss": final["loss"].tolist(), "loss_empirical": final["loss_empirical"].tolist(),
        "rho": final["rho"].tolist(), "alignment": final["alignment"][..., 0].tolist(),
        "delta_drift": final["delta_drift"].tolist(),
        "pruned": final["pruned"].tolist(),
        "median": {"loss": float(np.median(final["loss"])),
                   "specialization_time": float(np.nanmedian(res.specialization_time()[:, 0]))
                   if np.any(np.isfinite(res.specialization_time())) else None},
        "settings": res.settings, "definitions": definitions.describe(),
        "wall_time_s": res.diagnostics["wall_time_s"],
    }
    print(json.dumps(_finite(out), default=float))
    return 0
