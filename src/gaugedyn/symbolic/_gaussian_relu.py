"""Gaussian expectations of ReLU features, derived in the plane of the two weight vectors.

For ``x ~ N(0, I_D)`` only the projection of ``x`` onto ``span{u, v}`` matters; in that plane,
in polar coordinates ``x = r (cos phi, sin phi)`` with ``u`` along ``phi = 0`` and ``v`` at angle
``theta``, the radial and angular integrals separate.
"""

from __future__ import annotations

from functools import lru_cache

from ._doc import check, document, is_zero, latex, pair_partials

NAME = "gaussian_relu"


@lru_cache(maxsize=1)
def derive() -> dict:
    """The derived expressions (sympy), keyed by name; see ``build`` for their meaning."""
    import sympy as sp

    r, phi, z = sp.symbols("r phi z", real=True)
    th = sp.Symbol("theta", positive=True)
    q, q1, q2 = sp.symbols("q q1 q2", positive=True)
    c = sp.Symbol("c", real=True)
    nu, nv = sp.symbols("n_u n_v", positive=True)
    two_pi = 2 * sp.pi
    # both features are active on the arc phi in (theta - pi/2, pi/2) when 0 <= theta <= pi
    radial3 = sp.integrate(r**3 * sp.exp(-(r**2) / 2), (r, 0, sp.oo)) / two_pi
    radial1 = sp.integrate(r * sp.exp(-(r**2) / 2), (r, 0, sp.oo)) / two_pi
    angular = sp.integrate(sp.cos(phi) * sp.cos(phi - th), (phi, th - sp.pi / 2, sp.pi / 2))
    kappa_theta = sp.simplify(radial3 * angular)
    dkernel_theta = sp.simplify(radial1 * sp.integrate(1, (phi, th - sp.pi / 2, sp.pi / 2)))
    # back to covariance entries: |u||v| = sqrt(q1 q2), cos theta = c / sqrt(q1 q2)
    theta_of = sp.acos(c / sp.sqrt(q1 * q2))
    pair = sp.simplify(sp.sqrt(q1 * q2) * kappa_theta.subs(th, theta_of))
    grad = tuple(sp.simplify(sp.diff(pair, v)) for v in (q1, q2, c))
    # one-dimensional moments, x ~ N(0, q) along u
    density = sp.exp(-(z**2) / (2 * q)) / sp.sqrt(2 * sp.pi * q)
    mean = sp.simplify(sp.integrate(z * density, (z, 0, sp.oo)))
    second = sp.simplify(sp.integrate(z**2 * density, (z, 0, sp.oo)))
    # Tian's gradient: grad_u E[relu(u.x) relu(v.x)] = E[relu'(u.x) relu(v.x) x]
    # with q1 = u.u, c = u.v: grad_u F = 2 F_q1 u + F_c v
    tian_u = sp.simplify(2 * grad[0])
    tian_v = sp.simplify(grad[2])
    return dict(
        symbols=dict(theta=th, q=q, q1=q1, q2=q2, c=c, n_u=nu, n_v=nv),
        kappa_theta=kappa_theta,
        dkernel_theta=dkernel_theta,
        pair=pair,
        pair_grad=grad,
        self=sp.simplify(second),
        self_from_pair=sp.simplify(pair.subs({q2: q1, c: q1}).subs(q1, q)),
        dkernel=sp.simplify(dkernel_theta.subs(th, theta_of)),
        mean=mean,
        first_moment=sp.simplify(second / q),
        tian_u=tian_u,
        tian_v=tian_v,
    )


def cross_moment_expression():
    """``E[relu'(l_i) l_k relu(l_j)]`` in (Q_ii, Q_jj, Q_ij, Q_ki, Q_kj), ``l = w.x``."""
    import sympy as sp

    d = derive()
    Qii, Qjj = sp.symbols("Q_ii Q_jj", positive=True)
    Qij, Qki, Qkj = sp.symbols("Q_ij Q_ki Q_kj", real=True)
    s = d["symbols"]
    sub = {s["q1"]: Qii, s["q2"]: Qjj, s["c"]: Qij}
    # l_k = w_k . x is linear in x, so E[relu'(l_i) l_k relu(l_j)] = w_k . Tian(w_i, w_j)
    expr = d["tian_u"].subs(sub) * Qki + d["tian_v"].subs(sub) * Qkj
    return sp.simplify(expr), (Qii, Qjj, Qij, Qki, Qkj)


