"""The activation ``g`` of the teacher-student model: one object that every layer reads.

An `Activation` holds

- ``function`` and ``derivative``: ``g`` and ``g'`` on torch tensors (the trainer, the checks);
- ``code``: the compiled kernels' activation code (``gaugedyn.training._online_kernels.g``), or
  ``None`` when ``g`` runs in torch only (then online SGD runs with ``backend="torch"``);
- ``homogeneous``: whether ``g(t z) = t g(z)`` for ``t > 0`` (then the rescaling gauge
  ``(a_i, w_i) -> (a_i / c, c w_i)`` leaves the network function fixed);
- ``kernels``: its Gaussian expectations ``(F, dF, d2F, S, dS, d2S)`` (``F(q1, q2, c) =
  E[g(x1) g(x2)]`` and ``S(q) = E[g(x)^2]`` with their derivatives): the sympy-generated closed
  forms where the package derives them (relu, erf, linear); for positively homogeneous ``g``
  (leaky ReLU, absolute value, a user's) the ReLU closed forms (`homogeneous_kernels()`);
  otherwise the Hermite expansion of `gaugedyn.theory._quadrature`, with its stated error
  bound (its polar rule checks the homogeneous reduction).

`ACTIVATIONS` maps each registered name to its object; a user's activation is
``Activation.from_torch(fn, name=...)``, passed wherever an activation name is accepted (or
registered with `register_activation()` to be found by name, also on the command line).
`check_activation()` compares an activation's kernels with Monte Carlo and its derivative with
autograd.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._options import Param
from ._generated_kernels import KERNELS
from ._quadrature import (
    MAX_HERMITE_TERMS,
    PairQuadrature,
    _flat,
    homogeneous_coefficients,
    mehler,
)

POLAR_MAX_NODES = 512
"""The most Gauss-Legendre nodes per arc an activation's polar rule may take."""

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
LEAKY_SLOPE = 0.01
"""The negative-side slope of ``leaky_relu`` (torch's default)."""


def _torch():
    import torch

    return torch


def _autograd_derivative(fn: Callable) -> Callable:
    """``g'`` of an elementwise torch function ``g`` by autograd (zeros where ``g`` is constant);
    differentiable again when its input requires grad (so ``g''`` is autograd of it)."""

    def derivative(z):
        torch = _torch()
        with torch.enable_grad():
            again = z.requires_grad
            t = z if again else z.detach().requires_grad_(True)
            y = fn(t)
            if not y.requires_grad:
                return torch.zeros_like(z)
            (d,) = torch.autograd.grad(y.sum(), t, create_graph=again, allow_unused=True)
        if d is None:
            return torch.zeros_like(z)
        return d if again else d.detach()

    derivative._autograd = True  # type: ignore[attr-defined]
    return derivative


def on_numpy(fn: Callable) -> Callable:
    """An elementwise torch function evaluated on float64 numpy arrays (no copy):
    ``on_numpy(activation.function)(x)`` is $g(x)$ as a numpy array.

    Parameters
    ----------
    fn : Callable
        An elementwise function of a torch tensor (``Activation.function``, ``.derivative``, ...).

    Returns
    -------
    Callable
        A function of an array_like, returning a float64 ``numpy.ndarray`` of its shape,
        evaluated without autograd.
    """

    def f(x):
        torch = _torch()
        x = np.ascontiguousarray(x, dtype=np.float64)
        with torch.no_grad():
            return np.asarray(fn(torch.from_numpy(x)).detach().numpy(), dtype=np.float64)

    return f


