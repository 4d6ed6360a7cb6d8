"""The scalars a `Monitor` streams: one key and one definition each.

Every sink receives exactly these keys (``{group}`` is a gauge group's name from
`gaugedyn.gauge.find_units()`); `KEYS` is the table the docs print and the tests read.
The functions turn an instrument's latest record into its scalars, with the recorders' own
definitions (``gaugedyn.adam.shares``, the gauge recorder's fields).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

PREFIX = "gaugedyn"

KEYS: dict[str, str] = {
    "gaugedyn/loss": "the step's training loss: the mean of the losses observed since the "
    "previous optimizer step (micro-batches of an accumulated step together)",
    "gaugedyn/adam/sign_share": "|sign|_2 / (|sign|_2 + |lag|_2 + |residual|_2), the norms of "
    "every parameter group combined in quadrature "
    "(AdamRecorder.shares(group=None))",
    "gaugedyn/adam/lag_share": "|lag|_2 / (|sign|_2 + |lag|_2 + |residual|_2), pooled as above",
    "gaugedyn/adam/residual_share": "|residual|_2 / (|sign|_2 + |lag|_2 + |residual|_2), "
    "pooled as above",
    "gaugedyn/adam/update_norm": "|u|_2 of u = m^/(sqrt(v^)+eps) over every group (the "
    "update before the learning rate)",
    "gaugedyn/adam/transition_frac": "fraction of coordinates with sign(w^) != sign(g), over "
    "every group",
    "gaugedyn/gauge/{group}/invariant_mean": "mean over the group's units of the invariant I "
    "(rescaling: |a|^2 - |w|^2; attention pairs: the "
    "trace of the d x d invariant)",
    "gaugedyn/gauge/{group}/invariant_std": "standard deviation over units of I (as above)",
    "gaugedyn/gauge/{group}/change_rms": "root mean square over units of the step's change of I",
    "gaugedyn/gauge/{group}/predicted_rms": "root mean square over units of the predicted "
    "change (SGD rules only; absent when measured only)",
    "gaugedyn/spike/rise": "at the close of each detector block: the block's median log10 "
    "loss minus the settled level before it (decades; absent when the level "
    "lies at the floor)",
    "gaugedyn/spike/spike": "1 when the block just closed starts a spike (rise >= the rise "
    "threshold over a resolved level, the block before held none), else 0",
    "gaugedyn/spike/count": "spikes so far",
    "gaugedyn/edge/sharpness": "S = lambda_max(P^-1/2 H P^-1/2) of the probe loss, P = "
    "sqrt(v^_t) + eps with this step's gradient (ones for other "
    "optimizers), by Lanczos",
    "gaugedyn/edge/active_curvature": "kappa_g = d^T H d / d^T P d, d = P^-1 g (g: the probe "
    "loss's gradient)",
    "gaugedyn/edge/lr_sharpness": "lr S, the first parameter group's learning rate",
    "gaugedyn/edge/threshold": "the edge of lr S: 2 (1 + beta1) / (1 - beta1) for Adam, "
    "2 (1 + momentum) for SGD",
    "gaugedyn/edge/products": "Hessian-vector products the probe took (its cost)",
    "gaugedyn/event/{name}": "1 at a step where the event (a resampling, a spike...) ran its "
    "surgery",
}
"""Every streamed key and its definition."""


def key(template: str, **fields: str) -> str:
    """A key of `KEYS` with its fields filled (``KeyError`` for an unknown template)."""
    if template not in KEYS:
        raise KeyError(template)
    return template.format(**fields)


def adam_scalars(latest: Mapping) -> dict[str, float]:
    """The ``gaugedyn/adam/*`` scalars of an `AdamRecorder.latest()` record."""
    from ..adam import NORM_NAMES, shares

    norms = np.asarray(latest["norms"], dtype=float)
    pooled = np.sqrt((norms**2).sum(axis=0))
    by = {name: pooled[i] for i, name in enumerate(NORM_NAMES)}
    sh = shares(by)
    out = {key(f"gaugedyn/adam/{k}_share"): float(sh[k]) for k in ("sign", "lag", "residual")}
    out[key("gaugedyn/adam/update_norm")] = float(by["update"])
    return out


def transition_scalar(latest: Mapping, counts: np.ndarray) -> dict[str, float]:
    """``gaugedyn/adam/transition_frac`` over every group (weighted by coordinates)."""
    frac = np.asarray(latest["transition_frac"], dtype=float)
    total = float(np.sum(counts))
    value = float(frac @ counts / total) if total > 0 else math.nan
    return {key("gaugedyn/adam/transition_frac"): value}


def _per_unit(x: np.ndarray) -> np.ndarray:
    """One scalar per unit: the value itself, or the trace of a ``d x d`` block."""
    x = np.asarray(x, dtype=float)[0]
    return np.trace(x, axis1=-2, axis2=-1) if x.ndim == 3 else x


def gauge_scalars(name: str, fields: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The ``gaugedyn/gauge/{group}/*`` scalars of one group's last record
    (`GaugeRecorder.group()` with ``last=True``)."""
    inv = _per_unit(fields["invariant"])
    out = {
        key("gaugedyn/gauge/{group}/invariant_mean", group=name): float(inv.mean()),
        key("gaugedyn/gauge/{group}/invariant_std", group=name): float(inv.std()),
    }
    change = _per_unit(fields["change"])
    if np.isfinite(change).all():
        out[key("gaugedyn/gauge/{group}/change_rms", group=name)] = float(
            np.sqrt(np.mean(change**2))
        )
    pred = _per_unit(fields["predicted"])
    if np.isfinite(pred).all():
        out[key("gaugedyn/gauge/{group}/predicted_rms", group=name)] = float(
            np.sqrt(np.mean(pred**2))
        )
    return out
