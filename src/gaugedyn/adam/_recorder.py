"""A recorder of the update decomposition for a live ``torch.optim.Adam`` / ``AdamW``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._errors import InputError
from ._decomposition import PARTS, bias_corrections, shares, split_update
from ._native import BACKENDS
from ._notify import StateChange, watch_state
from ._state import _RowClock, row_steps

NORM_NAMES: tuple[str, ...] = (*PARTS, "residual", "update")
SAMPLE_FIELDS: tuple[str, ...] = ("grad", "m", "v", "w", *PARTS, "update", "param")


class AdamRecorder:
    r"""Records, per optimizer step and parameter group, the split of Adam's update.

    Attaches step pre/post hooks to an existing ``torch.optim.Adam`` or ``AdamW`` and reads the
    optimizer's own state ``(m_t, v_t, t)``; it keeps one extra tensor per parameter, the first
    moment with the second moment's memory $w_t = \beta_2 w_{t-1} + (1-\beta_2) g_t$ (none when
    $\beta_1 = \beta_2$: then $w$ *is* $m$ and the lag part is exactly zero). The effective gradient
    ``g_t`` includes coupled weight decay, ``maximize`` and the fused path's ``grad_scale``.
    A step whose state counter did not advance (an AMP ``GradScaler`` skip) is not recorded and
    leaves ``w`` unchanged.

    Per recorded step and group: the Euclidean norms of the parts
    ``sign, lag, transition, ratio, eps``, of ``residual = transition + ratio + eps`` and of the
    update $u = \hat m/(\sqrt{\hat v}+\epsilon)$, plus the fraction of coordinates in transition. With
    ``sample > 0`` it also records, at a fixed random sample of coordinates per group, the
    gradient, ``m``, ``v``, ``w``, the parts, the update and the parameter after the step.

    The eager path (non-CPU tensors, and the fallback) reduces each parameter in cache-sized
    chunks (small tensors packed together; ``w`` is updated chunk by chunk in the same sweep)
    with about twenty passes per chunk, and keeps the partial sums on the device until one
    transfer per step.
    ``compile=True`` computes the same sums in one fused ``torch.compile`` kernel per parameter
    (one pass over memory; needs a working inductor backend and pays a one-off compilation).
    The native kernel computes them in one compiled C++ sweep per parameter (contiguous
    float32/float64 CPU tensors; ``w`` updated in the same sweep; the roots $1/\sqrt{v}$ and
    $1/(\sqrt{v} + \epsilon c)$ by a square root and two divisions in the tensors' dtype, within
    one and two of its epsilons, ``gaugedyn.adam._native.ROOT_BOUNDS``; the sums added in the
    dtype within blocks of 2,048 entries, in double across blocks), built once per machine with
    ``torch.utils.cpp_extension`` (g++ and ninja; see ``gaugedyn.adam._native.BUILD_TIME``, said
    on stderr when it starts, then cached); other tensors, and every tensor when the build fails
    (logged once, no warning) or ``GAUGEDYN_NATIVE=0`` is set, take the eager path. Its fast
    path makes one kernel call per parameter group and step, the group's tensors swept one after
    the other into one row of sums, with no Python per parameter; it declines, and the group
    takes the same kernel one tensor at a time (same sums up to the order of additions in
    double, same ``w``), where a tensor of the group is not eligible (another dtype than the
    group's first, not contiguous, not on the CPU), where the group's parameters stepped at
    different counts, with ``sample > 0``, or where rows keep their own step counts. The default
    ``backend="auto"`` uses the kernel when it is already built and the optimizer holds such a
    CPU tensor, and never starts a build; ``"native"`` asks for it (building it once if need
    be) and logs when it is unavailable; ``"eager"`` never uses it. ``compile=True`` takes
    precedence over ``backend``.
    **The fused step** (``fuse_step=True``; it needs the native kernel and builds it if need be):
    the recorder makes the optimizer's update itself, in the sweep that updates ``w`` and sums
    the parts, block by block while a block is in cache: ``m`` and ``v`` as ``torch.optim.Adam``'s
    single-tensor path writes them (its ``lerp_`` and ``addcmul_`` are fused multiply-adds on the
    CPU), the square root of ``v`` by torch's own ``sqrt`` (not correctly rounded in every build,
    so computed by torch's kernel), ``p`` by ``addcdiv_``'s formula, and the step count; the
    gradients are set aside while the optimizer's own ``step()`` runs (it finds none and
    changes nothing) and given back after it. The parameters and the optimizer's state are
    those ``torch.optim.Adam`` writes, bit for bit: checked once per process and dtype on a probe
    (``fused_step_matches_torch()``), and the recorder is refused where they would differ. It
    supports ``Adam`` and ``AdamW`` with ``weight_decay=0`` on the single-tensor path
    (``foreach`` and ``fused`` not ``True``), a float ``lr``, ``capturable`` and
    ``differentiable`` off, contiguous float32/float64 CPU parameters, ``sample=0`` and
    ``compile=False``; anything else is refused with one sentence (``FUSED_SUPPORT``). A step
    given a closure, the first step (torch makes its state), a group whose parameters are at
    two step counts and rows with their own step counts go through torch's update and the
    hooks, recording the same.
    A recorded step keeps its raw sums; they become norms when first read (`norms()`,
    `latest()`, `export()`, `state_dict()`), so the hooks do no more per step than the sweep
    and one copy of its sums.
    ``every = k`` computes the aggregates only at steps ``t`` divisible by ``k`` (``w`` is still
    updated every step). Closures that compute gradients inside ``step(closure)`` are not seen by
    the pre-hook and are not supported. Attach before the first step for exact ``w``; attached
    later (after ``k`` steps), $w_k$ is taken as $m_k (1-\beta_2^k)/(1-\beta_1^k)$ so that
    $\hat w_k = \hat m_k$ (noted in ``metadata()['attached_at_step']``).

    **Through state surgery.** The state toolkit (``reset``, ``exchange``, ``transplant``,
    ``restore``, ..., and `gaugedyn.gauge.rescale_units()`) tells the recorder what it wrote
    (`gaugedyn.adam.watch_state()`): where ``m`` was written, ``w`` is set as a recorder
    attached at that moment would set it ($w = m (1-\beta_2^t)/(1-\beta_1^t)$, zero at $t = 0$);
    where ``m`` was rescaled (a gauge transformation), ``w`` is rescaled alike; where only ``v``
    or the step count was written, ``w`` (a history of the gradients, like ``m``) is kept. Rows
    reset with ``restart=True`` keep their own step count ``s``; the recorder splits their
    update with ``s``, as the toolkit's step hooks apply it. **Resuming.** `state_dict()`
    and `load_state_dict()` (torch's convention: parameters by their position in
    ``optimizer.param_groups``) carry ``w`` and the history, so a recorder restored beside a
    restored optimizer continues bit for bit. ``with AdamRecorder(opt) as rec:`` detaches on
    exit. With ``sample > 0``, `export()` gives each sampled coordinate's parameter and
    flat index (``model=`` names the parameters).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        sample: int = 0,
        seed: int = 0,
        every: int = 1,
        compile: bool = False,
        backend: str = "auto",
        model: torch.nn.Module | None = None,
        fuse_step: bool = False,
    ):
        if not isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
            raise InputError(
                f"optimizer={type(optimizer).__name__} is not allowed; use torch.optim.Adam or AdamW"
            )
        if int(every) < 1:
            raise InputError(f"every={every!r} is not allowed; use an integer >= 1")
        if backend not in BACKENDS:
            raise InputError(f"backend={backend!r} is not allowed; use one of {BACKENDS}")
        if int(sample) < 0:
            raise InputError(f"sample={sample!r} is not allowed; use an integer >= 0")
        for g in optimizer.param_groups:
            if g.get("amsgrad", False):
                raise InputError("amsgrad=True is not allowed; the decomposition assumes v^ itself")
        self.optimizer = optimizer
        self.sample = int(sample)
        self.every = int(every)
        self.compile = bool(compile)
        self.backend = backend
        from ._native import resolve_backend

        params = [p for g in optimizer.param_groups for p in g["params"]]
        wanted = "native" if fuse_step and backend == "auto" else backend  # it needs the kernel
        self._backend, self._native = resolve_backend(wanted, self.compile, params)
        self._seed = int(seed)
        self._w: dict[torch.Tensor, torch.Tensor] = {}
        # this step's effective gradient and step count before it, by id(parameter) (a tensor
        # key hashes through Python; an id does not), set by the pre-hook, read by the post-hook
        self._g: dict[int, tuple[torch.Tensor, int]] = {}
        self._buffers: dict = {}
        self._sample_idx: list[list[tuple[torch.Tensor, torch.Tensor, np.ndarray]]] | None = None
        self._steps: list[int] = []
        self._pending: list[tuple[dict, list]] = []  # recorded, not yet settled (_finish)
        self._norm_rows: list[np.ndarray] = []
        self._trans_rows: list[np.ndarray] = []
        self._samples: list[dict[str, list[np.ndarray]]] = []
        self._counts = np.array(
            [sum(p.numel() for p in g["params"]) for g in optimizer.param_groups]
        )
        self.skipped = 0
        self.attached_at_step = self._max_step()
        self._group = {id(p): g for g in optimizer.param_groups for p in g["params"]}
        names = {id(q): n for n, q in model.named_parameters()} if model is not None else {}
        self._param_names = [
            [names.get(id(q), f"param_groups[{gi}][{j}]") for j, q in enumerate(g["params"])]
            for gi, g in enumerate(optimizer.param_groups)
        ]
        self.fuse_step = bool(fuse_step)
        self._fused_now: tuple | None = None
        if self.fuse_step:
            _fused_refusal(self)
        self._handles = [
            optimizer.register_step_pre_hook(self._pre_fused if self.fuse_step else self._pre),
            optimizer.register_step_post_hook(self._post_fused if self.fuse_step else self._post),
        ]
        self._watch = watch_state(
            [q for g in optimizer.param_groups for q in g["params"]], self._state_changed
        )

    def __enter__(self) -> AdamRecorder:
        return self

    def __exit__(self, *exc) -> None:
        self.detach()

    def _scratch(self, like: torch.Tensor, dtype: torch.dtype | None = None) -> _Scratch:
        key = (like.device, dtype or like.dtype)
        sc = self._buffers.get(key)
        if sc is None:
            sc = self._buffers[key] = _Scratch(*key)
        return sc

    def _max_step(self) -> int:
        steps = [int(st["step"]) for st in self.optimizer.state.values() if "step" in st]
        return max(steps, default=0)

    def passes(self) -> dict[str, float]:
        """Passes over the optimizer's parameter memory per recorded step (each entry: elements
        over the parameter count): ``reads`` (``g``, ``m``, ``v`` and, unless ``b1 == b2``,
        ``w``), ``writes`` (``w``, updated in the same sweep) and ``total``. The native kernel
        and ``compile=True`` read each once (the native kernel in one call per parameter group,
        see the class docstring); the eager path reads them once from memory too,
        chunk by chunk, and makes its thirteen elementwise passes and eight reductions over
        cache-sized chunks. With ``fuse_step=True`` the sweep is the optimizer's update too: it
        also reads the parameters and writes them, ``m`` and ``v`` (and the optimizer's own
        update, which would make its own passes over them, makes none)."""
        count = reads = writes = 0
        for g in self.optimizer.param_groups:
            tied = float(g["betas"][0]) == float(g["betas"][1])
            n = sum(p.numel() for p in g["params"])
            count += n
            reads += n * ((3 if tied else 4) + self.fuse_step)
            writes += n * ((0 if tied else 1) + 3 * self.fuse_step)
        count = count or 1
        return {"reads": reads / count, "writes": writes / count, "total": (reads + writes) / count}

    def detach(self) -> None:
        """Remove the hooks and release the extra state (what was recorded stays)."""
        for h in self._handles:
            h.remove()
        self._handles = []
        self._watch.remove()
        self._w.clear()
        self._g.clear()
        self._buffers.clear()

    @staticmethod
    def _decoupled(optimizer, group) -> bool:
        return bool(group.get("decoupled_weight_decay", isinstance(optimizer, torch.optim.AdamW)))

    @torch.no_grad()
    def _pre(self, optimizer, args, kwargs):
        self._g.clear()
        scale = getattr(optimizer, "grad_scale", None)
        state = optimizer.state
        for group in optimizer.param_groups:  # the group's options read once, not per parameter
            wd = group["weight_decay"]
            negate = group.get("maximize", False)
            unscale = bool(group.get("fused")) and scale is not None
            coupled = wd != 0 and not self._decoupled(optimizer, group)
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if negate:
                    g = -g
                if unscale:
                    g = g / scale.to(g.device)
                if coupled:
                    g = g.add(p, alpha=wd)
                st = state.get(p, {})
                prev = int(st["step"]) if "step" in st else 0
                self._g[id(p)] = (g, prev)
                if prev > 0 and p not in self._w:
                    self._late_w(p, st, group)
        return None

    def _late_w(self, p, st, group) -> None:
        r"""Attached after ``k`` steps: ``w_k`` such that $\hat w_k = \hat m_k$, i.e.
        $w_k = m_k (1 - \beta_2^k) / (1 - \beta_1^k)$, from the state *before* step ``k + 1``."""
        b1, b2 = (float(b) for b in group["betas"])
        if b1 != b2 and "exp_avg" in st:
            self._w[p] = self._fresh_w(p, st, b1, b2)

    def _fresh_w(self, p, st, b1: float, b2: float) -> torch.Tensor:
        r"""The ``w`` a recorder attached now would take: $m (1 - \beta_2^t)/(1 - \beta_1^t)$ with each
        entry's step count ``t`` (rows reset with ``restart=True`` keep their own), 0 at
        ``t = 0``."""
        m = st["exp_avg"]
        counts = row_steps(self.optimizer, p)
        if counts is None:
            t = float(st["step"])
            if t == 0:
                return torch.zeros_like(m)
            bc1, bc2, _ = bias_corrections(t, b1, b2)
            return m * (bc2 / bc1)
        ratio = torch.zeros_like(counts)
        for s in torch.unique(counts).tolist():
            if s > 0:
                bc1, bc2, _ = bias_corrections(s, b1, b2)
                ratio[counts == s] = bc2 / bc1
        return (m.double() * ratio).to(m.dtype)

    @torch.no_grad()
    def _state_changed(self, changes: list[StateChange]) -> None:
        """Move or reset ``w`` where the state toolkit wrote (see the class docstring)."""
        for ch in changes:
            w = self._w.get(ch.param)
            if w is None:  # not seen yet (set at the next step), or tied betas (w is m)
                continue
            if ch.scale is not None:
                scale = torch.as_tensor(ch.scale, device=w.device).double()
                new = (_rows(w, ch.rows).double() * scale).to(w.dtype)
            elif "exp_avg" in ch.keys:
                b1, b2 = (float(b) for b in self._group[id(ch.param)]["betas"])
                st = self.optimizer.state[ch.param]
                new = _rows(self._fresh_w(ch.param, st, b1, b2), ch.rows)
            else:
                continue
            if ch.rows is None:
                w.copy_(new)
            else:
                w.index_copy_(ch.rows[0], torch.as_tensor(ch.rows[1], device=w.device), new)

    def _init_samples(self) -> None:
        rng = np.random.default_rng(self._seed)
        out = []
        for group in self.optimizer.param_groups:
            sizes = np.array([p.numel() for p in group["params"]])
            total = int(sizes.sum())
            k = min(self.sample, total)
            flat = np.sort(rng.choice(total, size=k, replace=False)) if k else np.zeros(0, int)
            offsets = np.concatenate([[0], np.cumsum(sizes)])
            per = []
            for i, p in enumerate(group["params"]):
                sel = flat[(flat >= offsets[i]) & (flat < offsets[i + 1])] - offsets[i]
                if sel.size:
                    per.append((p, torch.as_tensor(sel, device=p.device), sel))
            out.append(per)
        self._sample_idx = out

    @torch.no_grad()
    def _post(self, optimizer, args, kwargs):
        if self.sample and self._sample_idx is None:
            self._init_samples()
        clocked = _has_clock(optimizer)
        n_groups = len(optimizer.param_groups)
        advanced = False
        samp = {f: [[] for _ in range(n_groups)] for f in SAMPLE_FIELDS} if self.sample else None
        step_seen = 0
        jobs: list[tuple[_Scratch, int, int, np.ndarray]] = []
        for gi, group in enumerate(optimizer.param_groups):
            b1, b2 = group["betas"]
            b1, b2 = float(b1), float(b2)
            eps = float(group["eps"])
            tied = b1 == b2
            live = []
            lerp_w, lerp_g = [], []
            for p in group["params"]:
                seen = self._g.get(id(p))
                if seen is None:
                    continue
                st = optimizer.state.get(p)
                if not st or "step" not in st:
                    continue
                g, prev = seen
                step = int(st["step"])
                if step == prev:
                    continue
                m, v = st["exp_avg"], st["exp_avg_sq"]
                if tied:
                    w = m
                else:
                    w = self._w.get(p)
                    if w is None:  # first step seen from the start (w_0 = 0; see _late_w)
                        w = self._w[p] = torch.zeros_like(m)
                advanced = True
                fuse = not tied and step % self.every == 0
                if not tied and not fuse:
                    lerp_w.append(w)
                    lerp_g.append(g if g.dtype == w.dtype else g.to(w.dtype))
                if step % self.every == 0:
                    live.append((p, g, m, v, w, step))
            if lerp_w:
                torch._foreach_lerp_(lerp_w, lerp_g, 1 - b2)
            if samp is None and not clocked and self._sweep_group(live, gi, tied, b2, jobs):
                step_seen = max(step_seen, live[0][5])
                continue
            packer = _Packer(self, gi, tied, jobs)
            for p, g, m, v, w, step in live:
                step_seen = max(step_seen, step)
                counts = row_steps(optimizer, p) if clocked else None
                if counts is None:
                    bc1, bc2, c = bias_corrections(step, b1, b2)
                    packer.add(m, v, w, g, step, bc1, bc2, c, eps, None if tied else 1 - b2)
                else:
                    bc1, bc2, c = _own_counts(packer, counts, m, v, w, g, b1, b2, eps, tied)
                if samp is not None:
                    for q, idx, _ in self._sample_idx[gi]:
                        if q is p:
                            _sample_into(samp, gi, idx, g, m, v, w, p, bc1, bc2, c, eps)
            packer.flush()
        self._g.clear()
        if not jobs:
            self.skipped += not advanced
            return
        self._finish(jobs, step_seen, samp)

    def _finish(self, jobs, step_seen: int, samp) -> None:
        """Record the step: its raw sums (each scratch table's rows, copied as Python floats)
        and ``jobs``, turned into norms only when they are read (`_settle()`). Every step pays
        one copy per table; the scaling, square roots and arrays, which cost more than the sweep's
        own Python after sweeps that leave the interpreter's caches cold, are paid once per
        read, for all steps since the last."""
        rows = {}
        for s, *_ in jobs:
            if id(s) not in rows:
                rows[id(s)] = s.taken()
        self._pending.append((rows, [(id(s), j, gi, scale) for s, j, gi, scale in jobs]))
        self._steps.append(step_seen)
        if len(self._pending) >= _SETTLE_EVERY:  # a run that never reads keeps norms, not rows
            self._settle()
        if samp is not None:
            self._samples.append(
                {
                    f: [torch.cat(x).numpy() if x else np.zeros(0) for x in samp[f]]
                    for f in SAMPLE_FIELDS
                }
            )

    def _fused_plan(self, optimizer, args, kwargs) -> list | None:
        """What the fused step will do, checked before anything is written: per group
        ``(gi, [(p, state)], step before the update)``; ``None`` (the hooks' path this step)
        with a closure, a group whose parameters are at different step counts or not yet
        stepped, rows with their own step counts, a tensor ``lr`` or an ineligible tensor."""
        from ._native import eligible

        given = [*args[1:], *kwargs.values()]  # args[0] is the optimizer; then a closure
        if any(x is not None for x in given) or _has_clock(optimizer):
            return None
        plan = []
        for gi, group in enumerate(optimizer.param_groups):
            if torch.is_tensor(group["lr"]):
                return None
            tied = float(group["betas"][0]) == float(group["betas"][1])
            items, steps = [], set()
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = optimizer.state.get(p)
                if not st or "step" not in st or int(st["step"]) == 0:
                    return None
                w = st["exp_avg"] if tied else self._w.get(p, st["exp_avg"])
                if p.grad.is_sparse or not eligible(p, p.grad, st["exp_avg"], st["exp_avg_sq"], w):
                    return None
                items.append((p, st))
                steps.add(int(st["step"]))
            if len(steps) > 1:
                return None
            if items:
                plan.append((gi, items, steps.pop()))
        return plan

    @torch.no_grad()
    def _pre_fused(self, optimizer, args, kwargs):
        """``fuse_step=True``: the optimizer's update, ``w`` and the sums in one native sweep per
        tensor (see the class docstring); the parameters' gradients are set aside until
        `_post_fused()`, so the optimizer's own step finds none and changes nothing."""
        self._fused_now = None
        plan = self._fused_plan(optimizer, args, kwargs)
        if plan is None:
            return self._pre(optimizer, args, kwargs)
        nat = self._native
        jobs = []
        stash = []
        step_seen = 0
        for gi, items, before in plan:
            group = optimizer.param_groups[gi]
            b1, b2 = (float(b) for b in group["betas"])
            eps, lr = float(group["eps"]), float(group["lr"])
            tied = b1 == b2
            if not tied:
                for p, st in items:
                    if p not in self._w:  # attached after `before` steps (see _late_w)
                        self._late_w(p, st, group)
            step = before + 1
            for _, st in items:
                st["step"] += 1  # as torch.optim.Adam counts (in place)
            bc1, bc2, c = bias_corrections(step, b1, b2)
            record = step % self.every == 0
            if record:
                sc = self._scratch(items[0][0], torch.float64)
                j = sc.slot()
                out = sc.row(j)
            else:
                out = torch.empty(8, dtype=torch.float64)
            ms = [st["exp_avg"] for _, st in items]
            done = nat.adam_step_many(
                [p.detach() for p, _ in items],
                ms,
                [st["exp_avg_sq"] for _, st in items],
                [p.grad for p, _ in items],
                ms if tied else [self._w[p] for p, _ in items],
                lr,
                b1,
                b2,
                eps,
                step,
                bool(group.get("maximize", False)),
                tied,
                record,
                bc1 / bc2,
                c / bc2,
                eps * c,
                out,
            )
            if not done:  # _fused_plan checked every tensor
                raise RuntimeError("gaugedyn: the fused Adam step declined a checked group")
            # written in place, as torch's in-place update would count them for autograd
            torch.autograd.graph.increment_version([p for p, _ in items] + ms)
            if record:
                jobs.append((sc, j, gi, sum_scale(bc1, bc2, c, eps, tied)))
                step_seen = max(step_seen, step)
            for p, _ in items:
                stash.append((p, p.grad))
                p.grad = None
        self._fused_now = (jobs, step_seen, stash)
        return None

    @torch.no_grad()
    def _post_fused(self, optimizer, args, kwargs):
        now, self._fused_now = self._fused_now, None
        if now is None:
            return self._post(optimizer, args, kwargs)
        jobs, step_seen, stash = now
        for p, g in stash:
            p.grad = g
        if jobs:
            self._finish(jobs, step_seen, None)
        return None

    def _sweep_group(self, live, gi: int, tied: bool, b2: float, jobs) -> bool:
        """The native fast path: one kernel call for the whole group (``live``: its parameters
        that stepped, each ``(p, g, m, v, w, step)``), its sums added into one row; ``False``
        (nothing done) unless the kernel is loaded and every tensor is eligible at one step
        count, and then the caller sums tensor by tensor."""
        nat: Any = self._native  # the _native module, or None
        if nat is None or not live or live[0][2].device.type != "cpu":
            return False
        step = live[0][5]
        if any(x[5] != step for x in live):
            return False
        group = self.optimizer.param_groups[gi]
        b1, eps = float(group["betas"][0]), float(group["eps"])
        bc1, bc2, c = bias_corrections(step, b1, b2)
        ms = [x[2] for x in live]
        sc = self._scratch(ms[0], torch.float64)  # native sums are double on the CPU
        j = sc.slot()
        done = nat.adam_sums_many(
            ms,
            [x[3] for x in live],
            ms if tied else [x[4] for x in live],
            [x[1] for x in live],
            bc1 / bc2,
            c / bc2,
            eps * c,
            None if tied else 1 - b2,
            tied,
            sc.row(j),
        )
        if not done:
            sc.n -= 1
            return False
        jobs.append((sc, j, gi, sum_scale(bc1, bc2, c, eps, tied)))
        return True

    def _settle(self) -> None:
        """Turn the pending steps' raw sums into norms and transition fractions, a run of steps
        with the same jobs at a time in arrays: per group, the jobs' scaled sums added in job
        order (the double operations of the per-step code before, in the same order), then the
        square roots."""
        names, pending = len(NORM_NAMES), self._pending
        counts = np.maximum(self._counts, 1)
        i = 0
        while i < len(pending):
            shape = [job[:3] for job in pending[i][1]]
            k = i + 1
            while k < len(pending) and [job[:3] for job in pending[k][1]] == shape:
                k += 1
            run = pending[i:k]
            raw = np.array([[rows[key][j] for key, j, _, _ in jobs] for rows, jobs in run])
            scale = np.array([[job[3] for job in jobs] for _, jobs in run])
            sq = np.zeros((k - i, len(counts), names + 1))
            with np.errstate(invalid="ignore", over="ignore"):
                # a zero scale marks a part that is exactly 0 (lag when tied, eps without eps):
                # its raw sum is not read, even if inf
                part = np.where(scale != 0.0, raw * scale, 0.0)
                for col, (_, _, gi) in enumerate(shape):
                    sq[:, gi] += part[:, col]
                norms = np.sqrt(sq[..., :names])
            # sum t^2 = n1 + 4 n2, sum |t| = n1 + 2 n2
            trans = (sq[..., -1] - (sq[..., 2] - sq[..., -1]) / 2) / counts
            self._norm_rows.extend(norms)
            self._trans_rows.extend(trans)
            i = k
        pending.clear()

    @property
    def _norms(self) -> list[np.ndarray]:
        """Per recorded step, the ``(G, len(NORM_NAMES))`` norms (pending steps settled first)."""
        if self._pending:
            self._settle()
        return self._norm_rows

    @_norms.setter
    def _norms(self, rows: list[np.ndarray]) -> None:
        self._pending.clear()
        self._norm_rows = rows

    @property
    def _trans(self) -> list[np.ndarray]:
        """Per recorded step, the ``(G,)`` transition fractions (pending steps settled first)."""
        if self._pending:
            self._settle()
        return self._trans_rows

    @_trans.setter
    def _trans(self, rows: list[np.ndarray]) -> None:
        self._pending.clear()
        self._trans_rows = rows

    def __len__(self) -> int:
        return len(self._steps)

    def norms(self) -> np.ndarray:
        """Norms, shape ``(recorded steps, groups, len(NORM_NAMES))``."""
        if not self._norms:
            return np.zeros((0, len(self.optimizer.param_groups), len(NORM_NAMES)))
        return np.stack(self._norms)

    def latest(self) -> dict | None:
        """The last recorded step (``None`` before the first): ``{"step", "norms" (G, 7),
        "transition_frac" (G,)}``, the last rows of `export()`'s arrays, without stacking
        the history (what a monitor streams every step)."""
        if not self._steps:
            return None
        return {
            "step": self._steps[-1],
            "norms": self._norms[-1],
            "transition_frac": self._trans[-1],
        }

    def shares(self, group: int | None = None) -> dict[str, np.ndarray]:
        r"""Sign, lag and residual shares per step ($\text{share}_k = |p_k| / \sum_j |p_j|$).

        ``group=None`` pools the groups (norms combined in quadrature).
        """
        n = self.norms()
        n = np.sqrt((n**2).sum(axis=1)) if group is None else n[:, group]
        return shares({k: n[:, i] for i, k in enumerate(NORM_NAMES)})

    def export(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, metadata)`` ready for the result store.

        ``arrays``: ``step (S,)``, ``norms (S, G, 7)``, ``transition_frac (S, G)``,
        ``n_coords (G,)`` and, with sampling, ``sample_<field>_g<i> (S, K_i)`` with the
        coordinates ``sample_tensor_g<i>`` and ``sample_index_g<i>`` ``(K_i,)``
        (`sample_coordinates()`; the parameters' names and shapes in
        ``metadata["parameters"]``).
        """
        arrays = {
            "step": np.asarray(self._steps, dtype=np.int64),
            "norms": self.norms(),
            "transition_frac": np.stack(self._trans) if self._trans else np.zeros((0, 0)),
            "n_coords": self._counts.astype(np.int64),
        }
        if self._samples:
            for gi in range(len(self.optimizer.param_groups)):
                for f in SAMPLE_FIELDS:
                    arrays[f"sample_{f}_g{gi}"] = np.stack([s[f][gi] for s in self._samples])
                param, index = self.sample_coordinates(gi)
                arrays[f"sample_tensor_g{gi}"], arrays[f"sample_index_g{gi}"] = param, index
        return arrays, self.metadata()

    def sample_coordinates(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """The sampled coordinates of ``group``, in the order of the ``sample_*`` columns: the
        position of each one's parameter in ``param_groups[group]["params"]`` (its name:
        ``metadata()["parameters"]``) and its flat index in that parameter
        (``numpy.unravel_index(index, shape)`` gives the entry)."""
        if self._sample_idx is None:
            self._init_samples()
        assert self._sample_idx is not None
        params = self.optimizer.param_groups[group]["params"]
        position = {id(q): j for j, q in enumerate(params)}
        per = self._sample_idx[group]
        param = [np.full(sel.size, position[id(q)], dtype=np.int64) for q, _, sel in per]
        index = [sel.astype(np.int64) for _, _, sel in per]
        empty = np.zeros(0, dtype=np.int64)
        return (
            np.concatenate(param) if param else empty,
            np.concatenate(index) if index else empty,
        )

    def state_dict(self) -> dict:
        """What a resumed recorder needs, in torch's convention (parameters by their position in
        the flattened ``optimizer.param_groups``): ``state`` (``{i: {"w": tensor}}``, the shadow
        moment), ``history`` (what was recorded) and ``counters``; every tensor a copy, so
        ``torch.save`` / ``torch.load(weights_only=True)`` round-trips it."""
        params = [q for g in self.optimizer.param_groups for q in g["params"]]
        history: dict[str, object] = {
            "step": torch.as_tensor(self._steps, dtype=torch.int64),
            "norms": torch.from_numpy(self.norms().copy()),
            "transition_frac": torch.from_numpy(
                np.stack(self._trans) if self._trans else np.zeros((0, len(self._counts)))
            ),
        }
        if self._samples:
            for gi in range(len(self.optimizer.param_groups)):
                for f in SAMPLE_FIELDS:
                    history[f"sample_{f}_g{gi}"] = torch.from_numpy(
                        np.stack([s[f][gi] for s in self._samples])
                    )
        return {
            "format": 1,
            "settings": {"sample": self.sample, "seed": self._seed, "every": self.every},
            "state": {
                i: {"w": self._w[q].detach().clone()} for i, q in enumerate(params) if q in self._w
            },
            "history": history,
            "counters": {"skipped": self.skipped, "attached_at_step": self.attached_at_step},
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()` into this recorder, attached to an optimizer with the same
        parameter layout and the same ``sample``, ``seed`` and ``every``; refused
        (`InputError`) otherwise, before anything changes."""
        params = [q for g in self.optimizer.param_groups for q in g["params"]]
        mine = {"sample": self.sample, "seed": self._seed, "every": self.every}
        if not isinstance(state, dict) or state.get("format") != 1:
            raise InputError("state is not an AdamRecorder.state_dict() (format 1)")
        if state.get("settings") != mine:
            raise InputError(
                f"state was recorded with {state.get('settings')}; this recorder has {mine}"
            )
        shadow = state.get("state", {})
        for i, entry in shadow.items():
            i = int(i)
            if not 0 <= i < len(params) or tuple(entry["w"].shape) != tuple(params[i].shape):
                raise InputError(
                    f"state entry {i} does not match a parameter of this optimizer (shape "
                    f"{tuple(entry['w'].shape)}); the parameter layout must be the same"
                )
        history = state["history"]
        norms = history["norms"].numpy()
        if norms.ndim != 3 or norms.shape[1:] != (len(self._counts), len(NORM_NAMES)):
            raise InputError(f"state's norms have shape {norms.shape}; not this optimizer's")
        self._w = {
            params[int(i)]: e["w"].detach().clone().to(params[int(i)].device)
            for i, e in shadow.items()
        }
        self._steps = [int(s) for s in history["step"].tolist()]
        self._norms = list(norms.copy())
        self._trans = list(history["transition_frac"].numpy().copy())
        self._samples = []
        if self.sample and self._steps:
            groups = range(len(self.optimizer.param_groups))
            cols = {
                f: [history[f"sample_{f}_g{gi}"].numpy() for gi in groups] for f in SAMPLE_FIELDS
            }
            self._samples = [
                {f: [cols[f][gi][k].copy() for gi in groups] for f in SAMPLE_FIELDS}
                for k in range(len(self._steps))
            ]
        self.skipped = int(state["counters"]["skipped"])
        self.attached_at_step = int(state["counters"]["attached_at_step"])

    def metadata(self) -> dict:
        from .._meta import versions

        groups = [
            {
                "betas": [float(b) for b in g["betas"]],
                "eps": float(g["eps"]),
                "lr": float(g["lr"]) if not torch.is_tensor(g["lr"]) else float(g["lr"].item()),
                "weight_decay": float(g["weight_decay"]),
                "decoupled_weight_decay": self._decoupled(self.optimizer, g),
                "foreach": g.get("foreach"),
                "fused": g.get("fused"),
                "maximize": bool(g.get("maximize", False)),
            }
            for g in self.optimizer.param_groups
        ]
        return {
            "optimizer": type(self.optimizer).__name__,
            "groups": groups,
            "norm_names": list(NORM_NAMES),
            "sample_fields": list(SAMPLE_FIELDS) if self.sample else [],
            "sample": self.sample,
            "parameters": [
                [
                    {"name": n, "shape": list(q.shape)}
                    for n, q in zip(names, self.optimizer.param_groups[gi]["params"])
                ]
                for gi, names in enumerate(self._param_names)
            ],
            "every": self.every,
            "compile": self.compile,
            "backend": self._backend,
            "fuse_step": self.fuse_step,
            "skipped_steps": self.skipped,
            "attached_at_step": self.attached_at_step,
            "definitions": {
                "update": "u = m^/(sqrt(v^)+eps), m^ = m/(1-b1^t), v^ = v/(1-b2^t) (torch.optim.Adam)",
                "w": "w_t = b2 w_{t-1} + (1-b2) g_t, w^ = w/(1-b2^t); w = m when b1 == b2",
                "sign": "sign(g_t)",
                "lag": "(m^ - w^)/(sqrt(v^)+eps)",
                "transition": "sign(w^) - sign(g_t)",
                "ratio": "w^/sqrt(v^) - sign(w^)",
                "eps": "-eps w^/(sqrt(v^)(sqrt(v^)+eps))",
                "residual": "transition + ratio + eps",
                "share": "|p_k|_2 / (|sign|_2 + |lag|_2 + |residual|_2)",
                "transition_frac": "fraction of coordinates with transition != 0",
            },
            "versions": versions(),
        }


