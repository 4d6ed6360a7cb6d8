"""The ``auxiliary`` experiment's instruments and findings on results built to pass and built to
fail (``experiments/auxiliary/_analysis.py``), and its tasks' declarations."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.experiments.auxiliary import _analysis as an
from gaugedyn.experiments.auxiliary import _protocol as pc
from gaugedyn.experiments.auxiliary.auxiliary import EXPERIMENT

SEED = np.random.SeedSequence(41)
"""The analysis seed the median rules draw from."""


def _claim(claims, id):
    return next(c for c in claims if c.id == id)


def _quick():
    return {
        k: (p.quick if p.quick is not None else p.default) for k, p in EXPERIMENT.params.items()
    }


def test_tasks_cover_every_section_and_reading():
    tasks = EXPERIMENT.tasks(_quick())
    kinds = {t["kind"] for t in tasks}
    assert kinds == {"trajectory", "closed_form", "order", "map", "fdt_ode", "fdt_sim"}
    for kind in ("trajectory", "map", "fdt_ode"):
        assert {t["reading"] for t in tasks if t["kind"] == kind} == set(pc.READINGS)
    assert not any(
        t["kind"] == "fdt_sim" and t["activation"] == "relu" and t["reading"] == "two_heads"
        for t in tasks
    )


# --- section 1 -----------------------------------------------------------------------------------


def _trajectory(shift: float, bare_shift: float, rng):
    t = np.concatenate([[0.0], np.geomspace(0.05, 8, 10)])
    ode = 0.5 * np.exp(-t) + 0.05
    tasks, results = [], []
    for act in pc.TRAJECTORY_ACTIVATIONS:
        for reading in pc.READINGS:
            for backend, dim in (("compiled", 1000), ("chain", 10000)):
                sims = ode * (1 + 0.02 * rng.standard_normal((20, t.size)))
                sims[:, 0] = ode[0]
                tasks.append(
                    {
                        "kind": "trajectory",
                        "activation": act,
                        "reading": reading,
                        "backend": backend,
                        "dim": dim,
                    }
                )
                results.append(
                    {
                        "t": t,
                        "eps_main": sims,
                        "eps_aux": sims.copy(),
                        "ode_main": ode * (1 + shift),
                        "ode_aux": ode * (1 + shift),
                        "ode_no_noise_main": ode * (1 + bare_shift),
                        "ode_no_noise_aux": ode * (1 + bare_shift),
                    }
                )
    return tasks, results


def test_trajectory_check_passes_inside_the_band_and_fails_outside():
    rng = np.random.default_rng(0)
    _, claims = an.trajectories(*_trajectory(0.0, 0.2, rng))
    assert _claim(claims, "trajectory.erf").passed
    assert _claim(claims, "trajectory.erf.control_noise_term").passed
    _, claims = an.trajectories(*_trajectory(0.08, 0.2, rng))
    assert not _claim(claims, "trajectory.erf").passed
    _, claims = an.trajectories(*_trajectory(0.0, 0.0, rng))
    assert not _claim(claims, "trajectory.relu.control_noise_term").passed


# --- section 2 -----------------------------------------------------------------------------------


def _closed(bias: float, rng, seeds=16):
    tasks, results = [], []
    t = np.linspace(0, 100, 7)
    cf = 0.3 * np.exp(-t / 40) + 0.05
    for rho in (0.0, 1.0):
        tasks.append(
            {
                "kind": "closed_form",
                "rho": rho,
                "sigma": 0.5,
                "eta": 0.0125,
                "gamma": 0.5,
                "dim": 1000,
                "control_shift": 0.2,
            }
        )
        sims = cf * (1 + bias + 0.004 * rng.standard_normal((seeds, t.size)))
        results.append(
            {
                "t": t,
                "eps_main": sims,
                "leading": cf,
                "exact": cf,
                "ode": cf,
                "wrong_gamma": cf * 1.1,
            }
        )
    tasks.append({"kind": "order"})
    etas = np.array(pc.ORDER_ETAS)
    results.append({"etas": etas, "gap": 0.3 * etas**2, "exact_gap": etas * 0})
    return tasks, results


@pytest.mark.parametrize(("bias", "verdict"), [(0.0, "HELD"), (0.05, "NOT HELD")])
def test_closed_form_finding_is_held_within_two_percent_and_not_beyond(bias, verdict):
    _, claims = an.closed_form(*_closed(bias, np.random.default_rng(1)), SEED)
    assert _claim(claims, "closed_form.simulation").verdict == verdict
    assert _claim(claims, "closed_form.control_wrong_gamma").passed
    assert _claim(claims, "closed_form.order").passed


def test_closed_form_control_fails_when_the_wrong_closed_form_is_right():
    tasks, results = _closed(0.0, np.random.default_rng(2))
    for r in results:
        if "wrong_gamma" in r:
            r["wrong_gamma"] = r["leading"]
    _, claims = an.closed_form(tasks, results, SEED)
    assert not _claim(claims, "closed_form.control_wrong_gamma").passed


def test_closed_form_order_check_fails_on_a_first_order_gap():
    tasks, results = _closed(0.0, np.random.default_rng(3))
    results[-1]["gap"] = 0.3 * results[-1]["etas"]
    _, claims = an.closed_form(tasks, results, SEED)
    assert not _claim(claims, "closed_form.order").passed


# --- sections 3 and 5 ----------------------------------------------------------------------------


def _map(flip: bool, rng, seeds=12, noise_sign=-1.0):
    """Cells with theory +-0.01; the simulated benefit follows the theory (or is flipped in one
    cell); drift and diffusion parts of +0.03 and noise_sign * 0.02."""
    tasks, results = [], []
    theory = {(0.0, 1.0): -0.01, (1.0, 1.0): 0.01, (0.0, 2.0): -0.01, (1.0, 2.0): 0.01}
    for reading in pc.READINGS:
        for sigma in (1.0, 2.0):
            base = {
                "eps_window": 0.1 + 0.001 * rng.standard_normal(seeds),
                "drift_total": np.zeros(seeds),
                "diffusion_total": np.zeros(seeds),
                "drift_window": np.zeros(seeds),
                "diffusion_window": np.zeros(seeds),
                "ode_drift_total": 0.0,
                "ode_diffusion_total": 0.0,
                "closed_window": 0.1,
                "ode_window": 0.1,
                "gauge_slope": -1.0
                + 0.01 * np.linspace(-1.0, 1.0, seeds),  # spread: not degenerate
                "closed_diffusion": 0.0,
                "closure": np.zeros(seeds),
            }
            tasks.append(
                {
                    "kind": "map",
                    "reading": reading,
                    "sigma": sigma,
                    "rho": 1.0,
                    "single": True,
                    "dim": 1000,
                }
            )
            results.append(base)
            for rho in (0.0, 1.0):
                b = theory[(rho, sigma)] * (-1 if flip and (rho, sigma) == (1.0, 2.0) else 1)
                r = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
                r["eps_window"] = base["eps_window"] - b + 0.001 * rng.standard_normal(seeds)
                r["closed_window"] = r["ode_window"] = 0.1 - theory[(rho, sigma)]
                r["drift_total"] = -0.03 + 0.002 * rng.standard_normal(seeds)
                r["diffusion_total"] = -noise_sign * 0.02 + 0.002 * rng.standard_normal(seeds)
                r["closed_diffusion"] = -noise_sign * 0.02
                r["drift_window"], r["diffusion_window"] = r["drift_total"], r["diffusion_total"]
                tasks.append(
                    {
                        "kind": "map",
                        "reading": reading,
                        "sigma": sigma,
                        "rho": rho,
                        "single": False,
                        "dim": 1000,
                    }
                )
                results.append(r)
    return tasks, results


@pytest.mark.parametrize(("flip", "verdict"), [(False, "HELD"), (True, "NOT HELD")])
def test_benefit_sign_change(flip, verdict):
    _, claims = an.benefit_map(*_map(flip, np.random.default_rng(4)), SEED)
    assert _claim(claims, "benefit.sign_change").verdict == verdict


def test_benefit_sign_change_is_unresolved_without_both_signs():
    tasks, results = _map(False, np.random.default_rng(5))
    for t, r in zip(tasks, results):
        if not t["single"]:
            r["closed_window"] = r["ode_window"] = 0.09
    _, claims = an.benefit_map(tasks, results, SEED)
    assert _claim(claims, "benefit.sign_change").verdict == "UNRESOLVED"


@pytest.mark.parametrize(("noise_sign", "verdict"), [(-1.0, "HELD"), (1.0, "NOT HELD")])
def test_forcing_noise_balance(noise_sign, verdict):
    _, claims = an.forcing_noise(
        *_map(False, np.random.default_rng(6), noise_sign=noise_sign), SEED
    )
    assert _claim(claims, "forcing_noise.balance").verdict == verdict


def test_map_controls_pass_on_a_sound_instrument_and_fail_on_a_broken_one():
    tasks, results = _map(False, np.random.default_rng(7))
    claims = an.map_controls(tasks, results)
    assert all(c.passed for c in claims), [c.id for c in claims if not c.passed]
    for t, r in zip(tasks, results):  # one half of the single-task seeds shifted: a "benefit"
        if t["single"]:
            r["eps_window"][: len(r["eps_window"]) // 2] += 0.01
    broken = an.map_controls(tasks, results)
    assert not _claim(broken, "benefit.control_no_benefit.one_output").passed
    for t, r in zip(tasks, results):  # a decomposition that misreads the diffusion part
        if not t["single"]:
            r["diffusion_total"] = r["diffusion_total"] * 1.2
    broken = an.map_controls(tasks, results)
    assert not _claim(broken, "forcing_noise.control_linear_diffusion").passed


# --- section 4 -----------------------------------------------------------------------------------


def _fdt_sim(center: float, rng, seeds=16):
    tasks, results = [], []
    for act in pc.FDT_SIM_ACTIVATIONS:
        for reading in pc.READINGS:
            if act == "relu" and reading == "two_heads":
                continue
            for rho, gamma in ((1.0, 0.5), (1.0, 0.0), (0.5, 0.5)):
                eta, trace = 0.05, 0.2
                excess = center * eta * trace / 4 * (1 + 0.03 * rng.standard_normal(seeds))
                eps = excess / (1 + gamma)
                tasks.append(
                    {
                        "kind": "fdt_sim",
                        "activation": act,
                        "reading": reading,
                        "rho": rho,
                        "gamma": gamma,
                        "eta": eta,
                    }
                )
                results.append(
                    {
                        "eps_main": eps,
                        "eps_aux": eps,
                        "E_star": 0.0,
                        "trace": trace,
                        "ode_ratio": 1.0,
                    }
                )
    return tasks, results


@pytest.mark.parametrize(("center", "verdict"), [(1.0, "HELD"), (1.3, "NOT HELD")])
def test_fdt_in_simulation(center, verdict):
    _, claims = an.fdt_sim(*_fdt_sim(center, np.random.default_rng(8)), _quick(), SEED)
    assert _claim(claims, "fdt.sim.erf").readings["one_output"] == verdict


def test_fdt_along_the_ode_judges_the_smallest_eta_and_the_gauge_reading():
    etas = np.array(pc.FDT_ETAS)
    tasks, results = [], []
    for reading in pc.READINGS:
        for rho in (1.0, 0.5):
            tasks.append({"kind": "fdt_ode", "activation": "relu", "reading": reading, "rho": rho})
            if reading == "two_heads":
                results.append({"stationary": False, "gauge_rate": -0.01, "gauge_noise": -0.01})
            else:
                results.append(
                    {
                        "stationary": True,
                        "etas": etas,
                        "ratio": 1 + 0.5 * etas,
                        "balance": np.full(6, 1e-13),
                    }
                )
    cfg = _quick() | {"fdt_ode_activations": ["relu"]}
    _, claims = an.fdt_ode(tasks, results, cfg, SEED)
    c = _claim(claims, "fdt.ode.relu")
    assert c.readings == {"one_output": "HELD", "two_heads": "UNRESOLVED"}
    assert _claim(claims, "fdt.ode.relu.one_output.rho1.order").passed
    for r in results:
        if r["stationary"]:
            r["ratio"] = 1.05 + 0 * etas
    _, claims = an.fdt_ode(tasks, results, cfg, SEED)
    assert _claim(claims, "fdt.ode.relu").readings["one_output"] == "NOT HELD"
    assert not _claim(claims, "fdt.ode.relu.one_output.rho1.order").passed
