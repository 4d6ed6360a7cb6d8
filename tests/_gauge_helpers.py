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
