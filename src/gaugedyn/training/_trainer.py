r"""Training loops: full-batch GD, mini-batch and online SGD, Adam, for ``S`` seeds at once.

Conventions (so that simulation and theory curves overlay):

- fixed sample (``samples = n``): $x_\mu \sim \mathcal{N}(0, I_D)$, $\mu = 1, \dots, n$, drawn once per seed;
  the loss of a batch ``B`` is $\frac{1}{2|B|} \sum_{\mu \in B} (f(x_\mu) - y_\mu)^2$; the step is
  $\theta \leftarrow \theta - \eta_k \nabla L$ and the time is the gradient-flow time $t = \sum_k \eta_k$
  (``= eta * steps`` at constant ``eta``);
- online SGD (``samples = None``): a fresh batch each step, step ``eta_k / D`` on the batch loss,
  time ``t = steps / D`` (Saad & Solla; Goldt et al. 2019). The mean drift per unit ``t`` is
  ``eta`` times the population gradient, so population-flow time is $\mathit{flow\_time} = \eta t$;
- online Adam: fresh batches, step ``eta_k`` (Adam is invariant to the gradient scale), time
  $t = \sum_k \eta_k$.

Seeds: seed ``i`` draws data (and mini-batch orders) from its own generator
(`gaugedyn.training._data.generator_seed()`); all arithmetic is batched over the seed axis
with operations whose per-slice results do not depend on the number of slices (matrix products
through `gaugedyn.training._network.seedwise_mm()`), so any seed re-run alone with the same
torch thread count reproduces its batched trajectory bit for bit (checked by the tests on CPU at
1, 2 and 4 threads); another thread count may move it at round-off where a product is large.

Observation: ``train(..., on_step=f)`` calls ``f(StepRecord)`` after every optimizer step (see
`StepRecord`); with ``on_step=None`` the loop is exactly the unobserved one.
"""

from __future__ import annotations

import dataclasses
import math
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._errors import DivergenceError, InputError
from .._meta import versions
from ..theory import Definitions, Problem, order_parameters, population_loss
from . import _data
from ._network import Network, prepare, resolve_device, resolve_dtype
from ._optim import (
    AdamState,
    adam_state,
    adam_update,
    adam_view,
    sgd_update,
    step_size,
)
from ._params import PARAMS
from ._result import TrainResult


def _record_steps(steps) -> tuple[int, ...]:
    try:
        values = tuple(steps)
    except TypeError:
        raise InputError(
            f"record_steps={steps!r} is not allowed; allowed: a sequence of integers >= 0 (or None)"
        ) from None
    return tuple(PARAMS["record_step"].accept(v) for v in values)


_BETAS_ALLOWED = (
    "two numbers (beta1, beta2), each in [0, 1), or a non-empty sequence of such "
    "pairs, one per seed"
)


def _betas(value) -> tuple:
    r"""$(\beta_1, \beta_2)$ as floats, or a tuple of such pairs (one per seed), or InputError."""

    def pair(p) -> tuple[float, float]:
        if isinstance(p, str) or not isinstance(p, Sequence) or len(p) != 2:
            raise InputError(f"betas={value!r} is not allowed; allowed: {_BETAS_ALLOWED}")
        return tuple(PARAMS["beta"].accept(b, "betas") for b in p)

    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) > 0
        and all(isinstance(p, Sequence) and not isinstance(p, str) for p in value)
    ):
        return tuple(pair(p) for p in value)
    return pair(value)


def _betas_list(betas: tuple) -> list:
    """``betas`` as lists, as written in metadata and errors: ``[b1, b2]`` or one per seed."""
    return [list(p) if isinstance(p, tuple) else p for p in betas]


