r"""How many conservation laws a model's gradient flow has, counted at generic points.

Let $\theta \in \mathbb{R}^D$ be the parameters and $\Phi(\theta) \in \mathbb{R}^M$ a family of
potentials: the model's outputs on a data set (``fields="function"``,
$\Phi_{i,k} = f_k(\theta, x_i)$) or its per-sample losses (``fields="loss"``,
$\Phi_i = |f(\theta, x_i) - y_i|^2 / 2$). Each
$c \in \mathbb{R}^M$ gives the gradient field

$$
X_c(\theta) = \nabla_\theta \langle c, \Phi(\theta)\rangle = J_\Phi(\theta)^\top c,
$$

and gradient flow on any loss built from the outputs moves along these fields. A conservation
law is a function ``h`` with $\nabla h(\theta)$ orthogonal to every $X_c(\theta)$ at every
$\theta$. At a generic point (Marcotte, Gribonval and Peyré, "Abide by the law and follow the
flow", 2023, from Frobenius' theorem) the number of independent laws is

$$
N_{\mathrm{laws}} = D - \dim \mathrm{Lie}(W)(\theta),
$$

``Lie(W)`` the Lie algebra the fields generate under ``[X, Y] = J_Y X - J_X Y`` and
$\mathrm{Lie}(W)(\theta)$ its trace, the values at $\theta$. The trace is built as
$V_1 = W(\theta)$, the row space of $J_\Phi(\theta)$, and
$V_{k+1} = V_k + \mathrm{span}\{[X_c, Y](\theta)\}$ over right-nested brackets ``Y`` of depth ``k``
(right-nested brackets span the Lie algebra), up to the first ``k`` with
``dim V_{k+1} = dim V_k``: at a generic point the dimensions are locally constant, so the
stagnation holds on a neighbourhood and ``V_k`` is the whole trace. A right-nested bracket is
multilinear in its coefficient vectors ``c``, so ``D - dim V_k`` of them with independent
Gaussian ``c`` span the increment with probability one; ``D - dim V_k + margin`` are drawn per
depth, each formed by nested forward-mode JVPs of reverse-mode gradients (``torch.func``) in
float64.

**Symmetries.** The null space of $J_F(\theta)$ (``F`` the outputs on the data) holds the
directions that leave the function on the data unchanged to first order; its dimension
$N_{sym} = D - \operatorname{rank} J_F$ is the count of infinitesimal symmetries. With
``fields="function"``, $W(\theta)$ is the row space of ``J_F``, so the trace splits orthogonally as
$\mathrm{Lie}(W)(\theta) = W(\theta) \oplus (\mathrm{Lie}(W)(\theta) \cap \ker J_F)$: of the
$N_{sym}$ symmetry directions, $\dim \mathrm{Lie} - \dim W$ are reached by the brackets (the flow
moves along them: they give no law) and the other ``N_laws`` are the laws' gradients. For a linear
symmetry
$\theta \to e^{tA} \theta$ whose transpose $A^\top$ also generates one, the tangent $A\theta$
splits into $A_s \theta = \nabla(\theta^\top A_s \theta / 2)$, the gradient of a law (Noether's
charge), and $A_a \theta$ (``A_a`` antisymmetric: an isometry, whose charge is zero). With
known generators (``generators=``) the correspondence is checked: the symmetric tangents are
orthogonal to the Lie trace and as many as the laws, and the antisymmetric ones add to them
exactly the ``dim Lie - dim W`` symmetry directions the brackets reach (they need not lie in
the trace themselves: $A_a \theta$ is not orthogonal to the laws' gradients in general).

**Rank decisions.** Rows are normalised to unit length; with singular values
$s_1 \ge s_2 \ge \dots$ the rank is $\#\{s_i > \mathit{rtol}\, s_1\}$ and its gap
``s_r / max(s_{r+1}, eps s_1 max(shape))`` (numpy's ``matrix_rank`` floor; ``s_{r+1} = 0``
past the matrix's size) is kept for every decision; the result's gap is the smallest over the
decisions and points, and a count is *stable* when it is at least ``min_gap`` and every point
agrees.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._errors import InputError

FIELDS_KINDS = ("function", "loss")
"""The generating fields: the gradients of the outputs on the data, or of the per-sample losses."""

GENERATOR_KINDS = ("symmetric", "antisymmetric")
r"""How a known symmetry generator ``A`` (a linear map on the parameters) relates to its
transpose: its tangent $A\theta$ is a law's gradient (symmetric) or lies in the Lie trace
(antisymmetric, an isometry)."""

Params = dict[str, torch.Tensor]
Parametrisation = Callable[[Params, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class RankDecision:
    """One rank decision: the rank, its gap and the singular values around the cut."""

    rank: int
    gap: float
    rows: int
    near: tuple[float, ...] = ()

    def to_dict(self) -> dict:
        return {"rank": self.rank, "gap": self.gap, "rows": self.rows, "near": list(self.near)}


def decide_rank(rows: torch.Tensor, rtol: float) -> tuple[RankDecision, torch.Tensor]:
    r"""The rank of the span of ``rows`` by a relative tolerance, its gap and a basis.

    Each row is normalised to unit length (zero rows dropped) before the singular values are
    taken; the rank counts the singular values above ``rtol`` times the largest, and the gap is
    the ratio across that cut (module docstring).

    Parameters
    ----------
    rows : torch.Tensor
        ``(n, D)``: the vectors whose span is measured.
    rtol : float
        The relative singular-value tolerance of the decision.

    Returns
    -------
    tuple of (RankDecision, torch.Tensor)
        The decision (rank, gap, singular values) and an orthonormal basis of the span,
        ``(rank, D)``.
    """
    a = _unit_rows(rows)
    if a.shape[0] == 0:
        return RankDecision(0, math.inf, 0), rows.new_zeros((0, rows.shape[1]))
    _, s, vh = torch.linalg.svd(a, full_matrices=False)
    d = _decision(s, a, rtol)
    return d, vh[: d.rank]


def _rank(rows: torch.Tensor, rtol: float) -> RankDecision:
    """`decide_rank()`'s decision alone (singular values only)."""
    a = _unit_rows(rows)
    if a.shape[0] == 0:
        return RankDecision(0, math.inf, 0)
    return _decision(torch.linalg.svdvals(a), a, rtol)


