"""Full-batch Adam at the edge of stability: the negative feedback through ``v`` and its tests.

Digits MLPs trained with ``torch.optim.Adam`` (MSE, cross-entropy, cross-entropy on partly
replaced labels) at each step size and ``beta1``, with the observables of ``_edge`` at every step
(active curvature, preconditioned sharpness by Lanczos, secant curvature, gradient cosine,
iterate averaging), the frozen-``v`` control, the diagonal quadratic and the Lanczos estimate
against a dense eigensolver. The protocol, fixed before any run, is ``PROTOCOL.md`` section 2
in this folder; its constants are ``_protocol``, the analysis ``_edge_analysis`` and the figure
``_figures``.
"""

from __future__ import annotations

from ..._meta import integer_seed
from ...harness import Choice, Experiment, Param
from ._edge_analysis import analyse
from ._edge_controls import freeze_controls, readout_controls
from ._figures import edge_curvature
from ._protocol import (
    EDGE_FRACTION,
    FINDING_MEASURES,
    FREEZE_FRACTIONS,
    LOSSES,
    SEPARATION,
    SEPARATION_RANGE,
    STARTUP,
    edge_start,
)


class AdamEdge(Experiment):
    name = "adam_edge"
    description = (
        "full-batch Adam on digits (MSE and cross-entropy) at the edge of stability: "
        "the frozen-v control, active curvature against 2(1+beta1)/(1-beta1), the "
        "diagonal quadratic, gradient reversal and iterate averaging"
    )
    measures = FINDING_MEASURES
    params = {
        "losses": Param(
            list,
            ["mse", "ce_noisy"],
            item=str,
            choices=LOSSES,
            quick=["mse", "ce_noisy"],
            min_len=1,
            max_len=3,
            distinct=True,
            help="losses (ce_noisy: cross-entropy on 20% replaced labels, width 4)",
        ),
        "lrs": Param(
            list,
            [1e-2],
            item=float,
            lo=1e-5,
            hi=0.3,
            min_len=1,
            max_len=6,
            distinct=True,
            why="beyond, Adam diverges at start-up",
            help="step sizes",
        ),
        "beta1s": Param(
            list,
            [0.9],
            item=float,
            quick=[0.9],
            lo=0.0,
            hi=0.99,
            min_len=1,
            max_len=6,
            distinct=True,
            why="threshold 398 at 0.99",
            help="first-moment factors",
        ),
        "beta2": Param(
            float,
            0.99,
            lo=0.5,
            hi=0.9999,
            why="memory 1e4 steps",
            help="second-moment factor of the diagonal quadratic, the Lanczos check and the "
            "frozen-v controls",
        ),
        "beta2s": Param(
            list,
            [0.98, 0.99, 0.995],
            item=float,
            lo=0.5,
            hi=0.9999,
            min_len=1,
            max_len=6,
            distinct=True,
            why="memory 1e4 steps",
            help="second-moment factors of the network runs (three or more: the time to the "
            "edge against 1 - beta2)",
        ),
        "seeds": Param(
            int,
            10,
            quick=2,
            lo=2,
            hi=32,
            why="an interval needs two seeds; CPU time",
            help="initialisations per cell (10: the power argument of PROTOCOL.md section 2)",
        ),
        "steps": Param(
            int,
            1500,
            quick=600,
            lo=100,
            hi=20000,
            why="CPU time: ~4 HVPs a step",
            help="Adam steps per run",
        ),
        "n_samples": Param(
            int,
            256,
            quick=128,
            lo=32,
            hi=1797,
            why="the digits set has 1797 images",
            help="full-batch size",
        ),
        "lanczos_every": Param(
            int,
            50,
            quick=50,
            lo=10,
            hi=1000,
            why="Lanczos cost",
            help="steps between preconditioned-sharpness estimates",
        ),
        "skip": Param(
            float,
            0.1,
            lo=0.0,
            hi=0.5,
            why="half the run at most",
            help="start-up fraction before an edge may be declared",
        ),
        "quadratic_steps": Param(
            int,
            20000,
            quick=5000,
            lo=1000,
            hi=200000,
            why="CPU time",
            help="Adam steps on the diagonal quadratic",
        ),
        "freeze_fractions": Param(
            list,
            list(FREEZE_FRACTIONS),
            item=float,
            lo=0.1,
            hi=EDGE_FRACTION,
            hi_open=True,
            min_len=1,
            max_len=4,
            distinct=True,
            why="below the edge: v frozen before the run reaches it",
            help="shares of the threshold at which a copy with v frozen starts (each a copy)",
        ),
        "lanczos_fine": Param(
            int,
            10,
            lo=1,
            hi=1000,
            why="Lanczos cost",
            help="steps between sharpness estimates until the run is on the edge and every "
            "copy frozen",
        ),
        "exponent_every": Param(
            int,
            100,
            lo=0,
            hi=10000,
            why="CPU time: about 45 losses a measurement; 0: none",
            help="steps between effective-exponent measurements on the edge",
        ),
        "separation_factor": Param(
            float,
            SEPARATION,
            lo=1.0,
            hi=10.0,
            why="S >= kappa_g always; a factor 10 is no longer 'separates'",
            help="quadratic_separates: the factor by which S must exceed kappa_g",
        ),
    }
    space = {
        "separation_factor": Choice(
            lo=SEPARATION_RANGE[0],
            hi=SEPARATION_RANGE[1],
            why="the abstract says the active curvature 'separates' from the sharpness with no "
            "factor; 10% to a factor 2 is what a reader would call separated",
        ),
    }

    def controls(self, config):
        return freeze_controls(config) + readout_controls(config)

    definitions = {
        "active_curvature": "kappa_g = d^T H d / d^T P d, d = P^-1 g, P = diag(sqrt(v^_t) + eps) "
        "of the step (one HVP)",
        "sharpness": "S = lambda_max(P^-1/2 H P^-1/2), scipy eigsh (Lanczos) over HVPs, warm start",
        "frozen_v": "per freeze fraction f, a copy of the run from t_f on with P held at "
        f"P(t_f), t_f the first Lanczos step after {STARTUP} steps with lr S >= f thr (before "
        "the edge); its S uses P(t_f); its delay: the steps from the adaptive run's first edge "
        "step after t_f to the copy's (the run's end when it never reaches it: a lower bound)",
        "effective_exponent": "gaugedyn.adam.effective_exponent of s -> L(theta + s u), u the "
        "step's Adam update, fitted over |s| from 1/32 to 1 around the line minimum, every "
        "exponent_every steps on the edge",
        "time_to_edge": f"the adaptive run's first Lanczos step after {STARTUP} steps with "
        f"lr S >= {EDGE_FRACTION} thr",
        "secant": "dtheta^T (g_t - g_{t-1}) / dtheta^T P dtheta",
        "cosine": "g_t . g_{t-1} / (|g_t| |g_{t-1}|)",
        "ema_loss": "loss at bar theta <- 0.9 bar theta + 0.1 theta",
        "period_2": "mean |y_t - (y_{t-1} + y_{t+1}) / 2| of y = log loss",
        "threshold": "2 (1 + beta1) / (1 - beta1) on lr times the curvature",
        "edge_window": f"from the first Lanczos step after skip*steps with lr S >= {EDGE_FRACTION} "
        "threshold to the end; no such step: no edge",
    }

    def tasks(self, config):
        common = {"beta2": float(config["beta2"])}
        out = [{"kind": "lanczos_check", "lr": 1e-2, "beta1": 0.9, **common}]
        for b1 in config["beta1s"]:
            for s in range(int(config["seeds"])):
                out.append(
                    {
                        "kind": "quadratic",
                        "lr": float(config["lrs"][0]),
                        "beta1": float(b1),
                        "steps": int(config["quadratic_steps"]),
                        "seed_index": s,
                        **common,
                    }
                )
        for loss in config["losses"]:
            for lr in config["lrs"]:
                for b1 in config["beta1s"]:
                    for b2 in config["beta2s"]:
                        for s in range(int(config["seeds"])):
                            out.append(
                                {
                                    "kind": "run",
                                    "loss": loss,
                                    "lr": float(lr),
                                    "beta1": float(b1),
                                    "beta2": float(b2),
                                    "steps": int(config["steps"]),
                                    "n_samples": int(config["n_samples"]),
                                    "lanczos_every": int(config["lanczos_every"]),
                                    "lanczos_fine": int(config["lanczos_fine"]),
                                    "exponent_every": int(config["exponent_every"]),
                                    "skip": float(config["skip"]),
                                    "freeze_fractions": [
                                        float(f) for f in config["freeze_fractions"]
                                    ],
                                    "seed_index": s,
                                }
                            )
        return out

    def run_task(self, task, seed):
        import torch

        from . import _edge

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            s = integer_seed(seed)
            if task["kind"] == "lanczos_check":
                return _edge.lanczos_check(task["lr"], task["beta1"], task["beta2"], s)
            if task["kind"] == "quadratic":
                return _edge.diagonal_quadratic(
                    task["beta1"], task["beta2"], task["lr"], task["steps"], s
                )
            out = _edge.run_edge(
                task["loss"],
                task["lr"],
                task["beta1"],
                task["beta2"],
                task["steps"],
                s,
                task["n_samples"],
                task["lanczos_every"],
                freeze_fractions=tuple(task["freeze_fractions"]),
                freeze_after=STARTUP,
                lanczos_fine=task["lanczos_fine"],
                exponent_every=task.get("exponent_every", 0),
            )
        finally:
            torch.set_num_threads(before)
        out["edge_start"] = edge_start(out, task)
        return out

    def analyse(self, config, tasks, results, seed):
        return analyse(tasks, results, seed, float(config["separation_factor"]))

    def plot(self, arrays, config, outdir):
        return [edge_curvature(arrays, outdir)]


EXPERIMENT = AdamEdge()
