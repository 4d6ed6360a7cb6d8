"""The ``(beta1, beta2)`` grid of Adam on offline vision and language tasks (THEORY.md section 3).

Every cell trains one task with ``torch.optim.Adam(betas=(beta1, beta2))`` and the
:class:`gaugedyn.adam.AdamRecorder` attached (:func:`gaugedyn.adam.tasks.train_task`), which
splits each update ``u = m^/(sqrt(v^) + eps)`` into

    u = sign + lag + residual,   lag = (m^ - w^)/(sqrt(v^) + eps),   residual = transition + ratio + eps,

with ``w`` the first moment taken with the second moment's memory (``w is m`` when ``b1 == b2``).
Per run: the shares ``share_k = |p_k| / (|sign| + |lag| + |residual|)`` averaged over steps, the
smoothness ``mean_t |Delta log |u_t||`` of the update-norm trajectory and the final loss.

Two kinds of statement come out of the analysis:

- *checks* (claims whose ``passed`` decides the run's exit status): the lag part is exactly zero at
  every step of every tied cell; at a random sample of coordinates the five parts sum to the
  update to ``1e-12``; the recorded update is the step ``torch.optim.Adam`` applied to the
  parameters, to float32 round-off;
- *findings*: the four seed claims, judged per task (:func:`gaugedyn.adam.grid_claims`: tied updates
  sign-dominated; lag substantial off the diagonal; residual comparatively small; tied update
  norms smoother). They are measured, not assumed: each is reported as a claim with id
  ``finding:<task>:<claim>`` whose statement starts with ``HELD`` or ``DID NOT HOLD``, whose
  ``measured`` carries the verdict and the numbers, and whose ``passed`` is True because the
  finding was measured (the framework has no separate notion of a finding, and an empirical
  answer must not fail a reproduction). The verdicts are also stored as arrays
  (``<task>__verdict``, order ``verdict_names``), in ``summary.json``'s diagnostics and in the
  heatmap captions.
"""

from __future__ import annotations

import numpy as np

from .._errors import InputError
from ..adam import CLAIMS as VERDICTS
from ..adam import FIELDS, THRESHOLDS, analyse_grid
from ..adam import TASKS as TASK_NAMES
from ._protocol import Claim, Experiment, Param

SUM_TOL = 1e-12
_F32 = 2.0**-24


def _betas(v) -> bool:
    return (isinstance(v, list) and len(v) >= 2 and len(set(v)) == len(v)
            and all(isinstance(b, float | int) and not isinstance(b, bool) and 0.8 <= b <= 0.999
                    for b in v))


def _task_list(v) -> bool:
    return (isinstance(v, list) and len(v) >= 1 and len(set(v)) == len(v)
            and all(t in TASK_NAMES for t in v))


