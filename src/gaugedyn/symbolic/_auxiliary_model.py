"""The derivations of the auxiliary model (the document and the generated code are written by
`._auxiliary`): its online-SGD ODE from one step of the weights, ReLU's four-point integrals
on three fields, the linear closed form and the fluctuation-dissipation relation, each with the
identities that verify it.

The model is reconstructed from an abstract (the paper's text was not available); every choice
the abstract leaves open is declared in the document, with the alternatives that are judged as
readings.
"""

from __future__ import annotations

from functools import cache

from ._doc import check, is_zero

READINGS = ("one_output", "two_heads")
"""The two declared architectures: one shared output trained on both labels (mixed labels), and
a shared first layer with a main head ``a`` and an auxiliary head ``c``."""


# --- the online ODE, derived from the per-sample update --------------------------------------


@cache
def _ode_symbols(K: int, M: int, Ma: int):
    import sympy as sp

    P = K + M + Ma
    return dict(
        K=K,
        M=M,
        Ma=Ma,
        P=P,
        u=sp.symbols(f"u0:{P}", real=True),  # the fields: students, main, auxiliary
        h=sp.symbols(f"h0:{P}", real=True),  # g(u_p)
        gp=sp.symbols(f"gp0:{K}", real=True),  # g'(u_i), students only
        xi=sp.symbols("xi_m xi_a", real=True),
        a=sp.symbols(f"a0:{K}", real=True),
        c=sp.symbols(f"c0:{K}", real=True),
        bm=sp.symbols(f"bm0:{M}", real=True),
        ba=sp.symbols(f"ba0:{Ma}", real=True),
        eta=sp.Symbol("eta", positive=True),
        gamma=sp.Symbol("gamma", nonnegative=True),
        sm=sp.Symbol("sigma_m", nonnegative=True),
        sa=sp.Symbol("sigma_a", nonnegative=True),
        wd=sp.Symbol("lambda", nonnegative=True),
        lr2=sp.Symbol("r_2", nonnegative=True),
        B=sp.Symbol("B", positive=True),
        C={
            (p, q): sp.Symbol(f"C{min(p, q)}_{max(p, q)}", real=True)
            for p in range(P)
            for q in range(P)
        },
    )


def _expectation(expr, s):
    """``E[expr]`` over one sample: the label noises are independent standard normals
    (``E xi = 0``, ``E xi^2 = 1``, ``E xi_m xi_a = 0``), independent of the fields; a product of
    field functions becomes one abstract expectation ``I2(i, p) = E[g(u_i) g(u_p)]``,
    ``I3(i, j, p) = E[g'(u_i) u_j g(u_p)]``, ``I4(i, j, p, q) = E[g'(u_i) g'(u_j) g(u_p) g(u_q)]``
    or ``J2(i, j) = E[g'(u_i) g'(u_j)]`` (indices sorted where the expectation is symmetric)."""
    import sympy as sp

    I2, I3, I4, J2 = (sp.Function(n) for n in ("I2", "I3", "I4", "J2"))
    xi_m, xi_a = s["xi"]
    out = 0
    for term in sp.Add.make_args(sp.expand(expr)):
        coeff, fields = sp.Integer(1), {"h": [], "gp": [], "u": []}
        powers = {xi_m: 0, xi_a: 0}
        for f in sp.Mul.make_args(term):
            base, exp = f.as_base_exp()
            if base in powers:
                powers[base] += int(exp)
            elif base in s["h"]:
                fields["h"] += [s["h"].index(base)] * int(exp)
            elif base in s["gp"]:
                fields["gp"] += [s["gp"].index(base)] * int(exp)
            elif base in s["u"]:
                fields["u"] += [s["u"].index(base)] * int(exp)
            else:
                coeff *= f
        moment = {0: 1, 1: 0, 2: 1}
        noise = moment[powers[xi_m]] * moment[powers[xi_a]]
        if noise == 0:
            continue
        h, gp, u = sorted(fields["h"]), sorted(fields["gp"]), fields["u"]
        shape = (len(h), len(gp), len(u))
        if shape == (2, 0, 0):
            e = I2(*h)
        elif shape == (1, 1, 1):
            e = I3(gp[0], u[0], h[0])
        elif shape == (2, 2, 0):
            e = I4(*gp, *h)
        elif shape == (0, 2, 0):
            e = J2(*gp)
        elif shape == (0, 0, 0):
            e = sp.Integer(1)
        else:
            raise AssertionError(f"unexpected moment {term}")
        out += coeff * noise * e
    return out


