"""Declared experiments: configurations, task sweeps through an executor, a resumable result
store, claims checked on measured numbers, and figures drawn from stored arrays.

Each experiment lives in ``gaugedyn/experiments/<name>.py`` as ``EXPERIMENT`` (an
:class:`Experiment`); ``simulations/<name>.toml`` declares how to run it. From Python::

    from gaugedyn.experiments import load_config, execute

    cfg = load_config("simulations/clock.toml", quick=True)
    outcome = execute(cfg, "results/clock-quick", executor="serial")
    outcome.summary["claims"], outcome.arrays

``__all__`` is what a user calls: load or build a configuration, run it, read and redraw its
results, and, to write an experiment, ``Experiment``, ``Param``, ``Claim``, ``finding`` and the
``arrays.npz`` key helpers. ``resolve_experiment``, ``open_executor``, ``ResultStore`` and
``task_key`` stay importable here for the command line, the tests and the benchmarks.
"""

from ._arrays import caption_array as caption_array
from ._arrays import caption_key as caption_key
from ._arrays import caption_of as caption_of
from ._arrays import field_key as field_key
from ._config import RunConfig as RunConfig
from ._config import available_experiments as available_experiments
from ._config import load_config as load_config
from ._config import make_config as make_config
from ._config import resolve_experiment as resolve_experiment
from ._executor import ExecutorSpec as ExecutorSpec
from ._executor import open_executor as open_executor
from ._protocol import Claim as Claim
from ._protocol import Experiment as Experiment
from ._protocol import Param as Param
from ._protocol import finding as finding
from ._runner import RunOutcome as RunOutcome
from ._runner import execute as execute
from ._runner import load_arrays as load_arrays
from ._runner import redraw as redraw
from ._store import ResultStore as ResultStore
from ._store import task_key as task_key

__all__ = [
    "Claim",
    "ExecutorSpec",
    "Experiment",
    "Param",
    "RunConfig",
    "RunOutcome",
    "available_experiments",
    "caption_array",
    "caption_key",
    "caption_of",
    "execute",
    "field_key",
    "finding",
    "load_arrays",
    "load_config",
    "make_config",
    "redraw",
]
