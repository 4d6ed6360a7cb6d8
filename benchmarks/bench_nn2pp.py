"""gaugedyn's online ODE, chain and online SGD against nn2pp (Goldt et al.'s C++ code), side by side.

    python benchmarks/bench_nn2pp.py --nn2pp-src PATH [--N 1000] [--t-max 30] [--rounds 2]

``PATH`` is a checkout of https://github.com/sgoldt/nn2pp (its public source; nothing of it is
kept in this repository). The script compiles its simulator ``nn2pp.cpp`` and its ODE integrator
``scmpp_ode.cpp`` into a scratch folder (``g++ -std=c++11 -O3 -fopenmp ... -larmadillo``: the
Armadillo headers and library must be installed) and runs two cases, K = M = 2, ``--lr 1``:

A. erf teacher and student with ``--sigma 0.1 --wd 1e-4 --lr2 0.5 --both``. nn2pp's SGD at
   ``N`` writes its initial order parameters (``--store``); from exactly those, nn2pp's ODE
   (explicit Euler, step ``--dt``) and gaugedyn's online ODE (DOP853 at rtol 1e-11) are
   integrated. The table shows the largest difference of ``Q``, ``R`` and ``v`` over nn2pp's
   output times for ``dt`` = 0.04 ... 0.005: Euler's error is first order, so it halves with
   ``dt`` until it meets nn2pp's printed precision (6 significant digits). Conventions: nn2pp's
   ``lr2`` is the second layer's absolute rate and its ``wd`` decays both layers at ``wd`` per
   unit time; gaugedyn's ``lr2`` is relative to ``lr`` and its ``weight_decay`` ``lambda`` enters
   the gradient of each layer (torch's convention): ``eta = lr``, ``lr2 = lr2 / lr``,
   ``lambda = wd / lr`` make the first layer's terms identical, and the second layer's decay
   differs by ``(1 - lr2 / lr) wd v``, which this script adds to gaugedyn's ``dv/dt`` (written
   out, so nothing is hidden). The SGD rates: nn2pp's simulator against gaugedyn's ``train()``
   as a user calls it first (no ``backend``: ``"auto"``), its torch trainer, compiled
   weight-space backend and chain with the same options, steps per second (``--json PATH``
   writes them as a benchmark record; ``--only-a`` skips case B).
B. erf teacher, ReLU student (``--g1 1 --g2 2 --both``, plain SGD). nn2pp's ODE covers only one
   activation (erf or linear), so gaugedyn's online ODE (the teacher's own activation) is
   (DOP853 at rtol 1e-6; its ReLU noise term is a four-dimensional quadrature) compared with
   nn2pp's SGD and with 10 seeds of gaugedyn's exact order-parameter chain, all
   from nn2pp's stored initial order parameters: the largest deviation from the ODE of nn2pp's
   one seed against the chain seeds' 10-90% range of the same deviation, and the fraction of the
   chain's records at which the ODE lies inside the chain's 10-90% band. The SGD rates: nn2pp
   against gaugedyn's compiled weight-space backend and the chain, steps per second.

Every timed case runs ``--rounds`` times, interleaved; medians of wall and CPU seconds (CPU of
the child process for nn2pp). The machine is shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from gaugedyn.theory import Problem
from gaugedyn.training import TrainConfig, train
from gaugedyn.training._online_fast import train_online
from gaugedyn.training._online_ode import OnlineODE, online_ode

K = M = 2
DTS = (0.04, 0.02, 0.01, 0.005)
OPTIONS = dict(sigma=0.1, wd=1e-4, lr2=0.5)


def build(src: Path, scratch: Path) -> dict:
    """Compile nn2pp's simulator and ODE integrator into ``scratch``."""
    out = {}
    for name, exe, extra in (("sgd", "nn2pp.exe", ["-fopenmp"]), ("ode", "scmpp_ode.exe", [])):
        target = scratch / exe
        subprocess.run(
            [
                "g++",
                "-std=c++11",
                "-O3",
                *extra,
                str(src / exe.replace(".exe", ".cpp")),
                "-I",
                str(src),
                "-larmadillo",
                "-o",
                str(target),
            ],
            check=True,
        )
        out[name] = str(target)
    return out


def measure(fn):
    """(wall s, cpu s of this process and its children, result)."""
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(
        getattr(r1, f) - getattr(r0, f) + getattr(c1, f) - getattr(c0, f)
        for f in ("ru_utime", "ru_stime")
    )
    return wall, cpu, out


