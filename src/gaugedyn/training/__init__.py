"""Finite-sample training matched to the theory: batched torch networks with explicit ``(a, W)``.

Public names load lazily, so ``import gaugedyn.training`` does not import torch.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "_network": ["Network", "resolve_device"],
        "_trainer": ["TrainConfig", "train", "StepRecord", "choose_backend"],
        "_optim": ["AdamState"],
        "_result": ["TrainResult", "crossing_time"],
        "_online_ode": ["OnlineODE", "online_ode", "noise_term"],
        "_online_fast": ["train_online"],
        "_support": ["single_thread", "match_times"],
        "_digits": ["load_digits"],
        "_digits_networks": [
            "digits_network",
            "digits_inputs",
            "digits_tensors",
            "DigitsTransformer",
            "DIGITS_MODELS",
        ],
        "_auxiliary": [
            "JointLoss",
            "AuxiliaryProblem",
            "AuxiliaryODE",
            "two_teachers",
            "auxiliary_ode",
            "train_auxiliary",
            "task_errors",
            "error_rates",
            "error_decomposition",
            "error_gradients",
        ],
        "_auxiliary_fdt": ["stationary_state", "joint_optimum", "fdt_relation"],
        "_auxiliary_linear": ["LinearClosedForm"],
    },
)
