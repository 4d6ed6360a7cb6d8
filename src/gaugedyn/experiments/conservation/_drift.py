r"""The discrete drift of every recorded invariant under gradient descent, against the step size.

Full-batch GD ``P <- P - eta g`` changes a conserved quadratic invariant ``I`` by exactly
``eta^2 k(P)`` per step (``k`` the invariant's form on the gradient, ``|g_a|^2 - |g_w|^2`` for a
unit): the flow conserves ``I``, the discrete step does not, at second order. From one initial
model, GD runs at the step sizes ``eta_k = eta_0 2^-k``; for each group of
`gaugedyn.gauge.find_units()` recorded by `gaugedyn.gauge.GaugeRecorder`
(``exact_change=True``) the drift is the Euclidean norm over the group's units (Frobenius for the
matrix kinds) of the summed change ``sum_t Delta I_t``, read two ways:

- ``steps``: over the same number of steps ``S`` at every size. ``sum_t eta^2 k(P_t)`` with
  ``P_t`` within ``S eta_0`` of the start: the slope of ``log drift`` on ``log eta`` is 2 as
  ``eta -> 0`` (``2 + d log sum k / d log eta``, small while ``S eta_0`` is small).
- ``time``: over the same time ``T = S eta_0`` (``S 2^k`` steps), the drift per unit time
  ``eta <k>``: slope 1, the same second-order law read per unit time.

Per group the slope is the least-squares fit over the sizes; per unit too (units whose change
vanishes at some size, as a dead ReLU unit's does, are left out and counted). A group of kind
``frozen`` has no drift to scale (its gradient is zero up to rounding): its gradient is checked
to be rounding against the other groups', not fitted. Every other step's measured change is
checked against the recorder's prediction ``eta^2 k`` (`gap()`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

READINGS = ("steps", "time")
"""The two readings of "the drift scales as eta^2" (module docstring)."""

EXPECTED = {"steps": 2.0, "time": 1.0}
"""The slope each reading expects of a second-order drift."""

GD_TOL = 1e-10
"""Every step's change equals ``eta^2 k`` to this relative error (plus the float's resolution
of the invariant, `gap()`)."""


def gap(arr: dict, lr: float) -> float:
    """Largest ``|measured - predicted|`` of a group's per-step change over units and steps, in
    units of ``GD_TOL (eta^2 (|g_in|^2 + |g_out|^2) + |predicted|) + 4 eps (|in|^2 +
    |out|^2)`` (Frobenius norms for matrices); at most 1 passes."""
    change, pred = arr["change"], arr["predicted"]
    eps = np.finfo(np.float64).eps
    keys = ("in_sq", "out_sq", "g_in_sq", "g_out_sq")
    if change.ndim == 4:
        size = [np.linalg.norm(arr[k], axis=(-2, -1)) for k in keys]
        err = np.linalg.norm(change - pred, axis=(-2, -1))
        pnorm = np.linalg.norm(pred, axis=(-2, -1))
    else:
        size = [np.abs(arr[k]) for k in keys]
        err = np.abs(change - pred)
        pnorm = np.abs(pred)
    allowed = GD_TOL * (lr**2 * (size[2] + size[3]) + pnorm) + 4 * eps * (size[0] + size[1])
    # an entry that is zero and stays zero (a frozen bias initialised at zero) passes
    ratio = np.divide(err, allowed, out=np.where(err > 0, np.inf, 0.0), where=allowed > 0)
    return float(np.max(ratio))


def _loss(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 0.5 * ((net(x) - y) ** 2).reshape(x.shape[0], -1).sum(1).mean()


def drift_rates(
    make: Callable[[], torch.nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eta0: float,
    sizes: int,
    steps: int,
    reading: str,
) -> dict:
    """GD from ``make()`` (called once per size, each call the same initial model) on
    ``(x, y)`` at ``eta0 2^-k``, ``k < sizes``, read by ``reading`` (module docstring): per
    group, ``drift`` (per size), ``unit_drift`` (sizes x units), ``slope`` and per-unit
    ``unit_slopes``; the largest per-step prediction ``gap`` over groups and sizes, and
    ``frozen``, the largest gradient of a frozen entry relative to the largest of the other
    groups' (rounding: the prediction ``eta^2 |g|^2`` bounds no step of pure rounding)."""
    from gaugedyn.gauge import GaugeRecorder

    etas = eta0 * 2.0 ** -np.arange(sizes)
    T = steps * eta0
    per: dict[str, dict] = {}
    gaps, frozen = [], []
    kinds = {}
    for k, eta in enumerate(etas):
        net = make()
        opt = torch.optim.SGD(net.parameters(), lr=float(eta))
        rec = GaugeRecorder(net, opt, exact_change=True)
        n_steps = steps if reading == "steps" else steps * 2**k
        for _ in range(n_steps):
            opt.zero_grad()
            _loss(net, x, y).backward()
            opt.step()
        rec.detach()
        scale = max(
            float(np.sqrt(np.max(np.abs(rec.group(g.name)["g_in_sq"]))))
            for g in rec.groups
            if g.kind != "frozen"
        )
        for g in rec.groups:
            arr = rec.group(g.name)
            if g.kind == "frozen":  # its gradient is rounding: checked against the others'
                frozen.append(float(np.sqrt(np.max(arr["g_in_sq"]))) / scale)
            else:
                gaps.append(gap(arr, float(eta)))
            total = arr["change"].sum(0)
            unit = np.linalg.norm(total, axis=(-2, -1)) if total.ndim == 3 else np.abs(total)
            if reading == "time":
                unit = unit / T
            kinds[g.name] = g.kind
            d = per.setdefault(g.name, {"unit_drift": []})
            d["unit_drift"].append(unit)
    out: dict = {
        "eta": etas,
        "gap": float(np.max(gaps)),
        "frozen": float(np.max(frozen)) if frozen else 0.0,
        "groups": {},
    }
    logeta = np.log(etas)
    for name, d in per.items():
        unit = np.stack(d["unit_drift"])  # sizes x units
        drift = np.linalg.norm(unit, axis=1)
        rec_g: dict = {"kind": kinds[name], "drift": drift, "unit_drift": unit}
        if kinds[name] != "frozen" and np.all(drift > 0):
            rec_g["slope"] = float(np.polyfit(logeta, np.log(drift), 1)[0])
            live = np.all(unit > 0, axis=0)
            rec_g["unit_slopes"] = (
                np.polyfit(logeta, np.log(unit[:, live]), 1)[0] if live.any() else np.zeros(0)
            )
            rec_g["dead_units"] = int((~live).sum())
        out["groups"][name] = rec_g
    return out


