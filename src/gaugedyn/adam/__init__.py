"""Adam's update split into sign, magnitude lag and remainder; a recorder for live optimizers.

``split_update``/``decompose_history``/``decompose_state`` are pure (numpy or torch);
``AdamRecorder`` attaches to ``torch.optim.Adam``/``AdamW``; ``batched_adam_step`` is Adam on
many copies with per-copy betas and learning rates; ``preconditioned_sharpness`` and
``dense_sharpness`` measure the curvature Adam's preconditioner sees; the 1-D Adam maps, their
oscillating state and stability boundary, the spike detector (offline, ``detect_spikes``, and
online, ``OnlineSpikeDetector``) and the effective exponent of a loss along an update
(``effective_exponent``) serve the stability theory.
Torch loads only on first use of a torch name, so ``import gaugedyn.adam`` stays light.
"""

from .._lazy import attach
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
from ._line import WALL_EXPONENT as WALL_EXPONENT
from ._line import core_wall as core_wall
from ._line import effective_exponent as effective_exponent
from ._notify import StateChange as StateChange
from ._notify import notify_state as notify_state
from ._notify import watch_state as watch_state
from ._probe import READING_SUMS as READING_SUMS
from ._probe import READINGS as READINGS
from ._probe import AdamProbe as AdamProbe
from ._probe import StreamingSplit as StreamingSplit
from ._probe import reading_sums as reading_sums
from ._spikes import DEFAULT as SPIKE_SAMPLING  # noqa: F401 (in __all__ through attach)
from ._spikes import DEFINITION as SPIKE_DEFINITION  # noqa: F401 (in __all__ through attach)
from ._spikes import FLOAT32_FLOOR as FLOAT32_FLOOR
from ._spikes import FLOAT64_FLOOR as FLOAT64_FLOOR
from ._spikes import MIN_HORIZONS as SPIKE_MIN_HORIZONS  # noqa: F401 (in __all__ through attach)
from ._spikes import RISE_DECADES as SPIKE_RISE_DECADES  # noqa: F401 (in __all__ through attach)
from ._spikes import Blocks as SpikeBlocks  # noqa: F401 (in __all__ through attach)
from ._spikes import OnlineSpikeDetector as OnlineSpikeDetector
from ._spikes import Sampling as SpikeSampling  # noqa: F401 (in __all__ through attach)
from ._spikes import block_rises as spike_block_rises  # noqa: F401 (in __all__ through attach)
from ._spikes import block_size as spike_block_size  # noqa: F401 (in __all__ through attach)
from ._spikes import block_statistics as spike_block_statistics  # noqa: F401 (through attach)
from ._spikes import detect as detect_spikes  # noqa: F401 (in __all__ through attach)
from ._spikes import detect_blocks as detect_spike_blocks  # noqa: F401 (in __all__ through attach)
from ._spikes import horizon as spike_horizon  # noqa: F401 (in __all__ through attach)
from ._spikes import level_blocks as spike_level_blocks  # noqa: F401 (in __all__ through attach)
from ._spikes import steps_needed as spike_steps_needed  # noqa: F401 (in __all__ through attach)
from ._stability import cubic_coefficients as cubic_coefficients
from ._stability import growth_rate as growth_rate
from ._stability import loss_floor as loss_floor
from ._stability import multipliers as multipliers
from ._stability import oscillating_state as oscillating_state
from ._stability import series_blocks as series_blocks
from ._stability import simulate_block_sets as simulate_block_sets
from ._stability import simulate_blocks as simulate_blocks
from ._stability import simulate_losses as simulate_losses
from ._stability import simulated_boundary as simulated_boundary
from ._stability import simulated_growth_rate as simulated_growth_rate
from ._stability import spiral_ratio as spiral_ratio
from ._stability import theory_boundary as theory_boundary
from ._synthetic import SIGNALS as SIGNALS
from ._synthetic import measured_vs_series as measured_vs_series
from ._synthetic import order_check as order_check
from ._synthetic import series_terms as series_terms
from ._synthetic import transition_fraction as transition_fraction

_EAGER = [
    "PARTS",
    "RESIDUAL_PARTS",
    "AdamParts",
    "adam_moments",
    "decompose_history",
    "decompose_state",
    "part_norms",
    "shares",
    "smoothness",
    "split_update",
    "WALL_EXPONENT",
    "core_wall",
    "effective_exponent",
    "StateChange",
    "notify_state",
    "watch_state",
    "READING_SUMS",
    "READINGS",
    "AdamProbe",
    "StreamingSplit",
    "reading_sums",
    "SIGNALS",
    "measured_vs_series",
    "order_check",
    "series_terms",
    "transition_fraction",
    "detect_spikes",
    "OnlineSpikeDetector",
    "spike_steps_needed",
    "spike_horizon",
    "SPIKE_DEFINITION",
    "SPIKE_MIN_HORIZONS",
    "SpikeBlocks",
    "SPIKE_SAMPLING",
    "SpikeSampling",
    "spike_block_rises",
    "spike_block_size",
    "spike_block_statistics",
    "spike_level_blocks",
    "detect_spike_blocks",
    "SPIKE_RISE_DECADES",
    "FLOAT32_FLOOR",
    "FLOAT64_FLOOR",
    "cubic_coefficients",
    "growth_rate",
    "loss_floor",
    "multipliers",
    "oscillating_state",
    "series_blocks",
    "simulate_block_sets",
    "simulate_blocks",
    "simulate_losses",
    "simulated_boundary",
    "simulated_growth_rate",
    "spiral_ratio",
    "theory_boundary",
]
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "_recorder": ["AdamRecorder", "NORM_NAMES", "SAMPLE_FIELDS"],
        # Adam on many copies at once (torch, lazy)
        "_batched": [
            "OP_ORDERS",
            "OP_ORDER_FACTORS",
            "AdamFactors",
            "AdamStep",
            "adam_factors",
            "batched_adam_step",
        ],
        # the curvature the preconditioner sees (torch, lazy)
        "_sharpness": [
            "SHARPNESS_METHODS",
            "adam_preconditioner",
            "edge_threshold",
            "hessian_vector_product",
            "lanczos_top",
            "preconditioned_sharpness",
            "dense_hessian",
            "dense_sharpness",
        ],
        # Adam state surgery (torch, lazy)
        "_state": [
            "StateRecord",
            "select",
            "snapshot",
            "restore",
            "transplant",
            "exchange",
            "reset",
            "reset_step",
            "scalarise_v",
            "mean_adaptive_scale",
            "equalise_adaptive_scale",
            "weights",
            "update_norm",
            "rescale_update",
        ],
    },
    eager=_EAGER,
)
