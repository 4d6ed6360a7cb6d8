"""Known-answer controls of the ``auxiliary`` experiment's instruments, run before any task.

The run also judges control cases from its own tasks (``trajectory.*.control_noise_term``,
``closed_form.control_wrong_gamma``, ``benefit.control_*``, ``forcing_noise.control_*``);
declared here, each instrument reads planted results through the very function of
`._analysis` the run's findings are read with, so that an instrument that misreads a known
case stops the run before any work. Each planted set of results has the layout of the run's
(the keys `._runs` writes) and a seeded generator (seed 0):

- the **band test** (`._analysis.trajectories()`): 40 seeds of noise (standard deviation
  0.01) about a known curve; the curve itself lies inside the seeds' 95% band at every record
  (negative: no disagreement), the curve moved by 0.05 lies outside (positive);
- the **closed-form tolerance** (`._analysis.closed_form()`): 16 seeds within 0.2% of the
  closed form are judged within the 2% margin (positive), seeds 5% below it are not (negative);
- the **benefit sign** (`._analysis.benefit_map()`): the theory's benefit +0.05 at one cell
  and -0.05 at another, each measured with its sign: the sign change is HELD (positive); the same
  theory with no measured benefit (the single-task and auxiliary seeds alike) is not (negative);
- the **forcing-noise split** (`._analysis.forcing_noise()`): in the helping cell a drift part
  of +0.02 and a diffusion part of -0.01 per seed read a balance (positive); zero-mean parts do
  not (negative);
- the **FDT ratio in simulation** (`._analysis.fdt_sim()`): stationary joint errors whose
  ratio ``(eps_J - L_J*) / (eta Tr N / 4B)`` is 1 (with 1% noise) read the relation (positive);
  ratio 1.3 does not (negative);
- the **FDT ratio along the ODE** (`._analysis.fdt_ode()`): ratios ``1 + eta`` over
  `._protocol.FDT_ETAS` read the relation at the smallest ``eta`` (positive); ``1.05 + eta``
  does not (negative).
"""

from __future__ import annotations

import numpy as np

from ...harness import Control
from . import _protocol as pc

CONTROL_SEED = 0
"""The analysis seed of the controls' planted results (the median rules' draws): fixed, so a
control reads the same on every run."""


def _claim(claims, id: str):
    (c,) = [c for c in claims if c.id == id]
    return c


def _verdict(claim) -> str:
    return str(getattr(claim, "verdict", None) or ("HELD" if claim.passed else "NOT HELD"))


# --- the band test ------------------------------------------------------------------------------


def band_case(offset: float) -> tuple[list, list]:
    """One linear trajectory task and its results: 40 seeds about ``eps = 0.5 e^{-t} + 0.1``
    (noise 0.01), the ODE ``offset`` away from the curve."""
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 4.0, 17)
    curve = 0.5 * np.exp(-t) + 0.1
    task: dict = {"kind": "trajectory", "activation": "linear", "reading": "one_output"}
    task |= {"backend": "chain", "dim": 1000}
    res: dict = {"t": t}
    for key in ("main", "aux"):
        res[f"eps_{key}"] = curve + 0.01 * rng.standard_normal((40, t.size))
        res[f"ode_{key}"] = curve + offset
        res[f"ode_no_noise_{key}"] = curve + offset
    return [task], [res]


def band_inside(offset: float):
    """The band test's share of records inside the band (`._analysis.trajectories()`)."""
    from . import _analysis

    _, claims = _analysis.trajectories(*band_case(offset))
    c = _claim(claims, "trajectory.linear")
    return float(c.measured), bool(c.passed)


# --- the closed-form tolerance -------------------------------------------------------------------


def closed_case(factor: float, noise: float) -> tuple[list, list]:
    """Two closed-form runs (rho 0 and 1) whose 16 seeds are ``factor`` times the closed form
    with relative noise ``noise``, and a deterministic order run."""
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 30.0, 7)
    tasks, results = [], []
    for rho in (0.0, 1.0):
        leading = 0.3 * np.exp(-t / 10.0) + 0.2 + 0.1 * rho
        tasks.append(
            {"kind": "closed_form", "rho": rho, "sigma": 0.5, "eta": 0.05, "gamma": 0.5}
            | {"dim": 1000, "control_shift": 0.2}
        )
        sims = factor * leading * (1 + noise * rng.standard_normal((16, t.size)))
        results.append(
            {
                "t": t,
                "eps_main": sims,
                "leading": leading,
                "exact": leading,
                "ode": leading,
                "wrong_gamma": 1.5 * leading,
            }
        )
    etas = np.asarray(pc.ORDER_ETAS)
    tasks.append({"kind": "order"})
    results.append({"etas": etas, "gap": etas**2})
    return tasks, results


def closed_verdict(factor: float, noise: float) -> str:
    """The verdict of ``closed_form.simulation`` on `closed_case()`."""
    from . import _analysis

    _, claims = _analysis.closed_form(*closed_case(factor, noise), CONTROL_SEED)
    return _verdict(_claim(claims, "closed_form.simulation"))


# --- the benefit sign and the forcing-noise split ---------------------------------------------------


