"""One object that attaches gaugedyn's instruments to a live optimizer and streams their scalars.

Instruments (each optional, each with its own ``every``):

- ``adam``: `gaugedyn.adam.AdamRecorder` (the split of Adam's update into sign, lag and
  remainders), recorded at Adam steps ``t`` divisible by ``every``;
- ``gauge``: `gaugedyn.gauge.GaugeRecorder` (the gauge invariants of the model's units),
  at monitor steps divisible by ``every``;
- ``spikes``: `gaugedyn.adam.OnlineSpikeDetector` on the training loss (one sample every
  ``every`` steps: the detector's stride), the offline detector's statistic block by block;
- ``edge``: `EdgeProbe`, the preconditioned sharpness and the active
  curvature of a probe loss every ``every`` steps, by Lanczos on Hessian-vector products: read
  at the state after ``t`` steps, ``t`` divisible by ``every`` (``t = 0`` included), before step
  ``t + 1``, and written with that step's scalars.

Order within one ``optimizer.step()``: a closure passed to ``step`` is evaluated first (by the
monitor's first pre-hook, so every instrument sees this step's gradients: what Lightning's
automatic optimisation passes), then the edge probe and the recorders read the state before the
step; after it, the recorders record and the monitor collects their latest rows. The step's
scalars go to the sinks at `Monitor.end_step()` (at once after the step, or, with
``defer=True``, when a framework adapter has seen the step's last loss).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import torch

from .._errors import InputError
from ._edge import EdgeProbe
from ._keys import KEYS, adam_scalars, gauge_scalars, key, transition_scalar

DEFAULT_EVERY: dict[str, int] = {"adam": 10, "gauge": 10, "spikes": 1, "edge": 500}
"""Each instrument's default ``every`` (steps between readings): the recorders every 10th step,
the loss every step (it is free), the Lanczos probe every 500th (tens of Hessian-vector
products a reading)."""

Handler = Callable[..., Any]


def _options(name: str, value: Any, allowed: tuple[str, ...]) -> dict | None:
    """``None`` (off), or the instrument's keyword arguments with ``every`` filled in."""
    if value is False:
        return None
    if value is True or value is None:
        return {"every": DEFAULT_EVERY[name]}
    if isinstance(value, Mapping):
        bad = sorted(set(value) - set(allowed))
        if bad:
            raise InputError(
                f"{name}={dict(value)!r}: keys {bad} are not allowed; allowed: {', '.join(allowed)}"
            )
        return {"every": DEFAULT_EVERY[name], **value}
    raise InputError(
        f"{name}={value!r} is not allowed; use True, False, None or a dict of {', '.join(allowed)}"
    )


def _every(name: str, opts: dict) -> int:
    every = opts["every"]
    if isinstance(every, bool) or int(every) != every or int(every) < 1:
        raise InputError(f"{name} every={every!r} is not allowed; use an integer >= 1")
    return int(every)


def _is_adam(optimizer: Any) -> bool:
    return isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW)


