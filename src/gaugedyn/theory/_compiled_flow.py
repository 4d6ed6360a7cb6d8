"""The order-parameter flow's right-hand side compiled with numba, and its difference Jacobian.

The same equations as `rhs()` in the order-parameter formulation (module docstring
of `._population`): with ``F``, ``dF``, ``S``, ``dS`` the activation's kernels,

    g_a = Fss a - Fst b,   G_ij = a_i a_j dF_c(i, j) / 2 (i != j),
    G_ii = a_i^2 S'(Q_ii) / 2 + sum_{j != i} a_i a_j dF_q1(i, j) - sum_n a_i b_n dF_q1(i, n),
    H_in = -a_i b_n dF_c(i, n),
    da = -g_a,  dQ = -(2 G Q + 2 Q G + H R^T + R H^T),  dR = -(2 G R + H T),

and the classical options ``s f - lambda d y`` (`rate()`), one state at
a time, without numpy's temporaries: at K = M = 4 a call costs a few microseconds where the
vectorised numpy one costs about 175. The kernels are the symbolic module's generated closed
forms (`jit_generated()`: the generated function's own expression,
compiled) for relu, erf and linear, and for a positively homogeneous activation
``g = up relu + down relu(-.)`` the ReLU closed forms combined as
`homogeneous_kernels()` does; a teacher with an activation of its own, or an
activation with numerical kernels, has no compiled flow
(`compiled_flow()` returns ``None``).

`flow_jac()` forms the forward-difference Jacobian column by column
with the compiled right-hand side (the increments of `difference_jacobian()`).
"""

from __future__ import annotations

import numpy as np

from ._activation import _ends, activation_of

KINDS = {"relu": 0, "erf": 1, "linear": 2, "homogeneous": 3}
"""The compiled kernels' code of each kernel family (``homogeneous``: ``up relu + down
relu(-.)``, the ReLU forms combined with ``u = up^2 + down^2``, ``v = 2 up down``)."""


def _module():
    """The compiled functions (numba loads here; cached on disk by numba after the first
    process)."""
    from . import _compiled_kernels

    return _compiled_kernels


def flow_key(activation, teacher_activation=None) -> tuple | None:
    """The key of the compiled kernels of an activation (``None``: no compiled flow, for an
    activation with numerical kernels or a teacher activation of its own)."""
    act = activation_of(activation)
    if teacher_activation is not None:
        teacher = activation_of(teacher_activation)
        if not (teacher is act or (teacher.name == act.name and teacher.function is act.function)):
            return None
    if act.closed_form is not None and act.name in ("relu", "erf", "linear"):
        return (KINDS[act.name], 0.0, 0.0)
    if act.homogeneous:
        up, down = _ends(act)
        return (KINDS["homogeneous"], up * up + down * down, 2.0 * up * down)
    return None


class CompiledFlow:
    """``fun(t, y)`` and ``jac(t, y)`` of the order-parameter flow of ``p`` (a
    `FlowParams` with a compiled key, `flow_key()`), compiled."""

    def __init__(self, p):
        key = flow_key(p.activation, p.teacher_activation)
        if key is None or p.formulation != "order-parameters":
            raise ValueError("no compiled flow for these parameters")
        kernels = _module()
        self._rhs, self._jac = kernels.flow_rhs, kernels.flow_jac
        self.kind, self.u, self.v = int(key[0]), float(key[1]), float(key[2])
        self.K, self.M = p.K, p.M
        self.b = np.ascontiguousarray(p.b, dtype=np.float64)
        self.T = np.ascontiguousarray(p.T, dtype=np.float64)
        self.wd, self.lr2 = float(p.weight_decay), float(p.lr2)
        self.n = p.size
        self._out = np.empty(self.n)
        self._f0, self._yp = np.empty(self.n), np.empty(self.n)

    def fun(self, t, y):
        y = np.asarray(y, dtype=np.float64)
        return self._rhs(
            y,
            self.K,
            self.M,
            self.b,
            self.T,
            self.wd,
            self.lr2,
            self.kind,
            self.u,
            self.v,
            np.empty(self.n),
        )

    def jac(self, t, y):
        y = np.asarray(y, dtype=np.float64)
        J = np.empty((self.n, self.n))
        return self._jac(
            y,
            self.K,
            self.M,
            self.b,
            self.T,
            self.wd,
            self.lr2,
            self.kind,
            self.u,
            self.v,
            self._out,
            self._f0,
            self._yp,
            J,
        )


def compiled_flow(p) -> CompiledFlow | None:
    """A `CompiledFlow` of ``p``, or ``None`` where there is none (`flow_key()`)."""
    if p.formulation != "order-parameters" or flow_key(p.activation, p.teacher_activation) is None:
        return None
    return CompiledFlow(p)