@dataclass(frozen=True, eq=False)
class Activation:
    """An activation ``g`` and everything the package computes from it (module docstring).

    ``closed_form`` is the generated ``(F, dF, d2F, S, dS, d2S)`` or ``None``; ``nodes`` is the
    quadrature's size (``None``: the rule's default, 96 Hermite terms for smooth ``g``, 16
    Gauss-Legendre nodes per arc for the polar rule); ``second_derivative`` (``g''`` in torch, for the
    quadrature of smooth ``g``) defaults to autograd of ``derivative``; ``sympy_expr`` (in one
    symbol), if given, is checked against ``function`` and ``derivative`` by
    `check_activation()`.
    """

    name: str
    function: Callable
    derivative: Callable
    homogeneous: bool = False
    code: int | None = None
    closed_form: tuple | None = None
    sympy_expr: Any = None
    nodes: int | None = None
    description: str = ""
    second_derivative: Callable | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"an activation needs a non-empty name, not {self.name!r}")
        top = POLAR_MAX_NODES if self.homogeneous else MAX_HERMITE_TERMS // 2
        if self.nodes is not None and (
            not isinstance(self.nodes, int) or not 4 <= self.nodes <= top
        ):
            raise InputError(
                f"nodes={self.nodes!r} is not allowed; allowed: an integer from 4 "
                f"to {top} or None (the rule's default)"
            )
        for what in ("function", "derivative"):
            if not callable(getattr(self, what)):
                raise InputError(
                    f"activation {self.name!r}: {what}={getattr(self, what)!r} is not callable; "
                    "allowed: an elementwise torch function"
                )
        if id(self.function) not in _BUILTIN_FUNCTIONS:
            validate_activation(self)

    @classmethod
    def from_torch(
        cls,
        fn: Callable,
        sympy_expr=None,
        name: str = "custom",
        *,
        derivative: Callable | None = None,
        homogeneous: bool = False,
        nodes: int | None = None,
        description: str = "",
    ) -> Activation:
        """A user's elementwise torch function as an activation.

        ``g'`` is ``derivative`` or autograd of ``fn``. With ``homogeneous=True`` (``g(t x) =
        t g(x)`` for ``t > 0``, so ``g = g(1) relu + g(-1) relu(-.)``) the kernels are the ReLU
        closed forms of `homogeneous_kernels()` (`check_activation()` tests the claim
        against Monte Carlo); otherwise ``g`` should be smooth and the kernels are the Hermite
        expansion of `gaugedyn.theory._quadrature` (see its error bound). Online SGD runs in
        torch (no compiled code).
        """
        if not callable(fn):
            raise InputError(f"fn={fn!r} is not callable; allowed: an elementwise torch function")
        return cls(
            name=name,
            function=fn,
            derivative=derivative if derivative is not None else _autograd_derivative(fn),
            homogeneous=homogeneous,
            code=None,
            closed_form=None,
            sympy_expr=sympy_expr,
            nodes=nodes,
            description=description or f"user activation {name}",
        )

    @cached_property
    def quadrature(self) -> PairQuadrature:
        """The numerical kernels (used when there is no closed form, and by the checks)."""
        second = None if self.homogeneous else on_numpy(self.second)
        return PairQuadrature(
            on_numpy(self.function), on_numpy(self.derivative), second, self.homogeneous, self.nodes
        )

    @property
    def rule(self) -> str:
        """The kernels the flow uses, in words."""
        if self.closed_form is not None:
            return "closed form"
        if self.homogeneous:
            return "ReLU closed forms (g(1) relu(x) + g(-1) relu(-x))"
        return self.quadrature_rule

    @property
    def quadrature_rule(self) -> str:
        """The numerical rule of `quadrature` and its size, in words."""
        q = self.quadrature
        return (
            f"polar quadrature, {q.nodes} Gauss-Legendre nodes per arc"
            if self.homogeneous
            else f"Hermite expansion, {q.nodes} terms ({4 * q.nodes}-node Gauss-Hermite "
            "coefficients)"
        )

    @property
    def second(self) -> Callable:
        """``g''`` in torch: ``second_derivative`` or autograd of ``derivative``."""
        if self.second_derivative is not None:
            return self.second_derivative
        return _autograd_derivative(self.derivative)

    @property
    def kernels(self) -> tuple:
        """``(F, dF, d2F, S, dS, d2S)``: the closed forms if any; for positively homogeneous
        ``g`` the ReLU closed forms through `homogeneous_kernels()`; else
        `quadrature`'s."""
        if self.closed_form is not None:
            return self.closed_form
        if self.homogeneous:
            return self._homogeneous
        return self.quadrature.kernels()

    @cached_property
    def _homogeneous(self) -> tuple:
        return homogeneous_kernels(*_ends(self))

    @property
    def compiled(self) -> bool:
        """Whether the numba kernels know ``g`` (``code`` is set)."""
        return self.code is not None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Activation({self.name!r}, {self.rule}, homogeneous={self.homogeneous})"


def homogeneous_kernels(up: float, down: float) -> tuple:
    """The kernels of a positively homogeneous ``g`` of degree 1, from the ReLU closed forms.

    Such a ``g`` is ``g(x) = up relu(x) + down relu(-x)`` with ``up = g(1)``, ``down = g(-1)``,
    and ``relu(x1) relu(-x2)`` is ``relu`` of the pair ``(x1, -x2)``, whose covariance is ``-c``:

        F(q1, q2, c) = (up^2 + down^2) F_relu(q1, q2, c) + 2 up down F_relu(q1, q2, -c),
        S(q) = (up^2 + down^2) S_relu(q),

    with every derivative by the chain rule (the sign of ``c`` flips the odd ``c``-derivatives).
    Exact: the polar quadrature of `PairQuadrature` agrees to round-off (tested)."""
    S, dS, d2S = KERNELS["relu"][3:]
    u = up * up + down * down
    return (
        *_relu_pair(u, 2.0 * up * down),
        lambda q: u * S(q),
        lambda q: u * dS(q),
        lambda q: u * d2S(q),
    )


