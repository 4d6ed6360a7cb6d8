r"""The symmetries of a torch model's parameters: homogeneous units and attention pairs.

A **rescaling unit** ``j`` of a layer is a producer's output ``j`` (a ``Linear`` row or a
``Conv`` output channel with its bias, or a normalisation layer's affine ``(gamma_j, beta_j)``)
whose only path to the rest of the network runs through operations that are channel-wise and
positively homogeneous of degree one (ReLU, leaky ReLU, ``abs``, max/average pooling, dropout,
identity, ``flatten`` after a convolution) into the next ``Linear``/``Conv`` (the consumer). Then

$$
(w_j, b_j) \mapsto c\,(w_j, b_j),\qquad a_j \mapsto a_j / c\qquad (c > 0)
$$

leaves the function unchanged, with ``a_j`` the consumer's weights that read unit ``j`` (a column
of a ``Linear``; ``s`` consecutive columns when a ``flatten`` of ``s`` positions per channel lies
between; an input-channel slice of a ``Conv``). Its gauge is
$\delta_j = |a_j|^2 - |w_j|^2 - b_j^2$.

A **scale unit** is a producer followed by a normalisation layer (``BatchNorm``: one unit per
channel; ``LayerNorm``: the whole layer as one unit): $w \to c\,w$ alone leaves the function
unchanged (exactly in training mode with ``eps = 0``; ``eps`` breaks it slightly), so the
gradient is orthogonal to ``w`` and only $|w|^2$ is tracked; it is a scale symmetry, not a
rescaling one.

An **attention pair** of a ``torch.nn.MultiheadAttention`` head ``h`` (``d`` = head dimension):
$(W_Q^h, W_K^h)$ with the symmetry $W_Q^h \to A W_Q^h$, $W_K^h \to A^{-T} W_K^h$ and
$(W_V^h, W_O^h)$ with $W_V^h \to A W_V^h$, $W_O^h \to W_O^h A^{-1}$ (``A`` any invertible
$d \times d$; torch's row-major ``W x`` convention, bias rows appended to ``W_Q, W_K, W_V``). The
conserved matrices are $W_Q W_Q^\top - W_K W_K^\top$ and $W_V W_V^\top - W_O^\top W_O$
($d \times d$), the $W_Q^\top W_Q - W_K^\top W_K$ of the ``x W`` convention. Modules with
``bias_k``/``bias_v`` (extra raw keys the symmetry does not move) are skipped and listed. A
`GroupedQueryAttention` gives the same two kinds with one unit per
key/value head: its ``g`` query heads share the unit
($\sum_i W_{Q,i} W_{Q,i}^\top - W_K W_K^\top$ and $W_V W_V^\top - \sum_i W_{O,i}^\top W_{O,i}$).

A **linear pair** (kind ``gl``) is a ``Linear`` (``Conv``) producer read directly, through
identities only, by the next ``Linear`` (``Conv``): its ``n`` outputs carry the whole
$\mathrm{GL}(n)$, $(W_1, b_1) \to A (W_1, b_1)$, $W_2 \to W_2 A^{-1}$, whose conserved matrix is
$W_1 W_1^\top + b_1 b_1^\top - W_2^\top W_2$ ($n \times n$; its diagonal is minus the rescaling
units' $\delta$, which are listed too). Such groups come after all others, one unit per pair.

A **frozen** entry (kind ``frozen``) is a parameter entry no output depends on, so its gradient
vanishes and gradient flow conserves it (the recorder tracks its square): the bias of a
producer followed by a ``BatchNorm`` (the batch mean removes it) and the key bias of an
attention layer (a query's score shifts by the same amount for every key, which the softmax
removes). These groups come last, one unit per entry.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from .._errors import InputError

KINDS = ("rescale", "scale", "qk", "vo", "gl", "frozen")
"""Kinds of symmetry groups: per-unit rescaling, per-unit scale (normalised), attention pairs,
linear pairs, parameters no output depends on."""

MATRIX_KINDS = ("qk", "vo", "gl")
"""The kinds whose invariant is a ``block x block`` matrix per unit."""

_CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_BN = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
_HOMOGENEOUS_MODULES = (
    nn.ReLU,
    nn.LeakyReLU,
    nn.Identity,
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.MaxPool1d,
    nn.MaxPool2d,
    nn.MaxPool3d,
    nn.AvgPool1d,
    nn.AvgPool2d,
    nn.AvgPool3d,
    nn.AdaptiveAvgPool1d,
    nn.AdaptiveAvgPool2d,
    nn.AdaptiveAvgPool3d,
    nn.AdaptiveMaxPool1d,
    nn.AdaptiveMaxPool2d,
    nn.AdaptiveMaxPool3d,
)
_HOMOGENEOUS_FUNCTIONS = {
    torch.relu: "relu",
    F.relu: "relu",
    torch.abs: "abs",
    operator.abs: "abs",
    F.leaky_relu: "leaky_relu",
    F.max_pool1d: "max_pool",
    F.max_pool2d: "max_pool",
    F.max_pool3d: "max_pool",
    F.avg_pool1d: "avg_pool",
    F.avg_pool2d: "avg_pool",
    F.avg_pool3d: "avg_pool",
    F.dropout: "dropout",
}
_HOMOGENEOUS_METHODS = {"relu": "relu", "abs": "abs", "relu_": "relu", "abs_": "abs"}


@dataclass(frozen=True)
class Side:
    """One parameter's share of a group: unit ``j`` owns the entries
    ``offset + j*step ... offset + j*step + block - 1`` along ``axis`` (``step = stride``, or
    ``block`` when ``stride`` is 0)."""

    name: str
    axis: int
    block: int = 1
    offset: int = 0
    stride: int = 0

    @property
    def step(self) -> int:
        """The distance between consecutive units' first entries (``stride``, or ``block``
        when ``stride`` is 0: contiguous units)."""
        return self.stride or self.block

    def indices(self, units) -> torch.Tensor:
        """Indices along ``axis`` of the given units (a sequence of unit indices)."""
        u = torch.as_tensor(units, dtype=torch.long).reshape(-1, 1)
        return (self.offset + u * self.step + torch.arange(self.block)).reshape(-1)


@dataclass(frozen=True)
class UnitGroup:
    """One symmetry group of a model: ``n_units`` units of one ``kind`` (`KINDS`).

    ``inputs`` are the sides scaled by ``c`` (``w`` and its bias; ``W_Q``, ``W_V``), ``outputs``
    the sides scaled by ``1/c`` (``a``; ``W_K``, ``W_O``); a scale unit has no outputs.
    ``path`` names the operations between producer and consumer."""

    name: str
    kind: str
    n_units: int
    inputs: tuple[Side, ...]
    outputs: tuple[Side, ...]
    path: tuple[str, ...] = ()
    consumer: str = ""

    @property
    def block(self) -> int:
        """Rows per unit of the invariant: 1 for units, the head dimension for attention."""
        return self.inputs[0].block if self.kind in MATRIX_KINDS else 1

    def describe(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "n_units": self.n_units,
            "inputs": [_side_record(s) for s in self.inputs],
            "outputs": [_side_record(s) for s in self.outputs],
            "path": list(self.path),
            "consumer": self.consumer,
        }


def _side_record(side: Side) -> dict:
    out = vars(side).copy()
    if not side.stride:
        del out["stride"]
    return out


def blocks(t: torch.Tensor, side: Side, n_units: int) -> torch.Tensor:
    """The view ``(n_units, block, rest)`` of ``t`` (a parameter, gradient or state tensor)
    that gathers each unit's entries: rows of the unit's invariant, columns over the rest."""
    if side.step != side.block:
        x = t.index_select(side.axis, side.indices(range(n_units)).to(t.device))
        return x.movedim(side.axis, 0).reshape(n_units, side.block, -1)
    x = t.narrow(side.axis, side.offset, n_units * side.block).movedim(side.axis, 0)
    return x.reshape(n_units, side.block, -1)


def _producer_units(mod: nn.Module) -> int | None:
    if isinstance(mod, nn.Linear):
        return mod.out_features
    if isinstance(mod, _CONV):
        return mod.out_channels
    if isinstance(mod, _BN) and mod.affine:
        return mod.num_features
    if isinstance(mod, nn.LayerNorm) and mod.elementwise_affine and len(mod.normalized_shape) == 1:
        return mod.normalized_shape[0]
    return None


def _input_sides(name: str, mod: nn.Module) -> tuple[Side, ...]:
    sides = [Side(f"{name}.weight", 0)]
    if getattr(mod, "bias", None) is not None:
        sides.append(Side(f"{name}.bias", 0))
    return tuple(sides)


def _only_input(node, prev) -> bool:
    """``prev`` is ``node``'s first positional argument and appears nowhere else in it."""
    args = list(node.args) + list(node.kwargs.values())
    return bool(node.args) and node.args[0] is prev and sum(a is prev for a in args) == 1