@dataclass(frozen=True)
class TrainConfig:
    r"""Settings of one training run (see module docstring for the conventions).

    ``optimizer``: ``gd`` (full batch, fixed sample), ``sgd`` (mini-batches of ``batch`` from the
    fixed sample, reshuffled per epoch; or online with ``samples=None``) or ``adam``.
    ``record_steps``: explicit steps to record, else ``points_per_decade`` log-spaced steps
    (always including 0 and ``steps``). ``betas``: Adam's $(\beta_1, \beta_2)$, or one such pair
    per seed (a sequence as long as the run's seeds), so that copies with different factors train
    as one program, each copy the same arithmetic as its pair's run alone.
    """

    optimizer: str = "gd"
    lr: float = 0.01
    steps: int = 1000
    samples: int | None = 1000
    batch: int | None = None
    schedule: str = "constant"
    lr_min: float = 0.0
    decay: float = 1000.0
    betas: tuple[float, float] | tuple[tuple[float, float], ...] = (0.9, 0.999)
    eps: float = 1e-8
    points_per_decade: int = 40
    record_steps: tuple[int, ...] | None = None
    check_every: int = 256
    weight_decay: float = 0.0
    lr2: float = 1.0
    label_noise: float = 0.0

    @property
    def plain(self) -> bool:
        """No classical option is set (weight decay, second-layer rate, label noise)."""
        return self.weight_decay == 0.0 and self.lr2 == 1.0 and self.label_noise == 0.0

    def __post_init__(self):
        for name in (
            "optimizer",
            "schedule",
            "lr",
            "steps",
            "lr_min",
            "decay",
            "eps",
            "points_per_decade",
            "check_every",
        ):
            object.__setattr__(self, name, PARAMS[name].accept(getattr(self, name)))
        for name in ("samples", "batch"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, PARAMS[name].accept(getattr(self, name)))
        object.__setattr__(self, "betas", _betas(self.betas))
        if self.per_copy_betas and self.optimizer != "adam":
            raise InputError(
                f"betas={_betas_list(self.betas)!r} is not allowed with "
                f"optimizer={self.optimizer!r}; allowed: one pair per seed with "
                "optimizer='adam'"
            )
        if self.record_steps is not None:
            object.__setattr__(self, "record_steps", _record_steps(self.record_steps))
        if self.samples is None and self.optimizer == "gd":
            raise InputError(
                "optimizer='gd' needs a fixed sample (samples=n); use 'sgd' for online"
            )
        if self.samples is not None and self.batch is not None and self.batch > self.samples:
            raise InputError(f"batch={self.batch} exceeds samples={self.samples}")
        if self.optimizer == "gd" and self.batch not in (None, self.samples):
            raise InputError("optimizer='gd' is full batch; use 'sgd' for mini-batches")
        if self.lr_min > self.lr:
            raise InputError(
                f"lr_min={self.lr_min!r} is not allowed; allowed: a number in "
                f"[0, lr={self.lr!r}] (the schedule decays from lr to lr_min)"
            )
        if self.points_per_decade < 1:
            raise InputError(f"points_per_decade={self.points_per_decade!r} must be >= 1")
        for name in ("weight_decay", "lr2", "label_noise"):
            PARAMS[name].accept(getattr(self, name))  # checked; kept as given
        if self.optimizer == "adam" and self.lr2 != 1.0:
            raise InputError(
                f"lr2={self.lr2!r} is for optimizer='sgd' or 'gd'; Adam takes one learning rate"
            )

    @property
    def per_copy_betas(self) -> bool:
        r"""``betas`` holds one $(\beta_1, \beta_2)$ per seed (copy) rather than one pair."""
        return isinstance(self.betas[0], tuple)

    @property
    def online(self) -> bool:
        return self.samples is None

    @property
    def batch_size(self) -> int:
        if self.batch is not None:
            return int(self.batch)
        return 1 if self.samples is None else int(self.samples)  # 1 online

    def grid(self) -> np.ndarray:
        if self.record_steps is not None:
            g = np.unique(np.clip(np.asarray(self.record_steps, dtype=np.int64), 0, self.steps))
            return np.unique(np.concatenate([[0], g, [self.steps]]))
        decades = max(math.log10(self.steps), 1e-9)
        n = max(2, int(math.ceil(decades * self.points_per_decade)) + 1)
        g = np.round(np.logspace(0, math.log10(self.steps), n)).astype(np.int64)
        return np.unique(np.concatenate([[0], g, [self.steps]]))

    def describe(self) -> dict:
        d = dataclasses.asdict(self)
        if self.plain:  # the classical options appear only when set
            for name in ("weight_decay", "lr2", "label_noise"):
                d.pop(name)
        d["record_steps"] = None if self.record_steps is None else list(self.record_steps)
        d["betas"] = _betas_list(self.betas)
        return d