_SETTLE_EVERY = 256
"""Recorded steps kept as raw sums before they are settled into norms unread (`_finish()`): a
pending step takes about 1.6 times the memory of a settled one (1,150 against 720 bytes, one
group of two parameters), and settling 256 steps at once about 1 ms."""

FUSED_SUPPORT = (
    "fuse_step=True supports torch.optim.Adam and AdamW with weight_decay=0 on the single-tensor "
    "path (foreach and fused not True), a float lr, capturable and differentiable False, "
    "contiguous float32/float64 CPU parameters, sample=0 and compile=False, with the native "
    "kernel"
)
"""What the fused step supports; anything else is refused with this sentence."""
_FUSED_BITS: dict = {}


def _fused_refusal(rec: AdamRecorder) -> None:
    """Refuse (`InputError`, one sentence naming what is not supported) a recorder that cannot
    take the fused step, or a machine whose torch the fused kernel does not reproduce bit for
    bit (checked once per process and dtype, `fused_step_matches_torch()`)."""
    from ._native import _ERROR

    why = None
    if rec.compile:
        why = "compile=True"
    elif rec.sample:
        why = f"sample={rec.sample}"
    for g in rec.optimizer.param_groups:
        for key in ("foreach", "fused", "capturable", "differentiable"):
            if why is None and g.get(key):
                why = f"{key}=True"
        if why is None and float(g["weight_decay"]) != 0.0:
            why = f"weight_decay={g['weight_decay']}"
        if why is None and torch.is_tensor(g["lr"]):
            why = "a tensor lr"
        for p in g["params"]:
            if why is None and not (
                p.device.type == "cpu" and p.dtype in (torch.float32, torch.float64)
                and p.is_contiguous()
            ):  # fmt: skip
                why = f"a {p.dtype} parameter on {p.device} (contiguous: {p.is_contiguous()})"
    if why is None and rec._backend != "native":
        why = "backend='eager'" if rec.backend == "eager" else f"no native kernel here ({_ERROR})"
    if why is not None:
        raise InputError(f"{FUSED_SUPPORT}; {why} is not")
    for dt in {p.dtype for g in rec.optimizer.param_groups for p in g["params"]}:
        if not fused_step_matches_torch(dt):
            raise InputError(
                f"fuse_step=True: the fused kernel does not reproduce this torch's "
                f"torch.optim.Adam bit for bit in {dt} on this machine; use fuse_step=False"
            )