def _flatten_ok(node, modules) -> bool:
    if node.op == "call_module" and isinstance(modules[node.target], nn.Flatten):
        f = modules[node.target]
        return f.start_dim == 1 and f.end_dim == -1
    if (node.op == "call_function" and node.target is torch.flatten) or (
        node.op == "call_method" and node.target == "flatten"
    ):
        start = node.args[1] if len(node.args) > 1 else node.kwargs.get("start_dim", 0)
        end = node.args[2] if len(node.args) > 2 else node.kwargs.get("end_dim", -1)
        return start == 1 and end == -1
    return False


def _homogeneous(node, modules) -> str | None:
    if node.op == "call_module":
        mod = modules[node.target]
        if isinstance(mod, _HOMOGENEOUS_MODULES):
            return type(mod).__name__
    elif node.op == "call_function":
        return _HOMOGENEOUS_FUNCTIONS.get(node.target)
    elif node.op == "call_method":
        return _HOMOGENEOUS_METHODS.get(node.target)
    return None


def _chain(node, modules, name: str, prod: nn.Module, n: int, calls: dict) -> UnitGroup | None:
    """Follow the single-user path from producer ``node`` to a consumer or a norm layer."""
    path: list[str] = []
    flat = False
    spatial = (
        isinstance(prod, _CONV) or isinstance(prod, _BN) and not isinstance(prod, nn.BatchNorm1d)
    )
    cur = node
    while True:
        users = list(cur.users)
        if len(users) != 1 or not _only_input(users[0], cur):
            return None
        nxt = users[0]
        mod = modules.get(nxt.target) if nxt.op == "call_module" else None
        if mod is not None and calls.get(nxt.target, 0) != 1:
            return None  # a module called twice shares its weights across places
        if isinstance(mod, (*_BN, nn.LayerNorm)) and not isinstance(prod, (*_BN, nn.LayerNorm)):
            if isinstance(mod, nn.LayerNorm):
                if flat or len(mod.normalized_shape) != 1 or mod.normalized_shape[0] != n:
                    return None
                sides = tuple(Side(s.name, 0, n) for s in _input_sides(name, prod))
                return UnitGroup(name, "scale", 1, sides, (), (*path, "LayerNorm"), nxt.target)
            if flat or mod.num_features != n:
                return None
            return UnitGroup(
                name,
                "scale",
                n,
                _input_sides(name, prod),
                (),
                (*path, type(mod).__name__),
                nxt.target,
            )
        if isinstance(mod, nn.Linear):
            s, rem = divmod(mod.in_features, n)
            if rem or (s != 1 and not flat):
                return None
            return UnitGroup(
                name,
                "rescale",
                n,
                _input_sides(name, prod),
                (Side(f"{nxt.target}.weight", 1, s),),
                tuple(path),
                nxt.target,
            )
        if isinstance(mod, _CONV):
            if flat or mod.groups != 1 or mod.in_channels != n:
                return None
            return UnitGroup(
                name,
                "rescale",
                n,
                _input_sides(name, prod),
                (Side(f"{nxt.target}.weight", 1),),
                tuple(path),
                nxt.target,
            )
        if _flatten_ok(nxt, modules) and spatial and not flat:
            flat = True
            path.append("flatten")
        else:
            op = _homogeneous(nxt, modules)
            if op is None:
                return None
            path.append(op)
        cur = nxt