@cache
def online_ode(K: int, M: int, Ma: int, reading: str) -> dict:
    """The online-SGD ODE of the declared model, derived from one step of the weights.

    One sample (batch ``B``: the quadratic term divided by ``B``), step ``eta / D`` on the joint
    loss ``l = (f_m - y_m)^2 / 2 + gamma (f_a - y_a)^2 / 2`` with coupled weight decay ``lambda``
    and the heads' relative rate ``r_2``; ``|x|^2 / D -> 1``. Returns the right-hand sides in the
    abstract expectations of `_expectation()`, keyed ``a``, ``c`` (two heads), ``Q``
    (upper triangle) and ``R`` (``K x (M + Ma)``).
    """
    import sympy as sp

    s = _ode_symbols(K, M, Ma)
    h, gp, u, (xi_m, xi_a) = s["h"], s["gp"], s["u"], s["xi"]
    a = s["a"]
    c = a if reading == "one_output" else s["c"]
    eta, gamma, wd, lr2, B = s["eta"], s["gamma"], s["wd"], s["lr2"], s["B"]
    e_m = (
        sum(a[i] * h[i] for i in range(K))
        - sum(s["bm"][n] * h[K + n] for n in range(M))
        - s["sm"] * xi_m
    )
    e_a = (
        sum(c[i] * h[i] for i in range(K))
        - sum(s["ba"][n] * h[K + M + n] for n in range(Ma))
        - s["sa"] * xi_a
    )
    kappa = [a[i] * e_m + gamma * c[i] * e_a for i in range(K)]
    coef = [kappa[i] * gp[i] for i in range(K)]  # the first layer's gradient is coef_i x
    Q = {(i, j): s["C"][i, j] for i in range(K) for j in range(K)}
    # rates D E[increment]: w_i <- w_i - (eta/D)(coef_i x + lambda w_i); |x|^2 = D; batch B
    dQ = {
        (i, j): _expectation(
            -eta * (coef[i] * u[j] + coef[j] * u[i]) + eta**2 / B * coef[i] * coef[j], s
        )
        - 2 * eta * wd * Q[i, j]
        for i in range(K)
        for j in range(i, K)
    }
    dR = {
        (i, n): _expectation(-eta * coef[i] * u[K + n], s) - eta * wd * s["C"][i, K + n]
        for i in range(K)
        for n in range(M + Ma)
    }
    if reading == "one_output":
        da = [
            _expectation(-eta * lr2 * (e_m + gamma * e_a) * h[i], s) - eta * lr2 * wd * a[i]
            for i in range(K)
        ]
        dc = None
    else:
        da = [_expectation(-eta * lr2 * e_m * h[i], s) - eta * lr2 * wd * a[i] for i in range(K)]
        dc = [
            _expectation(-eta * lr2 * gamma * e_a * h[i], s) - eta * lr2 * wd * c[i]
            for i in range(K)
        ]
    return dict(
        symbols=s,
        a=da,
        c=dc,
        Q=dQ,
        R=dR,
        kappa=kappa,
        e_m=e_m,
        e_a=e_a,
        reading=reading,
        noise_free=sp.Integer(0),
    )


def _classical(K: int, b, sigma, eta, wd, lr2, B, a, s):
    """The classical online ODE (Saad & Solla 1995; Goldt et al. 2019) of one teacher ``b`` on
    all teacher fields, written directly in the abstract expectations: the reference that
    `online_ode()` must reduce to."""
    import sympy as sp

    I2, I3, I4, J2 = (sp.Function(n) for n in ("I2", "I3", "I4", "J2"))
    P = s["P"]
    cvec = list(a) + [-x for x in b]

    def i2(i, p):
        return I2(*sorted((i, p)))

    def i4(i, j, p, q):
        return I4(*sorted((i, j)), *sorted((p, q)))

    da = [-eta * lr2 * (sum(cvec[p] * i2(i, p) for p in range(P)) + wd * a[i]) for i in range(K)]
    dQ, dR = {}, {}
    for i in range(K):
        for j in range(i, K):
            drift = a[i] * sum(cvec[p] * I3(i, j, p) for p in range(P)) + a[j] * sum(
                cvec[p] * I3(j, i, p) for p in range(P)
            )
            noise = (
                a[i]
                * a[j]
                * (
                    sum(cvec[p] * cvec[q] * i4(i, j, p, q) for p in range(P) for q in range(P))
                    + sigma**2 * J2(i, j)
                )
            )
            dQ[i, j] = -eta * drift + eta**2 / B * noise - 2 * eta * wd * s["C"][i, j]
        for n in range(P - K):
            dR[i, n] = (
                -eta * a[i] * sum(cvec[p] * I3(i, K + n, p) for p in range(P))
                - eta * wd * s["C"][i, K + n]
            )
    return dict(a=da, Q=dQ, R=dR)