def fused_step_matches_torch(dtype: torch.dtype = torch.float32) -> bool:
    """Whether the fused step reproduces ``torch.optim.Adam``'s single-tensor path bit for bit
    here: three steps of both, with and without ``maximize``, with ``foreach=False`` and with
    torch's default (``None``), on a probe of 4,099 entries (a partial SIMD block at the end),
    compared with ``torch.equal`` (once per process and dtype)."""
    if dtype in _FUSED_BITS:
        return _FUSED_BITS[dtype]
    from . import _native

    gen = torch.Generator().manual_seed(0)
    ok = True
    for maximize, foreach in ((False, False), (True, False), (False, None), (True, None)):
        p0 = torch.randn(4099, generator=gen, dtype=dtype)
        grads = [torch.randn(4099, generator=gen, dtype=dtype) * (1 + t) for t in range(3)]
        ref = torch.nn.Parameter(p0.clone())
        opt = torch.optim.Adam(
            [ref], lr=1e-2, betas=(0.9, 0.99), eps=1e-8, foreach=foreach, maximize=maximize
        )
        q, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
        out = torch.empty(8, dtype=torch.float64)
        for t, g in enumerate(grads):
            ref.grad = g.clone()
            opt.step()
            _native.adam_step_many(
                [q], [m], [v], [g], [m], 1e-2, 0.9, 0.99, 1e-8, t + 1, maximize, True, False,
                1.0, 1.0, 0.0, out,
            )  # fmt: skip
        st = opt.state[ref]
        ok = ok and all(
            torch.equal(a, b)
            for a, b in ((ref.detach(), q), (st["exp_avg"], m), (st["exp_avg_sq"], v))
        )
    _FUSED_BITS[dtype] = ok
    return ok


