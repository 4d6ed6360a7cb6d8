r"""The classical online-SGD ODE (Saad & Solla 1995; Goldt et al. 2019) in this package's scaling.

Online SGD with a fresh batch of ``B`` samples per step, step $\eta / D$ on the batch loss and
time $t = \mathit{steps} / D$ has, as $D \to \infty$, deterministic order parameters obeying

$$
\begin{aligned}
\frac{da_i}{dt} &= -\eta\, \frac{\partial L}{\partial a_i}, \qquad
\frac{dR_{in}}{dt} = -\eta\, (2 G R + H T)_{in}, \\
\frac{dQ_{ij}}{dt} &= -\eta\, (2 G Q + 2 Q G + H R^\top + R H^\top)_{ij}
+ \frac{\eta^2}{B}\, a_i a_j\, \mathbb{E}[g'(\lambda_i)\, g'(\lambda_j)\, e^2],
\end{aligned}
$$

with $e = \sum_k a_k\, g(\lambda_k) - \sum_n b_n\, g(\nu_n)$; the $\eta$ terms are the population
flow (`gaugedyn.theory.order_parameter_velocity()`) and the $\eta^2$ term is the gradient noise
($|x|^2 \approx D$ makes it survive the limit). The noise term expands into the four-point
integrals
$I_4(i, j, k, l) = \mathbb{E}[g'(u_i)\, g'(u_j)\, g(u_k)\, g(u_l)]$ over the jointly Gaussian local fields with
covariance $C$ of blocks $Q$, $R$, $R^\top$ and $T$. `noise_method()` picks how, in one place: for
$g(z) = \mathrm{erf}(z / \sqrt 2)$ the symbolic module's ``erf_i4`` (``gaugedyn derive``,
``derivations/gaussian_erf.md``) gives them in closed form; for the linear activation
$I_4 = C_{34}$; for a piecewise-linear (positively homogeneous) activation, ReLU, leaky ReLU, the
absolute value, the noise term is exact: Gaussian orthant probabilities and moments by Stein's
lemma, closed to three fields and one smooth one-dimensional integral for four
(`gaugedyn.training._orthant`, where the derivation is); for tanh and softplus
(`SOBOL_ACTIVATIONS`) the noise term is not split into four-point integrals at all (below); for
every other activation
they are four-dimensional Gauss-Hermite integrals on the eigen factor of each $4 \times 4$ covariance
(`gaugedyn.theory._quadrature.gaussian_product()`, $10^4$ nodes each: exact for
polynomial ``g`` up to the degree it states, and only algebraically convergent for ``g`` with a
kink such as ReLU, where its error is what ``gaussian_product_error`` reports).

That four-point rule is accurate for softplus at the noise-free flow's states and not for tanh,
measured by
``benchmarks/bench_online_noise_accuracy.py`` (K = M = 4, against 28 nodes per axis and Monte
Carlo; ``docs/benchmarks.md``): softplus's noise term stays within a few standard errors of
Monte Carlo at every state of a run to t = 1000; tanh's is off by percents at t = 0, and once
the students fit the teacher the sum of four-point integrals cancels to a noise term far smaller
than each integral's rule error (at t = 1000 the rule's diagonal is more than ten times Monte
Carlo's, with entries of the wrong sign). Tanh's noise term is therefore one scrambled-Sobol
rule for all $E_{ik}$ at once with a control variate (`sobol_expectation()`; compiled,
`gaugedyn.training._ode_kernels.sobol_noise` and ``mixture_noise``): $2^8$ (``SOBOL_LOG2``)
equal-weight nodes $u = C^{1/2} z$, $z$ a fixed scrambled Sobol set through $\Phi^{-1}$,
centred and whitened (exact for integrands of degree 2), $e$ formed node by node so that
nothing cancels; the symmetric root $C^{1/2}$ keeps the rule continuous in the state. The
rule integrates only the difference between tanh's integrand and that of a two-term erf
mixture $h \approx \tanh$ (`ERF_MIXTURES`, within 1.6e-3 of it), whose own noise term is
exact: erf's four-point integrals in closed form on the scaled fields (`mixture_noise()`).
Against a randomised-QMC reference (``benchmarks/bench_noise_qmc.py``) it is within about
6e-3 of the term at the flow's states t = 0 to 1000 (the plain rule of $2^{14}$ nodes it
replaced: 1.3e-3 to 1.2e-2; the four-point rule 2.6e-2 to 17), at about 0.2 ms per
right-hand side against 3 (K = M = 4, compiled), and a run to t = 1000 at rtol 1e-8 takes
under a CPU second. Softplus's four-point integrals cancel the same way on a noisy run's late
states (30% to 52% off Monte Carlo at t = 600 to 1000), so its noise term is the same rule,
$2^{12}$ nodes, with a two-term mixture of Gaussian-smoothed ReLUs
$S_s(x) = \mathbb{E}_z[\mathrm{relu}(x + s z)]$ as control (`RELU_MIXTURES`, within 1.3e-3 of
softplus; no erf mixture grows like it), whose noise term is exact: $S_s' = \Phi(x / s) =
\mathbb{E}_z[\theta(x + s z)]$, so each of its four-point terms is ReLU's orthant moment at the
four factors' fields plus independent noise of variance $s_j^2$ each
(`relu_mixture_noise()`). That exact term is $16 \times 360$ four-field orthant moments at
K = M = 4; the compiled kernel evaluates 4,896 of them (the mirror terms where two factors read
one field folded), their orthant probabilities once per multiset of (field, scale) factors
(2,586) by a Gauss-Legendre rule sized by a bound on the smoothed fields' conditioning and
by what the term needs (`gaugedyn.training._orthant.SMOOTHED_RULES`, 7 nodes along the run):
about 0.5 ms per right-hand side (2.5 ms one by one; now the probabilities and the moments
each in one vectorised batch, `gaugedyn.training._ode_kernels`'s module docstring); the Sobol
rule's nodes, each field's four functions read from a table of piecewise polynomials
(`field_table()`), in blocks of nodes, about 0.4 ms more (0.8 node by node); far more accurate
than the four-point rule late in a run. A run to t = 1000 at rtol 1e-8 asks for about 1,270
right-hand sides; with the noise term evaluated whole at each, at 3.4 ms, it cost 5.0 CPU
seconds (``benchmarks/bench_online_ode.py``; load 1.1, 2026-12-07). LSODA's corrector
iterations at one time now reuse the noise term of the step's first state there
(`NOISE_LAG`, `NoiseRule`: the same tolerance-level error against a run at rtol 1e-11): 828
noise terms (with the options 646). Both together (``bench_online_ode.py --rounds 2 --t-max 1000 --rtol 1e-8 --budget 4000
--activations softplus``, 2026-12-08 01:42 UTC, load 1.0): 1.2 CPU seconds, 1,364 right-hand
sides, 919 noise terms (with the options 0.9 s), not yet one. Then the first call at a time
gives its noise part apart (`NoiseRule`: a repeat no longer evaluates the flow at the first
state again, about 450 flows a run), the flow's Hermite coefficients take the nodes four at a
time (`gaugedyn.training._ode_kernels.hermite_coefficients()`, a third less), the teacher's
fields' coefficients are computed once (`gaugedyn.training._ode_kernels.teacher_coefficients()`,
half of the rest) and softplus's ``g`` and ``g'`` share one exponential (the same bits): 1,306
right-hand sides, 855 noise terms, 451 flows alone, 45 flow Jacobians, and in three interleaved
pairs of processes, three runs each (2026-12-08 02:07 UTC, load 0.9), 0.92 to 0.99 CPU s (median
0.95) against 1.17 to 1.39 s (median 1.24) before; the benchmark's command above at 02:06 to
02:07 UTC (load 0.85 to 0.9), one run each, 0.92, 1.03 and 1.07 s (with the options 0.71 to 0.82
s): on this shared machine a single run straddles one second, so the benchmark's record takes
the median of five runs (``--runs 5``): on the machine otherwise idle (2026-12-08 02:30 UTC, load
1.1, at the final code) 0.92 CPU s, the five within 0.915 to 0.923 (with the options 0.71), under one. Of that, the noise terms about
0.76 s (0.9 ms each: the control's exact term 0.5, the Sobol rule 0.37, of it the field table's
lookups 0.33), the runtime check at the start (`NOISE_CHECK`, 2^18 draws; ``noise_check="off"``
saves it) 0.08 s, the flows 0.06 s (0.044 ms each, from 0.13), the Jacobians 0.02 s. The
trajectory moves at the tolerance's level with the held part's round-off (the whole less the
flow before, the part itself now): within 2.1e-8 of the earlier run's states at the 101 record
times (the largest component 4.1; ``noise_check="off"``), as the lag itself had moved them by
1.7e-8. Tanh's noise term is evaluated
at every right-hand side: held once per time point, it took more steps and more CPU time
(`NOISE_LAG`). An explicit integrator needs a noise term at every stage: ``solve_ivp`` with
DOP853 had used 1,300 right-hand sides by t = 137, RK45 by t = 80 (softplus, the same
tolerances; 2026-12-08 01:07 UTC, load 2.5). `online_ode()` checks a noise term by a rule (the
four-point quadrature or the Sobol rule) while it integrates (``noise_check``; `NoiseWatch`, declared by `NOISE_CHECK`):
against Monte Carlo at the start and at each eighth of the horizon within 10% of the run's CPU
time, warning once (`gaugedyn.NoiseTermWarning`) or raising where it is off by more than 10%.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass

import numpy as np

from .._errors import InputError, NoiseTermError, NoiseTermWarning
from ..theory import PARAMS as THEORY
from ..theory import (
    Activation,
    Problem,
    activation_of,
    eigen_factor,
    gaussian_product,
    generated_kernels,
    hermite_grid,
    on_numpy,
    order_parameter_velocity,
)
from ._params import PARAMS

DIRECT_NODES = {1: 96, 2: 64, 3: 32, 4: 16}
"""Gauss-Hermite nodes per axis of the noise term's direct rule, by the rank of ``C`` (at most
$16^4 = 65{,}536$ nodes: relative error about 2e-4 for erf at q ~ 1.5); above rank 4 the
four-point integrals are used instead."""


NOISE_METHODS = ("quadrature", "orthant", "closed", "sobol")
"""How the noise term is evaluated (`noise_method()`): Gauss-Hermite quadrature, the exact
orthant moments of a piecewise-linear activation, the closed forms of erf and linear, or one
scrambled-Sobol rule on the symmetric root of the fields' Gram matrix (`SOBOL_ACTIVATIONS`); the
compiled kernels take the index as the method's code."""

