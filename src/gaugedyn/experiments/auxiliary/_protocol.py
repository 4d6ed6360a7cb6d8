"""The fixed numbers of the ``auxiliary`` protocol (``PROTOCOL.md`` says what each is for), written
before any run. Nothing here imports the system's other modules."""

from __future__ import annotations

from ...stats import Measure

READINGS = ("one_output", "two_heads")
"""The declared architectures: one output trained on both labels, or a shared first layer with
a main and an auxiliary head (``derivations/auxiliary.md``)."""

TRAJECTORY_ACTIVATIONS = ("erf", "relu", "linear")
"""Activations of the ODE-against-simulation comparison (section 1)."""

FDT_ODE_ACTIVATIONS = ("erf", "relu", "tanh")
"""Activations whose FDT is checked along the ODE (section 4)."""

FDT_SIM_ACTIVATIONS = ("erf", "relu")
"""Activations whose FDT is judged in simulation (section 4)."""

START = {"Q": 0.5, "R_main": 0.1, "R_aux": 0.1, "a": 0.8}
"""The trajectories' initial order parameters (``K = 1``), the same at every ``D``."""

LINEAR_START = {"Q": 1.0, "R_main": 0.0, "R_aux": 0.0, "a": 1.0}
"""The linear student's start: unit norm, no overlap with either teacher, head fixed at one."""

FDT_START = {"Q": 0.5, "R_main": 0.2, "R_aux": 0.2, "a": 1.0}
"""Where the FDT's gradient flow to the joint optimum starts: a fixed head equals the teachers'
coefficient, so identical teachers are fitted exactly."""

BAND = (0.025, 0.975)
"""The simulations' 95% band: the 2.5% and 97.5% quantiles over seeds at each record."""

T_MIN = 0.1
"""Records before ``t = steps / D = 0.1`` are not compared (a few hundred steps do not average)."""

CLOSED_FORM_TOLERANCE = 0.02
"""The closed form against simulation: the seed mean within 2% of the closed form's error."""

ORDER_ETAS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16)
"""Learning rates of the closed form's order fit (six: four residual degrees of freedom)."""

ORDER_TAU = (0.05, 3.0)
"""The range of ``tau = eta t`` over which the closed form's gap is taken (40 points)."""

ORDER_BAND = (1.85, 2.15)
"""The fitted order of the leading-order closed form's gap: ``O(eta^2)``."""

FDT_ETAS = (0.002, 0.004, 0.008, 0.016, 0.032, 0.064)
"""Learning rates of the FDT along the ODE."""

FDT_ODE_TOLERANCE = 0.01
"""The FDT along the ODE: ``|r(eta_min) - 1|`` below this (r the relation's ratio, 1 + O(eta),
up to O(eta^{1/2}) for an aligned ReLU student)."""

FDT_EXPONENT = (0.3, 1.3)
"""The fitted exponent ``p`` of ``|r - 1| ~ eta^p``: the relation's error vanishes with eta
(1 where L_J is analytic at the optimum, 1/2 at worst for an aligned ReLU)."""

FDT_SIM_BAND = (0.85, 1.15)
"""The FDT in simulation: the per-seed ratio's mean inside this band (the smallest effect of
interest: 15%, three times the ODE's O(eta) correction at the simulations' eta)."""

BALANCE_TOL = 1e-9
"""The exact balance at the ODE's stationary state: drift part + diffusion part of the joint
error's rate, relative to either part."""

MAP_MIN_EFFECT = 0.002
"""Cells of the benefit map judged for a sign: where the theory's benefit is at least this far
from zero (the smallest effect of interest, in units of the main error)."""

FINITE_D = 4.0
"""The decomposition control's allowance for finite ``D``: per step the chain's quadratic part is
``(eta/D)^2 kappa^2 |x|^2`` with ``E[kappa^2 |x|^2] = E[kappa^2] D + 2 |E[kappa z]|^2``, at most
``(1 + 2/D)`` times the limit, and the error it feeds back on is ``O(1/D)`` off too: 4/D in
all."""

SPLIT_SEEDS = 2
"""The benefit instrument's negative control halves the single-task seeds (two halves, the same
configuration: no benefit)."""


FINDING_MEASURES: dict[str, Measure] = {
    "closed_form.simulation": Measure(
        "long-tailed",
        "per-seed eps / closed form - 1 at one record and run, as margin -/+ it (a ratio of errors)",
        CLOSED_FORM_TOLERANCE / 2,
        paper=CLOSED_FORM_TOLERANCE,
        why="a ratio of errors (positive, right-skewed): judged by its median; half the margin "
        "(the protocol's); the closed form exact (deviation 0) puts each cell at the margin",
    ),
    "benefit.sign_change": Measure(
        "long-tailed",
        "per-seed sign(theory) times the benefit eps_m(gamma = 0) - eps_m(gamma) (a difference "
        "of errors)",
        MAP_MIN_EFFECT,
        why="a difference of errors: judged by its median (a sign rule); the smallest theory "
        "benefit a cell is judged at",
    ),
    "forcing_noise.balance": Measure(
        "long-tailed",
        "per-seed drift part, or minus the diffusion part, of the benefit (differences of errors)",
        MAP_MIN_EFFECT,
        why="differences of errors: judged by their medians; the smallest theory benefit judged",
    ),
    "fdt.ode.*": Measure(
        "exact",
        "largest relative deviation from the FDT along the ODE (one integration)",
        FDT_ODE_TOLERANCE,
        paper=0.0,
        why="deterministic (an integration): the relation exactly (0)",
    ),
    "fdt.sim.*": Measure(
        "long-tailed",
        "per-seed (eps_m + gamma eps_a - L_J*) / (eta Tr N / 4B) - 1, as margin -/+ it (a ratio "
        "of errors)",
        FDT_SIM_BAND[1] - 1.0,
        paper=FDT_SIM_BAND[1] - 1.0,
        why="a ratio of errors: judged by its median; the relation exact (ratio 1) puts each "
        "cell at the margin",
    ),
    "fdt.single_task.*": Measure(
        "long-tailed",
        "per-seed-pair (1 + gamma) eps_m^aux / ((1 + gamma^2) eps_m^single) (a ratio of errors)",
        FDT_SIM_BAND[1] - 1.0,
        paper=1.0,
        why="a ratio of errors: judged by its median; the relation's ratio 1",
    ),
}
"""What each finding of ``auxiliary`` measures (finding-id pattern -> measure, the first match;
``PROTOCOL.md``): the kind that chooses its rule and the smallest effect of interest, in the
measure's units, at which its power is computed."""