_CHUNK = 1 << 17
_PACK = 1 << 13  # tensors smaller than this are packed together into one chunk


class _Scratch:
    """Chunk-sized work rows and the per-step table of partial sums for one device and dtype."""

    def __init__(self, device, dtype):
        self.device, self.dtype = device, dtype
        self._rows = None
        self.acc = torch.empty(16, len(NORM_NAMES) + 1, device=device, dtype=dtype)
        self._row_views: list[torch.Tensor] | None = None
        self._view: np.ndarray | None = None  # see taken()
        self.n = 0

    @property
    def rows(self) -> torch.Tensor:
        if self._rows is None:
            self._rows = torch.empty(9, _CHUNK, device=self.device, dtype=self.dtype)
        return self._rows

    def slot(self) -> int:
        if self.n == self.acc.shape[0]:
            grown = torch.empty(
                2 * self.n, self.acc.shape[1], device=self.acc.device, dtype=self.acc.dtype
            )
            grown[: self.n] = self.acc
            self.acc = grown
            self._row_views = None
            self._view = None
        self.n += 1
        return self.n - 1

    def taken(self) -> np.ndarray:
        """A float64 copy of this step's rows, the table emptied for the next step (a CPU
        float64 table through a numpy view of it made once per table: one copy, no torch
        call)."""
        n, self.n = self.n, 0
        if self._view is None:
            if self.acc.device.type != "cpu" or self.acc.dtype != torch.float64:
                return self.acc[:n].double().cpu().numpy()
            self._view = self.acc.numpy()
        return self._view[:n].copy()

    def row(self, j: int) -> torch.Tensor:
        """Row ``j`` of the table (a view made once per table, not once per step)."""
        if self._row_views is None:
            self._row_views = list(self.acc.unbind(0))
        return self._row_views[j]