SOBOL_ACTIVATIONS = ("tanh", "softplus")
"""The activations whose noise term is the scrambled-Sobol rule (`sobol_expectation()`):
``E_ik = E[g'(u_i) g'(u_k) e^2]`` for all ``i <= k`` from one equal-weight set of
``2**SOBOL_LOG2[name]`` nodes $u = C^{1/2} z$ with ``e`` formed node by node, so nothing
cancels, with a mixture whose noise term is exact as control variate (`rule_control()`: tanh's
erf mixture, `ERF_MIXTURES`; softplus's mixture of Gaussian-smoothed ReLUs, `RELU_MIXTURES`).
Chosen by measurement (``benchmarks/bench_noise_qmc.py``, K = M = 4, the states of the
noise-free flow at t = 0, 10, 100, 300 and 1000 against a randomised-QMC reference;
``docs/benchmarks.md``): for tanh, whose four-point integrals converge slowly (the poles of
``tanh`` at ``+-i pi / 2``) and cancel once the students fit the teacher, the four-point rule
is 2.5% to 1,700% off; for softplus the four-point rule is accurate at those states (4e-5 to
2.3e-3) but costs about 60 ms a right-hand side, and on a noisy run's late states (t = 600 to
1000, rtol 1e-8) it was 30% to 52% off Monte Carlo, where its integrals cancel as tanh's did;
the rule with the smoothed-ReLU control is at least as accurate at every state
(`SOBOL_LOG2`), and on the noisy run to t = 1000 (rtol 1e-8) every one of its nine runtime
checks passed, within 2.4% of Monte Carlo (whose standard error was up to 1.2%; 2026-12-07,
load about 6)."""

SOBOL_LOG2 = {"tanh": 8, "softplus": 12}
"""``log2`` of the scrambled-Sobol rule's node count by activation (`SOBOL_ACTIVATIONS`), chosen
by accuracy and cost (``benchmarks/bench_noise_qmc.py``, K = M = 4, the noise-free flow's states
at t = 0, 10, 100, 300 and 1000). Tanh, 2^8: with the erf mixture of `ERF_MIXTURES` within
about 6e-3 of the reference at every state (2^6: 1.6e-2, 2^10: 2.6e-3), as good as or better
than the rule without the control at 2^14 nodes (1.3e-3 to 1.2e-2), at a tenth of its cost.
Softplus, 2^12: with the smoothed-ReLU mixture of `RELU_MIXTURES` the smallest count at least
as accurate as the four-point rule it replaced at every state (t = 0: 5.9e-6 against 6.5e-6,
t = 10: 5.7e-5 against 9.4e-5, t = 100 to 1000: 9e-5 to 1.1e-4 against 9.8e-4 to 2.2e-3;
2^10: 1.9e-5 and 1.1e-4 at t = 0 and 10, 2^11: 1.4e-5 and 1.3e-4), the nodes a small part of
the cost beside the control's exact term (`relu_mixture_noise()`)."""


def sobol_log2(activation) -> int:
    """``log2`` of the Sobol rule's node count for ``activation`` (`SOBOL_LOG2`; the smallest
    declared count for an activation outside it, used only where a caller asks for the rule)."""
    return SOBOL_LOG2.get(activation_of(activation).name, min(SOBOL_LOG2.values()))


SOBOL_SEED = 0
"""The scrambling's seed (`scipy.stats.qmc.Sobol`): the rule is one fixed node set."""

_SOBOL_CACHE: dict[tuple[int, int, int], np.ndarray] = {}


def sobol_nodes(d: int, log2: int) -> np.ndarray:
    r"""The scrambled-Sobol rule's nodes, of shape ``(2**log2, d)`` (``log2``: `sobol_log2()`):
    $z = \Phi^{-1}(x)$ of the points $x$ of
    ``scipy.stats.qmc.Sobol(d, scramble=True, seed=SOBOL_SEED)``, centred and whitened
    (their mean exactly 0 and second moments exactly the identity: the rule integrates every
    polynomial of degree at most 2 in the fields exactly), equal weights. The one table the
    compiled and the numpy noise terms read."""
    key = (d, log2, SOBOL_SEED)
    if key not in _SOBOL_CACHE:
        from scipy.stats import norm, qmc

        x = qmc.Sobol(d=d, scramble=True, seed=SOBOL_SEED).random_base2(log2)
        z = norm.ppf(x)
        z -= z.mean(axis=0)
        L = np.linalg.cholesky(z.T @ z / z.shape[0])
        _SOBOL_CACHE[key] = np.ascontiguousarray(np.linalg.solve(L, z.T).T)
    return _SOBOL_CACHE[key]


def sobol_factor(C) -> np.ndarray:
    """``A = U sqrt(max(L, 0)) U^T`` (``P x P``), ``A A^T = C``: the symmetric square root of the
    fields' Gram matrix, the numpy twin of `gaugedyn.training._ode_kernels.sobol_factor()`. A
    continuous function of ``C`` (smooth where it is positive definite) whatever the
    eigenvectors' signs and order: on a sorted, sign-fixed eigen factor the rule jumps where an
    eigenvector's sign convention flips, and LSODA (tanh, K = M = 4, rtol 1e-8) took 1,292
    right-hand sides to t = 10 against 305 on this root, and had not reached t = 1000 after
    400 s of wall time against 2,005 (load about 3, 2026-12-07)."""
    lam, U = np.linalg.eigh(np.asarray(C, dtype=np.float64))
    return (U * np.sqrt(np.maximum(lam, 0.0))) @ U.T


ERF_MIXTURES = {"tanh": ((0.517947, 0.482053), (1.577674, 0.896093))}
r"""The control variate of each activation of `SOBOL_ACTIVATIONS`: ``(alpha, beta)`` of the erf
mixture $h(x) = \sum_j \alpha_j\, \mathrm{erf}(\beta_j x / \sqrt 2)$, whose noise term has
closed forms (erf's four-point integrals on the scaled fields, `mixture_noise()`). For tanh the
Gaussian-weighted least-squares fit of two terms ($\sum_j \alpha_j = 1$, so both share tanh's
limits; weight $e^{-x^2/4}$ on $[-8, 8]$): within 1.6e-3 of tanh everywhere (one term, the
best scale 1.188, is 2.1e-2 off, three terms 1.9e-4). Any mixture leaves the estimate unbiased
(what the rule integrates is the difference, and the mixture's part is exact); a closer one
leaves less for the rule: the sum of two, unlike one erf, nearly cancels in $e$ where the
students fit the teacher (``benchmarks/bench_noise_qmc.py``)."""


def mixture_noise(control, a, b, C) -> np.ndarray:
    """``E_ik = E[h'(u_i) h'(u_k) (sum_p c_p h(u_p))^2]`` (``(K, K)``, ``c = (a, -b)``) of the
    erf mixture ``h`` of ``control (2, J)`` (`ERF_MIXTURES`) in closed form: erf's four-point
    integrals (``gaugedyn derive``'s ``erf_i4``) on the covariance of the scaled fields, summed
    over the mixture's terms; the numpy twin of
    `gaugedyn.training._ode_kernels.mixture_noise()`."""
    import itertools

    K, P = a.shape[0], C.shape[0]
    c = np.concatenate([a, -b])
    i, k, p, q = np.meshgrid(np.arange(K), np.arange(K), np.arange(P), np.arange(P), indexing="ij")
    d = np.diag(C)
    E = np.zeros((K, K))
    terms = list(zip(control[0], control[1], strict=True))
    for (w1, s1), (w2, s2), (w3, s3), (w4, s4) in itertools.product(terms, repeat=4):
        v = generated_kernels.erf_i4(
            s1 * s1 * d[i],
            s1 * s2 * C[i, k],
            s1 * s3 * C[i, p],
            s1 * s4 * C[i, q],
            s2 * s2 * d[k],
            s2 * s3 * C[k, p],
            s2 * s4 * C[k, q],
            s3 * s3 * d[p],
            s3 * s4 * C[p, q],
            s4 * s4 * d[q],
        )
        E += (w1 * s1 * w2 * s2 * w3 * w4) * np.einsum("ikpq,p,q->ik", v, c, c)
    return E


RELU_MIXTURES = {"softplus": ((0.43676, 0.56324), (2.309896, 1.294068))}
r"""The control variate of softplus (`SOBOL_ACTIVATIONS`): ``(w, s)`` of the mixture of
Gaussian-smoothed ReLUs $h(x) = \sum_j w_j S_{s_j}(x)$,
$S_s(x) = \mathbb{E}_z[\mathrm{relu}(x + s z)] = x\, \Phi(x / s) + s\, \varphi(x / s)$, whose
noise term is exact: $S_s' = \Phi(x / s) = \mathbb{E}_z[\theta(x + s z)]$, so each of its
four-point terms is ReLU's exact orthant moment at the fields plus independent noise of
variance $s_j^2$ on each factor (`relu_mixture_noise()`). No erf mixture grows like softplus;
a mixture of smoothed ReLUs with $\sum_j w_j = 1$ shares both its limits (slope 1 at
$+\infty$, 0 at $-\infty$). The Gaussian-weighted least-squares fit of two terms (weight
$e^{-x^2/4}$ on $[-8, 8]$, as tanh's erf mixture; Nelder-Mead from 20 starts): within 1.3e-3
of softplus everywhere and its derivative within 9.5e-4 of the logistic (one term, the best
scale 1.758, is 1.8e-2 off; three terms 1.9e-4, at 81 orthant moments a term against 16). At
2^8 nodes the rule with this control was within 8.4e-4 of a randomised-QMC reference at the
noise-free flow's states (K = M = 4, t = 0 to 1000), with the one-term control 3.4e-2, without
one 3.5e-1."""

CONTROL_FAMILIES = ("erf", "smoothed_relu")
"""The control variates' families, in the order of their codes (row 2 of `rule_control()`):
the erf mixtures of `ERF_MIXTURES` and the smoothed-ReLU mixtures of `RELU_MIXTURES`."""


