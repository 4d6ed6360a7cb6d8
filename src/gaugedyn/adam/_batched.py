r"""Adam on ``B`` independent copies at once: per-copy betas and learning rates, one program.

Every tensor carries the copies on axis 0; copy ``c`` has its own $\beta_{1,c}$,
$\beta_{2,c}$ and $\eta_c$ (or all share one). One step $t$ (1-based) of copy
``c``, with gradient $g_t$, moments $m_{t-1}, v_{t-1}$ (zero at $t = 1$):

$$
\begin{aligned}
m_t &\leftarrow \beta_1 m_{t-1} + (1 - \beta_1) g_t \\
v_t &\leftarrow \beta_2 v_{t-1} + (1 - \beta_2) g_t^2 \\
d_t &\leftarrow \sqrt{v_t / (1 - \beta_2^t)} + \epsilon \\
\theta_t &\leftarrow \theta_{t-1} - \eta \, \frac{m_t / (1 - \beta_1^t)}{d_t}
\end{aligned}
$$

(``torch.optim.Adam`` without weight decay, ``eps`` outside the root). In exact arithmetic that
is all; in floating point the bits depend on the order of the operations, and three callers of
the package publish numbers made with three orders. Rather than change them, the order is a
declared argument (``op_order`` of `adam_factors()`), each tested bitwise against what it
claims to match:

- ``"torch"``: ``torch.optim.Adam``'s single-tensor step, operation for operation
  (``m.lerp_(g, 1 - b1)``, ``v.mul_(b2).addcmul_(g, g, value=1 - b2)``,
  $d = \sqrt{v} / \sqrt{1 - \beta_2^t} + \epsilon$, $\theta \mathrel{+}= (-\mathit{lr} / (1 - \beta_1^t))\, m / d$), the per-copy
  scalars computed in Python double as ``torch.optim.Adam`` computes them and cast to the
  working dtype as PyTorch casts its Python scalars: a copy's trajectory is bitwise the one
  ``torch.optim.Adam`` gives it alone (tested on the CPU in float32 and float64). The beta grid
  (``adam_split``) uses it.
- ``"textbook"``: the equations as written, ``m = b1 m + (1 - b1) g``,
  ``v = b2 v + (1 - b2) (g g)``, $\theta - \mathit{lr}\, (m / (1 - \beta_1^t)) / (\sqrt{v / (1 - \beta_2^t)} + \epsilon)$,
  every factor (``b``, ``1 - b``, $1 - b^t$) a Python double per copy cast to the working
  dtype: one pair of betas (Python scalars) and the same pair given per copy give the same
  bits. The trainer (``gaugedyn.training.train``) uses it.
- ``"running"``: the order of the 1-D maps (`gaugedyn.adam.simulate_losses()` and its
  compiled kernel): ``v = b2 v + ((1 - b2) g) g``, the factors ``1 - b`` computed in the working
  dtype and the bias corrections $1 - \prod_{s \le t} b$ from running products in the working
  dtype (`AdamFactors.next()` carries them from step to step). The full-batch tasks of
  ``adam_stability`` use it; it is tested bitwise against their former update, and against the
  numpy map ``simulate_losses`` (whose block statistics the compiled ``simulate_blocks`` equals) to 4
  ulp per step: torch's vectorised float64 square root is not IEEE's correctly rounded one.

`adam_factors()` turns the hyper-parameters of step ``t`` into `AdamFactors` (one
float shared by every copy, or one value per copy as a 1-D tensor); `batched_adam_step()`
applies them to lists of tensors, in place (``torch.optim``'s functional ``adam`` style) or on
copies::

    f = adam_factors(1, lr=1e-3, betas=([0.9, 0.99], [0.999, 0.999]), like=params[0])
    for t in range(steps):
        grads = ...  # one gradient per tensor of params, copies on axis 0
        batched_adam_step(params, grads, exp_avgs, exp_avg_sqs, f)
        f = f.next()
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from .._errors import InputError

OP_ORDERS: tuple[str, ...] = ("torch", "textbook", "running")
"""The declared operation orders of `batched_adam_step()` (module docstring)."""
OP_ORDER_FACTORS: dict[str, tuple[str, ...]] = {
    "torch": ("one_minus_beta1", "beta2", "one_minus_beta2", "bias2_sqrt", "step_size"),
    "textbook": ("lr", "beta1", "beta2", "one_minus_beta1", "one_minus_beta2", "bias1", "bias2"),
    "running": ("lr", "beta1", "beta2", "one_minus_beta1", "one_minus_beta2", "bias1", "bias2"),
}
"""The factors (fields of `AdamFactors`) each operation order reads."""

Factor = float | torch.Tensor
"""A per-step scalar: one float for every copy, or a 1-D tensor with one value per copy."""

_SCALARS = (
    "lr",
    "beta1",
    "beta2",
    "one_minus_beta1",
    "one_minus_beta2",
    "power1",
    "power2",
    "bias1",
    "bias2",
    "bias2_sqrt",
    "step_size",
)


class _Spec(NamedTuple):
    """What the factors were made from: the float64 values as given (0-d: shared, 1-D: one per
    copy) and an empty tensor of the working dtype and device (``None``: Python floats only)."""

    op_order: str
    beta1: np.ndarray
    beta2: np.ndarray
    lr: np.ndarray
    like: torch.Tensor | None


class AdamFactors(NamedTuple):
    r"""The per-copy scalars of Adam step ``step`` (`adam_factors()`), each a float or a 1-D
    tensor over the copies: ``power1`` $= \beta_1^t$, ``bias1`` $= 1 - \beta_1^t$ (the same
    for $\beta_2$), ``bias2_sqrt`` $= \sqrt{\texttt{bias2}}$, ``step_size``
    $= \texttt{lr} / \texttt{bias1}$; `next()` gives step $t + 1$."""

    spec: _Spec
    step: int
    lr: Factor
    beta1: Factor
    beta2: Factor
    one_minus_beta1: Factor
    one_minus_beta2: Factor
    power1: Factor
    power2: Factor
    bias1: Factor
    bias2: Factor
    bias2_sqrt: Factor
    step_size: Factor

    @property
    def op_order(self) -> str:
        return self.spec.op_order

    def next(self, lr: Any = None) -> AdamFactors:
        """The factors of step ``step + 1`` (``lr``: a new learning rate, else the same)."""
        spec = self.spec if lr is None else self.spec._replace(lr=_values(lr, "lr"))
        return _STEP_FACTORS[spec.op_order](self._replace(spec=spec), self.step + 1)

    def rows(self, index: slice | torch.Tensor, names: Sequence[str] = _SCALARS) -> AdamFactors:
        """The factors ``names`` (default: all) of the copies ``index`` (floats are shared and
        stay; the other factors are left as they are)."""
        rows: dict[str, Any] = {
            k: v[index]
            for k in names
            if isinstance(v := getattr(self, k), torch.Tensor) and v.dim() > 0
        }
        return self._replace(**rows)

    def shaped(self, like: torch.Tensor, names: Sequence[str] = _SCALARS) -> AdamFactors:
        """The factors ``names`` (default: all) as columns broadcasting along axis 0 of
        ``like`` (shape ``(B, 1, ...)``)."""
        shape = (-1,) + (1,) * (like.dim() - 1)
        views: dict[str, Any] = {
            k: v.view(shape)
            for k in names
            if isinstance(v := getattr(self, k), torch.Tensor) and v.dim() != len(shape)
        }
        return self._replace(**views) if views else self


class AdamStep(NamedTuple):
    r"""What `batched_adam_step()` returns: the new parameters and moments (the given tensors
    when ``inplace``) and the denominators $d_t = \sqrt{v_t / (1 - \beta_2^t)} + \epsilon$."""

    params: list[torch.Tensor]
    exp_avgs: list[torch.Tensor]
    exp_avg_sqs: list[torch.Tensor]
    denominators: list[torch.Tensor]


def _values(value: Any, name: str) -> np.ndarray:
    """A number (0-d) or a non-empty 1-D sequence of numbers (one per copy), as float64."""
    if type(value) is float and math.isfinite(value):  # the common case, per step
        return np.array(value)
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        arr = np.empty((0, 0))
    if arr.ndim > 1 or (arr.ndim == 1 and arr.size == 0) or not np.all(np.isfinite(arr)):
        raise InputError(
            f"{name}={value!r} is not allowed; allowed: a finite number or a "
            "non-empty 1-D sequence of them (one per copy)"
        )
    return arr


def adam_factors(
    step: int,
    *,
    lr: Any,
    betas: tuple[Any, Any],
    op_order: str = "torch",
    like: torch.Tensor | None = None,
) -> AdamFactors:
    r"""The per-copy scalars of Adam step ``step`` (1-based) in the order ``op_order``.

    Step to step, `AdamFactors.next()` reuses the constants (and carries ``"running"``'s
    products).

    Parameters
    ----------
    step : int
        The step ``t``, an integer at least 1.
    lr : float or sequence of float
        The learning rate: a finite number shared by every copy, or a non-empty 1-D sequence
        (or tensor) with one value per copy.
    betas : tuple
        $(\beta_1, \beta_2)$, each a number in $[0, 1)$ shared by every copy or a 1-D sequence
        with one value per copy; every per-copy value (of ``lr`` too) has the same length.
    op_order : str
        The operation order, one of `OP_ORDERS` (module docstring).
    like : torch.Tensor or None
        A tensor of the working dtype and device (the per-copy values become tensors of that
        dtype); it may be left out only for ``"textbook"`` with numbers alone (the factors are
        then Python floats).

    Returns
    -------
    AdamFactors
        The factors of step ``step``.

    Raises
    ------
    InputError
        When ``op_order`` is not one of `OP_ORDERS`, ``step`` is not an integer at least 1,
        ``betas`` is not a pair, a value is not finite or a beta lies outside ``[0, 1)``, the
        per-copy values disagree on the number of copies, or ``like`` is missing where it is
        needed.
    """
    if op_order not in OP_ORDERS:
        raise InputError(f"op_order={op_order!r} is not allowed; choose one of {list(OP_ORDERS)}")
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 1:
        raise InputError(f"step={step!r} is not allowed; use an integer >= 1 (1-based)")
    if not isinstance(betas, Sequence | np.ndarray) or len(betas) != 2:
        raise InputError(f"betas={betas!r} is not allowed; allowed: (beta1, beta2)")
    b1, b2, lrs = _values(betas[0], "beta1"), _values(betas[1], "beta2"), _values(lr, "lr")
    for name, b in (("beta1", b1), ("beta2", b2)):
        if not np.all((b >= 0.0) & (b < 1.0)):
            raise InputError(f"{name}={b.tolist()!r} is not allowed; each beta must lie in [0, 1)")
    sizes = {x.size for x in (b1, b2, lrs) if x.ndim == 1}
    if len(sizes) > 1:
        raise InputError(
            f"beta1, beta2 and lr give {sorted(sizes)} copies; allowed: one number "
            "of copies (or a number shared by all)"
        )
    if like is None and (op_order != "textbook" or sizes):
        raise InputError(
            f"like=None is not allowed for op_order={op_order!r} with these "
            "hyper-parameters; pass a tensor of the working dtype and device"
        )
    spec = _Spec(op_order, b1, b2, lrs, None if like is None else like.new_empty(0))
    factors = _CONSTANTS[op_order](spec)
    if op_order == "running":  # its bias corrections are running products: step by step
        for t in range(1, int(step) + 1):
            factors = _running(factors, t)
        return factors
    return _STEP_FACTORS[op_order](factors, int(step))


def _tensor(x: Any, like: torch.Tensor | None) -> torch.Tensor:
    assert like is not None
    return torch.as_tensor(np.array(x, dtype=float), dtype=like.dtype, device=like.device)


def _constants(spec: _Spec) -> AdamFactors:
    """``b`` and ``1 - b`` in Python double, one tensor each where given per copy (always for
    ``"torch"``, whose factors are tensors as the beta grid has always held them)."""
    tensors = spec.op_order == "torch"
    one = lambda arr, fn: _doubles(arr, fn, spec.like, tensors)  # noqa: E731
    b1, b2 = spec.beta1, spec.beta2
    return AdamFactors(
        spec,
        0,
        0.0,
        one(b1, float),
        one(b2, float),
        one(b1, lambda b: 1.0 - b),
        one(b2, lambda b: 1.0 - b),
        1.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
    )


def _doubles(arr: np.ndarray, fn, like: torch.Tensor | None, tensors: bool = False) -> Factor:
    """``fn`` of each value in Python double: a float (0-d) or a tensor of the working dtype."""
    if arr.ndim == 0 and not tensors:
        return fn(float(arr))
    assert like is not None
    return torch.tensor(
        [fn(float(x)) for x in np.atleast_1d(arr)], dtype=like.dtype, device=like.device
    )


def _per_step(f: AdamFactors, step: int) -> AdamFactors:
    """Step ``step``'s factors in Python double per copy, as ``torch.optim.Adam`` computes its
    scalars (``1 - b**t`` by Python's power, ``lr / (1 - b1**t)``, ``(1 - b2**t) ** 0.5``),
    then one tensor of the working dtype for the per-copy ones (``"torch"``: all of them)."""
    spec = f.spec
    names = ("lr", "power1", "power2", "bias1", "bias2", "bias2_sqrt", "step_size")
    copies = max(x.size if x.ndim else 0 for x in (spec.lr, spec.beta1, spec.beta2))
    if not copies and spec.op_order == "textbook":  # Python floats throughout
        lr, b1, b2 = float(spec.lr), float(spec.beta1), float(spec.beta2)
        bias1, bias2 = 1.0 - b1**step, 1.0 - b2**step
        return f._replace(
            step=step,
            lr=lr,
            power1=b1**step,
            power2=b2**step,
            bias1=bias1,
            bias2=bias2,
            bias2_sqrt=bias2**0.5,
            step_size=lr / bias1,
        )
    rows = []
    for lr, b1, b2 in np.broadcast(spec.lr, spec.beta1, spec.beta2):
        lr, b1, b2 = float(lr), float(b1), float(b2)
        bias1, bias2 = 1.0 - b1**step, 1.0 - b2**step
        rows.append((lr, b1**step, b2**step, bias1, bias2, bias2**0.5, lr / bias1))
    assert spec.like is not None
    table = dict(zip(names, torch.tensor(rows, dtype=spec.like.dtype, device=spec.like.device).T))
    if not spec.lr.ndim and spec.op_order == "textbook":  # a shared rate stays a Python scalar
        table["lr"] = rows[0][0]
    return f._replace(step=step, **table)


def _running_constants(spec: _Spec) -> AdamFactors:
    beta1, beta2 = _tensor(spec.beta1, spec.like), _tensor(spec.beta2, spec.like)
    return AdamFactors(
        spec,
        0,
        0.0,
        beta1,
        beta2,
        1 - beta1,
        1 - beta2,
        torch.ones_like(beta1),
        torch.ones_like(beta2),
        0.0,
        0.0,
        0.0,
        0.0,
    )


def _running(f: AdamFactors, step: int) -> AdamFactors:
    r"""The working dtype throughout: ``1 - b`` and the running products $\prod_{s \le t} b$."""
    if step != f.step + 1:
        raise InputError(
            f"step={step} is not allowed after step {f.step} for "
            "op_order='running'; allowed: the next step"
        )
    spec = f.spec
    lr: Factor = float(spec.lr) if spec.lr.ndim == 0 else _tensor(spec.lr, spec.like)
    p1, p2 = f.power1 * f.beta1, f.power2 * f.beta2
    bias1, bias2 = 1 - p1, 1 - p2
    return f._replace(
        step=step,
        lr=lr,
        power1=p1,
        power2=p2,
        bias1=bias1,
        bias2=bias2,
        bias2_sqrt=bias2**0.5,
        step_size=lr / bias1,
    )


_CONSTANTS = {"torch": _constants, "textbook": _constants, "running": _running_constants}
_STEP_FACTORS = {"torch": _per_step, "textbook": _per_step, "running": _running}


def batched_adam_step(
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    factors: AdamFactors,
    *,
    eps: float = 1e-8,
    inplace: bool = True,
) -> AdamStep:
    r"""One Adam step of ``B`` copies (axis 0 of every tensor) with per-copy ``factors``.

    $$
    \begin{aligned}
    &\textbf{for each tensor } \theta \text{ with gradient } g:\\
    &\quad m \leftarrow \beta_1 m + (1 - \beta_1) g, \qquad
    v \leftarrow \beta_2 v + (1 - \beta_2) g^2\\
    &\quad d \leftarrow \sqrt{v / (1 - \beta_2^t)} + \epsilon, \qquad
    \theta \leftarrow \theta - \eta \, (m / (1 - \beta_1^t)) / d
    \end{aligned}
    $$

    in the operation order ``factors.op_order`` (module docstring), each scalar the copy's own.
    No weight decay, no ``amsgrad``.

    Parameters
    ----------
    params : Sequence[torch.Tensor]
        The parameters $\theta$, the copies on axis 0 of each tensor.
    grads : Sequence[torch.Tensor]
        One gradient $g_t$ per tensor of ``params``.
    exp_avgs : Sequence[torch.Tensor]
        The first moments $m_{t-1}$, one per tensor (zeros before step 1).
    exp_avg_sqs : Sequence[torch.Tensor]
        The second moments $v_{t-1}$, one per tensor (zeros before step 1).
    factors : AdamFactors
        The scalars of step $t$ (`adam_factors()`, then `AdamFactors.next()`).
    eps : float
        Adam's $\epsilon$, outside the root.
    inplace : bool
        ``True`` updates ``params``, ``exp_avgs`` and ``exp_avg_sqs`` in place (as
        ``torch.optim``'s functional ``adam``); ``False`` leaves them untouched and returns
        new tensors (the same operations, so the same bits: the first one on each tensor makes
        a new tensor, the rest run on it).

    Returns
    -------
    AdamStep
        The new parameters and moments (the given tensors when ``inplace``) and the
        denominators $d_t$.

    Raises
    ------
    InputError
        When ``params``, ``grads``, ``exp_avgs`` and ``exp_avg_sqs`` differ in length.
    """
    n = len(params)
    if not len(grads) == len(exp_avgs) == len(exp_avg_sqs) == n:
        raise InputError(
            f"{n} params, {len(grads)} grads, {len(exp_avgs)} exp_avgs and "
            f"{len(exp_avg_sqs)} exp_avg_sqs are not allowed; give one of each "
            "per tensor"
        )
    step, uses = _STEPS[factors.op_order], OP_ORDER_FACTORS[factors.op_order]
    out: AdamStep = AdamStep([], [], [], [])
    shaped: dict[int, AdamFactors] = {}
    for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs):
        f = shaped.get(p.dim()) or shaped.setdefault(p.dim(), factors.shaped(p, uses))
        for where, x in zip(out, step(p, g, m, v, f, float(eps), inplace)):
            where.append(x)
    return out


def _torch_step(p, g, m, v, f: AdamFactors, eps: float, inplace: bool):
    """``torch.optim.Adam``'s single-tensor update (``_single_tensor_adam``), per-copy columns;
    out of place, the first operation on each tensor makes a new one and the rest run on it."""
    m = m.lerp_(g, f.one_minus_beta1) if inplace else torch.lerp(m, g, f.one_minus_beta1)
    v = v.mul_(f.beta2) if inplace else v * f.beta2
    v.addcmul_(f.one_minus_beta2 * g, g)  # addcmul_(g, g, value=1-b2) as PyTorch computes it
    d = (v.sqrt() / f.bias2_sqrt).add_(eps)
    step = -f.step_size * m / d  # addcdiv_(m, d, value=-lr/(1-b1^t)) as PyTorch computes it
    return (p.add_(step) if inplace else p + step), m, v, d


def _textbook_step(p, g, m, v, f: AdamFactors, eps: float, inplace: bool):
    m = m.mul_(f.beta1) if inplace else f.beta1 * m
    m.add_(f.one_minus_beta1 * g)
    v = v.mul_(f.beta2) if inplace else f.beta2 * v
    v.add_(f.one_minus_beta2 * (g * g))
    d = (v / f.bias2).sqrt() + eps
    step = f.lr * (m / f.bias1) / d
    return (p.sub_(step) if inplace else p - step), m, v, d


def _running_step(p, g, m, v, f: AdamFactors, eps: float, inplace: bool):
    m = m.mul_(f.beta1) if inplace else f.beta1 * m
    m.add_(f.one_minus_beta1 * g)
    v = v.mul_(f.beta2) if inplace else f.beta2 * v
    v.add_(f.one_minus_beta2 * g * g)
    d = (v / f.bias2).sqrt() + eps
    step = f.lr * (m / f.bias1) / d
    return (p.sub_(step) if inplace else p - step), m, v, d


_STEPS = {"torch": _torch_step, "textbook": _textbook_step, "running": _running_step}