def _attention(name: str, mod: nn.MultiheadAttention) -> list[UnitGroup]:
    E, h, d = mod.embed_dim, mod.num_heads, mod.head_dim
    if mod._qkv_same_embed_dim:
        q, k, v = (Side(f"{name}.in_proj_weight", 0, d, i * E) for i in range(3))
    else:
        q, k, v = (Side(f"{name}.{p}_proj_weight", 0, d) for p in "qkv")
    qb: tuple[Side, ...] = ()
    kb: tuple[Side, ...] = ()
    vb: tuple[Side, ...] = ()
    if mod.in_proj_bias is not None:
        qb, kb, vb = ((Side(f"{name}.in_proj_bias", 0, d, i * E),) for i in range(3))
    o = Side(f"{name}.out_proj.weight", 1, d)
    return [
        UnitGroup(f"{name}.qk", "qk", h, (q, *qb), (k, *kb), ("softmax(q.k)",), name),
        UnitGroup(f"{name}.vo", "vo", h, (v, *vb), (o,), ("attention",), f"{name}.out_proj"),
    ]


def _gqa(name: str, mod) -> list[UnitGroup]:
    d, g, G = mod.head_dim, mod.group_size, mod.num_kv_heads
    bias = mod.q_proj.bias is not None
    q = [Side(f"{name}.q_proj.weight", 0, d, h * d, g * d) for h in range(g)]
    o = [Side(f"{name}.o_proj.weight", 1, d, h * d, g * d) for h in range(g)]
    k, v = [Side(f"{name}.k_proj.weight", 0, d)], [Side(f"{name}.v_proj.weight", 0, d)]
    if bias:
        q += [Side(f"{name}.q_proj.bias", 0, d, h * d, g * d) for h in range(g)]
        k.append(Side(f"{name}.k_proj.bias", 0, d))
        v.append(Side(f"{name}.v_proj.bias", 0, d))
    return [
        UnitGroup(f"{name}.qk", "qk", G, tuple(q), tuple(k), ("softmax(q.k)",), name),
        UnitGroup(f"{name}.vo", "vo", G, tuple(v), tuple(o), ("attention",), f"{name}.o_proj"),
    ]


