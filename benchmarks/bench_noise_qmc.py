"""The smooth activations' online-ODE noise term: the package's scrambled-Sobol rule against the
four-point rule, both against a high-precision reference, at the states of a run.

At K = M = 4 (``random_problem(50, 4, 4, default_rng(0), ...)``, the problem of
``bench_online_ode.py``), for each activation of ``--activations`` and at the states the
noise-free compiled flow reaches at ``--times`` (rtol 1e-8), this measures
``E_ik = E[g'(u_i) g'(u_k) e^2]`` by

- the reference: randomised quasi-Monte Carlo, ``--seeds`` independent scramblings of a Sobol
  sequence of ``2^--log2`` points each (``scipy.stats.qmc.Sobol``, ``z = Phi^{-1}(point)`` on the
  eigen factor of the fields' Gram matrix, the largest eigenvalue on the first coordinate:
  there its spread is a quarter of that on the symmetric root; ``e`` formed point by point so
  that nothing cancels), each of the difference between the integrand and that of the
  activation's control mixture (``ERF_MIXTURES``: tanh's erf mixture; ``RELU_MIXTURES``:
  softplus's Gaussian-smoothed ReLUs), plus the mixture's exact term
  (`gaugedyn.training._online_ode.control_noise`): unbiased whatever the mixture; its mean, and
  its standard error from the scramblings' spread. The same scramblings without the control
  (plain randomised QMC, unbiased on its own) check it: their distance from the reference in
  their joint standard errors (``plain_z``);
- Monte Carlo (``--samples`` draws, `gaugedyn.training._online_ode.monte_carlo_noise`), its
  standard error, and its distance from the reference in its own standard errors (a second,
  independent check of the reference);
- the package's rule (``"sobol"``: `gaugedyn.training._online_ode.sobol_expectation`,
  ``2^SOBOL_LOG2[name]`` scrambled-Sobol nodes with the mixture as control variate), the same
  rule without the control at ``2^--plain-log2`` nodes (``"sobol_plain"``: the rule before the
  control, 2^14 nodes) and the four-point rule (``"quadrature"``: the compiled kernel's sum
  of four-point Gauss-Hermite integrals, ``FOUR_POINT_NODES`` per axis, or its direct rule at
  rank 4 or less), each compiled: the error ``max |E - E_ref| / max |E_ref|`` and the CPU
  milliseconds of one evaluation (median of ``--rounds``).

The row of the rule `noise_method()` picks is marked: the choice the package declares
(``SOBOL_ACTIVATIONS``) is the one this measures as the more accurate.

    .venv/bin/python benchmarks/bench_noise_qmc.py [--activations tanh,softplus]
        [--times 0,10,100,300,1000] [--log2 19] [--seeds 8] [--samples 1000000] [--rounds 3]
        [--plain-log2 14]
        [--json benchmarks/results/noise_qmc.json [--stop-after S]]

It prints the machine (CPU model, cores, load); ``--json`` writes a benchmark record
(``benchmarks/_record.py``), each finished state stored at once in ``PATH.partial``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm, qmc

from gaugedyn.theory import activation_of, on_numpy, random_problem
from gaugedyn.training import _ode_kernels, _online_ode, online_ode


def rqmc(name: str, a, C, b, log2: int, seed: int, control) -> np.ndarray:
    """``E`` (``(K, K)``) by ``2^log2`` points of one scrambling (``seed``), in blocks, less the
    mixture ``control`` network's integrand at the same points (``(3, 0)``: none)."""
    act = activation_of(name)
    g, gp = on_numpy(act.function), on_numpy(act.derivative)
    lam, U = np.linalg.eigh(C)  # principal axes, the largest first: the reference's best
    A = (U * np.sqrt(np.maximum(lam, 0.0)))[:, ::-1]
    K, block = a.shape[0], min(log2, 16)
    sob = qmc.Sobol(d=C.shape[0], scramble=True, seed=1000 + seed)
    total = np.zeros((K, K))
    for _ in range(2 ** (log2 - block)):
        X = norm.ppf(sob.random(2**block)) @ A.T
        e = g(X[:, :K]) @ a - g(X[:, K:]) @ b
        G = gp(X[:, :K])
        total += (G * (e * e)[:, None]).T @ G
        if control.shape[1]:
            H, Hp = _online_ode.mixture_values(control, X)
            Hp = Hp[:, :K]
            eh = H[:, :K] @ a - H[:, K:] @ b
            total -= (Hp * (eh * eh)[:, None]).T @ Hp
    return total / 2**log2


def compiled(name: str, method: str, a, C, b, control=None) -> np.ndarray:
    """``E`` by the compiled kernel's ``method`` (``"sobol"`` or ``"quadrature"``), whole; the
    Sobol rule's control variate ``control`` (``None``: the package's, `rule_control`)."""
    K = a.shape[0]
    E = np.zeros((K, K))
    z, w, n = _online_ode._grids(_online_ode.rule_sizes())
    own = control is None
    if own:
        control = _online_ode.rule_control(method, name)
    _ode_kernels.noise_expectation(
        int(activation_of(name).code),
        False,
        _online_ode.NOISE_METHODS.index(method),
        np.zeros((3, 0)),
        a,
        b,
        np.ascontiguousarray(C),
        np.concatenate([a, -b]),
        z,
        w,
        n,
        _online_ode.rule_nodes(method, C.shape[0], name),
        control,
        _online_ode.field_table(method, name) if own else np.zeros((0, 1, 4)),
        E,
    )
    return np.triu(E) + np.triu(E, 1).T