def rule_control(method: str, activation) -> np.ndarray:
    """The noise term's control variate for ``method`` and ``activation``: ``(3, J)``, the rows
    weights and scales of its mixture and its family's code (`CONTROL_FAMILIES`) for
    ``"sobol"`` (`ERF_MIXTURES`, `RELU_MIXTURES`), else an empty ``(3, 0)`` (none). The one
    table the compiled and the numpy noise terms read."""
    name = activation_of(activation).name
    if method != "sobol":
        return np.zeros((3, 0))
    for family, table in ((0, ERF_MIXTURES), (1, RELU_MIXTURES)):
        if name in table:
            w, s = table[name]
            return np.array([w, s, [float(family)] * len(w)], dtype=np.float64)
    return np.zeros((3, 0))


def relu_mixture_noise(control, a, b, C) -> np.ndarray:
    """``E_ik = E[h'(u_i) h'(u_k) (sum_p c_p h(u_p))^2]`` (``(K, K)``, ``c = (a, -b)``) of the
    smoothed-ReLU mixture ``h`` of ``control (3, J)`` (`RELU_MIXTURES`) exactly: each term ReLU's
    orthant moment (`gaugedyn.training._orthant.smoothed_relu_moment()`, its orthant
    probability `gaugedyn.training._orthant.smoothed_orthant4()`) of the four factors' fields
    with covariance ``C[f][:, f] + diag(s_1^2, ..., s_4^2)``, one independent smoothing per
    factor; the numpy twin of `gaugedyn.training._ode_kernels.relu_mixture_noise()`, every one
    of the ``J^4`` terms and every orthant probability computed afresh (where the compiled
    kernel folds the mirror terms and stores each probability by its factors)."""
    import itertools

    from ._orthant import smoothed_orthant4, smoothed_relu_moment

    K, P = a.shape[0], C.shape[0]
    c = np.concatenate([a, -b])
    w, s = control[0], control[1]
    E = np.zeros((K, K))
    for i, k in itertools.combinations_with_replacement(range(K), 2):
        f = [i, k, 0, 0]
        for p, q in itertools.combinations_with_replacement(range(P), 2):
            f[2], f[3] = p, q
            sub = C[np.ix_(f, f)]
            sub = np.ascontiguousarray(sub)
            work = np.empty((4, 4))
            for js in itertools.product(range(w.size), repeat=4):
                noise = np.ascontiguousarray(s[list(js)] ** 2)
                key = np.array(f, dtype=np.int64) * w.size + np.array(js, dtype=np.int64)
                weight = float(np.prod(w[list(js)])) * c[p] * c[q] * (1 if p == q else 2)
                p4 = smoothed_orthant4(sub, key, noise, work)
                E[i, k] += weight * smoothed_relu_moment(sub, noise, p4)
    return np.triu(E) + np.triu(E, 1).T


def mixture_values(control, x):
    """``(h(x), h'(x))`` of the mixture ``control (3, J)`` (`rule_control()`) at the array
    ``x``: the numpy twin of `gaugedyn.training._ode_kernels.mixture()`."""
    from scipy.special import erf, ndtr

    x = np.asarray(x, dtype=np.float64)[..., None]
    h, d = np.zeros(x.shape[:-1]), np.zeros(x.shape[:-1])
    for w, s, family in control.T:
        if family == 0.0:
            h += w * erf(s * x[..., 0] / np.sqrt(2.0))
            d += w * s * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * (s * x[..., 0]) ** 2)
        else:
            y = x[..., 0] / s
            h += w * (x[..., 0] * ndtr(y) + s * np.exp(-0.5 * y * y) / np.sqrt(2.0 * np.pi))
            d += w * ndtr(y)
    return h, d


_FIELD_TABLES: dict[tuple[str, bytes], np.ndarray] = {}


def field_table(method: str, activation) -> np.ndarray:
    """The compiled Sobol rule's field table for ``method`` and ``activation``
    (`gaugedyn.training._ode_kernels.field_values()`): for ``"sobol"``, ``(n, degree + 1, 4)``
    monomial coefficients, on each interval ``[x_m, x_m + w]`` of ``w = FIELD_TABLE_WIDTH`` from
    ``-FIELD_TABLE_REACH`` to ``FIELD_TABLE_REACH``, in ``v = 2 (x - x_m) / w - 1``, of the
    Chebyshev interpolants at ``FIELD_TABLE_DEGREE + 1`` points of ``g``, ``g'`` (the
    activation's own function and derivative) and of the control's ``h``, ``h'``
    (`mixture_values()` of `rule_control()`; 0 without one); else an empty ``(0, 1, 4)``
    (unused).

    Why: a node of the rule evaluates these four at each field, and from the functions
    themselves softplus's control (two smoothed ReLUs: an ``erfc`` and an ``exp`` each) made
    the rule 1.9 ms of a right-hand side's 4.9 (K = M = 4, 2^12 nodes); from the table, 0.7 ms.
    The interpolants are within 3e-14 of the functions on the table's reach (tested), so the
    rule is the numpy twin's (`sobol_expectation()`, the functions themselves) to round-off,
    and a continuous function of the fields to the same round-off."""
    from numpy.polynomial import chebyshev

    from ._ode_kernels import FIELD_TABLE_DEGREE, FIELD_TABLE_REACH, FIELD_TABLE_WIDTH

    act = activation_of(activation)
    if method != "sobol" or act.code is None:
        return np.zeros((0, 1, 4))
    control = rule_control(method, act)
    key = (act.name, control.tobytes())
    if key not in _FIELD_TABLES:
        n = int(round(2.0 * FIELD_TABLE_REACH / FIELD_TABLE_WIDTH))
        deg = FIELD_TABLE_DEGREE
        v = np.cos(np.pi * (np.arange(deg + 1) + 0.5) / (deg + 1))
        x = -FIELD_TABLE_REACH + FIELD_TABLE_WIDTH * (np.arange(n)[:, None] + 0.5 * (v + 1.0))
        rows = [on_numpy(act.function)(x), on_numpy(act.derivative)(x)]
        rows += list(mixture_values(control, x)) if control.shape[1] else [0 * x, 0 * x]
        table = np.zeros((n, deg + 1, 4))
        for f, values in enumerate(rows):
            for m in range(n):
                coef = chebyshev.cheb2poly(chebyshev.chebfit(v, values[m], deg))
                table[m, : coef.size, f] = coef  # cheb2poly drops trailing zeros
        _FIELD_TABLES[key] = table
    return _FIELD_TABLES[key]


def control_noise(control, a, b, C) -> np.ndarray:
    """The exact noise term of the mixture ``control (3, J)``: `mixture_noise()` (erf) or
    `relu_mixture_noise()` (smoothed ReLU) by its family (row 2)."""
    if control[2, 0] == 0.0:
        return mixture_noise(control[:2], a, b, C)
    return relu_mixture_noise(control, a, b, C)


def sobol_expectation(activation, teacher_activation, a, b, C) -> np.ndarray:
    """``E_ik = E[g'(u_i) g'(u_k) e^2]`` (``(K, K)``) by the scrambled-Sobol rule with its
    control variate: the exact noise term of the mixture of `rule_control()`
    (`control_noise()`) plus the rule's mean of the difference of the integrand and the
    mixture's (the ``2**sobol_log2(activation)`` nodes of `sobol_nodes()` on `sobol_factor()`,
    ``u = A z``, ``e`` and the mixture's error formed node by node); the numpy twin of
    `gaugedyn.training._ode_kernels.sobol_noise()` and its exact terms."""
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    K = a.shape[0]
    U = sobol_nodes(C.shape[0], sobol_log2(act)) @ sobol_factor(C).T
    e = on_numpy(act.function)(U[:, :K]) @ a - on_numpy(teacher.function)(U[:, K:]) @ b
    Gp = on_numpy(act.derivative)(U[:, :K])
    E = (Gp * (e * e)[:, None]).T @ Gp / U.shape[0]
    control = rule_control("sobol", act)
    if control.shape[1] == 0:
        return E
    H, Hp = mixture_values(control, U)
    Hp = Hp[:, :K]
    eh = H[:, :K] @ a - H[:, K:] @ b
    E -= (Hp * (eh * eh)[:, None]).T @ Hp / U.shape[0]
    return E + control_noise(control, a, b, C)


def rule_sizes() -> list[int]:
    """The noise term's Gauss-Hermite rules, nodes per axis: ``[four-point, direct rank 1, ...,
    direct rank 4]`` (`gaugedyn.theory.gaussian_product()`'s default, ``FOUR_POINT_NODES``, and
    ``DIRECT_NODES``): the one table the compiled and the numpy noise terms read."""
    four = inspect.signature(gaussian_product).parameters["nodes"].default
    return [four, *(DIRECT_NODES[r] for r in range(1, 5))]


@dataclass(frozen=True)
class NoiseCheck:
    r"""The declaration of `online_ode()`'s runtime check of a quadrature noise term
    (``noise_check``; `NOISE_CHECK` is the one instance).

    At a checked state the noise term $N_{ik} = a_i a_k E_{ik}$ of the rule (`rule_sizes()`) is
    compared with a Monte Carlo estimate $\hat N$ (`monte_carlo_noise()`: ``samples`` draws of
    the fields from ``seed``, the error $e$ formed draw by draw, so nothing cancels; unbiased,
    with a standard error $s_{ik}$ per entry). The check's figure is the relative disagreement
    $\max |N - \hat N| / \max |\hat N|$; it fails when some entry is off by more than
    ``tolerance`` times $\max |\hat N|$ beyond ``z`` of its standard errors,
    $\max (|N - \hat N| - z s) > \mathit{tolerance} \max |\hat N|$.

    Attributes
    ----------
    samples : int
        Monte Carlo draws of the fields per check.
    seed : int
        The draws' seed (the same at every check: the record is reproducible).
    tolerance : float
        The relative disagreement that fails, beyond ``z`` standard errors.
    z : float
        Standard errors of the Monte Carlo estimate allowed on top of the tolerance.
    shares : int
        The schedule: the first right-hand side at or after each of the ``shares + 1`` times
        $k\, t_\text{end} / \mathit{shares}$, $k = 0, \dots, \mathit{shares}$ (the last at the
        final state if the integrator stopped short of it).
    budget : float
        The checks' CPU time at most this share of the right-hand sides' so far (each further
        check's cost estimated by the mean of those before it); a scheduled check that would
        exceed it waits for a later right-hand side. The check at the start always runs.
    """

    samples: int
    seed: int
    tolerance: float
    z: float
    shares: int
    budget: float


