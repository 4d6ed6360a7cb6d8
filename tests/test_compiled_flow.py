"""The compiled order-parameter flow (theory._compiled_flow) against the numpy right-hand side,
the difference Jacobians against the exact one, and the rule of method "auto"."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.theory import initial_state, jacobian, random_problem, rhs, solve
from gaugedyn.theory._compiled_flow import compiled_flow, flow_key
from gaugedyn.theory._flows import difference_jacobian, pack_order_parameters
from gaugedyn.theory._registry import AUTO, TIGHT_RTOL, auto_method

COMPILED = ("relu", "erf", "linear", "leaky_relu", "abs")


@pytest.mark.parametrize("activation", COMPILED)
@pytest.mark.parametrize("options", [{}, dict(weight_decay=0.3, lr2=0.5)])
def test_compiled_rhs_is_the_numpy_rhs(activation, options):
    pr = random_problem(40, 4, 3, np.random.default_rng(3), activation=activation)
    y0, p = initial_state(pr, **options)
    flow = compiled_flow(p)
    assert flow is not None
    rng = np.random.default_rng(0)
    for y in (y0, y0 + 0.05 * rng.standard_normal(y0.size)):
        np.testing.assert_allclose(flow.fun(0.0, y), rhs(0.0, y, p), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("activation", ["relu", "erf"])
def test_difference_jacobians_match_the_exact_one_where_the_flow_is_smooth(activation):
    pr = random_problem(40, 3, 3, np.random.default_rng(4), activation=activation)
    y0, p = initial_state(pr, weight_decay=0.1)
    J = jacobian(0.0, y0, p)
    scale = np.abs(J).max()
    for approx in (difference_jacobian(0.0, y0, p), compiled_flow(p).jac(0.0, y0)):
        assert np.abs(approx - J).max() <= 1e-5 * scale  # forward differences: O(sqrt(eps))
    wrong = J.copy()
    wrong[0, 1] += 1e-4 * scale  # the comparison sees an error of this size
    assert np.abs(difference_jacobian(0.0, y0, p) - wrong).max() > 1e-5 * scale


def test_compiled_lsoda_follows_the_exact_lsoda():
    pr = random_problem(50, 4, 4, np.random.default_rng(0))
    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, 300.0, 40)])
    kw = dict(t_max=300.0, t_eval=t_eval, rtol=1e-10, atol=1e-12)
    fast = solve(pr, method="lsoda-compiled", **kw)
    ref = solve(pr, method="lsoda", **kw)
    assert fast.diagnostics["integrator"] == "lsoda-compiled"
    y, y_ref = (pack_order_parameters(s.a, s.Q, s.R) for s in (fast, ref))
    assert np.abs(y - y_ref).max() < 1e-7
    np.testing.assert_allclose(fast.specialization_time, ref.specialization_time, rtol=1e-6)


def test_no_compiled_flow_for_numerical_kernels_or_a_teacher_of_its_own():
    assert flow_key("tanh") is None
    assert flow_key("relu", "erf") is None
    assert flow_key("relu", "relu") is not None
    y0, p = initial_state(random_problem(20, 2, 2, np.random.default_rng(0)), "span")
    assert compiled_flow(p) is None
    pr = random_problem(20, 2, 2, np.random.default_rng(0), activation="tanh")
    with pytest.raises(InputError, match="lsoda-compiled"):
        solve(pr, method="lsoda-compiled", t_max=1.0)


def test_the_auto_rule_by_size_and_activation():
    assert auto_method(30, "relu") == "lsoda-compiled"
    assert auto_method(30, "tanh") == "lsoda-fd"
    assert auto_method(30, "relu", compiled=False) == "lsoda-fd"
    assert auto_method(1584, "relu") == "DOP853"
    assert AUTO[-1].max_size is None  # every task fits some row


def test_the_auto_rule_by_tolerance():
    """Below TIGHT_RTOL the numpy path takes the exact Jacobian; the compiled path and the
    explicit method for wide students do not depend on the tolerance."""
    assert auto_method(30, "tanh", rtol=TIGHT_RTOL) == "lsoda-fd"
    assert auto_method(30, "tanh", rtol=TIGHT_RTOL / 10) == "lsoda"
    assert auto_method(30, "relu", compiled=False, rtol=1e-12) == "lsoda"
    assert auto_method(30, "relu", rtol=1e-12) == "lsoda-compiled"
    assert auto_method(1584, "relu", rtol=1e-12) == "DOP853"
    assert auto_method(1584, "tanh", rtol=1e-12) == "DOP853"


def test_a_tight_tolerance_solve_on_the_numpy_path_finishes():
    """K = M = 4, erf with a linear teacher (no compiled flow) to t = 1000 at rtol 1e-12: the
    exact Jacobian, and a bounded number of right-hand sides (measured 2,949 and 100 Jacobians;
    a thrashing LSODA forms tens of thousands)."""
    pr = random_problem(50, 4, 4, np.random.default_rng(0), "erf", teacher_activation="linear")
    sol = solve(pr, t_max=1e3, rtol=1e-12, atol=1e-14)
    assert sol.diagnostics["integrator"] == "lsoda"
    assert sol.diagnostics["nfev"] <= 10_000
    assert sol.diagnostics["njev"] <= 1_000
    sol = solve(random_problem(20, 2, 2, np.random.default_rng(1)), t_max=1.0)
    assert sol.diagnostics["integrator"] == "lsoda-compiled"
    sol = solve(random_problem(20, 2, 2, np.random.default_rng(1), activation="tanh"), t_max=1.0)
    assert sol.diagnostics["integrator"] == "lsoda-fd"