def _verify_reductions() -> None:
    """gamma = 0 gives the classical ODE of the main teacher (both readings); the one-output
    reading is the classical ODE of the mixed teacher ``(b_m, gamma b_a) / G`` at rate ``G eta``,
    label noise ``sqrt(sigma_m^2 + gamma^2 sigma_a^2) / G`` and weight decay ``lambda / G``,
    ``G = 1 + gamma`` (K = 2, M = Ma = 1)."""
    import sympy as sp

    K, M, Ma = 2, 1, 1
    for reading in READINGS:
        ode = online_ode(K, M, Ma, reading)
        s = ode["symbols"]
        zero = {s["gamma"]: 0}
        ref = _classical(
            K, list(s["bm"]) + [0] * Ma, s["sm"], s["eta"], s["wd"], s["lr2"], s["B"], s["a"], s
        )
        for key in ("a", "Q", "R"):
            got = ode[key]
            want = ref[key]
            pairs = zip(got, want) if key == "a" else ((got[k], want[k]) for k in got)
            for g_, w_ in pairs:
                check(
                    sp.expand(g_.subs(zero) - w_) == 0,
                    f"{reading}: gamma = 0 is not the classical online ODE ({key})",
                )
    ode = online_ode(K, M, Ma, "one_output")
    s = ode["symbols"]
    G = 1 + s["gamma"]
    b_mix = [x / G for x in s["bm"]] + [s["gamma"] * x / G for x in s["ba"]]
    sig = sp.sqrt(s["sm"] ** 2 + s["gamma"] ** 2 * s["sa"] ** 2) / G
    ref = _classical(K, b_mix, sig, G * s["eta"], s["wd"] / G, s["lr2"], s["B"], s["a"], s)
    for i in range(K):
        check(
            sp.expand(sp.cancel(ode["a"][i] - ref["a"][i])) == 0,
            "one output: da is not the mixed teacher's",
        )
    for k in ode["Q"]:
        check(
            sp.expand(sp.cancel(ode["Q"][k] - ref["Q"][k])) == 0,
            "one output: dQ is not the mixed teacher's",
        )
    for k in ode["R"]:
        check(
            sp.expand(sp.cancel(ode["R"][k] - ref["R"][k])) == 0,
            "one output: dR is not the mixed teacher's",
        )


def _stein(expr, s, activation: str):
    """Replace ``I2`` and ``I3`` by the activation's pair kernel: ``I2(i, p) = F(C_ii, C_pp, C_ip)``
    and, by Stein's lemma and Price's theorem, ``I3(i, j, p) = 2 C_ij dF/dq1 + C_jp dF/dc`` at
    ``(C_ii, C_pp, C_ip)`` (``C_ij S'(C_ii)`` when ``p = i``)."""
    from sympy.core.function import AppliedUndef

    from ._codegen import kernel_derivatives
    from ._kernels import kernel_symbols

    kd = kernel_derivatives(activation)
    q1, q2, cc, q = kernel_symbols()
    C = s["C"]

    def pair(x, y, z, what):
        e = kd[what] if what == "pair" else kd["pair_grad"][what]
        return e.xreplace({q1: x, q2: y, cc: z})

    rep = {}
    for f in expr.atoms(AppliedUndef):
        name, idx = f.func.__name__, [int(x) for x in f.args]
        if name == "I2":
            i, p = idx
            rep[f] = (
                kd["self"].xreplace({q: C[i, i]})
                if i == p
                else pair(C[i, i], C[p, p], C[i, p], "pair")
            )
        elif name == "I3":
            i, j, p = idx
            if i == p:
                rep[f] = C[i, j] * kd["self_grad"][0].xreplace({q: C[i, i]})
            else:
                args = (C[i, i], C[p, p], C[i, p])
                rep[f] = 2 * C[i, j] * pair(*args, 0) + C[j, p] * pair(*args, 2)
    return expr.xreplace(rep)