class _Packer:
    """Feeds tensors to `_chunk_sums()` chunk by chunk; small tensors of one step are packed."""

    def __init__(self, rec, gi, tied, jobs):
        self.rec, self.gi, self.tied, self.jobs = rec, gi, tied, jobs
        self.pending: list = []
        self.size = 0
        self.key = self.consts = None

    def add(self, m, v, w, g, step, bc1, bc2, c, eps, lerp: float | None) -> None:
        """Queue one tensor; ``lerp`` is the weight ``1 - b2`` of the update ``w <- lerp(w, g)``
        done here chunk by chunk, while the chunk is in cache (``None``: ``w`` is up to date)."""
        n = m.numel()
        nat = self.rec._native
        if nat is not None:
            gg = g if g.dtype == m.dtype else g.to(m.dtype)
            if nat.eligible(m, v, w, gg):
                sc = self.rec._scratch(m, torch.float64)  # native sums are double on the CPU
                j = sc.slot()
                nat.adam_sums(m, v, w, gg, bc1 / bc2, c / bc2, eps * c, lerp, self.tied, sc.row(j))
                self._job(sc, j, bc1, bc2, c, eps)
                return
        if lerp is not None and (n < _PACK or not w.is_contiguous()):
            w.lerp_(g if g.dtype == w.dtype else g.to(w.dtype), lerp)
            lerp = None
        flat = [x.reshape(-1) for x in (m, v, w, g)]
        if flat[3].dtype != m.dtype:
            flat[3] = flat[3].to(m.dtype)
        key = (m.device, m.dtype, step)
        if n >= _PACK:
            size = n if self.rec.compile else _CHUNK  # the fused kernel needs no cache blocking
            for lo in range(0, n, size):
                chunk = [x[lo : lo + size] for x in flat]
                if lerp is not None:
                    chunk[2].lerp_(chunk[3], lerp)
                self._run(chunk, bc1, bc2, c, eps)
            return
        if self.pending and (key != self.key or self.size + n > _CHUNK):
            self.flush()
        self.pending.append(flat)
        self.size += n
        self.key, self.consts = key, (bc1, bc2, c, eps)

    def flush(self) -> None:
        if not self.pending:
            return
        sc = self.rec._scratch(self.pending[0][0])
        n = self.size
        stage = sc.rows[5:]
        ins: list[torch.Tensor] = []
        for i in range(4):
            if i == 2 and self.tied:
                ins.append(ins[0])
                continue
            torch.cat([f[i] for f in self.pending], out=stage[i, :n])
            ins.append(stage[i, :n])
        self.pending, self.size = [], 0
        self._run(ins, *self.consts)

    def _run(self, ins, bc1, bc2, c, eps) -> None:
        sc = self.rec._scratch(ins[0])
        j = sc.slot()
        m, v, w, g = ins
        if self.rec.compile:
            _fused_sums(m, v, w, g, bc1 / bc2, c / bc2, eps * c, sc.row(j))
        else:
            _chunk_sums(
                m,
                v,
                None if self.tied else w,
                g,
                bc1 / bc2,
                c / bc2,
                eps * c,
                sc.rows[:5, : m.numel()],
                sc.row(j),
            )
        self._job(sc, j, bc1, bc2, c, eps)

    def _job(self, sc, j, bc1, bc2, c, eps) -> None:
        self.jobs.append((sc, j, self.gi, sum_scale(bc1, bc2, c, eps, self.tied)))


