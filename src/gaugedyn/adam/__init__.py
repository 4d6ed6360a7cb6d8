"""Adam's update split into sign, magnitude lag and remainder; a recorder for live optimizers.

``split_update``/``decompose_history``/``decompose_state`` are pure (numpy or torch);
``AdamRecorder`` attaches to ``torch.optim.Adam``/``AdamW``. Torch loads only on first use of
the recorder or the tasks, so ``import gaugedyn.adam`` stays light.
"""

from ._decomposition import PARTS as PARTS
from ._decomposition import RESIDUAL_PARTS as RESIDUAL_PARTS
from ._decomposition import AdamParts as AdamParts
from ._decomposition import adam_moments as adam_moments
from ._decomposition import decompose_history as decompose_history
from ._decomposition import decompose_state as decompose_state
from ._decomposition import part_norms as part_norms
from ._decomposition import shares as shares
from ._decomposition import smoothness as smoothness
from ._decomposition import split_update as split_update
from ._grid import TASK_KINDS as TASK_KINDS
from ._grid import TASKS as TASKS
from ._grid import cell_table as cell_table
from ._grid import protocol_statistics as protocol_statistics
from ._grid import run_measures as run_measures
from ._probe import READING_SUMS as READING_SUMS
from ._probe import READINGS as READINGS
from ._probe import AdamProbe as AdamProbe
from ._probe import StreamingSplit as StreamingSplit
from ._probe import reading_sums as reading_sums
from ._spikes import detect as detect_spikes
from ._spikes import horizon as spike_horizon
from ._stability import cubic_coefficients as cubic_coefficients
from ._stability import growth_rate as growth_rate
from ._stability import oscillating_state as oscillating_state
from ._stability import simulate_losses as simulate_losses
from ._synthetic import SIGNALS as SIGNALS
from ._synthetic import measured_vs_series as measured_vs_series
from ._synthetic import order_check as order_check
from ._synthetic import series_terms as series_terms
from ._synthetic import transition_fraction as transition_fraction

_LAZY = {
    "AdamRecorder": ("._recorder", "AdamRecorder"),
    "NORM_NAMES": ("._recorder", "NORM_NAMES"),
    "SAMPLE_FIELDS": ("._recorder", "SAMPLE_FIELDS"),
    "train_task": (".tasks", "train_task"),
}
_STATE = ("StateRecord", "select", "snapshot", "restore", "transplant", "exchange", "reset",
          "reset_step", "scalarise_v", "mean_adaptive_scale", "equalise_adaptive_scale",
          "weights", "update_norm", "rescale_update")
_LAZY |= {name: ("._state", name) for name in _STATE}  # Adam state surgery (torch, lazy)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod, __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PARTS", "RESIDUAL_PARTS", "AdamParts", "adam_moments", "decompose_history", "decompose_state",
    "part_norms", "shares", "smoothness", "split_update", "TASK_KINDS", "TASKS", "cell_table",
    "protocol_statistics", "run_measures", "READING_SUMS", "READINGS", "AdamProbe",
    "StreamingSplit", "reading_sums", "SIGNALS", "measured_vs_series",
    "order_check", "series_terms", "transition_fraction", *_LAZY,
    "detect_spikes", "spike_horizon", "cubic_coefficients", "growth_rate", "oscillating_state",
    "simulate_losses",
]
