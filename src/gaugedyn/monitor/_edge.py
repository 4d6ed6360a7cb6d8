"""The edge-of-stability probe: Adam's preconditioned sharpness and active curvature in a live run.

Before a probed step ``t`` (after the step's gradients exist, before the optimizer moves), with
``g_t`` the optimizer's gradient (coupled weight decay included) and ``v_t = beta2 v_{t-1} +
(1 - beta2) g_t^2`` the second moment this step will use, the preconditioner is
``P = sqrt(v_t / (1 - beta2^t)) + eps`` for ``Adam``/``AdamW`` (ones for any other optimizer);
`gaugedyn.adam.preconditioned_sharpness()` then gives, for the probe loss ``loss_fn()``,

    S = lambda_max(P^-1/2 H P^-1/2)   (Lanczos on Hessian-vector products),
    kappa_g = d^T H d / d^T P d,  d = P^-1 grad(loss_fn),

and the probe reports ``lr S`` against the edge ``2 (1 + beta1) / (1 - beta1)`` (Adam) or
``2 (1 + momentum)`` (SGD). In full-batch training with ``loss_fn`` the training loss this is
exactly the measurement of the package's ``adam_edge`` experiment.

Cost per reading: one gradient graph of ``loss_fn`` and ``products`` Hessian-vector products
(each about two backward passes); ``tol`` and ``maxiter`` bound it, and the previous
eigenvector warm-starts the next reading. The probe runs under ``torch.random.fork_rng`` so the
training's random stream is unchanged; the model's mode (dropout, batch norm) is whatever
``loss_fn`` sets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .._errors import InputError


class EdgeProbe:
    """``loss_fn() -> tensor``: the probe loss on a fixed batch at the model's current
    parameters; ``every``: steps between readings; ``tol``, ``maxiter``, ``ncv``: the Lanczos
    relative accuracy, product budget and basis size (the overhead knobs); ``method``: the
    eigensolver (``"lanczos"`` in torch, or ``"arpack"``: `gaugedyn.adam.SHARPNESS_METHODS`)."""

    def __init__(
        self,
        loss_fn: Callable[[], torch.Tensor],
        *,
        every: int = 500,
        tol: float = 1e-3,
        maxiter: int = 300,
        ncv: int | None = None,
        method: str = "lanczos",
    ):
        if not callable(loss_fn):
            raise InputError(
                f"loss_fn={loss_fn!r} is not allowed; use a function loss_fn() -> scalar tensor"
            )
        if isinstance(every, bool) or int(every) != every or int(every) < 1:
            raise InputError(f"every={every!r} is not allowed; use an integer >= 1")
        if not 0.0 <= float(tol) < 1.0:
            raise InputError(f"tol={tol!r} is not allowed; use a number in [0, 1)")
        if int(maxiter) < 1:
            raise InputError(f"maxiter={maxiter!r} is not allowed; use an integer >= 1")
        from ..adam import SHARPNESS_METHODS

        if method not in SHARPNESS_METHODS:
            raise InputError(f"method={method!r} is not allowed; use one of {SHARPNESS_METHODS}")
        self.loss_fn, self.every, self.method = loss_fn, int(every), method
        self.tol, self.maxiter, self.ncv = float(tol), int(maxiter), ncv
        self._v0: torch.Tensor | None = None

    def settings(self) -> dict:
        return {
            "every": self.every,
            "tol": self.tol,
            "maxiter": self.maxiter,
            "ncv": self.ncv,
            "method": self.method,
        }

    @staticmethod
    def params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
        """The optimizer's parameters that require gradients, in group order."""
        return [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]

    @staticmethod
    def preconditioner(optimizer: torch.optim.Optimizer) -> torch.Tensor:
        """The flat ``P`` of the module doc, from the optimizer's state and ``.grad``
        (`gaugedyn.adam.adam_preconditioner()`; ones for other optimizers)."""
        if isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
            from ..adam import adam_preconditioner

            return adam_preconditioner(optimizer)
        return torch.cat([p.detach().new_ones(p.numel()) for p in EdgeProbe.params(optimizer)])

    @staticmethod
    def threshold(optimizer: torch.optim.Optimizer) -> float:
        """The edge of ``lr S`` for the optimizer's first group (module doc)."""
        group = optimizer.param_groups[0]
        if "betas" in group:
            from ..adam import edge_threshold

            return edge_threshold(float(group["betas"][0]))
        if isinstance(optimizer, torch.optim.SGD):
            return 2.0 * (1.0 + float(group.get("momentum", 0.0)))
        return math.nan

    def measure(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """One reading (called by the monitor before a probed step)."""
        from ..adam import preconditioned_sharpness

        params = self.params(optimizer)
        P = self.preconditioner(optimizer)
        devices = sorted({p.device.index or 0 for p in params if p.device.type == "cuda"})
        with torch.random.fork_rng(devices=devices):
            out = preconditioned_sharpness(
                self.loss_fn,
                params,
                P,
                v0=self._v0,
                tol=self.tol,
                maxiter=self.maxiter,
                ncv=self.ncv,
                method=self.method,
            )
        self._v0 = out.pop("eigenvector")
        lr = optimizer.param_groups[0]["lr"]
        lr = float(lr.item()) if torch.is_tensor(lr) else float(lr)
        out["lr_sharpness"] = lr * out["sharpness"]
        out["threshold"] = self.threshold(optimizer)
        return out