def _verify_drift(activation: str, seed: int) -> float:
    """The drift of the two-head ODE (the terms linear in eta) against the weight-space
    population gradient flow of the joint loss ``eps_m + gamma eps_a``, differentiated by sympy at
    exact rational weights (K = 2, M = Ma = 1, D = 4); the heads against ``-dL_J/da``,
    ``-dL_J/dc``. The one-output reading is the two-head ODE at ``c = a`` in ``Q`` and ``R`` (its
    head is checked by the mixed-teacher reduction). Returns the largest relative gap (30 digits)."""
    import numpy as np
    import sympy as sp

    from ._order_parameters import concretize

    K, M, Ma, D = 2, 1, 1, 4
    ode = online_ode(K, M, Ma, "two_heads")
    s = ode["symbols"]
    P = s["P"]
    rng = np.random.default_rng(seed)
    U = sp.Matrix(P, D, lambda p, k: sp.Rational(int(rng.integers(-20, 21)), 17))
    Cw = U * U.T
    F, S = sp.Function("F"), sp.Function("S")
    a, c, gamma = list(s["a"]), list(s["c"]), s["gamma"]
    W = sp.Matrix(K, D, lambda i, k: sp.Symbol(f"w{i}_{k}", real=True))
    Uw = W.col_join(U[K:, :])
    Cs = Uw * Uw.T

    def err(head, tfields, b):
        f = list(range(K)) + tfields
        coef = list(head) + [-x for x in b]
        return (
            sum(
                coef[x]
                * coef[y]
                * (
                    S(Cs[f[x], f[x]])
                    if f[x] == f[y]
                    else F(Cs[f[x], f[x]], Cs[f[y], f[y]], Cs[f[x], f[y]])
                )
                for x in range(len(f))
                for y in range(len(f))
            )
            / 2
        )

    L = concretize(err(a, [K], s["bm"]) + gamma * err(c, [K + 1], s["ba"]), activation)
    Wdot = -sp.Matrix(K, D, lambda i, k: sp.diff(L, W[i, k]))
    dC = Wdot * Uw.T  # K x P: dQ_ij = dC_ij + dC_ji, dR_in = dC_i(K+n)
    num = {
        x: sp.Rational(int(rng.integers(-20, 21)), 11)
        for x in a + c + list(s["bm"]) + list(s["ba"])
    }
    num[gamma] = sp.Rational(3, 7)
    at_W = {W[i, k]: U[i, k] for i in range(K) for k in range(D)}
    at_C = {s["C"][p, q]: Cw[p, q] for p in range(P) for q in range(P)}
    off = {s["eta"]: 1, s["wd"]: 0, s["lr2"]: 1}
    pairs = [
        (sp.diff(e, s["eta"]).subs(s["eta"], 0).subs(off), dC[i, j] + dC[j, i])
        for (i, j), e in ode["Q"].items()
    ]
    pairs += [(sp.diff(e, s["eta"]).subs(off), dC[i, K + n]) for (i, n), e in ode["R"].items()]
    pairs += [(e.subs(off), -sp.diff(L, h)) for e, h in zip(ode["a"] + ode["c"], a + c)]
    worst = 0.0
    for got, want in pairs:
        got = _stein(got, s, activation).xreplace(at_C).xreplace(num).evalf(30)
        want = want.xreplace(at_W).xreplace(num).evalf(30)
        worst = max(worst, float(abs(got - want) / (1 + abs(want))))
    return worst


# --- ReLU: the four-point integrals on at most three fields -----------------------------------


@cache
def relu_three_field() -> dict:
    """``A2 = E[theta(x) relu(y)^2]`` and ``A3 = E[theta(x) relu(y) relu(z)]`` over a centred
    Gaussian ``(x, y, z)`` with covariance ``C``, by Stein's lemma on ``y``:

        A3 = C_xy E[delta(x) theta(y) relu(z)] + C_yy E[theta(x) delta(y) relu(z)]
             + C_yz P(x > 0, y > 0, z > 0),
        A2 = C_xy E[delta(x) relu(y)] + C_yy P(x > 0, y > 0),

    each ``E[delta(x) ...]`` the density of ``x`` at 0 times a conditional expectation in two
    fields, ``E[theta(y) relu(z)] = (sqrt(C_zz) + C_yz / sqrt(C_yy)) / (2 sqrt(2 pi))``, and the
    orthant probabilities of Sheppard's formula. The expressions use auxiliary symbols for the
    conditional standard deviations and the correlations (``guards``: their definitions), so that
    the generated code clips them where rounding would leave the domain."""
    import sympy as sp

    cxx, cyy, czz = sp.symbols("cxx cyy czz", positive=True)
    cxy, cxz, cyz = sp.symbols("cxy cxz cyz", real=True)
    pi = sp.pi
    root = sp.sqrt(2 * pi)
    exact = {}

    def cond(var, given, other=None):
        """Conditional variance of ``var`` (or covariance with ``other``) given ``given = 0``."""
        cov = {
            ("x", "x"): cxx,
            ("y", "y"): cyy,
            ("z", "z"): czz,
            ("x", "y"): cxy,
            ("y", "x"): cxy,
            ("x", "z"): cxz,
            ("z", "x"): cxz,
            ("y", "z"): cyz,
            ("z", "y"): cyz,
        }
        o = var if other is None else other
        return cov[var, o] - cov[var, given] * cov[given, o] / cov[given, given]

    def guarded(name, value):
        sym = sp.Symbol(name, positive=True)
        exact[sym] = value
        return sym

    # conditional standard deviations (guarded: >= 0, and > 0 where they divide)
    sz_x = guarded("sz_x", sp.sqrt(cond("z", "x")))
    sy_x = guarded("sy_x", sp.sqrt(cond("y", "x")))
    sz_y = guarded("sz_y", sp.sqrt(cond("z", "y")))
    sx_y = guarded("sx_y", sp.sqrt(cond("x", "y")))
    r_xy = guarded("r_xy", cxy / sp.sqrt(cxx * cyy))
    r_xz = guarded("r_xz", cxz / sp.sqrt(cxx * czz))
    r_yz = guarded("r_yz", cyz / sp.sqrt(cyy * czz))
    density_x, density_y = 1 / sp.sqrt(2 * pi * cxx), 1 / sp.sqrt(2 * pi * cyy)
    d_x = density_x * (sz_x + cond("y", "x", "z") / sy_x) / (2 * root)  # E[delta(x) th(y) relu(z)]
    d_y = density_y * (sz_y + cond("x", "y", "z") / sx_y) / (2 * root)  # E[delta(y) th(x) relu(z)]
    p3 = sp.Rational(1, 8) + (sp.asin(r_xy) + sp.asin(r_xz) + sp.asin(r_yz)) / (4 * pi)
    p2 = sp.Rational(1, 4) + sp.asin(r_xy) / (2 * pi)
    a3 = cxy * d_x + cyy * d_y + cyz * p3
    a2 = cxy * density_x * sy_x / root + cyy * p2
    return dict(
        symbols=(cxx, cxy, cxz, cyy, cyz, czz),
        a2=a2,
        a3=a3,
        exact=exact,
        p3=p3,
        p2=p2,
        d_x=d_x,
        guards=_relu_guards(),
    )


