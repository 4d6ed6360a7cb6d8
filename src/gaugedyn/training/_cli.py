"""``gaugedyn train``: train one named set-up over several seeds and print one JSON object.

Every option is an engine's declaration (the training run's, `._params.PARAMS`; the
activation, gauge and definitions of `gaugedyn.theory.PARAMS`) or, for the few that only
the command line has, declared in `OPTIONS` here; the option's help, bounds and default are
the declaration's. Every value is checked before anything is allocated: the memory of the data
and the network is estimated (`memory_estimate()`) and so is the arithmetic
(`work_estimate()`); a request that cannot fit, or would run for more than about a day, is
refused with the estimate.
"""

from __future__ import annotations

import argparse
import json

from .._json import nulled
from .._options import DECLARED, FLOP_RATE, Param, progress_options
from ..theory import GAUGE_NAMES as GAUGES
from ..theory import MAX_NEURONS
from ..theory import PARAMS as THEORY
from ._params import PARAMS

STEP_SECONDS = {"torch": 1.1e-4, "compiled": 1e-6, "chain": 1e-6, "auto": 1.1e-4}
"""Fixed cost of one optimizer step whatever its size (Python, torch dispatch, records): 113 us
per step on the torch backend, measured by an independent probe on an idle two-core x86-64
(``auto``, before it has chosen, is estimated as torch, the costliest)."""
SEED_STEP_SECONDS = {"torch": 0.0, "compiled": 1.4e-7, "chain": 1.4e-7, "auto": 0.0}
"""Fixed cost per seed and step of the compiled kernels (140 ns per seed-step on the chain,
measured likewise)."""

OPTIONS: dict[str, Param] = {
    "setup": Param(
        str,
        "single",
        name="setup",
        choices=("single", "duplicates"),
        help="the named set-up: one student neuron, or copies of it",
    ),
    "dim": Param(
        int,
        name="dim",
        lo=2,
        hi=10**7,
        help="input dimension D",
        metavar="D",
        why="float arrays of D per sample, neuron and seed; memory is also estimated",
    ),
    "gauge": THEORY["gauge"],
    "scale": Param(
        float,
        1.0,
        name="scale",
        lo=1e-6,
        hi=1e6,
        help="initial coefficient rho0 = s",
        why="|w|^2 = s D and a^2 = s / D must stay resolvable in floating point",
    ),
    "strength": Param(
        float,
        name="strength",
        lo=0,
        hi=1e8,
        lo_open=True,
        help="gauge strength",
        why="|w|^2 = s x strength must stay resolvable in floating point",
    ),
    "activation": THEORY["activation"],
    "teacher_activation": THEORY["teacher_activation"],
    **{
        name: PARAMS[name]
        for name in (
            "weight_decay",
            "lr2",
            "label_noise",
            "samples",
            "optimizer",
            "lr",
            "steps",
            "batch",
            "schedule",
            "seeds",
            "root_seed",
        )
    },
    "threshold": THEORY["threshold"],
    "prune_tol": THEORY["prune_tol"],
    "dtype": PARAMS["dtype"],
    "backend": PARAMS["backend"],
}
"""The options of ``gaugedyn train`` in the order of its help: the engines' declarations, and the
set-up, its dimension, scale and gauge strength (narrower than the theory's set-ups accept, for
the memory of float arrays), which only the command line has."""
_NUMBERS = (
    "dim",
    "scale",
    "strength",
    "samples",
    "lr",
    "steps",
    "batch",
    "seeds",
    "root_seed",
    "threshold",
    "prune_tol",
    "weight_decay",
    "lr2",
    "label_noise",
)
_NAMES = ("setup", "activation", "optimizer", "schedule", "dtype", "backend")
_REQUIRED = ("dim",)
_COMPUTED = {  # the options whose default the command works out (None: no default)
    "gauge": f"{THEORY['gauge'].default} (setup single)",
    "strength": "D",
    "teacher_activation": "the student's",
    "samples": "none (give --samples N or --online)",
    "lr": "0.5 / (s D)",
    "batch": "the whole sample; 1 when online",
}
_DEFAULTS = {"seeds": 4}  # the command's default where it differs from the engine's


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train a named set-up on Gaussian data (batched seeds); print JSON",
        description="Train the 'single' or 'duplicates' set-up by full-batch GD, mini-batch or "
        "online SGD, or Adam, S seeds as one batched computation; print final observables, the "
        "specialization time per seed and the settings as one JSON object. Every value is "
        "checked before any work: a bad one gives one error line and exit status 2.",
    )
    data = p.add_mutually_exclusive_group()
    for name, option in OPTIONS.items():
        where = data if name == "samples" else p
        if name in _REQUIRED:
            option.add_to(where, required=True)
        elif name in _COMPUTED:
            option.add_to(where, default=None, default_text=_COMPUTED[name])
        else:
            option.add_to(where, default=_DEFAULTS.get(name, DECLARED))
        if name == "gauge":
            p.add_argument(
                "--gauges",
                help="comma-separated gauges of the duplicates, e.g. "
                f"a-heavy,w-heavy, each one of {', '.join(GAUGES)}; at most "
                f"{MAX_NEURONS}",
            )
        if name == "samples":
            data.add_argument("--online", action="store_true", help="fresh samples every step")
        if name == "dtype":
            p.add_argument(
                "--device",
                default=None,
                help="cpu, cuda, cuda:N or mps, if this "
                "machine has it (default: cuda if available)",
            )
    progress_options(p)
    p.set_defaults(func=_handle)


