"""Critical points of the population loss: the gradient and Hessian against torch autograd of an
independent weight-space loss, Newton's order of convergence, known critical points, the zero
modes of the symmetries, and the invariances of deduplication."""

import itertools

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.theory import (
    Problem,
    critical_point,
    fixed_point,
    function_units,
    initial_state,
    random_problem,
    realize,
    rhs,
    single,
    solve,
    with_gauge,
)
from gaugedyn.theory._flows import _sines, rhs_and_jacobian
from gaugedyn.theory._population import pair_sines

# --- an independent weight-space loss in torch ------------------------------------------------


def _pair_torch(act, x, y):
    """``E[g(x.z) g(y.z)]``, ``z ~ N(0, I)``, for rows ``x (K, d)``, ``y (M, d)`` (closed forms
    written from THEORY.md's statements, not from the package)."""
    qx, qy = (x * x).sum(-1)[:, None], (y * y).sum(-1)[None, :]
    c = x @ y.T
    if act == "erf":
        return 2 / torch.pi * torch.asin(c / torch.sqrt((1 + qx) * (1 + qy)))
    s = torch.sqrt(torch.clamp(qx * qy - c * c, min=0.0))
    theta = torch.atan2(s, c)
    return (s + (torch.pi - theta) * c) / (2 * torch.pi)


def _loss_torch(act, theta, K, d, b, V):
    a, W = theta[:K], theta[K:].reshape(K, d)
    if act == "relu":  # S(q) = q / 2 on the diagonal (the pair form's gradient is 0/0 there)
        ss = (a * a * (W * W).sum(-1) / 2).sum()
        for i in range(K):
            for j in range(K):
                if i != j:
                    ss = ss + a[i] * a[j] * _pair_torch(act, W[i : i + 1], W[j : j + 1])[0, 0]
    else:
        ss = a @ _pair_torch(act, W, W) @ a
    st = a @ _pair_torch(act, W, V) @ b
    tt = b @ _pair_torch(act, V, V) @ b
    return 0.5 * ss - st + 0.5 * tt


def _torch_reference(point):
    p = point.params
    K, d = p.K, p.coords
    b, V = torch.tensor(p.b), torch.tensor(p.V)
    theta = torch.tensor(point.y, dtype=torch.float64, requires_grad=True)

    def f(x):
        return _loss_torch(p.activation, x, K, d, b, V)

    (grad,) = torch.autograd.grad(f(theta), theta)
    H = torch.autograd.functional.hessian(f, theta.detach())
    return grad.numpy(), H.numpy()


def _generic(act, K=3, M=2, dim=7, seed=0):
    return random_problem(dim, K, M, np.random.default_rng(seed), activation=act)


@pytest.mark.parametrize("act", ["relu", "erf"])
@pytest.mark.parametrize("formulation", ["weight-space", "span"])
def test_gradient_and_hessian_match_autograd(act, formulation):
    """At a generic point (no aligned pair) the package's gradient ``-rhs`` and Hessian
    ``-jacobian`` equal autograd's of the independent torch loss to round-off."""
    pr = _generic(act)
    y, p = initial_state(pr, formulation)
    for resolve in (False, True):
        import dataclasses

        q = dataclasses.replace(p, resolve_angles=resolve)
        f, J = rhs_and_jacobian(0.0, y, q)
        point = type("P", (), {"params": q, "y": y})
        g_ref, H_ref = _torch_reference(point)
        assert np.linalg.norm(-f - g_ref) <= 1e-12 * np.linalg.norm(g_ref)
        assert np.linalg.norm(-J - H_ref) <= 1e-10 * np.linalg.norm(H_ref)


@pytest.mark.parametrize("act", ["relu", "erf"])
def test_refined_saddle_hessian_matches_autograd(act):
    """A plateau end refined to below 1e-10: its reported Hessian against autograd's (relative
    Frobenius error at most 1e-6), index at least 1."""
    pr = random_problem(20, 2, 2, np.random.default_rng(1), activation=act, scale=0.1)
    sol = solve(pr, formulation="order-parameters", t_max=100)
    k = int(np.searchsorted(sol.t, 11.9 if act == "relu" else 3.0))
    start = realize(sol.a[k], sol.Q[k], sol.R[k], pr.b, pr.V @ pr.V.T, act)
    cp = critical_point(start)
    assert cp.success and cp.grad_norm < 1e-10 and cp.index >= 1
    _, H_ref = _torch_reference(cp)
    assert np.linalg.norm(cp.hessian - H_ref) <= 1e-6 * np.linalg.norm(H_ref)