def _relu_pair(u: float, v: float) -> tuple:
    """``(F, dF, d2F)`` of ``u F_relu(q1, q2, c) + v F_relu(q1, q2, -c)``, every derivative by
    the chain rule (the sign of ``c`` flips the odd ``c``-derivatives): the pair kernels of two
    positively homogeneous activations (`homogeneous_kernels()`, `cross_kernels()`);
    ``s``, if given, is ``sqrt(q1 q2 - c^2)`` from the weights (the generated kernels' ``s``)."""
    F, dF, d2F = KERNELS["relu"][:3]
    hess_sign = (1.0, 1.0, -1.0, 1.0, -1.0, 1.0)  # q1q1, q1q2, q1c, q2q2, q2c, cc

    def pair(q1, q2, c, s=None):
        return u * F(q1, q2, c, s) + v * F(q1, q2, -np.asarray(c), s)

    def pair_grad(q1, q2, c, s=None):
        a, b = dF(q1, q2, c, s), dF(q1, q2, -np.asarray(c), s)
        return (u * a[0] + v * b[0], u * a[1] + v * b[1], u * a[2] - v * b[2])

    def pair_hess(q1, q2, c, s=None):
        a, b = d2F(q1, q2, c, s), d2F(q1, q2, -np.asarray(c), s)
        return tuple(u * x + z * v * y for x, y, z in zip(a, b, hess_sign))

    return pair, pair_grad, pair_hess


def _ends(act: Activation) -> tuple[float, float]:
    torch = _torch()
    ends = act.function(torch.tensor([1.0, -1.0], dtype=torch.float64))
    return float(ends[0]), float(ends[1])


_CROSS: dict = {}


def cross_kernels(student: str | Activation, teacher: str | Activation | None) -> tuple:
    r"""$(F, \mathrm{d}F, \mathrm{d}^2F)$ of the student-teacher pair $F(q_1, q_2, c) = E[g(x_1) g^*(x_2)]$
    ($x_1$ a student field of variance $q_1$, $x_2$ a teacher field of variance $q_2$).

    The student's own pair kernels when ``teacher`` is ``None`` or the same activation; for two
    positively homogeneous activations the ReLU closed forms
    ($g = u\, \mathrm{relu} + d\, \mathrm{relu}(-\cdot)$, so
    $F = (u u^* + d d^*) F_\mathrm{relu}(c) + (u d^* + d u^*) F_\mathrm{relu}(-c)$); otherwise the
    Mehler series $\sum_k A_k(q_1) A^*_k(q_2) \rho^k$ of `gaugedyn.theory._quadrature.mehler()`,
    with each side's Hermite coefficients from its quadrature (smooth $g$) or exactly
    (`homogeneous_coefficients()`), truncated at the smooth side's number of terms (the smaller
    one if both are smooth). Its error bound is the series' with twice the terms against this one
    (`cross_error()`).

    Parameters
    ----------
    student : str or Activation
        The student's activation $g$ (a registered name, a spec or an `Activation`).
    teacher : str, Activation or None
        The teacher's activation $g^*$; ``None``: the student's.

    Returns
    -------
    tuple
        ``(F, dF, d2F)``: functions of ``(q1, q2, c)`` giving the kernel, its three first
        derivatives and its six second derivatives (cached per pair).

    Raises
    ------
    InputError
        For an activation `activation_of()` does not know.
    """
    s = activation_of(student)
    t = s if teacher is None else activation_of(teacher)
    if t is s or t.name == s.name and t.function is s.function:
        return s.kernels[:3]
    key = (id(s), id(t))
    if key not in _CROSS:
        _CROSS[key] = (s, t, _cross(s, t))
    return _CROSS[key][2]


def _cross(s: Activation, t: Activation, scale: int = 1) -> tuple:
    if s.homogeneous and t.homogeneous:
        (us, ds), (ut, dt) = _ends(s), _ends(t)
        return _relu_pair(us * ut + ds * dt, us * dt + ds * ut)
    terms = min(a.quadrature.nodes for a in (s, t) if not a.homogeneous) * scale
    sides: list[Callable[..., np.ndarray]] = []
    for a in (s, t):
        if a.homogeneous:
            up, down = _ends(a)
            sides.append(lambda q, up=up, down=down: homogeneous_coefficients(up, down, q, terms))
        else:
            quad = (
                a.quadrature
                if scale == 1
                else PairQuadrature(a.quadrature.g, a.quadrature.g1, a.quadrature.g2, False, terms)
            )
            sides.append(lambda q, quad=quad: quad._coefficients_of(q)[0][:, :, : terms + 1])
    last: list = [None]

    def evaluate(q1, q2, c, hess):
        shape, (q1, q2, c) = _flat(q1, q2, c)
        key = (q1.tobytes(), q2.tobytes(), c.tobytes())
        entry = last[0]  # the last call's (key, result), read once
        if entry is None or entry[0] != key or (hess and entry[1][2] is None):
            entry = (key, mehler(sides[0](q1), sides[1](q2), q1, q2, c, hess))
            last[0] = entry
        val, grad, hs = entry[1]
        return (
            val.reshape(shape),
            tuple(x.reshape(shape) for x in grad),
            None if hs is None else tuple(x.reshape(shape) for x in hs),
        )

    return (
        lambda q1, q2, c: evaluate(q1, q2, c, False)[0],
        lambda q1, q2, c: evaluate(q1, q2, c, False)[1],
        lambda q1, q2, c: evaluate(q1, q2, c, True)[2],
    )


