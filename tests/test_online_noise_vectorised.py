"""The vectorised pieces of softplus's noise term (issue 46, a cheaper noise term per
evaluation): `_orthant.plackett_batch` (the four-field orthant probabilities of many smoothed
factors at once, branch-free), `_orthant.smoothed_moments` (their moments) and
`_ode_kernels.sobol_noise` in blocks of nodes (`sobol_block`): each the same rule as the scalar
code it replaced, to round-off, at inputs that reach every branch of the scalar code it
keeps (a field outside the field table's reach, a node count not a multiple of the block or
of eight, a set of factors the batch hands back to `orthant4_rule`)."""

import math

import numba
import numpy as np

from gaugedyn.theory import activation_of, on_numpy
from gaugedyn.training import _ode_kernels, _online_ode, _orthant


def _smoothed_correlations(rng, count, low):
    """``count`` random 4 x 4 correlation matrices with smallest eigenvalue at least ``low``."""
    out = []
    while len(out) < count:
        A = rng.normal(size=(4, 4))
        C = A @ A.T + rng.uniform(0.0, 2.0) * np.diag(rng.uniform(0.2, 2.0, 4))
        d = np.sqrt(np.diag(C))
        R = C / np.outer(d, d)
        if np.linalg.eigvalsh(R)[0] >= low:
            out.append(np.ascontiguousarray(R))
    return out


@numba.njit(error_model="numpy", fastmath={"contract"})
def _branchless(x, out):
    for m in range(x.shape[0]):
        out[0, m] = _orthant._asin_branchless(x[m])
        out[1, m] = _orthant._sin_branchless(x[m])


def test_the_branch_free_asin_and_sine_are_the_library_functions():
    """`_asin_branchless` on ``[-1, 1]`` (and clipped outside it) and `_sin_branchless` on
    ``[-pi/2, pi/2]`` within 3 ulp of ``math``'s, compiled as `plackett_batch` compiles them
    (fused multiply-adds allowed)."""
    x = np.concatenate([np.linspace(-1.0, 1.0, 400_001), [0.5, -0.5, 0.975, 1e-300, 0.0]])
    out = np.empty((2, x.size))
    _branchless(x, out)
    want = np.array([math.asin(v) for v in x])
    assert np.all(np.abs(out[0] - want) <= 3 * np.spacing(np.abs(want)) + 1e-320)
    _branchless(np.array([1.5, -1.5]), out[:, :2])
    assert out[0, 0] == math.asin(1.0) and out[0, 1] == -math.asin(1.0)
    y = x * (math.pi / 2)
    _branchless(y, out)
    want = np.sin(y)
    assert np.all(np.abs(out[1] - want) <= 3 * np.spacing(np.abs(want)) + 1e-320)


def test_the_batch_is_the_first_smoothed_rule():
    """`plackett_batch` over many columns (and over each column alone, the same bits) is
    `orthant4_rule` by the first rule of `SMOOTHED_RULES` to round-off, at random
    correlations with smallest eigenvalue at least that rule's bound; `plackett_setup` hands a
    set with a zero cross correlation back (the general branch)."""
    rng = np.random.default_rng(46)
    bound, nodes = _orthant.SMOOTHED_RULES[0]
    rule = _orthant.legendre_rule(nodes)
    Rs = _smoothed_correlations(rng, 301, bound)
    X = np.empty((6, len(Rs)))
    assert all(_orthant.plackett_setup(R, X, m) for m, R in enumerate(Rs))
    got = np.empty(len(Rs))
    _orthant.plackett_batch(X, len(Rs), got)
    want = np.array([_orthant.orthant4_rule(R, *rule) for R in Rs])
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-16)
    one = np.empty(1)
    for m in range(0, len(Rs), 50):
        _orthant.plackett_batch(np.ascontiguousarray(X[:, m : m + 1]), 1, one)
        assert one[0] == got[m]
    R = Rs[0].copy()
    R[0, 2] = R[2, 0] = R[1, 3] = R[3, 1] = R[0, 3] = R[3, 0] = 0.0
    assert not _orthant.plackett_setup(R, X, 0)


def test_the_moments_batch_is_the_stein_sum():
    """`smoothed_moments` (through `smoothed_relu_moment`) is `relu_moment` of the smoothed
    covariance given the same orthant probability, to round-off."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        A = rng.normal(size=(4, 4))
        C = A @ A.T
        noise = rng.uniform(0.3, 3.0, 4)
        smoothed = np.ascontiguousarray(C + np.diag(noise))
        p4 = _orthant.orthant(smoothed, np.arange(4), 4)
        got = _orthant.smoothed_relu_moment(np.ascontiguousarray(C), noise, p4)
        want = _orthant.relu_moment(smoothed, 0, 1, 2, 3)
        assert abs(got - want) <= 1e-13 * np.abs(C).max()


def _sobol_numpy(name, a, b, A, nodes, control):
    """The rule `sobol_noise` computes, in numpy from the functions themselves, and the size
    of the two sums it subtracts."""
    act = activation_of(name)
    K = a.shape[0]
    U = nodes @ A.T
    e = on_numpy(act.function)(U[:, :K]) @ a - on_numpy(act.function)(U[:, K:]) @ b
    Gp = on_numpy(act.derivative)(U[:, :K])
    H, Hp = _online_ode.mixture_values(control, U)
    eh = H[:, :K] @ a - H[:, K:] @ b
    first = (Gp * (e * e)[:, None]).T @ Gp / U.shape[0]
    second = (Hp[:, :K] * (eh * eh)[:, None]).T @ Hp[:, :K] / U.shape[0]
    return first - second, max(np.abs(first).max(), np.abs(second).max())


def test_the_blocks_are_the_rule_node_by_node():
    """`sobol_noise` in blocks at a node count that is neither a multiple of the block nor of
    eight, with fields far outside the field table's reach (the functions themselves there),
    is the rule's numpy sum to round-off, for softplus and tanh with their controls (a field
    just inside the reach, in the table's last interval, among them)."""
    rng = np.random.default_rng(17)
    K, M = 3, 2
    N = 2 * _ode_kernels.SOBOL_BLOCK + 13
    nodes = rng.normal(size=(N, K + M))
    A = rng.normal(size=(K + M, K + M)) / 2
    nodes[:40] *= 15.0  # |u| up to about 100: outside the table's reach of 12
    nodes[40] = np.linalg.solve(A, np.full(K + M, 11.95))  # every field in the last interval
    a, b = rng.normal(size=K), rng.normal(size=M)
    for name in ("softplus", "tanh"):
        control = _online_ode.rule_control("sobol", name)
        table = _online_ode.field_table("sobol", name)
        E = np.zeros((K, K))
        code = int(activation_of(name).code)
        _ode_kernels.sobol_noise(code, a, b, A, nodes, control, table, E)
        want, scale = _sobol_numpy(name, a, b, A, nodes, control)
        # round-off of the two sums the rule subtracts (the table: within 3e-14 of the functions)
        np.testing.assert_allclose(np.triu(E), np.triu(want), rtol=0, atol=1e-13 * scale)