@dataclass(frozen=True)
class StepRecord:
    """What `train()` hands to ``on_step`` after each optimizer step.

    - ``step``: steps taken so far, ``1..steps`` (the index used by ``TrainResult.steps``);
    - ``time``: the time ``t`` after the step (module docstring's convention);
    - ``lr``: the schedule's ``eta_k`` of this step (online SGD applies ``eta_k / D``);
    - ``previous``, ``params``: ``(a (S, K), W (S, K, D))`` before and after the step;
    - ``grads``: ``(dL_B/da, dL_B/dW)`` of the step's batch ``B`` at ``previous``;
    - ``loss``: that batch loss ``L_B (S,)`` at ``previous``;
    - ``adam``: `AdamState` ``(m, v, k)`` after the step (``k == step``); ``None`` for
      ``gd`` and ``sgd``.

    Contract: the tensors are the trainer's own, not copies (observing costs no memory traffic);
    ``on_step`` may read them and keep references, and must never modify them in place.
    """

    step: int
    time: float
    lr: float
    previous: tuple[torch.Tensor, torch.Tensor]
    params: tuple[torch.Tensor, torch.Tensor]
    grads: tuple[torch.Tensor, torch.Tensor]
    loss: torch.Tensor
    adam: AdamState | None

    def select(self, rows: slice) -> StepRecord:
        """The record of the copies ``rows`` (a slice of axis 0) alone, as views of the same
        tensors: what an observer of a run of just those copies would be shown (several runs
        trained as one program, each observed by its own ``on_step``)."""
        if not isinstance(rows, slice):
            raise InputError(f"rows={rows!r} is not allowed; allowed: a slice of the copies")

        def pick(ts):
            return tuple(t[rows] for t in ts)

        adam = (
            None
            if self.adam is None
            else AdamState(m=pick(self.adam.m), v=pick(self.adam.v), k=self.adam.k)
        )
        return dataclasses.replace(
            self,
            previous=pick(self.previous),
            params=pick(self.params),
            grads=pick(self.grads),
            loss=self.loss[rows],
            adam=adam,
        )


def _train_compiled(
    problem, config, seeds, root_seed, seed_indices, dtype, device, definitions, on_step, backend
) -> TrainResult:
    from ._online_fast import train_online

    if not isinstance(root_seed, int):
        raise InputError(
            f"root_seed={list(root_seed)!r} is not allowed for backend="
            f"{backend!r}; allowed: one integer (one root per seed is for "
            "backend='torch')"
        )
    if not isinstance(problem, Problem):
        raise InputError(f"backend={backend!r} takes one problem shared by every seed")
    if on_step is not None:
        raise InputError(f"backend={backend!r} does not call on_step; use backend='torch'")
    if resolve_dtype(dtype) != torch.float64 or str(resolve_device(device)) != "cpu":
        raise InputError(f"backend={backend!r} runs in float64 on the CPU")
    return train_online(problem, config, seeds, root_seed, seed_indices, definitions, None, backend)


CHAIN_STEP_SECONDS = (2e-7, 2e-9)
"""Seconds per step of the order-parameter chain, $c_0 + c_1 (B P^2 + P^3 / 3)$ in
`choose_backend()` (``P = K + M`` fields, batch ``B``): the draws, the Cholesky factor,
the fields and the update of ``C``; 0.6 us per step at K = M = 4 whatever ``D``
(``benchmarks/bench_online.py``, 1,659,000 steps per second)."""
COMPILED_STEP_SECONDS = (8.4e-9, 2.5e-11)
"""Seconds per step of the compiled weight-space kernel, ``B D (c0 + c1 (P + K))``: the ``D``
normal draws of each sample (8.4 ns each, numpy's SFC64 in numba) and its projections and
update (4.3 us per step at N = 500, 45 us at N = 5000, K = M = 4; ``bench_online.py``)."""


