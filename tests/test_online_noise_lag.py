"""The online ODE's noise term once per time point (`NoiseRule`, `NOISE_LAG`): the rule itself,
the runs that use it and those that do not, the record that names it, and `compiled_rhs`
unchanged (a function of the state)."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.theory import random_problem
from gaugedyn.training import _online_ode, online_ode
from gaugedyn.training._online_ode import NOISE_LAG, NOISE_RULES, NoiseRule, compiled_rhs


def _parts():
    """A flow and a noise part that differ at every state, their sum, and the sum with the
    noise part apart (`compiled_rhs`'s ``split``)."""

    def flow(t, y):
        return -y + t

    def noise(t, y):
        return np.sin(y) * y

    def whole(t, y):
        return flow(t, y) + noise(t, y)

    return flow, noise, whole, (lambda t, y: (whole(t, y), noise(t, y)))


def test_once_per_time_reuses_the_first_states_noise_part():
    """The first call at a time is the whole right-hand side; later calls at that time are the
    flow at their own state plus the first state's noise part; a new time evaluates anew."""
    flow, noise, whole, split = _parts()
    rule = NoiseRule(split, flow)
    y0, y1, y2 = np.array([0.3, -1.0]), np.array([0.5, -0.8]), np.array([0.1, 2.0])
    np.testing.assert_array_equal(rule(1.0, y0), whole(1.0, y0))
    close = dict(rtol=0, atol=1e-14)
    np.testing.assert_allclose(rule(1.0, y1), flow(1.0, y1) + noise(1.0, y0), **close)
    np.testing.assert_allclose(rule(1.0, y2), flow(1.0, y2) + noise(1.0, y0), **close)
    np.testing.assert_array_equal(rule(2.0, y1), whole(2.0, y1))
    np.testing.assert_allclose(rule(2.0, y2), flow(2.0, y2) + noise(2.0, y1), **close)
    assert (rule.calls, rule.noise_terms, rule.rule) == (5, 2, "once_per_time")


def test_once_per_time_evaluates_each_state_once():
    """A repeat at a time evaluates the flow at its own state only: the first state is
    evaluated once, whole with its noise part apart, and its flow is not evaluated again."""
    flow, _, _, split = _parts()
    seen = []

    def counted_flow(t, y):
        seen.append(y.copy())
        return flow(t, y)

    rule = NoiseRule(split, counted_flow)
    y0, y1 = np.array([0.3, -1.0]), np.array([0.5, -0.8])
    rule(1.0, y0)
    rule(1.0, y1)
    rule(1.0, y1)
    assert len(seen) == 2 and all(np.array_equal(y, y1) for y in seen)


def test_the_first_state_is_kept_though_the_caller_reuses_its_buffer():
    """The noise part is that of the state as it was at the first call, though the caller
    writes the next state into the same array."""
    flow, noise, _, split = _parts()
    rule = NoiseRule(split, flow)
    y = np.array([0.3, -1.0])
    rule(1.0, y)
    y[:] = [0.5, -0.8]
    np.testing.assert_allclose(
        rule(1.0, y), flow(1.0, y) + noise(1.0, np.array([0.3, -1.0])), rtol=0, atol=1e-14
    )


def test_every_call_is_the_whole_right_hand_side():
    flow, _, whole, _ = _parts()
    rule = NoiseRule(whole)
    y0, y1 = np.array([0.3, -1.0]), np.array([0.5, -0.8])
    for t, y in ((1.0, y0), (1.0, y1), (1.0, y1)):
        np.testing.assert_array_equal(rule(t, y), whole(t, y))
    assert (rule.calls, rule.noise_terms, rule.rule) == (3, 3, "every_call")
    assert NoiseRule(flow, None, noise=False).record("LSODA")["noise_terms"] == 0
    assert NOISE_RULES == ("every_call", "once_per_time")


def _softplus():
    return random_problem(20, 2, 2, np.random.default_rng(6), activation="softplus")


def test_a_softplus_run_evaluates_fewer_noise_terms_and_names_its_rule(monkeypatch):
    """Softplus (`NOISE_LAG`) to t = 20: the record names the rule; fewer noise terms than
    right-hand sides; without the lag every right-hand side has its noise term, and the two
    trajectories agree at the tolerance's level."""
    assert "softplus" in NOISE_LAG
    times = np.linspace(0.0, 20.0, 5)
    kw = dict(rtol=1e-8, atol=1e-10, noise_check="off")
    lagged = online_ode(_softplus(), 1.0, times, **kw)
    rec = lagged["integration"]
    assert rec["integrator"] == "LSODA" and rec["noise_rule"] == "once_per_time"
    assert 0 < rec["noise_terms"] < rec["rhs"]
    monkeypatch.setattr(_online_ode, "NOISE_LAG", ())
    whole = online_ode(_softplus(), 1.0, times, **kw)
    assert whole["integration"]["noise_rule"] == "every_call"
    assert whole["integration"]["noise_terms"] == whole["integration"]["rhs"]
    for key in ("a", "Q", "R"):
        scale = np.abs(whole[key]).max()
        np.testing.assert_allclose(lagged[key], whole[key], rtol=0, atol=1e-7 * scale)


def test_the_lagged_run_agrees_with_the_reference_at_tight_tolerances():
    """K = M = 2 to t = 3 at tight tolerances: the lagged compiled path (LSODA) and the numpy
    reference (DOP853, every call) agree to 1e-8 (as the unlagged one did)."""
    ts = np.array([0.0, 1.0, 3.0])
    kw = {"rtol": 1e-11, "atol": 1e-13, "noise_check": "off"}
    fast = online_ode(_softplus(), 1.0, ts, method="compiled", **kw)
    ref = online_ode(_softplus(), 1.0, ts, method="reference", **kw)
    assert fast["integration"]["noise_rule"] == "once_per_time"
    assert ref["integration"]["integrator"] == "DOP853"
    assert ref["integration"]["noise_rule"] == "every_call"
    assert ref["integration"]["noise_terms"] == ref["integration"]["rhs"] > 0
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", ["tanh", "erf", "relu"])
def test_other_activations_evaluate_it_at_every_call(name):
    problem = random_problem(20, 2, 2, np.random.default_rng(6), activation=name)
    rec = online_ode(problem, 1.0, [0.0, 2.0], noise_check="off")["integration"]
    assert rec["noise_rule"] == "every_call" and rec["noise_terms"] == rec["rhs"] > 0
    free = online_ode(problem, 1.0, [0.0, 2.0], noise=False)["integration"]
    assert free["noise_rule"] == "every_call" and free["noise_terms"] == 0 < free["rhs"]


def test_the_noise_watch_sees_every_call():
    """The runtime check (`NoiseWatch`) still observes every right-hand side LSODA asks for,
    the lagged ones included, and checks at the start."""
    sol = online_ode(_softplus(), 1.0, [0.0, 5.0], noise_check="warn")
    assert sol["noise_check"]["rhs"] == sol["integration"]["rhs"]
    assert sol["noise_check"]["checks"][0]["t"] == 0.0


def test_the_fallback_evaluates_the_whole_right_hand_side(monkeypatch):
    """Where LSODA fails on the flow's Jacobian, its own differences need the whole right-hand
    side at every call (a lagged one would difference the flow alone): the record says so and
    counts both runs. ReLU declared lagged here: a Jacobian of NaN makes LSODA ask for the
    right-hand side at NaN states, which only a noise term without an eigen factor returns
    (the Sobol rule's raises)."""
    monkeypatch.setattr(_online_ode, "NOISE_LAG", ("relu",))
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="relu")
    calls = []

    def broken(*args, **kw):
        def jac(t, y):
            calls.append(t)
            return np.full((y.size, y.size), np.nan)

        return jac

    times = np.linspace(0.0, 100.0, 6)  # long enough for LSODA to switch to BDF
    kw = dict(rtol=1e-8, atol=1e-10, noise_check="off")
    plain = online_ode(problem, 1.0, times, **kw)
    assert plain["integration"]["noise_rule"] == "once_per_time"
    monkeypatch.setattr(_online_ode, "compiled_flow_jacobian", broken)
    seen = []
    original = _online_ode.NoiseRule

    class Seen(original):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            seen.append(self)

    monkeypatch.setattr(_online_ode, "NoiseRule", Seen)
    fallback = online_ode(problem, 1.0, times, **kw)
    assert calls and [r.rule for r in seen] == ["once_per_time", "every_call"]
    rec = fallback["integration"]
    assert rec["noise_rule"] == "every_call"
    assert rec["rhs"] == sum(r.calls for r in seen)
    assert seen[1].noise_terms == seen[1].calls
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fallback[key], plain[key], rtol=0, atol=1e-6)


