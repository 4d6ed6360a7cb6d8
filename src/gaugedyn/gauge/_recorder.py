r"""A recorder of the gauge of a live torch model: invariants, their drift and its prediction.

For a group of `find_units()` with input sides ``X`` (scaled by ``c``) and
output sides ``Y`` (scaled by ``1/c``), the invariant of a unit is

$$
I = s_X\,|X|^2 + s_Y\,|Y|^2 \quad(\text{rescaling: } s_X=-1, s_Y=1,\ I = \delta = |a|^2-|w|^2),
$$

with $|X|^2$ the Gram matrix $X X^\top$ of the unit's rows for attention pairs (``s_X = 1,
s_Y = -1``: $W_Q W_Q^\top - W_K W_K^\top$) and $|w|^2$ alone for scale units (``s_X = 1, s_Y = 0``).
The symmetry makes the gradient satisfy
$s_X \operatorname{sym}(X G_X^\top) + s_Y \operatorname{sym}(Y G_Y^\top) = 0$ (for units:
$a \cdot g_a = w \cdot g_w$). A step $P \leftarrow P - \eta D$ then changes ``I`` by

$$
\Delta I_t = -2\eta\,c_t + \eta^2 k_t,\qquad
c_t = \textstyle\sum s\,\mathrm{sym}(P_t D_t^\top)/2,\quad k_t = \sum s\,D_t D_t^\top.
$$

**Full-batch GD** (``torch.optim.SGD``, no momentum, no weight decay): ``D = g`` and ``c_t = 0``,
so $\Delta I = \eta^2 (|g_a|^2 - |g_w|^2)$ exactly. **SGD with momentum** ``mu``, dampening
``tau`` and weight decay ``lambda`` (torch's $b_t = \mu b_{t-1} + (1 - \tau) (g_t + \lambda P_t)$,
$b_1 = g_1 + \lambda P_1$, ``D_t = b_t``; without momentum $D_t = g_t + \lambda P_t$): with
$P_t = P_{t-1} - \eta b_{t-1}$ and the symmetry,

$$
c_t = \mu\,(c_{t-1} - \eta\,k_{t-1}) + (1-\tau)\,\lambda\,I_t\quad(c_1 = \lambda I_1),
$$

an exact discrete recursion in the invariant and the momentum buffers' norms ``k`` (derived
and verified with sympy in ``derivations/gauge_steps.md``; the discrete form of Kunin et al.'s
"neural mechanics": weight decay alone gives
$\Delta I = -2 \eta \lambda I + \eta^2 k$, the flow limit $I(t) = I(0)\, e^{-2 \lambda t}$). The
recorder carries ``c`` across steps (so with momentum it reduces the buffers every step, even
with ``every > 1``); attached to an optimizer whose buffers already exist, it measures
$\sum s \operatorname{sym}(P_t b_{t-1}^\top)/2$ once instead. Nesterov, Adam/AdamW and other
optimizers are measured only (``predicted`` is NaN).

The measured change is ``I(after) - I(before)`` from the per-unit norms (its rounding error is
about $10^{-16} (|a|^2 + |w|^2)$, the float's own resolution of the invariant); with
``exact_change=True`` it is $\sum s\, (2 D \cdot P' - |D|^2)$, $D = P' - P$ from a copy of the
parameters taken before the step, free of that cancellation (what the exactness tests use).
For rescaling units it also records the mobilities $\mu_R = |a|^2 + |w|^2$,
$\mu_T = 1/|w|^2$ and the dissipation split $\mathit{reaction} = |g_a|^2 + (u \cdot g_w)^2$,
$\mathit{transport} = |g_w|^2 - (u \cdot g_w)^2$ (the package's
`gaugedyn.theory.mobilities()` and `gaugedyn.theory.dissipation_split()`), and, with
``owner_cos`` or ``owner_units`` set, the functional owner among units whose input directions
coincide (`gaugedyn.theory._observables.owner_sets()`).

Cost: a recorded step makes one reduction pass over the gradients before the step and one over
the parameters after it ($|P|^2$ before the step is the previous step's reading, reused when no
parameter was written in between, per torch's version counters). A pass runs per parameter,
not per unit: every contiguous float32/float64 CPU tensor of a pass goes through one call of a
numba kernel (`gaugedyn.gauge._kernels.run()`) that reads each once and returns its row and
column sums of squares, and, for the gradient of a tensor ``w.g_w`` is read from, the row and column
sums of ``w g`` in the same read (``w.g_w`` is read as ``a.g_a`` on the smaller side, equal by the
symmetry); so a tensor two groups share (the middle ``Linear`` of an MLP) is read once for both.
Other tensors (other devices, dtypes and layouts, convolutions) take torch reductions: a row
norm for a tensor read along its rows, else an elementwise square into a reusable scratch
buffer summed per side. The readings are kept as computed (the kernel's as slices of its
buffer, summed per unit when read); the sides are combined, and the
invariant, the change ``I(after) - I(before)`` and the GD prediction $\eta^2 k$ (learning rate
read at each step) formed once, in float64, by `group()`. With momentum the recursion's few
per-unit operations run every step, and so does one pass over the buffers. ``exact_change``
adds a copy and two passes. ``benchmarks/bench_gauge_recorder.py`` prints the overhead against
the plain training step; its numbers, and why what remains is the passes themselves, are in the
docs page ``docs/gauge-recorder.md``.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import torch

from .._errors import InputError
from ..adam import watch_state
from ._units import MATRIX_KINDS, UnitGroup, blocks, find_units

FIELDS = ("invariant", "change", "predicted", "in_sq", "out_sq", "g_in_sq", "g_out_sq", "gw_dot_w")
"""Per-group arrays recorded at every sampled step (``(S, n)``, or ``(S, n, d, d)`` for
attention pairs; ``gw_dot_w`` is ``w.g_w`` of rescaling and scale units)."""

DERIVED = ("mu_R", "mu_T", "reaction", "transport")
"""Per-unit arrays derived at export for rescaling units (``(S, n)``)."""

_SIGNS = {
    "rescale": (-1.0, 1.0),
    "scale": (1.0, 0.0),
    "qk": (1.0, -1.0),
    "vo": (1.0, -1.0),
    "gl": (1.0, -1.0),
    "frozen": (1.0, 0.0),
}


def _matrix(group: UnitGroup) -> bool:
    return group.kind in MATRIX_KINDS


class _Scratch:
    """Reusable product buffers, one per shape, dtype and device: an elementwise product formed
    for a reduction goes into memory already mapped instead of a fresh allocation per step
    (which the allocator may return to the system and fault in again at the next one); and the
    vectors of ones that column sums are formed with."""

    def __init__(self):
        self._bufs: dict = {}

    def mul(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, x.device)
        buf = self._bufs.get(key)
        if buf is None:
            buf = self._bufs[key] = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        return torch.mul(x, y, out=buf)

    def ones(self, n: int, like: torch.Tensor) -> torch.Tensor:
        key = (n, like.dtype, like.device)
        buf = self._bufs.get(key)
        if buf is None:
            buf = self._bufs[key] = torch.ones(n, dtype=like.dtype, device=like.device)
        return buf


def _axis_sum(x: torch.Tensor, axis: int, scratch: _Scratch | None) -> torch.Tensor:
    """``x`` summed over every axis but ``axis``: a matrix's column sums as a product with a
    vector of ones (one vectorised pass, against a strided sum over the rows)."""
    if x.dim() == 2 and axis == 1 and scratch is not None:
        return scratch.ones(x.shape[0], x) @ x
    if axis == 0:
        return x.reshape(x.shape[0], -1).sum(1)
    return x.sum(dim=[d for d in range(x.dim()) if d != axis])


def _unit_reduce(
    x: torch.Tensor, y: torch.Tensor | None, side, n: int, scratch: _Scratch | None = None
) -> torch.Tensor:
    """Per unit, ``sum x*y`` over the unit's entries of one side ($|x|^2$ when ``y`` is
    ``None``), as reductions over the tensor's other axes (no gathered copy; a product, where
    one is formed, into ``scratch``)."""
    if side.offset or x.shape[side.axis] != n * side.block:
        x = x.narrow(side.axis, side.offset, n * side.block)
        if y is not None:
            y = y.narrow(side.axis, side.offset, n * side.block)
    if x.dim() == 1:
        r = x * x if y is None else x * y
    else:
        prod = (
            x * (x if y is None else y)
            if scratch is None
            else scratch.mul(x, x if y is None else y)
        )
        r = _axis_sum(prod, side.axis, scratch)
    return r.reshape(n, side.block).sum(1) if side.block > 1 else r


def _side_sum(sq: torch.Tensor, side, n: int, scratch: _Scratch) -> torch.Tensor:
    """Per unit, the sum of ``sq`` (an elementwise product already formed) over the unit's
    entries of one side (a new tensor: ``sq`` may be a scratch buffer)."""
    if side.offset or sq.shape[side.axis] != n * side.block:
        sq = sq.narrow(side.axis, side.offset, n * side.block)
    if sq.dim() > 1:
        sq = _axis_sum(sq, side.axis, scratch)
    elif side.block == 1:
        sq = sq.clone()
    return sq.reshape(n, side.block).sum(1) if side.block > 1 else sq


_FLOATS = (torch.float32, torch.float64)
"""The dtypes the fused kernel takes."""


def _np_side(parts: list) -> np.ndarray | None:
    """The fused kernel's readings ``(buffer, start, stop, block)`` summed per unit and added,
    in numpy (``None`` for no part)."""
    tot = None
    for buf, a, b, block in parts:
        v = buf[a:b] if block == 1 else buf[a:b].reshape(-1, block).sum(1)
        tot = v if tot is None else tot + v
    return tot


def _host(v):
    """A CPU tensor as a numpy array (zero-copy); anything else as is."""
    return v.numpy() if isinstance(v, torch.Tensor) and v.device.type == "cpu" else v


def _resolve(v) -> torch.Tensor:
    """A reading as a tensor: a tensor as is, a numpy array shared, the fused kernel's
    ``(buffer, start, stop, block)`` (a slice of its float64 buffer, the sums per entry of the
    side's axis) summed per unit over ``block`` entries, or a list of such parts added."""
    if isinstance(v, list):
        tot = None
        for part in v:
            part = _resolve(part)
            tot = part if tot is None else tot + part
        return cast(torch.Tensor, tot)  # a reading's list of parts is never empty
    if isinstance(v, np.ndarray):
        return torch.from_numpy(v)
    if isinstance(v, tuple):
        buf, a, b, block = v
        v = torch.from_numpy(buf[a:b])
        return v.reshape(-1, block).sum(1) if block > 1 else v
    return v


def _pair(group: UnitGroup, sides, x: dict, y: dict | None = None) -> torch.Tensor:
    r"""$\sum_{\mathrm{sides}} \operatorname{sym}(X Y^\top)/2$ per unit (a dot product for units,
    $d \times d$ for heads); ``y = None`` means ``y = x``."""
    tot = None
    for s in sides:
        if _matrix(group):
            bx = blocks(x[s.name], s, group.n_units)
            by = bx if y is None else blocks(y[s.name], s, group.n_units)
            m = bx @ by.transpose(1, 2)
            term = (m + m.transpose(1, 2)) / 2
        else:
            term = _unit_reduce(x[s.name], None if y is None else y[s.name], s, group.n_units)
        tot = term if tot is None else tot + term
    return cast(torch.Tensor, tot)  # a group has at least one side


def _column(rows: list[dict], key: str, shape: tuple) -> np.ndarray:
    """The records' ``key`` stacked into a float64 array of ``shape`` (NaN where absent)."""
    out = np.full(shape, np.nan)
    idx = [i for i, r in enumerate(rows) if r.get(key) is not None]
    if idx:
        out[idx] = torch.stack([rows[i][key] for i in idx]).to(torch.float64).cpu().numpy()
    return out


def _feature(u: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""A cluster's feature: its mean input direction ``v`` and the unit vector $\hat c$ of its
    summed output $\sum_i a_i |w_i|$ (rows of ``rho``); $\hat c = 0$ when that sum is zero."""
    v = u.sum(0)
    v = v / np.linalg.norm(v)
    total = rho.sum(0)
    tn = np.linalg.norm(total)
    return v, (total / tn if tn > 0 else np.zeros_like(total))


def _owner_of(members: np.ndarray, along: np.ndarray, overlap: np.ndarray) -> int:
    r"""The package's functional owner (`gaugedyn.theory._observables.owner_sets()`) among
    ``members`` of one feature: the share of unit ``i`` is $(a_i \cdot \hat c)(w_i \cdot v)$, the
    ``sign(b) rho_i m_i`` of the teacher-student definition with the cluster's summed output in
    the place of ``b`` (so ``sign(b) = +1``) and ``v`` in the place of the teacher direction;
    ``-1`` for a tie."""
    from ..theory import owner_sets

    k = members.size
    sets = owner_sets(along, np.zeros((k, k)), overlap[:, None], np.ones((1, 1)), np.ones(1))
    sets = sets[:, 0]
    return int(members[np.argmax(sets)]) if sets.sum() == 1 else -1


class GaugeRecorder:
    """Records the gauge invariants of ``model`` (see the module docstring for the equations).

    ``optimizer``: ``None`` (call `record()` yourself; no change or prediction), or a torch
    optimizer whose steps are then recorded through step hooks (gradients must be in ``.grad``
    when ``step()`` is called; closures are not supported). ``every = k`` records steps
    ``k, 2k, ...`` counted from attachment. ``owner_cos`` (in ``(0, 1)``): record ownership among
    rescaling units whose input directions have cosine at least this (costs ``O(n^2 d)`` per
    group and sample); ``owner_units = {group: [[i, j, ...], ...]}``: fixed clusters instead
    (duplicates that may drift apart), whose feature is frozen at the first record.
    ``exact_change``: measure the change from a pre-step copy (see the
    module docstring).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        every: int = 1,
        owner_cos: float | None = None,
        owner_units: dict[str, list[list[int]]] | None = None,
        exact_change: bool = False,
    ):
        if int(every) != every or int(every) < 1:
            raise InputError(f"every={every!r} is not allowed; use an integer >= 1")
        if owner_cos is not None and not 0.0 < float(owner_cos) < 1.0:
            raise InputError(
                f"owner_cos={owner_cos!r} is not allowed; use a number in (0, 1) or None"
            )
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise InputError(
                f"optimizer={type(optimizer).__name__} is not allowed; use a "
                "torch.optim.Optimizer or None"
            )
        self.model = model
        self.optimizer = optimizer
        self.every = int(every)
        self.exact_change = bool(exact_change)
        self._after: tuple | None = None
        self.owner_cos = None if owner_cos is None else float(owner_cos)
        self.groups, self.report = find_units(model)
        self.owner_units = self._check_owner_units(owner_units or {})
        self._features: dict = {}
        self._params = dict(model.named_parameters())
        self._names = sorted({s.name for g in self.groups for s in (*g.inputs, *g.outputs)})
        missing = [n for n in self._names if n not in self._params]
        if missing:
            raise InputError(f"model parameters {missing} of the found groups are missing")
        self._rows: list[dict] = []
        self._steps: list[int] = []
        self._count = 0
        self._pending: dict | None = None
        self._hooks = []
        self._rules = [self._rule(g) for g in self.groups]
        # w.g_w = a.g_a by the symmetry: read it on the smaller side
        self._cheap_out = {
            g.name: g.kind == "rescale" and self._size(g.outputs) < self._size(g.inputs)
            for g in self.groups
        }
        self._carry: list[dict | None] = [None] * len(self.groups)
        self._scratch = _Scratch()
        self._matrix = [gi for gi, g in enumerate(self.groups) if _matrix(g)]
        self._build_plan()
        self._fuse = True  # contiguous float CPU tensors through the fused kernel (_fused)
        self._layouts: dict = {}
        self._arrays: dict = {}  # per parameter (storage, dtype, its numpy array): _array()
        self._read_uses = {name: idx for name, _, idx in self._reads}
        self._flat_names = [n for n, _, _ in self._reads if 1 <= self._params[n].dim() <= 2]
        self._tensor_rules = [
            gi for gi, r in enumerate(self._rules) if r["rule"] == "sgd_momentum_weight_decay"
        ]
        self._carried = {gi for gi in self._tensor_rules if self._rules[gi]["momentum"] > 0.0}
        self._pgroups = {
            gi: cast(list, self._group_hparams(self.groups[gi]))[0]
            for gi in (*self._gd, *self._tensor_rules)
        }
        if optimizer is not None:
            self._hooks = [
                optimizer.register_step_pre_hook(self._pre),
                optimizer.register_step_post_hook(self._post),
            ]
        self._watch = watch_state([self._params[n] for n in self._names], self._state_changed)

    def __enter__(self) -> GaugeRecorder:
        return self

    def __exit__(self, *exc) -> None:
        self.detach()

    def _state_changed(self, changes: list) -> None:
        """A parameter or its momentum buffer written between steps (the state toolkit,
        `gaugedyn.gauge.rescale_units()`): the momentum recursion's carry of the groups it
        belongs to no longer holds, so their next step measures ``c`` from the buffers."""
        names = {id(self._params[n]): n for n in self._names}
        touched = {names[id(ch.param)] for ch in changes if id(ch.param) in names}
        for gi, g in enumerate(self.groups):
            if any(s.name in touched for s in (*g.inputs, *g.outputs)):
                self._carry[gi] = None
        self._after = None

    def _build_plan(self) -> None:
        """The reduction plan: which parameter each unit group reads, the readings of a pass,
        each group side's slots in them, the dot products ``w.g_w`` and the summed axes."""
        # which parameter each unit group reads, side by side (see _squares)
        self._plan: dict[str, list] = {}
        for gi, g in enumerate(self.groups):
            if not _matrix(g):
                for io, sides in ((0, g.inputs), (1, g.outputs)):
                    for s in sides:
                        self._plan.setdefault(s.name, []).append((gi, io, s))
        # a reduction pass yields a flat list of readings, one per (parameter, group side) in
        # plan order, each the units' sums of squares on that side; outside the fused kernel a
        # tensor read by one group along its rows is read by one row norm (no product formed)
        self._uses: list[tuple] = []  # (group, side 0/1, Side, units, row norm?)
        self._reads: list[tuple] = []  # (parameter, row norm?, indices into _uses)
        for name, uses in self._plan.items():
            rows = len(uses) == 1 and self._params[name].dim() > 1 and uses[0][2].axis == 0
            self._reads.append(
                (name, rows, list(range(len(self._uses), len(self._uses) + len(uses))))
            )
            self._uses += [(gi, io, side, self.groups[gi].n_units, rows) for gi, io, side in uses]
        # per group and side, its readings (`_side()` adds them)
        self._slots = [
            [
                sorted(
                    (i for i, u in enumerate(self._uses) if u[:2] == (gi, io)),
                    key=lambda i: self._uses[i][4],
                )
                for io in (0, 1)
            ]
            for gi in range(len(self.groups))
        ]
        self._gd = [gi for gi, r in enumerate(self._rules) if r["rule"] == "gd"]
        # w.g_w of each unit group, per parameter it is read from (the cheap side)
        self._dots: dict[str, list] = {}
        for gi, g in enumerate(self.groups):
            if not _matrix(g):
                for s in g.outputs if self._cheap_out[g.name] else g.inputs:
                    self._dots.setdefault(s.name, []).append((gi, s))
        # the axes each parameter is summed along (by its groups' sides and the dots)
        self._axes = {
            name: {s.axis for _, _, s in uses} | {s.axis for _, s in self._dots.get(name, [])}
            for name, uses in self._plan.items()
        }

    def _check_owner_units(self, spec: dict) -> dict:
        sizes = {g.name: g.n_units for g in self.groups if g.kind == "rescale"}
        out: dict[str, list] = {}
        for name, clusters in spec.items():
            if name not in sizes:
                raise InputError(
                    f"owner_units key {name!r} is not allowed; use one of "
                    f"{sorted(sizes)} (rescaling groups)"
                )
            seen: set = set()
            out[name] = []
            for c in clusters:
                c = [int(i) for i in c]
                if len(c) < 2 or any(not 0 <= i < sizes[name] for i in c) or seen & set(c):
                    raise InputError(
                        f"owner_units[{name!r}] cluster {c} is not allowed; use "
                        f"disjoint lists of two or more units in 0..{sizes[name] - 1}"
                    )
                seen |= set(c)
                out[name].append(c)
        return out

    def _size(self, sides) -> int:
        return sum(
            self._params[s.name].numel() // self._params[s.name].shape[s.axis] * s.block
            for s in sides
        )

    def passes(self) -> dict[str, float]:
        """Passes over the model's parameter memory per recorded step, by what is read (each
        entry: the elements read, over the model's parameter count): ``gradients`` before the
        step, ``parameters_with_gradients`` (the tensors ``w.g_w`` is read from, beside their
        gradients), ``parameters`` after the step (the next step's "before"), ``buffers`` (the
        momentum buffers, read every step with momentum), ``exact_change`` (the copy before the
        step, its write and the two passes of the difference), and ``total``."""
        total_params = sum(p.numel() for p in self.model.parameters()) or 1
        read = [self._params[name].numel() for name, _, _ in self._reads]
        out = {
            "gradients": sum(read) / total_params,
            "parameters_with_gradients": sum(self._params[n].numel() for n in self._dots)
            / total_params,
            "parameters": sum(read) / total_params,
            "buffers": 0.0,
            "exact_change": 4.0 * sum(read) / total_params if self.exact_change else 0.0,
        }
        if self._carried:
            names = {
                s.name
                for gi in self._carried
                for s in (*self.groups[gi].inputs, *self.groups[gi].outputs)
            }
            out["buffers"] = sum(self._params[n].numel() for n in names) / total_params
        out["total"] = sum(out.values())
        return out

    def detach(self) -> None:
        """Remove the optimizer hooks (what was recorded stays)."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self._watch.remove()

    def state_dict(self) -> dict:
        """What a resumed recorder needs (torch's convention; every tensor a copy, so
        ``torch.save`` / ``torch.load(weights_only=True)`` round-trips it): the steps seen, the
        momentum recursion's carry per group, the frozen owner features and what was recorded
        (each record's per-group readings, combined in float64)."""

        def tensor(x):
            if x is None or isinstance(x, float | int):
                return x
            return torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x).clone()

        carry = [None if c is None else {k: tensor(v) for k, v in c.items()} for c in self._carry]
        rows = [
            [{k: tensor(v) for k, v in self._row(r, gi).items()} for gi in range(len(self.groups))]
            for r in self._rows
        ]
        return {
            "format": 1,
            "settings": self._settings(),
            "count": self._count,
            "carry": carry,
            "features": [
                [g, ci, tensor(v), tensor(c)] for (g, ci), (v, c) in self._features.items()
            ],
            "steps": list(self._steps),
            "rows": rows,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()` into this recorder (the same model layout and settings;
        else `InputError` before anything changes)."""
        if not isinstance(state, dict) or state.get("format") != 1:
            raise InputError("state is not a GaugeRecorder.state_dict() (format 1)")
        if state.get("settings") != self._settings():
            raise InputError(
                f"state was recorded with {state.get('settings')}; this recorder has "
                f"{self._settings()}"
            )

        def host(x):
            return x.numpy() if torch.is_tensor(x) and x.dtype != torch.float64 else x

        self._count = int(state["count"])
        self._carry = [
            None
            if c is None
            else {k: (v.numpy() if torch.is_tensor(v) else v) for k, v in c.items()}
            for c in state["carry"]
        ]
        self._features = {(g, int(ci)): (v.numpy(), c.numpy()) for g, ci, v, c in state["features"]}
        self._steps = [int(s) for s in state["steps"]]
        self._rows = [
            {"unpacked": [{k: host(v) for k, v in gr.items()} for gr in row]}
            for row in state["rows"]
        ]
        self._after = None

    def _settings(self) -> dict:
        return {
            "every": self.every,
            "exact_change": self.exact_change,
            "owner_cos": self.owner_cos,
            "groups": [g.name for g in self.groups],
        }

    def _row(self, row: dict, gi: int) -> dict:
        """Group ``gi``'s fields of one record (restored records are stored unpacked)."""
        return row["unpacked"][gi] if "unpacked" in row else self._unpack(row, gi)

    def _group_hparams(self, group: UnitGroup) -> list[dict] | None:
        assert self.optimizer is not None, "hyper-parameters are read from an optimizer"
        found = []
        for s in (*group.inputs, *group.outputs):
            p = self._params[s.name]
            for pg in self.optimizer.param_groups:
                if any(q is p for q in pg["params"]):
                    found.append(pg)
        return found or None

    def _rule(self, group: UnitGroup) -> dict:
        """How the change of this group is predicted: ``{"rule", "lr", ...}`` or the reason
        there is no prediction."""
        opt = self.optimizer
        if opt is None:
            return {"rule": "none", "why": "no optimizer attached"}
        if type(opt) is not torch.optim.SGD:
            return {"rule": "none", "why": f"{type(opt).__name__}: measured only"}
        pgs = self._group_hparams(group)
        keys = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")
        if pgs is None or len(pgs) != len(group.inputs) + len(group.outputs):
            return {"rule": "none", "why": "a parameter of the group is not optimised"}
        vals = [
            {
                k: bool(pg.get(k, False)) if k in ("nesterov", "maximize") else float(pg[k])
                for k in keys
            }
            for pg in pgs
        ]
        if any(v != vals[0] for v in vals):
            return {"rule": "none", "why": "the group's parameters differ in hyper-parameters"}
        if vals[0]["nesterov"]:
            return {"rule": "none", "why": "nesterov momentum: measured only"}
        gd = vals[0]["momentum"] == 0.0 and vals[0]["weight_decay"] == 0.0
        return {"rule": "gd" if gd else "sgd_momentum_weight_decay", **vals[0]}

    # -- hooks -----------------------------------------------------------------------------
    def _grads(self) -> dict:
        out = {}
        for n in self._names:
            p = self._params[n]
            out[n] = p.grad.detach() if p.grad is not None else torch.zeros_like(p)
        return out

    def _direction_pre(self, rule: dict, grads: dict, params: dict) -> dict:
        r"""$g + \lambda P$ (with ``maximize``'s sign) for the SGD rule."""
        sign = -1.0 if rule["maximize"] else 1.0
        lam = rule["weight_decay"]
        return {n: sign * grads[n] + lam * params[n] for n in grads}

    def _wants(self, step: int) -> bool:
        return step % self.every == 0

    def _squares(
        self, t: dict, want: set | None = None, dot: dict | None = None
    ) -> tuple[list, dict] | tuple[tuple, dict]:
        """One reduction pass over the tensors ``t`` (by parameter name): ``(flat, mat)``, the
        unit groups' readings (see ``_uses``; ``None`` for a group not in ``want``) and, per
        attention group, $[|X|^2, |Y|^2]$. It runs per parameter, not per unit: contiguous
        float CPU tensors go through the fused kernel (`_fused()`: their row and column
        sums in one read each, one call for all); otherwise one pass over a tensor read by one
        group, one elementwise square and one sum per side for a tensor two groups share (the middle
        ``Linear`` of an MLP is one group's consumer and the next one's producer);
        `_side()` combines a group's readings. With ``dot`` (the parameters, when ``t``
        holds the gradients) it returns ``((flat, mat), gw)`` with ``gw`` each unit group's
        ``w.g_w``, read in the same pass where the kernel takes the tensor."""
        return self._passes([(t, want, dot)])[0]

    def _passes(self, jobs: list[tuple]) -> list:
        """`_squares()` of each ``(t, want, dot)`` of ``jobs``, the fused kernel's part of
        all of them in one call."""
        outs: list[tuple[list, dict]] = [([None] * len(self._uses), {}) for _ in jobs]
        done = self._fused(jobs, outs) if self._fuse else [()] * len(jobs)
        return [
            self._torch_pass(t, want, dot, flat, gw, dn)
            for (t, want, dot), (flat, gw), dn in zip(jobs, outs, done)
        ]

    def _torch_pass(
        self, t: dict, want: set | None, dot: dict | None, flat: list, gw: dict, done
    ) -> tuple:
        """The torch reductions of `_squares()` over the tensors the kernel did not read
        (``done``)."""
        uses = self._uses
        if (
            len(done) == len(self._reads)
            and not self._matrix
            and (dot is None or all(n in done for n in self._dots))
        ):
            return (flat, {}) if dot is None else ((flat, {}), gw)
        for name, rows, idx in self._reads:
            if name in done or (want is not None and all(uses[i][0] not in want for i in idx)):
                continue
            x = t[name]
            if rows:
                _, _, side, n, _ = uses[idx[0]]
                if side.offset or x.shape[0] != n * side.block:
                    x = x.narrow(0, side.offset, n * side.block)
                flat[idx[0]] = torch.linalg.vector_norm(x.reshape(n, -1), dim=1).square_()
            elif x.dim() == 1 and len(idx) == 1:
                _, _, side, n, _ = uses[idx[0]]
                flat[idx[0]] = _unit_reduce(x, None, side, n)
            else:
                sq = self._scratch.mul(x, x)
                for i in idx:
                    flat[i] = _side_sum(sq, uses[i][2], uses[i][3], self._scratch)
        mat = {
            gi: [
                _pair(self.groups[gi], self.groups[gi].inputs, t),
                _pair(self.groups[gi], self.groups[gi].outputs, t),
            ]
            for gi in self._matrix
            if want is None or gi in want
        }
        if dot is None:
            return flat, mat
        for name, pairs in self._dots.items():
            if name in done:
                continue
            for gi, s in pairs:
                v = _unit_reduce(dot[name], t[name], s, self.groups[gi].n_units, self._scratch)
                gw.setdefault(gi, []).append(v)
        return (flat, mat), gw

    def _fused(self, jobs: list[tuple], outs: list[tuple]) -> list[set]:
        """The fused kernel's part of `_passes()`: every contiguous float CPU matrix or
        vector of each job's ``t`` (of one dtype, the first float one's) read in one call of
        `._kernels.run()`, with ``dot``'s tensor where ``w.g_w`` is read from it; fills
        each job's ``flat`` and ``gw`` (``outs``) and returns the names it read per job."""
        names, xs, ys = [], [], []
        dtype = None
        for j, (t, _, dot) in enumerate(jobs):
            for name in self._flat_names:  # the parameters of at most two dimensions
                x = t.get(name)
                if x is None:
                    continue
                if dtype is None and x.dtype in _FLOATS:
                    dtype = x.dtype
                if x.dtype is not dtype or not x.is_cpu or not x.is_contiguous():
                    continue
                y = None
                if dot is not None and name in self._dots:
                    y = dot[name]
                    if y.dtype is not dtype or not y.is_cpu or not y.is_contiguous():
                        continue
                names.append((j, name))
                xs.append(x)
                ys.append(y)
        done: list[set] = [set() for _ in jobs]
        if not names:
            return done
        key = (tuple(names), tuple(y is not None for y in ys))
        plan = self._layouts.get(key)
        if plan is None:
            plan = self._layouts[key] = self._layout(names, xs, key[1])
        from ._kernels import run

        arrs = tuple(self._array(name, x, shape) for (_, name), x, shape in zip(names, xs, plan[2]))
        out = run(
            arrs,
            tuple(
                arrs[k] if y is None else self._array(names[k][1], y, plan[2][k])
                for k, y in enumerate(ys)
            ),
            plan[0],
            plan[1],
        )
        for j, i, a, b, block in plan[3]:
            outs[j][0][i] = (out, a, b, block)
        for j, gi, a, b, block in plan[4]:
            outs[j][1].setdefault(gi, []).append((out, a, b, block))
        for j, name in names:
            done[j].add(name)
        return done

    def _array(self, name: str, x: torch.Tensor, shape: tuple) -> np.ndarray:
        """``x`` (a contiguous CPU tensor read for parameter ``name``) as a numpy array of
        ``shape``, zero-copy. Where ``x`` is the parameter's own storage the array is kept and
        reused while the storage, shape and dtype stay (a recorded step reads each parameter
        once or twice: forming the array costs microseconds a tensor); gradients and buffers,
        new tensors at each step, are not kept."""
        ptr = x.data_ptr()
        hit = self._arrays.get(name)
        if hit is not None and hit[0] == ptr and hit[1] is x.dtype and hit[2].shape == shape:
            return hit[2]
        a = x.numpy().reshape(shape)
        if ptr == self._params[name].data_ptr():
            self._arrays[name] = (ptr, x.dtype, a)
        return a

    def _layout(self, names: list, xs: list, pairs: tuple) -> tuple:
        """The fused pass over ``names`` (``(job, name)``, tensors ``xs``; ``pairs``: read with
        the parameter): the kernel's plan and buffer size, the matrix shapes, and where each
        reading lies in the buffer: ``(job, use index, start, stop, block)`` and ``(job, group,
        start, stop, block)`` for ``w.g_w``."""
        from ._kernels import layout

        shapes = [(x.shape[0], x.shape[1] if x.dim() == 2 else 1) for x in xs]
        plan, size = layout(shapes, list(pairs), [1 in self._axes[n] for _, n in names])
        uses, dots = [], []
        for k, (j, name) in enumerate(names):
            o = plan[k, 2:]
            for i in self._read_uses[name]:
                _, _, side, n, _ = self._uses[i]
                a = int(o[2 * side.axis]) + side.offset
                uses.append((j, i, a, a + n * side.block, side.block))
            if pairs[k]:
                for gi, side in self._dots[name]:
                    a = int(o[2 * side.axis + 1]) + side.offset
                    dots.append((j, gi, a, a + self.groups[gi].n_units * side.block, side.block))
        return plan, size, shapes, uses, dots

    def _side(
        self, reading: tuple, gi: int, io: int, dtype: torch.dtype | None = None
    ) -> torch.Tensor | None:
        """$|X|^2$ (``io = 0``) or $|Y|^2$ (``io = 1``) of group ``gi`` from a pass's
        readings (``None`` for a side the group lacks), in ``dtype`` if given."""
        flat, mat = reading
        if gi in mat:
            v = mat[gi][io]
            return v if dtype is None or v is None else v.to(dtype)
        tot = None
        for i in self._slots[gi][io]:
            v = _resolve(flat[i])
            v = v if dtype is None else v.to(dtype)
            tot = v if tot is None else tot + v
        return tot

    def _signed(self, gi: int, reading: tuple, host: bool = False) -> torch.Tensor | np.ndarray:
        """$s_X |X|^2 + s_Y |Y|^2$ of one group from a pass's readings (signs are +-1); in
        numpy (small operations cost less there) where the readings are the fused kernel's,
        returned as a numpy array with ``host`` (else a tensor)."""
        sx, sy = _SIGNS[self.groups[gi].kind]
        flat, mat = reading
        sides = (0, 1) if sy else (0,)
        if gi not in mat and all(
            isinstance(flat[i], tuple) for io in sides for i in self._slots[gi][io]
        ):
            x, y = (_np_side([flat[i] for i in self._slots[gi][io]]) for io in (0, 1))
            assert x is not None, "a group's input side is never empty"
            if not sy or y is None:
                out = x if sx > 0 else -x
            else:
                out = x - y if sx > 0 else y - x
            return out if host else torch.from_numpy(out if out.base is None else out.copy())
        tx = self._side(reading, gi, 0)
        assert tx is not None, "a group's input side is never empty"
        ty = self._side(reading, gi, 1) if sy else None
        tout = (tx if sx > 0 else -tx) if ty is None else (tx - ty if sx > 0 else ty - tx)
        return _host(tout) if host else tout

    def _norms(self, params: dict, fresh: bool = False) -> tuple:
        """The parameters' readings (`_squares()`); reused from the last post-step reading while no
        parameter has been written since (torch's version counters)."""
        if not fresh and self._after is not None and self._after[0] == self._versions():
            return self._after[1]
        return self._squares(params)

    def _versions(self) -> tuple:
        return tuple(self._params[n]._version for n in self._names)

    @torch.no_grad()
    def _pre(self, optimizer, args, kwargs):
        step = self._count + 1
        record = self._wants(step)
        if not record and not self._carried:
            self._pending = None
            return
        params = {n: self._params[n].detach() for n in self._names}
        grads = self._grads() if record or self._tensor_rules else None
        sq = self._norms(params)
        pend: dict = {"step": step, "row": None, "info": {}}
        if record:
            if self.exact_change:
                pend["before"] = {n: t.clone() for n, t in params.items()}
            pend["row"] = row = self._measure(params, grads, sq)
            for gi in self._gd:  # D = g: the prediction eta^2 k from the gradients in hand
                row["lr"][gi] = float(self._pgroups[gi]["lr"])
        for gi in self._tensor_rules:
            rule = self._rules[gi]
            if not (record or gi in self._carried):
                continue
            # the recursion's few per-unit operations in numpy on the CPU (_host)
            inv = self._signed(gi, sq, host=True)
            mu = rule["momentum"]
            c = None
            k = None
            g = self.groups[gi]
            if mu > 0.0:
                sides = (*g.inputs, *g.outputs)
                bufs = {
                    s.name: optimizer.state.get(self._params[s.name], {}).get("momentum_buffer")
                    for s in sides
                }
                if all(bufs[s.name] is not None for s in sides):
                    carry = self._carry[gi]
                    if carry is not None and carry["step"] == step - 1:
                        cb = carry["c"] - carry["lr"] * carry["k"]
                    else:
                        sx, sy = _SIGNS[g.kind]
                        cb = sx * _pair(g, g.inputs, params, bufs)
                        if g.outputs and sy:
                            cb = cb + sy * _pair(g, g.outputs, params, bufs)
                        cb = _host(cb)
                    c = inv * ((1.0 - rule["dampening"]) * rule["weight_decay"]) + mu * cb
            else:
                k = self._signed(
                    gi, self._squares(self._direction_pre(rule, grads, params), {gi}), host=True
                )
            if c is None:  # no buffer yet (b_1 = g_1 + lambda P_1) or no momentum
                c = inv * rule["weight_decay"]
            pend["info"][gi] = {"c": c, "k": k, "lr": float(self._pgroups[gi]["lr"])}
        self._pending = pend

    @torch.no_grad()
    def _post(self, optimizer, args, kwargs):
        self._count += 1
        pend, self._pending = self._pending, None
        if pend is None:
            return
        after = {n: self._params[n].detach() for n in self._names}
        row = pend["row"]
        need = [gi for gi, info in pend["info"].items() if info["k"] is None]
        jobs = [(after, None, None)] if row is not None else []
        if need:  # the momentum buffers, in the same kernel call as the parameters
            bufs = {
                s.name: optimizer.state[self._params[s.name]]["momentum_buffer"]
                for gi in need
                for s in (*self.groups[gi].inputs, *self.groups[gi].outputs)
            }
            jobs.append((bufs, set(need), None))
        readings = self._passes(jobs) if jobs else []
        if row is not None:
            sq_after = readings[0]
            self._after = (self._versions(), sq_after)
        if need:
            bsq = readings[-1]
        for gi, info in pend["info"].items():
            k = info["k"] if info["k"] is not None else self._signed(gi, bsq, host=True)
            self._carry[gi] = {"step": pend["step"], "c": info["c"], "k": k, "lr": info["lr"]}
            if row is not None:
                eta = info["lr"]
                # -2 eta c + eta^2 k
                row["predicted"][gi] = -2.0 * eta * (info["c"] - 0.5 * eta * k)
        if row is None:
            return
        if self.exact_change:
            delta = {n: t.sub_(after[n]).neg_() for n, t in pend["before"].items()}
            for gi, g in enumerate(self.groups):
                sx, sy = _SIGNS[g.kind]
                # |P'|^2 - |P|^2 = 2 D.P' - |D|^2, D = P' - P
                ch = sx * (2 * _pair(g, g.inputs, delta, after) - _pair(g, g.inputs, delta))
                if g.outputs and sy:
                    ch = ch + sy * (
                        2 * _pair(g, g.outputs, delta, after) - _pair(g, g.outputs, delta)
                    )
                row["change"][gi] = ch
        else:  # I(after) - I(before), formed at export
            row["after"] = sq_after
        self._rows.append(row)
        self._steps.append(pend["step"])

    # -- measurement -----------------------------------------------------------------------
    def _measure(self, params: dict, grads: dict, sq: tuple) -> dict:
        """One record's raw readings (tensors as computed: the parameters' and gradients'
        passes, ``w.g_w`` per unit group; `group()` combines, converts and derives the
        rest once)."""
        gsq, gw = self._squares(grads, dot=params)
        row: dict[str, Any] = {
            "p": sq,
            "g": gsq,
            "after": None,
            "gw": gw,
            "owner": {},
            "lr": {},
            "predicted": {},
            "change": {},
        }
        for gi, g in enumerate(self.groups):
            if _matrix(g):
                continue
            if g.kind == "rescale" and (self.owner_cos is not None or g.name in self.owner_units):
                row["owner"][gi] = self._owners(g, params)
        return row

    def _unpack(self, row: dict, gi: int) -> dict:
        """Group ``gi``'s fields of one raw record, sides combined in float64."""
        f64 = torch.float64
        out = {
            "in_sq": self._side(row["p"], gi, 0, f64),
            "out_sq": self._side(row["p"], gi, 1, f64),
            "g_in_sq": self._side(row["g"], gi, 0, f64),
            "g_out_sq": self._side(row["g"], gi, 1, f64),
            "gw_dot_w": _resolve(row["gw"].get(gi)),
            "change": row["change"].get(gi),
            "predicted": _resolve(row["predicted"].get(gi)),
        }
        if row["after"] is not None:
            out["in_after"] = self._side(row["after"], gi, 0, f64)
            out["out_after"] = self._side(row["after"], gi, 1, f64)
        if gi in row["lr"]:
            out["lr"] = row["lr"][gi]
        if gi in row["owner"]:
            out["owner"], out["cluster"] = row["owner"][gi]
        return out

    def _owners(self, g: UnitGroup, params: dict) -> tuple[np.ndarray, np.ndarray]:
        r"""Per unit the owner of its cluster (``-1``: a tie or no cluster) and the cluster's
        label (its first member; ``-1``: none). Clusters are the fixed ``owner_units`` of the
        group (their feature frozen at the first record) or, otherwise, the connected components
        of $\cos(w_i, w_j) \ge \mathit{owner\_cos}$ (their feature read at each record)."""
        from scipy.sparse.csgraph import connected_components

        n = g.n_units
        w = (
            torch.cat([blocks(params[s.name], s, n).reshape(n, -1) for s in g.inputs], 1)
            .double()
            .cpu()
            .numpy()
        )
        a = (
            torch.cat([blocks(params[s.name], s, n).reshape(n, -1) for s in g.outputs], 1)
            .double()
            .cpu()
            .numpy()
        )
        wn = np.linalg.norm(w, axis=1)
        u = w / np.where(wn > 0, wn, 1.0)[:, None]
        fixed = self.owner_units.get(g.name)
        if fixed is not None:
            clusters = [np.asarray(c, dtype=np.int64) for c in fixed]
        else:
            assert self.owner_cos is not None, "clusters come from owner_units or owner_cos"
            _, label = connected_components((u @ u.T) >= self.owner_cos, directed=False)
            clusters = [np.flatnonzero(label == lab) for lab in np.unique(label)]
        owner = np.full(n, -1, dtype=np.int64)
        cluster = np.full(n, -1, dtype=np.int64)
        for ci, members in enumerate(clusters):
            if members.size < 2:
                continue
            cluster[members] = members[0]
            key = (g.name, ci)
            if fixed is not None and key in self._features:
                v, c_hat = self._features[key]
            else:
                v, c_hat = _feature(u[members], a[members] * wn[members, None])
                if fixed is not None:
                    self._features[key] = (v, c_hat)
            owner[members] = _owner_of(members, a[members] @ c_hat, w[members] @ v)
        return owner, cluster

    @torch.no_grad()
    def record(self, step: int | None = None) -> None:
        """Record the current state (invariants, norms, gradients in ``.grad`` if any); change
        and prediction are NaN. ``step`` defaults to the number of records so far."""
        params = {n: self._params[n].detach() for n in self._names}
        self._rows.append(self._measure(params, self._grads(), self._norms(params, fresh=True)))
        self._steps.append(len(self._steps) if step is None else int(step))

    # -- export ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._steps)

    def group(self, name_or_index: str | int, *, last: bool = False) -> dict[str, np.ndarray]:
        """The recorded arrays of one group (by name or index), with the derived mobilities and
        dissipation parts for rescaling units; ``last=True``: of the last record only (a
        leading axis of length 1, or 0 before the first record), without the history."""
        if isinstance(name_or_index, str):
            names = [g.name for g in self.groups]
            if name_or_index not in names:
                raise InputError(f"group={name_or_index!r} is not allowed; use one of {names}")
            gi = names.index(name_or_index)
        else:
            gi = int(name_or_index)
            if not 0 <= gi < len(self.groups):
                raise InputError(
                    f"group={name_or_index!r} is not allowed; use 0..{len(self.groups) - 1}"
                )
        g = self.groups[gi]
        rows = [self._row(r, gi) for r in (self._rows[-1:] if last else self._rows)]
        shape = (len(rows), g.n_units, g.block, g.block) if _matrix(g) else (len(rows), g.n_units)
        col = {
            k: _column(rows, k, shape)
            for k in (
                "in_sq",
                "out_sq",
                "g_in_sq",
                "g_out_sq",
                "in_after",
                "out_after",
                "change",
                "predicted",
            )
        }
        sx, sy = _SIGNS[g.kind]
        for k in ("out_sq", "g_out_sq", "out_after"):  # a scale unit has no output side
            if not g.outputs:
                col[k] = np.where(np.isnan(col[k.replace("out", "in")]), np.nan, 0.0)
        out = {"invariant": sx * col["in_sq"] + sy * col["out_sq"]}
        measured = np.isnan(col["change"]) & ~np.isnan(col["in_after"])
        col["change"] = np.where(
            measured,
            sx * (col["in_after"] - col["in_sq"]) + sy * (col["out_after"] - col["out_sq"]),
            col["change"],
        )
        lr = np.array([r.get("lr", np.nan) for r in rows]).reshape(-1, *[1] * (len(shape) - 1))
        gd = np.isnan(col["predicted"]) & ~np.isnan(lr)
        col["predicted"] = np.where(
            gd, lr**2 * (sx * col["g_in_sq"] + sy * col["g_out_sq"]), col["predicted"]
        )
        out |= {k: col[k] for k in FIELDS[1:-1]}
        if not _matrix(g):
            out["gw_dot_w"] = _column(rows, "gw_dot_w", shape)
        if rows and "owner" in rows[0]:
            out["owner"] = np.stack([r["owner"] for r in rows])
            out["cluster"] = np.stack([r["cluster"] for r in rows])
        if g.kind == "rescale":
            from ..theory import dissipation_split, mobilities

            out["mu_R"], out["mu_T"] = mobilities(out["out_sq"], out["in_sq"])
            out["reaction"], out["transport"] = dissipation_split(
                out["g_out_sq"], out["g_in_sq"], out["gw_dot_w"], out["in_sq"]
            )
        return out

    def completeness(self, inputs, **kwargs):
        """Whether the invariants this recorder records are all the conservation laws of the
        model's gradient flow: `conservation_laws()` of the model with the
        recorded invariants as the known laws and its groups' symmetries as the known
        generators (``inputs`` and ``kwargs`` as there). ``result.complete`` says whether they
        are all the laws, ``result.known["missing"]`` how many independent laws they miss,
        ``result.generators["noether"]`` whether the groups' symmetric generators are the laws'
        gradients."""
        from ._invariants import group_generators, group_invariants
        from ._laws import conservation_laws

        groups = self.groups
        return conservation_laws(
            self.model,
            inputs,
            known=lambda p: group_invariants(groups, p),
            generators=lambda p: group_generators(groups, p),
            **kwargs,
        )

    def export(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, metadata)`` ready for the result store: ``step (S,)`` and, per group
        ``i``, ``g<i>_<field>`` for `FIELDS` (and `DERIVED` for rescaling units,
        ``owner``/``cluster`` with ownership)."""
        arrays = {"step": np.asarray(self._steps, dtype=np.int64)}
        for gi in range(len(self.groups)):
            for k, v in self.group(gi).items():
                arrays[f"g{gi}_{k}"] = v
        return arrays, self.metadata()

    def metadata(self) -> dict:
        from .._meta import versions

        return {
            "optimizer": type(self.optimizer).__name__ if self.optimizer is not None else None,
            "every": self.every,
            "exact_change": self.exact_change,
            "owner_cos": self.owner_cos,
            "owner_units": self.owner_units,
            "steps_seen": self._count,
            "groups": [
                {**g.describe(), "prediction": rule} for g, rule in zip(self.groups, self._rules)
            ],
            "discovery": self.report,
            "fields": list(FIELDS),
            "derived": list(DERIVED),
            "definitions": {
                "invariant": "rescale: |a|^2 - |w|^2 (bias in w); scale: |w|^2; qk: W_Q W_Q^T - "
                "W_K W_K^T; vo: W_V W_V^T - W_O^T W_O (per head, bias rows in "
                "W_Q, W_K, W_V; per key/value head of grouped-query attention, "
                "its query heads summed); gl: W_1 W_1^T + b_1 b_1^T - W_2^T W_2; "
                "frozen: the entry squared",
                "change": "I(after step) - I(before step); exact_change: sum s (2 D.P' - |D|^2),"
                " D = P' - P",
                "predicted": "-2 eta c_t + eta^2 k_t; GD: eta^2 (|g_a|^2 - |g_w|^2); momentum "
                "mu, dampening tau, weight decay lambda: c_t = mu (c_{t-1} - eta "
                "k_{t-1}) + (1 - tau) lambda I_t, k_t = sum s |b_t|^2; NaN: measured "
                "only",
                "mu_R": "|a|^2 + |w|^2",
                "mu_T": "1 / |w|^2",
                "reaction": "|g_a|^2 + (u.g_w)^2",
                "transport": "|g_w|^2 - (u.g_w)^2",
                "owner": "within a cluster (owner_units, feature frozen at the first record; "
                "else connected components of input cosine >= owner_cos): argmax of "
                "(a_i.c^)(w_i.v), v the cluster's mean direction, c^ its summed "
                "output a_i |w_i| normalised (theory owner_sets, tie_rtol); -1 for a "
                "tie or no cluster",
            },
            "versions": versions(),
        }
