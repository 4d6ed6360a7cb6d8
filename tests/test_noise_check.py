"""The online ODE's runtime check of a noise term by a rule (``noise_check``,
``gaugedyn.training._online_ode.NOISE_CHECK``): its known-answer controls at the states the
noise-free flow of ``bench_online_noise_accuracy.py``'s problem reaches (K = M = 4, fields of
full rank: softplus's and tanh's scrambled-Sobol rules pass to t = 1000), planted
wrong rules caught, erf and ReLU never checked, the schedule and budget, and the option's
validation."""

import functools
import warnings

import numpy as np
import pytest

from gaugedyn import InputError, NoiseTermError, NoiseTermWarning
from gaugedyn.theory import Problem, random_problem
from gaugedyn.training import _online_ode, online_ode
from gaugedyn.training._online_ode import NOISE_CHECK, NoiseWatch, OnlineODE


@functools.lru_cache(maxsize=2)
def _flow(name):
    """``(problem, {t: y})``: the random problem and the noise-free flow's states at t = 0, 10,
    100, 300, 1000 (``bench_online_noise_accuracy.py``'s problem and states)."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    ts = np.array([0.0, 10.0, 100.0, 300.0, 1000.0])
    sol = online_ode(problem, 1.0, ts, noise=False)
    states = {
        float(t): np.concatenate([sol["a"][i], sol["Q"][i].ravel(), sol["R"][i].ravel()])
        for i, t in enumerate(ts)
    }
    return problem, states


def _watch(problem, mode="error", t_end=1000.0):
    a, Q, R, b, T = problem.order_parameters()
    ode = OnlineODE(problem.K, problem.M, b, T, problem.activation, 1.0)
    return NoiseWatch(ode, t_end, mode)


def _problem_at(problem, y):
    """A problem whose order parameters are the state ``y`` (weights from the eigen factor of
    the fields' Gram matrix; the teacher's overlaps kept)."""
    K, M = problem.K, problem.M
    a = y[:K]
    Q = y[K : K + K * K].reshape(K, K)
    R = y[K + K * K :].reshape(K, M)
    T = problem.V @ problem.V.T
    lam, U = np.linalg.eigh(np.block([[Q, R], [R.T, T]]))
    X = U * np.sqrt(np.maximum(lam, 0.0))
    return Problem(a, X[:K], problem.b, X[K:], problem.activation)


@pytest.mark.parametrize("t", [0.0, 10.0, 100.0, 300.0, 1000.0])
def test_softplus_passes_at_every_state_to_t_1000(t):
    problem, states = _flow("softplus")
    watch = _watch(problem)
    watch.check(t, states[t])
    (check,) = watch.record()["checks"]
    assert check["passed"] and check["disagreement"] < 4 * check["standard_error"]


def test_softplus_run_from_the_t_1000_state_does_not_warn():
    problem, states = _flow("softplus")
    late = _problem_at(problem, states[1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = online_ode(late, 1.0, [0.0, 0.02])
    record = sol["noise_check"]
    assert record["passed"] is True and record["method"] == "sobol"
    assert record["checks"][0]["t"] == 0.0


@pytest.mark.parametrize("t", [0.0, 10.0, 100.0, 300.0, 1000.0])
def test_tanh_passes_at_every_state_to_t_1000(t):
    """Tanh's noise term is the scrambled-Sobol rule with its control variate
    (``method="sobol"``), within about 6e-3 of the reference at each of these states
    (``benchmarks/bench_noise_qmc.py``); the
    four-point rule it replaced failed the check from t = 100 on (16% and 26% at 100 and 300)."""
    problem, states = _flow("tanh")
    watch = _watch(problem)
    watch.check(t, states[t])
    record = watch.record()
    (check,) = record["checks"]
    assert record["method"] == "sobol" and record["rule_nodes"] == [
        2 ** _online_ode.SOBOL_LOG2["tanh"]
    ]
    assert check["passed"] and check["disagreement"] < 0.03


def test_tanh_run_with_a_planted_sixteen_node_rule_raises_at_its_first_check(monkeypatch):
    """The Sobol rule cut to 16 nodes (``SOBOL_LOG2 = 4``) without its control variate (no
    ``ERF_MIXTURES`` entry), run from the flow's state at t = 300, raises at its first check
    with the run's time and the activation (with the control, 16 nodes pass the check: any
    mixture leaves the rule unbiased, and the rule integrates only the small difference)."""
    problem, states = _flow("tanh")
    late = _problem_at(problem, states[300.0])
    monkeypatch.setattr(_online_ode, "SOBOL_LOG2", {"tanh": 4})
    monkeypatch.setattr(_online_ode, "ERF_MIXTURES", {})
    with pytest.raises(NoiseTermError, match="'tanh' at t=0") as err:
        online_ode(late, 1.0, [0.0, 0.1], noise_check="error")
    assert err.value.activation == "tanh" and err.value.disagreement > 2 * NOISE_CHECK.tolerance
    for words in ("sobol rule (16 nodes)", "tolerance 10%", "noise=False", "noise_check='off'"):
        assert words in str(err.value)


def test_a_planted_sixteen_node_rule_is_caught(monkeypatch):
    """Softplus's Sobol rule cut to 16 nodes (``SOBOL_LOG2``) without its control variate (no
    ``RELU_MIXTURES`` entry), run from the flow's state at t = 10, warns, once, with the run's
    time and the activation; the package's rule passes there
    (`test_softplus_passes_at_every_state_to_t_1000`)."""
    problem, states = _flow("softplus")
    monkeypatch.setattr(_online_ode, "SOBOL_LOG2", {"softplus": 4})
    monkeypatch.setattr(_online_ode, "RELU_MIXTURES", {})
    with pytest.warns(NoiseTermWarning) as caught:
        sol = online_ode(_problem_at(problem, states[10.0]), 1.0, [0.0, 0.02])
    assert len([w for w in caught if isinstance(w.message, NoiseTermWarning)]) == 1
    message = caught[0].message
    assert message.activation == "softplus" and message.time == 0.0
    assert message.disagreement > 2 * NOISE_CHECK.tolerance
    assert sol["noise_check"]["passed"] is False
    assert sol["noise_check"]["rule_nodes"][0] == 16


@pytest.mark.parametrize(("name", "method"), [("erf", "closed"), ("relu", "orthant")])
def test_exact_noise_terms_are_never_checked(monkeypatch, name, method):
    def refuse(*args):
        raise AssertionError("the check ran")

    monkeypatch.setattr(_online_ode, "quadrature_noise", refuse)
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    sol = online_ode(problem, 1.0, [0.0, 1.0], noise_check="error")
    assert sol["noise_check"] == {
        "mode": "error",
        "method": method,
        "checks": [],
        "passed": None,
    }


def test_off_and_noise_free_runs_are_not_checked(monkeypatch):
    def refuse(*args):
        raise AssertionError("the check ran")

    monkeypatch.setattr(_online_ode, "quadrature_noise", refuse)
    problem = random_problem(50, 2, 2, np.random.default_rng(0), activation="softplus")
    off = online_ode(problem, 1.0, [0.0, 0.5], noise_check="off")
    assert off["noise_check"]["checks"] == [] and off["noise_check"]["method"] == "sobol"
    free = online_ode(problem, 1.0, [0.0, 0.5], noise=False)
    assert free["noise_check"]["method"] is None


class _Clock:
    """A process clock that advances ``step`` seconds per reading (a deterministic budget: a
    check, timed by two readings, costs ``step``)."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def _stub_watch(monkeypatch, check_cpu):
    """A watch whose noise terms are stubs (rule and Monte Carlo equal), whose right-hand sides
    cost 1 s each (`NoiseWatch.spend`) and whose check costs ``check_cpu`` seconds."""
    monkeypatch.setattr(_online_ode, "quadrature_noise", lambda *args: np.eye(args[2].shape[0]))
    monkeypatch.setattr(
        _online_ode,
        "monte_carlo_noise",
        lambda *args: (np.eye(args[2].shape[0]), np.zeros((args[2].shape[0],) * 2)),
    )
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="softplus")
    watch = _watch(problem, t_end=100.0)
    watch.clock = _Clock(check_cpu)
    return watch, _flow("softplus")[1][0.0]