NOISE_CHECK = NoiseCheck(samples=2**18, seed=0, tolerance=0.1, z=4.0, shares=8, budget=0.1)
"""The runtime check of a noise term by a rule (`NoiseCheck`), declared once. Monte Carlo, not
a finer rule: tanh's four-point rule converged slowly in the nodes, so a finer rule's
disagreement underestimated the error (at t = 0 of ``bench_online_noise_accuracy.py``'s problem
16 nodes per axis against 10 disagreed by 2.4% where Monte Carlo found 3.8%).
With ``2**18`` draws the standard error is below 1% of the noise term at that problem's states
(0.3 to 0.7%), and one check costs about 0.07 CPU s with its sums compiled
(`monte_carlo_noise`, load 8, 2026-12-07): about twenty right-hand sides of softplus's Sobol
rule at K = M = 4 as they cost then (about 3.5 ms each; about seventy at today's 1 ms), a few
hundred of tanh's: the budget's unit. Since a softplus run to t = 1000 costs under a CPU second
(2026-12-08) its 10% budget holds the check at the start and one or two more (a run of 3.5 CPU s
checked at t = 0, 230 and 651, where the run of 5 CPU s had checked five times; 2026-12-08). The
tolerance of 10% asks the noise term to one significant digit: softplus's Sobol rule
agrees within the standard error at every state to t = 1000, and tanh's Sobol rule within 3%
(the four-point rule it replaced failed from t = 100 on: 16% there, 26% at 300;
``docs/own-activation.md``)."""

NOISE_CHECKS = ("warn", "error", "off")
"""``online_ode(..., noise_check=)``: warn once (`gaugedyn.NoiseTermWarning`), raise
(`gaugedyn.NoiseTermError`), or skip the check."""


def noise_method(activation, teacher_activation=None) -> str:
    """The noise term's method for students of ``activation`` and a teacher of
    ``teacher_activation`` (``None``: the same): ``"closed"`` for erf or linear with their own
    teacher, ``"orthant"`` when both are piecewise linear (positively homogeneous), else
    ``"sobol"`` when both are of `SOBOL_ACTIVATIONS`, else ``"quadrature"``. The one place the
    online ODE chooses (numpy and compiled alike)."""
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    if teacher is act and (
        act.name == "linear" or (act.name == "erf" and act.closed_form is not None)
    ):
        return "closed"
    if act.homogeneous and teacher.homogeneous:
        return "orthant"
    if act.name in SOBOL_ACTIVATIONS and teacher.name in SOBOL_ACTIVATIONS:
        return "sobol"
    return "quadrature"


def piecewise_slopes(activation, teacher_activation, K: int, M: int) -> np.ndarray:
    r"""``(3, K + M)``: the rows ``lo``, ``jump`` and ``h0`` of each field's piecewise-linear
    activation $g(x) = \mathit{lo}\, x + \mathit{jump}\, x\, \theta(x)$ (students first, then the
    teacher's), from ``up = g(1)`` and ``down = g(-1)``: ``lo = -down``, ``jump = up + down``, and
    $\theta(0) = h_0 = (g'(0) - \mathit{lo}) / \mathit{jump}$ (0 where ``jump = 0``)."""
    out = np.empty((3, K + M))
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    for cols, a in ((slice(0, K), act), (slice(K, K + M), teacher)):
        up, down = on_numpy(a.function)(np.array([1.0, -1.0]))
        lo, jump = -float(down), float(up + down)
        slope0 = float(on_numpy(a.derivative)(np.zeros(1))[0])
        out[0, cols], out[1, cols] = lo, jump
        out[2, cols] = (slope0 - lo) / jump if jump else 0.0
    return out


def four_point(
    activation, C, K: int, numerical: bool = False, teacher_activation=None
) -> np.ndarray:
    """``I4[i, j, k, l] = E[g'(u_i) g'(u_j) h_k(u_k) h_l(u_l)]`` for students ``i, j < K`` and all
    fields ``k, l`` of the Gram matrix ``C``, ``h_k = g`` on the student fields (``k < K``) and
    the teacher's ``g*`` on the others (closed form for erf unless ``numerical``, quadrature
    otherwise)."""
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    P = C.shape[0]
    i = np.arange(K)[:, None, None, None]
    j = np.arange(K)[None, :, None, None]
    k = np.arange(P)[None, None, :, None]
    l = np.arange(P)[None, None, None, :]
    if act.name == "erf" and act.closed_form is not None and not numerical and teacher is act:
        d = np.diag(C)
        return generated_kernels.erf_i4(
            d[i], C[i, j], C[i, k], C[i, l], d[j], C[j, k], C[j, l], d[k], C[k, l], d[l]
        )
    idx = np.stack(np.broadcast_arrays(i, j, k, l), axis=-1)  # (K, K, P, P, 4)
    sub = C[idx[..., :, None], idx[..., None, :]]
    g, gp = on_numpy(act.function), on_numpy(act.derivative)
    if teacher is act:
        return gaussian_product((gp, gp, g, g), sub)
    gt = on_numpy(teacher.function)
    out = np.empty(sub.shape[:4])
    for ks, hk in ((slice(0, K), g), (slice(K, P), gt)):
        for ls, hl in ((slice(0, K), g), (slice(K, P), gt)):
            out[:, :, ks, ls] = gaussian_product((gp, gp, hk, hl), sub[:, :, ks, ls])
    return out


def pair_derivative(activation, Q) -> np.ndarray:
    r"""``J_ij = E[g'(lambda_i) g'(lambda_j)] = dF/dc (Q_ii, Q_jj, Q_ij)`` (Price's theorem), the
    label-noise part of the noise term: $y = f^*(x) + \sigma \xi$ adds $\sigma^2 a_i a_j J_{ij}$."""
    d = np.diag(Q)
    return activation_of(activation).kernels[1](d[:, None], d[None, :], Q)[2]


def noise_term(a, Q, R, b, T, activation, teacher_activation=None, method=None):
    r"""The gradient-noise term of the online ODE,
    $N_{ij} = a_i a_j\, \mathbb{E}\bigl[g'(\lambda_i)\, g'(\lambda_j)\, e^2\bigr]$ ($K \times K$), with
    $e = \sum_k a_k g(\lambda_k) - \sum_n b_n g^*(\nu_n)$ ($g^*$: ``teacher_activation``, default
    $g$).

    By `noise_method()` unless ``method`` names one of ``NOISE_METHODS``: closed forms for linear
    and erf (same teacher); exact orthant moments for piecewise-linear $g$ and $g^*$
    (`gaugedyn.training._orthant`); for tanh and softplus (`SOBOL_ACTIVATIONS`) one
    scrambled-Sobol rule of ``2**SOBOL_LOG2[name]`` nodes on the symmetric root of the fields'
    Gram matrix $C$ for all $(i, j)$ with a mixture whose noise term is exact as control variate
    (``"sobol"``, `sobol_expectation()`); otherwise, when $C$ of the $K + M$ fields has
    rank $r \le 4$, one $r$-dimensional Gauss-Hermite rule on its eigen factor for all $(i, j)$ at
    once (`DIRECT_NODES`), else the four-point integrals `four_point()` (``"quadrature"``, the
    reference the orthant moments are checked against).

    Parameters
    ----------
    a : numpy.ndarray
        Second-layer weights $a$ ``(K,)``.
    Q : numpy.ndarray
        Student overlaps $Q$ ``(K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps $R$ ``(K, M)``.
    b : numpy.ndarray
        Teacher second-layer weights $b$ ``(M,)``.
    T : numpy.ndarray
        Teacher overlaps $T$ ``(M, M)``.
    activation : str or Activation
        The students' activation $g$ (a name of `gaugedyn.theory`'s activations, or an
        ``Activation``).
    teacher_activation : str or Activation or None
        The teacher's activation $g^*$; ``None``: $g$.
    method : str or None
        One of ``NOISE_METHODS`` (``"closed"`` only where `noise_method()` gives it,
        ``"orthant"`` only for piecewise-linear $g$ and $g^*$); ``None``: `noise_method()`.

    Returns
    -------
    numpy.ndarray
        $N$, ``(K, K)``.

    Raises
    ------
    InputError
        When ``method`` is not one of ``NOISE_METHODS`` or does not apply to the activations.
    """
    K = a.shape[0]
    C = np.block([[Q, R], [R.T, T]])
    c = np.concatenate([a, -b])
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    chosen = noise_method(act, teacher)
    if method is None:
        method = chosen
    elif method not in NOISE_METHODS or (method != "quadrature" and method != chosen):
        allowed = sorted({"quadrature", chosen})
        raise InputError(
            f"method={method!r} is not allowed for {act.name!r} students of a {teacher.name!r} "
            f"teacher; allowed: {', '.join(allowed)}"
        )
    if method == "orthant":
        from ._orthant import piecewise_noise

        lo, jump, h0 = piecewise_slopes(act, teacher, K, b.shape[0])
        E = np.zeros((K, K))
        piecewise_noise(
            np.ascontiguousarray(C, dtype=np.float64), K, c.astype(np.float64), lo, jump, h0, E
        )
        E = np.triu(E) + np.triu(E, 1).T
        return np.outer(a, a) * E
    if method == "sobol":
        return np.outer(a, a) * sobol_expectation(act, teacher, a, b, C)
    if act.name == "linear" and method == "closed":
        e2 = c @ C @ c
        return np.outer(a, a) * e2
    if method == "quadrature":
        A = eigen_factor(C, symmetric=act.homogeneous or teacher.homogeneous)
        if A.shape[1] <= max(DIRECT_NODES):
            Z, W = hermite_grid(A.shape[1], DIRECT_NODES[A.shape[1]])
            U = Z @ A.T
            e = on_numpy(act.function)(U[:, :K]) @ a - on_numpy(teacher.function)(U[:, K:]) @ b
            Gp = on_numpy(act.derivative)(U[:, :K])
            E = (Gp * (W * e * e)[:, None]).T @ Gp
            return np.outer(a, a) * E
    E = np.einsum(
        "ijkl,k,l->ij",
        four_point(act, C, K, numerical=method == "quadrature", teacher_activation=teacher),
        c,
        c,
    )
    return np.outer(a, a) * E