def map_case(benefit: float, drift: float, diffusion: float) -> tuple[list, list]:
    """Map runs of both readings at ``sigma = 0.5``: the single task and two auxiliary cells
    whose theory benefit is +0.05 (``rho = 1``) and -0.05 (``rho = 0``); 12 seeds, each
    auxiliary cell's measured benefit ``benefit`` times the theory's sign (noise 0.002); in the
    helping cell the benefit's drift part ``+drift`` and diffusion part ``-diffusion`` (single
    task's part minus the auxiliary run's, noise 0.002)."""
    rng = np.random.default_rng(0)
    n = 12

    def run(theory_window: float, shift: float, drift_: float, diffusion_: float) -> dict:
        def noisy(x):
            return x + 0.002 * rng.standard_normal(n)

        return {
            "eps_window": noisy(0.4 - shift),
            "drift_total": noisy(-drift_),
            "diffusion_total": noisy(diffusion_),
            "drift_window": noisy(-drift_),
            "diffusion_window": noisy(diffusion_),
            "ode_drift_total": -drift_,
            "ode_diffusion_total": diffusion_,
            "ode_window": np.array(0.4 - theory_window),
            "closed_window": np.array(0.4 - theory_window),
            "gauge_slope": np.zeros(n),
        }

    tasks, results = [], []
    for reading in pc.READINGS:
        base = {"kind": "map", "reading": reading, "sigma": 0.5}
        tasks.append(base | {"rho": 1.0, "gamma": 0.0, "single": True})
        results.append(run(0.0, 0.0, 0.0, 0.0))
        for rho, sign in ((1.0, 1.0), (0.0, -1.0)):
            tasks.append(base | {"rho": rho, "gamma": 0.25, "single": False})
            helping = sign > 0
            results.append(
                run(
                    0.05 * sign,
                    benefit * sign,
                    drift if helping else 0.0,
                    diffusion if helping else 0.0,
                )
            )
    return tasks, results


def benefit_verdict(benefit: float) -> str:
    """The verdict of ``benefit.sign_change`` on `map_case()`."""
    from . import _analysis

    _, claims = _analysis.benefit_map(*map_case(benefit, 0.0, 0.0), CONTROL_SEED)
    return _verdict(_claim(claims, "benefit.sign_change"))


def forcing_verdict(drift: float, diffusion: float) -> str:
    """The verdict of ``forcing_noise.balance`` on `map_case()`."""
    from . import _analysis

    _, claims = _analysis.forcing_noise(*map_case(0.05, drift, diffusion), CONTROL_SEED)
    return _verdict(_claim(claims, "forcing_noise.balance"))


# --- the FDT ratio --------------------------------------------------------------------------------


def fdt_sim_case(ratio: float) -> tuple[list, list]:
    """Erf FDT runs of both readings at ``rho`` 1 and 0.5: 16 seeds whose joint error's ratio
    is ``ratio`` with 1% noise (``L_J* = 0.1``, ``eta Tr N / 4B = 0.05``)."""
    rng = np.random.default_rng(0)
    tasks, results = [], []
    for reading, rho, gamma in [(x, r, 0.5) for x in pc.READINGS for r in (1.0, 0.5)]:
        eta, trace, star = 0.1, 2.0, 0.1
        r = ratio * (1 + 0.01 * rng.standard_normal(16))
        joint = star + r * eta * trace / 4.0
        tasks.append(
            {"kind": "fdt_sim", "activation": "erf", "reading": reading}
            | {"rho": rho, "gamma": gamma, "eta": eta}
        )
        results.append(
            {
                "eps_main": joint / (1 + gamma),
                "eps_aux": joint / (1 + gamma),
                "E_star": star,
                "trace": trace,
                "ode_ratio": np.array(ratio),
            }
        )
    return tasks, results


def fdt_sim_verdict(ratio: float) -> str:
    """The verdict of ``fdt.sim.erf`` on `fdt_sim_case()`."""
    from . import _analysis

    _, claims = _analysis.fdt_sim(*fdt_sim_case(ratio), {}, CONTROL_SEED)
    return _verdict(_claim(claims, "fdt.sim.erf"))


def fdt_ode_case(offset: float) -> tuple[list, list]:
    """Erf stationary states along the ODE of both readings at ``rho`` 1 and 0.5: ratio ``1 +
    offset + eta`` over `._protocol.FDT_ETAS`, balanced to 1e-12."""
    etas = np.asarray(pc.FDT_ETAS)
    tasks = [
        {"kind": "fdt_ode", "activation": "erf", "reading": reading, "rho": rho}
        for reading in pc.READINGS
        for rho in (1.0, 0.5)
    ]
    results = [
        {"stationary": True, "ratio": 1.0 + offset + etas, "etas": etas}
        | {"balance": np.full(etas.size, 1e-12)}
        for _ in tasks
    ]
    return tasks, results


def fdt_ode_verdict(offset: float) -> str:
    """The verdict of ``fdt.ode.erf`` on `fdt_ode_case()`."""
    from . import _analysis

    _, claims = _analysis.fdt_ode(
        *fdt_ode_case(offset), {"fdt_ode_activations": ["erf"]}, CONTROL_SEED
    )
    return _verdict(_claim(claims, "fdt.ode.erf"))