def _unit_rows(rows: torch.Tensor) -> torch.Tensor:
    norms = torch.linalg.vector_norm(rows, dim=1)
    keep = norms > 0
    return rows[keep] / norms[keep, None]


def _decision(s: torch.Tensor, a: torch.Tensor, rtol: float) -> RankDecision:
    s0 = float(s[0])
    r = int((s > rtol * s0).sum())
    floor = float(torch.finfo(a.dtype).eps) * s0 * max(a.shape)
    nxt = float(s[r]) if r < s.numel() else 0.0
    gap = float(s[r - 1]) / max(nxt, floor)
    near = tuple(float(v) / s0 for v in s[max(r - 2, 0) : r + 2])
    return RankDecision(r, gap, int(a.shape[0]), near)


# -- the parametrisation -------------------------------------------------------------------------


class _Problem:
    """A model or parametrisation as a function of one flat float64 parameter vector."""

    def __init__(
        self,
        model: torch.nn.Module | Parametrisation,
        params: Mapping[str, Sequence[int]] | None,
        norm_eps: float | None = None,
    ):
        if isinstance(model, torch.nn.Module):
            if params is not None:
                raise InputError(
                    "params= is not allowed with a torch.nn.Module (its parameters "
                    "are read from it); use it with a callable f(params, x)"
                )
            from torch.func import functional_call

            module = copy.deepcopy(model).double().train()
            for m in module.modules():  # dropout as its expectation, the identity
                if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                    m.eval()
            _composite_norms(module, norm_eps)
            self.module: torch.nn.Module | None = module
            named = [(n, tuple(p.shape)) for n, p in module.named_parameters()]

            def call(p: Params, x: torch.Tensor) -> torch.Tensor:
                return functional_call(module, p, (x,))

            self.call: Parametrisation = call
        elif callable(model):
            if not isinstance(params, Mapping) or not params:
                raise InputError(
                    f"params={params!r} is not allowed with a callable; use a "
                    "mapping {name: shape} of the parameters f(params, x) reads"
                )
            named = []
            for n, s in params.items():
                shape = tuple(s.shape) if isinstance(s, torch.Tensor) else tuple(s)
                if not all(isinstance(d, int | np.integer) and d > 0 for d in shape):
                    raise InputError(
                        f"params[{n!r}]={s!r} is not allowed; use a shape of positive integers"
                    )
                named.append((str(n), tuple(int(d) for d in shape)))
            self.module = None
            self.call = model
        else:
            raise InputError(
                f"model={type(model).__name__} is not allowed; use a "
                "torch.nn.Module or a callable f(params, x)"
            )
        self.names = [n for n, _ in named]
        self.shapes = [s for _, s in named]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.dim = sum(self.sizes)
        if self.dim == 0:
            raise InputError("the model has no parameters")

    def unflat(self, t: torch.Tensor) -> Params:
        out = {}
        for n, s, p in zip(self.names, self.shapes, torch.split(t, self.sizes)):
            out[n] = p.reshape(s)
        return out

    def flat(self, p: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([p[n].reshape(-1) for n in self.names])

    def draw(self, rng: np.random.Generator, vector_std: float) -> torch.Tensor:
        r"""A generic point: every entry Gaussian, of standard deviation
        $1/\sqrt{\mathit{fan\_in}}$ for a tensor of two or more dimensions (``fan_in`` its size over
        its first dimension), ``vector_std`` for a vector or a scalar, about 1 for a module's vector
        named
        ``weight`` (a normalisation's gain) and about 0 otherwise."""
        parts = []
        for n, s in zip(self.names, self.shapes):
            scale = 1.0 / math.sqrt(math.prod(s[1:])) if len(s) > 1 else vector_std
            v = rng.standard_normal(math.prod(s)) * scale
            parts.append(
                v + 1.0
                if self.module is not None and len(s) == 1 and n.rsplit(".", 1)[-1] == "weight"
                else v
            )
        return torch.from_numpy(np.concatenate(parts))

    @property
    def coupled(self) -> bool:
        """Whether the model mixes samples (batch normalisation on batch statistics)."""
        return self.module is not None and any(
            isinstance(m, _Norm) and m.batch for m in self.module.modules()
        )

    def outputs(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = self.call(self.unflat(t), x)
        if not isinstance(out, torch.Tensor):
            raise InputError(
                f"the model returned {type(out).__name__}; conservation_laws needs "
                "a tensor of outputs (wrap a module that returns a tuple)"
            )
        return out


class _Norm(torch.nn.Module):
    r"""A normalisation layer by its formula,
    $\gamma (x - \mathrm{mean}) / \sqrt{\mathrm{var} + \epsilon} + \beta$ (biased variance, as torch
    normalises), over every axis but the channels' (batch normalisation on batch statistics) or over
    the trailing ``normalized_shape`` (layer
    normalisation). Written out, its higher derivatives are those of elementary operations:
    torch's fused batch-normalisation kernel gave wrong third derivatives under nested
    forward-over-reverse differentiation, and ``eps = 0`` (which it refuses) is allowed."""

    weight: torch.Tensor | None
    bias: torch.Tensor | None

    def __init__(self, norm: torch.nn.Module, eps: float):
        super().__init__()
        self.eps = float(eps)
        self.batch = isinstance(norm, torch.nn.modules.batchnorm._BatchNorm)
        self.trailing = len(getattr(norm, "normalized_shape", ()))
        self.weight = getattr(norm, "weight", None)
        self.bias = getattr(norm, "bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.batch:
            dims = [d for d in range(x.dim()) if d != 1]
            shape = [1, -1] + [1] * (x.dim() - 2)
        else:
            dims = list(range(x.dim() - self.trailing, x.dim()))
            shape = list(x.shape[x.dim() - self.trailing :])
        mean = x.mean(dims, keepdim=True)
        var = (x - mean).square().mean(dims, keepdim=True)
        out = (x - mean) / torch.sqrt(var + self.eps)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        return out


def _composite_norms(module: torch.nn.Module, eps: float | None) -> None:
    """Every batch and layer normalisation of ``module`` replaced by `_Norm` (same
    parameter names), at ``eps`` or, when ``None``, at its own."""
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.modules.batchnorm._BatchNorm | torch.nn.LayerNorm):
            setattr(module, name, _Norm(child, child.eps if eps is None else eps))
        else:
            _composite_norms(child, eps)


# -- fields and brackets -------------------------------------------------------------------------


def _field(phi: Callable, t: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    from torch.func import vjp

    return vjp(phi, t)[1](c)[0]


def _nested(phi: Callable, t: torch.Tensor, cs: torch.Tensor) -> torch.Tensor:
    """The right-nested bracket ``[X_{c_k}, [X_{c_(k-1)}, ... [X_{c_2}, X_{c_1}]]](t)``
    (``cs`` of shape ``(k, M)``), ``[X, Y] = J_Y X - J_X Y``."""
    from torch.func import jvp

    if cs.shape[0] == 1:
        return _field(phi, t, cs[0])
    outer = cs[-1]
    inner = cs[:-1]

    def z_fn(s: torch.Tensor) -> torch.Tensor:
        return _field(phi, s, outer)

    def y_fn(s: torch.Tensor) -> torch.Tensor:
        return _nested(phi, s, inner)

    z = z_fn(t)
    y_and_dy = jvp(y_fn, (t,), (z,))
    dz_y = jvp(z_fn, (t,), (y_and_dy[0],))[1]
    return y_and_dy[1] - dz_y


def _half_data(jf: torch.Tensor, n: int) -> torch.Tensor:
    """The rows of ``J_F`` from the first half of the ``n`` data (whole data, every output)."""
    return jf.reshape(n, -1, jf.shape[1])[: max(1, n // 2)].reshape(-1, jf.shape[1])


def _brackets(phi: Callable, t: torch.Tensor, cs: torch.Tensor, chunk: int) -> torch.Tensor:
    from torch.func import vmap

    return vmap(lambda c: _nested(phi, t, c), chunk_size=chunk)(cs)


# -- known laws and generators -------------------------------------------------------------------


def _law_values(known: Callable[[Params], Any], problem: _Problem, t: torch.Tensor) -> torch.Tensor:
    out = known(problem.unflat(t))
    if isinstance(out, Mapping):
        parts = [torch.as_tensor(v).reshape(-1) for v in out.values()]
        out = torch.cat(parts) if parts else t.new_zeros(0)
    if not isinstance(out, torch.Tensor):
        raise InputError(
            f"known returned {type(out).__name__}; use a tensor (or a mapping of "
            "tensors) of law values computed from the parameters"
        )
    return out.reshape(-1)


def _share(v: torch.Tensor, basis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row of ``v``: the share of its norm inside the span of ``basis`` (orthonormal rows)
    and outside it."""
    norms = torch.linalg.vector_norm(v, dim=1).clamp_min(torch.finfo(v.dtype).tiny)
    inside = v @ basis.T @ basis if basis.shape[0] else torch.zeros_like(v)
    return (
        torch.linalg.vector_norm(inside, dim=1) / norms,
        torch.linalg.vector_norm(v - inside, dim=1) / norms,
    )


# -- the result ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConservationLaws:
    r"""The count of a model's conservation laws at generic points (see the module docstring).

    ``dimension`` ``D``; ``span`` $\dim W(\theta)$, the fields' span; ``lie`` the dimension
    of the Lie trace; ``laws = D - lie``; ``symmetries = D - rank J_F``; ``depth`` the bracket
    depth at which the trace stopped growing; ``gap`` the smallest singular-value gap of every
    rank decision at every point; ``points`` the per-point records (seed, decisions per depth,
    the point ``theta`` and data ``x`` as arrays). ``known`` (with ``known=``): the number of
    known law functions, their independent count (``rank``), the largest share of a law's
    gradient inside the Lie trace (``inside_lie``; zero for a conserved function),
    ``conserved`` and ``complete`` (conserved and as many as the laws). ``generators`` (with
    ``generators=``): per kind, the count and rank of the tangents, the largest relative
    $|J_F v| / (\|J_F\|_F |v|)$ (``null_residual``; zero for a symmetry), the largest share of a
    symmetric tangent inside the Lie trace (``inside_lie``; zero for a law's gradient), ``silent``
    (the
    rank the antisymmetric tangents add to the symmetric ones), ``noether`` (the symmetric
    tangents are the laws' gradients, as many as the laws, and the antisymmetric ones add as
    many symmetry directions as the brackets reach) and ``symmetries_spanned`` (the known
    generators span every infinitesimal symmetry).
    """

    dimension: int
    span: int
    lie: int
    laws: int
    symmetries: int
    depth: int
    gap: float
    rtol: float
    min_gap: float
    tol: float
    fields: str
    confirmed: int
    saturated: int
    seed: int
    points: tuple[dict, ...] = field(repr=False)
    known: dict | None = None
    generators: dict | None = None

    @property
    def silent(self) -> int:
        """Symmetry directions that give no law, ``symmetries - laws = lie - rank J_F``: those
        the brackets reach (``lie - span`` with ``fields="function"``)."""
        return self.symmetries - self.laws

    @property
    def agree(self) -> bool:
        """Every point gave the generic count."""
        return self.confirmed == len(self.points)

    @property
    def stable(self) -> bool:
        """The generic count is reached, with data that saturate it (half of them give the same
        ``rank J_F``), at two points or more (at the one point when only one was drawn), and
        every rank decision at those points has a gap of at least ``min_gap``."""
        return self.saturated >= min(2, len(self.points)) and self.gap >= self.min_gap

    @property
    def complete(self) -> bool | None:
        """Whether the known laws are conserved and as many as the laws (``None`` without)."""
        return None if self.known is None else bool(self.known["complete"])

    def to_dict(self, arrays: bool = False) -> dict:
        """A JSON-ready record (with ``arrays``, each point's ``theta`` and ``x`` as lists)."""
        pts = []
        for p in self.points:
            q = {k: v for k, v in p.items() if k not in ("theta", "x")}
            q["theta_shape"] = list(p["theta"].shape)
            q["x_shape"] = list(p["x"].shape)
            if arrays:
                q["theta"] = p["theta"].tolist()
                q["x"] = p["x"].tolist()
            pts.append(q)
        return {
            "dimension": self.dimension,
            "span": self.span,
            "lie": self.lie,
            "laws": self.laws,
            "symmetries": self.symmetries,
            "silent": self.silent,
            "depth": self.depth,
            "gap": self.gap,
            "rtol": self.rtol,
            "min_gap": self.min_gap,
            "tol": self.tol,
            "fields": self.fields,
            "confirmed": self.confirmed,
            "agree": self.agree,
            "saturated": self.saturated,
            "stable": self.stable,
            "seed": self.seed,
            "known": self.known,
            "generators": self.generators,
            "points": pts,
        }

    def __str__(self) -> str:
        lines = [
            f"parameters D = {self.dimension}: fields span {self.span}, Lie trace "
            f"{self.lie} (depth {self.depth}) -> {self.laws} independent conservation "
            f"laws; {self.symmetries} infinitesimal symmetries, {self.silent} of them "
            "reached by the brackets (no law)",
            f"rank gap {self.gap:.3g} (rtol {self.rtol:g}); generic count at "
            f"{self.confirmed} of {len(self.points)} points, {self.saturated} of them "
            f"saturated by half the data; stable: {self.stable}",
        ]
        if self.known is not None:
            k = self.known
            lines.append(
                f"known laws: {k['count']} functions, {k['rank']} independent, "
                f"largest share inside the Lie trace {k['inside_lie']:.2g}: conserved "
                f"{k['conserved']}, complete {k['complete']}"
            )
        if self.generators is not None:
            g = self.generators
            lines.append(
                f"known symmetries: rank {g['rank']} of {self.symmetries}; "
                f"symmetric {g['symmetric']['rank']} (largest share inside the Lie "
                f"trace {g['symmetric']['inside_lie']:.2g}), {g['silent']} more from "
                f"the antisymmetric; Noether's correspondence: {g['noether']}"
            )
        return "\n".join(lines)


# -- the count -----------------------------------------------------------------------------------


def _output_jacobian(
    problem: _Problem, theta: torch.Tensor, x: torch.Tensor, per_sample: bool, chunk: int
) -> torch.Tensor:
    r"""$J_F(\theta)$, one row per output of every sample (``per_sample``: sample by sample)."""
    from torch.func import jacrev, vmap

    D = problem.dim
    if per_sample:

        def one(t: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
            return problem.outputs(t, xi[None]).reshape(-1)

        return vmap(jacrev(one), in_dims=(None, 0), chunk_size=chunk)(theta, x).reshape(-1, D)

    def outputs(t: torch.Tensor) -> torch.Tensor:
        return problem.outputs(t, x).reshape(-1)

    return jacrev(outputs, chunk_size=chunk)(theta)


def _lie_trace(
    phi: Callable,
    theta: torch.Tensor,
    basis: torch.Tensor,
    m: int,
    rng: np.random.Generator,
    *,
    rtol: float,
    max_depth: int,
    margin: int,
    chunk: int,
) -> tuple[torch.Tensor, int, list[dict]]:
    """From the fields' span (``basis``), add right-nested brackets depth by depth until one
    adds no direction: ``(basis of the trace, depth, decisions per depth)``."""
    D = theta.shape[0]
    decisions = []
    depth = 1
    while basis.shape[0] < D and depth < max_depth:
        samples = D - basis.shape[0] + margin
        cs = torch.from_numpy(rng.standard_normal((samples, depth + 1, m)))
        new = _brackets(phi, theta, cs, chunk)
        d, b = decide_rank(torch.cat([basis, new]), rtol)
        decisions.append(d.to_dict())
        if d.rank <= basis.shape[0]:
            break
        basis = b
        depth += 1
    return basis, depth, decisions


def _point(
    problem: _Problem,
    inputs: torch.Tensor | tuple,
    rng: np.random.Generator,
    *,
    fields: str,
    known: Callable | None,
    generators: Callable | None,
    rtol: float,
    max_depth: int,
    margin: int,
    chunk: int,
    per_sample: bool,
    vector_std: float,
) -> dict:
    from torch.func import jacrev

    theta = problem.draw(rng, vector_std)
    x = (
        inputs.to(torch.float64)
        if isinstance(inputs, torch.Tensor)
        else torch.from_numpy(rng.standard_normal(inputs))
    )
    y0 = problem.outputs(theta, x)
    if fields == "loss":
        y = torch.from_numpy(rng.standard_normal(tuple(y0.shape)))
        n = y0.shape[0]

        def phi(t: torch.Tensor) -> torch.Tensor:
            return 0.5 * (problem.outputs(t, x) - y).reshape(n, -1).square().sum(1)
    else:

        def phi(t: torch.Tensor) -> torch.Tensor:
            return problem.outputs(t, x).reshape(-1)

    D = problem.dim
    jf = _output_jacobian(problem, theta, x, per_sample, chunk)
    if fields == "function":
        jphi = jf
    else:  # the loss gradients J_i^T (f_i - y_i), sample by sample
        res = (y0 - y).reshape(y0.shape[0], -1)
        jphi = (jf.reshape(res.shape[0], -1, D) * res[:, :, None]).sum(1)
    dec, basis = decide_rank(jphi, rtol)
    sym_dec = dec if fields == "function" else _rank(jf, rtol)
    cols = torch.linalg.vector_norm(jf, dim=0)
    dead = int((cols <= rtol * cols.max()).sum())
    half_rank = _rank(_half_data(jf, x.shape[0]), rtol).rank
    span = dec.rank
    basis, depth, decisions = _lie_trace(
        phi,
        theta,
        basis,
        jphi.shape[0],
        rng,
        rtol=rtol,
        max_depth=max_depth,
        margin=margin,
        chunk=chunk,
    )
    decisions.insert(0, dec.to_dict())
    record = {
        "theta": theta.numpy(),
        "x": x.numpy(),
        "span": span,
        "lie": int(basis.shape[0]),
        "symmetries": D - sym_dec.rank,
        "depth": depth,
        "rank_half_data": half_rank,
        "saturated": half_rank == sym_dec.rank,
        "dead_parameters": dead,
        "symmetry_decision": sym_dec.to_dict(),
        "decisions": decisions,
        "gap": min([sym_dec.gap] + [d["gap"] for d in decisions]),
    }
    if known is not None:
        g = jacrev(lambda t: _law_values(known, problem, t))(theta).reshape(-1, D)
        kd = _rank(g, rtol)
        inside, _ = _share(g, basis)
        record["known"] = {
            "count": int(g.shape[0]),
            "rank": kd.rank,
            "gap": kd.gap,
            "inside_lie": float(inside.max()) if inside.numel() else 0.0,
        }
        record["gap"] = min(record["gap"], kd.gap)
    if generators is not None:
        record["generators"] = _generator_record(generators, problem, theta, jf, basis, rtol)
        record["gap"] = min(record["gap"], record["generators"]["gap"])
    return record


def _generator_record(
    generators: Callable,
    problem: _Problem,
    theta: torch.Tensor,
    jf: torch.Tensor,
    basis: torch.Tensor,
    rtol: float,
) -> dict:
    listed = list(generators(problem.unflat(theta)))
    vecs: dict[str, list] = {k: [] for k in GENERATOR_KINDS}
    for item in listed:
        kind, tangent = item
        if kind not in GENERATOR_KINDS:
            raise InputError(
                f"generator kind {kind!r} is not allowed; use one of {GENERATOR_KINDS}"
            )
        full = {
            n: torch.zeros(s, dtype=torch.float64) for n, s in zip(problem.names, problem.shapes)
        }
        for n, v in tangent.items():
            if n not in full:
                raise InputError(
                    f"generator tangent names {n!r}, not a parameter; use one of {problem.names}"
                )
            full[n] = full[n] + v.to(torch.float64)
        vecs[kind].append(problem.flat(full))
    norm_j = float(torch.linalg.matrix_norm(jf))
    out: dict = {}
    gaps = []
    allv = []
    for kind, vs in vecs.items():
        if not vs:
            out[kind] = {"count": 0, "rank": 0, "null_residual": 0.0, "inside_lie": 0.0}
            continue
        v = torch.stack(vs)
        allv.append(v)
        d = _rank(v, rtol)
        gaps.append(d.gap)
        null = torch.linalg.vector_norm(v @ jf.T, dim=1) / (
            norm_j * torch.linalg.vector_norm(v, dim=1).clamp_min(1e-300)
        )
        inside, _ = _share(v, basis)
        out[kind] = {
            "count": len(vs),
            "rank": d.rank,
            "gap": d.gap,
            "null_residual": float(null.max()),
            "inside_lie": float(inside.max()),
        }
    if allv:
        d = _rank(torch.cat(allv), rtol)
        out["rank"] = d.rank
        gaps.append(d.gap)
    else:
        out["rank"] = 0
    out["silent"] = out["rank"] - out["symmetric"]["rank"]
    out["gap"] = min(gaps) if gaps else math.inf
    return out


def conservation_laws(
    model: torch.nn.Module | Parametrisation,
    inputs: torch.Tensor | Sequence[int],
    *,
    params: Mapping[str, Sequence[int]] | None = None,
    fields: str = "function",
    known: str | Callable[[Params], Any] | None = None,
    generators: str | Callable[[Params], Any] | None = None,
    norm_eps: float | None = None,
    per_sample: bool | None = None,
    vector_std: float = 0.2,
    points: int = 3,
    seed: int = 0,
    rtol: float = 1e-9,
    min_gap: float = 1e6,
    tol: float = 1e-6,
    max_depth: int = 8,
    margin: int = 8,
    chunk: int = 64,
    progress: bool = False,
) -> ConservationLaws:
    r"""Count the independent conservation laws of gradient flow on ``model`` at generic points
    (the module docstring gives the method).

    A generic point draws every parameter entry Gaussian (standard deviation
    $1/\sqrt{\text{fan\_in}}$ for matrices, ``vector_std`` for vectors: biases small against
    the weights, so that every ReLU unit's kink crosses the data and a few hundred samples
    saturate the count); ``points`` independent points are drawn from
    ``numpy.random.SeedSequence(seed)``.

    Parameters
    ----------
    model : torch.nn.Module or Parametrisation
        A module (``model(x)`` a tensor; copied in float64, batch normalisation on batch
        statistics, normalisations by their formula, dropout as the identity), or a callable
        ``f(params, x)`` with ``params={name: shape}``.
    inputs : torch.Tensor or sequence of int
        The data's shape ``(N, ...)`` (fresh standard Gaussian data at each point) or a tensor
        (the same data at every point; the first axis indexes the samples).
    params : mapping of str to shape, optional
        The parameter shapes of a callable ``model``.
    fields : str
        ``"function"`` (the outputs on the data generate the fields) or ``"loss"`` (the
        per-sample losses).
    known : callable or "recorder", optional
        Functions believed conserved, ``h(params) -> tensor`` (``"recorder"``: the invariants
        `GaugeRecorder` records): their gradients must have at most ``tol`` of their norm
        inside the Lie trace, and they are complete when conserved and of rank equal to the
        count.
    generators : callable or "recorder", optional
        Known infinitesimal symmetries, ``g(params) -> [(kind, {name: tangent}), ...]`` with
        kind ``"symmetric"`` or ``"antisymmetric"`` (`GENERATOR_KINDS`; ``"recorder"``: those
        of `find_units()`'s groups).
    norm_eps : float, optional
        Every normalisation layer's ``eps`` set to this value (``0.0``: the exact scale
        symmetry ``eps`` breaks); ``None`` keeps the model's.
    per_sample : bool, optional
        Whether the model maps each sample on its own, so that the Jacobian is formed sample by
        sample (``None``: unless the module normalises over the batch; a callable is taken to be
        per-sample).
    vector_std : float
        The standard deviation of vector parameters (biases) at a generic point.
    points : int
        How many independent generic points are drawn.
    seed : int
        The root of ``numpy.random.SeedSequence`` for the points and the data.
    rtol : float
        The relative singular-value tolerance of every rank decision.
    min_gap : float
        The gap a stable count needs.
    tol : float
        The largest share of a known law's gradient norm allowed inside the Lie trace.
    max_depth : int
        The deepest bracket tried.
    margin : int
        Extra brackets drawn per depth.
    chunk : int
        The batch of the vectorised Jacobian-vector products.
    progress : bool
        Whether to show a progress bar over the points.

    Returns
    -------
    ConservationLaws
        The count per point with its rank decisions, the span and Lie trace dimensions, and the
        verdicts on ``known`` and ``generators``.

    Raises
    ------
    InputError
        Naming the bad value, before any work, for an unknown ``fields``, a malformed
        ``inputs``, a count or tolerance out of its range, or a model that is neither a module nor
        a callable with ``params``.
    """
    inputs = _check(
        fields=fields,
        points=points,
        max_depth=max_depth,
        margin=margin,
        chunk=chunk,
        rtol=rtol,
        tol=tol,
        min_gap=min_gap,
        inputs=inputs,
        norm_eps=norm_eps,
        vector_std=vector_std,
        per_sample=per_sample,
    )
    problem = _Problem(model, params, norm_eps)
    if per_sample is None:
        per_sample = not problem.coupled
    elif per_sample and problem.coupled:
        raise InputError(
            "per_sample=True is not allowed: the model normalises over the batch "
            "(its samples are coupled); use None or False"
        )
    known_fn = _resolve(known, "known", model, problem)
    gen_fn = _resolve(generators, "generators", model, problem)
    from .._meta import integer_seed
    from .._progress import progress_bar

    records = []
    bar = progress_bar(points, "conservation_laws", "point", force=True, quiet=not progress)
    with _math_attention():
        for p, child in enumerate(np.random.SeedSequence(int(seed)).spawn(points)):
            rng = np.random.default_rng(child)
            rec = _point(
                problem,
                inputs,
                rng,
                fields=fields,
                known=known_fn,
                generators=gen_fn,
                rtol=rtol,
                max_depth=max_depth,
                margin=margin,
                chunk=chunk,
                per_sample=per_sample,
                vector_std=float(vector_std),
            )
            rec["point"] = p
            rec["seed_state"] = integer_seed(child)
            records.append(rec)
            bar.callback(p + 1)
    bar.close()
    return _aggregate(
        records,
        problem.dim,
        fields=fields,
        rtol=rtol,
        min_gap=min_gap,
        tol=tol,
        seed=seed,
        known=known_fn is not None,
        generators=gen_fn is not None,
    )


def _check(
    *,
    fields,
    points,
    max_depth,
    margin,
    chunk,
    rtol,
    tol,
    min_gap,
    inputs,
    norm_eps,
    vector_std,
    per_sample,
) -> torch.Tensor | tuple:
    """Every argument of `conservation_laws()` checked before any work; ``inputs`` as a
    tensor or a shape tuple."""
    if fields not in FIELDS_KINDS:
        raise InputError(f"fields={fields!r} is not allowed; use one of {FIELDS_KINDS}")
    for name, v, lo, hi in (
        ("points", points, 1, 64),
        ("max_depth", max_depth, 1, 16),
        ("margin", margin, 0, 10_000),
        ("chunk", chunk, 1, 1 << 20),
    ):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not lo <= v <= hi:
            raise InputError(f"{name}={v!r} is not allowed; use an integer in [{lo}, {hi}]")
    for name, number, low, high in (("rtol", rtol, 1e-15, 1e-2), ("tol", tol, 1e-15, 1e-1)):
        if not isinstance(number, int | float) or not low <= number <= high:
            raise InputError(
                f"{name}={number!r} is not allowed; use a number in [{low:g}, {high:g}]"
            )
    if not isinstance(min_gap, int | float) or not min_gap >= 1:
        raise InputError(f"min_gap={min_gap!r} is not allowed; use a number >= 1")
    if norm_eps is not None and (not isinstance(norm_eps, int | float) or not norm_eps >= 0):
        raise InputError(
            f"norm_eps={norm_eps!r} is not allowed; use None (the model's own) or a number >= 0"
        )
    if not isinstance(vector_std, int | float) or not 0 < vector_std <= 100:
        raise InputError(f"vector_std={vector_std!r} is not allowed; use a number in (0, 100]")
    if per_sample not in (None, True, False):
        raise InputError(f"per_sample={per_sample!r} is not allowed; use None, True or False")
    if isinstance(inputs, torch.Tensor):
        return inputs
    try:
        shape = tuple(int(d) for d in inputs)
    except TypeError:
        raise InputError(
            f"inputs={inputs!r} is not allowed; use a shape (N, ...) or a tensor of data"
        ) from None
    if not shape or any(d <= 0 for d in shape):
        raise InputError(
            f"inputs={inputs!r} is not allowed; use a shape of positive integers (N, ...)"
        )
    return shape


def _aggregate(
    records: list[dict],
    D: int,
    *,
    fields: str,
    rtol: float,
    min_gap: float,
    tol: float,
    seed: int,
    known: bool,
    generators: bool,
) -> ConservationLaws:
    """The count at the generic points (the largest Lie trace, span and rank of ``J_F``), with
    the known laws' and generators' checks there."""

    def key(r: dict) -> tuple:
        return (r["lie"], r["span"], -r["symmetries"])

    top = max(records, key=key)
    generic = [r for r in records if key(r) == key(top)]
    good = [r for r in generic if r["saturated"]] or generic
    known_out = None
    if known:
        ks = [r["known"] for r in generic]
        inside = max(k["inside_lie"] for k in ks)
        rank = top["known"]["rank"]
        conserved = inside <= tol
        known_out = {
            "count": ks[0]["count"],
            "rank": rank,
            "inside_lie": inside,
            "conserved": bool(conserved),
            "complete": bool(conserved and rank == D - top["lie"]),
            "missing": int(D - top["lie"] - rank) if conserved else None,
        }
    gens_out = None
    if generators:
        gs = [r["generators"] for r in generic]
        gens_out = {
            "rank": top["generators"]["rank"],
            "silent": top["generators"]["silent"],
            "gap": min(g["gap"] for g in gs),
        }
        for kind in GENERATOR_KINDS:
            parts = [g[kind] for g in gs]
            gens_out[kind] = {
                "count": parts[0]["count"],
                "rank": top["generators"][kind]["rank"],
                "null_residual": max(q["null_residual"] for q in parts),
                "inside_lie": max(q["inside_lie"] for q in parts),
            }
        sym_ok = (
            gens_out["symmetric"]["inside_lie"] <= tol
            and gens_out["symmetric"]["rank"] == D - top["lie"]
        )
        silent = top["symmetries"] - (D - top["lie"])
        gens_out["noether"] = bool(sym_ok and gens_out["silent"] == silent)
        gens_out["symmetries_spanned"] = bool(gens_out["rank"] == top["symmetries"])
    return ConservationLaws(
        dimension=D,
        span=top["span"],
        lie=top["lie"],
        laws=D - top["lie"],
        symmetries=top["symmetries"],
        depth=top["depth"],
        gap=min(r["gap"] for r in good),
        rtol=float(rtol),
        min_gap=float(min_gap),
        tol=float(tol),
        fields=fields,
        confirmed=len(generic),
        saturated=sum(r["saturated"] for r in generic),
        seed=int(seed),
        points=tuple(records),
        known=known_out,
        generators=gens_out,
    )


def _resolve(spec: Any, what: str, model: Any, problem: _Problem) -> Callable | None:
    if spec is None or callable(spec):
        return spec
    if spec == "recorder":
        if problem.module is None:
            raise InputError(
                f"{what}='recorder' is not allowed with a callable "
                "parametrisation; use a torch.nn.Module (its find_units groups)"
            )
        from ._invariants import group_generators, group_invariants
        from ._units import find_units

        groups, _ = find_units(model)
        if what == "known":
            return lambda p: group_invariants(groups, p)
        return lambda p: group_generators(groups, p)
    raise InputError(f"{what}={spec!r} is not allowed; use None, 'recorder' or a callable")


class _math_attention:
    """Scaled dot-product attention on its composite (math) kernel, the one forward-mode AD
    goes through."""

    def __enter__(self):
        import warnings

        from torch.nn.attention import SDPBackend, sdpa_kernel

        with warnings.catch_warnings():
            # torch's forward-mode decompositions script themselves on first import with the
            # deprecated torch.jit.script; the warning is torch's, not the caller's
            warnings.filterwarnings(
                "ignore", message=".*torch.jit.script.*", category=DeprecationWarning
            )
            import torch._decomp.decompositions_for_jvp  # noqa: F401

        self._ctx = sdpa_kernel(SDPBackend.MATH)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)
