"""The declared experiments, one folder per system; the machinery that runs them is
`gaugedyn.harness`.

Each system folder declares itself once, in its ``system.toml``: the paper it reproduces, its
experiments, its documentation page (`gaugedyn.harness.DECLARATIONS`; the papers, in the
order of the tables, are `gaugedyn.papers.PAPERS`). Each experiment is an ``EXPERIMENT``
(a `gaugedyn.harness.Experiment`) in a module of its system's folder named in that
declaration (`gaugedyn.harness.EXPERIMENTS`); ``simulations/<name>.toml``
declares how to run it. The harness's user-facing names are re-exported here, so from Python::

    from gaugedyn.experiments import load_config, execute

    cfg = load_config("simulations/clock.toml", quick=True)
    outcome = execute(cfg, "results/clock-quick", executor="serial")
    outcome.summary["claims"], outcome.arrays
"""

from ..harness import Choice as Choice
from ..harness import Claim as Claim
from ..harness import Control as Control
from ..harness import ExecutorSpec as ExecutorSpec
from ..harness import Experiment as Experiment
from ..harness import Param as Param
from ..harness import Reading as Reading
from ..harness import ResultStore as ResultStore
from ..harness import RunConfig as RunConfig
from ..harness import RunOutcome as RunOutcome
from ..harness import available_experiments as available_experiments
from ..harness import caption_array as caption_array
from ..harness import caption_key as caption_key
from ..harness import caption_of as caption_of
from ..harness import execute as execute
from ..harness import field_key as field_key
from ..harness import finding as finding
from ..harness import load_arrays as load_arrays
from ..harness import load_config as load_config
from ..harness import make_config as make_config
from ..harness import open_executor as open_executor
from ..harness import redraw as redraw
from ..harness import resolve_experiment as resolve_experiment
from ..harness import task_key as task_key

__all__ = [
    "Choice",
    "Claim",
    "Control",
    "Reading",
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
