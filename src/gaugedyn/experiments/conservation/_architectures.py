r"""The architectures of the abstract, each with its count derived before any run.

Every architecture is a parametrisation ``f(params, x)`` (or a torch module) on generic data,
with three derived numbers: the independent conservation laws, the infinitesimal symmetries
(the dimension of the null space of the outputs' Jacobian on rich data) and the symmetry
directions that give no law (``silent = symmetries - laws``), and, where they are known, the
laws in closed form and the generators of the symmetry group split by their symmetry
(`gaugedyn.gauge.GENERATOR_KINDS`). The derivations (``why``) use one principle: a
linear symmetry ``theta -> exp(tA) theta`` whose transpose also generates one gives the law
``theta^T A_s theta`` from its symmetric part ``A_s``; its antisymmetric part is an isometry
with no law (Noether's theorem for gradient flow). The counts:

- ``relu2`` (``A relu(W x)``, no biases, ``K`` units): the positive rescaling of each unit,
  symmetric: ``K`` laws ``|a_j|^2 - |w_j|^2``, ``K`` symmetries, none silent (Marcotte,
  Gribonval and Peyré 2023 prove these are all the laws). ``relu2b``: with the first layer's
  bias, which rides with ``w_j``: the same.
- ``linear2`` (``A W x``, width ``K <= min(in, out)``): ``GL(K)``, ``K^2`` symmetries; its
  symmetric part gives the ``K (K + 1) / 2`` entries of ``W W^T - A^T A`` (complete, Marcotte
  et al. 2023), its rotations ``K (K - 1) / 2`` silent directions.
- ``deep_linear`` (square, depth ``L``): ``GL(K)`` at each of the ``L - 1`` junctions:
  ``(L - 1) K (K + 1) / 2`` laws ``W_l W_l^T - W_(l+1)^T W_(l+1)``, ``(L - 1) K^2``
  symmetries.
- ``polynomial`` (``A (W x)^p``, degree ``p``): ``w_j -> c w_j``, ``a_j -> c^-p a_j`` per unit
  (``sigma(c z) = c^p sigma(z)``), a diagonal, symmetric generator: ``K`` laws
  ``|w_j|^2 - p |a_j|^2``, where the parametrisation is identifiable up to these scalings
  (``K (d + n - 1)`` below the dimension of the polynomial maps). ``deep_polynomial`` (two
  hidden layers): one such law per hidden unit. ``filling``: a network wider than the
  polynomial maps it can express (``K = 6`` quadrics in ``d = 3``, one output): the null
  space is the whole fibre, ``D - dim Sym^p(R^d) n``, larger than the ``K`` scalings; only
  the scalings' ``K`` laws remain (the other directions are no group's, and the brackets reach
  them).
- ``mha`` (``torch.nn.MultiheadAttention`` without biases, ``H`` heads of dimension
  ``d = E / H``): ``GL(d)`` on ``(W_Q, W_K)`` and on ``(W_V, W_O)`` per head: ``H d (d + 1)``
  laws, ``2 H d^2`` symmetries (the laws the seed abstract calls complete for multi-head
  attention).
- ``gqa`` (`gaugedyn.gauge.GroupedQueryAttention` without biases, ``H`` query heads
  sharing ``G`` key/value heads): ``GL(d)`` per key/value head, acting on its ``H / G`` query
  heads together: ``G d (d + 1)`` laws, ``2 G d^2`` symmetries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

FAMILIES = ("relu2", "linear2", "deep_linear", "polynomial", "mha", "gqa")
"""The families of the abstract whose counts the findings judge."""

GENERATOR_FAMILIES = FAMILIES
"""The families whose symmetry group is known, so the correspondence is judged."""


@dataclass
class Architecture:
    """One member of a family: its model, data shape and derived counts (module docstring)."""

    name: str
    family: str
    model: Any
    params: dict | None
    inputs: tuple
    laws: int
    symmetries: int
    why: str
    known: Any = None
    generators: Any = None
    extra: dict = field(default_factory=dict)

    @property
    def silent(self) -> int:
        return self.symmetries - self.laws

    def count_kwargs(self) -> dict:
        """The keyword arguments of `gaugedyn.gauge.conservation_laws()` for it."""
        kw: dict = {"known": self.known, "generators": self.generators}
        if self.params is not None:
            kw["params"] = self.params
        return kw


def _samples(D: int, outputs_per_sample: int, factor: float) -> int:
    """Enough samples for ``factor`` rows of the Jacobian per parameter (half of them still
    cover the span, which the saturation check asks)."""
    return max(24, math.ceil(factor * D / outputs_per_sample))


def _tangent(kind: str, parts: dict) -> tuple[str, dict]:
    return kind, parts


def _gl_generators(left: str, right: str, K: int, left_rows: bool = True):
    """``GL(K)`` acting on the rows of ``left`` (``A X``) and the columns of ``right``
    (``-Y A``): the basis ``E_ab + E_ba`` (symmetric) and ``E_ab - E_ba`` (antisymmetric)."""

    def gens(p: dict) -> list:
        out = []
        for a in range(K):
            for b in range(a, K):
                for kind, sign in (("symmetric", 1.0), ("antisymmetric", -1.0)):
                    if kind == "antisymmetric" and a == b:
                        continue
                    A = torch.zeros(K, K, dtype=p[left].dtype)
                    A[a, b] += 1.0
                    A[b, a] += sign
                    out.append(_tangent(kind, {left: A @ p[left], right: -p[right] @ A}))
        return out

    return gens


# -- parametrisations ----------------------------------------------------------------------------


def _relu2(p, x):
    return torch.relu(x @ p["W"].T) @ p["A"].T


def _relu2b(p, x):
    return torch.relu(x @ p["W"].T + p["b"]) @ p["A"].T


def _linear2(p, x):
    return x @ p["W"].T @ p["A"].T


class _DeepLinear:
    def __init__(self, depth: int):
        self.depth = depth

    def __call__(self, p, x):
        for layer in range(self.depth):
            x = x @ p[f"W{layer}"].T
        return x


class _Polynomial:
    """``A sigma(W_h ... sigma(W_1 x))`` with ``sigma(z) = z^p`` (``layers`` hidden layers)."""

    def __init__(self, degree: int, layers: int = 1):
        self.degree, self.layers = degree, layers

    def __call__(self, p, x):
        for layer in range(self.layers):
            x = (x @ p[f"W{layer}"].T) ** self.degree
        return x @ p["A"].T


class _Bent:
    """The two-layer network with ``sigma(z) = relu(z) + eps z^2``: the perturbation that breaks
    the positive rescaling (no ``c`` satisfies ``sigma(c z) = c sigma(z)``)."""

    def __init__(self, eps: float):
        self.eps = eps

    def __call__(self, p, x):
        z = x @ p["W"].T
        return (torch.relu(z) + self.eps * z * z) @ p["A"].T


class MHA(torch.nn.Module):
    """Self-attention by ``torch.nn.MultiheadAttention`` on ``(batch, tokens, E)``."""

    def __init__(self, embed: int, heads: int, bias: bool = False):
        super().__init__()
        self.att = torch.nn.MultiheadAttention(embed, heads, bias=bias, batch_first=True)

    def forward(self, x):
        return self.att(x, x, x, need_weights=False)[0]


class GQA(torch.nn.Module):
    """Self-attention by `gaugedyn.gauge.GroupedQueryAttention`."""

    def __init__(self, embed: int, heads: int, kv_heads: int, head_dim: int, bias: bool = False):
        super().__init__()
        from gaugedyn.gauge import GroupedQueryAttention

        self.att = GroupedQueryAttention(embed, heads, kv_heads, head_dim, bias=bias)

    def forward(self, x):
        return self.att(x)


# -- the catalogue -------------------------------------------------------------------------------


def _unit_laws(pairs: list[tuple[str, str, float]]):
    """Per hidden unit ``j``, ``|in_j|^2 - p |out_j|^2`` for ``(in, out, p)`` (rows of ``in``,
    columns of ``out``) and its diagonal generator ``(in_j, -p out_j)``."""

    def known(p: dict) -> torch.Tensor:
        return torch.cat([p[i].square().sum(1) - s * p[o].square().sum(0) for i, o, s in pairs])

    def generators(p: dict) -> list:
        out = []
        for i, o, s in pairs:
            for j in range(p[i].shape[0]):
                ti = torch.zeros_like(p[i])
                ti[j] = p[i][j]
                to = torch.zeros_like(p[o])
                to[:, j] = -s * p[o][:, j]
                out.append(_tangent("symmetric", {i: ti, o: to}))
        return out

    return known, generators


def _two_layer(spec: dict, factor: float) -> Architecture:
    fam, d, K, n = spec["family"], spec["d"], spec["K"], spec["n"]
    params: dict[str, tuple[int, ...]] = {"W": (K, d), "A": (n, K)}
    if fam == "relu2b":
        params = {"W": (K, d), "b": (K,), "A": (n, K)}
    D = sum(math.prod(s) for s in params.values())
    inputs = (_samples(D, n, factor), d)
    if fam == "bent":
        return Architecture(
            _name(spec),
            fam,
            _Bent(spec["eps"]),
            params,
            inputs,
            0,
            0,
            "relu(z) + eps z^2 has no rescaling: no continuous symmetry, no law",
        )
    known, gens = _unit_laws([("W", "A", 1.0)])
    if fam == "relu2b":

        def known(p):  # noqa: F811 - the bias rides with w_j
            return p["W"].square().sum(1) + p["b"].square() - p["A"].square().sum(0)

        def gens(p):  # noqa: F811
            out = []
            for j in range(K):
                tw, tb, ta = (torch.zeros_like(p[k]) for k in ("W", "b", "A"))
                tw[j], tb[j], ta[:, j] = p["W"][j], p["b"][j], -p["A"][:, j]
                out.append(_tangent("symmetric", {"W": tw, "b": tb, "A": ta}))
            return out

    model = _relu2 if fam == "relu2" else _relu2b
    return Architecture(
        _name(spec),
        fam,
        model,
        params,
        inputs,
        K,
        K,
        "positive rescaling of each unit (bias with w): K laws |a_j|^2 - |w_j|^2, K symmetries",
        known,
        gens,
    )


def _linear(spec: dict, factor: float) -> Architecture:
    m, K, n = spec["d"], spec["K"], spec["n"]

    def known(p):
        i, j = torch.triu_indices(K, K)
        return (p["W"] @ p["W"].T - p["A"].T @ p["A"])[i, j]

    return Architecture(
        _name(spec),
        "linear2",
        _linear2,
        {"W": (K, m), "A": (n, K)},
        (_samples(K * (m + n), n, factor), m),
        K * (K + 1) // 2,
        K * K,
        "GL(K), K <= min(in, out): K(K+1)/2 laws W W^T - A^T A, K^2 "
        "symmetries, K(K-1)/2 rotations silent",
        known,
        _gl_generators("W", "A", K),
    )


def _deep_linear(spec: dict, factor: float) -> Architecture:
    L, K = spec["L"], spec["K"]

    def known(p):
        i, j = torch.triu_indices(K, K)
        return torch.cat(
            [
                (p[f"W{k}"] @ p[f"W{k}"].T - p[f"W{k + 1}"].T @ p[f"W{k + 1}"])[i, j]
                for k in range(L - 1)
            ]
        )

    def gens(p):
        return [g for k in range(L - 1) for g in _gl_generators(f"W{k}", f"W{k + 1}", K)(p)]

    return Architecture(
        _name(spec),
        "deep_linear",
        _DeepLinear(L),
        {f"W{i}": (K, K) for i in range(L)},
        (_samples(L * K * K, K, factor), K),
        (L - 1) * K * (K + 1) // 2,
        (L - 1) * K * K,
        "GL(K) at each of the L - 1 junctions",
        known,
        gens,
    )


def _polynomial(spec: dict, factor: float) -> Architecture:
    fam, p_deg, widths, n = spec["family"], spec["p"], list(spec["widths"]), spec["n"]
    layers = len(widths) - 1
    params = {f"W{i}": (widths[i + 1], widths[i]) for i in range(layers)}
    params["A"] = (n, widths[-1])
    D = sum(math.prod(s) for s in params.values())
    inputs = (_samples(D, n, factor), widths[0])
    outs = [f"W{i + 1}" for i in range(layers - 1)] + ["A"]
    known, gens = _unit_laws([(f"W{i}", outs[i], float(p_deg)) for i in range(layers)])
    units = sum(widths[1:])
    model = _Polynomial(p_deg, layers)
    if fam == "filling":
        image = math.comb(widths[0] + p_deg - 1, p_deg) * n
        return Architecture(
            _name(spec),
            fam,
            model,
            params,
            inputs,
            units,
            D - image,
            f"the network fills the degree-{p_deg} maps (dim {image}): null "
            f"space D - {image}, only the {units} scalings give laws",
            known,
            gens,
            extra={"group": units},
        )
    return Architecture(
        _name(spec),
        fam,
        model,
        params,
        inputs,
        units,
        units,
        f"sigma(c z) = c^{p_deg} sigma(z): one law |w_j|^2 - {p_deg} |a_j|^2 per hidden unit",
        known,
        gens,
    )


def _attention(spec: dict, factor: float) -> Architecture:
    T = spec.get("tokens", 3)
    if spec["family"] == "mha":
        E, H = spec["E"], spec["H"]
        d = E // H
        return Architecture(
            _name(spec),
            "mha",
            MHA(E, H),
            None,
            (_samples(4 * E * E, T * E, factor), T, E),
            H * d * (d + 1),
            2 * H * d * d,
            "GL(d) per head on (W_Q, W_K) and on (W_V, W_O)",
            "recorder",
            "recorder",
        )
    E, H, G, d = spec["E"], spec["H"], spec["G"], spec["d"]
    D = 2 * E * H * d + 2 * E * G * d
    return Architecture(
        _name(spec),
        "gqa",
        GQA(E, H, G, d),
        None,
        (_samples(D, T * E, factor), T, E),
        G * d * (d + 1),
        2 * G * d * d,
        "GL(d) per key/value head, on its H/G query heads together",
        "recorder",
        "recorder",
    )


BUILDERS = {
    "relu2": _two_layer,
    "relu2b": _two_layer,
    "bent": _two_layer,
    "linear2": _linear,
    "deep_linear": _deep_linear,
    "polynomial": _polynomial,
    "filling": _polynomial,
    "mha": _attention,
    "gqa": _attention,
}
"""The builder of each family (``bent``: the symmetry-breaking control)."""


def build(spec: dict, factor: float = 4.0) -> Architecture:
    """The architecture of ``spec`` (``{"family": ..., **sizes}``, JSON-ready: a task's
    description); ``factor`` Jacobian rows per parameter in its data."""
    return BUILDERS[spec["family"]](spec, factor)


def _name(spec: dict) -> str:
    sizes = ",".join(f"{k}={v}" for k, v in spec.items() if k != "family")
    return f"{spec['family']}[{sizes}]"