def plain_rule(name: str, a, C, b, log2: int) -> np.ndarray:
    """``E`` by the scrambled-Sobol rule without its control variate at ``2^log2`` nodes."""
    keep = _online_ode.SOBOL_LOG2
    _online_ode.SOBOL_LOG2 = keep | {name: log2}
    try:
        return compiled(name, "sobol", a, C, b, np.zeros((3, 0)))
    finally:
        _online_ode.SOBOL_LOG2 = keep


def state_unit(name: str, t: float, state, args) -> dict:
    """One state's figures (module docstring)."""
    a, Q, R, b, T = state
    C = np.block([[Q, R], [R.T, T]])
    C = (C + C.T) / 2
    control = _online_ode.rule_control("sobol", name)
    closed = _online_ode.control_noise(control, a, b, C) if control.size else 0.0
    runs = np.array([rqmc(name, a, C, b, args.log2, s, control) for s in range(args.seeds)])
    runs = runs + closed
    ref, ref_se = runs.mean(axis=0), runs.std(axis=0, ddof=1) / np.sqrt(args.seeds)
    scale = float(np.abs(ref).max())
    plain = np.array(
        [rqmc(name, a, C, b, args.log2, s, np.zeros((3, 0))) for s in range(args.seeds)]
    )
    plain_se = plain.std(axis=0, ddof=1) / np.sqrt(args.seeds)
    mc, mc_se = _online_ode.monte_carlo_noise(
        name, None, a, Q, R, b, T, args.samples, _online_ode.NOISE_CHECK.seed + 1
    )
    aa = np.outer(a, a)
    mc, mc_se = mc / aa, mc_se / np.abs(aa)
    out = {
        "t": t,
        "eigenvalues": np.linalg.eigvalsh(C).tolist(),
        "scale": scale,
        "reference_se": float(ref_se.max()) / scale,
        "plain_se": float(plain_se.max()) / scale,
        "plain_z": float((np.abs(plain.mean(axis=0) - ref) / np.hypot(plain_se, ref_se)).max()),
        "mc_se": float(mc_se.max()) / scale,
        "mc_z": float((np.abs(mc - ref) / np.sqrt(mc_se**2 + ref_se**2)).max()),
        "rules": {},
    }
    evaluate = {
        "sobol": lambda: compiled(name, "sobol", a, C, b),
        "sobol_plain": lambda: plain_rule(name, a, C, b, args.plain_log2),
        "quadrature": lambda: compiled(name, "quadrature", a, C, b),
    }
    for method, fn in evaluate.items():
        E = fn()
        cpu = []
        for _ in range(args.rounds):
            c0 = time.process_time()
            fn()
            cpu.append(time.process_time() - c0)
        out["rules"][method] = {
            "error": float(np.abs(E - ref).max()) / scale,
            "ms": 1e3 * statistics.median(cpu),
        }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--activations", default="tanh,softplus")
    p.add_argument("--times", default="0,10,100,300,1000")
    p.add_argument("--log2", type=int, default=19)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--samples", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--plain-log2", type=int, default=14)
    p.add_argument("--json", default=None, help="write the figures as a benchmark record")
    p.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="with --json: start no state after this many wall seconds (exit 3; rerun resumes)",
    )
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from _record import Progress, describe_machine

    print(describe_machine(), flush=True)
    ts = [float(x) for x in args.times.split(",")]
    names = [n for n in args.activations.split(",") if n]
    config = {
        "times": ts,
        "log2": args.log2,
        "seeds": args.seeds,
        "samples": args.samples,
        "rounds": args.rounds,
        "sobol_log2": dict(_online_ode.SOBOL_LOG2),
        "plain_log2": args.plain_log2,
        "mixtures": {k: [list(v) for v in m] for k, m in _online_ode.ERF_MIXTURES.items()},
        "relu_mixtures": {k: [list(v) for v in m] for k, m in _online_ode.RELU_MIXTURES.items()},
        "K": 4,
        "M": 4,
    }
    progress = (
        Progress(args.json, "bench_noise_qmc.py", config, argv, args.stop_after)
        if args.json
        else None
    )
    rows: dict = {}
    for name in names:
        problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
        _, _, _, b, T = problem.order_parameters()
        sol = online_ode(problem, 1.0, np.array(ts), noise=False, rtol=1e-8)
        rows[name] = {"chosen": _online_ode.noise_method(name), "states": []}
        for i, t in enumerate(ts):
            state = (sol["a"][i], sol["Q"][i], sol["R"][i], b, T)

            def compute(name=name, t=t, state=state):
                return state_unit(name, t, state, args)

            u = progress.unit(f"{name}/t={t:g}", compute) if progress else compute()
            rows[name]["states"].append(u)
            r = u["rules"]
            print(
                f"{name} t = {t:g}: reference SE {u['reference_se']:.1e} (plain RQMC "
                f"{u['plain_z']:.1f} SE off, Monte Carlo SE {u['mc_se']:.1e}, {u['mc_z']:.1f} SE "
                f"off); sobol {r['sobol']['error']:.1e} ({r['sobol']['ms']:.2f} ms), without "
                f"control (2^{args.plain_log2}) {r['sobol_plain']['error']:.1e} "
                f"({r['sobol_plain']['ms']:.1f} ms), four-point {r['quadrature']['error']:.1e} "
                f"({r['quadrature']['ms']:.1f} ms)",
                flush=True,
            )
    if progress:
        progress.finish(
            {
                "K": 4,
                "M": 4,
                "sobol_nodes": {k: 2**v for k, v in _online_ode.SOBOL_LOG2.items()},
                "plain_nodes": 2**args.plain_log2,
                **{"activations": rows},
            }
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
