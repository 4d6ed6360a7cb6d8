"""A prototype, not the package's rule: the smooth activations' noise term integrated over the
fields directly by randomised quasi-Monte Carlo, against Monte Carlo.

The package's noise term at fields of rank above 4 is the sum over ``p, q`` of ``c_p c_q`` times
four-point integrals (``gaugedyn.training._online_ode.noise_term``); once the students fit the
teacher the sum cancels and each integral's rule error survives it (tanh: off by 17 times the
term at a state of the noise-free flow at t = 1000). Integrating
``E_ik = E[g'(u_i) g'(u_k) e^2]`` over the fields ``u = A z`` directly (``A`` the eigen factor of
their Gram matrix) with ``e`` formed point by point cancels nothing. This benchmark evaluates it
with a scrambled Sobol sequence of ``2^m`` points (``scipy.stats.qmc.Sobol``, seeds 0 and 1,
``z = Phi^{-1}(point)``) for each ``m`` of ``--log2``, at the states the noise-free flow of
``bench_online_noise_accuracy.py``'s problem (K = M = 4) reaches at ``--times``, and prints, per
state, Monte Carlo's standard error (``--samples`` draws, that benchmark's ``monte_carlo``), the
package's rule and each QMC estimate against Monte Carlo (``max |E - E_MC| / max |E_MC|`` and
the largest ``|E - E_MC|`` in standard errors), the two seeds' difference (the QMC error's
size) and its CPU ms (numpy, not compiled).

    .venv/bin/python benchmarks/bench_noise_qmc.py [--activations tanh,softplus]
        [--times 0,10,100,300,1000] [--log2 16,18] [--samples 1000000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm, qmc

from gaugedyn.theory import activation_of, on_numpy, random_problem
from gaugedyn.training import online_ode
from gaugedyn.training._online_ode import quadrature_noise


def qmc_noise(name: str, a, C, b, m: int, seed: int = 0) -> np.ndarray:
    """``E`` (``(K, K)``) by ``2^m`` scrambled Sobol points on the eigen factor of ``C``."""
    act = activation_of(name)
    g, gp = on_numpy(act.function), on_numpy(act.derivative)
    lam, U = np.linalg.eigh(C)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    K = a.shape[0]
    Z = norm.ppf(qmc.Sobol(d=C.shape[0], scramble=True, seed=seed).random_base2(m))
    X = Z @ A.T
    e = g(X[:, :K]) @ a - g(X[:, K:]) @ b
    G = gp(X[:, :K])
    return (G * (e * e)[:, None]).T @ G / Z.shape[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--activations", default="tanh,softplus")
    p.add_argument("--times", default="0,10,100,300,1000")
    p.add_argument("--log2", default="16,18")
    p.add_argument("--samples", type=int, default=1_000_000)
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from _record import describe_machine
    from bench_online_noise_accuracy import monte_carlo

    print(describe_machine(), flush=True)
    ts = np.array([float(x) for x in args.times.split(",")])
    for name in args.activations.split(","):
        problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
        _, _, _, b, T = problem.order_parameters()
        sol = online_ode(problem, 1.0, ts, noise=False)
        for i, t in enumerate(ts):
            a, Q, R = sol["a"][i], sol["Q"][i], sol["R"][i]
            C = np.block([[Q, R], [R.T, T]])
            C = (C + C.T) / 2
            mc, se = monte_carlo(name, a, C, b, args.samples)
            scale = float(np.abs(mc).max())
            rule = quadrature_noise(name, None, a, Q, R, b, T) / np.outer(a, a)
            up = np.triu_indices(a.shape[0])
            parts = [f"rule {np.abs(rule - mc)[up].max() / scale:.1e}"]
            for m in (int(x) for x in args.log2.split(",")):
                c0 = time.process_time()
                E = qmc_noise(name, a, C, b, m)
                cpu = time.process_time() - c0
                other = qmc_noise(name, a, C, b, m, seed=1)
                parts.append(
                    f"2^{m}: {np.abs(E - mc).max() / scale:.1e} "
                    f"({(np.abs(E - mc) / se).max():.1f} SE; seeds differ "
                    f"{np.abs(E - other).max() / scale:.1e}) {cpu * 1e3:.0f} ms"
                )
            print(
                f"{name} t = {t:g}: Monte Carlo SE {se.max() / scale:.1e}; " + "; ".join(parts),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
