"""``summary.json``: what a run was (configuration, versions, seeds, definitions) and what it found.

The summary holds ``format`` (`SUMMARY_FORMAT`), ``experiment``, ``description``,
``configuration``, ``command``, ``versions``, ``code`` (the hash of the source files the tasks
can reach, their count and scope, the git commit and whether it had uncommitted changes:
`gaugedyn._meta.code_identity()`; every task record of the store carries the same),
``seeds`` (the root seed and how task seeds derive from it), ``definitions`` (the experiment's
observables), ``tasks``, ``space`` (the declared set-up constants: default, alternatives or
range, why), ``controls`` (each known-answer control: its instrument, kind, case, what it
proves, what it measured and whether it passed), ``diagnostics``,
``failed_tasks``, ``status``, ``claims``, ``arrays`` (name -> shape and dtype), ``arrays_sha256``
and ``figures``. It is strict JSON: non-finite floats are written as the strings ``"nan"``,
``"inf"`` and ``"-inf"`` (`gaugedyn._json.strict()`). ``report.md`` is rendered from exactly what it holds.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .._json import strict
from .._meta import seed_derivation, versions
from ._arrays import schema_problems
from ._config import RunConfig
from ._folders import SUMMARY
from ._protocol import Claim, analysis_seed, labelled
from ._report import REPORT, run_report
from ._store import atomic_write

SUMMARY_FORMAT = 1


def summary_head(cfg: RunConfig, command: dict | None) -> dict:
    """The part of the summary known before any task runs."""
    experiment = cfg.experiment
    definitions = getattr(experiment, "definitions", None)
    if dataclasses.is_dataclass(definitions) and not isinstance(definitions, type):
        definitions = dataclasses.asdict(definitions)
    elif definitions is not None and not isinstance(definitions, dict | str | list):
        definitions = str(definitions)
    return {
        "format": SUMMARY_FORMAT,
        "experiment": cfg.name,
        "description": cfg.description,
        "configuration": cfg.to_dict(),
        "command": command,
        "versions": versions(),
        "code": cfg.code_identity(),
        "seeds": {
            "root": cfg.seed,
            "derivation": seed_derivation(seed_left_out(cfg)),
        },
        "definitions": strict(definitions),
        "tasks": cfg.tasks,
        "space": {name: c.describe(cfg.params[name]) for name, c in cfg.space.items()},
    }


def seed_left_out(cfg: RunConfig) -> list[str]:
    """The settings of ``cfg``'s tasks that their seeds do not derive from: those the
    experiment's ``seed_coordinates()`` leaves out of some task (``[]`` for most experiments;
    ``spike_boundary``'s shared pass leaves out ``also``)."""
    out: set[str] = set()
    for task in cfg.tasks:
        coordinates = cfg.experiment.seed_coordinates(task)
        if isinstance(task, dict) and isinstance(coordinates, dict):
            out |= set(task) - set(coordinates)
    return sorted(out)


def analyse(cfg: RunConfig, results: list) -> tuple[dict[str, np.ndarray], list[Claim], dict]:
    """The experiment's ``analyse`` on the stored results, its return value checked and its
    findings labelled provisional outside the full configuration (`._protocol.labelled()`)."""
    out = cfg.experiment.analyse(
        dict(cfg.params), cfg.tasks, results, analysis_seed(cfg.seed, cfg.name)
    )
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        raise TypeError(f"{cfg.name}.analyse must return (arrays, claims[, diagnostics])")
    arrays, claims = out[0], list(out[1])
    diagnostics = dict(out[2]) if len(out) == 3 and out[2] is not None else {}
    arrays = {str(k): np.asarray(v) for k, v in dict(arrays).items()}
    for problem in schema_problems(arrays):
        raise TypeError(
            f"{cfg.name}.analyse: {problem} (the arrays.npz schema: gaugedyn.harness._arrays)"
        )
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(f"{cfg.name}.analyse: claims must be Claim instances, got {claim!r}")
    arrays, claims, diagnostics = labelled(
        cfg.experiment.params, dict(cfg.params), (arrays, claims, diagnostics), label_keys(cfg)
    )
    return arrays, claims, strict(diagnostics)


def label_keys(cfg: RunConfig) -> tuple[str, ...]:
    """The settings compared with their declared values to label a run provisional: the
    experiment's ``label_keys`` (every declared setting by default) less those a multiverse's
    shared pass gave it (``cfg.shared``), which change none of its results."""
    keys = cfg.experiment.label_keys
    keys = tuple(cfg.experiment.params) if keys is None else tuple(keys)
    return tuple(k for k in keys if k not in cfg.shared)


def write_summary(staging: Path, summary: dict) -> None:
    """Stage ``summary.json`` and the ``report.md`` rendered from exactly what it holds."""
    text = json.dumps(strict(summary), indent=1, allow_nan=False, default=str)
    atomic_write(staging / SUMMARY, text.encode())
    (staging / REPORT).write_text(run_report(json.loads(text)))
