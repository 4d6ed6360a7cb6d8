"""Integrators, events, the batched solver, results, errors and ``gaugedyn solve``."""

import json

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from gaugedyn import DivergenceError, InputError
from gaugedyn.cli import main
from gaugedyn.theory import (
    METHODS,
    Definitions,
    alignment,
    duplicates,
    initial_state,
    random_problem,
    rhs,
    single,
    solve,
    solve_batch,
    state_to_order_parameters,
)
from gaugedyn.theory._rosenbrock import rodas4


def _bisect(g, lo, hi, iters=200):
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if g(mid) >= 0 else (mid, hi)
    return hi


def _tight(problem, t_max):
    y0, p = initial_state(problem, "order-parameters")
    sol = solve_ivp(
        lambda t, y: rhs(t, y, p),
        (0, t_max),
        y0,
        method="DOP853",
        rtol=1e-13,
        atol=1e-14,
        dense_output=True,
    )
    return sol, p


def test_rodas_convergence_order():
    fun = lambda t, y, p: -y * y  # noqa: E731
    jac = lambda t, y, p: (-2 * y)[:, :, None]  # noqa: E731
    tols = np.array([1e-5, 1e-7, 1e-9])
    errs, steps = [], []
    for tol in tols:
        r = rodas4(
            fun,
            jac,
            np.ones((1, 1)),
            None,
            lambda p, i: p,
            np.array([10.0]),
            np.linspace(0, 10, 51),
            rtol=tol,
            atol=tol,
        )
        errs.append(np.abs(r.y[0, :, 0] - 1 / (1 + np.linspace(0, 10, 51))).max())
        steps.append(r.nsteps[0])
    order = -np.polyfit(np.log(steps), np.log(errs), 1)[0]
    assert 3.5 <= order <= 5.0, order  # fourth order in the step size
    assert np.all(np.array(errs) <= 10 * tols)


@pytest.mark.parametrize("method, rtol", [("rodas", 1e-9), ("auto", 1e-10)])
def test_specialization_time_matches_bisection_on_tight_trajectory(method, rtol):
    # LSODA (auto) keeps its global error within tolerance less tightly than Rodas4 does
    pr = single(10, "w-heavy")
    sol = solve(pr, method=method, rtol=rtol, atol=rtol / 100, stop_at_specialization=True)
    t_spec = sol.specialization_time[0]
    ref, p = _tight(pr, 1.2 * t_spec)

    def g(t):
        _, Q, R = state_to_order_parameters(ref.sol(t), p)
        return alignment(Q, R, p.T)[0, 0] - 0.95

    t_ref = _bisect(g, 0.0, 1.2 * t_spec)
    assert abs(t_spec - t_ref) <= 1e-8 * t_ref
    assert sol.t[-1] == pytest.approx(t_spec) and sol.observables["alignment"][
        -1, 0, 0
    ] == pytest.approx(0.95, abs=1e-9)
    radau = solve(pr, method="Radau", rtol=1e-10, atol=1e-12, stop_at_specialization=True)
    assert abs(radau.specialization_time[0] - t_ref) <= 1e-8 * t_ref


@pytest.mark.parametrize("dim, gauge", [(10000, "w-heavy"), (100000, "a-heavy")])
def test_default_lsoda_locates_events_at_extreme_dimensions_as_rodas_does(dim, gauge):
    # two ways the LSODA path once crawled: a fresh LSODA start inside the event bracket of the
    # stiff w-heavy flow (160k evaluations in 40 s without finishing), and an event at t = 4e-5
    # inside a first bracket [0, 1e-3] (22k evaluations)
    pr = single(dim, gauge)
    kw = dict(t_max=1e3 * dim, rtol=1e-9, atol=1e-12, stop_at_specialization=True)
    sol = solve(pr, **kw)
    assert sol.diagnostics["method"] == "auto"
    assert sol.diagnostics["integrator"] == "lsoda-compiled"
    assert sol.diagnostics["nfev"] < 3000, sol.diagnostics
    ref = solve(pr, method="rodas", **kw)
    assert ref.diagnostics["integrator"] == "rodas"
    np.testing.assert_allclose(sol.specialization_time, ref.specialization_time, rtol=1e-7)