@dataclass(frozen=True)
class OnlineODE:
    """Right-hand side ``f(t, y, params)`` of the online ODE with ``y = (a, Q, R)`` flattened."""

    K: int
    M: int
    b: np.ndarray
    T: np.ndarray
    activation: str | Activation
    eta: float
    batch: int = 1
    noise: bool = True
    weight_decay: float = 0.0
    lr2: float = 1.0
    label_noise: float = 0.0
    teacher_activation: str | Activation | None = None

    def unpack(self, y):
        r"""``(a, Q, R)`` of states ``y`` of shape $(\dots, K + K^2 + KM)$."""
        K, M = self.K, self.M
        a = y[..., :K]
        Q = y[..., K : K + K * K].reshape(*y.shape[:-1], K, K)
        R = y[..., K + K * K :].reshape(*y.shape[:-1], K, M)
        return a, Q, R

    def __call__(self, t, y):
        a, Q, R = self.unpack(y)
        da, dQ, dR = order_parameter_velocity(
            a, Q, R, self.b, self.T, self.activation, self.teacher_activation
        )
        lam = self.weight_decay
        if lam or self.lr2 != 1.0:
            da, dQ, dR = self.lr2 * (da - lam * a), dQ - 2 * lam * Q, dR - lam * R
        dQ = self.eta * dQ
        if self.noise:
            N = noise_term(a, Q, R, self.b, self.T, self.activation, self.teacher_activation)
            if self.label_noise:
                N = N + self.label_noise**2 * np.outer(a, a) * pair_derivative(self.activation, Q)
            dQ = dQ + (self.eta**2 / self.batch) * N
        return np.concatenate([self.eta * da, dQ.ravel(), self.eta * dR.ravel()])


def compiled_rhs(
    K: int,
    M: int,
    b,
    T,
    eta: float,
    batch: int = 1,
    noise: bool = True,
    *,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    label_noise: float = 0.0,
    activation: str | Activation = "erf",
    split: bool = False,
):
    """``f(t, y)``: the compiled right-hand side of `OnlineODE` for ``activation`` (one with a
    compiled code, its own teacher activation). erf: its closed forms in the classical form
    (`gaugedyn.training._online_fast.compiled_online_rhs()`); any other: this module's own
    rules (the Mehler series or the ReLU closed forms for the flow; for the noise term the method
    of `noise_method()`: the orthant moments of a piecewise-linear activation, else the direct or
    four-point Gauss-Hermite rule) compiled (`gaugedyn.training._ode_kernels`). With ``split``
    (every activation but erf) ``f(t, y)`` returns ``(rhs, part)``: the same right-hand side,
    to the bit, and its noise part apart (label noise included; 0 outside the ``Q`` entries),
    from one evaluation (`NoiseRule`)."""
    act = activation_of(activation)
    if split and act.name == "erf" and act.closed_form is not None:
        raise InputError(
            "split=True is not allowed for erf (its closed forms give the right-hand side "
            "whole); allowed: split=False, or an activation other than erf"
        )
    if act.name == "erf" and act.closed_form is not None:
        from ._online_fast import compiled_online_rhs

        return compiled_online_rhs(
            K,
            M,
            b,
            T,
            eta,
            batch,
            noise,
            weight_decay=weight_decay,
            lr2=lr2,
            label_noise=label_noise,
        )
    return _quadrature_rhs(
        act, K, M, b, T, eta, batch, noise, weight_decay, lr2, label_noise, split
    )


def _grids(sizes):
    """``(grids_z, grids_w, grids_n)``: the compiled noise term's one-dimensional Gauss-Hermite
    rules (`gaugedyn.training._ode_kernels.noise_expectation()`), one row per entry of
    ``sizes`` (`rule_sizes()`'s order), zero-padded to the widest."""
    from scipy.special import roots_hermitenorm

    width = max(sizes)
    grids_z, grids_w = np.zeros((len(sizes), width)), np.zeros((len(sizes), width))
    for r, n in enumerate(sizes):
        z, w = roots_hermitenorm(n)
        grids_z[r, :n], grids_w[r, :n] = z, w / np.sqrt(2.0 * np.pi)
    return grids_z, grids_w, np.asarray(sizes, dtype=np.int64)


def _flow_rules(act):
    """``(u, v, z, w, basis_t)``: the compiled flow's rules for ``act``
    (`gaugedyn.training._ode_kernels.quadrature_rhs()`): ``u = up^2 + down^2``, ``v = 2 up
    down`` of a homogeneous ``g`` (else 0), and the smooth ``g``'s coefficient rule (its
    ``quadrature``; empty for a homogeneous one)."""
    if act.homogeneous:
        up, down = on_numpy(act.function)(np.array([1.0, -1.0]))
        return up * up + down * down, 2.0 * up * down, np.zeros(1), np.zeros(1), np.zeros((1, 1))
    z1, w1, basis = act.quadrature.coefficient_rule()
    return 0.0, 0.0, z1, w1, np.ascontiguousarray(basis.T)


def compiled_flow_jacobian(act, K: int, M: int, b, T, eta: float, weight_decay=0.0, lr2=1.0):
    """``J(t, y)``: `flow_jacobian()` of the compiled flow of ``act`` (an activation with a
    compiled code other than erf), compiled (`gaugedyn.training._ode_kernels.flow_jacobian()`):
    the same forward differences to the bit, each column recomputing only the coefficients of
    the one field whose variance it moves, so a Jacobian costs about two right-hand sides of
    the flow instead of ``1 + K + K^2 + KM`` (tanh, K = M = 4: the differences were 5,402
    right-hand sides of a run to t = 1000, over half its CPU time)."""
    from . import _ode_kernels

    act = activation_of(act)
    u, v, z1, w1, basis_t = _flow_rules(act)
    b = np.ascontiguousarray(b, dtype=np.float64)
    T = np.ascontiguousarray(T, dtype=np.float64)
    step = float(np.sqrt(np.finfo(np.float64).eps))
    size = K + K * K + K * M
    args = (float(eta), float(weight_decay), float(lr2), int(act.code), bool(act.homogeneous))

    def jac(t, y):
        return _ode_kernels.flow_jacobian(
            np.asarray(y, dtype=np.float64),
            K,
            M,
            b,
            T,
            *args,
            u,
            v,
            z1,
            w1,
            basis_t,
            step,
            np.empty((size, size)),
        )

    return jac


def _quadrature_rhs(act, K, M, b, T, eta, batch, noise, weight_decay, lr2, label_noise, split):
    """``f(t, y)`` of the online ODE of a compiled activation other than erf
    (`gaugedyn.training._ode_kernels.quadrature_rhs()`), with the rules' sizes read from their
    one declaration each (the activation's quadrature, `rule_sizes()`); with ``split``, ``f(t,
    y)`` is ``(rhs, noise part)`` (`compiled_rhs()`)."""
    from . import _ode_kernels

    if act.code is None:
        raise InputError(
            f"activation {act.name!r} has no compiled code; allowed: the activations of "
            "gaugedyn.theory.ACTIVATIONS with a code (a user's runs with method='reference')"
        )
    grids_z, grids_w, grids_n = _grids(rule_sizes())
    u, v, z1, w1, basis_t = _flow_rules(act)
    b = np.ascontiguousarray(b, dtype=np.float64)
    T = np.ascontiguousarray(T, dtype=np.float64)
    noise_scale = float(eta) ** 2 / int(batch) if noise else 0.0
    size = K + K * K + K * M
    wd, rate, sigma2 = float(weight_decay), float(lr2), float(label_noise) ** 2
    rhs = _ode_kernels.quadrature_rhs
    method = NOISE_METHODS.index(noise_method(act))
    slopes = (
        piecewise_slopes(act, act, K, M) if NOISE_METHODS[method] == "orthant" else np.zeros((3, 0))
    )
    nodes = rule_nodes(NOISE_METHODS[method], K + M, act)
    control = rule_control(NOISE_METHODS[method], act)
    table = field_table(NOISE_METHODS[method], act)
    args = (K, M, b, T, float(eta), noise_scale, wd, rate, sigma2, int(act.code))
    args += (bool(act.homogeneous), u, v, z1, w1, basis_t, grids_z, grids_w, grids_n, method)
    teacher = _ode_kernels.teacher_coefficients(
        int(act.code), bool(act.homogeneous), u, T, z1, w1, basis_t
    )
    args += (slopes, nodes, control, table, teacher)
    empty = np.empty(0)

    def f(t, y):
        return rhs(np.asarray(y, dtype=np.float64), *args, np.empty(size), empty)

    def parts(t, y):
        part = np.empty(size)
        return rhs(np.asarray(y, dtype=np.float64), *args, np.empty(size), part), part

    return parts if split else f


def rule_nodes(method: str, P: int, activation) -> np.ndarray:
    """The compiled noise term's node table for ``method`` at ``P`` fields: `sobol_nodes()`
    (``2**sobol_log2(activation)`` nodes) for ``"sobol"``, else an empty ``(0, P)`` (unused)."""
    return sobol_nodes(P, sobol_log2(activation)) if method == "sobol" else np.zeros((0, P))


def quadrature_noise(activation, teacher_activation, a, Q, R, b, T) -> np.ndarray:
    """The noise term $N_{ik} = a_i a_k E_{ik}$ (``(K, K)``) by the online ODE's rule for the
    activations (`noise_method()`: the scrambled-Sobol rule of `SOBOL_ACTIVATIONS`, else the
    Gauss-Hermite rules of `rule_sizes()`): the compiled kernel's
    (`gaugedyn.training._ode_kernels.noise_expectation()`) for an activation with a compiled code
    and its own teacher, else `noise_term()`'s."""
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    kind = "sobol" if noise_method(act, teacher) == "sobol" else "quadrature"
    if not (act.code is not None and teacher is act):
        return noise_term(a, Q, R, b, T, act, teacher, method=kind)
    from . import _ode_kernels

    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    C = np.ascontiguousarray(np.block([[Q, R], [R.T, T]]), dtype=np.float64)
    E = np.zeros((a.shape[0], a.shape[0]))
    grids_z, grids_w, grids_n = _grids(rule_sizes())
    _ode_kernels.noise_expectation(
        int(act.code),
        bool(act.homogeneous),
        NOISE_METHODS.index(kind),
        np.zeros((3, 0)),
        a,
        b,
        C,
        np.concatenate([a, -b]),
        grids_z,
        grids_w,
        grids_n,
        rule_nodes(kind, C.shape[0], act),
        rule_control(kind, act),
        field_table(kind, act),
        E,
    )
    E = np.triu(E) + np.triu(E, 1).T
    return np.outer(a, a) * E