def interleaved(cases: dict, rounds: int) -> dict:
    times = {k: ([], []) for k in cases}
    results = {}
    for _ in range(rounds):
        for k, fn in cases.items():
            w, c, results[k] = measure(fn)
            times[k][0].append(w)
            times[k][1].append(c)
    return {
        k: (statistics.median(w), statistics.median(c), results[k]) for k, (w, c) in times.items()
    }


def rows(stdout: str) -> np.ndarray:
    """nn2pp's output lines: t, eg, et, eg_frac, et_frac, diff, Q (upper), R, A, v."""
    data = [
        [float(x) for x in line.split(",")]
        for line in stdout.splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return np.array(data)


def unpack(table: np.ndarray):
    """``(t, Q (T, K, K), R (T, K, M), v (T, K))`` of nn2pp's rows."""
    iu = np.triu_indices(K)
    nq = len(iu[0])
    Q = np.zeros((table.shape[0], K, K))
    Q[:, iu[0], iu[1]] = table[:, 6 : 6 + nq]
    Q[:, iu[1], iu[0]] = table[:, 6 : 6 + nq]
    R = table[:, 6 + nq : 6 + nq + K * M].reshape(-1, K, M)
    v = table[:, 6 + nq + K * M + M :]
    return table[:, 0], Q, R, v


def stored(folder: Path) -> dict:
    """The initial order parameters nn2pp wrote with ``--store`` (full precision)."""

    def load(suffix):
        (f,) = folder.glob(f"*{suffix}")
        return np.loadtxt(f, delimiter=",", ndmin=1), str(f)[: -len(suffix)]

    (Q, prefix), (R, _), (T, _) = load("_Q0.dat"), load("_R0.dat"), load("_T0.dat")
    (A, _), (v, _) = load("_A0.dat"), load("_v0.dat")
    return dict(Q=Q.reshape(K, K), R=R.reshape(K, M), T=T.reshape(M, M), A=A, v=v, prefix=prefix)


def problem_from(init: dict, dim: int, activation: str, teacher_activation=None) -> Problem:
    """A problem whose weights realise the stored ``(Q, R, T)`` (in ``dim`` >= K + M
    dimensions, zero-padded: every quantity here depends on the weights only through them)."""
    C = np.block([[init["Q"], init["R"]], [init["R"].T, init["T"]]])
    lam, U = np.linalg.eigh(C)
    F = U * np.sqrt(np.maximum(lam, 0.0))
    F = np.concatenate([F, np.zeros((K + M, dim - K - M))], axis=1)
    return Problem(
        a=init["v"],
        W=F[:K],
        b=init["A"],
        V=F[K:],
        activation=activation,
        teacher_activation=teacher_activation,
    )


def nn2pp_args(g1, g2, N, t_max, lr2=None, wd=0.0, sigma=0.0):
    args = [
        "--g1",
        str(g1),
        "--g2",
        str(g2),
        "-N",
        str(N),
        "-M",
        str(M),
        "-K",
        str(K),
        "--lr",
        "1",
        "--steps",
        str(t_max),
        "--both",
        "-r",
        "0",
    ]
    if lr2 is not None:
        args += ["--lr2", str(lr2)]
    return args + ["--wd", str(wd), "--sigma", str(sigma)]


def gaugedyn_ode_nn2pp_conventions(problem, times, lr, lr2, wd, sigma):
    """gaugedyn's online ODE in nn2pp's conventions (module docstring): ``eta = lr``, relative
    ``lr2 / lr``, ``lambda = wd / lr``, and the second layer's decay made ``wd v``."""
    a0, Q0, R0, b, T = problem.order_parameters()
    rhs = OnlineODE(K, M, b, T, "erf", lr, 1, True, wd / lr, lr2 / lr, sigma)
    extra = wd * (1.0 - lr2 / lr)

    def f(t, y):
        out = rhs(t, y)
        out[:K] -= extra * y[:K]
        return out

    y0 = np.concatenate([a0, Q0.ravel(), R0.ravel()])
    sol = solve_ivp(
        f, (0.0, float(times[-1])), y0, method="DOP853", t_eval=times, rtol=1e-11, atol=1e-13
    )
    return rhs.unpack(sol.y.T)


def case_a(exe, scratch: Path, N: int, t_max: float, rounds: int):
    folder = scratch / "a"
    folder.mkdir()
    sgd_args = [exe["sgd"], *nn2pp_args(1, 1, N, t_max, **OPTIONS), "--store"]
    sgd = subprocess.run(sgd_args, cwd=folder, capture_output=True, text=True, check=True)
    init = stored(folder)
    problem = problem_from(init, K + M, "erf")
    print(
        f"A. erf / erf, nn2pp --lr 1 --lr2 {OPTIONS['lr2']} --wd {OPTIONS['wd']} --sigma "
        f"{OPTIONS['sigma']} --both, t up to {t_max:g}"
    )
    print(f"{'nn2pp ODE dt':>13s} {'max |dQ|,|dR|,|dv|':>20s} {'ratio to previous':>18s}")
    previous = None
    for dt in DTS:
        out = subprocess.run(
            [
                exe["ode"],
                "--g",
                "1",
                "-M",
                str(M),
                "-K",
                str(K),
                "--lr",
                "1",
                "--lr2",
                str(OPTIONS["lr2"]),
                "--wd",
                str(OPTIONS["wd"]),
                "--sigma",
                str(OPTIONS["sigma"]),
                "--dt",
                str(dt),
                "--steps",
                str(t_max),
                "--both",
                "--prefix",
                init["prefix"],
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
        )
        t, Q, R, v = unpack(rows(out.stdout))
        a_g, Q_g, R_g = gaugedyn_ode_nn2pp_conventions(
            problem, t, 1.0, OPTIONS["lr2"], OPTIONS["wd"], OPTIONS["sigma"]
        )
        diff = max(np.abs(Q - Q_g).max(), np.abs(R - R_g).max(), np.abs(v - a_g).max())
        ratio = "" if previous is None else f"{previous / diff:18.2f}"
        print(f"{dt:13g} {diff:20.2e} {ratio}")
        previous = diff
    t, Q, R, v = unpack(rows(sgd.stdout))
    a_g, Q_g, R_g = gaugedyn_ode_nn2pp_conventions(
        problem, t, 1.0, OPTIONS["lr2"], OPTIONS["wd"], OPTIONS["sigma"]
    )
    dev = max(np.abs(Q - Q_g).max(), np.abs(R - R_g).max(), np.abs(v - a_g).max())
    print(
        f"nn2pp SGD (N = {N}, one seed) against gaugedyn's ODE: max deviation {dev:.3f} "
        f"(fluctuations of order N^-1/2 = {N**-0.5:.3f})"
    )
    steps = int(t_max * N)
    big = problem_from(init, N, "erf")
    cfg = TrainConfig(
        optimizer="sgd",
        lr=1.0,
        steps=steps,
        samples=None,
        batch=1,
        weight_decay=OPTIONS["wd"],
        lr2=OPTIONS["lr2"],
        label_noise=OPTIONS["sigma"],
        points_per_decade=2,
    )
    for backend in ("compiled", "chain"):  # compile outside the timing
        train(
            big,
            TrainConfig(
                optimizer="sgd",
                lr=1.0,
                steps=10,
                samples=None,
                batch=1,
                weight_decay=0.1,
                lr2=0.5,
                label_noise=0.1,
            ),
            backend=backend,
        )
    timed = interleaved(
        {
            "nn2pp SGD (C++, Armadillo)": lambda: subprocess.run(
                sgd_args[:-1], cwd=folder, capture_output=True, check=True
            ),
            "gaugedyn train() default": lambda: train(big, cfg, seeds=1),
            "gaugedyn torch trainer": lambda: train(big, cfg, seeds=1, backend="torch"),
            "gaugedyn compiled (weight space)": lambda: train(
                big, cfg, seeds=1, backend="compiled"
            ),
            "gaugedyn chain (order parameters)": lambda: train(big, cfg, seeds=1, backend="chain"),
        },
        rounds,
    )
    default = timed["gaugedyn train() default"][2].settings["backend"]
    print(f"train() without a backend ran backend={default!r}")
    return {"default_backend": default, **_rates(timed, steps, "nn2pp SGD (C++, Armadillo)")}


def case_b(exe, scratch: Path, N: int, t_max: float, rounds: int, threads: int):
    folder = scratch / "b"
    folder.mkdir()
    sgd_args = [exe["sgd"], *nn2pp_args(1, 2, N, t_max), "--store"]
    sgd = subprocess.run(sgd_args, cwd=folder, capture_output=True, text=True, check=True)
    init = stored(folder)
    problem = problem_from(init, N, "relu", teacher_activation="erf")
    print(f"\nB. erf teacher, ReLU student (--g1 1 --g2 2 --both), N = {N}, t up to {t_max:g}")
    steps = int(t_max * N)
    cfg = TrainConfig(
        optimizer="sgd", lr=1.0, steps=steps, samples=None, batch=1, points_per_decade=8
    )
    chain = train_online(problem, cfg, 10, 0, None, None, threads, "chain")
    ode = online_ode(problem, 1.0, chain.time, rtol=1e-6, atol=1e-8)
    late = chain.time >= 0.5
    inside = []
    for key in ("a", "Q", "R"):
        lo, hi = np.quantile(getattr(chain, key)[:, late], [0.1, 0.9], axis=0)
        inside.append(((ode[key][late] >= lo) & (ode[key][late] <= hi)).ravel())
    seed_dev = np.array(
        [
            max(
                np.abs(chain.Q[s] - ode["Q"]).max(),
                np.abs(chain.R[s] - ode["R"]).max(),
                np.abs(chain.a[s] - ode["a"]).max(),
            )
            for s in range(10)
        ]
    )
    t, Q, R, v = unpack(rows(sgd.stdout))
    ode_n = online_ode(problem, 1.0, t, rtol=1e-6, atol=1e-8)
    dev = max(
        np.abs(Q - ode_n["Q"]).max(), np.abs(R - ode_n["R"]).max(), np.abs(v - ode_n["a"]).max()
    )
    lo, hi = np.quantile(seed_dev, [0.1, 0.9])
    print(
        f"gaugedyn's online ODE inside the chain's 10-90% band (10 seeds, t >= 0.5): "
        f"{np.concatenate(inside).mean():.1%} of the records"
    )
    print(
        f"max deviation from gaugedyn's ODE: nn2pp SGD (one seed) {dev:.3f}; gaugedyn chain "
        f"seeds 10-90%: {lo:.3f} to {hi:.3f}"
    )
    plain = TrainConfig(
        optimizer="sgd", lr=1.0, steps=steps, samples=None, batch=1, points_per_decade=2
    )
    train(
        problem,
        TrainConfig(optimizer="sgd", lr=1.0, steps=10, samples=None),
        seeds=1,
        backend="compiled",
    )  # compile outside the timing
    timed = interleaved(
        {
            "nn2pp SGD (C++, Armadillo)": lambda: subprocess.run(
                sgd_args[:-1], cwd=folder, capture_output=True, check=True
            ),
            "gaugedyn compiled (weight space)": lambda: train_online(
                problem, plain, 1, 0, None, None, 1, "compiled"
            ),
            "gaugedyn chain (order parameters)": lambda: train_online(
                problem, plain, 1, 0, None, None, 1, "chain"
            ),
        },
        rounds,
    )
    _rates(timed, steps, "nn2pp SGD (C++, Armadillo)")


def _rates(timed: dict, steps: int, ref: str) -> dict:
    print(
        f"{'SGD, one seed, ' + str(steps) + ' steps':38s} {'wall s':>8s} {'cpu s':>8s} "
        f"{'steps/s (cpu)':>14s} {'rate / nn2pp':>13s}"
    )
    ref_rate = steps / timed[ref][1]
    out = {}
    for k, (wall, cpu, _) in timed.items():
        rate = steps / cpu
        print(f"{k:38s} {wall:8.2f} {cpu:8.2f} {rate:14.3g} {rate / ref_rate:13.2f}")
        out[k] = {"wall_s": wall, "cpu_s": cpu, "steps_per_s": rate, "to_nn2pp": rate / ref_rate}
    return {"steps": steps, "rates": out}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--nn2pp-src", required=True, type=Path, help="a checkout of github.com/sgoldt/nn2pp"
    )
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--t-max", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--prebuilt",
        type=Path,
        default=None,
        help="a folder holding nn2pp.exe and scmpp_ode.exe built earlier by this "
        "script's command (skips the build)",
    )
    ap.add_argument("--json", default=None, help="write case A's rates as a benchmark record")
    ap.add_argument("--only-a", action="store_true", help="case A alone")
    args = ap.parse_args(argv)
    from _record import describe_machine, start_record, write_record

    record = start_record("bench_nn2pp.py", argv)
    print(describe_machine())
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    with tempfile.TemporaryDirectory(prefix="nn2pp-") as tmp:
        scratch = Path(tmp)
        if args.prebuilt is not None:
            exe = {
                "sgd": str((args.prebuilt / "nn2pp.exe").resolve()),
                "ode": str((args.prebuilt / "scmpp_ode.exe").resolve()),
            }
        else:
            exe = build(args.nn2pp_src.resolve(), scratch)
        rates = case_a(exe, scratch, args.N, args.t_max, args.rounds)
        if args.json:
            write_record(args.json, record, {"N": args.N, "t_max": args.t_max, **rates})
        if not args.only_a:
            case_b(exe, scratch, args.N, args.t_max, args.rounds, args.threads)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
