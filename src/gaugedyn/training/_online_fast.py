"""Online SGD of the classical teacher-student model at compiled speed (numba).

The same model, loss, step and time as `gaugedyn.training.train()` with ``optimizer="sgd"``
and ``samples=None`` (module docstring of ``_trainer``): students ``f(x) = sum_i a_i g(w_i . x)``
against the teacher ``f*(x) = sum_n b_n g(v_n . x)``, a fresh batch of ``B`` samples
``x ~ N(0, I_D)`` per step, the step ``eta_k / D`` on the batch loss
``L_B = 1/(2B) sum_mu (f(x_mu) - f*(x_mu))^2``::

    a_i   <- a_i   - (eta_k / D) (1/B) sum_mu e_mu g(lambda_i)
    w_i   <- w_i   - (eta_k / D) (1/B) sum_mu e_mu a_i g'(lambda_i) x_mu,

``e = f - f*``, ``lambda_i = w_i . x``, and the time ``t = steps / D``, ``flow_time = sum_k eta_k / D``.
The classical options of ``TrainConfig``, with the torch trainer's conventions: label noise
``sigma`` (labels ``y = f*(x) + sigma xi``, ``xi ~ N(0, 1)`` per sample, so ``e = f - f* -
sigma xi``), weight decay ``lambda`` added to both layers' gradients (``theta <- theta - (eta_k
/ D) (grad + lambda theta)``) and the second layer's relative rate ``lr2`` (the ``a`` step is
``lr2`` times the above; ``lr2 = 0`` freezes it; the flow time stays ``sum_k eta_k / D``).

What differs from the torch path is only where the samples come from: seed ``i`` draws from its
own ``numpy.random.Generator`` (numpy's SFC64 seeded from ``gaugedyn._meta.task_seed(root_seed,
i)``), one sample at a time, inside the compiled loop. The input draws are most of a step's cost
(500 normals: about 4 us, against about 0.9 us for the arithmetic at K = M = 4); numpy's SFC64
draws them about 30% faster than its default PCG64 here and passes the same statistical batteries
(PractRand, TestU01 BigCrush). Each seed is one call of a ``nogil`` kernel, so seeds run on
``threads`` threads at once, and a seed's trajectory does not depend on how many
seeds or threads share the run. `run_kernel()` also accepts the samples as an array, which
is how the tests check it step for step against the torch trainer.
"""

from __future__ import annotations

import os
import time as _time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._errors import DivergenceError, InputError
from .._meta import task_seed, versions
from ..theory import Definitions, Problem, population_loss
from ._online_codes import ACTIVATION_CODES as ACTIVATION_CODES
from ._online_codes import BIT_GENERATOR as BIT_GENERATOR
from ._online_codes import SCHEDULE_CODES as SCHEDULE_CODES
from ._online_codes import activation_code as activation_code
from ._online_codes import given_noise as given_noise
from ._online_codes import options as options


def _build():
    """The compiled kernels (`gaugedyn.training._online_kernels`; numba loads here)."""
    from . import _online_kernels

    return {"run": _online_kernels.run, "step_size": _online_kernels.step_size}


def seed_generator(root_seed: int, index: int) -> np.random.Generator:
    """The generator of seed ``index`` under ``root_seed`` (`BIT_GENERATOR` from
    ``task_seed``)."""
    return np.random.Generator(BIT_GENERATOR(task_seed(int(root_seed), int(index))))


def compiled_step_size(
    schedule: str, lr: float, k: int, steps: int, lr_min: float = 0.0, decay: float = 1000.0
) -> float:
    """The compiled kernel's ``eta_k`` (equal to `gaugedyn.training._optim.step_size()`)."""
    return _build()["step_size"](
        SCHEDULE_CODES[schedule], float(lr), int(k), int(steps), float(lr_min), float(decay)
    )