def choose_backend(
    problem, config, *, dtype="float64", device=None, on_step=None, root_seed=0
) -> str:
    r"""The backend ``backend="auto"`` runs: for online SGD (``optimizer="sgd"``, ``samples=None``)
    of one `Problem` with compiled activations, in float64 on the CPU, without
    ``on_step`` and with one root seed, the cheaper of ``"chain"`` and ``"compiled"`` by their
    costs per step (`CHAIN_STEP_SECONDS`, `COMPILED_STEP_SECONDS`: the chain at
    $K = M = 4$ from $D = 10$ on, the weight-space kernel for wide students in few dimensions, e.g.
    $K = M = 64$ below $D$ of about $10^5$); ``"torch"`` for anything else.

    Both compiled backends are exact, in law: the order parameters and losses have the law of
    online SGD at that $D$; they draw their samples from per-seed numpy generators, not
    torch's, so a seed's trajectory differs sample by sample from ``backend="torch"``'s.

    Parameters
    ----------
    problem : Problem or Sequence[Problem]
        The problem of the run (a list of problems, one per seed, runs on torch).
    config : TrainConfig
        The run's settings; its optimizer, ``samples`` and batch size decide.
    dtype : str or torch.dtype
        The run's dtype; anything but float64 runs on torch.
    device : str or torch.device or None
        The run's device; anything but the CPU (``None`` or ``"cpu"``) runs on torch.
    on_step : Callable or None
        The run's step callback; one given runs on torch.
    root_seed : int or Sequence[int]
        The run's root seed; one per seed runs on torch.

    Returns
    -------
    str
        ``"chain"``, ``"compiled"`` or ``"torch"``.
    """
    from ..theory import activation_of

    if not (
        isinstance(problem, Problem)
        and isinstance(config, TrainConfig)
        and config.online
        and config.optimizer == "sgd"
        and on_step is None
        and isinstance(root_seed, int | np.integer)
        and (device is None or str(device) == "cpu")
        and str(dtype) in ("float64", "torch.float64")
        and activation_of(problem.activation).compiled
        and activation_of(problem.teacher).compiled
    ):
        return "torch"
    K, D = np.asarray(problem.W).shape
    P, B = K + problem.M, int(config.batch_size)
    chain = CHAIN_STEP_SECONDS[0] + CHAIN_STEP_SECONDS[1] * (B * P * P + P**3 / 3)
    compiled = B * D * (COMPILED_STEP_SECONDS[0] + COMPILED_STEP_SECONDS[1] * (P + K))
    return "chain" if chain <= compiled else "compiled"


def _nonfinite(**tensors) -> str | None:
    for name, x in tensors.items():
        if not bool(torch.isfinite(x).all()):
            return name
    return None