def cross_error(student, teacher, q1, q2, c) -> np.ndarray:
    """The stated error bound of `cross_kernels()` at each configuration: the largest
    difference of the value and gradient between the series and the series with twice the terms
    (zero for the closed forms)."""
    s, t = activation_of(student), activation_of(teacher)
    if s.homogeneous and t.homogeneous or s is t:
        return np.zeros(np.broadcast_shapes(np.shape(q1), np.shape(q2), np.shape(c)))
    base, fine = cross_kernels(s, t), _cross(s, t, scale=2)
    diffs = [
        base[0](q1, q2, c) - fine[0](q1, q2, c),
        *(x - y for x, y in zip(base[1](q1, q2, c), fine[1](q1, q2, c))),
    ]
    return np.max(np.abs(np.stack(np.broadcast_arrays(*diffs))), axis=0)


PROBE = (-2.5, -1.7, -0.9, -0.35, 0.2, 0.6, 1.3, 2.1, 2.9)
"""The points an activation is called on when it is built (none at a kink's 0)."""
_BUILTIN_FUNCTIONS: set[int] = set()


def validate_activation(act: Activation) -> None:
    """Call ``act`` on `PROBE` (float64: the vector, a permuted 3 x 3 matrix of it and its
    first four entries) and refuse
    (`InputError`, naming the activation and the cause) a function that raises,
    returns something other than a float64 torch tensor of the input's shape, non-finite
    values, or values that are not elementwise (they move when the input is permuted); a false
    ``homogeneous=True`` (``g(2x) != 2 g(x)``); a ``derivative`` that disagrees with autograd of
    the function; and a function autograd cannot differentiate (a numpy function, a detached
    tensor) whose derivative would silently read zero."""
    torch = _torch()
    x = torch.tensor(PROBE, dtype=torch.float64)
    name = act.name

    def call(fn, z, what="the function"):
        try:
            with warnings.catch_warnings():  # a probe: the user's warnings are not the cause
                warnings.simplefilter("ignore")
                y = fn(z)
        except Exception as err:
            raise InputError(
                f"activation {name!r}: {what} raised {type(err).__name__} on a float64 tensor "
                f"of shape {tuple(z.shape)}: {' '.join(str(err).split())[:200]}"
            ) from None
        if not torch.is_tensor(y):
            raise InputError(
                f"activation {name!r}: {what} returned a {type(y).__name__}, not a torch tensor "
                "(a numpy or math function? write it with torch operations)"
            )
        if tuple(y.shape) != tuple(z.shape) or y.dtype != torch.float64:
            raise InputError(
                f"activation {name!r}: {what} returned shape {tuple(y.shape)} and dtype "
                f"{y.dtype} for a float64 input of shape {tuple(z.shape)}; allowed: an "
                "elementwise function, float64 in, float64 out of the same shape"
            )
        if not bool(torch.isfinite(y).all()):
            bad = float(z.reshape(-1)[~torch.isfinite(y.reshape(-1))][0])
            raise InputError(f"activation {name!r}: {what} is not finite at x = {bad:g}")
        return y.detach()

    y = call(act.function, x)
    perm = torch.tensor([4, 0, 7, 2, 8, 1, 6, 3, 5])
    moved = call(act.function, x[perm].reshape(3, 3)).reshape(-1)
    alone = call(act.function, x[:4])
    if not (
        torch.allclose(moved, y[perm], rtol=1e-12, atol=1e-12)
        and torch.allclose(alone, y[:4], rtol=1e-12, atol=1e-12)
    ):
        raise InputError(
            f"activation {name!r} is not elementwise: its value at a point changes with the "
            "other entries of the input (permuted, reshaped or left out)"
        )
    if act.homogeneous:
        twice = call(act.function, 2 * x)
        if not torch.allclose(twice, 2 * y, rtol=1e-10, atol=1e-12):
            i = int((twice - 2 * y).abs().argmax())
            raise InputError(
                f"activation {name!r}: homogeneous=True, but g(2x) = {float(twice[i]):.6g} and "
                f"2 g(x) = {float(2 * y[i]):.6g} at x = {float(x[i]):g}; a positively "
                "homogeneous g has g(t x) = t g(x) for t > 0"
            )
    try:
        with torch.enable_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tracked = bool(act.function(x.clone().requires_grad_(True)).requires_grad)
    except Exception:  # e.g. a numpy function handed a tensor that requires grad
        tracked = False
    varies = bool((y - y[0]).abs().max() > 1e-12)
    if getattr(act.derivative, "_autograd", False):
        if varies and not tracked:
            raise InputError(
                f"activation {name!r}: autograd cannot differentiate the function (its output "
                "does not track the input: a numpy function or a detached tensor?), so its "
                "derivative would read 0; write it with torch operations or pass derivative="
            )
        return
    d = call(act.derivative, x, "its derivative")
    auto = _autograd_derivative(act.function)(x)
    if tracked and not torch.allclose(d, auto, rtol=1e-6, atol=1e-8):
        i = int((d - auto).abs().argmax())
        raise InputError(
            f"activation {name!r}: the given derivative is {float(d[i]):.6g} at x = "
            f"{float(x[i]):g}, autograd of the function gives {float(auto[i]):.6g}"
        )


