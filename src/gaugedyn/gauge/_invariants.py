r"""The invariants and symmetry generators of `find_units()`'s groups, as
differentiable functions of the parameters.

For a group with input sides ``X`` (scaled by ``c``) and output sides ``Y`` (scaled by
``1/c``), per unit: a rescaling unit's $\delta = |Y|^2 - |X|^2$, a scale unit's $|X|^2$ and,
for the matrix kinds (attention pairs, linear pairs), the upper triangle of
$X X^\top - Y Y^\top$ ($\mathit{block} \times \mathit{block}$, sides summed), a frozen entry's
square: the functions `GaugeRecorder` records, each entry once. The generators are the
tangents $A\theta$ of the groups' one-parameter symmetries at $\theta$:
$(X, Y) \to (X, -Y)$ per rescaling unit, $X \to X$ per scale unit and, per unit of a matrix
kind, $(X, Y) \to (A X, -A^\top Y)$ for a basis of $\mathfrak{gl}(\mathit{block})$ (a frozen
entry: $X \to X$, one direction of the translations that leave the function unchanged): the
symmetric $E_{ab} + E_{ba}$
($a \le b$, a law's gradient by Noether's theorem) and the antisymmetric $E_{ab} - E_{ba}$
($a < b$, an isometry with no law).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ._units import MATRIX_KINDS, Side, UnitGroup, blocks


def _rows(p: Mapping[str, torch.Tensor], sides: tuple[Side, ...], n: int) -> list[torch.Tensor]:
    return [blocks(p[s.name], s, n) for s in sides]


def group_invariants(
    groups: list[UnitGroup], p: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """Per group, its invariants at the parameters ``p`` (module docstring).

    Parameters
    ----------
    groups : list of UnitGroup
        Groups of `find_units()`.
    p : mapping of str to torch.Tensor
        The parameters by name (``dict(model.named_parameters())``).

    Returns
    -------
    dict of str to torch.Tensor
        Per group name: ``(n,)`` for units, ``(n, block (block + 1) / 2)`` for the matrix kinds.
    """
    out = {}
    for g in groups:
        n = g.n_units
        xs = _rows(p, g.inputs, n)
        ys = _rows(p, g.outputs, n)
        if g.kind in MATRIX_KINDS:
            m = torch.stack([x @ x.transpose(1, 2) for x in xs]).sum(0)
            if ys:
                m = m - torch.stack([y @ y.transpose(1, 2) for y in ys]).sum(0)
            i, j = torch.triu_indices(g.block, g.block)
            out[g.name] = m[:, i, j]
        else:
            sx = torch.stack([x.square().sum((1, 2)) for x in xs]).sum(0)
            if g.kind in ("scale", "frozen"):
                out[g.name] = sx
            else:
                out[g.name] = torch.stack([y.square().sum((1, 2)) for y in ys]).sum(0) - sx
    return out


def _place(
    p: Mapping[str, torch.Tensor],
    side: Side,
    unit: int,
    rows: torch.Tensor,
    into: dict[str, torch.Tensor],
) -> None:
    """Add ``rows`` (``block x rest``, the unit's entries as `blocks()` orders them) into
    a zero tensor of ``side``'s parameter at the unit's entries."""
    t = p[side.name]
    idx = side.indices([unit]).to(t.device)
    moved = torch.zeros_like(t).movedim(side.axis, 0)
    moved = moved.index_copy(0, idx, rows.reshape((side.block, *moved.shape[1:])))
    into[side.name] = into.get(side.name, torch.zeros_like(t)) + moved.movedim(0, side.axis)


def group_generators(
    groups: list[UnitGroup], p: Mapping[str, torch.Tensor]
) -> list[tuple[str, dict[str, torch.Tensor]]]:
    """The tangents of the groups' symmetry generators at ``p`` (module docstring).

    Parameters
    ----------
    groups : list of UnitGroup
        Groups of `find_units()`.
    p : mapping of str to torch.Tensor
        The parameters by name.

    Returns
    -------
    list of (str, dict of str to torch.Tensor)
        One ``(kind, {parameter name: tangent})`` per generator, kind ``"symmetric"`` or
        ``"antisymmetric"``.
    """
    out: list[tuple[str, dict[str, torch.Tensor]]] = []
    for g in groups:
        n = g.n_units
        xs = _rows(p, g.inputs, n)
        ys = _rows(p, g.outputs, n)
        for u in range(n):
            if g.kind not in MATRIX_KINDS:
                tangent: dict[str, torch.Tensor] = {}
                for s, x in zip(g.inputs, xs):
                    _place(p, s, u, x[u], tangent)
                for s, y in zip(g.outputs, ys):
                    _place(p, s, u, -y[u], tangent)
                out.append(("symmetric", tangent))
                continue
            b = g.block
            for a in range(b):
                for c in range(a, b):
                    for kind, sign in (("symmetric", 1.0), ("antisymmetric", -1.0)):
                        if kind == "antisymmetric" and a == c:
                            continue
                        A = torch.zeros(b, b, dtype=xs[0].dtype, device=xs[0].device)
                        A[a, c] += 1.0
                        A[c, a] += sign
                        tangent = {}
                        for s, x in zip(g.inputs, xs):
                            _place(p, s, u, A @ x[u], tangent)
                        for s, y in zip(g.outputs, ys):
                            _place(p, s, u, -A.T @ y[u], tangent)
                        out.append((kind, tangent))
    return out