class BetaGrid(Experiment):
    name = "beta_grid"
    description = ("Adam's update split into sign, lag and residual over a (beta1, beta2) grid on "
                   "five offline tasks (digits MLP/CNN, character transformer/GRU on "
                   "pydoc_data.topics, ReLU teacher-student): heatmaps, update-norm trajectories "
                   "and the four seed claims judged per task.")
    params = {
        "tasks": Param(list, list(TASK_NAMES), check=_task_list,
                       allowed=f"a non-empty list of distinct names from {list(TASK_NAMES)}",
                       help="training tasks (gaugedyn.adam.tasks)"),
        "beta1s": Param(list, [0.8, 0.9, 0.95, 0.99, 0.999], quick=[0.9, 0.95, 0.99],
                        check=_betas, allowed="a list of >= 2 distinct numbers in [0.8, 0.999]",
                        help="first-moment factors (rows of the grid)"),
        "beta2s": Param(list, [0.8, 0.9, 0.95, 0.99, 0.999], quick=[0.9, 0.95, 0.99],
                        check=_betas, allowed="a list of >= 2 distinct numbers in [0.8, 0.999]",
                        help="second-moment factors (columns of the grid)"),
        "seeds": Param(int, 3, quick=1, check=lambda v: 1 <= v <= 100, allowed="1 to 100",
                       help="independent runs per cell"),
        "steps": Param(int, 0, quick=50, check=lambda v: 0 <= v <= 100_000,
                       allowed="0 (each task's default: 400, teacher-student 600) to 100000",
                       help="Adam steps per run"),
        "lr": Param(float, 0.0, check=lambda v: 0 <= v <= 1,
                    allowed="0 (each task's default) or a step size in (0, 1]",
                    help="Adam step size"),
        "sample": Param(int, 16, check=lambda v: 1 <= v <= 4096, allowed="1 to 4096",
                        help="coordinates per run at which the full split is recorded (checks)"),
        "lag_min": Param(float, THRESHOLDS["lag_min"], check=lambda v: 0 < v < 1, allowed="a number in (0, 1)",
                         help="finding 2: mean off-diagonal lag share counted as substantial"),
        "residual_max": Param(float, THRESHOLDS["residual_max"], check=lambda v: 0 < v < 1,
                              allowed="a number in (0, 1)",
                              help="finding 3: mean residual share counted as small"),
        "skip": Param(float, THRESHOLDS["skip"], check=lambda v: 0 <= v < 1, allowed="a number in [0, 1)",
                      help="start-up fraction of steps left out of the share averages"),
    }
    definitions = {
        "update": "u = m^/(sqrt(v^)+eps), m^ = m/(1-b1^t), v^ = v/(1-b2^t) (torch.optim.Adam)",
        "parts": "sign = sign(g_t); lag = (m^ - w^)/(sqrt(v^)+eps), w_t = b2 w_{t-1} + (1-b2) g_t, "
                 "w^ = w/(1-b2^t); residual = transition + ratio + eps = u - sign - lag",
        "share": "|p_k|_2 / (|sign|_2 + |lag|_2 + |residual|_2) per step, over all parameters; "
                 "cell value: mean over steps after the start-up fraction skip, then over seeds",
        "smoothness": "mean_t |log|u_{t+1}| - log|u_t||, first step left out (smaller = smoother)",
        "final_loss": "evaluation loss after training (cross-entropy; teacher-student: 1/2 MSE)",
        "verdicts": "gaugedyn.adam.grid_claims: tied_sign_dominated: min over tied cells of "
                    "share_sign - max(share_lag, share_residual) > 0; lag_substantial_off_diagonal: "
                    "mean off-diagonal lag share >= lag_min; residual_comparatively_small: mean "
                    "residual share < residual_max; tied_smoother: mean tied smoothness / mean "
                    "untied smoothness < 1",
    }

    def tasks(self, config):
        b1s = [float(b) for b in config["beta1s"]]
        b2s = [float(b) for b in config["beta2s"]]
        if not set(b1s) & set(b2s):
            raise InputError(f"beta1s = {b1s} and beta2s = {b2s} share no value; the grid needs "
                             "tied cells (beta1 == beta2): allowed: lists with a common value")
        common = {"steps": int(config["steps"]), "lr": float(config["lr"]),
                  "sample": int(config["sample"])}
        return [{"task": t, "beta1": b1, "beta2": b2, "seed": s, **common}
                for t in config["tasks"] for b1 in b1s for b2 in b2s
                for s in range(int(config["seeds"]))]

    def run_task(self, task, seed):
        from ..adam.tasks import DEFAULTS, train_task

        steps = task["steps"] or None
        lr = task["lr"] or DEFAULTS[task["task"]]["lr"]
        out = train_task(task["task"], task["beta1"], task["beta2"], seed=seed, steps=steps,
                         lr=lr, sample=task["sample"], threads=1)
        checks = sample_checks(out, lr)
        keep = ("loss", "share_sign", "share_lag", "share_residual", "update_norm",
                "transition_frac", "final_loss", "initial_loss", "smoothness", "n_params")
        result = {k: out[k] for k in keep}
        lag_norm = np.asarray(out["norms"])[:, 1]
        result.update(checks, lag_norm_max=float(np.max(lag_norm)), lr=float(lr))
        return result

    def analyse(self, config, tasks, results):
        thresholds = {k: config[k] for k in THRESHOLDS}
        arrays, grid = analyse_grid([dict(r) for r in results], tasks, thresholds)
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        claims = correctness_claims(tasks, results)
        diagnostics = {"findings": {}}
        names = [t for t in TASK_NAMES if any(x["task"] == t for x in tasks)]
        arrays["task_names"] = np.array(names)
        arrays["verdict_names"] = np.array(VERDICTS)
        for name in names:
            mine = {c["id"].split(":", 1)[1]: c for c in grid if c["id"].startswith(name + ":")}
            arrays[f"{name}__verdict"] = np.array([mine[v]["passed"] for v in VERDICTS],
                                                  dtype=np.int8)
            findings = [finding_claim(name, mine[v]) for v in VERDICTS]
            claims += findings
            diagnostics["findings"][name] = {
                v: {"held": bool(mine[v]["passed"]), "measured": mine[v]["measured"]}
                for v in VERDICTS}
            arrays[f"caption_heatmaps_{name}"] = np.array(heatmap_caption(name, findings))
        held = {n: int(arrays[f"{n}__verdict"].sum()) for n in names}
        diagnostics["findings_held"] = {n: f"{held[n]}/{len(VERDICTS)}" for n in names}
        return arrays, claims, diagnostics

    def plot(self, arrays, config, outdir):
        names = []
        for name in [str(t) for t in arrays["task_names"]]:
            names.append(plot_heatmaps(arrays, outdir, name))
            names.append(plot_update_norms(arrays, outdir, name))
        names.append(plot_verdicts(arrays, outdir))
        return names


