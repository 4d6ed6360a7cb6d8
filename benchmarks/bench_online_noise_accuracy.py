"""The smooth activations' online-ODE noise term: its error against its cost, by node count.

At K = M = 4 with fields of full rank 8 (``random_problem(50, 4, 4, default_rng(0), ...)``, the
problem of ``bench_online_ode.py``) the four-point rule evaluates the noise term
``E_ik = E[g'(u_i) g'(u_k) e^2]`` as the sum of four-point integrals, each by the tensor
Gauss-Hermite rule on the eigen factor of its own ``4 x 4`` covariance
(`gaugedyn.training._ode_kernels.noise_expectation`, ``FOUR_POINT_NODES`` per axis): the compiled
right-hand side's rule for softplus, and tanh's before its scrambled-Sobol rule
(``bench_noise_qmc.py`` measures the two rules side by side). This
benchmark measures, for each activation and at the states the noise-free compiled flow reaches at
``--times`` (default 0, 10, 100, 1000; the states the run passes through, not the noisy run's
own), the noise term with ``n`` nodes per axis for each ``n`` of ``--nodes`` against the same
rule with ``--reference`` nodes (default 32):

- the error, ``max |E_n - E_ref| / max |E_ref|``,
- the reference's own error estimate, the same with ``E_ref`` against ``--reference - 8`` nodes
  (the rule converges from below for tanh, so it bounds nothing; it says how far the reference
  is from settled),
- each rule against Monte Carlo (``--samples``, default 4 million draws of the fields, ``e``
  formed draw by draw so that nothing cancels): the largest ``|E_n - E_MC|`` over the standard
  error of its entry, and the diagonals of Monte Carlo and of the rules with 10 nodes (the
  default) and with the reference's,
- the CPU milliseconds of one noise term (median of ``--rounds``; one evaluation for the
  reference), and the extrapolated CPU seconds of a trajectory to t = 1000 of ``--rhs`` whole
  right-hand sides (default 1,500: the ReLU runs' count at rtol 1e-8).

    .venv/bin/python benchmarks/bench_online_noise_accuracy.py [--nodes 4,6,8,10,12,16]
        [--reference 32] [--times 0,10,100,1000] [--activations tanh,softplus] [--rounds 3]
        [--samples 4000000] [--json benchmarks/results/online_noise_accuracy.json [--stop-after S]]

It prints the machine (CPU model, cores, load); ``--json`` writes a benchmark record
(``benchmarks/_record.py``), each finished state stored at once in ``PATH.partial``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.special import roots_hermitenorm

from gaugedyn.theory import random_problem
from gaugedyn.training import _online_ode, online_ode


def grids(n: int):
    """The kernel's rule table with ``n`` nodes per axis for the four-point row (row 0) and the
    package's ``DIRECT_NODES`` for the direct rows (unused at full rank)."""
    sizes = [n, *(_online_ode.DIRECT_NODES[r] for r in range(1, 5))]
    width = max(sizes)
    z, w = np.zeros((5, width)), np.zeros((5, width))
    for r, m in enumerate(sizes):
        zz, ww = roots_hermitenorm(m)
        z[r, :m], w[r, :m] = zz, ww / np.sqrt(2.0 * np.pi)
    return z, w, np.asarray(sizes, dtype=np.int64)


def noise(name: str, a, C, b, n: int):
    """``E`` (upper triangle) of the compiled kernel with ``n`` nodes per four-point axis."""
    from gaugedyn.theory import activation_of
    from gaugedyn.training import _ode_kernels

    act = activation_of(name)
    K = a.shape[0]
    c = np.concatenate([a, -b])
    E = np.zeros((K, K))
    z, w, sizes = grids(n)
    _ode_kernels.noise_expectation(
        int(act.code),
        False,
        0,
        np.zeros((3, 0)),
        a,
        b,
        C,
        c,
        z,
        w,
        sizes,
        np.zeros((0, 8)),
        np.zeros((2, 0)),
        np.zeros((0, 1, 4)),
        E,
    )
    return E


