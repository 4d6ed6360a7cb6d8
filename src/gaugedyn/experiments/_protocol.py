"""What a declared experiment is.

An experiment is a set of independent tasks plus an analysis:

- ``params``: the configuration schema (name -> :class:`Param`), validated on load;
- ``tasks(config)``: the task list, each a JSON-serialisable dict of coordinates that fully
  determines the task (its key in the result store is a hash of it and the package version);
- ``run_task(task, seed)``: a pure function of the task and its ``numpy.random.SeedSequence``
  (derived from the root seed and the task's coordinates, never from execution order), returning
  a dict of numpy arrays and scalars; it runs in worker processes, so the experiment object must
  be picklable;
- ``analyse(config, tasks, results)``: the arrays behind the figures and the claims, and
  optionally a third item, a dict of diagnostics written into ``summary.json``;
- ``plot(arrays, config, outdir)``: figures drawn from the stored arrays alone, saved with
  :func:`gaugedyn.plotting.save_figure`; returns figure names or ``(name, caption)`` pairs.

``config`` is the dict of validated parameters (the keys of ``params``). Optional attributes:
``captions`` (figure name -> caption) and ``definitions`` (the observables' definitions, recorded
in ``summary.json``). ``results`` reach ``analyse`` as read back from the result store: arrays as
numpy arrays, scalars as numpy scalars, other JSON values (``None``, strings, nested lists) as is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

CLAIM_KINDS = ("check", "finding", "measurement")


@dataclass(frozen=True)
class Claim:
    """A statement checked on measured numbers.

    ``kind="check"``: a property the package guarantees; a failed check fails the run.
    ``kind="finding"``: an empirical question whose answer is reported as measured (``passed``
    says whether it held); it never fails the run, so a finding cannot be tuned into a pass.
    ``kind="measurement"``: a quantity reported with its interval, with no verdict.
    """

    id: str
    statement: str
    measured: Any
    expected: Any
    tolerance: Any
    passed: bool
    kind: str = "check"

    def __post_init__(self):
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim kind {self.kind!r} is not one of {CLAIM_KINDS}")

    @property
    def fails_run(self) -> bool:
        return self.kind == "check" and not self.passed

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["passed"] = bool(self.passed)
        return _plain(d)


@dataclass(frozen=True)
class Param:
    """One configuration key: its type(s), default, value under ``--quick`` and validity check.

    ``check`` returns True for allowed values; ``allowed`` says in words what is allowed (it is
    quoted in the error message of a rejected value).
    """

    type: type | tuple[type, ...]
    default: Any
    quick: Any = None
    check: Callable[[Any], bool] | None = None
    allowed: str = ""
    help: str = ""


class Experiment:
    """Base class of declared experiments (see module docstring)."""

    name: str = ""
    description: str = ""
    params: dict[str, Param] = {}

    def tasks(self, config: dict) -> list[dict]:
        raise NotImplementedError

    def run_task(self, task: dict, seed: np.random.SeedSequence) -> dict:
        raise NotImplementedError

    def analyse(self, config: dict, tasks: list[dict], results: list[dict]):
        """Return ``(arrays: dict[str, np.ndarray], claims: list[Claim])``, optionally with a
        third item ``diagnostics: dict``."""
        raise NotImplementedError

    def plot(self, arrays: dict, config: dict, outdir) -> list[str]:
        """Draw figures from ``arrays`` into ``outdir``; return the figure base names (or
        ``(name, caption)`` pairs)."""
        return []


def _plain(x):
    """Numpy scalars and arrays to JSON-ready Python values."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x
