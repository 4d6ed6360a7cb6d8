"""The generated numeric kernels against sympy (30 digits) and against finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gaugedyn.symbolic._codegen import kernel_derivatives, source
from gaugedyn.symbolic._kernels import kernel_symbols
from gaugedyn.theory import _generated_kernels as gk

ACTS = ("relu", "erf", "linear")


def _points(rng, n=20):
    q1 = rng.uniform(0.2, 3.0, n)
    q2 = rng.uniform(0.2, 3.0, n)
    r = np.concatenate([rng.uniform(-0.97, 0.97, n - 4), [0.999, -0.999, 0.0, 0.5]])
    return q1, q2, r * np.sqrt(q1 * q2)


def _sympy_values(act, kind, q1, q2, c):
    import mpmath
    import sympy as sp

    s1, s2, sc, sq = kernel_symbols()
    exprs = kernel_derivatives(act)[kind]
    exprs = exprs if isinstance(exprs, list) else [exprs]
    pair = kind.startswith("pair")
    args = (s1, s2, sc) if pair else (sq,)
    fns = [sp.lambdify(args, e, "mpmath") for e in exprs]
    mpmath.mp.dps = 30
    out = []
    for f in fns:
        vals = [
            f(*(mpmath.mpf(float(v)) for v in pt)) for pt in (zip(q1, q2, c) if pair else zip(q1))
        ]
        out.append(np.array([float(v) for v in vals]))
    return out


@pytest.mark.parametrize("act", ACTS)
def test_generated_kernels_equal_sympy(act):
    rng = np.random.default_rng(1)
    q1, q2, c = _points(rng)
    pair, pair_grad, pair_hess, self_, self_grad, self_hess = gk.KERNELS[act]
    for kind, fn in (("pair", pair), ("pair_grad", pair_grad), ("pair_hess", pair_hess)):
        got = fn(q1, q2, c)
        got = got if isinstance(got, tuple) else (got,)
        for g, ref in zip(got, _sympy_values(act, kind, q1, q2, c), strict=True):
            np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-14, err_msg=f"{act} {kind}")
    for kind, fn in (("self", self_), ("self_grad", self_grad), ("self_hess", self_hess)):
        np.testing.assert_allclose(
            fn(q1), _sympy_values(act, kind, q1, q2, c)[0], rtol=1e-12, atol=1e-14
        )


@pytest.mark.parametrize("act", ACTS)
def test_generated_kernels_against_finite_differences(act):
    rng = np.random.default_rng(2)
    q1, q2, c = _points(rng)
    inner = np.abs(c) < 0.95 * np.sqrt(q1 * q2)  # away from the ReLU kink of the Hessian
    q1, q2, c = q1[inner], q2[inner], c[inner]
    pair, pair_grad, pair_hess, self_, self_grad, self_hess = gk.KERNELS[act]
    h = 1e-5
    x = np.stack([q1, q2, c])
    grad = np.stack(pair_grad(q1, q2, c))
    hess = np.stack(pair_hess(q1, q2, c))
    full = np.zeros((3, 3, x.shape[1]))
    for k, (i, j) in enumerate(((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
        full[i, j] = full[j, i] = hess[k]
    for i in range(3):
        e = np.zeros((3, 1))
        e[i] = h
        fd = (pair(*(x + e)) - pair(*(x - e))) / (2 * h)
        np.testing.assert_allclose(grad[i], fd, rtol=1e-7, atol=1e-9, err_msg=f"{act} grad {i}")
        fd2 = (np.stack(pair_grad(*(x + e))) - np.stack(pair_grad(*(x - e)))) / (2 * h)
        np.testing.assert_allclose(full[:, i], fd2, rtol=1e-6, atol=1e-8, err_msg=f"{act} hess {i}")
    fd = (self_(q1 + h) - self_(q1 - h)) / (2 * h)
    np.testing.assert_allclose(self_grad(q1), fd, rtol=1e-7, atol=1e-9)
    fd = (self_grad(q1 + h) - self_grad(q1 - h)) / (2 * h)
    np.testing.assert_allclose(self_hess(q1), fd, rtol=1e-6, atol=1e-8)
    # the self kernel is the pair kernel on the diagonal
    np.testing.assert_allclose(self_(q1), pair(q1, q1, q1 * (1 - 1e-15)), rtol=1e-7)


def test_erf_online_integrals_equal_sympy():
    import mpmath
    import sympy as sp

    from gaugedyn.symbolic._gaussian_erf import derive

    d = derive()
    C = d["C"]
    s = d["symbols"]
    rng = np.random.default_rng(4)
    mpmath.mp.dps = 30
    for _ in range(10):
        B = rng.normal(size=(4, 4))
        Cn = B @ B.T + 0.1 * np.eye(4)
        vals = {
            C[i, j]: mpmath.mpf(float(Cn[i - 1, j - 1])) for i in range(1, 5) for j in range(i, 5)
        }
        i3 = float(sp.lambdify(list(vals), d["i3"], "mpmath")(*vals.values()))
        i4 = float(sp.lambdify(list(vals), d["i4"], "mpmath")(*vals.values()))
        j2 = float(
            d["j2"].xreplace({s["q1"]: Cn[0, 0], s["q2"]: Cn[1, 1], s["c"]: Cn[0, 1]}).evalf(30)
        )
        iu = np.triu_indices(4)
        np.testing.assert_allclose(gk.erf_i4(*Cn[iu]), i4, rtol=1e-12)
        np.testing.assert_allclose(gk.erf_i3(*Cn[:3, :3][np.triu_indices(3)]), i3, rtol=1e-12)
        np.testing.assert_allclose(gk.erf_j2(Cn[0, 0], Cn[0, 1], Cn[1, 1]), j2, rtol=1e-12)


def test_relu_kernels_finite_for_aligned_and_opposite_neurons():
    q1 = np.array([1.0, 2.0, 0.5, 3.0])
    q2 = np.array([1.0, 0.5, 0.5, 1.2])
    root = np.sqrt(q1 * q2)
    for c in (root, -root, root * (1 + 1e-15), -root * (1 + 1e-15)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            v = gk.pair_relu(q1, q2, c)
            g = np.stack(gk.pair_grad_relu(q1, q2, c))
            hs = np.stack(gk.pair_hess_relu(q1, q2, c))
        assert np.all(np.isfinite(v)) and np.all(np.isfinite(g))
        assert not np.all(np.isfinite(hs))  # 1/sqrt(q1 q2 - c^2): documented inf
    np.testing.assert_allclose(gk.pair_relu(q1, q1, q1), q1 / 2, rtol=1e-14)
    np.testing.assert_allclose(gk.pair_relu(q1, q2, -root), 0.0, atol=1e-15)
    np.testing.assert_allclose(gk.pair_grad_relu(q1, q2, root)[2], 0.5, rtol=1e-14)


def test_kernels_broadcast_and_return_float64():
    q1 = np.linspace(0.5, 2, 5)[:, None]
    q2 = np.array([1.0, 2.0])
    for act in ACTS:
        pair, pair_grad, pair_hess, self_, self_grad, self_hess = gk.KERNELS[act]
        assert np.shape(pair(q1, q2, 0.1)) == (5, 2)
        assert all(np.shape(g) == (5, 2) for g in pair_grad(q1, q2, 0.1))
        assert all(np.shape(g) == (5, 2) for g in pair_hess(q1, q2, 0.1))
        assert np.shape(self_hess(q1)) == (5, 1)
        assert np.asarray(pair(q1, q2, 0.1)).dtype == np.float64


def test_generated_file_is_current():
    from gaugedyn.symbolic._codegen import TARGET

    assert TARGET.read_text(encoding="utf-8") == source(), "run `gaugedyn derive`"