def run_kernel(
    a: np.ndarray,
    W: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    activation: str,
    config,
    grid: np.ndarray,
    gen: np.random.Generator | None = None,
    X: np.ndarray | None = None,
    teacher_activation=None,
    noise: np.ndarray | None = None,
) -> dict:
    """Run one seed in place on copies of ``a (K,)``, ``W (K, D)``; samples from ``gen`` or,
    if given, from ``X (steps, batch, D)`` and (with ``config.label_noise > 0``) the label
    noises ``xi`` from ``noise (steps, batch)``; the teacher uses ``teacher_activation``
    (``None``: the student's). ``config.weight_decay``, ``config.lr2`` and
    ``config.label_noise`` apply as in the torch trainer (module docstring). Returns the records
    at ``grid`` and ``failed_at`` (the record index where a value became non-finite, or
    ``None``)."""
    kern = _build()["run"]
    a = np.array(a, dtype=np.float64)
    W = np.array(W, dtype=np.float64)
    n = grid.shape[0]
    K, M = a.shape[0], V.shape[0]
    out: dict[str, Any] = {
        "a": np.full((n, K), np.nan),
        "Q": np.full((n, K, K), np.nan),
        "R": np.full((n, K, M), np.nan),
        "emp": np.full(n, np.nan),
        "flow": np.full(n, np.nan),
    }
    if X is None:
        if gen is None:
            raise ValueError("run_kernel needs the seed's generator (gen) or the samples (X)")
        X = np.empty((0, 1, 1))
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        gen = np.random.Generator(BIT_GENERATOR(0))  # a typed placeholder, never drawn from
    noise = given_noise(noise, X.shape[0] > 0, config)
    status = kern(
        a,
        W,
        np.ascontiguousarray(V, dtype=np.float64),
        np.asarray(b, np.float64),
        activation_code(activation),
        activation_code(activation if teacher_activation is None else teacher_activation),
        SCHEDULE_CODES[config.schedule],
        float(config.lr),
        float(config.lr_min),
        float(config.decay),
        int(config.steps),
        np.asarray(grid, np.int64),
        int(config.batch_size),
        gen,
        X,
        *options(config),
        noise,
        out["a"],
        out["Q"],
        out["R"],
        out["emp"],
        out["flow"],
    )
    out["failed_at"] = None if status < 0 else int(status)
    out["last"] = (a, W)
    return out


def default_threads() -> int:
    """Threads for seeds: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def train_online_compiled(
    problem: Problem,
    config,
    seeds: int = 1,
    root_seed: int = 0,
    seed_indices: Sequence[int] | None = None,
    definitions: Definitions | None = None,
    threads: int | None = None,
):
    """Online SGD of ``problem`` for ``S`` seeds with the compiled kernel (module docstring).

    Returns a `gaugedyn.training.TrainResult` with the same fields and conventions as
    `gaugedyn.training.train()`; raises `gaugedyn.DivergenceError` if a seed's
    parameters become non-finite (found at the record after the step that broke them).
    """
    return train_online(
        problem, config, seeds, root_seed, seed_indices, definitions, threads, "compiled"
    )


DATA = {
    "compiled": "online: fresh x ~ N(0, I_D) per sample, drawn inside the compiled loop",
    "chain": "online, as the exact order-parameter chain: per sample the fields u = L z "
    "(z ~ N(0, I_r), L L^T = C) and |x|^2 = |z|^2 + chi^2(D - r) (Wishart for a "
    "batch); the weights are not formed (gaugedyn.training._online_chain)",
}
"""What each compiled backend draws, as written into the result's settings."""