def _relu_guards() -> list[str]:
    """The guard lines of the generated ReLU integrals (definitions of the auxiliary symbols)."""
    return [
        "sz_x = math.sqrt(max(czz - cxz * cxz / cxx, 0.0))",
        "sy_x = math.sqrt(max(cyy - cxy * cxy / cxx, 1e-300))",
        "sz_y = math.sqrt(max(czz - cyz * cyz / cyy, 0.0))",
        "sx_y = math.sqrt(max(cxx - cxy * cxy / cyy, 1e-300))",
        "r_xy = min(max(cxy / math.sqrt(cxx * cyy), -1.0), 1.0)",
        "r_xz = min(max(cxz / math.sqrt(cxx * czz), -1.0), 1.0)",
        "r_yz = min(max(cyz / math.sqrt(cyy * czz), -1.0), 1.0)",
    ]


def _random_spd3(count: int, seed: int):
    import numpy as np
    import sympy as sp

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        Bm = sp.Matrix(3, 3, lambda i, j: sp.Rational(int(rng.integers(-9, 10)), 7))
        out.append(Bm * Bm.T + sp.eye(3) / 5)
    return out


def _verify_relu() -> None:
    """Price's theorem fixes ``A3`` from its derivatives in the three covariances and its value
    where the fields are independent; ``verify`` checks all four at exact rational covariances
    (30 digits), each against an expectation derived apart:
    ``dA3/dC_yz = P(x, y, z > 0)``, ``dA3/dC_xy = E[delta(x) theta(y) relu(z)]``,
    ``dA3/dC_xz = E[delta(x) relu(y) theta(z)]``, ``A3 = sqrt(C_yy C_zz) / (4 pi)`` at zero
    covariances; likewise ``dA2/dC_xy = 2 E[delta(x) relu(y)]`` and ``A2 = C_yy / 4`` there."""
    import sympy as sp

    d = relu_three_field()
    cxx, cxy, cxz, cyy, cyz, czz = d["symbols"]
    a3 = d["a3"].xreplace(d["exact"])
    a2 = d["a2"].xreplace(d["exact"])
    p3 = d["p3"].xreplace(d["exact"])
    pi = sp.pi

    def delta_theta_relu(cxx_, cyy_, czz_, cxy_, cxz_, cyz_):
        # density of x at 0 times E[theta(y) relu(z) | x = 0], written afresh
        vy = cyy_ - cxy_**2 / cxx_
        vz = czz_ - cxz_**2 / cxx_
        cyz_x = cyz_ - cxy_ * cxz_ / cxx_
        rho = cyz_x / sp.sqrt(vy * vz)
        return sp.sqrt(vz) * (1 + rho) / (2 * sp.sqrt(2 * pi)) / sp.sqrt(2 * pi * cxx_)

    derivatives = (
        (cyz, p3),
        (cxy, delta_theta_relu(cxx, cyy, czz, cxy, cxz, cyz)),
        (cxz, delta_theta_relu(cxx, czz, cyy, cxz, cxy, cyz)),
    )
    for M in _random_spd3(4, seed=23):
        vals = {cxx: M[0, 0], cxy: M[0, 1], cxz: M[0, 2], cyy: M[1, 1], cyz: M[1, 2], czz: M[2, 2]}
        for var, want in derivatives:
            lhs = sp.diff(a3, var).xreplace(vals).evalf(40)
            rhs = want.xreplace(vals).evalf(40)
            check(abs(lhs - rhs) < 1e-30 * (1 + abs(rhs)), f"A3 fails Price's equation in {var}")
        lhs2 = sp.diff(a2, cxy).xreplace(vals).evalf(40)
        vy = M[1, 1] - M[0, 1] ** 2 / M[0, 0]
        rhs2 = (2 / sp.sqrt(2 * pi * M[0, 0]) * sp.sqrt(vy) / sp.sqrt(2 * pi)).evalf(40)
        check(abs(lhs2 - rhs2) < 1e-30 * (1 + abs(rhs2)), "A2 fails Price's equation in C_xy")
    zero = {cxy: 0, cxz: 0, cyz: 0}
    check(
        is_zero(a3.xreplace(zero) - sp.sqrt(cyy * czz) / (4 * pi)),
        "A3 must be sqrt(C_yy C_zz) / (4 pi) for independent fields",
    )
    check(is_zero(a2.xreplace({cxy: 0}) - cyy / 4), "A2 must be C_yy / 4 for independent fields")


