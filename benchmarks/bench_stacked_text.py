"""The stacked text forwards against a loop of the per-copy modules, side by side.

For ``char_transformer`` and ``char_gru`` and each ``B``: ``B`` copies of the task's model (each
built as ``train_task`` builds it for its seed) and one minibatch per copy from the task's own
stream. One *step* is the forward and backward pass of every copy's mean cross-entropy:

- loop (peer): each copy's own module, ``loss_fn(model_c(x_c), y_c).backward()``, one copy at a
  time (step 1 of ``train_copies`` today);
- stacked: one ``forward(x)`` of
  :data:`gaugedyn.experiments.adam_split._stacked_text.TEXT_STACKED` over all copies, whose
  parameters are views of one ``(B, P)`` buffer (the leaf), and one backward of the sum of the
  per-copy losses; with ``--chunk C``, one such forward and backward per block of ``C`` copies
  (a builder per block, on row slices of the same buffer), which keeps the tensors of a pass
  cache-sized.

One torch thread. Both paths are warmed up; rounds are interleaved (the order alternates); each
round times ``--reps`` steps of each path. Printed per task and ``B``: the median over rounds of
the CPU time (``time.process_time``) and wall time (``time.perf_counter``) per copy-step in ms,
with the smallest and largest round in brackets, the minor page faults per copy-step (fresh
memory mapped by the allocator; their cost is system time, inside the CPU time), and the ratio
loop / stacked (median of the per-round ratios, CPU and wall, with their range), and how
closely the two paths' gradients agree (largest relative difference over copies). Large tensors
of many copies are mapped afresh every step by glibc's allocator; run with
``THP_MEM_ALLOC_ENABLE=1`` (PyTorch: transparent huge pages for large CPU tensors) to see the
cost without most of those faults.

    .venv/bin/python benchmarks/bench_stacked_text.py [--tasks char_transformer,char_gru]
        [--copies 16,160] [--chunk 0] [--rounds 5] [--reps 3] [--dtype float32]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import torch
import torch.nn.functional as F


def setup(task: str, B: int, dtype, chunk: int = 0):
    """``(loop_step, stacked_step)``, two callables doing one forward+backward of ``B`` copies
    (the stacked one in blocks of ``chunk`` copies, all at once if ``chunk`` is 0)."""
    from gaugedyn.experiments.adam_split._stacked_text import TEXT_STACKED
    from gaugedyn.experiments.adam_split.tasks import _setup

    models, xs, ys = [], [], []
    for c in range(B):
        gen = torch.Generator().manual_seed(1000 + c)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 + c)
            model, batch, loss_fn, _ = _setup(task, gen, dtype, "cpu")
        models.append(model.to(dtype=dtype))
        x, y = batch(gen)
        xs.append(x)
        ys.append(y)
    x, y = torch.stack(xs), torch.stack(ys)
    shapes = [p.shape for p in models[0].parameters()]
    flat = torch.stack(
        [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]
    ).requires_grad_()
    params = [t.view(B, *s) for t, s in zip(flat.split([s.numel() for s in shapes], 1), shapes)]
    chunk = chunk or B
    blocks = [
        (slice(lo, lo + chunk), TEXT_STACKED[task](models[0], [p[lo : lo + chunk] for p in params]))
        for lo in range(0, B, chunk)
    ]
    per = x.shape[1] * x.shape[2]

    def loop_step():
        for m, xc, yc in zip(models, xs, ys):
            for p in m.parameters():
                p.grad = None
            loss_fn(m(xc), yc).backward()

    def stacked_step():
        flat.grad = None
        for rows, forward in blocks:
            out = forward(x[rows])
            (
                F.cross_entropy(
                    out.reshape(-1, out.shape[-1]), y[rows].reshape(-1), reduction="sum"
                )
                / per
            ).backward()

    def agreement() -> float:
        """Largest ``|stacked - loop| / max|loop|`` of a copy's gradient after one step each."""
        loop_step()
        stacked_step()
        return max(
            float((flat.grad[c] - g).abs().max() / g.abs().max())
            for c, g in enumerate(
                torch.cat([p.grad.reshape(-1) for p in m.parameters()]) for m in models
            )
        )

    return loop_step, stacked_step, agreement


def _timed(fn, reps: int) -> tuple[float, float, int]:
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(reps):
        fn()
    c, w = time.process_time() - c0, time.perf_counter() - w0
    return c, w, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0


def _line(name: str, xs: list[float]) -> str:
    return f"{name} {statistics.median(xs):7.3f} [{min(xs):.3f}, {max(xs):.3f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="char_transformer,char_gru")
    ap.add_argument("--copies", default="16,160")
    ap.add_argument(
        "--chunk", type=int, default=0, help="copies per stacked forward+backward (0: all)"
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    dtype = getattr(torch, a.dtype)
    thp = os.environ.get("THP_MEM_ALLOC_ENABLE", "unset")
    print(
        f"torch {torch.__version__}, one thread, {a.dtype}, chunk {a.chunk or 'all'}, "
        f"THP_MEM_ALLOC_ENABLE={thp}, "
        f"load average {os.getloadavg()[0]:.2f}; {a.rounds} interleaved rounds of {a.reps} "
        f"steps; ms per copy-step: median [min, max]"
    )
    for task in a.tasks.split(","):
        for B in (int(b) for b in a.copies.split(",")):
            loop, stacked, agreement = setup(task, B, dtype, a.chunk)
            err = agreement()
            t = {"loop": [], "stacked": []}
            for r in range(a.rounds):
                order = (("loop", loop), ("stacked", stacked))
                for name, fn in order if r % 2 == 0 else order[::-1]:
                    t[name].append(_timed(fn, a.reps))
            n = a.reps * B
            ms = {
                k: ([c / n * 1e3 for c, _, _ in v], [w / n * 1e3 for _, w, _ in v])
                for k, v in t.items()
            }
            faults = {k: statistics.median(f / n for _, _, f in v) for k, v in t.items()}
            rc = [lc / sc for lc, sc in zip(ms["loop"][0], ms["stacked"][0])]
            rw = [lw / sw for lw, sw in zip(ms["loop"][1], ms["stacked"][1])]
            print(
                f"{task:16s} B={B:4d}  "
                + "  ".join(
                    f"{k}: {_line('cpu', ms[k][0])} {_line('wall', ms[k][1])} "
                    f"faults {faults[k]:.0f}"
                    for k in ms
                )
            )
            print(
                f"{'':16s}         ratio loop/stacked: {_line('cpu', rc)} "
                f"{_line('wall', rw)}; gradients agree to {err:.1e}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