def train_online(
    problem: Problem,
    config,
    seeds: int,
    root_seed: int,
    seed_indices: Sequence[int] | None,
    definitions: Definitions | None,
    threads: int | None,
    backend: str,
):
    r"""Online SGD for $S$ seeds in weight space (``backend="compiled"``) or as the exact
    order-parameter chain (``"chain"``, `gaugedyn.training._online_chain`), in float64 on the
    CPU, seeds on threads; what `train()` runs for those backends, its arguments already checked
    there.

    Parameters
    ----------
    problem : Problem
        The teacher-student problem, with compiled activations (student and teacher).
    config : TrainConfig
        The run's settings: online SGD only (``optimizer="sgd"``, ``samples=None``).
    seeds : int
        The number of seeds when ``seed_indices`` is not given.
    root_seed : int
        The run's root seed: seed ``i`` draws from numpy's SFC64 of ``task_seed(root_seed, i)``.
    seed_indices : Sequence[int] or None
        The seeds' indices; ``None``: ``range(seeds)``.
    definitions : Definitions or None
        The observables' definitions recorded with the result; ``None``: the defaults.
    threads : int or None
        Threads the seeds run on; ``None``: the package's default thread count.
    backend : str
        ``"compiled"`` or ``"chain"``.

    Returns
    -------
    TrainResult
        As `train()` returns it, with ``settings["backend"]`` and ``settings["data"]`` saying what
        ran and what it drew.

    Raises
    ------
    InputError
        When ``config`` is not online SGD, or an activation has no compiled form (use
        ``backend="torch"``).
    DivergenceError
        When a seed's records become non-finite.
    """
    started = _time.perf_counter()
    if not (config.online and config.optimizer == "sgd"):
        raise InputError(
            f"backend={backend!r} runs online SGD only (optimizer='sgd', "
            "samples=None); use backend='torch' for the rest"
        )
    activation_code(problem.activation)
    activation_code(problem.teacher)
    definitions = Definitions() if definitions is None else definitions
    if seed_indices is None:
        seed_indices = list(range(int(seeds)))
    seed_indices = [int(i) for i in seed_indices]
    threads = default_threads() if threads is None else int(threads)
    grid = config.grid()
    one = _seed_runner(problem, config, grid, root_seed, backend)
    _build()

    if threads > 1 and len(seed_indices) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(seed_indices))) as pool:
            outs = list(pool.map(one, seed_indices))
    else:
        outs = [one(i) for i in seed_indices]
    D = np.asarray(problem.W).shape[1]
    _raise_on_failure(seed_indices, outs, grid, backend, D)
    settings = {
        "config": config.describe(),
        "problem": problem.describe(),
        "per_seed_problems": False,
        "seeds": len(seed_indices),
        "dtype": "float64",
        "device": "cpu",
        "backend": backend,
        "threads": threads,
        "time": "t = steps / D (online SGD, step eta/D); flow_time = sum_k eta_k / D",
        "data": DATA[backend],
        "seed_derivation": "numpy SFC64 per seed from gaugedyn._meta.task_seed(root_seed, i)",
    }
    return _result(
        problem, config, grid, outs, seed_indices, root_seed, settings, definitions, started
    )


def _seed_runner(problem: Problem, config, grid, root_seed: int, backend: str):
    """``one(index)``: the kernel's (or the chain's) records of seed ``index``."""
    a0, W0, V = (
        np.asarray(problem.a, float),
        np.asarray(problem.W, float),
        np.asarray(problem.V, float),
    )
    K, D = W0.shape
    if backend == "chain":
        from ._online_chain import gram, run_chain

        C0 = gram(problem)

        def one(index):
            return run_chain(
                a0,
                C0,
                problem.b,
                K,
                D,
                problem.activation,
                config,
                grid,
                gen=seed_generator(root_seed, index),
                teacher_activation=problem.teacher_activation,
            )
    else:

        def one(index):
            return run_kernel(
                a0,
                W0,
                V,
                problem.b,
                problem.activation,
                config,
                grid,
                gen=seed_generator(root_seed, index),
                teacher_activation=problem.teacher_activation,
            )

    return one


def _raise_on_failure(seed_indices, outs, grid, backend: str, D: int) -> None:
    """A `DivergenceError` for the first seed whose records became non-finite."""
    for i, o in zip(seed_indices, outs):
        if o["failed_at"] is not None:
            r = o["failed_at"]
            step = int(grid[r])
            good = {"a": o["a"][r - 1], "Q": o["Q"][r - 1], "step": int(grid[r - 1])} if r else None
            what = "a, Q or R" if backend == "chain" else "a or W"
            raise DivergenceError(f"{what} of seed {i}", step / D, step, good)


