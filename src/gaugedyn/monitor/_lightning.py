"""The monitor as a PyTorch Lightning ``Callback``.

Lightning builds the optimizer (``configure_optimizers``) during ``fit`` and, with automatic
optimisation, passes a closure (forward, backward, gradient clipping) to ``optimizer.step``.
`LightningMonitor` attaches a `Monitor` to the optimizer at
``on_train_start`` (after it is built), whose first step pre-hook evaluates the closure, so every
instrument sees the step's gradients after clipping and unscaling. Losses are read from
``training_step``'s output at ``on_train_batch_end`` (every micro-batch, times ``k`` since
Lightning hands it divided by ``accumulate_grad_batches = k``: the step's loss is the mean of its
``k`` losses) and the step's
scalars are written then. Mixed precision: Lightning keeps the parameters and Adam's moments in
float32 under ``16-mixed``/``bf16-mixed``, so the split is recorded in float32 (the optimizer's
dtype); under ``*-true`` precisions in the parameters' own dtype. A step skipped by the AMP scaler
is not recorded (its losses join the next step's). ``on_train_end`` (and an exception) detaches
every hook and closes the sinks.
"""

from __future__ import annotations

from typing import Any

import torch

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the standalone package
    try:
        from pytorch_lightning.callbacks import Callback  # type: ignore[assignment]
    except ImportError as err:
        raise ImportError(
            "gaugedyn.monitor.LightningMonitor needs PyTorch Lightning; install "
            "it with pip install lightning (or gaugedyn[monitor])"
        ) from err

from .._errors import InputError
from ._monitor import Monitor


class LightningMonitor(Callback):
    """``Trainer(callbacks=[LightningMonitor(**monitor_kwargs)])``: the keyword arguments of
    `Monitor` (instruments, ``sinks``, ``edge``...). ``optimizer``
    picks one of several optimizers by index. After ``fit``, `monitor` holds the
    detached monitor (its arrays: ``monitor.export()``)."""

    def __init__(self, optimizer: int = 0, **monitor_kwargs: Any):
        super().__init__()
        for bad in ("defer", "closure_loss"):
            if bad in monitor_kwargs:
                raise InputError(f"{bad}= is set by LightningMonitor itself")
        self.index = int(optimizer)
        self.kwargs = monitor_kwargs
        self.monitor: Monitor | None = None

    def on_train_start(self, trainer: Any, pl_module: torch.nn.Module) -> None:
        opts = list(trainer.optimizers)
        if not 0 <= self.index < len(opts):
            raise InputError(
                f"optimizer={self.index} is not allowed; the trainer built {len(opts)} optimizer(s)"
            )
        self.monitor = Monitor(
            opts[self.index],
            pl_module,
            defer=True,
            closure_loss=False,
            start_step=int(trainer.global_step),
            **self.kwargs,
        )

    def on_train_batch_end(
        self, trainer: Any, pl_module: torch.nn.Module, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.monitor is None:
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if isinstance(loss, torch.Tensor | float):
            # Lightning hands the loss divided by accumulate_grad_batches (what it backpropagates)
            self.monitor.observe_loss(float(loss) * int(trainer.accumulate_grad_batches))
        self.monitor.end_step()

    def on_train_end(self, trainer: Any, pl_module: torch.nn.Module) -> None:
        if self.monitor is not None:
            self.monitor.detach()

    def on_exception(
        self, trainer: Any, pl_module: torch.nn.Module, exception: BaseException
    ) -> None:
        self.on_train_end(trainer, pl_module)