def train(
    problem: Problem | Sequence[Problem],
    config: TrainConfig,
    seeds: int = 1,
    root_seed: int | Sequence[int] = 0,
    seed_indices: Sequence[int] | None = None,
    dtype="float64",
    device=None,
    definitions: Definitions | None = None,
    on_step: Callable[[StepRecord], object] | None = None,
    backend: str = "auto",
) -> TrainResult:
    r"""Train $S$ students of ``problem`` on Gaussian data as one batched computation.

    Seed ``i`` draws its data from ``task_seed(root_seed, i)``, so ``train(..., seed_indices=[i])``
    reproduces seed ``i`` of a batched run exactly. With one root per seed and ``config.betas``
    one pair per seed, copies of several runs (each its own root and Adam factors) train as one
    program, each copy bit for bit its run alone (``backend="torch"``).

    ``backend="auto"`` (the default) runs the fastest exact backend for the run
    (`choose_backend()`): for online SGD of one problem in float64 on the CPU the
    order-parameter chain or the compiled kernel, otherwise torch; ``result.settings["backend"]``
    says which ran. Ask for ``backend="torch"`` for torch's sample stream (or ``on_step``).
    ``backend="compiled"`` runs online SGD (``optimizer="sgd"``, ``samples=None``) in the compiled
    kernel of `gaugedyn.training._online_fast`: the same conventions, float64 on the CPU,
    seeds on threads, samples from per-seed numpy generators instead of torch's (so a seed's
    trajectory differs sample by sample from the torch backend's, not in distribution), with
    ``weight_decay``, ``lr2`` and ``label_noise`` as here.
    ``backend="chain"`` runs the same online SGD as its exact order-parameter Markov chain
    (`gaugedyn.training._online_chain`): the same law of $(a, Q, R)$ and of the online
    loss at every $D$, at a cost per step independent of $D$; the weights are not formed.

    Parameters
    ----------
    problem : Problem or Sequence[Problem]
        The teacher-student problem, or a list with one problem per seed (same teacher; torch
        backend only).
    config : TrainConfig
        The optimizer, step size, batch, steps, record grid and classical options.
    seeds : int
        The number of seeds $S$ when ``seed_indices`` is not given (a list of problems gives
        one seed per problem instead).
    root_seed : int or Sequence[int]
        The run's root seed, an unsigned 64-bit integer; or one root per seed: seed ``c`` then
        draws from ``task_seed(root_seed[c], seed_indices[c])`` (the ``(root, index)`` pairs
        distinct).
    seed_indices : Sequence[int] or None
        The seeds' indices, distinct integers $\ge 0$; ``None``: ``range(seeds)``.
    dtype : str or torch.dtype
        ``"float64"`` or ``"float32"`` (the compiled backends: float64 only).
    device : str or torch.device or None
        The torch device (`resolve_device()`); the compiled backends run on the CPU.
    definitions : Definitions or None
        The observables' definitions recorded with the result; ``None``: the defaults.
    on_step : Callable[[StepRecord], object] or None
        Called as ``on_step(StepRecord)`` right after each optimizer step (before that step's
        record and divergence check; torch backend only); its return value is ignored, and as
        long as it does not modify the tensors it is shown, the run is bit for bit that of
        ``on_step=None``.
    backend : str
        ``"auto"``, ``"torch"``, ``"compiled"`` or ``"chain"``.

    Returns
    -------
    TrainResult
        The order parameters, losses and observables on the record grid, with the run's settings
        (the backend included), seeds and definitions.

    Raises
    ------
    InputError
        Before any step: when ``backend``, ``config``, ``root_seed``, ``seed_indices``,
        ``dtype``, ``device``, ``definitions`` or ``problem`` is not allowed, ``on_step`` is not
        callable, or a compiled backend is asked for a run it cannot take.
    DivergenceError
        When a parameter or the loss becomes non-finite.
    """
    PARAMS["backend"].accept(backend)
    root_seed = _check_train_args(problem, config, root_seed, definitions)
    if backend == "auto":
        backend = choose_backend(
            problem, config, dtype=dtype, device=device, on_step=on_step, root_seed=root_seed
        )
    if backend in ("compiled", "chain"):
        return _train_compiled(
            problem,
            config,
            seeds,
            root_seed,
            seed_indices,
            dtype,
            device,
            definitions,
            on_step,
            backend,
        )
    started = _time.perf_counter()
    if on_step is not None and not callable(on_step):
        raise InputError(f"on_step={on_step!r} is not allowed; it must be callable or None")
    definitions = Definitions() if definitions is None else definitions
    dtype, device = resolve_dtype(dtype), resolve_device(device)
    seed_indices, problems = _seeds_and_problems(problem, seeds, seed_indices, root_seed)
    _check_copies(config, root_seed, len(seed_indices))
    net = Network.from_problem(problems, dtype=dtype, device=device)
    cfg = config
    D = net.W.shape[2]
    gens = _generators(root_seed, seed_indices, device)
    batches = _Batches(cfg, net, gens, dtype, device)
    scale = 1.0 / D if (cfg.online and cfg.optimizer == "sgd") else 1.0
    state = adam_state((net.a, net.W)) if cfg.optimizer == "adam" else None
    records = _Records(cfg, net, problems[0], batches.full)
    grid = cfg.grid()
    records.record(0)
    next_rec = 1
    for k in range(cfg.steps):
        loss, g_a, g_W = net.loss_and_gradients(batches.next())
        records.add_online_loss(loss)
        eta = step_size(cfg.schedule, cfg.lr, k, cfg.steps, cfg.lr_min, cfg.decay)
        previous = (net.a, net.W)
        if cfg.weight_decay:
            g_a, g_W = g_a + cfg.weight_decay * net.a, g_W + cfg.weight_decay * net.W
        if cfg.optimizer == "adam":
            net.a, net.W = adam_update(previous, (g_a, g_W), state, eta, cfg.betas, cfg.eps)
        elif cfg.lr2 != 1.0:
            net.a = sgd_update((net.a,), (g_a,), eta * scale * cfg.lr2)[0]
            net.W = sgd_update((net.W,), (g_W,), eta * scale)[0]
        else:
            net.a, net.W = sgd_update(previous, (g_a, g_W), eta * scale)
        records.t_flow += eta * scale
        step = k + 1
        if on_step is not None:
            on_step(
                StepRecord(
                    step=step,
                    time=records.time_of(step),
                    lr=float(eta),
                    previous=previous,
                    params=(net.a, net.W),
                    grads=(g_a, g_W),
                    loss=loss,
                    adam=None if state is None else adam_view(state),
                )
            )
        if next_rec < len(grid) and step == grid[next_rec]:
            records.record(step)
            next_rec += 1
        elif cfg.check_every and step % cfg.check_every == 0:
            records.check(step)
    return records.result(
        problem,
        grid,
        seed_indices,
        root_seed,
        definitions,
        started,
        _data.stream_block_steps(cfg.batch_size, D),
    )