class Monitor:
    """Attach instruments to ``optimizer`` (and ``model``) and stream scalars to ``sinks``.

    ``adam``, ``gauge``, ``spikes``: ``None`` (on where it applies: the Adam recorder for
    ``Adam``/``AdamW``, the gauge recorder when ``model`` has gauge units, the spike detector
    always), ``True`` (on; an error where it cannot apply), ``False`` (off), or a dict of the
    instrument's keyword arguments (``every`` and, for the recorders, their own: ``sample``,
    ``backend``, ``owner_cos``...; for ``spikes``: ``beta1``, ``beta2`` (default: the
    optimizer's first group's betas, or its momentum), ``floor``, ``ceiling``). ``edge``: an
    `EdgeProbe`, a probe loss function (``loss_fn() -> scalar tensor``, then an
    ``EdgeProbe(loss_fn)`` with defaults) or ``None``. ``every`` defaults to
    `DEFAULT_EVERY`. ``sinks``: objects with ``log(step, scalars)`` and ``close()``.

    Losses: a closure passed to ``step`` is observed automatically (``closure_loss=False``: not);
    otherwise call `observe_loss()` before ``optimizer.step()`` (once per micro-batch: the
    step's loss is their mean), or `take_step()` with the loss. ``step``: the monitor's count of ``optimizer.step()`` calls since attachment,
    plus ``start_step``. Events: `on()` registers a handler, `emit()` runs them between
    steps (`gaugedyn.monitor` has surgery handlers).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        model: torch.nn.Module | None = None,
        *,
        adam: Any = None,
        gauge: Any = None,
        spikes: Any = None,
        edge: EdgeProbe | Callable[[], torch.Tensor] | None = None,
        sinks: Iterable[Any] = (),
        start_step: int = 0,
        defer: bool = False,
        closure_loss: bool = True,
    ):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InputError(
                f"optimizer={type(optimizer).__name__} is not allowed; use a torch.optim.Optimizer"
            )
        if isinstance(optimizer, torch.optim.LBFGS):
            raise InputError(
                "optimizer=LBFGS is not allowed: it evaluates its closure more than once per step"
            )
        if model is not None and not isinstance(model, torch.nn.Module):
            raise InputError(
                f"model={type(model).__name__} is not allowed; use a torch.nn.Module or None"
            )
        self.optimizer, self.model = optimizer, model
        self.sinks = list(sinks)
        for s in self.sinks:
            if not (callable(getattr(s, "log", None)) and callable(getattr(s, "close", None))):
                raise InputError(
                    f"sink {type(s).__name__} is not allowed; a sink has "
                    "log(step, scalars) and close()"
                )
        self.step = int(start_step)
        self.defer = bool(defer)
        self.closure_loss = bool(closure_loss)
        self._handles = [optimizer.register_step_pre_hook(self._closure_first)]
        self.edge = self._make_edge(edge)
        if self.edge is not None:
            self._handles.append(optimizer.register_step_pre_hook(self._edge_pre))
        self.adam = self._make_adam(adam)
        self.gauge = self._make_gauge(gauge)
        self.spikes, self._spike_every = self._make_spikes(spikes)
        self._handles.append(optimizer.register_step_post_hook(self._post))
        self._handlers: dict[str, list[Handler]] = {}
        self._loss: list[float] = []
        self._pending: tuple[int, dict] | None = None
        self._edge_row: dict | None = None
        self._adam_seen = 0
        self._gauge_seen = 0
        self.history: dict[str, list] = {
            "loss_step": [],
            "loss": [],
            "spike_sample_step": [],
            "spike_rise": [],
            "spike_resolved": [],
            "edge_step": [],
            "edge_sharpness": [],
            "edge_active_curvature": [],
            "edge_products": [],
        }
        self.events: list[dict] = []
        self._counts = np.array(
            [sum(p.numel() for p in g["params"]) for g in optimizer.param_groups]
        )
        self._spike_count = 0
        self.attached = True
        for s in self.sinks:
            if hasattr(s, "monitor"):
                s.monitor = self

    # -- construction ------------------------------------------------------------------
    def _make_adam(self, spec: Any):
        opts = _options("adam", spec, ("every", "sample", "seed", "compile", "backend"))
        if opts is None or (spec is None and not _is_adam(self.optimizer)):
            return None
        _every("adam", opts)
        from ..adam import AdamRecorder

        return AdamRecorder(self.optimizer, **opts)

    def _make_gauge(self, spec: Any):
        opts = _options("gauge", spec, ("every", "owner_cos", "owner_units", "exact_change"))
        if opts is None or (spec is None and self.model is None):
            return None
        if self.model is None:
            raise InputError("gauge=True needs the model: Monitor(optimizer, model, ...)")
        _every("gauge", opts)
        from ..gauge import GaugeRecorder, find_units

        if spec is None and not find_units(self.model)[0]:
            return None
        return GaugeRecorder(self.model, self.optimizer, **opts)

    def _make_spikes(self, spec: Any):
        opts = _options("spikes", spec, ("every", "beta1", "beta2", "floor", "ceiling"))
        if opts is None:
            return None, 1
        every = _every("spikes", opts)
        group = self.optimizer.param_groups[0]
        if "betas" in group:
            b1, b2 = (float(b) for b in group["betas"])
        else:
            b1 = b2 = float(group.get("momentum", 0.0))
        b1, b2 = float(opts.get("beta1", b1)), float(opts.get("beta2", b2))
        from ..adam import FLOAT64_FLOOR, OnlineSpikeDetector

        floor, ceiling = (
            float(opts.get("floor", FLOAT64_FLOOR)),
            float(opts.get("ceiling", math.inf)),
        )
        return OnlineSpikeDetector(b1, b2, stride=every, floor=floor, ceiling=ceiling), every

    def _make_edge(self, spec: Any) -> EdgeProbe | None:
        if spec is None or spec is False:
            return None
        if isinstance(spec, EdgeProbe):
            return spec
        if callable(spec):
            return EdgeProbe(spec)
        raise InputError(
            f"edge={spec!r} is not allowed; use an EdgeProbe, a loss function "
            "loss_fn() -> tensor, or None"
        )

    # -- losses and events -------------------------------------------------------------
    def observe_loss(self, loss: torch.Tensor | float) -> None:
        """Note one (micro-batch) loss of the coming step (a scalar tensor or number)."""
        value = float(loss.detach()) if isinstance(loss, torch.Tensor) else float(loss)
        self._loss.append(value)

    def take_step(self, loss: torch.Tensor | float | None = None) -> None:
        """The plain loop's step: observe ``loss`` (if given), then ``optimizer.step()``."""
        if loss is not None:
            self.observe_loss(loss)
        self.optimizer.step()

    def on(self, event: str, handler: Handler) -> None:
        """Run ``handler(monitor, **info)`` whenever ``event`` is emitted (``"spike"`` is
        emitted by the spike detector with ``rise``, ``block`` and ``step``)."""
        if not callable(handler):
            raise InputError(f"handler={handler!r} is not allowed; use a callable")
        self._handlers.setdefault(str(event), []).append(handler)

    def emit(self, event: str, **info: Any) -> list:
        """Run the handlers of ``event`` now (between steps) and note it at the current step:
        ``gaugedyn/event/{event}`` is 1 in the next scalars; `events` keeps what each
        handler returned (a state record's ``to_dict()`` when it has one)."""
        out = [h(self, **info) for h in self._handlers.get(str(event), [])]
        records = [r.to_dict() if hasattr(r, "to_dict") else r for r in out]
        plain = {k: v for k, v in info.items() if isinstance(v, int | float | str | bool)}
        self.events.append(
            {"step": self.step, "event": str(event), "info": plain, "records": records}
        )
        scalars = {key("gaugedyn/event/{name}", name=str(event)): 1.0}
        if self._pending is not None:
            self._pending[1].update(scalars)
        else:
            self._write(self.step, scalars)
        return out

    # -- hooks -------------------------------------------------------------------------
    def _closure_first(self, optimizer, args, kwargs):
        # torch passes step's own arguments, the optimizer first
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if closure is None:
            return None
        with torch.enable_grad():
            loss = closure()
        if loss is not None and self.closure_loss:
            self.observe_loss(loss)
        rest = {k: v for k, v in kwargs.items() if k != "closure"}
        return tuple(args[:1]), {**rest, "closure": lambda: loss}

    def _edge_pre(self, optimizer, args, kwargs) -> None:
        if self.edge is not None and self.step % self.edge.every == 0:
            self._edge_row = self.edge.measure(optimizer)

    def _post(self, optimizer, args, kwargs) -> None:
        self.step += 1
        scalars: dict[str, float] = {}
        if self.adam is not None and len(self.adam) > self._adam_seen:
            self._adam_seen = len(self.adam)
            latest = self.adam.latest()
            scalars |= adam_scalars(latest)
            scalars |= transition_scalar(latest, self._counts)
        if self.gauge is not None and len(self.gauge) > self._gauge_seen:
            self._gauge_seen = len(self.gauge)
            for gi, g in enumerate(self.gauge.groups):
                scalars |= gauge_scalars(g.name, self.gauge.group(gi, last=True))
        if self._edge_row is not None:
            scalars |= self._edge_scalars(self._edge_row)
            self._edge_row = None
        self._pending = (self.step, scalars)
        if not self.defer:
            self.end_step()

    def _edge_scalars(self, row: dict) -> dict[str, float]:
        h = self.history
        h["edge_step"].append(self.step)
        for k in ("sharpness", "active_curvature", "products"):
            h[f"edge_{k}"].append(row[k])
        return {
            key(f"gaugedyn/edge/{k}"): float(row[k])
            for k in ("sharpness", "active_curvature", "lr_sharpness", "threshold", "products")
        }

    def end_step(self) -> None:
        """Close the step just taken: its loss (mean of the observed ones), the spike
        detector's sample, then the scalars to every sink. Called after each step, or by a
        framework adapter (``defer=True``) once it has seen the step's last loss."""
        if self._pending is None:
            return
        step, scalars = self._pending
        self._pending = None
        events: list[dict] = []
        if self._loss:
            loss = float(np.mean(self._loss))
            self._loss = []
            self.history["loss_step"].append(step)
            self.history["loss"].append(loss)
            scalars[key("gaugedyn/loss")] = loss
            if self.spikes is not None and step % self._spike_every == 0:
                scalars |= self._spike_sample(step, loss, events)
        self._write(step, scalars)
        for info in events:
            self.emit("spike", **info)

    def _spike_sample(self, step: int, loss: float, events: list) -> dict[str, float]:
        if loss < 0:
            raise InputError(
                f"loss={loss!r} at step {step}: the spike detector needs a "
                "positive loss; pass spikes=False"
            )
        with np.errstate(divide="ignore"):
            closed = self.spikes.update(float(np.log10(loss)) if loss == loss else math.nan)
        if closed is None:
            return {}
        h = self.history
        h["spike_sample_step"].append(step)
        h["spike_rise"].append(closed["rise"])
        h["spike_resolved"].append(closed["resolved"])
        self._spike_count += bool(closed["spike"])
        out = {
            key("gaugedyn/spike/spike"): float(closed["spike"]),
            key("gaugedyn/spike/count"): float(self._spike_count),
        }
        if closed["resolved"]:
            out[key("gaugedyn/spike/rise")] = closed["rise"]
        if closed["spike"]:
            events.append({"rise": closed["rise"], "block": closed["block"], "step": step})
        return out

    def _write(self, step: int, scalars: Mapping[str, float]) -> None:
        if scalars:
            for s in self.sinks:
                s.log(step, scalars)

    # -- the end -----------------------------------------------------------------------
    def detach(self, close_sinks: bool = True) -> None:
        """Flush the last step, remove every hook (the monitor's and the recorders'), and
        close the sinks; the recorded arrays stay readable (`export()`). Idempotent."""
        if not self.attached:
            return
        self.end_step()
        for h in self._handles:
            h.remove()
        self._handles = []
        for rec in (self.adam, self.gauge):
            if rec is not None:
                rec.detach()
        self.attached = False
        if close_sinks:
            for s in self.sinks:
                s.close()

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def export(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, metadata)`` for the result store: the recorders' own arrays prefixed
        ``adam_`` and ``gauge_``, and the monitor's ``loss``, ``spike_*`` (per closed block)
        and ``edge_*`` series with their steps."""
        arrays: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {
            "keys": dict(KEYS),
            "steps": self.step,
            "every": self.every(),
            "events": list(self.events),
        }
        for name, rec in (("adam", self.adam), ("gauge", self.gauge)):
            if rec is not None:
                a, m = rec.export()
                arrays |= {f"{name}_{k}": v for k, v in a.items()}
                meta[name] = m
        for k, v in self.history.items():
            arrays[k] = np.asarray(v, dtype=np.int64 if k.endswith("step") else float)
        if self.spikes is not None:
            meta["spikes"] = {
                "verdict": {k: v for k, v in self.spikes.verdict().items()},
                "beta1": self.spikes.beta1,
                "beta2": self.spikes.beta2,
                "stride": self.spikes.stride,
            }
        if self.edge is not None:
            meta["edge"] = self.edge.settings()
        return arrays, meta

    def every(self) -> dict[str, int | None]:
        """Each instrument's ``every`` (``None``: off)."""
        return {
            "adam": self.adam.every if self.adam is not None else None,
            "gauge": self.gauge.every if self.gauge is not None else None,
            "spikes": self._spike_every if self.spikes is not None else None,
            "edge": self.edge.every if self.edge is not None else None,
        }