def sample_checks(out: dict, lr: float) -> dict:
    """Checks at the recorder's sampled coordinates of one run.

    ``sum_error``: ``max |sign + lag + transition + ratio + eps - update| / max(1, sum_k |p_k|)``
    (round-off relative to the parts' magnitudes: far off the diagonal, e.g. ``b1 = 0.999``,
    ``b2 = 0.8``, the lag and ratio parts grow large and cancel); ``lag_abs_max``:
    ``max |lag|``; ``applied_ratio``: ``max |p_t - p_{t-1} + lr u_t| / bound`` with the float32
    round-off bound ``ulp(max(|p_t|, |p_{t-1}|)) + 16 * 2^-24 lr |u_t|`` of PyTorch's step
    (<= 1 when the recorded update is the applied one).
    """
    groups = sorted({k.rsplit("_g", 1)[1] for k in out if k.startswith("sample_update_g")})
    sum_err, lag_max, applied = 0.0, 0.0, 0.0
    for g in groups:
        parts = [np.asarray(out[f"sample_{p}_g{g}"], dtype=float)
                 for p in ("sign", "lag", "transition", "ratio", "eps")]
        u = np.asarray(out[f"sample_update_g{g}"], dtype=float)
        if u.size == 0:
            continue
        scale = np.maximum(sum(np.abs(x) for x in parts), 1.0)
        sum_err = max(sum_err, float(np.max(np.abs(sum(parts) - u) / scale)))
        lag_max = max(lag_max, float(np.max(np.abs(parts[1]))))
        p = np.asarray(out[f"sample_param_g{g}"], dtype=float)
        if p.shape[0] > 1:
            dp = p[1:] - p[:-1]
            big = np.maximum(np.abs(p[1:]), np.abs(p[:-1])).astype(np.float32)
            bound = np.spacing(big).astype(float) + 16 * _F32 * lr * np.abs(u[1:])
            applied = max(applied, float(np.max(np.abs(dp + lr * u[1:]) / bound)))
    return {"sum_error": sum_err, "lag_abs_max": lag_max, "applied_ratio": applied,
            "sampled_groups": len(groups)}


