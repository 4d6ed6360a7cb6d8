"""Discrete drift of the gauge invariants under GD and SGD with momentum and weight decay.

A unit ``(w, a)`` enters the loss through ``a w^T`` (a homogeneous unit's output weights times
its input weights, active pattern fixed), an attention head through ``W_Q^T W_K`` or
``W_O W_V``. sympy takes the loss linear in that product with an arbitrary coefficient matrix
(its gradient at the current point: every loss looks like this to first order), forms the
gradients, proves the symmetry identities, and expands one optimizer step. The recorder
(`gaugedyn.gauge.GaugeRecorder`) implements these laws.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, is_zero

NAME = "gauge_steps"
D = 2


def _mat(name: str, rows: int, cols: int):
    import sympy as sp

    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", real=True))


def _grad(L, M):
    import sympy as sp

    return sp.Matrix(M.rows, M.cols, lambda i, j: sp.diff(L, M[i, j]))


@lru_cache(maxsize=1)
def derive() -> dict:
    import sympy as sp

    eta, mu, tau, lam = sp.symbols("eta mu tau lambda", positive=True)
    # a unit: L = sum_kl C_kl a_k w_l (C = dL/d(a w^T)); two outputs, D inputs
    a, w = _mat("a", 2, 1), _mat("w", D, 1)
    C = _mat("C", 2, D)
    L_unit = sum(C[k, m] * (a * w.T)[k, m] for k in range(2) for m in range(D))
    ga, gw = _grad(L_unit, a), _grad(L_unit, w)
    unit_identity = (a.T * ga)[0] - (w.T * gw)[0]

    def delta(a_, w_):
        return (a_.T * a_)[0] - (w_.T * w_)[0]

    gd_change = sp.expand(delta(a - eta * ga, w - eta * gw) - delta(a, w))
    gd_law = eta**2 * ((ga.T * ga)[0] - (gw.T * gw)[0])
    # momentum and weight decay (torch.optim.SGD): buffers b, previous point P + eta b
    ba, bw = _mat("b^a", 2, 1), _mat("b^w", D, 1)
    c_prev = ((a + eta * ba).T * ba)[0] - ((w + eta * bw).T * bw)[0]
    k_prev = (ba.T * ba)[0] - (bw.T * bw)[0]
    na = mu * ba + (1 - tau) * (ga + lam * a)
    nw = mu * bw + (1 - tau) * (gw + lam * w)
    c_t = mu * (c_prev - eta * k_prev) + (1 - tau) * lam * delta(a, w)
    k_t = (na.T * na)[0] - (nw.T * nw)[0]
    c_def = (a.T * na)[0] - (w.T * nw)[0]
    mom_change = delta(a - eta * na, w - eta * nw) - delta(a, w)
    mom_law = -2 * eta * c_t + eta**2 * k_t
    # attention: scores x^T W_Q^T W_K x, output W_O W_V x (rows of W_Q, W_K, W_V: head dims)
    Wq, Wk, Wv, Wo = _mat("Q", D, D), _mat("K", D, D), _mat("V", D, D), _mat("O", D, D)
    Cs, Co = _mat("S", D, D), _mat("R", D, D)
    Lqk = sum((Cs.multiply_elementwise(Wq.T * Wk))[i] for i in range(D * D))
    Lvo = sum((Co.multiply_elementwise(Wo * Wv))[i] for i in range(D * D))
    Gq, Gk = _grad(Lqk, Wq), _grad(Lqk, Wk)
    Gv, Go = _grad(Lvo, Wv), _grad(Lvo, Wo)
    qk_identity = Wq * Gq.T - Gk * Wk.T
    vo_identity = Wv * Gv.T - Go.T * Wo
    qk_change = (
        (Wq - eta * Gq) * (Wq - eta * Gq).T
        - (Wk - eta * Gk) * (Wk - eta * Gk).T
        - (Wq * Wq.T - Wk * Wk.T)
    )
    vo_change = (
        (Wv - eta * Gv) * (Wv - eta * Gv).T
        - (Wo - eta * Go).T * (Wo - eta * Go)
        - (Wv * Wv.T - Wo.T * Wo)
    )
    qk_law = eta**2 * (Gq * Gq.T - Gk * Gk.T)
    vo_law = eta**2 * (Gv * Gv.T - Go.T * Go)
    return dict(
        symbols=dict(eta=eta, mu=mu, tau=tau, lam=lam),
        unit_identity=unit_identity,
        gd_change=gd_change,
        gd_law=gd_law,
        mom_change=mom_change,
        mom_law=mom_law,
        c_t=c_t,
        c_def=c_def,
        k_t=k_t,
        qk_identity=qk_identity,
        vo_identity=vo_identity,
        qk_change=qk_change,
        vo_change=vo_change,
        qk_law=qk_law,
        vo_law=vo_law,
    )


def verify() -> None:
    d = derive()
    check(is_zero(d["unit_identity"]), "a unit's gradient must obey a.g_a = w.g_w")
    check(is_zero(d["gd_change"] - d["gd_law"]), "GD: Delta delta = eta^2 (|g_a|^2 - |g_w|^2)")
    check(
        is_zero(d["c_def"] - d["c_t"]), "the carried scalar a.b^a - w.b^w must follow its recursion"
    )
    check(
        is_zero(d["mom_change"] - d["mom_law"]),
        "SGD with momentum and weight decay: Delta delta = -2 eta c_t + eta^2 k_t",
    )
    for key in ("qk_identity", "vo_identity"):
        check(all(is_zero(x) for x in d[key]), f"attention symmetry identity {key}")
    for key in ("qk", "vo"):
        check(
            all(is_zero(x) for x in d[f"{key}_change"] - d[f"{key}_law"]),
            f"attention GD law {key}: Delta I = eta^2 (G G^T - ...)",
        )


def build() -> str:
    return document(
        "Gauge invariants under discrete optimizer steps",
        "A positively homogeneous unit (input weights and bias $w$, output weights $a$) has the "
        r"rescaling symmetry $(w, a) \to (c\, w, a / c)$; an attention head has "
        r"$W_Q \to A W_Q$, $W_K \to A^{-\top} W_K$ and $W_V \to A W_V$, $W_O \to W_O A^{-1}$. "
        r"Gradient flow conserves $\delta = \lVert a \rVert^2 - \lVert w \rVert^2$ and the "
        r"matrices $W_Q W_Q^\top - W_K W_K^\top$, $W_V W_V^\top - W_O^\top W_O$. "
        "These are the exact per-step changes under full-batch GD and under torch's SGD with "
        "momentum, dampening and weight decay (the discrete form of Kunin et al.'s neural "
        "mechanics), which `gaugedyn.gauge.GaugeRecorder` predicts.",
        [
            (
                "Symmetry identity of the gradient",
                r"a\cdot g_a = w\cdot g_w,\qquad "
                r"W_Q G_Q^\top = G_K W_K^\top,\qquad W_V G_V^\top = G_O^\top W_O",
            ),
            (
                r"Full-batch GD, step $\eta$",
                r"\Delta\delta = \eta^2\,(|g_a|^2 - |g_w|^2),\qquad "
                r"\Delta(W_Q W_Q^\top - W_K W_K^\top) = \eta^2\,(G_Q G_Q^\top - G_K G_K^\top)",
            ),
            (
                r"SGD: momentum $\mu$, dampening $\tau$, weight decay $\lambda$",
                r"b_t = \mu b_{t-1} + (1-\tau)(g_t + \lambda P_t),\quad "
                r"\Delta\delta_t = -2\eta\,c_t + \eta^2 k_t",
            ),
            (
                "The carried scalar",
                r"c_t = a_t\cdot b^a_t - w_t\cdot b^w_t = "
                r"\mu\,(c_{t-1} - \eta k_{t-1}) + (1-\tau)\lambda\,\delta_t,\quad "
                r"k_t = |b^a_t|^2 - |b^w_t|^2",
            ),
        ],
        [
            r"The loss depends on a unit through $a w^\top$ and on a head through "
            r"$W_Q^\top W_K$ or $W_O W_V$ (positive homogeneity with a fixed activation pattern; "
            r"the rows of $W_Q$, $W_K$, $W_V$ are the head's dimensions, torch's $W x$ "
            "convention).",
            "Gradients are evaluated at the current point; only their value there enters, so "
            "the loss is taken linear in the product with an arbitrary coefficient matrix.",
            rf"Shown for $D = {D}$ inputs, two outputs and ${D} \times {D}$ heads; the algebra is "
            r"the same in every dimension. The first momentum step ($b_1 = g_1 + \lambda P_1$) "
            r"is the recursion with $\mu = 0$ and $\tau = 0$ for that step.",
        ],
        [
            r"sympy forms $L = \sum_{kl} C_{kl} (a w^\top)_{kl}$ (and the attention analogues), "
            "its gradients, and the symmetry identities, which hold for every $C$.",
            r"One step $P \to P - \eta D$ expands to "
            r"$-2 \eta\, \mathrm{sym}(P D^\top)/2 + \eta^2 D D^\top$ in the "
            r"invariant; with $D = g$ the linear term vanishes by the identity.",
            r"With momentum, $P_t = P_{t-1} - \eta b_{t-1}$ turns $P_t \cdot b_{t-1}$ into "
            r"$c_{t-1} - \eta k_{t-1}$; the new gradient's term vanishes by the identity and the "
            r"weight decay term is $\lambda \delta_t$.",
        ],
        [
            "`verify()` proves each identity with sympy (differences simplify to zero).",
            "tests/test_gauge_recorder.py checks the laws on torch models in float64 (MLP, CNN, "
            "transformer; GD to 1e-10 relative, momentum with weight decay to 1e-9).",
        ],
    )