def _gauges(args) -> list[str]:
    from .._errors import InputError

    if args.setup == "single":
        if args.gauges is not None:
            raise InputError("--gauges is for --setup duplicates; use --gauge with --setup single")
        return [OPTIONS["gauge"].parse("w-heavy" if args.gauge is None else args.gauge)]
    if args.gauge is not None or not args.gauges:
        raise InputError("--setup duplicates needs --gauges (comma-separated), not --gauge")
    names = [g.strip() for g in args.gauges.split(",")]
    if len(names) > MAX_NEURONS:
        raise InputError(f"--gauges names {len(names)} neurons; allowed: 1 to {MAX_NEURONS}")
    for g in names:
        if g not in GAUGES:
            raise InputError(
                f"--gauges entry {g!r} is not allowed; each must be one of {', '.join(GAUGES)}"
            )
    return names


def check_device(text: str | None) -> str | None:
    """``text`` if this machine has that torch device (``cpu``, ``cuda[:N]``, ``mps``), else
    `InputError` naming the devices it has."""
    import torch

    from .._errors import InputError

    if text is None:
        return None
    have = ["cpu"]
    if torch.cuda.is_available():
        have += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        have.append("mps")
    if text not in have:
        raise InputError(
            f"--device={text!r} is not available on this machine; allowed: {', '.join(have)}"
        )
    return text


def memory_estimate(v: dict, K: int, itemsize: int) -> tuple[float, str]:
    """``(bytes, formula)``: the data (fixed sample: ``X``, its padded and transposed copies, the
    labels; online: one block of the stream) and the network, per seed, times ``S`` seeds."""
    S, D, n, B = v["seeds"], v["dim"], v["samples"], v["batch"] or 1
    if n is not None:
        data, what = 4.0 * n * (D + K + 1) + 4.0 * (B if v["batch"] else 0) * D, "4 n (D + K + 1)"
    else:
        data, what = 4.0 * max(2**16, B * D) * 2, "8 max(2^16, B D)"
    net = 16.0 * K * D
    total = itemsize * S * (data + net)
    return total, f"{itemsize} bytes x S x ({what} + 16 K D) with S={S}, n={n}, D={D}, K={K}"


def work_estimate(v: dict, K: int) -> float:
    """Floating-point operations: about ``12 S B D (K + 1)`` per step (forward and backward
    through students and teacher), ``B = n`` for full-batch GD; for the chain, which never
    touches the ``D`` coordinates, about ``S (P^3 + 12 B^2 P^2)`` with ``P = K + 1``."""
    B = v["batch"] or (v["samples"] if v["samples"] is not None else 1)
    if v.get("backend") == "chain":
        P = K + 1
        return float(v["seeds"]) * (P**3 + 12.0 * B * B * P * P) * v["steps"]
    return 12.0 * v["seeds"] * B * v["dim"] * (K + 1) * v["steps"]


FLOAT_RATE_TEXT = f"{FLOP_RATE:g} per second"


def time_estimate(v: dict, flop: float) -> float:
    """Seconds on one core: ``flop / FLOP_RATE`` plus the fixed costs per step
    (`STEP_SECONDS`) and per seed and step (`SEED_STEP_SECONDS`) of the backend."""
    backend = v.get("backend") or "torch"
    steps, seeds = float(v["steps"]), float(v["seeds"])
    return (
        flop / FLOP_RATE
        + steps * STEP_SECONDS[backend]
        + seeds * steps * SEED_STEP_SECONDS[backend]
    )


def _values(args) -> dict:
    from .._errors import InputError

    v = {
        name: None if getattr(args, name) is None else OPTIONS[name].parse(getattr(args, name))
        for name in _NUMBERS
    }
    v.update({name: OPTIONS[name].parse(getattr(args, name)) for name in _NAMES})
    v["teacher_activation"] = (
        None
        if args.teacher_activation is None
        else OPTIONS["teacher_activation"].parse(args.teacher_activation)
    )
    if not args.online and v["samples"] is None:
        raise InputError("give --samples N (fixed sample) or --online")
    if v["samples"] is not None and v["batch"] is not None and v["batch"] > v["samples"]:
        raise InputError(
            f"--batch={v['batch']} is not allowed; allowed: at most --samples={v['samples']}"
        )
    v["device"] = check_device(args.device)
    if v["backend"] not in ("torch", "auto"):
        wrong = [
            text
            for text, bad in (
                ("--online", not args.online),
                ("--optimizer sgd", v["optimizer"] != "sgd"),
                ("--dtype float64", v["dtype"] != "float64"),
                ("--device cpu", v["device"] not in (None, "cpu")),
            )
            if bad
        ]
        if wrong:
            raise InputError(
                f"--backend={v['backend']} runs online SGD in float64 on the CPU; "
                f"it needs {', '.join(wrong)} (or use --backend torch)"
            )
    return v