def _builtin(name, fn, d, d2=None, *, code, homogeneous=False, description=""):
    _BUILTIN_FUNCTIONS.add(id(fn))
    return Activation(
        name=name,
        function=fn,
        derivative=d,
        homogeneous=homogeneous,
        code=code,
        closed_form=KERNELS.get(name),
        description=description,
        second_derivative=d2,
    )


def _relu(z):
    return _torch().relu(z)


def _relu_prime(z):
    return (z > 0).to(z.dtype)


def _erf(z):
    return _torch().erf(z * _INV_SQRT2)


def _erf_prime(z):
    return _SQRT_2_OVER_PI * _torch().exp(-0.5 * (z * z))


def _linear(z):
    return z


def _linear_prime(z):
    return _torch().ones_like(z)


def _erf_second(z):
    return -z * _erf_prime(z)


def _tanh(z):
    return _torch().tanh(z)


def _tanh_prime(z):
    t = _torch().tanh(z)
    return 1.0 - t * t


def _tanh_second(z):
    t = _torch().tanh(z)
    return -2.0 * t * (1.0 - t * t)


def _softplus(z):
    return _torch().logaddexp(z, _torch().zeros_like(z))


def _softplus_prime(z):
    return _torch().sigmoid(z)


def _softplus_second(z):
    s = _torch().sigmoid(z)
    return s * (1.0 - s)


def _gelu(z):
    return 0.5 * z * (1.0 + _torch().erf(z * _INV_SQRT2))


def _gelu_prime(z):
    torch = _torch()
    return 0.5 * (1.0 + torch.erf(z * _INV_SQRT2)) + z * _INV_SQRT_2PI * torch.exp(-0.5 * z * z)


def _gelu_second(z):
    return (2.0 - z * z) * _INV_SQRT_2PI * _torch().exp(-0.5 * z * z)


def _leaky(z):
    return _torch().where(z > 0, z, LEAKY_SLOPE * z)


def _leaky_prime(z):
    torch = _torch()
    return torch.where(z > 0, torch.ones_like(z), torch.full_like(z, LEAKY_SLOPE))


def _abs(z):
    return _torch().abs(z)


def _abs_prime(z):
    return _torch().sign(z)


def _quadratic(z):
    return z * z


def _quadratic_prime(z):
    return 2.0 * z


def _two(z):
    return _torch().full_like(z, 2.0)


def _he2(z):
    return z * z - 1.0


def _he3(z):
    return z * z * z - 3.0 * z


def _he3_prime(z):
    return 3.0 * z * z - 3.0


def _he3_second(z):
    return 6.0 * z


def _sympy_builtins():
    """The sympy expressions of the built-ins (for `check_activation()`), in ``z``."""
    import sympy as sp

    z = sp.Symbol("z", real=True)
    return {
        "relu": sp.Max(z, 0),
        "erf": sp.erf(z / sp.sqrt(2)),
        "linear": z,
        "tanh": sp.tanh(z),
        "softplus": sp.log(1 + sp.exp(z)),
        "gelu": z * (1 + sp.erf(z / sp.sqrt(2))) / 2,
        "leaky_relu": sp.Piecewise((z, z > 0), (sp.Rational(1, 100) * z, True)),
        "abs": sp.Abs(z),
        "quadratic": z**2,
        "he2": z**2 - 1,
        "he3": z**3 - 3 * z,
    }


ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in (
        _builtin("relu", _relu, _relu_prime, code=0, homogeneous=True, description="max(z, 0)"),
        _builtin(
            "erf",
            _erf,
            _erf_prime,
            _erf_second,
            code=1,
            description="erf(z / sqrt 2) (Saad & Solla's normalisation)",
        ),
        _builtin("linear", _linear, _linear_prime, code=2, homogeneous=True, description="z"),
        _builtin("tanh", _tanh, _tanh_prime, _tanh_second, code=3, description="tanh(z)"),
        _builtin(
            "softplus",
            _softplus,
            _softplus_prime,
            _softplus_second,
            code=4,
            description="log(1 + e^z)",
        ),
        _builtin(
            "gelu", _gelu, _gelu_prime, _gelu_second, code=5, description="z Phi(z) (exact GELU)"
        ),
        _builtin(
            "leaky_relu",
            _leaky,
            _leaky_prime,
            code=6,
            homogeneous=True,
            description=f"z for z > 0, {LEAKY_SLOPE} z otherwise",
        ),
        _builtin("abs", _abs, _abs_prime, code=7, homogeneous=True, description="|z|"),
        _builtin(
            "quadratic",
            _quadratic,
            _quadratic_prime,
            _two,
            code=8,
            description="z^2 (phase retrieval)",
        ),
        _builtin("he2", _he2, _quadratic_prime, _two, code=9, description="z^2 - 1 (Hermite He2)"),
        _builtin(
            "he3", _he3, _he3_prime, _he3_second, code=10, description="z^3 - 3z (Hermite He3)"
        ),
    )
}
"""Every registered activation by name (the built-ins, then any `register_activation()`-ed)."""


