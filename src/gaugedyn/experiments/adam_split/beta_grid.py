"""The ``(beta1, beta2)`` grid of Adam on offline vision and language tasks
(derivations/theory.md section 3), judged under the protocol written in
``src/gaugedyn/experiments/adam_split/PROTOCOL.md`` (fixed before any grid ran).

Every copy (task, cell ``(beta1, beta2)``, seed) trains one task with Adam's update at
``betas=(beta1, beta2)``; all cells and seeds of a task are one harness task, trained as one
program by `gaugedyn.experiments.adam_split._batched.train_copies()` (each copy's own
model and minibatches, ``torch.optim.Adam``'s arithmetic with per-copy betas: bit for bit the
trajectory ``torch.optim.Adam`` gives the copy alone on the CPU). Every step of every copy is
split by streaming sums in the working precision, which give both sign readings:

    u = sign + lag + residual,   lag = (m^ - w^)/(sqrt(v^) + eps),
    current reading: sign = sign(g_t),  residual = transition + ratio + eps;
    memory reading:  sign = sign(w^),   residual = ratio + eps,

with ``w`` the first moment taken with the second moment's memory (``w is m`` when ``b1 == b2``).
The declared reference copies (``reference``: seed 0 of the grid's four corner cells by
default, or every copy) are also split every step by the reference
`gaugedyn.adam.split_update()` in float64.

- *checks* (they decide the exit status): the streaming lag is exactly zero at every step of
  every tied copy (and the reference's on the tied reference copies); on the reference copies,
  at every coordinate and step, the five parts sum to the update to ``1e-12``, the split update
  is the step applied to float32 round-off, and the streaming sums equal the reference's to
  ``REFERENCE_TOL`` of the update norm;
- *findings* (`gaugedyn.harness.judged()`, rule ``mean_threshold``: the 95% Student t
  interval over seeds of the per-seed mean over the judged cells), per task, on the cells the
  protocol names, diverged cells excluded: ``sign_dominated_tied``, ``lag_substantial`` and
  ``residual_small`` (each off-diagonal region ``beta2 > beta1`` and ``beta2 < beta1``
  separately) and ``tied_smoother`` (at matched ``beta1`` and matched ``beta2``, each region).
  Readings are judged, not chosen: a share or sign-dominance finding is judged under each sign
  reading (current, memory) and each share convention (squared, norm), four readings stored in
  ``readings`` with their estimates and intervals in ``tolerance.reading_detail``; the verdict
  is their common one, or "depends on the reading". The estimate and interval shown are the
  ``current/squared`` reading's. The paper gives no value of these measures, so the power is
  computed at the threshold moved half a standard deviation of the per-seed values onto the
  claimed side (`gaugedyn.harness._verdicts.margin_value()`). A configuration other than
  the full one prints every finding as "provisional (quick)" (or "provisional (reduced
  configuration)").

``matmul = "bfloat16"`` is the reading of ``PROTOCOL.md`` section 12, declared before any run
of it: the stacked forward pass under torch's autocast to bfloat16, run as the declared
extension ``bfloat16`` and compared with the float32 findings (`._extensions.table()`).
"""

from __future__ import annotations

from typing import Any

from ..._errors import InputError
from ...harness import Choice, Experiment, Param
from ...harness import configuration_label as _protocol_label
from . import _extensions as bx
from ._controls import grid_controls
from ._figures import plot_heatmaps, plot_update_norms, plot_verdicts
from ._grid_analysis import analyse_grid, expand
from ._protocol import FINDING_MEASURES, MATMUL, PROTOCOL, REFERENCE_SETS, TASKS, copies_of

FULL_KEYS = ("tasks", "beta1s", "beta2s", "seeds", "steps", "lr", "skip")


def _device_ok(x) -> bool:
    import re

    return isinstance(x, str) and re.fullmatch(r"cpu|cuda(:[0-9]+)?", x) is not None


_BETAS: dict[str, Any] = dict(
    type=list,
    item=float,
    lo=0.0,
    hi=0.999,
    min_len=2,
    max_len=8,
    distinct=True,
    why="a memory of at most 1000 steps, within a run's length",
)