def relu_alignment_series():
    """``F_relu(R^2 + s^2, 1, R)`` to ``O(s^5)``: the pair kernel of a ReLU student of norm
    ``sqrt(R^2 + s^2)`` against a unit teacher, ``s^2 = Q_perp`` its part orthogonal to the
    teacher. The ``s^3`` term makes the loss non-analytic in ``Q_perp`` at alignment."""
    import sympy as sp

    from ._kernels import kernel_expressions, kernel_symbols

    F, _ = kernel_expressions("relu")
    q1, q2, c, _ = kernel_symbols()
    R, s = sp.symbols("R s", positive=True)
    return sp.series(F.xreplace({q1: R**2 + s**2, q2: 1, c: R}), s, 0, 5).removeO(), R, s


# --- the linear closed form ------------------------------------------------------------------


@cache
def _linear_solution() -> dict:
    """The exact solution of the one-output linear student's ODE (`linear_closed_form()`):
    its symbols and the pieces ``G``, ``s^2``, ``k``, ``Delta``, ``m``, the bias, the error and
    the order parameters ``Q``, ``R_m``, ``R_a``."""
    import sympy as sp

    eta, gamma, rho, t, tau = sp.symbols("eta gamma rho t tau", positive=True)
    sm, sa = sp.symbols("sigma_m sigma_a", nonnegative=True)
    B = sp.Symbol("B", positive=True)
    Q0 = sp.Symbol("Q0", positive=True)
    Rm0, Ra0 = sp.symbols("Rm0 Ra0", real=True)
    G = 1 + gamma
    ww = (1 + 2 * gamma * rho + gamma**2) / G**2  # |w*|^2
    wm, wa = (1 + gamma * rho) / G, (rho + gamma) / G  # w*.v_m, w*.v_a
    s2 = (sm**2 + gamma**2 * sa**2) / G**2
    k = 2 * eta * G - eta**2 * G**2 / B
    delta_inf = eta**2 * G**2 * s2 / (B * k)
    w0w = (Rm0 + gamma * Ra0) / G  # w0.w*
    delta0 = Q0 - 2 * w0w + ww
    m0 = w0w - Rm0 - ww + wm
    bias = (gamma / G) ** 2 * (1 - rho)
    decay = sp.exp(-eta * G * t)
    delta = delta_inf + (delta0 - delta_inf) * sp.exp(-k * t)
    names = (eta, gamma, rho, t, tau, sm, sa, B, Q0, Rm0, Ra0)
    keys = ("eta", "gamma", "rho", "t", "tau", "sigma_m", "sigma_a", "B", "Q0", "Rm0", "Ra0")
    return dict(
        symbols=dict(zip(keys, names)),
        G=G,
        s2=s2,
        k=k,
        delta_inf=delta_inf,
        ww=ww,
        bias=bias,
        delta=delta,
        m=m0 * decay,
        delta0=delta0,
        m0=m0,
        exact=delta / 2 + m0 * decay + bias,
        Q=delta + 2 * (ww + (w0w - ww) * decay) - ww,
        Rm=wm + (Rm0 - wm) * decay,
        Ra=wa + (Ra0 - wa) * decay,
    )