def _tian_gradient(point):
    """The weight-space gradient from Tian's ReLU formula ``d/dw1 E[relu(w1.z) relu(w2.z)] =
    ((pi - theta) w2 + |w2| sin(theta) w1/|w1|) / (2 pi)`` (finite at aligned pairs)."""
    p = point.params
    K, d = p.K, p.coords

    def grad(y):
        a, W = y[:K], y[K:].reshape(K, d)

        def pair(x, z):
            nx, nz = np.linalg.norm(x), np.linalg.norm(z)
            s = np.linalg.norm(z - (z @ x) / (nx * nx) * x) * nx
            th = np.arctan2(s, x @ z)
            val = (s + (np.pi - th) * (x @ z)) / (2 * np.pi)
            dx = ((np.pi - th) * z + nz * np.sin(th) * x / nx) / (2 * np.pi)
            return val, dx

        ga, gW = np.zeros(K), np.zeros((K, d))
        for i in range(K):
            ga[i] = a[i] * (W[i] @ W[i]) / 2
            gW[i] = a[i] ** 2 * W[i] / 2
            for j in range(K):
                if j != i:
                    v, dx = pair(W[i], W[j])
                    ga[i] += a[j] * v
                    gW[i] += a[i] * a[j] * dx
            for n in range(p.M):
                v, dx = pair(W[i], p.V[n])
                ga[i] -= p.b[n] * v
                gW[i] -= a[i] * p.b[n] * dx
        return np.concatenate([ga, gW.ravel()])

    return grad


def test_aligned_relu_hessian_matches_finite_differences():
    """At the teacher itself (every student aligned with a teacher, where autograd of the angle
    is 0/0) the Hessian against central differences of Tian's gradient: the kernels' second
    derivatives drop out in the aligned limit and the rescaling directions are exact zeros."""
    pr = _generic("relu", K=2, M=2)
    point = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
    grad = _tian_gradient(point)
    assert np.linalg.norm(grad(point.y)) < 1e-12
    h = 1e-7
    n = point.y.size
    H = np.stack(
        [(grad(point.y + h * e) - grad(point.y - h * e)) / (2 * h) for e in np.eye(n)], axis=1
    )
    assert np.linalg.norm(point.hessian - H) <= 1e-6 * np.linalg.norm(H)
    assert point.index == 0 and point.modes["measured"] == point.modes["gauge"] == 2


def test_pair_sines_resolve_small_angles():
    """``|x ^ y|`` of two float vectors at angles 1e-4 ... 1e-14 against its exact value
    (Lagrange's identity in rationals): an absolute error of a few ``eps |x| |y|``, where
    ``sqrt(q1 q2 - c^2)`` of the rounded products is off by about ``sqrt(eps) |x| |y|``."""
    from fractions import Fraction

    rng = np.random.default_rng(0)
    x = rng.normal(size=6)
    e = rng.normal(size=6)
    e -= (e @ x) / (x @ x) * x
    e /= np.linalg.norm(e)
    worst_naive = 0.0
    for phi in 10.0 ** -np.arange(4, 15, 2):
        y = 1.7 * (np.cos(phi) * x / np.linalg.norm(x) + np.sin(phi) * e)
        fx, fy = [Fraction(v) for v in x], [Fraction(v) for v in y]
        dot = sum(p * q for p, q in zip(fx, fy))
        exact = float(sum(p * p for p in fx) * sum(q * q for q in fy) - dot * dot) ** 0.5
        scale = np.linalg.norm(x) * np.linalg.norm(y)
        s = pair_sines(x[None], y[None])[0, 0]
        assert abs(s - exact) <= 8 * np.finfo(float).eps * scale
        naive = np.sqrt(max((x @ x) * (y @ y) - (x @ y) ** 2, 0.0))
        worst_naive = max(worst_naive, abs(naive - exact) / scale)
    assert worst_naive > 1e-9  # the order parameters alone do lose the small angles