class BetaGrid(Experiment):
    name = "beta_grid"
    description = (
        "Adam's update split into sign, lag and residual over a (beta1, beta2) grid on "
        "six offline tasks (digits MLP/CNN/ResNet; character transformer/GRU and word "
        "MLP on pydoc_data.topics) and the ReLU teacher-student: both sign readings, "
        "both share conventions, findings with seed intervals under a fixed protocol."
    )
    label_keys = FULL_KEYS
    measures = FINDING_MEASURES
    params = {
        "tasks": Param(
            list,
            list(TASKS),
            choices=TASKS,
            min_len=1,
            max_len=len(TASKS),
            distinct=True,
            help="training tasks (gaugedyn.experiments.adam_split.tasks)",
        ),
        "beta1s": Param(
            default=[0.8, 0.9, 0.99, 0.999],
            quick=[0.9, 0.99, 0.999],
            **_BETAS,
            help="first-moment factors (rows of the grid)",
        ),
        "beta2s": Param(
            default=[0.8, 0.9, 0.99, 0.999],
            quick=[0.9, 0.99, 0.999],
            **_BETAS,
            help="second-moment factors (columns of the grid)",
        ),
        "seeds": Param(
            int,
            10,
            quick=4,
            lo=2,
            hi=50,
            why="time: one training per seed and cell",
            help="independent runs per cell (the unit of every interval)",
        ),
        "steps": Param(
            int,
            200,
            quick=50,
            lo=0,
            hi=100_000,
            why="time: steps of every training",
            help="Adam steps per run (0: each task's default, 400; teacher-student 600)",
        ),
        "lr": Param(
            float,
            0.0,
            lo=0.0,
            hi=1.0,
            why="Adam's step is lr per coordinate",
            help="Adam step size (0: each task's default)",
        ),
        "reference": Param(
            str,
            "corners",
            choices=REFERENCE_SETS,
            help="copies also split every step by the float64 reference: "
            "'corners' (seed 0 of the four corner cells of the grid) or "
            "'all'",
        ),
        "skip": Param(
            float,
            0.1,
            lo=0.0,
            hi=0.5,
            why="at least half of the steps are measured",
            help="start-up fraction of steps left out of every step mean",
        ),
        "matmul": Param(
            str,
            "float32",
            choices=tuple(MATMUL),
            help="precision of the stacked forward pass: 'float32' (the protocol's) or "
            "'bfloat16' (PROTOCOL.md section 12's declared reading: torch's autocast, compared "
            "with float32 as the extension table)",
        ),
        "device": Param(
            str,
            "cpu",
            check=_device_ok,
            allowed="'cpu', 'cuda' or 'cuda:N'",
            help="torch device of the batched training",
        ),
    }
    definitions = {
        "update": "u = m^/(sqrt(v^)+eps), m^ = m/(1-b1^t), v^ = v/(1-b2^t) (torch.optim.Adam)",
        "parts": "lag = (m^ - w^)/(sqrt(v^)+eps), w_t = b2 w_{t-1} + (1-b2) g_t, w^ = w/(1-b2^t); "
        "current reading: sign = sign(g_t), residual = transition + ratio + eps; "
        "memory reading: sign = sign(w^), residual = ratio + eps",
        "share": "squared: |p_k|^2 / sum_j |p_j|^2; norm: |p_k| / sum_j |p_j|, over "
        "(sign, lag, residual) of the reading, all parameters, per step; run value: mean "
        "over steps after the start-up fraction skip",
        "sign_dominance": "squared: cos^2(u, sign part), norm: cos(u, sign part), step mean "
        "(1 for a pure sign update)",
        "magnitude": "|u|^2 / n, step mean (1 for a pure sign update)",
        "roughness": "mean_t |Delta^2 log |u_t|| after skip (detrended; smaller = smoother)",
        "diverged": "a run diverged if a minibatch loss was not finite, or its final evaluation "
        "loss is not finite or above its initial one; a cell diverged if any seed "
        "did; diverged cells are hatched and left out of every finding",
        "intervals": "rule mean_threshold (gaugedyn.stats.RULES): 95% Student-t interval over "
        "seeds of the per-seed mean over the judged cells, in every reading (sign "
        "reading x share convention); verdict: the readings' common one, or "
        "'depends on the reading'",
        "protocol": PROTOCOL,
    }

    space = {
        "skip": Choice(
            values=(0.05, 0.2),
            why="the paper's shares are step means with no start-up rule; leaving out 5% to "
            "20% of the steps is as plausible as 10%",
        ),
    }

    extensions = bx.EXTENSIONS

    def extension_table(self, runs):
        """The bfloat16 reading's findings beside float32's (`._extensions.table()`)."""
        return bx.table(runs)

    def controls(self, config):
        return grid_controls(config)

    def tasks(self, config):
        b1s = [float(b) for b in config["beta1s"]]
        b2s = [float(b) for b in config["beta2s"]]
        if not set(b1s) & set(b2s):
            raise InputError(
                f"beta1s = {b1s} and beta2s = {b2s} share no value; the grid needs "
                "tied cells (beta1 == beta2): allowed: lists with a common value"
            )
        device = str(config.get("device", "cpu"))
        if device != "cpu":
            import torch

            if not torch.cuda.is_available():
                raise InputError(
                    f"device={device!r} is not allowed on this machine: torch sees "
                    "no CUDA device; allowed: 'cpu'"
                )
        common = {
            "beta1s": b1s,
            "beta2s": b2s,
            "seeds": int(config["seeds"]),
            "steps": int(config["steps"]),
            "lr": float(config["lr"]),
            "reference": str(config.get("reference", "corners")),
        }
        if device != "cpu":
            common["device"] = device
        if config.get("matmul", "float32") != "float32":  # float32's tasks stay as they were
            common["matmul"] = str(config["matmul"])
        return [{"task": t, **common} for t in config["tasks"]]

    def run_task(self, task, seed):
        from ._batched import train_copies
        from .tasks import DEFAULTS

        cells = copies_of(task)
        seeds = copy_seeds(seed, cells)
        steps = task["steps"] or DEFAULTS[task["task"]]["steps"]
        lr = task["lr"] or DEFAULTS[task["task"]]["lr"]
        out = train_copies(
            task["task"],
            [(b1, b2, s) for (b1, b2, _), s in zip(cells, seeds)],
            steps,
            lr,
            reference=reference_copies(task),
            device=task.get("device", "cpu"),
            matmul=task.get("matmul", "float32"),
        )
        return {**out, "lr": float(lr)}

    def analyse(self, config, tasks, results, seed):
        runs, per_run = expand(tasks, results)
        return analyse_grid(
            config,
            runs,
            per_run,
            tasks,
            [dict(r) for r in results],
            label=configuration_label(config),
            seed=seed,
        )

    def plot(self, arrays, config, outdir):
        names = []
        for name in [str(t) for t in arrays["task_names"]]:
            names.append(plot_heatmaps(arrays, outdir, name))
            names.append(plot_update_norms(arrays, outdir, name))
        names.append(plot_verdicts(arrays, outdir))
        return names


