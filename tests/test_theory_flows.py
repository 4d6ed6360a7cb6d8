"""The exact flows: Jacobians, agreement of the three formulations, conservation laws,
dissipation, and the linear single-neuron closed form (Kunin et al. 2024)."""

import numpy as np
import pytest

from gaugedyn.theory import (
    FORMULATIONS,
    Problem,
    duplicates,
    gd_step,
    initial_state,
    jacobian,
    population_loss,
    random_problem,
    rhs,
    solve,
    state_to_order_parameters,
)

ACTS = ("relu", "erf", "linear")


def _problem(act, seed=0, dim=50):
    return random_problem(dim, 3, 2, np.random.default_rng(seed), activation=act)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_jacobian_matches_finite_differences(act, formulation):
    y, p = initial_state(_problem(act, dim=6), formulation)
    J = jacobian(0.0, y, p)
    h = 1e-6 * np.maximum(1.0, np.abs(y))
    Jfd = np.stack(
        [
            (rhs(0, y + hk * e, p) - rhs(0, y - hk * e, p)) / (2 * hk)
            for hk, e in zip(h, np.eye(y.size))
        ],
        axis=-1,
    )
    assert np.abs(J - Jfd).max() <= 1e-7 * np.abs(Jfd).max()
    batch = np.stack([y, 1.01 * y])
    assert np.allclose(jacobian(0.0, batch, p)[0], J, rtol=0, atol=0)


def test_jacobian_is_finite_on_aligned_duplicates():
    y, p = initial_state(duplicates(20, ["a-heavy", "w-heavy"]), "order-parameters")
    J = jacobian(0.0, y, p)
    assert np.all(np.isfinite(J)) and np.all(np.isfinite(rhs(0.0, y, p)))


@pytest.mark.parametrize("act", ACTS)
def test_three_formulations_agree_along_trajectories(act):
    pr = _problem(act, seed=1)
    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, 10.0, 25)])
    sols = [
        solve(pr, formulation=f, method="DOP853", rtol=1e-12, atol=1e-13, t_max=10.0, t_eval=t_eval)
        for f in FORMULATIONS
    ]
    ref = sols[0]
    assert ref.observables["loss"][-1] < 0.9 * ref.observables["loss"][0]  # it did learn
    for s in sols[1:]:
        for key in ("loss", "alignment", "rho"):
            err = np.abs(s.observables[key] - ref.observables[key]).max()
            assert err <= 1e-8, (act, s.settings["formulation"], key, err)


@pytest.mark.parametrize("act", ACTS)
def test_gd_maps_agree_across_formulations(act):
    pr = _problem(act, seed=2)
    ys = {f: initial_state(pr, f) for f in FORMULATIONS}
    out = {}
    for f, (y, p) in ys.items():
        for _ in range(20):
            y = gd_step(y, 0.05, p)
        out[f] = state_to_order_parameters(y, p)
    for f in FORMULATIONS[1:]:
        for x, ref in zip(out[f], out["order-parameters"]):
            assert np.abs(x - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())


def test_delta_conserved_by_flow_and_drifts_linearly_in_eta_under_gd():
    pr = _problem("relu", seed=3, dim=20)
    flow = solve(pr, method="DOP853", rtol=1e-12, atol=1e-13, t_max=5.0)
    assert flow.delta_drift < 1e-9
    etas = np.geomspace(2e-3, 2e-2, 4)
    drift = [solve(pr, dynamics="gd", eta=e, t_max=5.0).delta_drift / 5.0 for e in etas]
    slope = np.polyfit(np.log(etas), np.log(drift), 1)[0]
    assert abs(slope - 1.0) <= 0.1, slope


def test_dissipation_equals_minus_dloss_dt():
    pr = _problem("relu", seed=4, dim=20)
    y0, p = initial_state(pr, "weight-space")
    sol = solve(
        pr,
        formulation="weight-space",
        method="DOP853",
        rtol=1e-10,
        atol=1e-12,
        t_max=10.0,
        t_eval=np.linspace(0, 10.0, 11),
        keep_weights=True,
    )
    Y = np.concatenate([sol.a, sol.W.reshape(len(sol.t), -1)], axis=1)
    F = rhs(0.0, Y, p)
    scale = 1e-3 / np.linalg.norm(F, axis=1, keepdims=True)

    def loss_along(s):
        a, Q, R = state_to_order_parameters(Y + s * scale * F, p)
        return population_loss(a, Q, R, p.b, p.T, "relu")

    dLdt = (8 * (loss_along(1) - loss_along(-1)) - (loss_along(2) - loss_along(-2))) / (
        12 * scale[:, 0]
    )
    total = sol.observables["reaction"].sum(1) + sol.observables["transport"].sum(1)
    assert np.abs(-dLdt - total).max() <= 1e-8 * max(1.0, total.max())
    assert np.all(sol.observables["transport"] > 0) and np.all(sol.observables["reaction"] > 0)


def _kunin_rho(t, rho0, delta, s):
    """Closed form of ``d rho/dt = sqrt(delta^2 + 4 rho^2)(s - rho)``.

    With ``2 rho = |delta| sinh(u)`` the flow is ``du/dt = 2s - |delta| sinh u``; ``z = e^u``
    obeys the Riccati equation ``dz/dt = -(|delta|/2)(z - z+)(z - z-)``,
    ``z+- = (2s +- Gamma)/|delta|``, ``Gamma = sqrt(delta^2 + 4 s^2)``, so
    ``(z - z+)/(z - z-) = (z0 - z+)/(z0 - z-) exp(-Gamma t)``.
    """
    d, A = abs(delta), 2 * s
    G = np.hypot(A, d)
    zp, zm = (A + G) / d, (A - G) / d
    z0 = np.exp(np.arcsinh(2 * rho0 / d))
    k = (z0 - zp) / (z0 - zm) * np.exp(-G * t)
    z = (zp - k * zm) / (1 - k)
    return d * (z - 1 / z) / 4


@pytest.mark.parametrize("delta", [-4.0, 0.05, 3.0])
def test_linear_single_neuron_matches_closed_form(delta):
    s, rho0 = 1.5, 0.06
    a0 = np.sqrt((delta + np.hypot(delta, 2 * rho0)) / 2)
    pr = Problem(a=[a0], W=[[rho0 / a0, 0.0]], b=[s], V=[[1.0, 0.0]], activation="linear")
    sol = solve(pr, method="DOP853", rtol=1e-12, atol=1e-14, t_max=20.0)
    exact = _kunin_rho(sol.t, rho0, delta, s)
    assert np.abs(sol.observables["rho"][:, 0] - exact).max() <= 1e-8
    assert abs(exact[-1] - s) < 1e-6  # the run reached the fixed point