def slope_control(eta0: float, sizes: int, steps: int, seed: int, broken: bool) -> dict:
    """The slope instrument on known answers, through `drift_rates()` (reading ``steps``):
    a scalar chain ``f(x) = a w x`` (``broken=False``), whose recorded ``a^2 - w^2`` changes by
    exactly ``eta^2 (g_a^2 - g_w^2)`` per step (slope 2); or ``Linear(4, 4) - LayerNorm(eps =
    1) - Linear(4, 1)`` (``broken=True``), whose recorded scale "invariant" ``|W|^2`` is no law
    (``eps`` breaks the scale symmetry at order one): it drifts at first order, slope 1."""
    gen = torch.Generator().manual_seed(seed)
    if broken:
        x = torch.randn(64, 4, generator=gen, dtype=torch.float64)
        y = torch.randn(64, 1, generator=gen, dtype=torch.float64)

        def make():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                return torch.nn.Sequential(
                    torch.nn.Linear(4, 4), torch.nn.LayerNorm(4, eps=1.0), torch.nn.Linear(4, 1)
                ).double()

        group = "0"
    else:
        x = torch.randn(32, 1, generator=gen, dtype=torch.float64)
        y = 2.0 * x + 0.1 * torch.randn(32, 1, generator=gen, dtype=torch.float64)

        def make():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                return torch.nn.Sequential(
                    torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
                ).double()

        group = "0"
    res = drift_rates(make, x, y, eta0=eta0, sizes=sizes, steps=steps, reading="steps")
    return {
        "slope": res["groups"][group]["slope"],
        "eta": res["eta"],
        "drift": res["groups"][group]["drift"],
    }