def test_an_event_in_the_first_transient_gets_a_short_bracket(monkeypatch):
    # the a-heavy gauge at D = 1e5 specializes at t = 3.9e-5; a grid starting at 1e-3 put it in
    # the bracket [0, 1e-3], which the fallback integrator (Radau) crossed in 22k evaluations
    from gaugedyn.theory import _lsoda

    monkeypatch.setattr(_lsoda, "BRACKET_BUDGET", 0)  # every bracket goes to Radau
    pr = single(100000, "a-heavy")
    kw = dict(t_max=1e8, rtol=1e-9, atol=1e-12, stop_at_specialization=True)
    sol = solve(pr, method="lsoda", **kw)
    assert sol.diagnostics["nfev"] < 3000, sol.diagnostics
    ref = solve(pr, method="rodas", **kw)
    np.testing.assert_allclose(sol.specialization_time, ref.specialization_time, rtol=1e-7)


def test_pruning_time_matches_bisection_and_owner_is_favourable_gauge():
    pr = duplicates(10, ["w-heavy", "a-heavy"])
    defs = Definitions(prune_tol=1e-2)
    sol = solve(pr, rtol=1e-9, atol=1e-11, t_max=5.0, definitions=defs)
    assert sol.owner[0] == 1 and np.isnan(sol.pruning_time[1])
    t_prune = sol.pruning_time[0]
    ref, p = _tight(pr, 1.5 * t_prune)

    def g(t):
        a, Q, _ = state_to_order_parameters(ref.sol(t), p)
        return 1e-2 - abs(a[0] * np.sqrt(Q[0, 0]))

    t_ref = _bisect(g, 0.0, t_prune * 1.5)
    assert abs(t_prune - t_ref) <= 1e-8 * t_ref


def test_batched_equals_single_and_scipy():
    probs = [
        single(10, "w-heavy"),
        single(30, "a-heavy", scale=0.7),
        single(100, "w-heavy", 2.0),
        single(15, "balanced"),
    ]
    t_eval = np.concatenate([[0.0], np.geomspace(1e-3, 300.0, 30)])
    batch = solve_batch(probs, t_max=300.0, rtol=1e-9, atol=1e-11, t_eval=t_eval)
    assert len(batch) == len(probs)
    for i, pr in enumerate(probs):
        one = solve(pr, t_max=300.0, rtol=1e-9, atol=1e-11, t_eval=t_eval, method="rodas")
        for key in ("loss", "rho", "alignment"):
            np.testing.assert_allclose(
                batch.observables[key][i], one.observables[key], rtol=1e-12, atol=1e-14
            )
        np.testing.assert_allclose(
            batch.specialization_time[i], one.specialization_time, rtol=1e-12
        )
        assert batch.diagnostics[i]["nsteps"] == one.diagnostics["nsteps"]
    loop = solve_batch(probs, t_max=300.0, rtol=1e-10, atol=1e-12, t_eval=t_eval, method="LSODA")
    assert np.nanmax(np.abs(loop.observables["rho"] - batch.observables["rho"])) < 1e-6
    np.testing.assert_allclose(loop.specialization_time, batch.specialization_time, rtol=1e-6)


def test_solution_to_dict_is_json_with_definitions():
    sol = solve(duplicates(10, ["a-heavy", "w-heavy"]), t_max=20.0)
    d = json.loads(json.dumps(sol.to_dict(), allow_nan=False))
    assert d["definitions"]["threshold"] == 0.95 and d["owner"] == [0]
    assert set(d["diagnostics"]) >= {
        "method",
        "rtol",
        "atol",
        "nfev",
        "njev",
        "nsteps",
        "nrejected",
        "status",
        "message",
        "wall_time",
    }
    assert d["problem"]["setup"]["name"] == "duplicates"
    assert set(sol.observables) >= {"loss", "rho", "alignment", "delta", "reaction", "transport"}
    assert sol.t[0] == 0.0 and np.all(np.diff(np.log(sol.t[1:])) > 0)


def test_weight_space_keeps_weights_and_methods_registry():
    pr = random_problem(8, 2, 1, np.random.default_rng(5))
    sol = solve(
        pr, formulation="weight-space", keep_weights=True, t_max=1.0, t_eval=[0.0, 0.5, 1.0]
    )
    assert sol.W.shape == (3, 2, 8)
    np.testing.assert_allclose(sol.W[-1] @ sol.W[-1].T, sol.Q[-1], rtol=1e-12)
    assert set(METHODS) >= {"rodas", "Radau", "BDF", "LSODA", "DOP853", "RK45"}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_registry_entry_is_a_callable_with_one_result_type(name):
    from gaugedyn.theory._methods import FlowTask, Integration
    from gaugedyn.theory._solve import _event_fn

    y0, p = initial_state(single(10, "w-heavy"))
    task = FlowTask(
        y0=y0,
        params=p,
        t_max=1e3,
        t_eval=np.array([0.0, 1.0, 10.0]),
        rtol=1e-8,
        atol=1e-10,
        event_fn=_event_fn(Definitions()),
        n_events=p.M + p.K,
        stop=True,
    )
    out = METHODS[name](task)
    assert isinstance(out, Integration) and out.status == 1 and out.y.shape == (out.t.size, 3)
    assert out.t[-1] == out.t_final == pytest.approx(out.events[0])