def _generators(root_seed: int | tuple[int, ...], seed_indices: list[int], device) -> list:
    """One torch generator per seed: of ``(root_seed, i)``, or of ``(root_seed[c], i)``."""
    if isinstance(root_seed, tuple):
        return [
            g for r, i in zip(root_seed, seed_indices) for g in _data.generators(r, [i], device)
        ]
    return _data.generators(root_seed, seed_indices, device)


def _check_train_args(problem, config, root_seed, definitions) -> int | tuple[int, ...]:
    """The arguments of `train()` every backend shares, or one `InputError`;
    returns the root seed as an int (or a tuple of ints, one per seed)."""
    if not isinstance(config, TrainConfig):
        raise InputError(f"config={type(config).__name__} is not allowed; allowed: a TrainConfig")
    if isinstance(root_seed, Sequence | np.ndarray) and not isinstance(root_seed, str):
        if len(root_seed) == 0:
            raise InputError("root_seed=[] is not allowed; allowed: an integer, or one per seed")
        root_seed = tuple(PARAMS["root_seed"].accept(r) for r in root_seed)
    else:
        root_seed = PARAMS["root_seed"].accept(root_seed)
    if definitions is not None and not isinstance(definitions, Definitions):
        raise InputError(
            f"definitions={type(definitions).__name__} is not allowed; allowed: a "
            "gaugedyn.theory.Definitions or None"
        )
    if not isinstance(problem, Problem):
        if (
            isinstance(problem, str)
            or not isinstance(problem, Sequence)
            or not problem
            or not all(isinstance(p, Problem) for p in problem)
        ):
            raise InputError(
                f"problem={type(problem).__name__} is not allowed; allowed: a "
                "gaugedyn.theory.Problem or a non-empty list of them (one per seed)"
            )
    return root_seed


def _check_copies(config: TrainConfig, root_seed, seeds: int) -> None:
    """One root per seed and one Adam pair per seed where given as sequences, or InputError."""
    if isinstance(root_seed, tuple) and len(root_seed) != seeds:
        raise InputError(
            f"root_seed={list(root_seed)!r} is not allowed: {len(root_seed)} roots "
            f"for {seeds} seeds; allowed: an integer, or one root per seed"
        )
    if config.per_copy_betas and len(config.betas) != seeds:
        raise InputError(
            f"betas={_betas_list(config.betas)!r} is not allowed: "
            f"{len(config.betas)} pairs for {seeds} seeds; allowed: one (beta1, "
            "beta2), or one pair per seed"
        )


