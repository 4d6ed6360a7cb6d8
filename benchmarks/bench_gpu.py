"""The batched grids on every torch device present: ``cuda`` when there is one, and the CPU.

Runs the two batched programs of the package on each device and prints one table:

- ``beta_grid``: :func:`gaugedyn.experiments.adam_split._batched.train_copies`, every task
  (or ``--tasks``) with ``--cells`` x ``--cells`` betas x ``--seeds`` seeds as one program,
  ``--steps`` steps, the float64 reference on the four corner copies;
- ``stability scan``: :func:`gaugedyn.experiments.adam_stability._batched.adam_steps`,
  ``--copies`` ``teacher_mse`` copies (float64, per-copy betas), ``--scan-steps`` steps.

Per row: device, copies, steps, wall time (``time.perf_counter`` after ``synchronize`` on a
GPU), CPU time of this process, and wall milliseconds per copy and step; with a GPU, a last
column gives the CPU row's wall over the GPU row's. Every program is run once untimed first
(imports, data, kernel caches). Without a CUDA device the script says so and runs on the CPU
alone, so it works (and is tested) on any machine.

    .venv/bin/python benchmarks/bench_gpu.py [--tasks a,b] [--cells 4] [--seeds 10]
        [--steps 200] [--copies 256] [--scan-steps 2000] [--cpu-only]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

BETAS = (0.8, 0.9, 0.99, 0.999)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _timed(fn, device: str) -> tuple[float, float]:
    _sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    _sync(device)
    return time.perf_counter() - t0, time.process_time() - c0


def grid_program(task: str, cells: int, seeds: int, steps: int, device: str):
    from gaugedyn.experiments.adam_split._batched import train_copies
    from gaugedyn.experiments.adam_split.beta_grid import copies_of, reference_copies
    from gaugedyn.experiments.adam_split.tasks import DEFAULTS

    betas = list(BETAS[:cells]) if cells <= len(BETAS) else list(1 - np.logspace(-0.7, -3, cells))
    spec = {"beta1s": betas, "beta2s": betas, "seeds": seeds, "reference": "corners"}
    copies = [(b1, b2, 1000 + i) for i, (b1, b2, _) in enumerate(copies_of(spec))]

    def run(n_steps=steps):
        return train_copies(
            task,
            copies,
            n_steps,
            DEFAULTS[task]["lr"],
            reference=reference_copies(spec),
            device=device,
        )

    return len(copies), run


def scan_program(copies: int, steps: int, device: str):
    import torch

    from gaugedyn.experiments.adam_stability._batched import BatchedMLP, adam_steps

    rng = np.random.default_rng(0)
    b1 = 1 - 10 ** rng.uniform(-2, -0.5, copies)
    b2 = 1 - 10 ** rng.uniform(-4, -2, copies)

    def run(n_steps=steps):
        model = BatchedMLP(
            "teacher_mse", copies, np.arange(copies), 256, dtype=torch.float64, device=device
        )
        return [b.median for b in adam_steps(model, 1e-2, b1, b2, n_steps, 24)[0]]

    return copies, run


def measure(
    devices: list[str],
    tasks: list[str],
    cells: int,
    seeds: int,
    steps: int,
    copies: int,
    scan_steps: int,
) -> list[dict]:
    """One row per program and device."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = []
    try:
        programs = [
            (f"beta_grid {t}", steps, lambda d, t=t: grid_program(t, cells, seeds, steps, d))
            for t in tasks
        ]
        programs.append(
            ("stability scan", scan_steps, lambda d: scan_program(copies, scan_steps, d))
        )
        for name, n_steps, build in programs:
            for device in devices:
                n, run = build(device)
                run(min(n_steps, 10))  # untimed: imports, data, kernel caches
                wall, cpu = _timed(run, device)
                rows.append(
                    {
                        "program": name,
                        "device": device,
                        "copies": n,
                        "steps": n_steps,
                        "wall": wall,
                        "cpu": cpu,
                        "ms": 1e3 * wall / (n * n_steps),
                    }
                )
    finally:
        torch.set_num_threads(before)
    return rows


def table(rows: list[dict]) -> str:
    cpu_wall = {r["program"]: r["wall"] for r in rows if r["device"] == "cpu"}
    gpu = any(r["device"] != "cpu" for r in rows)
    head = ["program", "device", "copies", "steps", "wall s", "CPU s", "ms/copy-step"]
    head += ["cpu/this"] if gpu else []
    body = []
    for r in rows:
        cells = [
            r["program"],
            r["device"],
            str(r["copies"]),
            str(r["steps"]),
            f"{r['wall']:.2f}",
            f"{r['cpu']:.2f}",
            f"{r['ms']:.3f}",
        ]
        if gpu:
            cells.append(
                f"{cpu_wall[r['program']] / r['wall']:.1f}x" if r["program"] in cpu_wall else "-"
            )
        body.append(cells)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]

    def fmt(c):
        return "  ".join(
            x.ljust(w) if i < 2 else x.rjust(w) for i, (x, w) in enumerate(zip(c, widths))
        )

    return "\n".join([fmt(head), "-" * len(fmt(head)), *map(fmt, body)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=None, metavar="A,B", help="beta_grid tasks (default all)")
    ap.add_argument("--cells", type=int, default=4, help="betas per axis of the grid")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--copies", type=int, default=256, help="copies of the stability scan")
    ap.add_argument("--scan-steps", type=int, default=2000)
    ap.add_argument("--cpu-only", action="store_true", help="skip the GPU even when present")
    args = ap.parse_args(argv)

    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from _record import check_at_least, grid_tasks

    tasks = grid_tasks(args.tasks)
    check_at_least(
        ("cells", args.cells, 2),
        ("seeds", args.seeds, 1),
        ("steps", args.steps, 1),
        ("copies", args.copies, 1),
        ("scan-steps", args.scan_steps, 10),
    )
    devices = ["cpu"]
    if args.cpu_only:
        print("--cpu-only: running on cpu only")
    elif torch.cuda.is_available():
        devices.append("cuda")
        print(f"GPU: {torch.cuda.get_device_name(0)}; running on cpu and cuda")
    else:
        print("no GPU present (torch.cuda.is_available() is False): running on cpu only")
    rows = measure(devices, tasks, args.cells, args.seeds, args.steps, args.copies, args.scan_steps)
    print(table(rows))
    return 0


if __name__ == "__main__":
    from gaugedyn import InputError

    try:
        sys.exit(main())
    except InputError as err:
        print(f"bench_gpu.py: error: {err}", file=sys.stderr)
        sys.exit(2)
