"""``gaugedyn.gauge.conservation_laws``: the counts of the architectures whose laws are known,
the rank decisions' gaps, the Noether correspondence, and the recorder's completeness.

Each model below is written out here, independently of the package's catalogue, with the count
derived in its docstring; every count must also come out stable (two points or more agree, half
the data give the same symmetries, every rank gap at least 1e6 in float64).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.gauge import (
    GaugeRecorder,
    GroupedQueryAttention,
    conservation_laws,
    decide_rank,
    find_units,
    group_invariants,
)

nn = torch.nn
F64 = torch.float64


def relu2(p, x):
    """Bias-free two-layer ReLU network ``A relu(W x)``: one law per hidden unit,
    ``|a_j|^2 - |w_j|^2`` (Marcotte, Gribonval and Peyré 2023)."""
    return torch.relu(x @ p["W"].T) @ p["A"].T


def linear2(p, x):
    """Two-layer linear network ``A W x`` of width ``K <= min(in, out)``: the ``K (K + 1) / 2``
    entries of ``W W^T - A^T A`` (the symmetric part of ``GL(K)``)."""
    return x @ p["W"].T @ p["A"].T


def deep_linear(depth):
    """Square deep linear network ``W_L ... W_1 x``: ``(L - 1) K (K + 1) / 2`` laws,
    ``W_l W_l^T - W_(l+1)^T W_(l+1)`` per junction."""

    def f(p, x):
        for layer in range(depth):
            x = x @ p[f"W{layer}"].T
        return x

    return f


def poly(degree):
    """Polynomial network ``A (W x)^p``: ``w_j -> c w_j``, ``a_j -> c^-p a_j`` per unit, one law
    ``|w_j|^2 - p |a_j|^2`` each where the parametrisation is identifiable."""

    def f(p, x):
        return (x @ p["W"].T) ** degree @ p["A"].T

    return f


class MHA(nn.Module):
    def __init__(self, embed, heads, bias=False):
        super().__init__()
        self.att = nn.MultiheadAttention(embed, heads, bias=bias, batch_first=True)

    def forward(self, x):
        return self.att(x, x, x, need_weights=False)[0]


class GQA(nn.Module):
    def __init__(self, embed, heads, kv_heads, head_dim=None, bias=False):
        super().__init__()
        self.att = GroupedQueryAttention(embed, heads, kv_heads, head_dim, bias=bias)

    def forward(self, x):
        return self.att(x)


def _stable(r, laws):
    assert r.laws == laws, str(r)
    assert r.stable and r.gap >= 1e6, str(r)
    return r


@pytest.mark.parametrize("K", [1, 3, 5])
def test_bias_free_two_layer_relu_has_one_law_per_hidden_unit(K):
    r = conservation_laws(relu2, (40, 4), params={"W": (K, 4), "A": (2, K)})
    _stable(r, K)
    assert r.symmetries == K and r.silent == 0  # the rescalings, each with its law


def _linear_known(p):
    return p["W"] @ p["W"].T - p["A"].T @ p["A"]


@pytest.mark.parametrize("K", [2, 3, 4])
def test_square_two_layer_linear_has_k_k_plus_one_over_two_laws(K):
    r = conservation_laws(
        linear2, (3 * K, K), params={"W": (K, K), "A": (K, K)}, known=_linear_known
    )
    _stable(r, K * (K + 1) // 2)
    assert r.symmetries == K * K  # GL(K)
    assert r.silent == K * (K - 1) // 2  # its rotations: isometries, no law
    assert r.known["conserved"] and r.known["complete"] and r.known["rank"] == r.laws


@pytest.mark.parametrize("K", [2, 3])
def test_square_deep_linear_of_depth_three_has_k_k_plus_one_laws(K):
    params = {f"W{i}": (K, K) for i in range(3)}
    r = conservation_laws(deep_linear(3), (3 * K, K), params=params)
    _stable(r, 2 * K * (K + 1) // 2)
    assert r.symmetries == 2 * K * K


def test_square_deep_linear_of_depth_four():
    K = 2
    r = conservation_laws(deep_linear(4), (6, K), params={f"W{i}": (K, K) for i in range(4)})
    _stable(r, 3 * K * (K + 1) // 2)


@pytest.mark.parametrize("degree", [2, 3])
def test_polynomial_network_has_one_law_per_unit(degree):
    r = conservation_laws(poly(degree), (40, 4), params={"W": (3, 4), "A": (2, 3)})
    _stable(r, 3)
    assert r.symmetries == 3


@pytest.mark.parametrize("embed,heads", [(3, 1), (4, 2), (6, 3)])
def test_multi_head_attention_has_h_d_d_plus_one_laws(embed, heads):
    d = embed // heads
    r = conservation_laws(
        MHA(embed, heads), (8 * heads, 3, embed), known="recorder", generators="recorder"
    )
    _stable(r, heads * d * (d + 1))
    assert r.symmetries == 2 * heads * d * d  # GL(d) per head, on (Q, K) and on (V, O)
    assert r.complete and r.generators["noether"] and r.generators["symmetries_spanned"]


@pytest.mark.parametrize("embed,heads,kv,d", [(4, 2, 1, 2), (6, 4, 2, 2), (6, 6, 3, 1)])
def test_grouped_query_attention_has_g_d_d_plus_one_laws(embed, heads, kv, d):
    r = conservation_laws(
        GQA(embed, heads, kv, d), (16, 3, embed), known="recorder", generators="recorder"
    )
    _stable(r, kv * d * (d + 1))
    assert r.symmetries == 2 * kv * d * d
    assert r.complete and r.generators["noether"]


def test_per_head_laws_on_grouped_heads_are_not_conserved():
    """The known-laws check rejects what is not a law: with shared keys, a query head's own
    ``W_Q W_Q^T - W_K W_K^T`` (the multi-head invariant) is not conserved."""
    m = GQA(4, 2, 1, 2)

    def per_head(p):
        q = p["att.q_proj.weight"][:2]
        k = p["att.k_proj.weight"]
        return q @ q.T - k @ k.T

    r = conservation_laws(m, (16, 3, 4), known=per_head)
    assert not r.known["conserved"] and r.known["inside_lie"] > 0.1


def test_brackets_are_needed_where_the_fields_do_not_close():
    """The fields' span alone gives ``K^2`` for a linear network; the Lie trace gives the
    known ``K (K + 1) / 2``: stopping at depth 1 fails the known answer."""
    params = {"W": (3, 3), "A": (3, 3)}
    span_only = conservation_laws(linear2, (9, 3), params=params, max_depth=1)
    assert span_only.laws == 9
    assert conservation_laws(linear2, (9, 3), params=params).laws == 6


def test_a_perturbation_that_breaks_the_rescaling_removes_its_laws():
    def bent(p, x):
        z = x @ p["W"].T
        return (torch.relu(z) + 0.1 * z**2) @ p["A"].T

    params = {"W": (3, 4), "A": (2, 3)}
    assert conservation_laws(relu2, (40, 4), params=params).laws == 3
    r = conservation_laws(bent, (40, 4), params=params)
    assert r.laws == 0 and r.symmetries == 0 and r.stable


def test_a_non_law_is_not_conserved_and_a_partial_set_is_incomplete():
    params = {"W": (3, 3), "A": (3, 3)}

    def norms(p):
        return torch.stack([p["W"].square().sum() + p["A"].square().sum()])

    def diagonal(p):
        return torch.diagonal(_linear_known(p))

    r = conservation_laws(linear2, (9, 3), params=params, known=norms)
    assert not r.known["conserved"] and not r.complete
    r = conservation_laws(linear2, (9, 3), params=params, known=diagonal)
    assert r.known["conserved"] and not r.complete and r.known["missing"] == 3


def test_loss_fields_give_the_same_count_on_rich_data():
    params = {"W": (3, 3), "A": (3, 3)}
    r = conservation_laws(linear2, (30, 3), params=params, fields="loss")
    assert r.laws == 6 and r.fields == "loss"


def test_rank_decision_reports_its_gap_on_a_planted_spectrum():
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    v, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    s = np.zeros((12, 8))
    s[range(5), range(5)] = [1.0, 0.5, 0.1, 1e-3, 1e-7]  # a small but genuine direction
    a = torch.from_numpy(u @ s @ v.T)
    d, basis = decide_rank(a, 1e-9)
    assert d.rank == 5 and basis.shape == (5, 8)
    assert 1e6 < d.gap  # against the float64 floor
    d, _ = decide_rank(a, 1e-6)  # a looser tolerance drops it: gap 1e-3 / 1e-7
    assert d.rank == 4 and d.gap == pytest.approx(1e4, rel=0.5)


def test_the_recorder_is_complete_on_the_documented_models():
    """The docs' models: a ReLU MLP with biases (one law per unit), batch normalisation (the
    scale law exact at ``eps = 0``, broken by ``eps``; the bias before it frozen), linear pairs
    and attention with biases (the key bias frozen)."""
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
    r = GaugeRecorder(mlp).completeness((300, 5))
    assert r.complete and r.laws == 16 and r.stable
    lin = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3))
    r = GaugeRecorder(lin).completeness((12, 3))
    assert r.complete and r.laws == 12
    # beside GL(3) per junction (3 rotations each, no law), the bias translations
    # b_l -> b_l + t, b_(l+1) -> b_(l+1) - W_(l+1) t are symmetries with no law either
    assert r.silent == 12 and r.symmetries == 24 and r.generators["rank"] == 18
    r = GaugeRecorder(MHA(4, 2, bias=True)).completeness((16, 3, 4))
    assert r.complete and r.laws == 16  # 12 from the heads, 4 key-bias entries
    assert r.silent == 8  # 4 rotations and the 4 value-bias translations (b_V, b_O - W_O t)
    assert not r.generators["symmetries_spanned"]


@pytest.mark.slow
def test_batch_normalisation_scale_law_is_exact_only_at_zero_eps():
    torch.manual_seed(0)
    bn = nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)
    )
    rec = GaugeRecorder(bn)
    exact = rec.completeness((800, 4), norm_eps=0.0, points=2)
    assert exact.complete and exact.laws == 32 and exact.stable
    broken = rec.completeness((800, 4), points=2)
    assert broken.laws == 24 and not broken.known["conserved"]  # the 8 scale laws


def test_grouped_query_attention_recorder_predicts_each_gd_step():
    """The shared-key invariant ``sum_i W_Q,i W_Q,i^T - W_K W_K^T`` changes by exactly
    ``eta^2 (sum_i G_Q,i G_Q,i^T - G_K G_K^T)`` per GD step (strided query sides)."""
    torch.manual_seed(1)
    m = GQA(6, 4, 2, 2).double()
    groups = find_units(m)[0]
    assert [(g.name, g.kind, g.n_units, len(g.inputs)) for g in groups] == [
        ("att.qk", "qk", 2, 2),
        ("att.vo", "vo", 2, 1),
    ]
    x = torch.randn(8, 3, 6, dtype=F64)
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    rec = GaugeRecorder(m, opt, exact_change=True)
    for _ in range(4):
        opt.zero_grad()
        m(x).square().mean().backward()
        opt.step()
    eps = np.finfo(np.float64).eps
    for g in rec.groups:
        arr = rec.group(g.name)
        size = [
            np.linalg.norm(arr[k], axis=(-2, -1))
            for k in ("in_sq", "out_sq", "g_in_sq", "g_out_sq")
        ]
        allowed = 1e-10 * 0.05**2 * (size[2] + size[3]) + 4 * eps * (size[0] + size[1])
        gap = np.linalg.norm(arr["change"] - arr["predicted"], axis=(-2, -1))
        assert np.all(gap <= allowed) and np.all(np.abs(arr["change"]).max() > 1e3 * allowed)
    inv = group_invariants(groups, dict(m.named_parameters()))["att.qk"]
    q, k = m.att.q_proj.weight.detach(), m.att.k_proj.weight.detach()
    want = q[:2] @ q[:2].T + q[2:4] @ q[2:4].T - k[:2] @ k[:2].T  # group 0: query heads 0, 1
    assert torch.allclose(inv[0], want[torch.triu_indices(2, 2).unbind()], atol=1e-12)


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"fields": "hessian"}, "fields="),
        ({"points": 0}, "points="),
        ({"rtol": 1.0}, "rtol="),
        ({"known": "everything"}, "known="),
        ({"norm_eps": -1.0}, "norm_eps="),
        ({"vector_std": 0.0}, "vector_std="),
    ],
)
def test_bad_arguments_are_refused_before_any_work(bad, match):
    with pytest.raises(InputError, match=match):
        conservation_laws(linear2, (4, 2), params={"W": (2, 2), "A": (2, 2)}, **bad)


def test_a_callable_needs_its_parameter_shapes_and_a_module_refuses_them():
    with pytest.raises(InputError, match="params="):
        conservation_laws(linear2, (4, 2))
    with pytest.raises(InputError, match="params="):
        conservation_laws(nn.Linear(2, 2), (4, 2), params={"W": (2, 2)})
    with pytest.raises(InputError, match="inputs="):
        conservation_laws(nn.Linear(2, 2), (0, 2))


def test_result_records_its_points_and_is_json_ready():
    import json

    r = conservation_laws(linear2, (6, 2), params={"W": (2, 2), "A": (2, 2)}, points=2, seed=3)
    d = r.to_dict()
    json.dumps(d)
    assert d["laws"] == 3 and len(d["points"]) == 2 and d["points"][0]["theta_shape"] == [8]
    again = conservation_laws(linear2, (6, 2), params={"W": (2, 2), "A": (2, 2)}, points=2, seed=3)
    assert np.array_equal(r.points[1]["theta"], again.points[1]["theta"])
    assert math.isfinite(r.gap) and "3 independent conservation laws" in str(r)
