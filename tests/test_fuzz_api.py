"""Property-based: the public Python API of ``gaugedyn.theory``, ``gaugedyn.training`` and
``gaugedyn.experiments.prototypes`` refuses invalid arguments with one :class:`gaugedyn.InputError` that names
the argument, before any work starts.

The invalid values are generated from the declarations the functions check against (the command
line's ``OPTIONS`` and the API's own :class:`gaugedyn._options.Param` entries): wrong types,
NaN and infinities, numbers just outside each bound, fractions where an integer is declared and
strings outside the choices. A value that slipped through would run the (small) computation and
the test would fail for want of the error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from gaugedyn import InputError  # noqa: E402
from gaugedyn._options import Param  # noqa: E402
from gaugedyn.experiments import prototypes as proto  # noqa: E402
from gaugedyn.theory import (  # noqa: E402
    Definitions,
    perturb,
    random_problem,
    single,
    solve,
    solve_batch,
)
from gaugedyn.theory._cli import OPTIONS as SOLVE  # noqa: E402
from gaugedyn.theory._problem import PARAMS as PROBLEM_PARAMS  # noqa: E402
from gaugedyn.training import TrainConfig, crossing_time, online_ode, train  # noqa: E402
from gaugedyn.training._cli import OPTIONS as TRAIN  # noqa: E402
from gaugedyn.training._params import PARAMS as API_OPTIONS  # noqa: E402

SETTINGS = dict(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
WRONG_TYPES = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8), st.lists(st.integers(), max_size=2)
)


def invalid(opt: Param) -> st.SearchStrategy:
    """Values ``opt.accept`` must refuse, read from the declaration alone."""
    if opt.choices is not None:
        return st.one_of(
            st.text(max_size=12).filter(lambda s: s not in opt.choices),
            st.integers(),
            st.none(),
            st.booleans(),
        )
    parts = [WRONG_TYPES, st.sampled_from([math.nan, math.inf, -math.inf])]
    if opt.lo is not None:
        below = st.floats(
            max_value=opt.lo, exclude_max=not opt.lo_open, allow_nan=False, allow_infinity=False
        )
        parts.append(
            below
            if opt.type is float
            else st.integers(max_value=math.ceil(opt.lo) - (0 if opt.lo_open else 1))
        )
    if opt.hi is not None:
        above = st.floats(
            min_value=opt.hi, exclude_min=not opt.hi_open, allow_nan=False, allow_infinity=False
        )
        parts.append(
            above
            if opt.type is float
            else st.integers(min_value=math.floor(opt.hi) + (0 if opt.hi_open else 1))
        )
    if opt.type is int:
        lo = -1e6 if opt.lo is None else opt.lo
        hi = lo + 1e6 if opt.hi is None else min(opt.hi, lo + 1e6)
        parts.append(st.floats(lo, hi).filter(lambda x: not x.is_integer()))
    return st.one_of(parts)


PROBLEM = single(4, "w-heavy")
RUNS = proto.Runs(
    x=np.linspace(0, 1, 4)[None],
    y=np.zeros((1, 4)),
    w=np.ones((1, 3)),
    b=-np.array([[0.2, 0.5, 0.8]]),
    a=np.ones((1, 3)),
    c=np.zeros(1),
    mask=np.ones((1, 3)),
    chamfer=np.zeros(1),
    tau=np.full(1, 0.05),
)
CFG = dict(lr=0.01, steps=2, samples=10)


def none_ok(call):
    call.none_ok = True
    return call


def _solve_gd(**kw):
    return solve(PROBLEM, dynamics="gd", **{"eta": 0.1, "t_max": 1.0, **kw})


# (name the error must carry, declaration the values come from, call with that argument)
CASES = [
    ("rtol", SOLVE["rtol"], lambda v: solve(PROBLEM, rtol=v, t_max=1.0)),
    ("atol", SOLVE["atol"], lambda v: solve(PROBLEM, atol=v, t_max=1.0)),
    ("t_max", SOLVE["t_max"], none_ok(lambda v: solve(PROBLEM, t_max=v))),
    ("eta", SOLVE["eta"], lambda v: _solve_gd(eta=v)),
    ("rtol", SOLVE["rtol"], lambda v: solve_batch([PROBLEM], rtol=v, t_max=1.0)),
    ("t_max", SOLVE["t_max"], none_ok(lambda v: solve_batch([PROBLEM], t_max=v))),
    ("dim", SOLVE["dim"], lambda v: single(v, "w-heavy")),
    ("scale", PROBLEM_PARAMS["scale"], lambda v: single(4, "w-heavy", scale=v)),
    ("overlap", PROBLEM_PARAMS["overlap"], none_ok(lambda v: single(4, "w-heavy", overlap=v))),
    ("activation", SOLVE["activation"], lambda v: single(4, "w-heavy", activation=v)),
    ("K", PROBLEM_PARAMS["count"], lambda v: random_problem(4, v, 1, np.random.default_rng(0))),
    ("epsilon", PROBLEM_PARAMS["epsilon"], lambda v: perturb(PROBLEM, v, np.random.default_rng(0))),
    ("threshold", SOLVE["threshold"], lambda v: Definitions(threshold=v)),
    ("prune_tol", SOLVE["prune_tol"], lambda v: Definitions(prune_tol=v)),
    *[
        (name, TRAIN[name], lambda v, n=name: TrainConfig(**{**CFG, n: v}))
        for name in ("optimizer", "schedule", "lr", "steps")
    ],
    *[
        (name, TRAIN[name], none_ok(lambda v, n=name: TrainConfig(**{**CFG, n: v})))
        for name in ("samples", "batch")
    ],
    *[
        (name, API_OPTIONS[name], lambda v, n=name: TrainConfig(**{**CFG, n: v}))
        for name in ("lr_min", "eps", "decay", "points_per_decade", "check_every")
    ],
    ("betas", API_OPTIONS["beta"], lambda v: TrainConfig(**CFG, betas=(0.9, v))),
    # three seeds: a list of at most two roots (WRONG_TYPES) is the wrong length for one per seed
    (
        "root_seed",
        TRAIN["root_seed"],
        lambda v: train(PROBLEM, TrainConfig(**CFG), seeds=3, root_seed=v),
    ),
    ("seeds", TRAIN["seeds"], lambda v: train(PROBLEM, TrainConfig(**CFG), seeds=v)),
    (
        "seed_indices",
        API_OPTIONS["seed_index"],
        lambda v: train(PROBLEM, TrainConfig(**CFG), seed_indices=[0, v]),
    ),
    ("eta", TRAIN["lr"], lambda v: online_ode(PROBLEM, eta=v, times=[0.0, 1.0])),
    ("batch", TRAIN["batch"], lambda v: online_ode(PROBLEM, eta=0.1, times=[1.0], batch=v)),
    ("rtol", SOLVE["rtol"], lambda v: online_ode(PROBLEM, eta=0.1, times=[1.0], rtol=v)),
    (
        "steps",
        proto._model.OPTIONS["steps"],
        lambda v: proto.train(RUNS, steps=v, lr=0.01, weight=0.1),
    ),
    ("lr", proto._model.OPTIONS["lr"], lambda v: proto.train(RUNS, steps=1, lr=v, weight=0.1)),
    (
        "weight",
        proto._model.OPTIONS["weight"],
        lambda v: proto.train(RUNS, steps=1, lr=0.01, weight=v),
    ),
    (
        "n",
        proto._model.OPTIONS["n"],
        lambda v: proto.training_data(np.random.default_rng(0), v, "sin"),
    ),
    (
        "target",
        proto._model.OPTIONS["target"],
        lambda v: proto.training_data(np.random.default_rng(0), 3, v),
    ),
    (
        "init",
        proto._model.OPTIONS["init"],
        lambda v: proto.initial_parameters(np.random.default_rng(0), 3, v),
    ),
]


def _refused(call, value, name):
    with pytest.raises(InputError) as err:
        call(value)
    text = str(err.value)
    assert f"{name}=" in text and "\n" not in text, text


@pytest.mark.parametrize(
    ("name", "opt", "call"), CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)]
)
@settings(**SETTINGS)
@given(data=st.data())
def test_invalid_arguments_are_refused_naming_the_argument(name, opt, call, data):
    strategy = invalid(opt)
    if getattr(call, "none_ok", False):  # None is a valid value there (a default, online data)
        strategy = strategy.filter(lambda v: v is not None)
    _refused(call, data.draw(strategy, label=name), name)


# the misuses the independent probe found accepted or answered wrongly on the code before
NAMED = [
    ("rtol", lambda: solve(PROBLEM, rtol=10)),  # answered 14% off
    ("eta", lambda: online_ode(PROBLEM, eta=-1, times=[0.0, 1.0])),  # ran
    ("eps", lambda: TrainConfig(eps=-1)),  # trained
    ("root_seed", lambda: train(PROBLEM, TrainConfig(**CFG), root_seed=1.5)),  # trained seed 1
    ("steps", lambda: proto.train(RUNS, steps=-1, lr=0.01, weight=0.1)),  # returned the start
    ("seed_indices", lambda: train(PROBLEM, TrainConfig(**CFG), seed_indices=[1, 1])),
    ("problem", lambda: solve("single")),
    ("config", lambda: train(PROBLEM, {"lr": 0.1})),
]


@pytest.mark.parametrize(("name", "call"), NAMED, ids=[n for n, _ in NAMED])
def test_named_misuses_are_refused(name, call):
    _refused(lambda _: call(), None, name)


@settings(**SETTINGS)
@given(n_times=st.integers(1, 6), n_values=st.integers(1, 6))
def test_crossing_time_refuses_mismatched_lengths(n_times, n_values):
    times, values = np.arange(float(n_times)), np.linspace(0, 1, n_values)
    if n_times == n_values:
        assert np.isfinite(crossing_time(times, values, 0.5)) or n_values == 1
    else:
        with pytest.raises(InputError, match="values"):
            crossing_time(times, values, 0.5)


def test_valid_integral_floats_are_accepted_as_integers():
    cfg = TrainConfig(lr=0.01, steps=2.0, samples=10)
    assert cfg.steps == 2 and type(cfg.steps) is int


def test_type_errors_use_the_right_article():
    from gaugedyn.experiments import Param
    from gaugedyn.harness._config import check_param

    with pytest.raises(InputError) as err:
        check_param("size", "many", Param(int, 3, lo=1, hi=9, why="test"), "toy")
    assert "an integer" in str(err.value) and "a integer" not in str(err.value)


def _stats_misuses():
    from gaugedyn import stats

    rng = np.random.default_rng(0)
    return [
        ("confidence", lambda: stats.mean_ci([1.0, 2.0, 3.0], confidence=1.5)),  # NaN interval
        ("confidence", lambda: stats.bootstrap_ci([1.0, 2.0, 4.0], rng=rng, confidence=0.0)),
        ("confidence", lambda: stats.line_fit([1, 2, 3], [1, 2, 4], confidence=True)),
        ("k", lambda: stats.proportion_ci(1.5, 3)),
        ("k", lambda: stats.proportion_ci(4, 3)),
        ("n", lambda: stats.proportion_ci(1, -2)),
        ("reversed", lambda: stats.verdict((2.0, 1.0), 0.5)),  # was HELD
        ("threshold", lambda: stats.verdict((1.0, 2.0), float("nan"))),
        ("direction", lambda: stats.verdict((1.0, 2.0), 0.5, ">=")),
        ("p", lambda: stats.holm([0.01, 1.5])),
        ("p", lambda: stats.holm([-0.2, 0.5])),
        ("p", lambda: stats.holm([float("nan"), 0.5])),
    ]


@pytest.mark.parametrize("k", range(12))
def test_stats_refuses_what_has_no_meaning(k):
    name, call = _stats_misuses()[k]
    with pytest.raises(InputError, match=name):
        call()


def test_stats_still_accepts_the_edges():
    from gaugedyn import stats

    assert math.isnan(stats.proportion_ci(0, 0).low)  # no trials: no interval
    assert stats.proportion_ci(3.0, 3).estimate == 1.0
    assert stats.verdict((float("nan"), 1.0), 0.5) == "UNRESOLVED"
    assert stats.verdict((1.0, 1.0), 0.5) == "HELD"
    np.testing.assert_array_equal(stats.holm([1.0 + 1e-15, 0.0]), [1.0, 0.0])


def _bad_activations():
    import torch

    from gaugedyn.theory import Activation

    tanh = torch.tanh
    return {
        "not elementwise": lambda: Activation.from_torch(lambda z: z - z.mean(), name="centred"),
        "int64": lambda: Activation.from_torch(lambda z: (z > 0).long(), name="step"),
        "the given derivative": lambda: Activation.from_torch(
            tanh, name="t", derivative=lambda z: 1 - torch.tanh(z) ** 3
        ),
        "homogeneous=True": lambda: Activation.from_torch(tanh, name="t", homogeneous=True),
        "numpy function": lambda: Activation.from_torch(
            lambda z: torch.from_numpy(np.tanh(z.detach().numpy())), name="np"
        ),
        "not finite": lambda: Activation.from_torch(torch.log, name="log"),
        "raised": lambda: Activation.from_torch(lambda z: z.no_such_method(), name="broken"),
    }


@pytest.mark.parametrize("cause", sorted(_bad_activations()))
def test_an_activation_is_checked_when_it_is_built(cause):
    """A function that is not elementwise, not float, not finite, not differentiable by
    autograd, or carries a false derivative or homogeneous=True is refused at construction,
    naming the activation and the cause, instead of feeding wrong numbers to solve and train."""
    with pytest.raises(InputError, match=cause):
        _bad_activations()[cause]()


def test_a_true_activation_still_builds():
    import torch

    from gaugedyn.theory import Activation

    act = Activation.from_torch(
        lambda z: torch.where(z > 0, 2.0 * z, -0.5 * z), name="kinked", homogeneous=True
    )
    assert act.homogeneous
    act = Activation.from_torch(torch.tanh, name="t", derivative=lambda z: 1 - torch.tanh(z) ** 2)
    assert act.name == "t"