def register_activation(activation: Activation) -> Activation:
    """Add ``activation`` to `ACTIVATIONS` under its name (a name may be taken once).

    Parameters
    ----------
    activation : Activation
        The activation to register; registering the same object again is allowed.

    Returns
    -------
    Activation
        ``activation`` itself.

    Raises
    ------
    InputError
        For something other than an `Activation`, or a name already taken by another object.
    """
    if not isinstance(activation, Activation):
        raise InputError(f"register takes an Activation, not {type(activation).__name__}")
    if activation.name in ACTIVATIONS and ACTIVATIONS[activation.name] is not activation:
        raise InputError(
            f"activation name {activation.name!r} is taken; registered: {', '.join(ACTIVATIONS)}"
        )
    ACTIVATIONS[activation.name] = activation
    return activation


SPEC_TEXT = (
    "a registered name ({names}), or MODULE:NAME or path/file.py:NAME naming an Activation or "
    "an elementwise torch function"
)
"""What an activation setting accepts, in words (``{names}``: the registered names)."""


def allowed_activations() -> str:
    """`SPEC_TEXT` with the names registered now."""
    return SPEC_TEXT.format(names=", ".join(ACTIVATIONS))


def activation_of(activation: str | Activation) -> Activation:
    """The `Activation` of a registered name, of a ``MODULE:NAME`` / ``file.py:NAME``
    spec (`load_activation()`, once per process), or the object itself.

    Parameters
    ----------
    activation : str or Activation
        A registered name (`ACTIVATIONS`), a ``MODULE:NAME`` or ``path/file.py:NAME`` spec, or an
        `Activation`.

    Returns
    -------
    Activation
        The registered or loaded activation (the same object for every call with one spec).

    Raises
    ------
    InputError
        For a name that is not registered and is not a spec, or a spec that fails to load (its
        cause named).
    """
    if isinstance(activation, Activation):
        return activation
    if isinstance(activation, str) and activation in ACTIVATIONS:
        return ACTIVATIONS[activation]
    if isinstance(activation, str) and ":" in activation:
        return load_activation(activation)
    raise InputError(
        f"activation={activation!r} is not allowed; allowed: {allowed_activations()}, or an "
        "Activation"
    )


def is_activation(spec: object) -> bool:
    """Whether ``spec`` names an activation (`activation_of()`): a registered name, or a
    ``MODULE:NAME`` spec that loads; a spec that cannot be loaded raises the
    `InputError` naming why (a setting's check keeps that cause)."""
    if isinstance(spec, Activation) or (isinstance(spec, str) and spec in ACTIVATIONS):
        return True
    if not isinstance(spec, str) or ":" not in spec:
        return False
    return isinstance(load_activation(spec), Activation)


_LOADED: dict[str, Activation] = {}


def load_activation(spec: str) -> Activation:
    """The activation a spec names: ``MODULE:NAME`` (an importable module) or
    ``path/file.py:NAME``, its ``NAME`` an `Activation` or an elementwise torch function
    (wrapped by `Activation.from_torch()`, named by the spec, and checked by it). Loaded
    once per process and spec, so every layer sees one object; a spec is how a user's
    activation reaches another process (the string travels, each process loads it). Whatever
    fails in the user's code (the file, the import, the attribute, the function) is one
    `InputError` naming the spec and the cause."""
    if not isinstance(spec, str) or ":" not in spec:
        return activation_of(spec)
    where, _, attr = spec.rpartition(":")
    key = spec
    if where.endswith(".py"):
        key = f"{Path(where).resolve()}:{attr}"
    if key in _LOADED:
        return _LOADED[key]
    if not attr.isidentifier() or not where:
        raise InputError(f"activation={spec!r} is not allowed; allowed: {allowed_activations()}")
    module = _import_for(spec, where)
    obj = getattr(module, attr, None)
    if isinstance(obj, Activation):
        act = obj
    elif callable(obj):
        act = Activation.from_torch(obj, name=spec)
    else:
        found = "nothing" if obj is None else f"a {type(obj).__name__}"
        raise InputError(
            f"activation={spec!r}: {where} has {found} called {attr!r}; allowed: an "
            "Activation or an elementwise torch function"
        )
    _LOADED[key] = act
    return act


