r"""Problem specifications: teacher, student, activation and the gauge of each neuron.

The gauge of neuron $i$ is the choice of $\delta_i = a_i^2 - |w_i|^2$ at a fixed function
$\rho_i u_i$: the transformation $(a_i, w_i) \to (a_i / c_i,\, c_i w_i)$ with $c_i > 0$ keeps the
network function of a positively homogeneous activation exactly fixed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._errors import InputError
from .._options import Param
from ._activation import Activation, activation_of, allowed_activations, is_activation

GAUGE_NAMES = ("w-heavy", "a-heavy", "balanced")
MAX_NEURONS = 64
"""The most neurons of a named set-up on the command line (the dense Jacobian of the
order-parameter state grows as $K^4$)."""

PARAMS: dict[str, Param] = {
    "dim": Param(
        int,
        name="dim",
        lo=2,
        hi=10**8,
        help="input dimension D",
        metavar="D",
        why="arrays of D float64 per neuron; memory is also estimated per request",
    ),
    "gauge": Param(
        str, "w-heavy", name="gauge", choices=GAUGE_NAMES, help="gauge of the single neuron"
    ),
    "scale": Param(
        float,
        1.0,
        name="scale",
        lo=0,
        lo_open=True,
        hi=1e150,
        help="initial coefficient rho0 = s",
        why="a^2 = s / D and |w|^2 = s D must stay finite in float64",
    ),
    "activation": Param(
        str,
        "relu",
        name="activation",
        check=is_activation,
        allowed=allowed_activations(),
        help="the student's activation",
    ),
    "teacher_activation": Param(
        str,
        name="teacher_activation",
        check=is_activation,
        allowed=allowed_activations(),
        help="the teacher's own activation",
    ),
    "overlap": Param(
        float,
        name="overlap",
        lo=-1,
        hi=1,
        lo_open=True,
        hi_open=True,
        help="initial overlap m0 of the student with the teacher",
        why="an overlap is a cosine",
    ),
    "epsilon": Param(
        float,
        name="epsilon",
        lo=0,
        hi=1e6,
        help="size of a perturbation",
        why="a relative perturbation",
    ),
    "count": Param(
        int,
        name="count",
        lo=1,
        hi=10**6,
        help="number of neurons",
        why="neurons are dense arrays of D numbers each",
    ),
}
"""The settings of the set-ups (`single()`, `duplicates()`, `random_problem()`,
`perturb()`), declared once: the functions check their arguments with them and the command
line derives its options from them."""


@dataclass(frozen=True)
class Problem:
    """A teacher-student problem: student ``(a, W)``, teacher ``(b, V)`` and activation.

    ``a (K,)``, ``W (K, D)``, ``b (M,)``, ``V (M, D)``; ``setup`` records how it was built;
    ``teacher_activation`` is the teacher's activation when it differs from the student's
    (``None``: the same; `teacher` is the teacher's in either case).
    """

    a: np.ndarray
    W: np.ndarray
    b: np.ndarray
    V: np.ndarray
    activation: str | Activation = "relu"
    setup: dict = field(default_factory=dict)
    teacher_activation: str | Activation | None = None

    def __post_init__(self):
        activation_of(self.activation)
        if self.teacher_activation is not None:
            activation_of(self.teacher_activation)
        a, W, b, V = (np.asarray(x, dtype=np.float64) for x in (self.a, self.W, self.b, self.V))
        if a.ndim != 1 or W.ndim != 2 or W.shape[0] != a.shape[0]:
            raise InputError(
                f"student shapes a{a.shape}, W{W.shape} do not match; need (K,), (K, D)"
            )
        if b.ndim != 1 or V.ndim != 2 or V.shape[0] != b.shape[0] or V.shape[1] != W.shape[1]:
            raise InputError(
                f"teacher shapes b{b.shape}, V{V.shape} do not match (M,), (M, D={W.shape[1]})"
            )
        if not all(np.all(np.isfinite(x)) for x in (a, W, b, V)):
            raise InputError("problem parameters must be finite")
        if np.any(np.linalg.norm(W, axis=1) == 0) or np.any(np.linalg.norm(V, axis=1) == 0):
            raise InputError("every student and teacher weight vector must be non-zero")
        for name, x in zip("aWbV", (a, W, b, V)):
            object.__setattr__(self, name, x)

    @property
    def teacher(self) -> Activation:
        """The teacher's activation (the student's unless ``teacher_activation`` is set)."""
        return activation_of(
            self.activation if self.teacher_activation is None else self.teacher_activation
        )

    @property
    def K(self) -> int:
        return self.a.shape[0]

    @property
    def M(self) -> int:
        return self.b.shape[0]

    @property
    def dim(self) -> int:
        return self.W.shape[1]

    @property
    def rho(self) -> np.ndarray:
        return self.a * np.linalg.norm(self.W, axis=1)

    @property
    def directions(self) -> np.ndarray:
        return self.W / np.linalg.norm(self.W, axis=1, keepdims=True)

    @property
    def delta(self) -> np.ndarray:
        return self.a**2 - np.sum(self.W**2, axis=1)

    def order_parameters(self):
        """``(a, Q, R, b, T)``."""
        return self.a, self.W @ self.W.T, self.W @ self.V.T, self.b, self.V @ self.V.T

    def describe(self) -> dict:
        """Plain-data summary for result metadata (weights summarised, not dumped)."""
        out = {
            "activation": activation_of(self.activation).name,
            "K": self.K,
            "M": self.M,
            "dim": self.dim,
            "rho0": self.rho.tolist(),
            "delta0": self.delta.tolist(),
            "b": self.b.tolist(),
            "setup": self.setup,
        }
        if self.teacher_activation is not None:
            out["teacher_activation"] = activation_of(self.teacher_activation).name
        return out

    def replace(self, **changes) -> Problem:
        return dataclasses.replace(self, **changes)


def _weights_for(rho_i: float, delta_i: float, direction: np.ndarray):
    r"""``(a, w)`` with $a |w| = \rho$, $a^2 - |w|^2 = \delta$ and ``w`` along ``direction``."""
    root = np.hypot(delta_i, 2.0 * rho_i)
    # the cancelling branch is rewritten with a^2 |w|^2 = rho^2 so strong gauges stay exact
    if delta_i >= 0:
        a_sq = 0.5 * (root + delta_i)
        w_sq = rho_i * rho_i / a_sq
    else:
        w_sq = 0.5 * (root - delta_i)
        a_sq = rho_i * rho_i / w_sq
    if w_sq <= 0.0:
        raise InputError(
            f"gauge delta={delta_i!r} with rho={rho_i!r} leaves |w|^2={w_sq!r}; the neuron needs |w| > 0"
        )
    sign = 1.0 if rho_i >= 0 else -1.0
    return sign * np.sqrt(a_sq), np.sqrt(w_sq) * direction


def _gauged_weights(rho, delta, directions):
    """``(a (K,), W (K, D))`` of neurons ``rho_i u_i`` at gauges ``delta_i`` (see `_weights_for()`)."""
    pairs = [_weights_for(r, d, u) for r, d, u in zip(rho, delta, directions)]
    return np.array([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def named_delta(name: str, rho_i: float, dim: int, strength: float | None = None) -> float:
    r"""``delta`` of a named gauge at coefficient ``rho``.

    ``w-heavy``: $|w|^2 = |\rho|\, \mathit{strength}$, $a^2 = |\rho| / \mathit{strength}$;
    ``a-heavy``: the two swapped; ``balanced``: $\delta = 0$. ``strength`` defaults to the input
    dimension ``D``.
    """
    lam = float(dim if strength is None else strength)
    if lam <= 0:
        raise InputError(f"gauge strength={lam!r} is not allowed; it must be > 0")
    r = abs(float(rho_i))
    if name == "w-heavy":
        return r / lam - r * lam
    if name == "a-heavy":
        return r * lam - r / lam
    if name == "balanced":
        return 0.0
    raise InputError(
        f"unknown gauge {name!r}; allowed: {', '.join(GAUGE_NAMES)}, a number c > 0 "
        "(rescaling) or delta=<value>"
    )


def with_gauge(problem: Problem, *, c=None, delta=None, names=None, strength=None) -> Problem:
    r"""The same initial function with a new gauge per neuron.

    Exactly one of: ``c`` (rescaling factors $(a_i, w_i) \to (a_i / c_i, c_i w_i)$), ``delta``
    (target $a_i^2 - |w_i|^2$), or ``names`` (one of `GAUGE_NAMES` per neuron).

    Parameters
    ----------
    problem : Problem
        The problem whose students are re-gauged; each $\rho_i u_i$ is kept.
    c : float, array_like or None
        Rescaling factors, one or one per neuron, each finite and $> 0$.
    delta : float, array_like or None
        Target gauges $\delta_i$, one or one per neuron, finite.
    names : sequence of str or None
        One gauge name per neuron: ``w-heavy``, ``a-heavy`` or ``balanced`` (`named_delta()`).
    strength : float or None
        With ``names``: the ratio $|w|^2 / |\rho|$ of ``w-heavy`` (its inverse for ``a-heavy``),
        $> 0$; ``None``: the input dimension $D$.

    Returns
    -------
    Problem
        A copy with new ``a`` and ``W``.

    Raises
    ------
    InputError
        Unless exactly one of ``c``, ``delta``, ``names`` is given; for a ``c`` that is not finite
        and positive; for a number of names other than ``K``, an unknown name or a strength
        $\le 0$; for a ``delta`` that is not finite or leaves a neuron with $|w| = 0$.
    """
    given = [x is not None for x in (c, delta, names)]
    if sum(given) != 1:
        raise InputError("give exactly one of c, delta or names to set a gauge")
    K = problem.K
    if c is not None:
        c = np.broadcast_to(np.asarray(c, dtype=np.float64), (K,))
        if np.any(~np.isfinite(c)) or np.any(c <= 0):
            raise InputError(
                f"gauge factors c={c.tolist()} are not allowed; each must be finite and > 0"
            )
        return problem.replace(a=problem.a / c, W=problem.W * c[:, None])
    if names is not None:
        names = list(names)
        if len(names) != K:
            raise InputError(f"{len(names)} gauges given for K={K} neurons; give one per neuron")
        delta = [named_delta(n, r, problem.dim, strength) for n, r in zip(names, problem.rho)]
    delta = np.broadcast_to(np.asarray(delta, dtype=np.float64), (K,))
    if np.any(~np.isfinite(delta)):
        raise InputError(f"gauge delta={delta.tolist()} must be finite")
    a, W = _gauged_weights(problem.rho, delta, problem.directions)
    return problem.replace(a=a, W=W)


def _check_dim(dim) -> int:
    """``dim`` checked against its declaration (`PARAMS`)."""
    if isinstance(dim, float):  # a dimension is a count: 10.0 is a slip, not 10
        raise InputError(
            f"dim={dim!r} is not allowed (not an integer); allowed: {PARAMS['dim'].describe()}"
        )
    return PARAMS["dim"].accept(dim)


def _check_scale(scale) -> float:
    return PARAMS["scale"].accept(scale)


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise InputError(
            f"rng={type(rng).__name__} is not allowed; allowed: a "
            "numpy.random.Generator (explicit seeds only)"
        )


def single(
    dim: int,
    gauge: str = "w-heavy",
    scale: float = 1.0,
    activation: str | Activation = "relu",
    overlap: float | None = None,
) -> Problem:
    r"""The ``single`` set-up: $K = M = 1$, $b = 1$, $v = e_1$.

    The student direction $u_0 = m_0 e_1 + \sqrt{1 - m_0^2}\, e_2$ with $m_0 = D^{-1/2}$ (or
    ``overlap``), coefficient $\rho_0 =$ ``scale``; gauge ``w-heavy``: $|w_0|^2 = s D$,
    $a_0^2 = s / D$; ``a-heavy``: swapped.

    Parameters
    ----------
    dim : int
        Input dimension $D$, an integer in $[2, 10^8]$.
    gauge : str
        ``w-heavy``, ``a-heavy`` or ``balanced``.
    scale : float
        The initial coefficient $\rho_0 = s$, in $(0, 10^{150}]$.
    activation : str or Activation
        The activation of student and teacher (a registered name or an `Activation`).
    overlap : float or None
        The initial overlap $m_0$, in $(-1, 1)$; ``None``: $D^{-1/2}$.

    Returns
    -------
    Problem
        With ``setup`` recording ``name="single"``, ``dim``, ``gauges``, ``scale`` and ``overlap``.

    Raises
    ------
    InputError
        For a value outside the ranges above, an unknown gauge or activation (`duplicates()`).
    """
    return duplicates(
        dim, [gauge], scale=scale, activation=activation, overlap=overlap, _name="single"
    )


def duplicates(
    dim: int,
    gauges: Sequence[str],
    scale: float = 1.0,
    activation: str | Activation = "relu",
    overlap: float | None = None,
    _name: str = "duplicates",
) -> Problem:
    r"""$K =$ ``len(gauges)`` copies of the ``single`` neuron, each with its own named gauge.

    Parameters
    ----------
    dim : int
        Input dimension $D$, an integer in $[2, 10^8]$ (a float such as ``10.0`` is refused).
    gauges : sequence of str
        A non-empty list of gauge names (``w-heavy``, ``a-heavy``, ``balanced``), one per copy.
    scale : float
        The initial coefficient $\rho_0$ of every copy, in $(0, 10^{150}]$.
    activation : str or Activation
        The activation of student and teacher.
    overlap : float or None
        The initial overlap $m_0$ with the teacher, in $(-1, 1)$; ``None``: $D^{-1/2}$.
    _name : str
        The set-up's name recorded in ``setup`` (`single()` passes ``"single"``).

    Returns
    -------
    Problem
        $K$ students along one direction, one teacher $v = e_1$ with $b = 1$.

    Raises
    ------
    InputError
        For ``dim``, ``scale`` or ``overlap`` outside its range, an unknown activation, a
        ``gauges`` that is a string, not a sequence or empty, or an unknown gauge name.
    """
    dim, scale = _check_dim(dim), _check_scale(scale)
    activation_of(activation)
    if isinstance(gauges, str) or not isinstance(gauges, Sequence) or not gauges:
        raise InputError(
            f"gauges={gauges!r} is not allowed; allowed: a non-empty list of gauge "
            f"names ({', '.join(GAUGE_NAMES)}) or factors c > 0"
        )
    gauges = list(gauges)
    m0 = dim**-0.5 if overlap is None else PARAMS["overlap"].accept(overlap)
    V = np.zeros((1, dim))
    V[0, 0] = 1.0
    u0 = np.zeros(dim)
    u0[0], u0[1] = m0, np.sqrt(1.0 - m0 * m0)
    K = len(gauges)
    base = Problem(
        a=np.full(K, scale), W=np.tile(u0, (K, 1)), b=np.ones(1), V=V, activation=activation
    )
    problem = with_gauge(base, names=gauges)
    return problem.replace(
        setup={"name": _name, "dim": dim, "gauges": gauges, "scale": scale, "overlap": m0}
    )


def random_problem(
    dim: int,
    K: int,
    M: int,
    rng: np.random.Generator,
    activation: str | Activation = "relu",
    scale: float = 1.0,
    teacher_activation: str | Activation | None = None,
) -> Problem:
    r"""Gaussian random student and teacher ($w_i, v_n \sim N(0, I/D)$, $a_i \sim N(0, s^2)$ with
    $s$ = ``scale``, $b_n \sim N(0, 1)$); ``teacher_activation``: the teacher's own activation
    (``None``: the student's).

    Parameters
    ----------
    dim : int
        Input dimension $D$, an integer in $[2, 10^8]$.
    K : int
        Number of students, in $[1, 10^6]$.
    M : int
        Number of teachers, in $[1, 10^6]$.
    rng : numpy.random.Generator
        The source of every draw (explicit seeds only).
    activation : str or Activation
        The students' activation.
    scale : float
        Standard deviation of the $a_i$, in $(0, 10^{150}]$.
    teacher_activation : str, Activation or None
        The teacher's activation; ``None``: the students'.

    Returns
    -------
    Problem
        With ``setup`` ``{"name": "random", "dim", "K", "M"}``.

    Raises
    ------
    InputError
        For a setting outside its range, an ``rng`` that is not a ``numpy.random.Generator``, or
        an unknown activation.
    """
    dim, scale = _check_dim(dim), _check_scale(scale)
    K, M = PARAMS["count"].accept(K, "K"), PARAMS["count"].accept(M, "M")
    _check_rng(rng)
    activation_of(activation)
    W = rng.normal(size=(K, dim)) / np.sqrt(dim)
    V = rng.normal(size=(M, dim)) / np.sqrt(dim)
    return Problem(
        a=scale * rng.normal(size=K),
        W=W,
        b=rng.normal(size=M),
        V=V,
        activation=activation,
        setup={"name": "random", "dim": dim, "K": K, "M": M},
        teacher_activation=teacher_activation,
    )


def perturb(problem: Problem, epsilon: float, rng: np.random.Generator) -> Problem:
    r"""A visible perturbation of size ``epsilon`` of the initial function.

    Each neuron's coefficient and direction move independently:
    $\rho_i \to \rho_i (1 + \epsilon z_i)$ and $u_i \to \mathrm{normalise}(u_i + \epsilon \xi_i)$
    with $\xi_i$ Gaussian in the plane of the set-up (the span of $u_i$ and the teacher), keeping
    every neuron's gauge $\delta_i$.

    Parameters
    ----------
    problem : Problem
        The problem to perturb.
    epsilon : float
        The relative size, in $[0, 10^6]$.
    rng : numpy.random.Generator
        The source of $z_i$ and $\xi_i$.

    Returns
    -------
    Problem
        A copy with new ``a`` and ``W`` and ``epsilon`` added to ``setup``.

    Raises
    ------
    InputError
        For ``epsilon`` outside its range, an ``rng`` that is not a ``numpy.random.Generator``,
        a ``problem`` that is not a `Problem`, or a perturbed neuron that its gauge leaves with
        $|w| = 0$.
    """
    epsilon = PARAMS["epsilon"].accept(epsilon)
    _check_rng(rng)
    if not isinstance(problem, Problem):
        raise InputError(f"problem={type(problem).__name__} is not allowed; allowed: a Problem")
    basis, _ = np.linalg.qr(np.concatenate([problem.V, problem.W]).T)
    U = problem.directions
    xi = rng.normal(size=(problem.K, basis.shape[1])) @ basis.T
    U = U + epsilon * xi / np.sqrt(basis.shape[1])
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    new_rho = problem.rho * (1.0 + epsilon * rng.normal(size=problem.K))
    a, W = _gauged_weights(new_rho, problem.delta, U)
    return problem.replace(a=a, W=W, setup={**problem.setup, "epsilon": epsilon})