def test_compiled_rhs_stays_a_function_of_the_state():
    """`compiled_rhs` itself is not lagged: two states at one time give each its own whole
    right-hand side, the bits of a fresh one's."""
    problem = _softplus()
    a, Q, R, b, T = problem.order_parameters()
    y0 = np.concatenate([a, Q.ravel(), R.ravel()])
    y1 = y0 * (1 + 1e-3)
    f = compiled_rhs(2, 2, b, T, 1.0, activation="softplus")
    f(1.0, y0)
    fresh = compiled_rhs(2, 2, b, T, 1.0, activation="softplus")
    np.testing.assert_array_equal(f(1.0, y1), fresh(1.0, y1))
    assert not np.array_equal(f(1.0, y1), f(1.0, y0))


@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.1, "lr2": 0.5, "label_noise": 0.3}])
def test_split_gives_the_same_right_hand_side_and_its_noise_part(options):
    """``compiled_rhs(..., split=True)``: the whole right-hand side to the bit, and a noise part
    (label noise included) that is 0 outside the ``Q`` entries, symmetric there, and the whole
    less the flow to round-off."""
    problem = _softplus()
    a, Q, R, b, T = problem.order_parameters()
    y = np.concatenate([a, Q.ravel(), R.ravel()])
    whole = compiled_rhs(2, 2, b, T, 0.7, 2, True, activation="softplus", **options)(1.0, y)
    flow = compiled_rhs(2, 2, b, T, 0.7, 2, False, activation="softplus", **options)(1.0, y)
    split = compiled_rhs(2, 2, b, T, 0.7, 2, True, activation="softplus", split=True, **options)
    out, part = split(1.0, y)
    np.testing.assert_array_equal(out, whole)
    assert np.all(part[:2] == 0) and np.all(part[6:] == 0)
    assert np.array_equal(part[2:6].reshape(2, 2), part[2:6].reshape(2, 2).T)
    assert np.abs(part).max() > 1e-3 * np.abs(whole).max()
    np.testing.assert_allclose(flow + part, whole, rtol=0, atol=1e-15 * np.abs(whole).max())
    free = compiled_rhs(2, 2, b, T, 0.7, 2, False, activation="softplus", split=True, **options)
    out, part = free(1.0, y)
    np.testing.assert_array_equal(out, flow)
    assert not part.any()


def test_split_is_refused_for_erf():
    problem = random_problem(20, 2, 2, np.random.default_rng(6), activation="erf")
    _, _, _, b, T = problem.order_parameters()
    with pytest.raises(InputError, match="split=True is not allowed for erf"):
        compiled_rhs(2, 2, b, T, 1.0, activation="erf", split=True)