def _held(v: str) -> bool:
    return v == "HELD"


def _not_held(v: str) -> bool:
    return v != "HELD"


def _declared_sections_1_2() -> list[tuple]:
    """``(id, instrument, kind, case, proves, read, passes)`` of the band test's and the closed
    form's controls."""
    margin = pc.CLOSED_FORM_TOLERANCE
    band, closed = "ODE-in-band test (trajectories)", "closed-form tolerance (closed_form)"
    return [
        (
            "band.off",
            band,
            "positive",
            "an ODE 0.05 off 40 seeds of noise 0.01 about it: outside the band (share 0)",
            "the band test tells a wrong ODE",
            lambda: band_inside(0.05),
            lambda s: s[0] == 0.0 and not s[1],
        ),
        (
            "band.on",
            band,
            "negative",
            "the seeds' own curve: inside the band at every record (share 1)",
            "the band test does not reject the right ODE",
            lambda: band_inside(0.0),
            lambda s: s[0] == 1.0 and s[1],
        ),
        (
            "closed_form.within",
            closed,
            "positive",
            f"16 seeds within 0.2% of the closed form: within {margin:.0%} (HELD)",
            "agreement inside the margin is read as agreement",
            lambda: closed_verdict(1.0, 0.002),
            _held,
        ),
        (
            "closed_form.off",
            closed,
            "negative",
            f"16 seeds 5% below the closed form: not within {margin:.0%} (not HELD)",
            "a closed form off by more than the margin is not read as agreeing",
            lambda: closed_verdict(0.95, 0.002),
            _not_held,
        ),
    ]


def _declared_sections_3_5() -> list[tuple]:
    """The same for the benefit sign's and the forcing-noise split's."""
    benefit, forcing = "benefit sign (benefit_map)", "forcing-noise split (forcing_noise)"
    return [
        (
            "benefit.signs",
            benefit,
            "positive",
            "theory benefit +0.05 and -0.05 in two cells, each measured with its sign: the sign "
            "change HELD",
            "the readout sees a benefit that changes sign where the theory does",
            lambda: benefit_verdict(0.05),
            _held,
        ),
        (
            "benefit.none",
            benefit,
            "negative",
            "the same theory, the auxiliary seeds no better than the single task's: not HELD",
            "no measured benefit reads no sign change",
            lambda: benefit_verdict(0.0),
            _not_held,
        ),
        (
            "forcing.balance",
            forcing,
            "positive",
            "in the helping cell a drift part +0.02 and a diffusion part -0.01 per seed: HELD",
            "the split reads forcing against noise where it is planted",
            lambda: forcing_verdict(0.02, 0.01),
            _held,
        ),
        (
            "forcing.none",
            forcing,
            "negative",
            "zero-mean drift and diffusion parts: not HELD",
            "no forcing and no noise read no balance",
            lambda: forcing_verdict(0.0, 0.0),
            _not_held,
        ),
    ]


def _declared_section_4() -> list[tuple]:
    """The same for the FDT ratios'."""
    lo, hi = pc.FDT_SIM_BAND
    sim, ode = "FDT ratio in simulation (fdt_sim)", "FDT ratio along the ODE (fdt_ode)"
    return [
        (
            "fdt_sim.one",
            sim,
            "positive",
            f"stationary errors with ratio 1 (1% noise): within [{lo}, {hi}] (HELD)",
            "the ratio reads the relation where it holds",
            lambda: fdt_sim_verdict(1.0),
            _held,
        ),
        (
            "fdt_sim.off",
            sim,
            "negative",
            f"ratio 1.3: outside [{lo}, {hi}] (not HELD)",
            "a broken relation is not read as the relation",
            lambda: fdt_sim_verdict(1.3),
            _not_held,
        ),
        (
            "fdt_ode.one",
            ode,
            "positive",
            f"ratios 1 + eta: |r(eta_min) - 1| = {pc.FDT_ETAS[0]} below "
            f"{pc.FDT_ODE_TOLERANCE} (HELD)",
            "the ratio at the smallest eta reads the relation where it holds",
            lambda: fdt_ode_verdict(0.0),
            _held,
        ),
        (
            "fdt_ode.off",
            ode,
            "negative",
            "ratios 1.05 + eta: not HELD",
            "a relation off by 5% is not read as holding",
            lambda: fdt_ode_verdict(0.05),
            _not_held,
        ),
    ]


def controls(config: dict) -> list[Control]:
    """The band test's, the closed-form tolerance's, the benefit sign's, the forcing-noise
    split's and the two FDT ratios' controls (module doc); every case is planted, so none reads
    ``config``."""

    def run(read, passes):
        return lambda: (m := read(), bool(passes(m)))

    return [
        Control(id, instrument, kind, case, proves, run(read, passes))
        for id, instrument, kind, case, proves, read, passes in (
            _declared_sections_1_2() + _declared_sections_3_5() + _declared_section_4()
        )
    ]