def _import_for(spec: str, where: str):
    """The module of ``where`` (a module name or a ``.py`` path), any failure an InputError."""
    import importlib
    import importlib.util

    from .._errors import oneline

    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise InputError(f"activation={spec!r}: the file {where!r} does not exist")
            found = importlib.util.spec_from_file_location(f"_gaugedyn_user_{path.stem}", path)
            if found is None or found.loader is None:
                raise InputError(f"activation={spec!r}: {where!r} cannot be imported")
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
            return module
        return importlib.import_module(where)
    except InputError:
        raise
    except SyntaxError as err:
        raise InputError(
            f"activation={spec!r}: {where} has a syntax error at line {err.lineno}: {err.msg}"
        ) from None
    except Exception as err:
        raise InputError(
            f"activation={spec!r}: importing {where} raised {type(err).__name__}: "
            f"{oneline(err)[:200]}"
        ) from None


def activation_name(activation: str | Activation) -> str:
    """The name of an activation given by name or object."""
    return activation_of(activation).name


# --- the checks a user runs on their activation ---------------------------------------------


CHECK_BYTES_PER_SAMPLE = 118
"""Peak bytes per Monte Carlo sample of `check_activation()`: the two normal draws and about
a dozen float64 arrays of the same length (the inputs, ``g``, ``g'``, ``g''`` and products).
Measured on 2026-12-06 as the slope of the peak resident memory (``/usr/bin/time``) of
``gaugedyn check-activation tanh --configurations 1`` between 1e6 and 1e7 samples: 118 bytes per
sample for tanh (a smooth activation: its ``g''`` too), 93 for relu; 1.43 GB at 1e7 samples."""
CHECK_SECONDS_PER_SAMPLE = 5e-7
"""Seconds per sample and configuration of `check_activation()`: 0.42 us measured for tanh
(``gaugedyn check-activation tanh --samples 1000000 --configurations 4`` against 100000, on a
loaded two-core x86-64)."""


PARAMS: dict[str, Param] = {
    "samples": Param(
        int,
        1_000_000,
        name="samples",
        lo=1000,
        hi=10**8,
        help="Monte Carlo samples per configuration",
        why=f"1e8 samples need about {CHECK_BYTES_PER_SAMPLE * 1e8 / 1e9:.0f} GB "
        f"({CHECK_BYTES_PER_SAMPLE} bytes per sample, measured)",
    ),
    "configurations": Param(
        int,
        20,
        name="configurations",
        lo=1,
        hi=1000,
        help="random covariances to check",
        why="each configuration draws its own Monte Carlo estimate",
    ),
    "seed": Param(
        int,
        0,
        name="seed",
        lo=0,
        hi=2**63 - 1,
        hi_text="2**63 - 1",
        help="seed of the covariances and samples",
        why="numpy's SeedSequence entropy",
    ),
}
"""The settings of `check_activation()`, declared once: checked by it and offered by
``gaugedyn check-activation``."""


def _check_sizes(samples, configurations, seed) -> tuple[int, int]:
    from .._options import check_memory, check_work

    samples = PARAMS["samples"].accept(samples)
    configurations = PARAMS["configurations"].accept(configurations)
    PARAMS["seed"].accept(seed)
    check_memory(
        f"samples={samples}",
        CHECK_BYTES_PER_SAMPLE * samples,
        f"{CHECK_BYTES_PER_SAMPLE} bytes per sample",
    )
    check_work(
        f"samples={samples} on configurations={configurations}",
        CHECK_SECONDS_PER_SAMPLE * samples * configurations,
        f"{CHECK_SECONDS_PER_SAMPLE * 1e6:g} us per sample and configuration",
        "choose fewer samples or configurations",
    )
    return samples, configurations


