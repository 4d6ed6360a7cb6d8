"""The monitor as a Hugging Face ``TrainerCallback``.

The ``Trainer`` builds its optimizer inside ``train()`` and, in several versions, hands callbacks
``optimizer=None`` (the handler keeps the optimizer it was constructed with; transformers
#38181). `HFMonitor` therefore takes the optimizer from the hook's ``optimizer`` argument
when it is set and from the bound trainer otherwise (``HFMonitor.attach(trainer)`` binds and
adds it), at ``on_train_begin`` or, failing that, at the first ``on_step_begin``, and unwraps
accelerate's ``AcceleratedOptimizer`` to the torch optimizer whose ``step`` runs. Losses are read
from the model's own output (``output.loss`` / ``output["loss"]``) by a forward hook while the
model is in training mode, so with ``gradient_accumulation_steps = k`` the step's loss is the mean
of its ``k`` micro-batch losses. Mixed precision (``bf16``/``fp16``): the Trainer keeps float32
parameters and moments, so the split is recorded in float32, the optimizer's dtype; a step the
gradient scaler skips is not recorded. ``on_train_end`` detaches every hook and closes the sinks.
"""

from __future__ import annotations

from typing import Any

import torch

try:
    from transformers import TrainerCallback
except ImportError as err:
    raise ImportError(
        "gaugedyn.monitor.HFMonitor needs transformers; install it with pip "
        "install transformers accelerate (or gaugedyn[monitor])"
    ) from err

from .._errors import InputError
from ._monitor import Monitor


def unwrap(optimizer: Any) -> torch.optim.Optimizer:
    """The torch optimizer inside wrappers that keep it as ``.optimizer`` (accelerate's
    ``AcceleratedOptimizer``, Lightning's ``LightningOptimizer``)."""
    while isinstance(getattr(optimizer, "optimizer", None), torch.optim.Optimizer):
        optimizer = optimizer.optimizer
    return optimizer


def _loss_of(output: Any) -> Any:
    if isinstance(output, dict):
        return output.get("loss")
    return getattr(output, "loss", None)


class HFMonitor(TrainerCallback):
    """``trainer.add_callback(HFMonitor(**monitor_kwargs))`` or, to be safe where callbacks get
    ``optimizer=None``, ``HFMonitor.attach(trainer, **monitor_kwargs)``. After training,
    `monitor` holds the detached monitor."""

    def __init__(self, **monitor_kwargs: Any):
        for bad in ("defer", "closure_loss"):
            if bad in monitor_kwargs:
                raise InputError(f"{bad}= is set by HFMonitor itself")
        self.kwargs = monitor_kwargs
        self.trainer: Any = None
        self.monitor: Monitor | None = None
        self._hook: Any = None

    @classmethod
    def attach(cls, trainer: Any, **monitor_kwargs: Any) -> HFMonitor:
        """A callback bound to ``trainer`` and added to it."""
        cb = cls(**monitor_kwargs)
        cb.trainer = trainer
        trainer.add_callback(cb)
        return cb

    def _start(self, state: Any, model: Any, optimizer: Any) -> None:
        if self.monitor is not None:
            return
        if optimizer is None and self.trainer is not None:
            optimizer = self.trainer.optimizer
        if optimizer is None:
            return
        if model is None and self.trainer is not None:
            model = self.trainer.model
        self.monitor = Monitor(
            unwrap(optimizer), model, start_step=int(state.global_step), **self.kwargs
        )
        if model is not None:
            self._hook = model.register_forward_hook(self._forward)

    def _forward(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        loss = _loss_of(output)
        if module.training and self.monitor is not None and isinstance(loss, torch.Tensor):
            self.monitor.observe_loss(loss)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start(state, kwargs.get("model"), kwargs.get("optimizer"))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start(state, kwargs.get("model"), kwargs.get("optimizer"))
        if self.monitor is None:
            raise InputError(
                "HFMonitor found no optimizer (the Trainer passed optimizer=None "
                "and no trainer is bound); add it with HFMonitor.attach(trainer)"
            )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self.monitor is not None:
            self.monitor.detach()