def test_newton_converges_quadratically():
    """Near a nondegenerate critical point (erf teacher: no zero modes) and a degenerate one
    (ReLU teacher: one gauge zero mode per unit), the order fitted to ``log |g_k+1|`` against
    ``log |g_k|`` over the steps from 1e-4 down to round-off is two."""
    for act in ("erf", "relu"):
        pr = _generic(act, K=2, M=2)
        rng = np.random.default_rng(3)
        start = pr.replace(
            a=pr.b + 0.002 * rng.normal(size=2), W=pr.V + 0.002 * rng.normal(size=pr.V.shape)
        )
        point = critical_point(start, tol=1e-15, max_iter=30)
        h = np.array(point.history)
        h = h[(h < 1e-4) & (h > 1e-14)]
        assert h.size >= 3, (act, point.history)
        order = np.polyfit(np.log(h[:-1]), np.log(h[1:]), 1)[0]
        assert 1.7 <= order <= 2.3, (act, order, point.history)


def test_fixed_point_agrees_with_scipy_root():
    """Levenberg-Marquardt with its own steps against MINPACK's (``scipy.optimize.root``) on the
    gradient of one problem, from one start: the same critical point."""
    from scipy.optimize import root

    pr = _generic("erf", K=2, M=2)
    y0, p = initial_state(pr.replace(a=pr.b + 0.05, W=pr.V * 1.05), "span")

    def fun(y):
        f, J = rhs_and_jacobian(0.0, y, p)
        return -f, -J

    ours = fixed_point(fun, y0, jac=True)
    ref = root(
        lambda y: -rhs(0.0, y, p),
        y0,
        method="lm",
        jac=lambda y: -rhs_and_jacobian(0.0, y, p)[1],
        options={"xtol": 1e-14},
    )
    assert ours.success and np.linalg.norm(ours.y - ref.x) <= 1e-9 * np.linalg.norm(ref.x)
    fd = fixed_point(lambda y: -rhs(0.0, y, p), y0)  # central differences for the Jacobian
    assert fd.success and np.linalg.norm(fd.y - ref.x) <= 1e-8 * np.linalg.norm(ref.x)


def test_known_critical_points():
    """The teacher is a global minimum (loss 0, index 0); the erf ``single`` saddle at
    ``a = 0``, ``w . v = 0`` has loss ``S(1) / 2 = 1/6`` and one unstable rate in closed form,
    ``(sqrt(S(q)^2 + 4 F_c^2) - S(q)) / 2`` with ``S(q) = (2/pi) arcsin(q / (1 + q))`` and
    ``F_c = (2/pi) / sqrt(2 (1 + q))`` at ``q = |w|^2``."""
    for act in ("relu", "erf"):
        pr = _generic(act, K=3, M=3)
        point = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
        assert point.grad_norm < 1e-12 and abs(point.loss) < 1e-12 and point.index == 0
    pr = single(10, "w-heavy", activation="erf")
    q = float(pr.W[0] @ pr.W[0])
    w = np.array(pr.W)
    w[0, 0] = 0.0
    w *= np.sqrt(q) / np.linalg.norm(w)
    saddle = critical_point(pr.replace(a=np.array([0.01]), W=w + 1e-3 * pr.V))
    assert saddle.grad_norm < 1e-12 and abs(saddle.loss - 1 / 6) < 1e-12
    assert saddle.index == 1
    S = 2 / np.pi * np.arcsin(q / (1 + q))
    Fc = 2 / np.pi / np.sqrt(2 * (1 + q))
    lam = 0.5 * (np.sqrt(S * S + 4 * Fc * Fc) - S)
    q_star = float(saddle.problem.W[0] @ saddle.problem.W[0])
    S = 2 / np.pi * np.arcsin(q_star / (1 + q_star))
    Fc = 2 / np.pi / np.sqrt(2 * (1 + q_star))
    lam = 0.5 * (np.sqrt(S * S + 4 * Fc * Fc) - S)
    assert abs(saddle.lambda_plus - lam) <= 1e-10 * lam


def _relu_saddle():
    pr = random_problem(20, 2, 2, np.random.default_rng(1), activation="relu", scale=0.1)
    sol = solve(pr, formulation="order-parameters", t_max=100)
    k = int(np.searchsorted(sol.t, 11.9))
    return critical_point(realize(sol.a[k], sol.Q[k], sol.R[k], pr.b, pr.V @ pr.V.T, "relu"))