def _seeds_and_problems(
    problem, seeds, seed_indices, root_seed=0
) -> tuple[list[int], list[Problem]]:
    """The seed indices and one problem per seed (the same one, or a list per seed)."""
    if seed_indices is None and not isinstance(problem, Problem):
        seed_indices = list(range(len(problem)))
    if seed_indices is None:
        seed_indices = list(range(PARAMS["seeds"].accept(seeds)))
    if (
        isinstance(seed_indices, str)
        or not isinstance(seed_indices, Sequence | np.ndarray)
        or len(seed_indices) == 0
    ):
        raise InputError(
            f"seed_indices={seed_indices!r} is not allowed; allowed: a non-empty "
            "sequence of distinct integers >= 0 (or None)"
        )
    seed_indices = [PARAMS["seed_index"].accept(i) for i in seed_indices]
    named = (
        list(zip(root_seed, seed_indices))
        if isinstance(root_seed, tuple) and len(root_seed) == len(seed_indices)
        else seed_indices
    )
    if len(set(named)) != len(named):
        raise InputError(
            f"seed_indices={seed_indices!r} is not allowed; the indices must be "
            "distinct (under one root; with one root per seed, the (root, index) "
            "pairs): a repeated seed would train the same data twice"
        )
    if isinstance(problem, Problem):
        return seed_indices, [problem] * len(seed_indices)
    problems = list(problem)
    if len(problems) != len(seed_indices):
        raise InputError(f"{len(problems)} problems for {len(seed_indices)} seeds")
    return seed_indices, problems


class _Batches:
    """The batch of each step: a fresh one (online), the whole sample (full batch), or the next
    mini-batch of a per-seed permutation redrawn every epoch."""

    def __init__(self, cfg: TrainConfig, net: Network, gens, dtype, device):
        S, _, D = net.W.shape
        self.B = cfg.batch_size
        self.online = cfg.online
        self.gens, self.device = gens, device
        self.full = self.X_all = self.y_all = None
        if cfg.samples is None:  # online
            self.stream = _data.OnlineStream(
                gens, self.B, D, dtype, device, net.teacher, cfg.label_noise
            )
            self.n = None
        else:
            self.n = int(cfg.samples)
            self.X_all = _data.gaussian(gens, (self.n, D), dtype, device)
            self.y_all = net.teacher(prepare(self.X_all))[:, : self.n]
            if cfg.label_noise:
                self.y_all = self.y_all + cfg.label_noise * _data.gaussian(
                    gens, (self.n,), dtype, device
                )
            self.full = prepare(self.X_all, self.y_all)
        self.full_batch = not cfg.online and self.B == self.n
        self.order = None
        self.pos = 0
        self.rows = torch.arange(S, device=device)[:, None]

    def next(self):
        if self.online:
            return self.stream.next()
        if self.full_batch:
            return self.full
        if self.order is None or self.pos + self.B > self.n:
            self.order = _data.permutations(self.gens, self.n, self.device)
            self.pos = 0
        idx = self.order[:, self.pos : self.pos + self.B]
        self.pos += self.B
        return prepare(self.X_all[self.rows, idx], self.y_all[self.rows, idx])