def numeric() -> dict:
    """Numpy callables of the derived closed forms (for the Monte Carlo tests and users).

    ``pair(q1, q2, c)``, ``dkernel(q1, q2, c)``, ``mean(q)``, ``self(q)``,
    ``tian(u, v) -> E[relu'(u.x) relu(v.x) x]``, ``first_moment(u) -> E[relu(u.x) x]``,
    ``cross(Qii, Qjj, Qij, Qki, Qkj)``.
    """
    import numpy as np
    import sympy as sp

    d = derive()
    s = d["symbols"]
    args = (s["q1"], s["q2"], s["c"])
    f = {k: sp.lambdify(args, d[k], "numpy") for k in ("pair", "dkernel", "tian_u", "tian_v")}
    mean = sp.lambdify((s["q"],), d["mean"], "numpy")
    self_ = sp.lambdify((s["q"],), d["self"], "numpy")
    first = sp.lambdify((s["q"],), d["first_moment"], "numpy")
    cross_expr, cross_args = cross_moment_expression()
    cross = sp.lambdify(cross_args, cross_expr, "numpy")

    def tian(u, v):
        u, v = np.asarray(u, float), np.asarray(v, float)
        q1, q2, c = u @ u, v @ v, u @ v
        return f["tian_u"](q1, q2, c) * u + f["tian_v"](q1, q2, c) * v

    def first_moment(u):
        u = np.asarray(u, float)
        return first(u @ u) * u

    return dict(
        pair=f["pair"],
        dkernel=f["dkernel"],
        mean=mean,
        self=self_,
        tian=tian,
        first_moment=first_moment,
        cross=cross,
    )


def _stated():
    """The forms stated in derivations/theory.md section 1, as independent sympy expressions."""
    import sympy as sp

    s = derive()["symbols"]
    th, q1, q2, c = s["theta"], s["q1"], s["q2"], s["c"]
    kappa_c = (sp.sqrt(1 - c**2) + (sp.pi - sp.acos(c)) * c) / (2 * sp.pi)
    return dict(
        kappa_theta=(sp.sin(th) + (sp.pi - th) * sp.cos(th)) / (2 * sp.pi),
        pair=sp.sqrt(q1 * q2) * kappa_c.subs(c, c / sp.sqrt(q1 * q2)),
        dkernel=(sp.pi - sp.acos(c / sp.sqrt(q1 * q2))) / (2 * sp.pi),
    )


def verify() -> None:
    import sympy as sp

    d = derive()
    s = d["symbols"]
    st = _stated()
    th, q, q1, q2, c = s["theta"], s["q"], s["q1"], s["q2"], s["c"]
    check(is_zero(d["kappa_theta"] - st["kappa_theta"]), "arc-cosine kernel in theta")
    check(is_zero(d["pair"] - st["pair"]), "pair kernel differs from sqrt(q1 q2) kappa(c)")
    check(is_zero(d["dkernel"] - st["dkernel"]), "derivative kernel (pi - theta)/(2 pi)")
    check(is_zero(d["self"] - q / 2), "E[relu(z)^2] = q/2")
    check(is_zero(d["self_from_pair"] - q / 2), "pair kernel at c = q1 = q2 is not q/2")
    check(is_zero(d["mean"] - sp.sqrt(q / (2 * sp.pi))), "E[relu(u.x)] = |u|/sqrt(2 pi)")
    check(is_zero(d["first_moment"] - sp.Rational(1, 2)), "E[relu(u.x) x] = u/2")
    check(is_zero(d["kappa_theta"].subs(th, 0) - sp.Rational(1, 2)), "kappa(1) = 1/2")
    # Tian: ((pi - theta) v + |v| sin(theta) u/|u|) / (2 pi)
    theta_of = sp.acos(c / sp.sqrt(q1 * q2))
    sin_t = sp.sqrt(1 - c**2 / (q1 * q2))
    check(is_zero(d["tian_v"] - (sp.pi - theta_of) / (2 * sp.pi)), "Tian: coefficient of v")
    check(
        is_zero(d["tian_u"] - sp.sqrt(q2) * sin_t / (sp.sqrt(q1) * 2 * sp.pi)),
        "Tian: coefficient of u",
    )
    expr, (Qii, Qjj, Qij, Qki, Qkj) = cross_moment_expression()
    tij = sp.acos(Qij / sp.sqrt(Qii * Qjj))
    stated = (
        (sp.pi - tij) * Qkj + sp.sqrt(1 - Qij**2 / (Qii * Qjj)) * sp.sqrt(Qjj / Qii) * Qki
    ) / (2 * sp.pi)
    check(is_zero(expr - stated), "E[relu'(l_i) l_k relu(l_j)] differs from derivations/theory.md")