def monte_carlo(name: str, a, C, b, samples: int, seed: int = 1):
    """``E`` by Monte Carlo (``samples`` draws of the fields, in blocks): the mean and its
    standard error, entry by entry (``e`` is formed sample by sample, so nothing cancels)."""
    from gaugedyn.theory import activation_of, on_numpy

    act = activation_of(name)
    g, gp = on_numpy(act.function), on_numpy(act.derivative)
    lam, U = np.linalg.eigh(C)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    rng = np.random.default_rng(seed)
    K = a.shape[0]
    s1, s2, n = np.zeros((K, K)), np.zeros((K, K)), 0
    block = 200_000
    while n < samples:
        X = rng.standard_normal((block, C.shape[0])) @ A.T
        e = g(X[:, :K]) @ a - g(X[:, K:]) @ b
        G = gp(X[:, :K])
        Y = G[:, :, None] * G[:, None, :] * (e * e)[:, None, None]
        s1 += Y.sum(0)
        s2 += (Y * Y).sum(0)
        n += block
    mean = s1 / n
    return mean, np.sqrt(np.maximum(s2 / n - mean * mean, 0.0) / n)


def state_unit(
    name: str, t: float, nodes, reference: int, rounds: int, samples: int = 4_000_000
) -> dict:
    """One state: the errors and costs of each node count, and each rule against Monte Carlo
    (module docstring)."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    a, Q, R, b, T = problem.order_parameters()
    if t > 0:
        sol = online_ode(problem, 1.0, np.array([0.0, t]), noise=False)
        a, Q, R = sol["a"][-1], sol["Q"][-1], sol["R"][-1]
    C = np.ascontiguousarray(np.block([[Q, R], [R.T, T]]))
    noise(name, a, C, b, 4)  # compile outside the timing
    c0 = time.process_time()
    ref = noise(name, a, C, b, reference)
    ref_cpu = time.process_time() - c0
    coarse = noise(name, a, C, b, reference - 8)
    scale = float(np.abs(ref).max())
    mc, se = monte_carlo(name, a, C, b, samples)
    upper = np.triu_indices(a.shape[0])

    def z_score(E):
        return float((np.abs(E - mc) / se)[upper].max())

    rows = []
    for n in nodes:
        cpus = []
        for _ in range(rounds):
            c0 = time.process_time()
            E = noise(name, a, C, b, n)
            cpus.append(time.process_time() - c0)
        rows.append(
            {
                "nodes": n,
                "error": float(np.abs(E - ref).max()) / scale,
                "ms": 1e3 * statistics.median(cpus),
                "mc_z": z_score(E),
            }
        )
    return {
        "t": t,
        "eigenvalues": np.linalg.eigvalsh(C).tolist(),
        "reference_ms": 1e3 * ref_cpu,
        "reference_settled": float(np.abs(ref - coarse).max()) / scale,
        "reference_mc_z": z_score(ref),
        "mc_samples": samples,
        "mc_diag": np.diag(mc).tolist(),
        "mc_diag_se": np.diag(se).tolist(),
        "rule_diag": {str(n): np.diag(noise(name, a, C, b, n)).tolist() for n in (10, reference)},
        "rows": rows,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="4,6,8,10,12,16")
    p.add_argument("--reference", type=int, default=32)
    p.add_argument("--times", default="0,10,100,1000")
    p.add_argument("--activations", default="tanh,softplus")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rhs", type=int, default=1500)
    p.add_argument("--samples", type=int, default=4_000_000)
    p.add_argument("--stop-after", type=float, default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _record import Progress, describe_machine

    print(describe_machine())
    nodes = [int(x) for x in args.nodes.split(",") if x]
    ts = [float(x) for x in args.times.split(",") if x]
    names = [x for x in args.activations.split(",") if x]
    config = {
        "nodes": nodes,
        "reference": args.reference,
        "times": ts,
        "rounds": args.rounds,
        "samples": args.samples,
    }
    progress = (
        Progress(args.json, "bench_online_noise_accuracy.py", config, argv, args.stop_after)
        if args.json
        else None
    )
    out: dict = {}
    for name in names:
        out[name] = []
        for t in ts:
            key = f"{name}/t={t:g}"

            def compute(name=name, t=t):
                return state_unit(name, t, nodes, args.reference, args.rounds, args.samples)

            u = progress.unit(key, compute) if progress else compute()
            out[name].append(u)
            print(
                f"{name:9s} t = {t:6g}: reference ({args.reference} nodes, "
                f"{u['reference_ms']:.0f} ms) settled to {u['reference_settled']:.1e}, "
                f"{u['reference_mc_z']:.1f} SE from Monte Carlo; "
                + ", ".join(
                    f"n={r['nodes']}: {r['error']:.1e} ({r['mc_z']:.0f} SE) in {r['ms']:.2f} ms "
                    f"({args.rhs * r['ms'] / 1e3:.1f} s per run)"
                    for r in u["rows"]
                ),
                flush=True,
            )
    if progress:
        progress.finish(
            {"K": 4, "M": 4, "reference": args.reference, "rhs": args.rhs, "activations": out}
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
