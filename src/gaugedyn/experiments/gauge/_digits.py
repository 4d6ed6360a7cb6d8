r"""One run of `gauge_on_networks`: torch models on the digits data with a duplicated unit.

Three models, in float64 on the CPU, trained full-batch on the squared error to one-hot targets of
scikit-learn's shipped ``load_digits`` (pixels divided by 16; the first ``samples`` images):

- ``mlp``: ``Linear(64, h) - ReLU - Linear(h, h) - ReLU - Linear(h, 10)``;
- ``cnn``: ``Conv2d(1, c, 3, pad 1) - ReLU - MaxPool2d(2) - Conv2d(c, c, 3, pad 1) - ReLU -
  Flatten - Linear(16 c, 10)`` on the 8 x 8 images (``c = channels``);
- ``transformer``: the image's 8 rows as 8 tokens of 8 pixels, ``Linear(8, 16)`` embedding, one
  ``MultiheadAttention(16, 2 heads)`` with a residual, then ``Linear(16, 32) - ReLU -
  Linear(32, 10)`` per token, averaged over tokens (its gauge: the heads' ``(W_Q, W_K)`` and
  ``(W_V, W_O)`` invariants and the 32 ReLU units).

In the MLP and the CNN, unit (channel) ``source`` of the first layer (group ``"0"``) is the unit
active on the most inputs (a unit dead everywhere would give two dead copies) and ``target`` the
one active on the fewest. The target first loses its output (its outgoing weights are set to
zero), then `gaugedyn.gauge.duplicate_unit()` makes it a copy of the source sharing its
output, with the gauges ``(1/s, s)``: the source is a-heavy (``|w| / s``, ``|a| s``), the target
w-heavy. The function is unchanged by the whole operation (the zeroed unit contributed
nothing). `gaugedyn.gauge.GaugeRecorder` records every step with ``exact_change=True``;
the owner of the pair (fixed cluster ``owner_units={"0": [[source, target]]}``, feature frozen
at the start) is read by a second recorder without optimizer at the start and at the end.
"""

from __future__ import annotations

import numpy as np

A_HEAVY, W_HEAVY = 0, 1
"""Columns of the pair in the stored arrays: the a-heavy copy (source) and the w-heavy one."""
OPTIMIZERS = ("gd", "momentum", "adam")
GD_TOL = 1e-10
"""Full-batch GD: the change of every invariant per step equals ``eta^2 (|g_a|^2 - |g_w|^2)`` to
this relative error (plus the float's resolution of the invariant, see `gap()`)."""
MOMENTUM_TOL = 1e-8
"""SGD with momentum and weight decay: the recorder's exact recursion, to this relative error
(its carried term accumulates rounding over about ``1 / (1 - mu)`` steps)."""


def digits(samples: int):
    """``(x, y)``: the first ``samples`` digits images (pixels / 16) and one-hot targets,
    float64 tensors (`gaugedyn.training.digits_tensors()`)."""
    from ...training import digits_tensors

    return digits_tensors(samples)


MODELS = ("mlp", "cnn", "transformer")
"""The models; the owner runs use the first two (the transformer has no duplicated unit)."""


def network(model: str, hidden: int, channels: int):
    """A fresh float64 ``model`` (`gaugedyn.training.digits_network()`, the transformer at
    its default sizes) drawn from torch's global generator."""
    from ...training import digits_network

    return digits_network(model, hidden=hidden, channels=channels)


def inputs(model: str, x):
    """The digits ``x`` (``(N, 64)``) in the shape ``model`` reads."""
    from ...training import digits_inputs

    return digits_inputs(model, x)


def build(model: str, hidden: int, channels: int, gauge: float, torch_seed: int, x):
    """``(net, (source, target), change)``: the duplicated ``model`` (``mlp`` or ``cnn``), the
    pair's unit indices (a-heavy, w-heavy) and the largest relative change of its outputs on
    ``x`` made by the duplication and the gauges (zero up to rounding)."""
    import torch

    from ...gauge import duplicate_unit, find_units

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch_seed)
        net = network(model, hidden, channels)
    (group,) = [g for g in find_units(net)[0] if g.name == "0"]
    params = dict(net.named_parameters())
    with torch.no_grad():
        act = net[0](x) > 0
        active = act.double().mean([d for d in range(act.dim()) if d != 1])
        order = torch.argsort(active, descending=True, stable=True)
        source, target = int(order[0]), int(order[-1])
        for side in group.outputs:  # the target's contribution removed: the function is kept
            params[side.name].index_fill_(side.axis, side.indices([target]), 0.0)
        before = net(x)
        duplicate_unit(net, "0", source, target, gauges=(1.0 / gauge, gauge))
        change = float((net(x) - before).abs().max() / before.abs().max())
    return net, (source, target), change


