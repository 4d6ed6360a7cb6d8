"""The settings of a training run (`TrainConfig` and `train()`), declared once.

`gaugedyn.training.TrainConfig` and `gaugedyn.training.train()` check their arguments
with these declarations and ``gaugedyn train`` derives its options (help, bounds, default) from
them. They live apart from the trainer only so that reading them (``gaugedyn --help``) does not
import torch.
"""

from __future__ import annotations

from .._options import MAX_SEED, Param

BACKENDS = ("auto", "torch", "compiled", "chain")

PARAMS: dict[str, Param] = {
    "optimizer": Param(
        str,
        "gd",
        name="optimizer",
        choices=("gd", "sgd", "adam"),
        help="full-batch gradient descent, SGD (mini-batch or online) or Adam",
    ),
    "lr": Param(
        float,
        0.01,
        name="lr",
        lo=0,
        hi=1e3,
        lo_open=True,
        help="step size eta",
        why="larger steps diverge at once on these losses",
    ),
    "steps": Param(
        int,
        1000,
        name="steps",
        lo=1,
        hi=10**9,
        help="optimizer steps",
        why="the arithmetic is also estimated and capped at about a day",
    ),
    "samples": Param(
        int,
        1000,
        name="samples",
        lo=1,
        hi=10**9,
        help="fixed sample size n",
        why="S n D floats of data; memory is also estimated per request",
    ),
    "batch": Param(
        int,
        name="batch",
        lo=1,
        hi=10**7,
        help="mini-batch size (sgd, adam)",
        why="S B D floats per step",
    ),
    "schedule": Param(
        str,
        "constant",
        name="schedule",
        choices=("constant", "cosine", "inverse"),
        help="learning-rate schedule",
    ),
    "weight_decay": Param(
        float,
        0.0,
        name="weight_decay",
        lo=0,
        hi=1e3,
        help="weight decay on both layers",
        why="a larger penalty shrinks every weight to 0 within one step",
    ),
    "lr2": Param(
        float,
        1.0,
        name="lr2",
        lo=0,
        hi=1e3,
        help="second-layer rate relative to the first (sgd and gd; 0 freezes it)",
        why="the second layer's rate relative to the first; 0 freezes it",
    ),
    "label_noise": Param(
        float,
        0.0,
        name="label_noise",
        lo=0,
        hi=1e3,
        help="teacher output noise sigma",
        why="the teacher's output is O(1); larger noise is all noise",
    ),
    "lr_min": Param(
        float,
        0.0,
        name="lr_min",
        lo=0,
        hi=1e3,
        help="smallest step of a schedule",
        why="the smallest step of a schedule, <= lr",
    ),
    "decay": Param(
        float,
        1000.0,
        name="decay",
        lo=0,
        hi=1e15,
        lo_open=True,
        help="steps of the inverse schedule's decay",
        why="steps of the inverse schedule's decay; beyond it the schedule is constant",
    ),
    "eps": Param(
        float,
        1e-8,
        name="eps",
        lo=0,
        hi=1e3,
        lo_open=True,
        help="Adam's denominator floor",
        why="Adam's denominator floor; above 1e3 Adam is plain SGD scaled down",
    ),
    "beta": Param(
        float,
        name="beta",
        lo=0,
        hi=1,
        hi_open=True,
        help="an Adam moment's decay",
        why="a moment's decay factor; 1 would never forget",
    ),
    "points_per_decade": Param(
        int,
        40,
        name="points_per_decade",
        lo=1,
        hi=10**6,
        help="records per decade of steps",
        why="records per decade of steps",
    ),
    "check_every": Param(
        int,
        256,
        name="check_every",
        lo=0,
        hi=10**9,
        help="steps between divergence checks",
        why="steps between divergence checks (0: only at records)",
    ),
    "record_step": Param(
        int,
        name="record_steps",
        lo=0,
        hi=10**9,
        help="a step to record",
        why="steps are at most 1e9",
    ),
    "seeds": Param(
        int,
        1,
        name="seeds",
        lo=1,
        hi=100_000,
        help="number of seeds S (batched)",
        why="seeds are trained as one batch in memory",
    ),
    "root_seed": Param(
        int,
        0,
        name="root_seed",
        lo=0,
        hi=MAX_SEED,
        hi_text="2**64 - 1",
        help="root seed",
        why="seeds are unsigned 64-bit integers",
    ),
    "seed_index": Param(
        int,
        name="seed_indices",
        lo=0,
        hi=MAX_SEED,
        hi_text="2**64 - 1",
        help="a seed's index",
        why="seed indices are unsigned 64-bit integers",
    ),
    "dtype": Param(
        str, "float64", name="dtype", choices=("float32", "float64"), help="floating-point type"
    ),
    "backend": Param(
        str,
        "auto",
        name="backend",
        choices=BACKENDS,
        help="auto (the fastest exact backend for the run: chain or compiled for online SGD "
        "on the CPU in float64, torch otherwise); torch (every optimizer, any device); "
        "compiled (online SGD in weight "
        "space, numba, float64 on the CPU); chain (online SGD as its exact "
        "order-parameter chain: the same law of the order parameters and losses, at "
        "a cost per step independent of D)",
    ),
}
"""Every setting of `TrainConfig` (``optimizer`` to ``check_every``, ``record_step`` for
each of ``record_steps``, ``beta`` for each of ``betas``) and of `train()` (``seeds`` to
``backend``) by name: type, bounds and why, choices, help and the engine's default."""