def test_relu_zero_modes_are_the_gauge_and_rotations():
    """ReLU: at a saddle and at the global minimum every zero eigenvalue (below 1e-8 of the
    largest) is a rescaling direction ``(-a_i, w_i)`` of an active unit, a rotation fixing the
    teacher or a coinciding unit's redistribution; each kind's directions lie in the null
    space."""
    saddle = _relu_saddle()
    assert saddle.modes["gauge"] == len(saddle.units["active"]) == 2
    assert saddle.modes["measured"] == saddle.modes["predicted"]
    assert max(saddle.residual.values()) < 1e-8
    pr = _generic("relu", K=3, M=3)
    minimum = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
    assert minimum.modes == {
        "measured": 3,
        "rotation": 0,
        "gauge": 3,
        "coinciding": 0,
        "dead": 0,
        "predicted": 3,
        "unexplained": 0,
    }


def test_coinciding_relu_units_add_one_mode_each():
    """Two ReLU units along one teacher direction share ``rho_1 + rho_2``: three zero modes
    (two rescalings and the redistribution) where a single unit has one."""
    V = np.eye(6)[:1]
    W = np.array([[1.3, 0, 0, 0, 0, 0], [0.7, 0, 0, 0, 0, 0]])
    pr = Problem(a=np.array([0.3, 0.2]), W=W, b=np.ones(1), V=V, activation="relu")
    point = critical_point(pr)
    assert point.success and point.units["coinciding"] == [[0, 1]]
    assert point.modes["measured"] == point.modes["predicted"] == 3
    assert point.modes["coinciding"] == 1 and point.residual["coinciding"] < 1e-8


def test_erf_has_no_gauge_zero_modes():
    """erf is not homogeneous: no rescaling directions are predicted, and the rescaling
    generators are far from the null space (the test feeds them in as if they were)."""
    pr = _generic("erf", K=2, M=2)
    point = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
    assert point.modes["gauge"] == 0 and point.modes["measured"] == 0
    a, W = point.problem.a, point.problem.W
    y, p = point.y, point.params
    C = y[p.K :].reshape(p.K, p.coords)
    for i in range(p.K):
        v = np.zeros_like(y)
        v[i] = -y[i]
        v[p.K + i * p.coords : p.K + (i + 1) * p.coords] = C[i]
        v /= np.linalg.norm(v)
        assert v @ point.hessian @ v > 1e-3 * np.abs(point.eigenvalues).max()
    del a, W


def test_order_parameters_spectrum_matches_the_span_when_it_is_a_submersion():
    """At the global minimum (students in the teacher span, every order parameter reached to
    first order) the order-parameter linearisation has the span Hessian's spectrum."""
    pr = _generic("erf", K=2, M=2)
    span = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
    op = critical_point(span.problem, formulation="order-parameters")
    nonzero = np.sort(span.eigenvalues[np.abs(span.eigenvalues) > 1e-8])
    # students in the teacher span: the perpendicular block 2G is the order parameters' extra
    assert op.success and op.index == span.index == 0
    assert np.all(
        np.min(np.abs(op.eigenvalues[:, None] - nonzero[None]), axis=0)
        <= 1e-8 * np.abs(nonzero).max()
    )


def _copies(point):
    """Permuted, gauge-transformed (ReLU), sign-flipped (odd) and rotated copies of a point."""
    pr = point.problem
    rng = np.random.default_rng(5)
    out = []
    for perm in itertools.permutations(range(pr.K)):
        out.append(pr.replace(a=pr.a[list(perm)], W=pr.W[list(perm)]))
    if pr.activation == "relu":
        out.append(with_gauge(pr, c=rng.uniform(0.3, 3.0, size=pr.K)))
    else:
        flip = np.array([1.0, -1.0] + [1.0] * (pr.K - 2))
        out.append(pr.replace(a=pr.a * flip, W=pr.W * flip[:, None]))
    Qv, _ = np.linalg.qr(pr.V.T, mode="complete")
    m = pr.M
    A = rng.normal(size=(pr.dim - m, pr.dim - m))
    O, _ = np.linalg.qr(A)
    R = (
        Qv
        @ np.block([[np.eye(m), np.zeros((m, pr.dim - m))], [np.zeros((pr.dim - m, m)), O]])
        @ Qv.T
    )
    out.append(pr.replace(W=pr.W @ R.T))
    return out


