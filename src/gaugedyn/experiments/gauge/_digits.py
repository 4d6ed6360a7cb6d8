r"""One run of :mod:`gauge_on_networks`: a ReLU MLP on the digits data with a duplicated unit.

The model is ``Linear(64, h) - ReLU - Linear(h, h) - ReLU - Linear(h, 10)`` in float64 on the
CPU, trained full-batch on the squared error to one-hot targets of scikit-learn's shipped
``load_digits`` (pixels divided by 16; the first ``samples`` images). Unit ``1`` of the first
hidden layer (group ``"0"``) are chosen on the data at initialisation: the *source*, the unit
active on the most images (a unit dead on every image would give two dead copies), and the
*target*, the unit active on the fewest. The target first loses its output (its outgoing weights
are set to zero), then :func:`gaugedyn.gauge.duplicate_unit` makes it a copy of the source sharing
its output, with the gauges ``(1/s, s)``: the source is a-heavy (``|w| / s``, ``|a| s``), the
target w-heavy. The function is unchanged by the whole operation (the zeroed unit contributed
nothing).
:class:`gaugedyn.gauge.GaugeRecorder` records every step with ``exact_change=True`` and the
fixed cluster ``owner_units={"0": [[source, target]]}``.
"""

from __future__ import annotations

import numpy as np

A_HEAVY, W_HEAVY = 0, 1
"""Columns of the pair in the stored arrays: the a-heavy copy (source) and the w-heavy one."""
OPTIMIZERS = ("gd", "momentum", "adam")
GD_TOL = 1e-10
"""Full-batch GD: the change of every invariant per step equals ``eta^2 (|g_a|^2 - |g_w|^2)`` to
this relative error (plus the float's resolution of the invariant, see :func:`gap`)."""
MOMENTUM_TOL = 1e-8
"""SGD with momentum and weight decay: the recorder's exact recursion, to this relative error
(its carried term accumulates rounding over about ``1 / (1 - mu)`` steps)."""


def digits(samples: int):
    """``(x, y)``: the first ``samples`` digits images (pixels / 16) and one-hot targets,
    float64 tensors."""
    import torch
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.as_tensor(data.data[:samples] / 16.0, dtype=torch.float64)
    y = torch.nn.functional.one_hot(torch.as_tensor(data.target[:samples]), 10).double()
    return x, y


def build(hidden: int, gauge: float, torch_seed: int, x):
    """``(model, (source, target), change)``: the duplicated model, the pair's unit indices
    (a-heavy, w-heavy) and the largest relative change of its outputs on ``x`` made by the
    duplication and the gauges (zero up to rounding)."""
    import torch

    from ...gauge import duplicate_unit

    nn = torch.nn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch_seed)
        net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                            nn.ReLU(), nn.Linear(hidden, 10)).double()
    with torch.no_grad():
        active = (net[0](x) > 0).double().mean(0)
        order = torch.argsort(active, descending=True, stable=True)
        source, target = int(order[0]), int(order[-1])
        net[2].weight[:, target] = 0.0  # the target's contribution removed: the function is kept
        before = net(x)
        duplicate_unit(net, "0", source, target, gauges=(1.0 / gauge, gauge))
        change = float((net(x) - before).abs().max() / before.abs().max())
    return net, (source, target), change


def optimizer(name: str, net, task: dict):
    import torch

    if name == "gd":
        return torch.optim.SGD(net.parameters(), lr=task["lr_gd"])
    if name == "momentum":
        return torch.optim.SGD(net.parameters(), lr=task["lr_momentum"],
                               momentum=task["momentum"], weight_decay=task["weight_decay"])
    return torch.optim.Adam(net.parameters(), lr=task["lr_adam"])


def gap(units: dict, lr: float, rel: float) -> float:
    """Largest ``|measured - predicted|`` of the invariant's change per step over units and
    steps, in units of the allowed error ``rel (eta^2 (|g_a|^2 + |g_w|^2) + |predicted|)
    + 4 eps (|a|^2 + |w|^2)`` (the second term is the float's resolution of the invariant,
    ``eps`` the float64 epsilon); at most 1 passes. NaN when there is no prediction."""
    change, pred = units["change"], units["predicted"]
    if not np.all(np.isfinite(pred)):
        return float("nan")
    eps = np.finfo(np.float64).eps
    allowed = (rel * (lr ** 2 * (units["g_in_sq"] + units["g_out_sq"]) + np.abs(pred))
               + 4 * eps * (units["in_sq"] + units["out_sq"]))
    return float(np.max(np.abs(change - pred) / allowed))


def train_one(name: str, task: dict, torch_seed: int, stride: int) -> dict:
    """Train one seed with optimizer ``name``; the readings of the two copies (every
    ``stride``-th step), their final owner and the largest per-step prediction gap."""
    import torch

    from ...gauge import GaugeRecorder

    x, y = digits(task["samples"])
    net, pair, func_change = build(task["hidden"], task["gauge"], torch_seed, x)
    pair = list(pair)
    opt = optimizer(name, net, task)
    rec = GaugeRecorder(net, opt, exact_change=True, owner_units={"0": [pair]})
    for _ in range(task["steps"]):
        opt.zero_grad()
        loss = 0.5 * ((net(x) - y) ** 2).sum(1).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        final_loss = float(0.5 * ((net(x) - y) ** 2).sum(1).mean())
    lr = task[f"lr_{name}"]
    rel = GD_TOL if name == "gd" else MOMENTUM_TOL
    gaps = [gap(rec.group(g.name), lr, rel) for g in rec.groups]
    units = rec.group("0")
    owner = int(units["owner"][-1, pair[0]])
    keep = slice(stride - 1, None, stride)
    return {
        "owner": pair.index(owner) if owner in pair else -1,  # 0: a-heavy, 1: w-heavy
        "gap": float(np.max(gaps)),  # NaN for Adam
        "function_change": func_change,
        "loss": final_loss,
        "delta0": units["invariant"][0, pair],  # read before step 1
        "change": np.cumsum(units["change"][:, pair], 0)[keep],
        "predicted": np.cumsum(units["predicted"][:, pair], 0)[keep],
        "mu_R": units["mu_R"][keep][:, pair],
        "mu_T": units["mu_T"][keep][:, pair],
        "mu_T0": units["mu_T"][0, pair],
        "step": np.arange(1, task["steps"] + 1)[keep],
    }