def optimizer(name: str, net, task: dict):
    import torch

    if name == "gd":
        return torch.optim.SGD(net.parameters(), lr=task["lr_gd"])
    if name == "momentum":
        return torch.optim.SGD(
            net.parameters(),
            lr=task["lr_momentum"],
            momentum=task["momentum"],
            weight_decay=task["weight_decay"],
        )
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
    parts = units["in_sq"], units["out_sq"], units["g_in_sq"], units["g_out_sq"], pred
    if change.ndim == 4:  # attention pairs: d x d per head, their Frobenius norms
        size = [np.linalg.norm(v, axis=(-2, -1))[..., None, None] for v in parts]
    else:
        size = [np.abs(v) for v in parts]
    allowed = rel * (lr**2 * (size[2] + size[3]) + size[4]) + 4 * eps * (size[0] + size[1])
    return float(np.max(np.abs(change - pred) / allowed))


def _loss(net, x, y):
    return 0.5 * ((net(x) - y) ** 2).sum(1).mean()


def train_one(name: str, task: dict, torch_seed: int, stride: int) -> dict:
    """Train one seed of ``task["model"]`` with optimizer ``name``; the readings of the two
    copies (every ``stride``-th step), their final owner and the largest per-step prediction
    gap."""
    import torch

    from ...gauge import GaugeRecorder

    x, y = digits(task["samples"])
    x = inputs(task["model"], x)
    net, pair, func_change = build(
        task["model"], task["hidden"], task["channels"], task["gauge"], torch_seed, x
    )
    pair = list(pair)
    opt = optimizer(name, net, task)
    rec = GaugeRecorder(net, opt, exact_change=True)
    owner_rec = GaugeRecorder(net, owner_units={"0": [pair]})
    owner_rec.record()  # freezes the pair's feature at the start
    for _ in range(task["steps"]):
        opt.zero_grad()
        _loss(net, x, y).backward()
        opt.step()
    owner_rec.record()
    with torch.no_grad():
        final_loss = float(_loss(net, x, y))
    lr = task[f"lr_{name}"]
    rel = GD_TOL if name == "gd" else MOMENTUM_TOL
    gaps = [gap(rec.group(g.name), lr, rel) for g in rec.groups]
    units = rec.group("0")
    owner = int(owner_rec.group("0")["owner"][-1, pair[0]])
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


SLOPE_KINDS = {"mlp": ("rescale",), "cnn": ("rescale",), "transformer": ("qk", "vo")}
"""The groups whose drift the slope fit reads: every ReLU unit of the MLP and the CNN, the
attention heads' invariants of the transformer."""


def drift_rates(task: dict, torch_seed: int) -> dict:
    """Full-batch GD from one initial ``task["model"]`` at the step sizes
    ``etas = lr_gd 2^-k`` (``k = 0 .. slope_sizes - 1``), each for the same time
    ``T = slope_steps lr_gd`` (``slope_steps 2^k`` steps): the drift per unit time
    ``|I(T) - I(0)| / T`` (the Euclidean, for heads Frobenius, norm over the
    `SLOPE_KINDS` groups' units of the summed per-step change), the fitted slope of
    ``log drift`` on ``log eta`` (GD's drift is ``eta^2 k`` per step, so ``eta T <k>``
    over the time ``T``: slope 1 as ``eta -> 0``) and the largest per-step prediction gap
    (every group, `gap()` at `GD_TOL`)."""
    import torch

    from ...gauge import GaugeRecorder

    model = task["model"]
    x, y = digits(task["samples"])
    x = inputs(model, x)
    etas = task["lr_gd"] * 2.0 ** -np.arange(task["slope_sizes"])
    drift, gaps = [], []
    T = task["slope_steps"] * task["lr_gd"]
    for k, eta in enumerate(etas):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            net = network(model, task["hidden"], task["channels"])
        opt = torch.optim.SGD(net.parameters(), lr=float(eta))
        rec = GaugeRecorder(net, opt, exact_change=True)
        for _ in range(task["slope_steps"] * 2**k):
            opt.zero_grad()
            _loss(net, x, y).backward()
            opt.step()
        total = 0.0
        for g in rec.groups:
            arr = rec.group(g.name)
            if g.kind != "frozen":  # a frozen entry's gradient is rounding: eta^2 k is no bound
                gaps.append(gap(arr, float(eta), GD_TOL))
            if g.kind in SLOPE_KINDS[model]:
                total += float(np.sum(arr["change"].sum(0) ** 2))
        drift.append(np.sqrt(total) / T)
    rates = np.asarray(drift)
    slope = float(np.polyfit(np.log(etas), np.log(rates), 1)[0])
    return {"eta": etas, "drift": rates, "slope": slope, "gap": float(np.max(gaps))}