def _linear_pair(group: UnitGroup, modules: dict) -> UnitGroup | None:
    """The ``gl`` group of a rescaling group whose producer is read directly (identities
    only) by a ``Linear``/``Conv`` consumer, else ``None``."""
    prod, cons = modules[group.name], modules[group.consumer]
    if (
        not isinstance(prod, (nn.Linear, *_CONV))
        or type(cons) is not type(prod)
        or any(p != "Identity" for p in group.path)
    ):
        return None
    n = group.n_units
    ins = tuple(Side(s.name, 0, n) for s in group.inputs)
    return UnitGroup(
        f"{group.name}.gl",
        "gl",
        1,
        ins,
        (Side(f"{group.consumer}.weight", 1, n),),
        group.path,
        group.consumer,
    )


def find_units(model: nn.Module) -> tuple[list[UnitGroup], dict]:
    """The symmetry groups of ``model``, found on its ``torch.fx`` trace.

    Units are found on the trace (leaf modules as torch defines them); a model that does not
    trace yields its attention pairs only, with the trace error in the report. Attention pairs
    come from every ``torch.nn.MultiheadAttention`` and `GroupedQueryAttention` submodule;
    linear pairs (``gl``) and then frozen entries (``frozen``) come last.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose rescaling, scale, attention and linear symmetries are listed.

    Returns
    -------
    tuple of (list of UnitGroup, dict)
        The groups, and a report ``{"trace": "fx" | error text, "skipped": [...]}``.

    Raises
    ------
    InputError
        When ``model`` is not a ``torch.nn.Module``.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model={type(model).__name__} is not allowed; use a torch.nn.Module")
    groups: list[UnitGroup] = []
    report: dict = {"trace": "fx", "skipped": []}
    modules = dict(model.named_modules())
    try:
        graph = torch.fx.symbolic_trace(model).graph
    except Exception as err:  # noqa: BLE001 - any tracing failure leaves attention only
        report["trace"] = f"{type(err).__name__}: {err}"
        graph = None
    if graph is not None:
        calls: dict = {}
        for node in graph.nodes:
            if node.op == "call_module":
                calls[node.target] = calls.get(node.target, 0) + 1
        for node in graph.nodes:
            if node.op != "call_module" or calls[node.target] != 1:
                continue
            prod = modules[node.target]
            n = _producer_units(prod)
            if n is None or isinstance(prod, nn.MultiheadAttention):
                continue
            group = _chain(node, modules, node.target, prod, n, calls)
            if group is not None:
                groups.append(group)
    pairs = [
        p
        for p in (_linear_pair(g, modules) for g in groups if g.kind == "rescale")
        if p is not None
    ]
    from ._attention import GroupedQueryAttention

    for name, mod in modules.items():
        if isinstance(mod, GroupedQueryAttention):
            groups.extend(_gqa(name, mod))
        if isinstance(mod, nn.MultiheadAttention):
            if mod.bias_k is not None:
                report["skipped"].append(
                    f"{name}: bias_k/bias_v are raw keys the symmetry does not transform"
                )
                continue
            groups.extend(_attention(name, mod))
    return groups + pairs + _frozen(groups, modules), report


def _frozen(groups: list[UnitGroup], modules: dict) -> list[UnitGroup]:
    """The frozen entries (module docstring) of the found groups' layers."""
    from ._attention import GroupedQueryAttention

    out = []
    for g in groups:
        mod = modules.get(g.consumer)
        if g.kind == "scale" and isinstance(mod, _BN) and modules[g.name].bias is not None:
            out.append(
                UnitGroup(
                    f"{g.name}.bias",
                    "frozen",
                    g.n_units,
                    (Side(f"{g.name}.bias", 0),),
                    (),
                    g.path,
                    g.consumer,
                )
            )
        elif g.kind == "qk":
            att = modules[g.consumer]
            if isinstance(att, GroupedQueryAttention) and att.k_proj.bias is not None:
                n = att.num_kv_heads * att.head_dim
                out.append(
                    UnitGroup(
                        f"{g.consumer}.k_bias",
                        "frozen",
                        n,
                        (Side(f"{g.consumer}.k_proj.bias", 0),),
                        (),
                        ("softmax(q.k)",),
                        g.consumer,
                    )
                )
            elif isinstance(att, nn.MultiheadAttention) and att.in_proj_bias is not None:
                E = att.embed_dim
                out.append(
                    UnitGroup(
                        f"{g.consumer}.k_bias",
                        "frozen",
                        E,
                        (Side(f"{g.consumer}.in_proj_bias", 0, 1, E),),
                        (),
                        ("softmax(q.k)",),
                        g.consumer,
                    )
                )
    return out
