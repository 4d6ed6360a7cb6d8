"""Running a declared experiment in this process (tests of the gauge experiments)."""

from __future__ import annotations

import numpy as np

SEED = np.random.SeedSequence(2026)  # the analysis seed of runs analysed directly


def run_inline(experiment, config: dict, root_seed: int = 0):
    """Tasks, results, arrays and claims of an experiment run in this process, its findings
    labelled as the harness labels them (:func:`gaugedyn.harness.labelled`)."""
    from gaugedyn._meta import task_seed
    from gaugedyn.harness import labelled

    tasks = experiment.tasks(config)
    results = [experiment.run_task(t, task_seed(root_seed, experiment.name, t)) for t in tasks]
    arrays, claims = experiment.analyse(config, tasks, results, SEED)[:2]
    arrays, claims, _ = labelled(
        experiment.params, config, (arrays, claims, {}), experiment.label_keys
    )
    return tasks, results, arrays, claims


def config_of(experiment, quick: bool = True, **overrides) -> dict:
    """The default (or quick) configuration of an experiment, with overrides."""
    cfg = {
        k: (p.quick if quick and p.quick is not None else p.default)
        for k, p in experiment.params.items()
    }
    cfg.update(overrides)
    return cfg


def fake_online_sgd_results(
    experiment,
    config: dict,
    kind: str,
    *,
    noise: bool = True,
    shrinking: bool = True,
    shift: float = 0.0,
) -> tuple[list[dict], list[dict]]:
    """``online_sgd``'s tasks of ``kind`` (``"erf"`` or ``"chain"``) and results built around
    the online ODE: each task's loss at 40 times from ``10/D`` to its ``t_max`` is the ODE's erf
    population loss (with its eta^2 noise term, or without it: ``noise``) plus ``shift``
    spreads plus one normal draw of the spread per seed and time (``default_rng(0)``, task
    after task); the spread is ``0.02 D^-1/2`` (``shrinking``, as online SGD's) or ``0.02``."""
    from gaugedyn.theory import population_loss
    from gaugedyn.training import online_ode

    tasks = [t for t in experiment.tasks(config) if t["kind"] == kind]
    rng = np.random.default_rng(0)
    results = []
    for task in tasks:
        D, problem = task["dim"], experiment.problem(task)
        t = np.geomspace(10.0 / D, task["t_max"], 40)
        o = online_ode(problem, task["eta"], t, noise=noise)
        ode = population_loss(o["a"], o["Q"], o["R"], problem.b, problem.V @ problem.V.T, "erf")
        sigma = 0.02 / np.sqrt(D) if shrinking else 0.02
        loss = ode + shift * sigma + sigma * rng.standard_normal((config["seeds"], t.size))
        results.append({"t": t, "loss": loss})
    return tasks, results
