"""Matched specialization, different adaptation: second-moment structure in shared representations.

Small Adam-trained networks with a shared encoder and one linear head per target reach matched
readout measurements by two formation routes (acquisition-formed, update-formed), then receive
the same ten opposing updates; Adam-state interventions locate the response difference. A
set-up is chosen from a candidate family on calibration seeds by its defining properties only,
then every table is measured on its own confirmatory seeds. The protocol (set-up, choice rule,
readings, findings) is ``PROTOCOL.md`` beside this module, its fixed numbers
`._protocol`; this module declares the settings and runs the two stages
(`._stages`); the findings are `._analysis` and the figures `._figures`.
"""

from __future__ import annotations

import json

from ..._errors import InputError
from ...harness import Choice, Experiment, Param
from . import _calibration as sc
from . import _controls as sk
from . import _extensions as sx
from . import _figures as sg
from . import _tables as st
from ._protocol import EVALS, FINDING_MEASURES, FULL_SEEDS, MEANINGS, STRENGTHS, TABLES

DEFINITIONS = {
    "readout precision r_k": "1 - mean_n (y_k - z_k)^2 / Var z_k on the evaluation draw (Var z_k = 1)",
    "specialization s": "r_f - r_o: favoured target f minus the target o = (f+1) mod K that the "
    "opposing pulse favours",
    "specialization lost": "s before minus s after pulse_steps opposing updates",
    "route contrast": "per seed, mean over directions of (lost, acquisition-formed) - (lost, "
    "update-formed); 95% paired seed-bootstrap interval",
    "switch": "argmax_k r_k = f before the pulse and not after it; the checkpoints with f on "
    "top before the pulse are the denominator of the switch rate",
    "acquisition reading": "each acquisition meaning with a candidate of every defining "
    "property, chosen by the same rule from its own rows of the family, measured on the same "
    "confirmatory seeds; a finding judged under every such meaning and both readouts",
    "pulse strength (dose)": "the declared opposing-pulse strengths, every one run on Table 2's "
    "seeds; the primary one removes the fraction of the update-formed route's specialization "
    "closest to 1/2 on the calibration seeds",
    "matched control": "the weight-history control's r_f and r_o at the formation endpoint "
    "inside +-tolerance of the constant route's (heads, paired 95% t intervals); its findings "
    "are judged only under the acquisition readings where it is matched",
    "endpoint mismatch": "per seed route difference of r_f and of r_o at the formation endpoint; "
    "matched when both paired intervals lie inside +-tolerance",
    "a_v": "mean over coordinates of 1 / (sqrt(v / (1 - beta2^t)) + eps)",
    "common-scale pattern effect": "contrast at equalised a_v minus contrast at equalised a_v "
    "with v exchanged",
    "cancellation fraction": "-C/S, C = sum_t sum_{j!=k} g_j . g_k, S = sum_t sum_k |g_k|^2 over "
    "encoder parameters, g_k the weighted gradient of target k's loss",
}


def _p(type_, default, lo, hi, why, help_, quick=None, **kw) -> Param:
    return Param(type_, default, quick=quick, lo=lo, hi=hi, why=why, help=help_, **kw)