class _Records:
    """The records on the grid: parameters as order parameters, the empirical loss, times."""

    def __init__(self, cfg: TrainConfig, net: Network, problem: Problem, full):
        self.cfg, self.net, self.full = cfg, net, full
        self.V = problem.V
        _, _, _, self.b, self.T = problem.order_parameters()
        self.D = net.W.shape[2]
        self.t_flow = 0.0
        self.rows: dict[str, list] = {k: [] for k in ("t", "ft", "lr", "a", "Q", "R", "emp")}
        self.online_acc = torch.zeros(net.W.shape[0], dtype=net.W.dtype, device=net.W.device)
        self.online_count = 0
        self.last_good: dict | None = None

    def time_of(self, k: int) -> float:
        if self.cfg.online and self.cfg.optimizer == "sgd":
            return k / self.D
        return self.t_flow

    def add_online_loss(self, loss) -> None:
        if self.cfg.online:
            self.online_acc = self.online_acc + loss
            self.online_count += 1

    def check(self, step: int) -> None:
        bad = _nonfinite(a=self.net.a, W=self.net.W)
        if bad:
            raise DivergenceError(bad, self.time_of(step), step, self.last_good)

    def record(self, k: int) -> None:
        cfg, net = self.cfg, self.net
        if cfg.online:
            acc, n = self.online_acc, self.online_count
            emp = acc / n if n else torch.full_like(acc, float("nan"))
            self.online_acc = torch.zeros_like(acc)
            self.online_count = 0
        else:
            emp = net.loss_and_gradients(self.full)[0]
        checks = {"a": net.a, "W": net.W}
        if k > 0 or not cfg.online:
            checks["loss_empirical"] = emp
        bad = _nonfinite(**checks)
        if bad:
            raise DivergenceError(bad, self.time_of(k), k, self.last_good)
        a_np, W_np = net.numpy_state()
        Q, R, _ = order_parameters(W_np, self.V)
        self.last_good = {"a": a_np, "W": W_np, "step": k}
        for key, value in (
            ("a", a_np),
            ("Q", Q),
            ("R", R),
            ("t", self.time_of(k)),
            ("ft", self.t_flow),
            ("emp", emp.detach().to("cpu", torch.float64).numpy()),
            ("lr", step_size(cfg.schedule, cfg.lr, k, cfg.steps, cfg.lr_min, cfg.decay)),
        ):
            self.rows[key].append(value)

    def result(
        self, problem, grid, seed_indices, root_seed, definitions, started, block
    ) -> TrainResult:
        cfg, net, rows = self.cfg, self.net, self.rows
        a, Q, R = (np.stack(rows[k], axis=1) for k in ("a", "Q", "R"))
        if cfg.online and cfg.optimizer == "sgd":
            time_convention = "t = steps / D (online SGD, step eta/D); flow_time = sum_k eta_k / D"
        elif cfg.online:
            time_convention = "t = flow_time = sum_k eta_k (online Adam)"
        else:
            time_convention = "t = flow_time = sum_k eta_k (= eta * steps at constant eta)"
        first = problem if isinstance(problem, Problem) else list(problem)[0]
        settings = {
            "config": cfg.describe(),
            "problem": first.describe(),
            "per_seed_problems": not isinstance(problem, Problem),
            "seeds": net.W.shape[0],
            "dtype": str(net.W.dtype).replace("torch.", ""),
            "device": str(net.W.device),
            "backend": "torch",
            "time": time_convention,
            "data": (
                f"online: fresh x ~ N(0, I_D) per step, per-seed blocks of {block} steps"
                if cfg.online
                else f"fixed sample of n={cfg.samples} x ~ N(0, I_D) per seed"
            ),
            "seed_derivation": "torch.Generator per seed from gaugedyn._meta.task_seed(root_seed, i)"
            + (" (root_seed: one per seed)" if isinstance(root_seed, tuple) else ""),
        }
        return TrainResult(
            steps=np.asarray(grid, dtype=np.int64),
            time=np.asarray(rows["t"]),
            flow_time=np.asarray(rows["ft"]),
            lr=np.asarray(rows["lr"]),
            a=a,
            Q=Q,
            R=R,
            b=np.asarray(self.b),
            T=self.T,
            loss=population_loss(a, Q, R, self.b, self.T, net.activation, net.teacher_activation),
            loss_empirical=np.stack(rows["emp"], axis=1),
            activation=net.activation,
            teacher_activation=net.teacher_activation,
            seeds=seed_indices,
            root_seed=list(root_seed) if isinstance(root_seed, tuple) else int(root_seed),
            settings=settings,
            definitions=definitions,
            diagnostics={"wall_time_s": _time.perf_counter() - started, "versions": versions()},
        )