def test_gd_divergence_raises_with_last_finite_state():
    pr = random_problem(10, 2, 1, np.random.default_rng(6), scale=3.0)
    with pytest.raises(DivergenceError) as info:
        solve(pr, dynamics="gd", eta=50.0, t_max=1e5)
    err = info.value
    assert np.all(np.isfinite(err.last_state)) and err.step >= 1 and err.quantity


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(formulation="weights"),
        dict(dynamics="sgd"),
        dict(method="Euler"),
        dict(dynamics="gd"),
        dict(dynamics="gd", eta=-1.0),
        dict(eta=0.1),
        dict(rtol=0.0),
        dict(t_max=-1.0),
        dict(t_eval=[0.0, 2.0, 1.0], t_max=3.0),
    ],
)
def test_bad_solve_inputs_raise_input_error(kwargs):
    with pytest.raises(InputError):
        solve(single(10), **kwargs)


def test_bad_batch_and_definitions_raise_input_error():
    with pytest.raises(InputError, match="K=2"):
        solve_batch([single(10), duplicates(10, ["a-heavy", "w-heavy"])], t_max=1.0)
    with pytest.raises(InputError, match="threshold"):
        Definitions(threshold=1.0)


def test_cli_solve_prints_one_json_object(capsys):
    rc = main(
        [
            "solve",
            "--setup",
            "duplicates",
            "--dim",
            "10",
            "--gauges",
            "a-heavy,w-heavy",
            "--t-max",
            "50",
            "--threshold",
            "0.9",
        ]
    )
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    for key in (
        "specialization_time",
        "owner",
        "rho",
        "alignment",
        "loss",
        "delta_drift",
        "definitions",
        "settings",
        "diagnostics",
    ):
        assert key in d
    assert d["definitions"]["threshold"] == 0.9 and d["owner"] == [0]
    rc = main(
        [
            "solve",
            "--setup",
            "single",
            "--dim",
            "10",
            "--dynamics",
            "gd",
            "--eta",
            "0.01",
            "--t-max",
            "5",
            "--formulation",
            "span",
        ]
    )
    assert rc == 0 and json.loads(capsys.readouterr().out)["settings"]["dynamics"] == "gd"


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--setup", "single", "--dim", "1"], "dim"),
        (["--setup", "single", "--dim", "2.5"], "dim"),
        (["--setup", "single", "--dim", "10", "--threshold", "1"], "threshold"),
        (["--setup", "single", "--dim", "10", "--gauge", "heavy"], "gauge"),
        (["--setup", "duplicates", "--dim", "10", "--gauges", "a-heavy,x"], "gauges"),
        (["--setup", "single", "--dim", "10", "--dynamics", "gd"], "eta"),
        (["--setup", "single", "--dim", "10", "--eta", "0"], "eta"),
        (["--setup", "triple", "--dim", "10"], "setup"),
        (["--setup", "single", "--dim", "10", "--scale", "-2"], "scale"),
    ],
)
def test_cli_bad_values_exit_2_with_one_line(argv, word, capsys):
    assert main(["solve", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and word in err


def test_batched_factorization_matches_numpy_solve():
    from gaugedyn.theory._rosenbrock import Factorization

    rng = np.random.default_rng(9)
    for n in (1, 4, 15, 80):
        M, b = rng.normal(size=(20, n, n)), rng.normal(size=(20, n))
        x = Factorization(M).solve(b)
        np.testing.assert_allclose(
            x, np.linalg.solve(M, b[..., None])[..., 0], rtol=1e-9, atol=1e-9
        )


def test_flow_divergence_raises_divergence_error():
    def fun(t, y, p):
        return y * y  # blows up at t = 1

    def jac(t, y, p):
        return (2 * y)[:, :, None]

    with pytest.raises(DivergenceError) as info:
        rodas4(
            fun, jac, np.ones((1, 1)), None, lambda p, i: p, np.array([2.0]), np.array([0.0, 2.0])
        )
    assert info.value.time < 1.0 + 1e-6 and np.all(np.isfinite(info.value.last_state))