def correctness_claims(tasks: list[dict], results: list[dict]) -> list[Claim]:
    """The package-correctness checks of a grid (they decide the exit status)."""
    tied = [i for i, t in enumerate(tasks) if float(t["beta1"]) == float(t["beta2"])]
    lag_tied = max((max(float(np.max(np.abs(results[i]["share_lag"]))),
                        float(results[i]["lag_norm_max"]), float(results[i]["lag_abs_max"]))
                    for i in tied), default=float("nan"))
    sum_err = max(float(r["sum_error"]) for r in results)
    applied = max(float(r["applied_ratio"]) for r in results)
    sampled = min(int(r["sampled_groups"]) for r in results)
    return [
        Claim(id="beta_grid.lag_zero_on_diagonal",
              statement=(f"on every tied cell (beta1 == beta2; {len(tied)} runs) the lag part is "
                         "exactly zero at every step: largest lag share, lag norm and sampled "
                         "|lag| over those runs"),
              measured=lag_tied, expected=0.0, tolerance=0.0,
              passed=bool(tied) and lag_tied == 0.0),
        Claim(id="beta_grid.parts_sum_to_update",
              statement=(f"sign + lag + transition + ratio + eps equals the update to {SUM_TOL:g} "
                         "relative to max(1, sum of the parts' magnitudes) (largest error over the "
                         "sampled coordinates of every step of every run, float64 from the "
                         f"optimizer's float32 state; {len(results)} runs)"),
              measured=sum_err, expected=0.0, tolerance=SUM_TOL,
              passed=sampled >= 1 and sum_err <= SUM_TOL),
        Claim(id="beta_grid.update_is_applied_step",
              statement=("the recorded update is the step torch.optim.Adam applied: "
                         "|p_t - p_{t-1} + lr u_t| within the float32 round-off bound "
                         "ulp(p) + 16 2^-24 lr |u| at every sampled coordinate and step "
                         "(largest ratio to the bound)"),
              measured=applied, expected="<= 1", tolerance=1.0,
              passed=sampled >= 1 and applied <= 1.0),
    ]


def finding_claim(task: str, grid_claim: dict) -> Claim:
    """A seed-claim verdict as a reported finding (see module docstring)."""
    held = bool(grid_claim["passed"])
    word = "HELD" if held else "DID NOT HOLD"
    cid = grid_claim["id"].split(":", 1)[1]
    return Claim(id=f"finding:{task}:{cid}",
                 statement=(f"{word} on "
                            f"{task}: {grid_claim['statement']}; expected "
                            f"{grid_claim['expected']}; measured {_numbers(grid_claim['measured'])}"),
                 measured={"verdict": "held" if held else "not held",
                           **(grid_claim["measured"] or {})},
                 expected=grid_claim["expected"], tolerance=grid_claim["tolerance"], passed=held,
                 kind="finding")


def _numbers(measured) -> str:
    if not isinstance(measured, dict):
        return str(measured)
    return ", ".join(f"{k} = {v:.3g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in measured.items())


def heatmap_caption(task: str, findings: list[Claim]) -> str:
    parts = []
    for c in findings:
        m = dict(c.measured)
        verdict = m.pop("verdict")
        key, value = next(iter(m.items()), ("", None))
        number = f" ({key} = {value:.3g})" if isinstance(value, float) else ""
        parts.append(f"{c.id.rsplit(':', 1)[1].replace('_', ' ')}: {verdict}{number}")
    return (f"{task}: sign, lag and residual shares of the Adam update, smoothness "
            "mean|Delta log|u|| and final loss over (beta1 rows, beta2 columns); seed means; the "
            "tied diagonal is outlined. Seed-claim findings: " + "; ".join(parts) + ".")


def _label(b: float) -> str:
    return f"{b:g}"


def plot_heatmaps(arrays: dict, outdir, task: str):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import save_figure

    b1s, b2s = arrays["beta1s"], arrays["beta2s"]
    fig, axes = plt.subplots(1, len(FIELDS), figsize=(3.0 * len(FIELDS), 3.1), squeeze=False)
    for ax, f in zip(axes[0], FIELDS):
        data = np.asarray(arrays[f"{task}__{f}"], dtype=float)
        share = f.startswith("share")
        im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis",
                       vmin=0 if share else None, vmax=1 if share else None)
        for i, a in enumerate(b1s):
            for j, b in enumerate(b2s):
                if np.isfinite(data[i, j]):
                    ax.text(j, i, f"{data[i, j]:.2f}" if share else f"{data[i, j]:.3g}", ha="center", va="center", fontsize=6,
                            color="w" if (share and data[i, j] < 0.5) else "k")
                if a == b:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="r", lw=1.2))
        ax.set_xticks(range(len(b2s)), [_label(b) for b in b2s], rotation=45)
        ax.set_yticks(range(len(b1s)), [_label(b) for b in b1s])
        ax.set(xlabel="beta2", ylabel="beta1", title=f.replace("_", " "))
        ax.grid(False)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(task)
    caption = str(arrays.get(f"caption_heatmaps_{task}", task))
    return save_figure(fig, outdir, f"beta_grid_heatmaps_{task}", caption)