@pytest.mark.parametrize("act", ["relu", "erf"])
def test_deduplication_invariances(act):
    """Permuted, gauge-transformed or sign-flipped and rotated copies of a critical point are
    one entry; a different critical point is another."""
    from gaugedyn.theory import same_point

    if act == "relu":
        point = _relu_saddle()
        other = critical_point(
            point.problem.replace(a=point.problem.b.copy(), W=point.problem.V.copy())
        )
        broken = with_gauge(point.problem, c=[1.0, 1.5]).replace(a=point.problem.a)
    else:
        pr = _generic(act, K=3, M=3)
        point = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
        other = critical_point(pr.replace(a=0.01 * pr.b, W=pr.V.copy()))
        broken = point.problem.replace(a=point.problem.a * np.array([1.0, -1.0, 1.0]))
    assert function_units(point)["coef"].size == point.problem.K
    for copy in _copies(point):
        assert same_point(point, copy)
        assert same_point(point, critical_point(copy))
    assert not same_point(point, other)
    assert not same_point(point, broken)  # half a symmetry is not one


def test_bad_input_is_refused_before_work():
    pr = _generic("relu")
    with pytest.raises(InputError, match="formulation"):
        critical_point(pr, formulation="weights")
    with pytest.raises(InputError, match="tol"):
        critical_point(pr, tol=-1.0)
    with pytest.raises(InputError, match="zero_tol"):
        critical_point(pr, zero_tol=0.5)
    with pytest.raises(InputError, match="start"):
        critical_point("teacher")
    y, p = initial_state(pr, "span", weight_decay=0.1)
    with pytest.raises(InputError, match="plain"):
        critical_point((y, p))
    with pytest.raises(InputError, match="y0"):
        fixed_point(lambda y: y, [np.nan])


def test_sines_change_nothing_away_from_alignment():
    """The kernels with the weights' sines equal the kernels from the order parameters where
    the angle is resolved by both (round-off)."""
    pr = _generic("relu")
    y, p = initial_state(pr, "span")
    import dataclasses

    q = dataclasses.replace(p, resolve_angles=True)
    f0, J0 = rhs_and_jacobian(0.0, y, p)
    f1, J1 = rhs_and_jacobian(0.0, y, q)
    assert np.allclose(f0, f1, rtol=1e-12, atol=1e-14)
    assert np.allclose(J0, J1, rtol=1e-9, atol=1e-12)
    assert _sines(y[p.K :].reshape(p.K, -1), p.V, p) is None


def test_gauge_directions_are_find_units_rescalings():
    """The rescaling directions of a ReLU critical point are the generators of the
    ``rescale`` units :func:`gaugedyn.gauge.find_units` finds on the same network in torch
    (inputs scaled by ``c``, outputs by ``1/c``: infinitesimally ``(+w_j, -a_j)``)."""
    from gaugedyn.gauge import find_units

    pr = _generic("relu", K=3, M=3)
    point = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()), formulation="weight-space")
    K, D = point.params.K, point.params.coords
    net = torch.nn.Sequential(
        torch.nn.Linear(D, K, bias=False), torch.nn.ReLU(), torch.nn.Linear(K, 1, bias=False)
    ).double()
    a, W = point.y[:K], point.y[K:].reshape(K, D)
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor(W))
        net[2].weight.copy_(torch.tensor(a[None, :]))
    (group,) = [g for g in find_units(net)[0] if g.kind == "rescale"]
    assert group.n_units == K
    params = dict(net.named_parameters())
    cols = []
    for j in range(K):
        v = {name: torch.zeros_like(p) for name, p in params.items()}
        for side, sign in [(s, 1.0) for s in group.inputs] + [(s, -1.0) for s in group.outputs]:
            idx = side.indices([j])
            p = params[side.name].detach()
            v[side.name].index_copy_(side.axis, idx, sign * p.index_select(side.axis, idx))
        cols.append(np.concatenate([v["2.weight"].numpy().ravel(), v["0.weight"].numpy().ravel()]))
    G = np.array(cols).T
    G /= np.linalg.norm(G, axis=0)
    basis = point.gauge
    assert basis.shape[1] == K
    assert np.linalg.norm(G - basis @ (basis.T @ G)) < 1e-12
    assert np.linalg.norm(G - point.null_space @ (point.null_space.T @ G)) < 1e-8
