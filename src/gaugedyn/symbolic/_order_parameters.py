"""Population gradient flow of the two-layer teacher-student model in order parameters (a, Q, R).

With ``Q = W W^T``, ``R = W V^T``, ``T = V V^T`` and pair/self kernels F, S of the activation,
the population loss is

    L = 1/2 [ sum_ij a_i a_j F_ij(Q) - 2 sum_in a_i b_n F(Q_ii, T_nn, R_in) + sum_nm b_n b_m F_nm(T) ],

(``F_ii = S(Q_ii)`` on the diagonal). Gradient flow ``da/dt = -dL/da``, ``dW/dt = -dL/dW`` closes:
``dL/dW = 2 G W + H V`` with ``G`` symmetric, ``G_ii = dL/dQ_ii``, ``G_ij = (1/2) dL/dQ_ij`` (i < j,
Q_ij one variable) and ``H = dL/dR``, so

    dQ/dt = -(2 G Q + H R^T) - (2 G Q + H R^T)^T,   dR/dt = -(2 G R + H T).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from ._doc import check, document, latex
from ._kernels import check_activation, kernel_symbols

NAME = "order_parameter_flow"


def _check_sizes(activation: str, K: int, M: int) -> None:
    from .._errors import InputError

    check_activation(activation)
    for name, v in (("K", K), ("M", M)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {v!r}")


def _symmetric_symbols(name: str, n: int) -> dict:
    """Symbols ``{name}{i}_{j}`` of a symmetric ``n x n`` matrix, keyed both ways; diagonal positive."""
    import sympy as sp

    out = {}
    for i in range(n):
        for j in range(i, n):
            out[i, j] = out[j, i] = sp.Symbol(f"{name}{i}_{j}", positive=(i == j), real=True)
    return out


def _gram_term(coef, P: dict, n: int, pair, self_):
    """``sum_ij coef_i coef_j F(P_ii, P_jj, P_ij)`` with ``S(P_ii)`` on the diagonal."""
    return sum(
        coef[i] * coef[j] * (self_(P[i, i]) if i == j else pair(P[i, i], P[j, j], P[i, j]))
        for i in range(n)
        for j in range(n)
    )


@cache
def symbolic_flow(activation: str, K: int, M: int) -> dict:
    """Symbols, loss and right-hand side of the order-parameter flow (sympy)."""
    import sympy as sp

    _check_sizes(activation, K, M)
    pair = sp.Function("F")  # abstract kernels; concretize() inserts the simplified partials
    self_ = sp.Function("S")

    a = sp.symbols(f"a0:{K}", real=True)
    b = sp.symbols(f"b0:{M}", real=True)
    Q, T = _symmetric_symbols("Q", K), _symmetric_symbols("T", M)
    R = {(i, n): sp.Symbol(f"R{i}_{n}", real=True) for i in range(K) for n in range(M)}
    ss = _gram_term(a, Q, K, pair, self_)
    st = sum(a[i] * b[n] * pair(Q[i, i], T[n, n], R[i, n]) for i in range(K) for n in range(M))
    tt = _gram_term(b, T, M, pair, self_)
    loss = (ss - 2 * st + tt) / 2
    G = sp.zeros(K, K)
    for i in range(K):
        for j in range(i, K):
            d = sp.diff(loss, Q[i, j])
            G[i, j] = G[j, i] = d if i == j else d / 2
    H = sp.Matrix(K, M, lambda i, n: sp.diff(loss, R[i, n]))
    Qm = sp.Matrix(K, K, lambda i, j: Q[i, j])
    Rm = sp.Matrix(K, M, lambda i, n: R[i, n])
    Tm = sp.Matrix(M, M, lambda n, m: T[n, m])
    A = 2 * G * Qm + H * Rm.T
    dQ = -(A + A.T)
    dR = -(2 * G * Rm + H * Tm)
    q_sym = [Q[i, j] for i in range(K) for j in range(i, K)]
    r_sym = [R[i, n] for i in range(K) for n in range(M)]
    y = list(a) + q_sym + r_sym
    p = list(b) + [T[n, m] for n in range(M) for m in range(n, M)]
    rhs = [-sp.diff(loss, ai) for ai in a]
    rhs += [dQ[i, j] for i in range(K) for j in range(i, K)]
    rhs += [dR[i, n] for i in range(K) for n in range(M)]
    return dict(
        a=a,
        b=b,
        Q=Q,
        R=R,
        T=T,
        y=y,
        p=p,
        loss_abstract=loss,
        rhs_abstract=rhs,
        loss=concretize(loss, activation),
        rhs=[concretize(e, activation) for e in rhs],
    )


def concretize(expr, activation: str):
    """Replace the abstract kernels F, S and their derivatives by the activation's closed forms.

    Partial derivatives come from the simplified expressions of ``kernel_derivatives``, so the
    ReLU flow has no ``1/sqrt(Q_ii T_nn - R_in^2)`` terms (first partials are finite there).
    """
    import sympy as sp
    from sympy.core.function import AppliedUndef

    from ._codegen import HESS_ORDER, kernel_derivatives

    kd = kernel_derivatives(activation)
    q1, q2, c, q = kernel_symbols()
    hess_index: dict[tuple[int, ...], int] = {pair: k for k, pair in enumerate(HESS_ORDER)}
    rep = {}
    for d in expr.atoms(sp.Derivative):
        f = d.expr
        found: list[int] = []
        for var, count in d.variable_count:
            found += [f.args.index(var)] * count
        positions = tuple(sorted(found))
        if f.func.__name__ == "F":
            base = (
                kd["pair_grad"][positions[0]]
                if len(positions) == 1
                else kd["pair_hess"][hess_index[positions]]
            )
            rep[d] = base.xreplace(dict(zip((q1, q2, c), f.args)))
        else:
            base = kd["self_grad"][0] if len(positions) == 1 else kd["self_hess"][0]
            rep[d] = base.xreplace({q: f.args[0]})
    expr = expr.xreplace(rep)
    rep = {}
    for f in expr.atoms(AppliedUndef):
        if f.func.__name__ == "F":
            rep[f] = kd["pair"].xreplace(dict(zip((q1, q2, c), f.args)))
        else:
            rep[f] = kd["self"].xreplace({q: f.args[0]})
    return expr.xreplace(rep)


@cache
def symbolic_jacobian(activation: str, K: int, M: int):
    import sympy as sp

    s = symbolic_flow(activation, K, M)
    J = sp.Matrix(s["rhs_abstract"]).jacobian(s["y"])
    return J.applyfunc(lambda e: concretize(e, activation))


def _torch_stack(values, like):
    import torch

    return torch.stack(
        [v if isinstance(v, torch.Tensor) else torch.as_tensor(v, dtype=like.dtype) for v in values]
    )


@dataclass(frozen=True)
class OrderParameterFlow:
    """Compiled population flow ``dy/dt = f(t, y, p)`` in ``y = (a, Q_upper, R)``.

    ``y`` holds ``a`` (K), the upper triangle of ``Q`` row by row (K(K+1)/2) and ``R`` row by row
    (K M); ``p`` holds ``b`` (M) and the upper triangle of ``T`` (M(M+1)/2). ``rhs`` and
    ``jacobian`` take numpy float64 arrays, ``rhs_torch`` and ``jacobian_torch`` torch tensors;
    all are compiled from sympy with common-subexpression elimination. ``t`` is ignored
    (autonomous flow); it is there so the callables fit ``f(t, y, params)``.
    """

    activation: str
    K: int
    M: int
    _fn: dict = field(repr=False, compare=False, default_factory=dict)

    @property
    def n_state(self) -> int:
        return self.K + self.K * (self.K + 1) // 2 + self.K * self.M

    @property
    def n_params(self) -> int:
        return self.M + self.M * (self.M + 1) // 2

    def pack_state(self, a, Q, R):
        import numpy as np

        iu = np.triu_indices(self.K)
        return np.concatenate([np.asarray(a, float), np.asarray(Q, float)[iu], np.ravel(R)])

    def unpack_state(self, y):
        import numpy as np

        K, M = self.K, self.M
        y = np.asarray(y, float)
        Q = np.zeros((K, K))
        Q[np.triu_indices(K)] = y[K : K + K * (K + 1) // 2]
        Q = Q + np.triu(Q, 1).T
        return y[:K].copy(), Q, y[K + K * (K + 1) // 2 :].reshape(K, M).copy()

    def pack_params(self, b, T):
        import numpy as np

        return np.concatenate([np.asarray(b, float), np.asarray(T, float)[np.triu_indices(self.M)]])

    def _compiled(self, key: str):
        if key not in self._fn:
            import sympy as sp

            s = symbolic_flow(self.activation, self.K, self.M)
            expr = {"rhs": s["rhs"], "loss": s["loss"]}.get(key.split("_")[0])
            if expr is None:
                expr = symbolic_jacobian(self.activation, self.K, self.M).tolist()
            module = "torch" if key.endswith("torch") else "numpy"
            if module == "torch":  # fold constants: torch functions reject Python numbers
                if key.startswith("rhs"):
                    expr = list(sp.N(sp.Matrix(expr), 17))
                elif key.startswith("jac"):
                    expr = sp.N(sp.Matrix(expr), 17).tolist()
                else:
                    expr = sp.N(expr, 17)
            self._fn[key] = sp.lambdify([s["y"], s["p"]], expr, modules=module, cse=True)
        return self._fn[key]

    def rhs(self, t, y, params):
        """``dy/dt`` (numpy float64, shape ``(n_state,)``)."""
        import numpy as np

        return np.asarray(self._compiled("rhs_numpy")(y, params), dtype=np.float64)

    def jacobian(self, t, y, params):
        """``d(dy/dt)/dy`` (numpy float64, shape ``(n_state, n_state)``)."""
        import numpy as np

        return np.asarray(self._compiled("jac_numpy")(y, params), dtype=np.float64)

    def loss(self, y, params) -> float:
        """The population loss ``L(a, Q, R; b, T)``."""
        return float(self._compiled("loss_numpy")(y, params))

    def rhs_torch(self, t, y, params):
        return _torch_stack(self._compiled("rhs_torch")(y, params), y)

    def jacobian_torch(self, t, y, params):
        return _torch_stack(
            [_torch_stack(row, y) for row in self._compiled("jac_torch")(y, params)], y
        )

    def loss_torch(self, y, params):
        return self._compiled("loss_torch")(y, params)


@cache
def compile_order_parameter_flow(activation: str, K: int, M: int) -> OrderParameterFlow:
    """The population flow in ``(a, Q, R)`` for ``K`` students, ``M`` teachers, compiled and cached.

    Callables are compiled on first use and cached per ``(activation, K, M)``.
    """
    _check_sizes(activation, K, M)
    return OrderParameterFlow(activation, K, M)


def _weight_space_check(activation: str, K: int, M: int, D: int, seed: int) -> float:
    """Max relative gap between the reduced flow and d(W W^T)/dt, d(W V^T)/dt from weight space."""
    import numpy as np
    import sympy as sp

    s = symbolic_flow(activation, K, M)
    W = sp.Matrix(K, D, lambda i, k: sp.Symbol(f"w{i}_{k}", real=True))
    V = sp.Matrix(M, D, lambda n, k: sp.Symbol(f"v{n}_{k}", real=True))
    Qw, Rw, Tw = W * W.T, W * V.T, V * V.T
    sub = {s["Q"][i, j]: Qw[i, j] for i in range(K) for j in range(K)}
    sub |= {s["R"][i, n]: Rw[i, n] for i in range(K) for n in range(M)}
    sub |= {s["T"][n, m]: Tw[n, m] for n in range(M) for m in range(M)}
    loss_w = s["loss"].xreplace(sub)
    Wdot = -sp.Matrix(K, D, lambda i, k: sp.diff(loss_w, W[i, k]))
    dQ = Wdot * W.T + W * Wdot.T
    dR = Wdot * V.T
    ws = [-sp.diff(loss_w, ai) for ai in s["a"]]
    ws += [dQ[i, j] for i in range(K) for j in range(i, K)]
    ws += [dR[i, n] for i in range(K) for n in range(M)]
    rng = np.random.default_rng(seed)
    num = {x: sp.Rational(int(rng.integers(-20, 21)), 13) for x in list(W) + list(V)}
    num |= {x: sp.Rational(int(rng.integers(-20, 21)), 11) for x in s["a"] + s["b"]}
    red = [e.xreplace(sub).xreplace(num).evalf(30) for e in s["rhs"]]
    full = [e.xreplace(num).evalf(30) for e in ws]
    return max(abs(x - y) / (1 + abs(y)) for x, y in zip(red, full))


def verify() -> None:
    import sympy as sp

    s = symbolic_flow("linear", 2, 1)
    gap = _weight_space_check("linear", 2, 2, 3, seed=1)
    check(gap < 1e-25, f"linear: reduced flow differs from weight-space flow by {gap}")
    for act in ("relu", "erf"):
        gap = _weight_space_check(act, 2, 1, 3, seed=2)
        check(gap < 1e-25, f"{act}: reduced flow differs from weight-space flow by {gap}")
    a0, Q00, R00, b0, T00 = s["a"][0], s["Q"][0, 0], s["R"][0, 0], s["b"][0], s["T"][0, 0]
    check(
        sp.expand(s["rhs"][0] - (-(a0 * Q00 + s["a"][1] * s["Q"][0, 1]) + b0 * R00)) == 0,
        "linear: da0/dt must be -(Q a)_0 + (R b)_0",
    )
    check(T00 in s["loss"].free_symbols, "the loss must depend on T")


def build() -> str:
    s = symbolic_flow("relu", 1, 1)
    K2 = symbolic_flow("erf", 2, 1)
    return document(
        "Population gradient flow in order parameters (a, Q, R)",
        "The population loss of a two-layer student ($K$ neurons) learning a two-layer teacher "
        "($M$ neurons) on Gaussian inputs depends on the weights only through $a$, "
        r"$Q = W W^\top$ and $R = W V^\top$; its gradient flow closes in these "
        r"$K + K(K+1)/2 + KM$ numbers for every activation with a pair kernel. "
        "`gaugedyn.symbolic.compile_order_parameter_flow(activation, K, M)` builds the flow and "
        "its Jacobian (the flow is stiff when the gauge is strong) and compiles both to numpy and "
        "torch with common-subexpression elimination.",
        [
            (
                "Loss",
                r"L = \tfrac12\Big[\sum_{ij} a_i a_j F(Q_{ii},Q_{jj},Q_{ij}) - 2\sum_{in} a_i b_n "
                r"F(Q_{ii},T_{nn},R_{in}) + \sum_{nm} b_n b_m F(T_{nn},T_{mm},T_{nm})\Big]",
            ),
            (
                "Flow",
                r"\dot a = -\partial_a L,\quad \dot Q = -(2GQ + HR^\top) - (2GQ + HR^\top)^\top,"
                r"\quad \dot R = -(2GR + HT),\quad G_{ii} = \partial_{Q_{ii}}L,\ "
                r"G_{ij} = \tfrac12\partial_{Q_{ij}}L,\ H = \partial_R L",
            ),
            ("ReLU, $K = M = 1$: $da/dt$", r"\dot a = " + latex(s["rhs"][0])),
            ("ReLU, $K = M = 1$: $dQ/dt$", r"\dot Q = " + latex(s["rhs"][1])),
            ("ReLU, $K = M = 1$: $dR/dt$", r"\dot R = " + latex(s["rhs"][2])),
            ("erf, $K = 2$, $M = 1$: $da_0/dt$", r"\dot a_0 = " + latex(K2["rhs"][0])),
        ],
        [
            r"Inputs $x \sim \mathcal{N}(0, I_D)$; $F(q_1, q_2, c)$ the pair kernel and "
            "$S(q) = F(q, q, q)$ the self kernel of the activation (documents gaussian_relu, "
            "gaussian_erf, gaussian_linear).",
            "$Q_{ij}$ ($i < j$) is one variable; $T$ and $b$ are constants of the flow.",
            "ReLU: the flow uses the simplified first partials of $F$, so the right-hand side "
            "stays finite at aligned pairs ($Q_{ij}^2 = Q_{ii} Q_{jj}$, "
            "$R_{in}^2 = Q_{ii} T_{nn}$); the Jacobian contains "
            r"$1/\sqrt{Q_{ii} T_{nn} - R_{in}^2}$ and diverges there. The compiled callables do "
            r"not clip: states must satisfy $|R_{in}| \leq \sqrt{Q_{ii} T_{nn}}$ in floating "
            "point.",
        ],
        [
            r"Write $L(W) = L(Q(W), R(W))$; by the chain rule $\partial L / \partial w_i = "
            r"2 G_{ii} w_i + \sum_{j \neq i} 2 G_{ij} w_j + \sum_n H_{in} v_n$, i.e. "
            r"$\partial L / \partial W = 2 G W + H V$.",
            r"Then $\dot Q = \dot W W^\top + W \dot W^\top$ and $\dot R = \dot W V^\top$ are "
            "functions of $(Q, R, T)$ only.",
            "sympy differentiates the loss, written with abstract kernels $F$ and $S$, for the "
            "requested $(K, M)$, assembles the flow and its Jacobian, inserts the simplified "
            "closed-form partials of the kernels and lambdifies both (numpy, torch) with cse.",
        ],
        [
            r"`verify()` substitutes $Q = W W^\top$, $R = W V^\top$ into the reduced flow and "
            "compares it with the weight-space flow differentiated by sympy at exact rational "
            "weights (linear: $K = M = 2$; ReLU and erf: $K = 2$, $M = 1$; $D = 3$), to 25 digits.",
            "tests/test_symbolic_flow.py compares the compiled flow (numpy and torch) with "
            "`torch.autograd` of the population loss written directly in torch in weight space, to "
            "1e-10 relative in float64, for ReLU, erf and linear, $K$ and $M$ up to 4, and the "
            "compiled Jacobian with `torch.autograd.functional.jacobian`.",
        ],
    )