def plot_update_norms(arrays: dict, outdir, task: str):
    import matplotlib.pyplot as plt

    from ..plotting import save_figure

    b1s, b2s = [float(b) for b in arrays["beta1s"]], [float(b) for b in arrays["beta2s"]]
    un = np.asarray(arrays[f"{task}__update_norm"], dtype=float)
    sm = np.asarray(arrays[f"{task}__smoothness"], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True, squeeze=False)
    cmap = plt.get_cmap("viridis")
    for i, a in enumerate(b1s):
        color = cmap(i / max(len(b1s) - 1, 1))
        for j, b in enumerate(b2s):
            y = un[i, j]
            if not np.isfinite(y).any():
                continue
            ax = axes[0, 0] if a == b else axes[0, 1]
            ls = "-" if a == b else (":" if b < a else "--")
            ax.plot(np.arange(1, y.size + 1), y, color=color, ls=ls, lw=1.0,
                    label=f"({a:g}, {b:g}) s={sm[i, j]:.3f}")
    for ax, title in zip(axes[0], ("tied: beta1 = beta2", "untied (dashed: beta2 > beta1, dotted: beta2 < beta1)")):
        ax.set(yscale="log", xlabel="step", title=title)
        if ax.lines:
            ax.legend(fontsize=5, ncol=2)
    axes[0, 0].set_ylabel("update norm |u|")
    fig.suptitle(task)
    caption = (f"{task}: update-norm trajectories |u_t| (seed mean), tied cells left, untied right, "
               "colour by beta1; s = smoothness mean|Delta log|u|| of each cell.")
    return save_figure(fig, outdir, f"beta_grid_update_norms_{task}", caption)


def plot_verdicts(arrays: dict, outdir):
    import matplotlib.pyplot as plt

    from ..plotting import save_figure

    names = [str(t) for t in arrays["task_names"]]
    verdicts = [str(v) for v in arrays["verdict_names"]]
    table = np.array([arrays[f"{n}__verdict"] for n in names], dtype=float)
    fig, ax = plt.subplots(figsize=(1.4 * len(verdicts) + 2, 0.4 * len(names) + 1.4))
    ax.imshow(table, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    for i in range(len(names)):
        for j in range(len(verdicts)):
            ax.text(j, i, "held" if table[i, j] else "not held", ha="center", va="center",
                    fontsize=8, color="w")
    ax.set_xticks(range(len(verdicts)), [v.replace("_", "\n") for v in verdicts], fontsize=7)
    ax.set_yticks(range(len(names)), names)
    ax.grid(False)
    caption = ("The four seed claims judged task by task on the measured grid (green: held, red: "
               "did not hold); the numbers behind each verdict are in the claims table.")
    return save_figure(fig, outdir, "beta_grid_verdicts", caption)


EXPERIMENT = BetaGrid()