def _result(
    problem: Problem,
    config,
    grid,
    outs,
    seed_indices,
    root_seed: int,
    settings: dict,
    definitions: Definitions,
    started: float,
):
    """The seeds' records as one `TrainResult`."""
    from ._optim import step_size
    from ._result import TrainResult

    D = np.asarray(problem.W).shape[1]
    a = np.stack([o["a"] for o in outs])
    Q = np.stack([o["Q"] for o in outs])
    R = np.stack([o["R"] for o in outs])
    _, _, _, b_np, T = problem.order_parameters()
    return TrainResult(
        steps=np.asarray(grid, dtype=np.int64),
        time=np.asarray(grid, dtype=float) / D,
        flow_time=outs[0]["flow"].copy(),
        lr=np.asarray(
            [
                step_size(
                    config.schedule, config.lr, int(k), config.steps, config.lr_min, config.decay
                )
                for k in grid
            ]
        ),
        a=a,
        Q=Q,
        R=R,
        b=np.asarray(b_np),
        T=T,
        loss=population_loss(a, Q, R, b_np, T, problem.activation, problem.teacher_activation),
        loss_empirical=np.stack([o["emp"] for o in outs]),
        activation=problem.activation,
        teacher_activation=problem.teacher_activation,
        seeds=seed_indices,
        root_seed=int(root_seed),
        settings=settings,
        definitions=definitions,
        diagnostics={"wall_time_s": _time.perf_counter() - started, "versions": versions()},
    )


# --- the online ODE (erf) in the classical Saad-Solla form, compiled ----------------------------


def _build_ode():
    from . import _online_kernels

    return {"rhs": _online_kernels.online_rhs}


def compiled_online_rhs(
    K: int,
    M: int,
    b,
    T,
    eta: float,
    batch: int = 1,
    noise: bool = True,
    *,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    label_noise: float = 0.0,
):
    """``f(t, y)`` of the erf online ODE (same state layout and equations as
    `gaugedyn.training.OnlineODE`, the classical options included), written in the
    classical form::

        da_i/dt  = -eta lr2 (sum_p c_p I2(i, p) + lambda a_i),
        dR_in/dt = -eta (a_i sum_p c_p I3(i, n, p) + lambda R_in),
        dQ_ik/dt = -eta (a_i sum_p c_p I3(i, k, p) + a_k sum_p c_p I3(k, i, p) + 2 lambda Q_ik)
                   + (eta^2 / B) a_i a_k (sum_pq c_p c_q I4(i, k, p, q) + sigma^2 J(i, k)),

    ``c = (a, -b)`` over the student and teacher fields, ``I2 = E[g g]``, ``I3 = E[g' u g]``,
    ``I4 = E[g' g' g g]`` from the symbolic module's erf integrals and ``J = E[g' g'] = (2/pi)
    ((1 + Q_ii)(1 + Q_kk) - Q_ik^2)^(-1/2)``, compiled with numba; ``lambda`` the weight decay,
    ``sigma`` the label noise. Every other compiled activation:
    `gaugedyn.training._online_ode.compiled_rhs()`.
    """
    rhs = _build_ode()["rhs"]
    b = np.ascontiguousarray(b, dtype=np.float64)
    T = np.ascontiguousarray(T, dtype=np.float64)
    noise_scale = float(eta) ** 2 / int(batch) if noise else 0.0
    size = K + K * K + K * M
    wd, rate, sigma2 = float(weight_decay), float(lr2), float(label_noise) ** 2

    def f(t, y):
        return rhs(
            np.asarray(y, dtype=np.float64),
            K,
            M,
            b,
            T,
            float(eta),
            noise_scale,
            wd,
            rate,
            sigma2,
            np.empty(size),
        )

    return f