def _drive(watch, y, ts):
    for t in ts:
        watch.observe(t, y)
        watch.spend(1.0)


def test_the_schedule_and_the_budget(monkeypatch):
    """Checks at the first right-hand side at or after each eighth of the horizon while their
    CPU time stays within the budget: with checks of 5 right-hand sides' cost, 2,000 right-hand
    sides afford all nine, 200 only the first and two more (at t = 50 and 75); beyond the first
    check, the checks' time never exceeds the budget."""
    for calls, expect in ((2000, 9), (200, 3)):
        watch, y = _stub_watch(monkeypatch, 5.0)
        ts = np.linspace(0.0, 100.0, calls)
        _drive(watch, y, ts)
        record = watch.record()
        done = [c["t"] for c in record["checks"]]
        assert len(done) == expect and record["passed"] is True
        assert record["check_cpu"] == pytest.approx(5.0 * expect)
        assert record["check_cpu"] - 5.0 <= NOISE_CHECK.budget * record["rhs_cpu"]
        if expect == 9:
            points = [k * 100.0 / NOISE_CHECK.shares for k in range(NOISE_CHECK.shares + 1)]
            assert done == [float(ts[np.argmax(ts >= p)]) for p in points]


def test_the_final_state_is_checked_when_the_run_stops_short(monkeypatch):
    watch, y = _stub_watch(monkeypatch, 1.0)
    _drive(watch, y, np.linspace(0.0, 99.0, 2000))
    watch.finish(100.0, y)
    assert watch.record()["checks"][-1]["t"] == 100.0