@cache
def linear_closed_form() -> dict:
    """The one-output linear student ``f(x) = w . x`` (head fixed at 1) on the joint loss.

    Teachers ``|v_m| = |v_a| = 1``, ``v_m . v_a = rho``, ``b = 1``; ``G = 1 + gamma``; the joint
    optimum ``w* = (v_m + gamma v_a) / G`` and the mixed label noise ``s^2 = (sigma_m^2 + gamma^2
    sigma_a^2) / G^2``. The ODE closes on ``Delta = |w - w*|^2`` and ``m = (w - w*).(w* - v_m)``:

        dDelta/dt = -2 eta G Delta + (eta^2 G^2 / B) (Delta + s^2),   dm/dt = -eta G m,

    so, exactly, ``eps_m = Delta / 2 + m + |w* - v_m|^2 / 2`` with ``|w* - v_m|^2 =
    2 (gamma / G)^2 (1 - rho)``. Returned: the symbols, the exact error, its expansion to first
    order in ``eta`` at fixed ``tau = eta t`` (the leading-order closed form), the stationary
    values and the benefit over the single task (``gamma = 0``)."""
    import sympy as sp

    d = _linear_solution()
    y = d["symbols"]
    eta, gamma, t, tau, B = y["eta"], y["gamma"], y["t"], y["tau"], y["B"]
    G, s2, k, delta_inf, delta0, m0, bias = (
        d[key] for key in ("G", "s2", "k", "delta_inf", "delta0", "m0", "bias")
    )
    # first order in eta at fixed tau = eta t: exp(-k t) = exp(-2 G tau) (1 + eta G^2 tau / B),
    # Delta_inf = eta G s^2 / (2 B)
    d_inf1 = eta * G * s2 / (2 * B)
    leading = (
        (
            d_inf1
            + (delta0 - d_inf1) * sp.exp(-2 * G * tau)
            + delta0 * eta * G**2 * tau / B * sp.exp(-2 * G * tau)
        )
        / 2
        + m0 * sp.exp(-G * tau)
        + bias
    )
    stationary_exact = delta_inf / 2 + bias
    stationary_leading = d_inf1 / 2 + bias
    single = stationary_leading.subs(gamma, 0)
    benefit = sp.factor(single - stationary_leading)
    # the diffusion part of eps_m: d eps_m / dQ = 1/2 times the eta^2 term of dQ/dt, integrated
    diffusion = (
        eta**2
        * G**2
        / (2 * B)
        * ((delta_inf + s2) * t + (delta0 - delta_inf) * (1 - sp.exp(-k * t)) / k)
    )
    d_eps = sp.diff(stationary_leading, gamma)
    return d | dict(
        leading=leading,
        stationary_exact=stationary_exact,
        stationary_leading=stationary_leading,
        benefit=benefit,
        boundary=sp.solve(sp.Eq(benefit, 0), y["rho"])[0],
        optimal_gamma_equation=sp.collect(sp.expand(sp.numer(sp.together(d_eps))), gamma),
        diffusion=diffusion,
    )


def _linear_points(count: int, seed: int) -> list[dict]:
    """Exact rational parameter values of the linear closed form (deterministic)."""
    import numpy as np
    import sympy as sp

    y = linear_closed_form()["symbols"]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        r = [sp.Rational(int(rng.integers(1, 30)), 31) for _ in range(9)]
        out.append(
            {
                y["eta"]: r[0] / 3,
                y["gamma"]: 2 * r[1],
                y["rho"]: 2 * r[2] - 1,
                y["sigma_m"]: r[3],
                y["sigma_a"]: r[4],
                y["B"]: 1 + int(3 * r[5]),
                y["Q0"]: 2 * r[6],
                y["Rm0"]: r[7] - sp.Rational(1, 2),
                y["Ra0"]: r[8] - sp.Rational(1, 2),
                y["t"]: 7 * r[0] + 1,
                y["tau"]: 3 * r[1],
            }
        )
    return out


def _linear_identities() -> list[tuple]:
    """``(lhs, rhs, message)`` identities of the linear solution: it solves the ODE of
    `online_ode()` at the linear activation (one output, head fixed at 1); ``eps_m`` is
    ``Delta / 2 + m + bias``; the diffusion part's derivative is half the ``eta^2`` term of
    ``dQ/dt``."""
    import sympy as sp
    from sympy.core.function import AppliedUndef

    lc = linear_closed_form()
    y = lc["symbols"]
    eta, t = y["eta"], y["t"]
    ode = online_ode(1, 1, 1, "one_output")
    s = ode["symbols"]
    C = s["C"]
    lin = {
        "I2": lambda i, p: C[i, p],
        "I3": lambda i, j, p: C[j, p],
        "I4": lambda i, j, p, q: C[p, q],
        "J2": lambda i, j: sp.Integer(1),
    }
    sub = {s["a"][0]: 1, s["bm"][0]: 1, s["ba"][0]: 1, s["wd"]: 0, s["eta"]: eta}
    sub |= {s["gamma"]: y["gamma"], s["sm"]: y["sigma_m"], s["sa"]: y["sigma_a"], s["B"]: y["B"]}
    traj = {C[0, 0]: lc["Q"], C[0, 1]: lc["Rm"], C[0, 2]: lc["Ra"]}
    traj |= {C[1, 1]: 1, C[2, 2]: 1, C[1, 2]: y["rho"]}

    def concrete(expr):
        rep = {f: lin[f.func.__name__](*[int(x) for x in f.args]) for f in expr.atoms(AppliedUndef)}
        return expr.xreplace(rep).xreplace(sub).xreplace(traj)

    noise_q = concrete(sp.expand(ode["Q"][0, 0]).coeff(s["eta"], 2)) * eta**2
    out = [
        (sp.diff(lhs, t), concrete(rhs), f"the solution does not solve d{name}/dt")
        for lhs, rhs, name in (
            (lc["Q"], ode["Q"][0, 0], "Q"),
            (lc["Rm"], ode["R"][0, 0], "R_m"),
            (lc["Ra"], ode["R"][0, 1], "R_a"),
        )
    ]
    eps_m = (lc["Q"] - 2 * lc["Rm"] + 1) / 2
    return out + [
        (eps_m, lc["exact"], "eps_m = Delta / 2 + m + bias fails"),
        (sp.diff(lc["diffusion"], t), noise_q / 2, "the diffusion part is not half the noise"),
    ]