def configuration_label(config: dict, params: dict | None = None, keys=FULL_KEYS) -> str:
    """`gaugedyn.harness._protocol.configuration_label()` over ``keys`` of ``params``
    (by default this experiment's)."""
    return _protocol_label(config, BetaGrid.params if params is None else params, keys)


def copy_seeds(seed, cells: list[tuple[float, float, int]]) -> list:
    """Each copy's ``SeedSequence``: the task-seed rule (`gaugedyn._meta.task_seed()`) on
    the copy's coordinates ``(beta1, beta2, seed index)`` under the task's own seed, so a copy's
    seed does not depend on the other copies of its batch."""
    from ..._meta import integer_seed, task_seed

    root = integer_seed(seed)
    return [task_seed(root, b1, b2, k) for b1, b2, k in cells]


def reference_copies(task: dict) -> list[int]:
    """Indices (in `copies_of()`'s order) of the copies split by the float64 reference:
    ``"corners"``: seed 0 of the cells ``(min or max beta1, min or max beta2)``; ``"all"``: every
    copy."""
    cells = copies_of(task)
    if task.get("reference", "corners") == "all":
        return list(range(len(cells)))
    b1s, b2s = task["beta1s"], task["beta2s"]
    corners = {(float(a), float(b)) for a in (min(b1s), max(b1s)) for b in (min(b2s), max(b2s))}
    return [i for i, (b1, b2, k) in enumerate(cells) if k == 0 and (b1, b2) in corners]


EXPERIMENT = BetaGrid()