def _check_size(v: dict, K: int) -> None:
    from .._options import check_memory, check_work

    estimate, formula = memory_estimate(v, K, 4 if v["dtype"] == "float32" else 8)
    check_memory(
        f"--dim={v['dim']} --samples={v['samples']} --seeds={v['seeds']}", estimate, formula
    )
    flop = work_estimate(v, K)
    backend = v.get("backend") or "torch"
    check_work(
        f"--steps={v['steps']} with --dim={v['dim']}, --seeds={v['seeds']} and batch "
        f"{v['batch'] or v['samples'] or 1}",
        time_estimate(v, flop),
        f"{flop:.2g} floating-point operations at {FLOAT_RATE_TEXT} plus "
        f"{STEP_SECONDS[backend] * 1e6:g} us per step"
        + (
            f" and {SEED_STEP_SECONDS[backend] * 1e9:g} ns per seed and step"
            if SEED_STEP_SECONDS[backend]
            else ""
        )
        + " of fixed cost",
        "choose fewer steps, seeds or samples",
    )


def _handle(args: argparse.Namespace) -> int:
    import numpy as np

    from .._progress import progress_bar
    from ..theory import Definitions, duplicates, single, with_gauge
    from ._trainer import TrainConfig, choose_backend, train

    v = _values(args)
    gauges = _gauges(args)
    _check_size(v, len(gauges))
    kind = dict(scale=v["scale"], activation=v["activation"])
    if args.setup == "single":
        problem = single(v["dim"], gauges[0], **kind)
    else:
        problem = duplicates(v["dim"], gauges, **kind)
    if v["teacher_activation"] is not None:
        problem = problem.replace(teacher_activation=v["teacher_activation"])
    if v["strength"] is not None:
        problem = with_gauge(problem, names=gauges, strength=v["strength"])
    lr = v["lr"] if v["lr"] is not None else 0.5 / (v["scale"] * v["dim"])
    cfg = TrainConfig(
        optimizer=v["optimizer"],
        lr=lr,
        steps=v["steps"],
        samples=None if args.online else v["samples"],
        batch=v["batch"],
        schedule=v["schedule"],
        weight_decay=v["weight_decay"],
        lr2=v["lr2"],
        label_noise=v["label_noise"],
    )
    definitions = Definitions(threshold=v["threshold"], prune_tol=v["prune_tol"])
    bar = progress_bar(v["steps"], "train", unit="step", force=args.progress, quiet=args.quiet)
    every = max(1, min(1000, v["steps"] // 200))
    on_step = (
        (lambda r: bar.callback(r.step) if r.step % every == 0 or r.step == v["steps"] else None)
        if bar.enabled
        else None
    )
    backend = v["backend"]
    if backend == "auto":
        backend = choose_backend(
            problem, cfg, dtype=v["dtype"], device=v["device"], root_seed=v["root_seed"]
        )
    compiled = backend != "torch"  # one compiled call per seed: no per-step callback
    try:
        res = train(
            problem,
            cfg,
            seeds=v["seeds"],
            root_seed=v["root_seed"],
            dtype=v["dtype"],
            device=v["device"],
            definitions=definitions,
            on_step=None if compiled else on_step,
            backend=backend,
        )
        if compiled and bar.enabled:
            bar.callback(v["steps"])
    finally:
        bar.close()
    out, nulls = nulled(_output(args, v["dim"], gauges, res, definitions, np))
    if nulls:
        out["null"] = (
            "null: a value that is not a finite number (a time not reached before the last "
            "step, or a loss that stopped being finite)"
        )
    print(json.dumps(out, default=float))
    return 0


def _output(args, dim: int, gauges, res, definitions, np) -> dict:
    final = res.final()
    spec = res.specialization_time()
    return {
        "setup": args.setup,
        "dim": dim,
        "gauges": gauges,
        "activation": args.activation,
        "teacher_activation": args.teacher_activation,
        "seeds": res.seeds,
        "root_seed": res.root_seed,
        "time_final": float(res.time[-1]),
        "steps": int(res.steps[-1]),
        "specialization_time": spec[:, 0].tolist(),
        "owner": final["owner"][:, 0].tolist(),
        # L >= 0: the closed form's round-off below 0 is shown as 0
        "loss": np.maximum(final["loss"], 0.0).tolist(),
        "loss_empirical": final["loss_empirical"].tolist(),
        "rho": final["rho"].tolist(),
        "alignment": final["alignment"][..., 0].tolist(),
        "delta_drift": final["delta_drift"].tolist(),
        "pruned": final["pruned"].tolist(),
        "median": {
            "loss": float(max(np.median(final["loss"]), 0.0)),
            "specialization_time": float(np.nanmedian(spec[:, 0]))
            if np.any(np.isfinite(spec))
            else None,
        },
        "settings": res.settings,
        "definitions": definitions.describe(),
        "wall_time_s": res.diagnostics["wall_time_s"],
    }
