"""The machinery of declared experiments, apart from the systems.

Configurations (``_config``), a resumable result store (``_store``), executors (``_executor``), the
sweep over tasks (``_sweep``), the run's stages (``_runner``), ``summary.json`` and
``arrays.npz`` (``_summary``, ``_arrays``), figures (``_drawing``), result folders
(``_folders``), the report (``_report``), what an experiment is (``_protocol``: ``Experiment``,
``Param``, ``Claim``, ``finding``), its known-answer controls (``_controls``: ``Control``,
``Reading``), its declared set-up space (``_space``: ``Choice``), the multiverse over that space
(``_multiverse``, its figures ``_curves``) and the command line (``_cli``: run, reproduce,
multiverse, plot).

The layout's rule: the library (`gaugedyn.symbolic`, `theory`,
`training`, `adam`, `stats`,
`plotting`) holds engines a user applies to their own models (the Adam state
toolkit, the recorder, the 1-D stability map, the spike detector); a system folder under
`gaugedyn.experiments` holds what one study needs (its experiments, models, protocols,
analysis and figures); the harness holds only machinery. Systems import the harness's types and
the library; the harness learns of a system from its declaration (``system.toml`` in its folder,
read as data: `DECLARATIONS`), finds an experiment by its registered name
(`EXPERIMENTS`, module names as strings) and never imports a system otherwise; the library
imports neither.
"""

from ._arrays import caption_array as caption_array
from ._arrays import caption_key as caption_key
from ._arrays import caption_of as caption_of
from ._arrays import field_key as field_key
from ._arrays import load_arrays as load_arrays
from ._audit_plan import expected_wrong as expected_wrong
from ._audit_plan import read_data as read_audit
from ._config import RunConfig as RunConfig
from ._config import available_experiments as available_experiments
from ._config import load_config as load_config
from ._config import make_config as make_config
from ._config import parse_override as parse_override
from ._config import resolve_experiment as resolve_experiment
from ._config import show as show
from ._controls import Control as Control
from ._controls import Reading as Reading
from ._controls import declared_controls as declared_controls
from ._controls import run_controls as run_controls
from ._drawing import redraw as redraw
from ._executor import ExecutorSpec as ExecutorSpec
from ._executor import open_executor as open_executor
from ._multiverse import run_multiverse as run_multiverse
from ._protocol import CLAIM_KINDS as CLAIM_KINDS
from ._protocol import Claim as Claim
from ._protocol import Experiment as Experiment
from ._protocol import Param as Param
from ._protocol import combined_verdict as combined_verdict
from ._protocol import configuration_label as configuration_label
from ._protocol import finding as finding
from ._protocol import judged as judged
from ._protocol import labelled as labelled
from ._protocol import provisional as provisional
from ._protocol import reading_record as reading_record
from ._registry import DECLARATIONS as DECLARATIONS
from ._registry import EXPERIMENTS as EXPERIMENTS
from ._registry import SYSTEM_NAMES as SYSTEM_NAMES
from ._registry import SYSTEMS as SYSTEMS
from ._registry import System as System
from ._registry import parse_system as parse_system
from ._registry import read_system as read_system
from ._report import FINDING_WORDS as FINDING_WORDS
from ._report import fmt as fmt
from ._report import robustness_text as robustness_text
from ._report import verdict_word as verdict_word
from ._runner import RunOutcome as RunOutcome
from ._runner import execute as execute
from ._space import Choice as Choice
from ._space import specifications as specifications
from ._store import ResultStore as ResultStore
from ._store import atomic_write as atomic_write
from ._store import task_key as task_key
from ._store import write_strict_json as write_strict_json
from ._verdicts import checked as checked
from ._verdicts import deterministic as deterministic

__all__ = [
    "FINDING_WORDS",
    "fmt",
    "robustness_text",
    "verdict_word",
    "DECLARATIONS",
    "EXPERIMENTS",
    "SYSTEMS",
    "SYSTEM_NAMES",
    "CLAIM_KINDS",
    "Choice",
    "Claim",
    "Control",
    "Reading",
    "declared_controls",
    "run_controls",
    "run_multiverse",
    "specifications",
    "ExecutorSpec",
    "Experiment",
    "Param",
    "ResultStore",
    "RunConfig",
    "RunOutcome",
    "atomic_write",
    "write_strict_json",
    "available_experiments",
    "caption_array",
    "caption_key",
    "caption_of",
    "configuration_label",
    "checked",
    "combined_verdict",
    "deterministic",
    "execute",
    "field_key",
    "finding",
    "expected_wrong",
    "judged",
    "read_audit",
    "reading_record",
    "labelled",
    "load_arrays",
    "load_config",
    "make_config",
    "open_executor",
    "parse_override",
    "provisional",
    "redraw",
    "resolve_experiment",
    "show",
    "task_key",
    "System",
    "parse_system",
    "read_system",
]