def sum_scale(bc1: float, bc2: float, c: float, eps: float, tied: bool) -> tuple:
    """Factors (a tuple of floats) that turn the unscaled sums of `_chunk_sums()` (and of
    `_sums_expr()` and the native kernel) into the squared norms of ``NORM_NAMES`` (then
    ``sum |t|``); a zero marks a part that is exactly 0 (the lag when tied, the eps part without
    eps)."""
    u = (c / bc1) ** 2
    lag = 0.0 if tied else u
    return (1.0, lag, 1.0, 1.0, (eps * c * c / bc2) ** 2, 1.0, u, 1.0)


def _chunk_sums(m, v, w, g, k, alpha, epsc, rows, out) -> None:
    r"""Unscaled partial sums over one chunk into ``out``; the caller scales them into the
    squared norms of the parts (order ``NORM_NAMES``, then ``sum |t|``).

    With $A = 1/\sqrt{\max(v, \mathit{tiny})}$ and ``D = v A + eps c`` (``c s`` and ``c d``,
    $c = \sqrt{1 - \beta_2^t}$): sums of squares of ``sign g``, ``(m - k w)/D``,
    ``t = sign w - sign g``, ``sign w - alpha w A``, ``w A/D``, ``sign g - alpha w/D``, ``m/D``,
    then ``sum |t|``. Thirteen elementwise passes and eight reductions (BLAS dots) over five
    chunk-sized rows, so the rows stay in cache; nothing of parameter size is allocated. Where
    ``v = 0`` (then ``w = 0``) the ratio and eps parts are 0 and the residual is ``-sign g``, as
    in `split_update()`.
    """
    A, D, SG, SW, X = rows
    tied = w is None
    if tied:
        w = m
    dot = torch.dot
    tiny = torch.finfo(A.dtype).tiny
    if epsc > 0:
        torch.clamp(v, min=tiny, out=A).rsqrt_()
        torch.addcmul(torch.full((), epsc, dtype=D.dtype, device=D.device), v, A, out=D)
    else:  # d = s: keep it positive where v = 0
        torch.clamp(v, min=tiny, out=D)
        torch.rsqrt(D, out=A)
        D.mul_(A)
    torch.sign(g, out=SG)
    dot(SG, SG, out=out[0])
    torch.sign(w, out=SW)
    torch.sub(SW, SG, out=X)
    dot(X, X, out=out[2])
    torch.sum(X.abs_(), dim=0, out=out[7])
    torch.div(m, D, out=X)
    dot(X, X, out=out[6])
    if not tied:
        X.addcdiv_(w, D, value=-k)
        dot(X, X, out=out[1])
    torch.addcdiv(SG, w, D, value=-alpha, out=X)
    dot(X, X, out=out[5])
    torch.mul(w, A, out=X)
    SW.sub_(X, alpha=alpha)
    dot(SW, SW, out=out[3])
    X.div_(D)
    dot(X, X, out=out[4])