def _linear_fdt_excess():
    """The linear model's stationary joint excess ``eps_m + gamma eps_a - L_J*`` and the FDT's
    ``Tr N / (4 B)`` at the joint optimum (the mixed label noise, ``g' = 1``)."""
    lc = linear_closed_form()
    y = lc["symbols"]
    gamma, rho, G = y["gamma"], y["rho"], lc["G"]

    def joint(q):
        rm, ra = (1 + gamma * rho) / G, (rho + gamma) / G
        return (q - 2 * rm + 1) / 2 + gamma * (q - 2 * ra + 1) / 2

    excess = joint(lc["delta_inf"] + lc["ww"]) - joint(lc["ww"])
    return excess, G**2 * lc["s2"] / (4 * y["B"])


def _verify_linear() -> None:
    """At exact rational parameters (30 digits): the identities of `_linear_identities()`;
    the leading-order form differs from the exact one by ``O(eta^2)`` at fixed ``tau`` (its
    value and ``eta``-derivative at ``eta = 0`` agree); and the FDT coefficient: the ``O(eta)``
    part of the stationary joint excess error is ``Tr N / (4 B)`` at the joint optimum."""
    import sympy as sp

    lc = linear_closed_form()
    y = lc["symbols"]
    eta, t, tau = y["eta"], y["t"], y["tau"]
    identities = _linear_identities()
    gap = lc["exact"].subs(t, tau / eta) - lc["leading"]
    excess, coefficient = _linear_fdt_excess()
    for point in _linear_points(3, seed=5):
        for lhs, rhs, what in identities:
            a_, b_ = lhs.xreplace(point).evalf(40), rhs.xreplace(point).evalf(40)
            check(abs(a_ - b_) < 1e-30 * (1 + abs(b_)), what)
        fixed = {k: v for k, v in point.items() if k not in (eta, t)}
        g_eta = gap.xreplace(fixed)
        for order in (0, 1):
            v = sp.limit(sp.diff(g_eta, eta, order), eta, 0)
            check(abs(v.evalf(40)) < 1e-30, f"the leading-order form is off at O(eta^{order})")
        slope = sp.limit(sp.diff(excess.xreplace(fixed), eta), eta, 0)
        check(
            abs((slope - coefficient.xreplace(fixed)).evalf(40)) < 1e-30,
            "linear FDT: the O(eta) excess is not Tr N / (4 B)",
        )


# --- FDT ---------------------------------------------------------------------------------------


FDT_ASSUMPTIONS = (
    r"the joint population loss $L_J = \epsilon_m + \gamma \epsilon_a$ has a strict minimum "
    r"$\theta^*$ (no flat direction: the bulk Hessian $2 G_J$ of the first layer is positive "
    "definite there); with a positively homogeneous $g$ (ReLU, linear) and both layers trained, "
    "the rescaling gauge is a flat direction that SGD noise drives "
    r"($d(a^2 + c^2 - Q)/dt = -\eta^2 N$), so the relation needs a fixed head ($r_2 = 0$) or "
    "weight decay",
    r"online SGD reaches the stationary state of the ODE (one basin; small $\eta$); "
    r"$D \to \infty$ first, then $\eta \to 0$",
    "the fluctuations of the first layer in the $D - P$ bulk directions are isotropic per "
    r"coordinate; those in the $P$ teacher and student directions are $O(\eta / D)$ and their "
    r"mean shift $O(\eta)$, which moves $L_J$ at second order only "
    r"($\nabla L_J = 0$ at $\theta^*$)",
)


def check_all() -> None:
    """Every identity of the derivation (raises ``AssertionError`` naming the one that fails)."""
    _verify_reductions()
    for activation in ("erf", "relu"):
        gap = _verify_drift(activation, seed=3)
        check(
            gap < 1e-25,
            f"{activation}: the ODE's drift differs from the weight-space "
            f"gradient flow of the joint loss by {gap}",
        )
    _verify_relu()
    series, R, s = relu_alignment_series()
    import sympy as sp

    check(
        is_zero(series - R / 2 - s**3 / (6 * sp.pi * R**2)),
        "F_relu near alignment is not R/2 + s^3 / (6 pi R^2) + O(s^5)",
    )
    _verify_linear()