def monte_carlo_noise(
    activation, teacher_activation, a, Q, R, b, T, samples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""The noise term $N_{ik} = a_i a_k\, \mathbb{E}[g'(u_i)\, g'(u_k)\, e^2]$ (``(K, K)``) by
    Monte Carlo and its standard error entry by entry: ``samples`` draws (rounded up to whole
    blocks of 65,536) of the fields from the eigen factor of their Gram matrix, from
    ``numpy.random.default_rng(seed)``, with ``e`` formed draw by draw (nothing cancels); for
    activations with compiled codes the sums over the draws are compiled
    (`gaugedyn.training._ode_kernels.monte_carlo_sums()`: the same draws and sums, a fifth of
    the numpy time at K = M = 4)."""
    act = activation_of(activation)
    teacher = act if teacher_activation is None else activation_of(teacher_activation)
    g, gp, gt = on_numpy(act.function), on_numpy(act.derivative), on_numpy(teacher.function)
    C = np.block([[Q, R], [R.T, T]])
    lam, U = np.linalg.eigh((C + C.T) / 2)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    K, block = a.shape[0], 65_536
    rng = np.random.default_rng(seed)
    s1, s2, n = np.zeros((K, K)), np.zeros((K, K)), 0
    codes = (act.code, teacher.code)
    while n < samples:
        Z = rng.standard_normal((block, C.shape[0]))
        if codes[0] is not None and codes[1] is not None:  # the same sums, compiled
            from . import _ode_kernels

            _ode_kernels.monte_carlo_sums(
                int(codes[0]),
                int(codes[1]),
                np.ascontiguousarray(a, dtype=np.float64),
                np.ascontiguousarray(b, dtype=np.float64),
                Z,
                np.ascontiguousarray(A),
                s1,
                s2,
            )
        else:
            X = Z @ A.T
            e = g(X[:, :K]) @ a - gt(X[:, K:]) @ b
            G = gp(X[:, :K]) * a
            e2 = e * e
            s1 += (G * e2[:, None]).T @ G
            G2 = G * G
            s2 += (G2 * (e2 * e2)[:, None]).T @ G2
        n += block
    mean = s1 / n
    return mean, np.sqrt(np.maximum(s2 / n - mean * mean, 0.0) / n)


class NoiseWatch:
    """`online_ode()`'s runtime check of a quadrature noise term, as `NOISE_CHECK` declares it:
    `observe()` sees every right-hand side's ``(t, y)`` (and `spend()` its CPU time) and, at the
    scheduled ones within the budget, `check()` compares the noise term of the rule
    (`quadrature_noise()`) with Monte Carlo's (`monte_carlo_noise()`); where it fails it warns
    once (``mode="warn"``, `gaugedyn.NoiseTermWarning`) or raises (``"error"``,
    `gaugedyn.NoiseTermError`). `record()` is the outcome `online_ode()` returns under
    ``"noise_check"``. ``clock`` (``time.process_time``) times the right-hand sides and the
    checks."""

    def __init__(self, ode: OnlineODE, t_end: float, mode: str):
        import time

        self.ode, self.mode, self.clock = ode, mode, time.process_time
        self.method = noise_method(ode.activation, ode.teacher_activation)
        self.points = [k * t_end / NOISE_CHECK.shares for k in range(NOISE_CHECK.shares + 1)]
        self.next, self.calls = 0, 0
        self.rhs_cpu, self.check_cpu = 0.0, 0.0
        self.checks: list[dict] = []
        self.warned = False

    def watched(self, f):
        """``f(t, y)`` observed (`observe()`) and timed (`spend()`) at every call."""

        def g(t, y):
            self.observe(t, y)
            c0 = self.clock()
            out = f(t, y)
            self.spend(self.clock() - c0)
            return out

        return g

    def spend(self, cpu: float) -> None:
        """Count ``cpu`` seconds of right-hand sides."""
        self.rhs_cpu += cpu

    def observe(self, t, y) -> None:
        """Count a right-hand side at ``(t, y)`` and check there when a scheduled time is due
        and the budget allows."""
        self.calls += 1
        if self.next < len(self.points) and t >= self.points[self.next]:
            self._maybe_check(float(t), y)

    def finish(self, t, y) -> None:
        """After the integration: the check of the final state ``(t, y)`` when its scheduled time
        was not reached and the budget allows."""
        if self.next < len(self.points):
            self._maybe_check(float(t), y)

    def _maybe_check(self, t: float, y) -> None:
        """`check()` at ``(t, y)`` if none ran yet or the mean check's cost fits the budget."""
        if self.checks:
            mean = self.check_cpu / len(self.checks)
            if self.check_cpu + mean > NOISE_CHECK.budget * self.rhs_cpu:
                return
        while self.next < len(self.points) and self.points[self.next] <= t:
            self.next += 1
        self.check(t, y)

    def check(self, t: float, y) -> float:
        """Check the noise term at ``(t, y)`` now (whatever the schedule and budget): record and
        return the relative disagreement with Monte Carlo; warn (once) or raise where it fails
        (`NoiseCheck`)."""
        c0 = self.clock()
        try:
            return self._check(t, y)
        finally:
            self.check_cpu += self.clock() - c0

    def _check(self, t: float, y) -> float:
        ode = self.ode
        a, Q, R = ode.unpack(np.array(y, dtype=np.float64))
        args = (ode.activation, ode.teacher_activation, a, Q, R, ode.b, ode.T)
        rule = quadrature_noise(*args)
        mc, se = monte_carlo_noise(*args, NOISE_CHECK.samples, NOISE_CHECK.seed)
        scale = float(np.abs(mc).max())
        diff = np.abs(rule - mc)
        if scale > 0:
            disagreement = float(diff.max()) / scale
            excess = float(np.maximum(diff - NOISE_CHECK.z * se, 0.0).max()) / scale
            error = float(se.max()) / scale
        else:
            disagreement = excess = 0.0 if float(diff.max()) == 0 else float("inf")
            error = 0.0
        passed = bool(excess <= NOISE_CHECK.tolerance)
        self.checks.append(
            {"t": float(t), "disagreement": disagreement, "standard_error": error, "passed": passed}
        )
        if passed:
            return disagreement
        name = activation_of(ode.activation).name
        message = (
            f"online ODE noise term of {name!r} at t={t:.6g}: the {self.method} rule "
            f"({self.rule()[0]} nodes{'' if self.method == 'sobol' else ' per axis'}) "
            "disagrees with Monte Carlo by "
            f"{disagreement:.2%} (relative; its standard error {error:.2%}), above the tolerance "
            f"{NOISE_CHECK.tolerance:.0%} (gaugedyn.training._online_ode.NOISE_CHECK): the "
            "noise-driven part of the trajectory is not accurate from about this time on. "
            "Use noise=False (the population flow, unaffected) or simulate online SGD "
            "(gaugedyn.training.train; docs/own-activation.md); noise_check='off' "
            "silences this check, noise_check='error' raises instead"
        )
        if self.mode == "error":
            raise NoiseTermError(message, name, t, disagreement)
        if not self.warned:
            self.warned = True
            warnings.warn(NoiseTermWarning(message, name, t, disagreement), stacklevel=2)
        return disagreement

    def rule(self) -> list[int]:
        """The checked rule's nodes: one entry, ``2**sobol_log2(activation)``, for
        ``"sobol"``, else `rule_sizes()`."""
        if self.method == "sobol":
            return [2 ** sobol_log2(self.ode.activation)]
        return rule_sizes()

    def record(self) -> dict:
        """The check's outcome: mode, the declaration (`NOISE_CHECK`), the rule's nodes, the
        right-hand sides seen and their CPU seconds, the checks' CPU seconds, each check's
        ``{"t", "disagreement", "standard_error", "passed"}``, the largest disagreement and
        whether every check passed."""
        worst = max((c["disagreement"] for c in self.checks), default=None)
        return {
            "mode": self.mode,
            "method": self.method,
            "tolerance": NOISE_CHECK.tolerance,
            "z": NOISE_CHECK.z,
            "samples": NOISE_CHECK.samples,
            "rule_nodes": self.rule(),
            "rhs": self.calls,
            "rhs_cpu": self.rhs_cpu,
            "check_cpu": self.check_cpu,
            "checks": list(self.checks),
            "max_disagreement": worst,
            "passed": None if not self.checks else all(c["passed"] for c in self.checks),
        }


ODE_METHODS = ("auto", "compiled", "reference")

NOISE_RULES = ("every_call", "once_per_time")
"""How the integration evaluates the noise term (`NoiseRule`; named in `online_ode()`'s
``"integration"`` record): at every right-hand side, or once per time point, the corrector
iterations at one time reusing the noise term of the first state evaluated there."""

NOISE_LAG = ("softplus",)
r"""The activations whose compiled online ODE LSODA integrates with the noise term once per time
point (`NoiseRule`, ``"once_per_time"``); every other one evaluates it at every right-hand
side. LSODA's calls at one time after the first are the iterations of one step's corrector:
the noise term held at the step's first (predicted) state there is a semi-implicit treatment
of it (the predictor's error is of the order of the step's local error, and the noise term's
Jacobian is already left out of the Newton matrix, `flow_jacobian()`), and the iteration then
solves an equation whose Jacobian it has. Measured (K = M = 4 from ``random_problem(50, ...)``,
eta 1, batch 1, t = 0 to 1000 at 101 record times, rtol 1e-8, atol 1e-10; the options weight
decay 0.1, lr2 0.5, label noise 0.3; 2026-12-08 00:51 to 00:54 UTC, load 0.7 to 1.3): softplus
plain, 1,271 noise terms in 1,271 right-hand sides (811 steps, 4.7 CPU s) became 828 in 1,271
(800 steps, 3.5 s); with the options 1,086 (594 steps, 4.1 s) became 646 in 1,127 (617 steps,
2.6 s); in three interleaved repeats (01:05 UTC, load 2.8 to 3.3) the median CPU time went
from 4.75 to 3.26 s (1.46x), with the options from 3.81 to 2.48 s (1.54x). The states are
not within 1e-8 of the unlagged run's (1.7e-8 of the largest
component at a record time), but the unlagged run is itself that far from the trajectory:
against a run at rtol 1e-11 (atol 1e-13, every call) the unlagged run is 1.3e-8 off (options
9.2e-9) and the lagged one 9.4e-9 (options 1.5e-8), the same tolerance-level error, so the
comparison that decides is with the tight run. The runtime check (`NoiseWatch`) observes
every call, the lagged ones included, but its budget (a share of the right-hand sides' CPU
time, `NOISE_CHECK`) now fits fewer checks: softplus's run was checked at t = 0, 230 and 651
against 0, 126, 252, 376 and 730 unlagged (options: 0, 139, 921 against 0, 125, 251, 377,
902; 00:58 UTC, load 3.2), every check passed. Not tried, by this count: a Jacobian of the
noise term (say differences of a cheap surrogate) for the Newton matrix; once per time point
the corrector iterations evaluate no noise term, and what remains is one per step attempt
(828 noise terms for 800 steps), which a Newton matrix does not set. Tried and dropped: tanh, whose steps grew
from 1,097 to 1,366 (options 542 to 768), CPU from 0.63 s to 0.76 (options 0.34 to 0.50),
and error against the tight run from 1.4e-8 to 5.6e-8 (options 2.0e-8 to 6.0e-8): its noise
term (about 0.2 ms) costs little beside the steps the lag adds, and they are added in LSODA's
stiff phase: held only from its first Jacobian on, tanh took 1,317 steps and 0.62 to 0.68 CPU
s against 1,097 and 0.60 to 0.63 (three interleaved repeats, 2026-12-08 01:03 UTC, load
4.2). ReLU and leaky ReLU (the orthant moments, 0.25 to 0.4 ms) not adopted either: lagged,
their noise terms fell (leaky ReLU 1,497 to 1,262, options 1,283 to 779; ReLU 1,539 to 1,084,
options 1,009 to 840) but their steps grew (972 to 1,195, 699 to 742, 976 to 1,023, 640 to
794), the CPU time fell from 0.22-0.37 s to 0.20-0.33 s in single runs (01:05 UTC, load 3.5),
both already under a second, and their runs at rtol 1e-11 to judge the error did not finish
in ten minutes (the kinks)."""


class NoiseRule:
    """The online ODE's right-hand side as LSODA calls it, counting its calls and noise terms
    (the rule of `NOISE_RULES`: ``"every_call"`` where ``flow`` is ``None``, else
    ``"once_per_time"``); ``noise`` says whether ``f`` has a noise term. Every call: ``f(t,
    y)`` is the whole right-hand side (`compiled_rhs()`). Once per time: ``f(t, y)`` returns
    the whole right-hand side and its noise part apart (`compiled_rhs()` with ``split``) and
    ``flow(t, y)`` is the same without the noise term; the first call at a time ``t`` returns
    the whole right-hand side, a later call at that ``t`` ``flow(t, y)`` plus the noise part
    of the first call there (one evaluation of the first state: its flow is not evaluated
    again, as it was when the part was the whole less the flow, about 440 flows a softplus run
    to t = 1000). A caller asking for one right-hand side of a state asks `compiled_rhs()`,
    never this: the lag belongs to the integration."""

    def __init__(self, f, flow=None, noise: bool = True):
        self.f, self.flow, self.noise = f, flow, noise
        self.rule = NOISE_RULES[0] if flow is None else NOISE_RULES[1]
        self.calls, self.noise_terms = 0, 0
        self._t: float | None = None
        self._part = None

    def __call__(self, t, y):
        self.calls += 1
        if self.flow is None:
            self.noise_terms += int(self.noise)
            return self.f(t, y)
        if t == self._t and self._part is not None:
            return self.flow(t, y) + self._part
        out, self._part = self.f(t, y)
        self._t = t
        self.noise_terms += int(self.noise)
        return out

    def record(self, integrator: str) -> dict:
        """``{"integrator", "noise_rule", "rhs", "noise_terms"}``: what `online_ode()` returns
        under ``"integration"``."""
        return {
            "integrator": integrator,
            "noise_rule": self.rule,
            "rhs": self.calls,
            "noise_terms": self.noise_terms,
        }


def flow_jacobian(flow):
    r"""``J(t, y)``: the forward-difference Jacobian of ``flow`` (the online ODE's right-hand side
    without its noise term, `compiled_rhs()` with ``noise=False``), the Jacobian `online_ode()`
    gives LSODA for an activation whose noise term is costly (every compiled one but erf).

    LSODA uses its Jacobian only in the Newton iteration of its implicit steps; the accuracy of
    each step is set by its error test on the whole right-hand side, so a Jacobian that leaves
    out the $\eta^2$ noise term changes how the iteration converges, not what it converges to.
    Differencing the whole right-hand side instead costs one noise term per state component
    ($K + K^2 + KM$ of them) at every Jacobian: at K = M = 4 with ReLU (an orthant noise term,
    0.25 to 0.4 ms) those differences were 58% of the right-hand sides to t = 1000 (3,209 with
    52 Jacobians at rtol 1e-8), and with the flow's Jacobian the run takes 1,409 right-hand sides
    and 0.56 CPU s against 1.27 s, its outputs within 2e-8 of the other's (2026-12-07).
    `online_ode()` runs the same differences compiled (`compiled_flow_jacobian()`); this is
    their reference."""
    step = np.sqrt(np.finfo(np.float64).eps)

    def jac(t, y):
        y = np.array(y, dtype=np.float64)
        base = flow(t, y)
        J = np.empty((base.size, y.size))
        for j in range(y.size):
            h = step * max(abs(y[j]), 1e-5)
            keep = y[j]
            y[j] = keep + h
            h = y[j] - keep
            J[:, j] = (flow(t, y) - base) / h
            y[j] = keep
        return J

    return jac


def _check_args(problem, eta, batch, noise, rtol, atol, times):
    """``online_ode``'s arguments checked against the declarations of the trainer's (``lr``,
    ``batch``) and the solver's (``rtol``, ``atol``) settings, or InputError."""
    if not isinstance(problem, Problem):
        raise InputError(
            f"problem={type(problem).__name__} is not allowed; allowed: a gaugedyn.theory.Problem"
        )
    if not isinstance(noise, bool | np.bool_):
        raise InputError(f"noise={noise!r} is not allowed; allowed: True or False")
    eta, batch = PARAMS["lr"].accept(eta, "eta"), PARAMS["batch"].accept(batch)
    rtol, atol = THEORY["rtol"].accept(rtol), THEORY["atol"].accept(atol)
    try:
        t = np.asarray(times, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            "times is not allowed; allowed: an increasing 1-D array of times >= 0"
        ) from None
    if (
        t.ndim != 1
        or t.size == 0
        or not np.all(np.isfinite(t))
        or t[0] < 0
        or np.any(np.diff(t) <= 0)
    ):
        raise InputError(
            f"times (shape {t.shape}) is not allowed; allowed: a non-empty, "
            "strictly increasing 1-D array of finite times >= 0"
        )
    return eta, batch, rtol, atol, t


def _integrate_compiled(problem, act, b, T, y0, times, run, rtol, atol, options, watch=None):
    """LSODA on the compiled right-hand side of `online_ode` from ``t = 0`` to ``times``: ``run`` is ``(eta, batch, noise)``, ``options`` ``(weight_decay, lr2,
    label_noise)``. For every activation but erf LSODA gets the Jacobian of the flow without
    the noise term (`compiled_flow_jacobian()`: `flow_jacobian()`'s differences, compiled),
    and the noise term of an activation of `NOISE_LAG` once per time point (`NoiseRule`);
    falling back to LSODA's own differences of the whole right-hand side, evaluated whole at
    every call, where that run fails or returns non-finite states. ``watch`` (a
    `NoiseWatch` or ``None``) observes every right-hand side. Returns the states at
    ``times`` and the ``"integration"`` record (`NoiseRule.record()`: the rule of the run
    whose states are returned, the calls and noise terms of every run)."""
    from scipy.integrate import odeint

    eta, batch, noise = run
    weight_decay, lr2, label_noise = options

    def rhs(with_noise: bool, sigma: float, split: bool = False):
        return compiled_rhs(
            problem.K,
            problem.M,
            b,
            T,
            float(eta),
            int(batch),
            with_noise,
            weight_decay=float(weight_decay),
            lr2=float(lr2),
            label_noise=sigma,
            activation=act,
            split=split,
        )

    grid = times if times[0] == 0.0 else np.concatenate([[0.0], times])
    jac = None
    if noise and act.name != "erf":
        jac = compiled_flow_jacobian(
            act, problem.K, problem.M, b, T, eta, float(weight_decay), float(lr2)
        )
    lag = jac is not None and act.name in NOISE_LAG
    sigma = float(label_noise)
    if lag:  # the first call at a time gives its noise part apart (NoiseRule)
        rule = NoiseRule(rhs(noise, sigma, split=True), rhs(False, sigma), noise)
    else:
        rule = NoiseRule(rhs(noise, sigma), None, noise)

    def lsoda(f, dfun):
        return odeint(
            f if watch is None else watch.watched(f),
            y0,
            grid,
            Dfun=dfun,
            tfirst=True,
            rtol=rtol,
            atol=atol,
            mxstep=1_000_000,
            full_output=True,
        )

    Y, info = lsoda(rule, jac)
    record = rule.record("LSODA")
    if jac is not None and (
        info["message"] != "Integration successful." or not np.all(np.isfinite(Y))
    ):
        # the Newton iteration failed on the flow's Jacobian: LSODA's own differences of
        # the whole right-hand side, evaluated whole at every call
        whole = NoiseRule(rhs(noise, sigma), None, noise)
        Y, info = lsoda(whole, None)
        again = whole.record("LSODA")
        record = again | {k: record[k] + again[k] for k in ("rhs", "noise_terms")}
    if info["message"] != "Integration successful.":
        raise RuntimeError(f"online ODE failed: {info['message']}")
    return (Y if times[0] == 0.0 else Y[1:]), record


def online_ode(
    problem: Problem,
    eta: float,
    times,
    batch: int = 1,
    noise: bool = True,
    rtol: float = 1e-9,
    atol: float = 1e-11,
    method: str = "auto",
    *,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    label_noise: float = 0.0,
    noise_check: str = "warn",
) -> dict:
    r"""Solve the online ODE from ``problem``'s order parameters at ``times`` ($t = \text{steps} / D$).

    ``method="compiled"`` (the default under ``"auto"`` for every activation with a compiled
    code, with or without the classical options) integrates a numba-compiled right-hand side
    (`compiled_rhs()`: erf's closed forms in the classical form; for the others the reference's
    own rules, compiled) with LSODA
    (``scipy.integrate.odeint``; for every activation but erf given the Jacobian of the flow
    without the noise term, `flow_jacobian()` compiled (`compiled_flow_jacobian()`), falling
    back to LSODA's own differences where
    its Newton iteration fails); ``"reference"`` integrates `OnlineODE` (numpy, through
    the population velocity) with DOP853. The two right-hand sides agree to round-off (tested).
    The noise term's method is `noise_method()`'s: exact orthant moments for the piecewise-linear
    activations (ReLU, leaky ReLU, absolute value; a fraction of a millisecond per right-hand
    side at ``K = M = 4``); for tanh one scrambled-Sobol rule of $2^8$ nodes over all the
    fields with an erf mixture as control variate (`sobol_expectation()`: within about 6e-3
    of a high-precision reference at every state of a run to t = 1000, about 0.3 ms per
    compiled right-hand side at ``K = M = 4``, a run to t = 1000 at rtol 1e-8 under a CPU
    second); for softplus the same rule at $2^{12}$ nodes with a mixture of Gaussian-smoothed
    ReLUs as control, its noise term exact by orthant moments (`RELU_MIXTURES`; about 1.1 ms
    per compiled right-hand side at ``K = M = 4``, 0.5 of them the control's exact term),
    evaluated once per time point of the integration, LSODA's corrector iterations there
    reusing it (`NOISE_LAG`, `NoiseRule`; the record's ``"integration"``); for
    another smooth activation whose fields
    have rank above 4 it is hundreds of four-point Gauss-Hermite integrals of $10^4$ nodes each
    (compiled, about 0.07 CPU s per right-hand side there; the reference: seconds), whose
    error is measured, not bounded (module docstring).
    Such a noise term is checked while the run integrates
    (``noise_check``, `NOISE_CHECK`): at the start and at each eighth of the horizon (within
    a budget of 10% of the right-hand sides' CPU time) it is compared with a Monte Carlo
    estimate, and a disagreement above 10% of the term (beyond four standard errors) warns once
    (`gaugedyn.NoiseTermWarning`) or raises; the closed forms (erf, linear) and the orthant
    moments are exact and never checked.
    The classical options are those of ``TrainConfig``. The teacher's own activation is
    ``problem.teacher_activation`` (with a teacher of its own, ``"auto"`` runs the reference
    right-hand side; the options stay on the compiled path).

    Parameters
    ----------
    problem : Problem
        The teacher-student problem; its order parameters at $t = 0$ start the integration.
    eta : float
        The step size $\eta$ (the step is $\eta / D$), in the trainer's ``lr`` range.
    times : array_like
        Record times: a non-empty, strictly increasing 1-D array of finite times $\ge 0$.
        ``[0.0]`` alone gives the start.
    batch : int
        Samples per step $B$: the noise term enters as $(\eta^2 / B) N$.
    noise : bool
        Include the gradient-noise term (``False``: the population flow alone).
    rtol : float
        The solver's relative tolerance.
    atol : float
        The solver's absolute tolerance.
    method : str
        ``"auto"``, ``"compiled"`` (an activation with a compiled code and its own teacher
        activation only) or ``"reference"``.
    weight_decay : float
        $\lambda \ge 0$: the step $-(\eta / D)(\nabla + \lambda \theta)$ on both layers, so
        $\dot Q$ gains $-2 \eta \lambda Q$ and $\dot R$ gains $-\eta \lambda R$.
    lr2 : float
        The second layer's rate relative to the first, $\ge 0$ (0 freezes $a$).
    label_noise : float
        $\sigma \ge 0$ in $y = f^*(x) + \sigma \xi$: the noise term gains
        $\sigma^2 a_i a_j\, \mathbb{E}[g'(\lambda_i)\, g'(\lambda_j)]$.
    noise_check : str
        One of ``NOISE_CHECKS``: for a noise term by quadrature (`noise_method()`), ``"warn"``
        warns once where it disagrees with Monte Carlo by more than the tolerance,
        ``"error"`` raises `gaugedyn.NoiseTermError` there (at once, mid-run), ``"off"``
        skips the check (`NoiseWatch`, `NOISE_CHECK`).

    Returns
    -------
    dict
        ``{"t": (T,), "a": (T, K), "Q": (T, K, K), "R": (T, K, M), "noise_check": dict,
        "integration": dict}``;
        ``"noise_check"`` is the check's outcome (`NoiseWatch.record()`: each check's time and
        relative disagreement, the largest, ``"passed"``), or, where nothing was checked,
        ``{"mode", "method", "checks": [], "passed": None}`` with ``method`` the noise term's
        (``None`` without it). ``"integration"`` is ``{"integrator", "noise_rule", "rhs",
        "noise_terms"}`` (`NoiseRule.record()`): ``"LSODA"`` (compiled) or ``"DOP853"``
        (reference), the rule of `NOISE_RULES` by which the noise term entered the right-hand
        sides (``"once_per_time"`` for the compiled activations of `NOISE_LAG`), the
        right-hand sides the integrator asked for and the noise terms evaluated among them
        (``None``, 0, 0 where only the start was asked for).

    Raises
    ------
    InputError
        When ``problem`` is not a ``Problem``, ``method`` is not one of ``ODE_METHODS``,
        ``method="compiled"`` is asked for an activation without a compiled code or a teacher
        activation of its own,
        ``noise`` is not a bool, ``noise_check`` is not one of ``NOISE_CHECKS``, or ``eta``,
        ``batch``, ``rtol``, ``atol``, ``times`` or a classical option is outside its allowed
        range.
    NoiseTermError
        With ``noise_check="error"``, at the first check above the tolerance.
    RuntimeError
        When the integrator fails.

    Warns
    -----
    NoiseTermWarning
        With ``noise_check="warn"``, once, at the first check above the tolerance.
    """
    from scipy.integrate import solve_ivp

    _check_options(method, noise_check, weight_decay, lr2, label_noise)
    eta, batch, rtol, atol, times = _check_args(problem, eta, batch, noise, rtol, atol, times)
    a0, Q0, R0, b, T = problem.order_parameters()
    rhs = OnlineODE(
        problem.K,
        problem.M,
        b,
        T,
        problem.activation,
        float(eta),
        int(batch),
        noise,
        float(weight_decay),
        float(lr2),
        float(label_noise),
        problem.teacher_activation,
    )
    y0 = np.concatenate([a0, Q0.ravel(), R0.ravel()])
    same_teacher = problem.teacher.name == activation_of(problem.activation).name
    act = activation_of(problem.activation)
    if method == "auto":
        method = "compiled" if act.compiled and same_teacher else "reference"
    kind = noise_method(act, problem.teacher_activation) if noise else None
    watch = (
        NoiseWatch(rhs, float(times[-1]), noise_check)
        if kind in ("quadrature", "sobol") and noise_check != "off"
        else None
    )
    unchecked: dict = {"mode": noise_check, "method": kind, "checks": [], "passed": None}
    if method == "compiled":
        _check_compiled(act, same_teacher)
    if times[-1] == 0.0:  # only the start asked for: nothing to integrate or check
        Y, t_out, watch = y0[None, :], times, None
        integration = {"integrator": None, "noise_rule": None, "rhs": 0, "noise_terms": 0}
    elif method == "compiled":
        options = (weight_decay, lr2, label_noise)
        Y, integration = _integrate_compiled(
            problem, act, b, T, y0, times, (eta, batch, noise), rtol, atol, options, watch
        )
        t_out = times
    else:
        counted = NoiseRule(rhs, None, noise)
        sol = solve_ivp(
            counted if watch is None else watch.watched(counted),
            (0.0, float(times[-1])),
            y0,
            method="DOP853",
            t_eval=times,
            rtol=rtol,
            atol=atol,
        )
        if not sol.success:
            raise RuntimeError(f"online ODE failed: {sol.message}")
        Y, t_out = sol.y.T, sol.t
        integration = counted.record("DOP853")
    if watch is not None:
        watch.finish(t_out[-1], Y[-1])
    a, Q, R = rhs.unpack(Y)
    record = unchecked if watch is None else watch.record()
    return {
        "t": t_out,
        "a": a,
        "Q": Q,
        "R": R,
        "noise_check": record,
        "integration": integration,
    }


def _check_options(method, noise_check, weight_decay, lr2, label_noise) -> None:
    """`online_ode()`'s ``method``, ``noise_check`` and classical options, each checked: one
    `InputError` naming the value and what is allowed."""
    if method not in ODE_METHODS:
        raise InputError(f"method={method!r} is not allowed; allowed: {', '.join(ODE_METHODS)}")
    if not isinstance(noise_check, str) or noise_check not in NOISE_CHECKS:
        raise InputError(
            f"noise_check={noise_check!r} is not allowed; allowed: {', '.join(NOISE_CHECKS)}"
        )
    for name, v in (("weight_decay", weight_decay), ("lr2", lr2), ("label_noise", label_noise)):
        if not (isinstance(v, int | float) and np.isfinite(v) and v >= 0):
            raise InputError(f"{name}={v!r} is not allowed; allowed: a finite number >= 0")


def _check_compiled(act, same_teacher: bool) -> None:
    """``method="compiled"`` needs the student's activation for the teacher and a compiled
    code for it: one `InputError` saying to use ``method="reference"`` otherwise."""
    if not same_teacher:
        raise InputError(
            "method='compiled' integrates the online ODE of one activation; a teacher "
            "activation of its own runs with method='reference'"
        )
    if not act.compiled:
        raise InputError(
            f"method='compiled' integrates the online ODE of an activation with a compiled "
            f"code, not {act.name!r}; use method='reference'"
        )