class SharedRepresentation(Experiment):
    name = "shared_representation"
    description = (
        "two formation routes to matched readouts in a shared-encoder network, ten "
        "opposing updates, Adam-state interventions; set-up chosen on calibration "
        "seeds, every table on disjoint confirmatory seeds"
    )
    definitions = DEFINITIONS
    measures = FINDING_MEASURES
    params = {
        "acquisition": Param(
            (str, list),
            ["gain", "rate", "step"],
            choices=MEANINGS,
            min_len=1,
            max_len=3,
            distinct=True,
            item=str,
            help="family: what acquisition means (input gain; label "
            "observation rate per sample; per step); one value fixes it",
        ),
        "d_Z": Param(
            (int, list),
            [1, 2, 3, 32],
            lo=1,
            hi=256,
            min_len=1,
            max_len=8,
            distinct=True,
            item=int,
            why="time: d_Z x width per network",
            help="family: capacity of the shared representation (encoder output "
            "width); one value fixes it",
        ),
        "lr": Param(
            (float, list),
            [0.01, 0.003],
            lo=0.0,
            hi=1.0,
            lo_open=True,
            min_len=1,
            max_len=4,
            distinct=True,
            item=float,
            why="Adam diverges far below it",
            help="family: Adam step size; one value fixes it",
        ),
        "pulse": Param(
            str,
            "auto",
            choices=("auto", *STRENGTHS),
            help="primary opposing-pulse strength: auto (the declared dose rule, on the "
            "calibration seeds) or one declared strength; every strength is run on Table 2's "
            "seeds either way",
        ),
        "readout": Param(
            (str, list),
            ["own", "common"],
            choices=EVALS,
            min_len=1,
            max_len=2,
            distinct=True,
            item=str,
            help="family: evaluation distribution of the readouts (the routes' own "
            "inputs or common equal gains; only input-gain acquisition "
            "tells them apart)",
        ),
        "recalibrate": Param(
            bool,
            False,
            help="search the candidate family again instead of "
            "reusing the stored full calibration (calibration.json)",
        ),
        "seeds": _p(
            int,
            FULL_SEEDS,
            2,
            512,
            "time: six formations per confirmatory seed",
            "confirmatory seeds per table (each table its own)",
            quick=10,
        ),
        "calibration_seeds": _p(
            int,
            16,
            2,
            256,
            "time: 24 formations of 22 networks per seed",
            "calibration seeds (a disjoint stream)",
            quick=6,
        ),
        "targets": _p(
            int,
            2,
            2,
            4,
            "the candidate family and pulses are defined up to 4",
            "number of Gaussian latent targets K",
        ),
        "dim": _p(int, 16, 4, 256, "memory: batch x dim floats per network", "input dimension"),
        "width": _p(int, 32, 2, 512, "time: width^2 per network and step", "first encoder width"),
        "activation": Param(str, "tanh", choices=("tanh", "relu"), help="encoder activation"),
        "rho": _p(
            float,
            0.3,
            0.0,
            0.9,
            "the latent covariance must stay positive definite",
            "correlation between targets",
        ),
        "sigma": _p(float, 0.5, 0.0, 10.0, "beyond that no target is readable", "input noise"),
        "beta1": _p(float, 0.9, 0.0, 0.999, "Adam needs beta1 < 1", "Adam beta1"),
        "beta2": _p(float, 0.999, 0.0, 0.9999, "Adam needs beta2 < 1", "Adam beta2"),
        "eps": _p(float, 1e-8, 0.0, 1e-2, "larger eps is no longer Adam", "Adam eps", lo_open=True),
        "batch": _p(
            int,
            128,
            8,
            4096,
            "memory: batch x width floats per network",
            "fresh samples per update",
        ),
        "ancestor_steps": _p(int, 200, 0, 20000, "time", "shared-ancestor updates"),
        "formation_steps": _p(int, 500, 10, 20000, "time", "formation updates per route"),
        "pulse_steps": _p(int, 10, 1, 400, "the horizon marks stop at 400", "opposing updates"),
        "horizon": _p(
            int,
            200,
            10,
            400,
            "the horizon marks stop at 400",
            "continued-opposition updates (Figure 4b)",
            quick=100,
        ),
        "gain_weak": _p(
            float,
            0.5,
            0.0,
            1.0,
            "the favoured gain is 1",
            "acquisition gain of the non-favoured targets",
            lo_open=True,
            hi_open=True,
        ),
        "observe_weak": _p(
            float,
            0.25,
            0.0,
            1.0,
            "a rate lies in (0, 1)",
            "acquisition as label observation: rate of the non-favoured targets' labels",
            lo_open=True,
            hi_open=True,
        ),
        "control_delta": _p(
            float,
            0.3,
            0.0,
            0.5,
            "weights must stay in (0, 1)",
            "variable weight history: 1/K +- delta on the favoured target",
            lo_open=True,
            hi_open=True,
        ),
        "control_period": _p(
            int,
            1,
            1,
            10000,
            "time",
            "steps per half-cycle of the variable weight history (1: the shortest alternation, "
            "whose running mean is the constant route's weight after every second update)",
        ),
        "eval_n": _p(
            int,
            1024,
            64,
            65536,
            "memory: eval_n x dim floats per seed",
            "evaluation samples per seed",
        ),
        "tolerance": _p(
            float,
            0.03,
            0.0,
            0.5,
            "readouts lie in [0, 1]",
            "endpoint matching tolerance",
            lo_open=True,
        ),
        "margin": _p(
            float,
            0.02,
            0.0,
            0.5,
            "readouts lie in [0, 1]",
            "equivalence margin (reset, exchange m, heads)",
            lo_open=True,
        ),
        "control_margin": _p(
            float,
            0.01,
            0.0,
            0.5,
            "readouts lie in [0, 1]",
            "equivalence margin of the weight-history control (Figure 2b)",
            lo_open=True,
        ),
        "spec_level": _p(
            float,
            0.2,
            0.0,
            2.0,
            "specialization is a difference of precisions",
            "defining property: probe specialization at least this in both routes",
        ),
        "conflict_level": _p(
            float,
            0.1,
            -1.0,
            1.0,
            "-C/S lies in [-1, 1] for two targets",
            "defining property: the acquisition route's -C/S at least this",
        ),
        "w_grid": Param(
            list,
            [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99, 0.999],
            lo=0.0,
            hi=1.0,
            hi_open=True,
            min_len=1,
            max_len=32,
            distinct=True,
            why="a loss weight lies in [0, 1)",
            help="candidate loss weights w* of the update route",
        ),
        "record_every": _p(
            int, 10, 1, 1000, "memory: one record per step", "formation record interval"
        ),
    }

    space = {
        "acquisition": Choice(
            values=("rate", "step"),
            why="the abstract's 'acquisition' reads as per-sample label observation or as "
            "per-step label masking; both have all three defining properties (every run judges "
            "both as readings; a narrowed family measures one alone)",
        ),
        "pulse": Choice(
            values=("weak", "mild", "strong"),
            why="the abstract gives the pulse no strength; the primary one follows a declared "
            "dose rule, and every table beyond Table 2 uses it",
        ),
        "control_period": Choice(
            values=(50,),
            why="the weight history's alternation is not in the abstract; alternating every "
            "update ends formation matched, every 50 in its off phase (then its findings are "
            "not judged)",
        ),
    }

    extensions = sx.EXTENSIONS
    published_arrays = st.PUBLISHED_ARRAYS

    def result_tables(self, summary):
        """The pulse dose-response in numbers (`._tables.dose_table()`)."""
        return st.dose_table(summary)

    def extension_table(self, runs):
        """Table 3: the paper's four criteria per extension setting, the paper's letters beside
        each acquisition reading's (`._extensions.table()`)."""
        return sx.table(runs)

    def controls(self, config):
        return sk.controls(config)

    def validate(self, config):
        """The variable weight history ``1/K +- delta`` must stay a positive weight."""
        if config["control_delta"] >= 1.0 / config["targets"]:
            raise InputError(
                f"control_delta = {config['control_delta']:g} is not allowed with "
                f"targets = {config['targets']}; allowed: a number in "
                f"(0, {1 / config['targets']:g})"
            )

    def tasks(self, config):
        """The family lists normalised (a single value is a one-entry list); every task carries
        how its set-up is obtained (`._calibration.plan()`), so a stored choice that changes
        is a different task. With a stored calibration, one task per table (each its own task
        seed, so its own seeds; the harness runs them in parallel); a run that calibrates is one
        task, so the family is searched once."""
        self.validate(config)
        config = dict(config) | {k: sc._as_list(config[k]) for k in sc.FAMILY_KEYS}
        how = sc.plan(config, sc.setup_keys(self.params))
        if how["source"] == "calibrate":
            return [config | {"calibration": how, "tables": list(TABLES)}]
        return [config | {"calibration": how, "tables": [t]} for t in TABLES]

    def run_task(self, task, seed):
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny batched kernels: extra threads only add contention
        try:
            return self._run(task, seed)
        finally:
            torch.set_num_threads(threads)

    def _run(self, task, seed):
        """Calibrate (or take the stored choice), then every acquisition reading's set-up on
        the same confirmatory seeds; a reading's arrays are keyed ``{meaning}|{name}``."""
        from . import _stages as ss  # torch: imported by a run, not by the declaration

        how = task.get("calibration") or {"source": "calibrate", "reason": "calibration"}
        if how["source"] in ("stored", "stored subset"):
            cal = dict(how)
        else:
            cseed = sc.calibration_seed(task, sc.setup_keys(self.params), seed.entropy)
            cal = ss.calibrate(task, cseed) | how | {"seed": sc.seed_record(cseed)}
        out: dict = {}
        records = {}
        for meaning, pick in ss.reading_picks(cal).items():
            cand = next(c for c in cal["candidates"] if c["name"] == pick["measured"])
            strength = pick["strength"] if task["pulse"] == "auto" else task["pulse"]
            res = ss.confirm(
                task, cand, pick["w_star"], seed, tables=task["tables"], strength=strength
            )
            records[meaning] = json.loads(res.pop("records"))
            out |= {f"{meaning}|{k}": v for k, v in res.items()}
        out["records"] = json.dumps(records)
        out["calibration"] = json.dumps(cal)
        return out

    def analyse(self, config, tasks, results, seed):
        from . import _analysis as sa

        return sa.analyse(config, sa.merge(results), seed)

    def plot(self, arrays, config, outdir):
        return sg.plot(arrays, config, outdir)


EXPERIMENT = SharedRepresentation()