def build() -> str:
    d = derive()
    cross, _ = cross_moment_expression()
    E = r"\mathbb{E}"
    return document(
        "Gaussian expectations of ReLU features",
        "Closed forms of the Gaussian expectations that the ReLU population loss and its gradient "
        "need: the arc-cosine kernel (Cho & Saul 2009), its derivative kernel, Tian's population "
        "gradient (Tian 2017) and the one-dimensional moments. Each is integrated by sympy in the "
        "plane of the two weight vectors.",
        [
            (
                r"Arc-cosine kernel, angle form",
                E
                + r"[\mathrm{relu}(u\cdot x)\,\mathrm{relu}(v\cdot x)] = |u||v|\,"
                + latex(d["kappa_theta"]),
            ),
            (
                r"Pair kernel $F(q_1, q_2, c)$, $(x_1, x_2)$ centred Gaussian with variances "
                "$q_1$, $q_2$ and covariance $c$",
                r"F = " + latex(d["pair"]),
            ),
            (
                "Its first partial derivatives (finite at $c^2 = q_1 q_2$)",
                pair_partials(d["pair_grad"]),
            ),
            (
                "Derivative kernel",
                E + r"[\mathrm{relu}'(x_1)\mathrm{relu}'(x_2)] = " + latex(d["dkernel"]),
            ),
            (
                "Tian's population gradient",
                E
                + r"[\mathrm{relu}'(u\cdot x)\,\mathrm{relu}(v\cdot x)\,x] = "
                + latex(d["tian_u"])
                + r"\,u + "
                + latex(d["tian_v"])
                + r"\,v,\quad q_1 = |u|^2,\ q_2 = |v|^2,\ c = u\cdot v",
            ),
            (
                r"Cross moment, $\lambda_i = w_i \cdot x$",
                E
                + r"[\mathrm{relu}'(\lambda_i)\lambda_k\mathrm{relu}(\lambda_j)] = "
                + latex(cross),
            ),
            (
                r"One-dimensional moments, $x \sim \mathcal{N}(0, q)$ along $u$",
                E
                + r"[\mathrm{relu}(u\cdot x)] = "
                + latex(d["mean"])
                + r",\quad "
                + E
                + r"[\mathrm{relu}(u\cdot x)\,x] = "
                + latex(d["first_moment"])
                + r"\,u,\quad "
                + E
                + r"[\mathrm{relu}(u\cdot x)^2] = "
                + latex(d["self"]),
            ),
        ],
        *_build_notes(),
    )


def _build_notes() -> tuple[list[str], list[str], list[str]]:
    """Assumptions, derivation steps and checks of the ReLU document."""
    return (
        [
            r"$x \sim \mathcal{N}(0, I_D)$; $u$, $v$ nonzero; $\theta \in [0, \pi]$ the angle "
            "between $u$ and $v$.",
            r"Only the projection of $x$ onto $\operatorname{span}\{u, v\}$ enters; it is a "
            "standard Gaussian in the plane.",
            r"ReLU is positively homogeneous, so $\lVert u \rVert$ and $\lVert v \rVert$ factor "
            "out of every expectation.",
        ],
        [
            r"Polar coordinates in the plane: $x = r (\cos\phi, \sin\phi)$, $u$ along $\phi = 0$, "
            r"$v$ at angle $\theta$; both ReLUs are active for "
            r"$\phi \in (\theta - \pi/2, \pi/2)$.",
            r"Radial integral: $\int_0^\infty r^3 e^{-r^2/2}\, dr / (2 \pi) = 1/\pi$; angular "
            r"integral of $\cos\phi \cos(\phi - \theta)$ over the active arc; their product is "
            r"$\kappa(\theta)$.",
            r"The derivative kernel is the measure of the active arc, $(\pi - \theta)/(2 \pi)$.",
            r"Substituting $\cos\theta = c / \sqrt{q_1 q_2}$ gives $F(q_1, q_2, c)$; sympy "
            r"simplifies the partial derivatives to forms without $1/\sqrt{q_1 q_2 - c^2}$ (the "
            r"$q$ and $c$ derivatives of the $\sqrt{\cdot}$ and $\arccos$ terms cancel).",
            r"Tian's gradient is $\nabla_u F(\lVert u \rVert^2, \lVert v \rVert^2, u \cdot v) "
            r"= 2 F_{q_1} u + F_c v$.",
            r"The cross moment follows by linearity: $\lambda_k = w_k \cdot x$, so it is "
            r"$w_k \cdot \mathrm{Tian}(w_i, w_j)$.",
            r"One-dimensional moments: direct integrals of $z\, \mathrm{relu}(z)$, $z^2$ against "
            r"$\mathcal{N}(0, q)$; $\mathbb{E}[\mathrm{relu}(u \cdot x)\, x]$ by projecting onto "
            "$u$ (the orthogonal part is independent, mean zero).",
        ],
        [
            "`verify()` checks each derived form against the form stated in derivations/theory.md "
            "section 1 with sympy (difference simplifies to zero), plus $\\kappa(1) = 1/2$ and "
            "$F(q, q, q) = q/2$.",
            r"tests/test_expectations_mc.py checks every closed form against Monte Carlo on "
            r"$\geq 20$ random configurations (nearly aligned, orthogonal, nearly opposite, "
            "unequal norms), within 4 standard errors.",
        ],
    )