def _sums_expr(m, v, w, g, k):
    tiny = torch.finfo(v.dtype).tiny
    vc = torch.clamp(v, min=tiny)
    A = torch.rsqrt(vc)
    D = vc * A + k[2]
    sg, sw = torch.sign(g), torch.sign(w)
    T = sw - sg
    U = m / D
    L = U - k[0] * (w / D)
    R = sg - k[1] * (w / D)
    Q = sw - k[1] * (w * A)
    E = (w * A) / D
    return torch.stack(
        [
            (sg * sg).sum(),
            (L * L).sum(),
            (T * T).sum(),
            (Q * Q).sum(),
            (E * E).sum(),
            (R * R).sum(),
            (U * U).sum(),
            T.abs().sum(),
        ]
    )


_COMPILED = None


def _fused_sums(m, v, w, g, k, alpha, epsc, out) -> None:
    """The sums of `_chunk_sums()` in one compiled kernel (constants passed as a tensor so
    that it is compiled once per dtype and device, not once per step; the rows passed detached,
    so that a chunk of one large parameter and a packed row of small ones, views of bases of
    different sizes, share one compiled graph)."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = torch.compile(_sums_expr, dynamic=True)
    consts = torch.tensor([k, alpha, epsc], dtype=m.dtype).to(m.device, non_blocking=True)
    m, v, w, g = (x.detach() for x in (m, v, w, g))
    out.copy_(_COMPILED(m, v, w, g, consts))


def _has_clock(optimizer) -> bool:
    clock = _RowClock._clocks.get(optimizer)
    return clock is not None and bool(clock.rows)


def _own_counts(packer, counts, m, v, w, g, b1: float, b2: float, eps: float, tied: bool):
    r"""The sums of a tensor whose entries have their own step counts (rows reset with
    ``restart=True``): ``w`` updated first, then the entries of each count summed with that
    count's bias corrections. Returns the per-entry $(1 - \beta_1^t, 1 - \beta_2^t, \sqrt{1 - \beta_2^t})$
    (flat float64 tensors) for the sampled coordinates."""
    if not tied:
        w.lerp_(g if g.dtype == w.dtype else g.to(w.dtype), 1 - b2)
    flat = counts.reshape(-1)
    bc1, bc2, c = (torch.empty_like(flat) for _ in range(3))
    for s in torch.unique(flat).tolist():
        mask = counts == s
        k1, k2, kc = bias_corrections(s, b1, b2)
        sub = [x[mask] for x in (m, v, m if tied else w, g)]
        packer.add(*sub, int(s), k1, k2, kc, eps, None)
        fm = flat == s
        bc1[fm], bc2[fm], c[fm] = k1, k2, kc
    packer.flush()
    return bc1, bc2, c


def _rows(x: torch.Tensor, rows) -> torch.Tensor:
    if rows is None:
        return x
    return x.index_select(rows[0], torch.as_tensor(rows[1], device=x.device))


def _sample_into(samp, gi, idx, g, m, v, w, p, bc1, bc2, bc2_sqrt, eps) -> None:
    if torch.is_tensor(bc1):  # per-entry bias corrections (rows with their own step count)
        bc1, bc2, bc2_sqrt = (x.to(idx.device)[idx] for x in (bc1, bc2, bc2_sqrt))
    vals = {
        k: x.reshape(-1)[idx].double()
        for k, x in (("grad", g), ("m", m), ("v", v), ("w", w), ("param", p))
    }
    m_hat = vals["m"] / bc1
    w_hat = m_hat if w is m else vals["w"] / bc2
    parts = split_update(m_hat, w_hat, vals["v"].sqrt() / bc2_sqrt, vals["grad"], eps)
    vals.update(parts.as_dict())
    for f in SAMPLE_FIELDS:
        samp[f][gi].append(vals[f].cpu())