def test_monte_carlo_noise_term_matches_the_closed_form():
    """The check's reference against erf's closed form (`noise_term`) within four standard
    errors, and its standard error a small fraction of the term."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="erf")
    a, Q, R, b, T = problem.order_parameters()
    exact = _online_ode.noise_term(a, Q, R, b, T, "erf")
    mc, se = _online_ode.monte_carlo_noise("erf", None, a, Q, R, b, T, 2**18, 0)
    assert np.all(np.abs(mc - exact) <= 4 * se)
    assert se.max() < 0.01 * np.abs(exact).max()
    wrong, _ = _online_ode.monte_carlo_noise("erf", None, a, Q, R, 1.02 * b, T, 2**18, 0)
    assert not np.all(np.abs(wrong - exact) <= 4 * se)


@pytest.mark.parametrize("bad", ["loud", "", None, True, "WARN"])
def test_a_bad_noise_check_is_one_clear_error(bad):
    problem = random_problem(50, 2, 2, np.random.default_rng(0), activation="softplus")
    with pytest.raises(
        InputError, match=r"noise_check=.* is not allowed; allowed: warn, error, off"
    ):
        online_ode(problem, 1.0, [0.0, 1.0], noise_check=bad)


@pytest.mark.parametrize("cls", [NoiseTermWarning, NoiseTermError])
def test_the_warning_and_the_error_survive_pickling(cls):
    """A worker process's warning or error reaches its parent whole."""
    import pickle

    err = pickle.loads(pickle.dumps(cls("off by 20%", "tanh", 100.0, 0.2)))
    assert (str(err), err.activation, err.time, err.disagreement) == (
        "off by 20%",
        "tanh",
        100.0,
        0.2,
    )


def test_a_users_activation_on_the_numpy_reference_is_checked():
    """An activation without a compiled code runs the numpy reference, and its noise term (the
    numpy rule, `quadrature_noise`'s other branch) is checked the same way."""
    torch = pytest.importorskip("torch")
    from gaugedyn.theory import Activation

    swish = Activation.from_torch(torch.nn.functional.silu, name="swish")
    problem = random_problem(50, 2, 2, np.random.default_rng(0), activation=swish)
    sol = online_ode(problem, 1.0, [0.0, 0.2], rtol=1e-6, atol=1e-8)
    record = sol["noise_check"]
    assert record["method"] == "quadrature" and record["passed"] is True
    assert record["checks"][0]["t"] == 0.0