def check_activation(
    activation: str | Activation,
    *,
    samples: int = 1_000_000,
    configurations: int = 20,
    seed: int = 0,
    numerical: bool = False,
) -> dict:
    r"""Compare an activation's Gaussian expectations with Monte Carlo and $g'$ with autograd.

    On ``configurations`` random covariances $C = [[q_1, c], [c, q_2]]$ ($q$ in $[0.25, 2]$,
    correlation in $[-0.9, 0.9]$) it draws ``samples`` Gaussian pairs (common random numbers,
    ``numpy.random.default_rng(seed)``) and reports, for each kernel quantity the flow uses
    ($F$, $\partial F/\partial c = E[g' g']$, $2\, \partial F/\partial q_1 = E[g'' g]$ through
    Price's theorem when $g$ is smooth, and $S$), the largest deviation in standard errors
    $\max |\mathrm{kernel} - \mathrm{MC}| / \mathrm{SE}$; for the derivative the largest
    $|g' - \mathrm{autograd}\ g'|$ on a grid of 2001 points in $[-6, 6]$; ``quadrature_error``, the
    largest stated error bound of the numerical kernels on the same configurations; and, when
    ``sympy_expr`` is set, the largest deviation of ``function`` and ``derivative`` from it.
    ``numerical=True`` checks the quadrature even when a closed form exists. The kernels pass when
    every z-score is below 4. ``samples`` and ``configurations`` are checked against the command
    line's declarations, and their product against the memory available
    (`CHECK_BYTES_PER_SAMPLE`) and the day of work a command accepts
    (`CHECK_SECONDS_PER_SAMPLE`), before any sample is drawn.

    Parameters
    ----------
    activation : str or Activation
        The activation to check (a registered name, a spec or an `Activation`).
    samples : int
        Monte Carlo pairs per configuration, in $[1000, 10^8]$.
    configurations : int
        Random covariances, in $[1, 1000]$.
    seed : int
        Seed of the covariances and samples, in $[0, 2^{63} - 1]$.
    numerical : bool
        Check the quadrature kernels even where closed forms exist.

    Returns
    -------
    dict
        ``activation``, ``samples``, ``configurations``, ``seed``, ``kernels`` (the rule checked),
        ``max_z`` (per quantity), ``derivative_vs_autograd``, ``quadrature_error``, with
        ``function_vs_sympy`` and ``derivative_vs_sympy`` when a sympy expression is known, and
        ``passed``.

    Raises
    ------
    InputError
        For a setting outside its range, a product of samples and configurations beyond the
        memory or the work allowed, an unknown activation, or a ``sympy_expr`` with other than one
        free symbol.
    """
    samples, configurations = _check_sizes(samples, configurations, seed)
    act = activation_of(activation)
    torch = _torch()
    rng = np.random.default_rng(seed)
    kernels = act.quadrature.kernels() if numerical else act.kernels
    F, dF, _, S, _, _ = kernels
    q1, q2 = rng.uniform(0.25, 2.0, configurations), rng.uniform(0.25, 2.0, configurations)
    c = rng.uniform(-0.9, 0.9, configurations) * np.sqrt(q1 * q2)
    z = rng.standard_normal((2, samples))
    g, gp = on_numpy(act.function), on_numpy(act.derivative)
    gpp = None if act.homogeneous else on_numpy(act.second)
    worst = {"pair": 0.0, "pair_dc": 0.0, "pair_dq1": 0.0, "self": 0.0}
    for i in range(configurations):
        rho = c[i] / math.sqrt(q1[i] * q2[i])
        x1 = math.sqrt(q1[i]) * z[0]
        x2 = math.sqrt(q2[i]) * (rho * z[0] + math.sqrt(1 - rho * rho) * z[1])
        G1, G2, P1, P2 = g(x1), g(x2), gp(x1), gp(x2)
        grad = dF(q1[i], q2[i], c[i])
        pairs = [
            ("pair", G1 * G2, F(q1[i], q2[i], c[i])),
            ("pair_dc", P1 * P2, grad[2]),
            ("self", G1 * G1, S(q1[i])),
        ]
        if gpp is not None:
            pairs.append(("pair_dq1", gpp(x1) * G2, 2 * grad[0]))
        for key, sample, value in pairs:
            se = sample.std(ddof=1) / math.sqrt(samples)
            dev = abs(float(value) - sample.mean())
            worst[key] = max(worst[key], dev / se if se > 0 else (0.0 if dev < 1e-12 else np.inf))
    grid = torch.linspace(-6.0, 6.0, 2001, dtype=torch.float64)
    derivative_error = float(
        (act.derivative(grid) - _autograd_derivative(act.function)(grid)).abs().max()
    )
    max_z = {k: float(v) for k, v in worst.items() if not (k == "pair_dq1" and gpp is None)}
    report = {
        "activation": act.name,
        "samples": samples,
        "configurations": configurations,
        "seed": seed,
        "kernels": act.quadrature_rule if numerical else act.rule,
        "max_z": max_z,
        "derivative_vs_autograd": derivative_error,
        "quadrature_error": float(np.max(act.quadrature.error(q1, q2, c))),
    }
    expr = act.sympy_expr
    if expr is None and ACTIVATIONS.get(act.name) is act:
        expr = _sympy_builtins().get(act.name)
    if expr is not None:
        import sympy as sp

        zs = sorted(expr.free_symbols, key=str)
        if len(zs) != 1:
            raise InputError(f"sympy_expr {expr} must have exactly one free symbol")
        xs = np.linspace(-6.0, 6.0, 2001)
        f = sp.lambdify(zs, expr, ["scipy", "numpy"])
        fp = sp.lambdify(zs, sp.diff(expr, zs[0]), ["scipy", "numpy"])
        off = xs != 0.0  # a kink at 0 has no derivative there
        report["function_vs_sympy"] = float(np.max(np.abs(g(xs) - f(xs))))
        report["derivative_vs_sympy"] = float(np.max(np.abs(gp(xs[off]) - fp(xs[off]))))
    report["passed"] = all(v < 4.0 for v in max_z.values())  # NaN or inf: not passed
    return report
