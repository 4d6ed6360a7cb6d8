"""Monitor overhead with every instrument at its default ``every``, against the plain training step.

The recorder benchmark's model (``bench_gauge_recorder.py``: a ReLU MLP 784-1024-256-10, about
1.07M parameters, two rescaling groups), Adam (lr 1e-3), cross-entropy on one fixed batch.
Identical copies train side by side: ``plain``; ``monitor``, a :class:`gaugedyn.monitor.Monitor`
with the Adam recorder (every 10), the gauge recorder (every 10), the online spike detector on
the loss (every step) and the edge probe (every 500, Lanczos on the batch's loss, tol 1e-3) at
their defaults (:data:`gaugedyn.monitor.DEFAULT_EVERY`), streaming to an in-memory sink; and, with
``--breakdown``, each instrument alone. A block is ``--steps`` steps (default 500: one probe
reading per block, so the block's time holds the probe's share at its default rate); blocks
are interleaved in rotating order, each round giving one paired ratio per variant (its block
time over the plain block of the same round); the median ratio over rounds is printed with its
distribution-free 95% interval (``scipy.stats.quantile_test``), in wall and process CPU time.

The ratios of a shared machine are noisy; the accounting beside them is not: the thread CPU
time spent inside each hook the instruments put on the optimizer (the Adam recorder's and the
gauge recorder's pre and post hooks, the monitor's probe pre-hook, and its post-hook: the
scalars, the loss, the spike detector and the sinks) plus ``observe_loss``, per step of the
``monitor`` variant, against the plain step's CPU time. These costs add up by construction, so
the accounting says whether the instruments together cost more than their parts.

    .venv/bin/python benchmarks/bench_monitor.py [--repeats 5] [--steps 500] [--batch 128]
        [--threads 1] [--breakdown]
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import statistics
import time

import torch
from scipy import stats

from gaugedyn.monitor import DEFAULT_EVERY, EdgeProbe, MemorySink, Monitor


class _Account:
    """Thread CPU seconds spent in each step hook of an optimizer (wrapped in place)."""

    def __init__(self, optimizer: torch.optim.Optimizer):
        self.seconds: dict[str, float] = {}
        for kind, hooks in (
            ("pre", optimizer._optimizer_step_pre_hooks),
            ("post", optimizer._optimizer_step_post_hooks),
        ):
            for hid, hook in list(hooks.items()):
                owner = type(getattr(hook, "__self__", hook)).__name__
                name = f"{owner}.{getattr(hook, '__name__', kind)}"
                hooks[hid] = self.timed(name, hook)

    def timed(self, name: str, fn):
        self.seconds.setdefault(name, 0.0)

        def wrapper(*args, **kwargs):
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.thread_time() - c0

        return wrapper

    def reset(self) -> None:
        self.seconds = dict.fromkeys(self.seconds, 0.0)


def _summary(x: list[float]) -> str:
    if len(x) < 2:
        return f"{x[0]:.3f}"
    ci = stats.quantile_test(x, q=statistics.median(x), p=0.5).confidence_interval(0.95)
    interval = (
        f"[{ci.low:.3f}, {ci.high:.3f}]"
        if math.isfinite(ci.low + ci.high)
        else "[too few rounds for a 95% interval]"
    )
    return f"{statistics.median(x):.3f} {interval} (range {min(x):.3f}-{max(x):.3f})"


VARIANTS = {
    "monitor": {},
    "adam": {"gauge": False, "spikes": False, "edge": None},
    "gauge": {"adam": False, "spikes": False, "edge": None},
    "spikes": {"adam": False, "gauge": False, "edge": None},
    "edge": {"adam": False, "gauge": False, "spikes": False},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=DEFAULT_EVERY["edge"])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--breakdown", action="store_true", help="also each instrument alone")
    args = ap.parse_args()
    if args.repeats < 1 or args.steps < 1 or args.batch < 1 or args.threads < 0:
        ap.error("--repeats, --steps and --batch must be >= 1, --threads >= 0")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = torch.nn.Sequential(
        torch.nn.Linear(784, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    )
    n = sum(p.numel() for p in base.parameters())
    x = torch.randn(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))
    names = ["monitor", *(k for k in VARIANTS if k != "monitor" and args.breakdown)]
    models = {"plain": base, **{k: copy.deepcopy(base) for k in names}}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-3) for k, m in models.items()}
    mons = {}
    for k in names:
        m = models[k]
        edge = EdgeProbe(lambda m=m: torch.nn.functional.cross_entropy(m(x), y))
        kw = {"edge": edge, **VARIANTS[k]}
        mons[k] = Monitor(opts[k], m, sinks=[MemorySink()], **kw)
    account = _Account(opts["monitor"])
    observe = account.timed("Monitor.observe_loss", mons["monitor"].observe_loss)

    def block(k: str) -> tuple[float, float]:
        m, o = models[k], opts[k]
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            o.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            if k == "monitor":
                observe(loss)
            elif k in mons:
                mons[k].observe_loss(loss)
            o.step()
        return (time.perf_counter() - t0) / args.steps, (time.process_time() - c0) / args.steps

    load0 = os.getloadavg()[0]
    times: dict[str, list] = {k: [] for k in models}
    hooks: list[dict[str, float]] = []
    keys = list(models)
    for r in range(args.repeats):
        for i in range(len(keys)):
            k = keys[(i + r) % len(keys)]
            account.reset()
            times[k].append(block(k))
            if k == "monitor":
                hooks.append({h: t / args.steps for h, t in account.seconds.items()})
    print(
        f"model: MLP 784-1024-256-10, {n} parameters, batch {args.batch}, threads "
        f"{torch.get_num_threads()}, Adam; {args.repeats} interleaved rounds of {args.steps} "
        f"steps per variant; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} "
        f"at the end ({os.cpu_count()} CPUs)"
    )
    print(f"every: {mons['monitor'].every()}")
    wall = statistics.median(t[0] for t in times["plain"])
    cpu = statistics.median(t[1] for t in times["plain"])
    print(f"plain step: median {1e3 * wall:.2f} ms wall, {1e3 * cpu:.2f} ms CPU")
    print(
        "overhead ratio = variant / plain, paired per round: median [95% interval of the "
        "median] (range of the rounds)"
    )
    for k in names:
        rw = [a[0] / b[0] for a, b in zip(times[k], times["plain"])]
        rc = [a[1] / b[1] for a, b in zip(times[k], times["plain"])]
        h = mons[k].history
        probes = len(h["edge_products"])
        extra = (
            f", {probes} probe readings, {sum(h['edge_products']) / max(probes, 1):.1f} "
            "products each"
            if probes
            else ""
        )
        print(f"  {k:<8}{extra}: wall {_summary(rw)}  CPU {_summary(rc)}")
    print(
        "accounting of the monitor variant: thread CPU ms per step inside each hook, median over "
        "rounds (share of the plain step's CPU time)"
    )
    total = 0.0
    for h in hooks[0]:
        ms = 1e3 * statistics.median(x[h] for x in hooks)
        total += ms
        print(f"  {h:<28} {ms:7.3f} ms ({ms / (1e3 * cpu):6.1%})")
    print(f"  {'sum':<28} {total:7.3f} ms ({total / (1e3 * cpu):6.1%})")


if __name__ == "__main__":
    main()
