"""The harness labels the findings of every run outside the full configuration, for every
experiment: no experiment opts in."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gaugedyn.experiments import Claim, Experiment, Param, execute, finding, make_config
from gaugedyn.harness import labelled, provisional


class Unlabelled(Experiment):
    """An experiment whose analysis labels nothing itself: one check and one finding."""

    name = "unlabelled"
    description = "one finding, one check, no label of its own"
    params = {
        "n": Param(int, 4, quick=2, lo=1, hi=8, why="a test", help="tasks"),
        "device": Param(str, "cpu", choices=("cpu", "meta"), help="changes no number"),
    }
    label_keys = ("n",)

    def tasks(self, config):
        return [{"i": i} for i in range(config["n"])]

    def run_task(self, task, seed):
        return {"x": float(task["i"])}

    def analyse(self, config, tasks, results, seed):
        x = np.array([r["x"] for r in results])
        return {"x": x}, [
            Claim("unlabelled.check", "the tasks ran", len(x), config["n"], 0, True),
            finding("unlabelled.finding", "the mean is above -1", (x.mean(), -0.5, 9.0), -1.0),
        ]


def _claims(tmp_path, quick: bool, **overrides) -> tuple[dict, dict]:
    cfg = make_config(Unlabelled(), quick=quick, overrides=overrides)
    execute(cfg, tmp_path / "run", executor="serial", progress=None)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    return {c["id"]: c for c in summary["claims"]}, summary["diagnostics"]


@pytest.mark.parametrize(
    ("quick", "overrides", "label"),
    [
        (True, {}, "provisional (quick)"),
        (False, {"n": 3}, "provisional (reduced configuration)"),
        (False, {}, ""),
        (False, {"device": "meta"}, ""),  # a setting outside label_keys changes no number
    ],
)
def test_the_harness_labels_findings_outside_the_full_configuration(
    tmp_path, quick, overrides, label
):
    claims, diagnostics = _claims(tmp_path, quick, **overrides)
    lead = f"{label}: " if label else ""
    assert claims["unlabelled.finding"]["statement"] == lead + "the mean is above -1"
    assert claims["unlabelled.check"]["statement"] == "the tasks ran"  # checks never
    assert diagnostics["provisional"] == (label or None)


def test_labelling_twice_labels_once():
    claim = finding("f", "a statement", (1.0, 0.5, 2.0), 0.0)
    once = provisional([claim], "provisional (quick)")
    assert [c.statement for c in provisional(once, "provisional (quick)")] == [
        "provisional (quick): a statement"
    ]
    assert provisional([claim], "") == [claim]
    params = Unlabelled.params
    _, claims, diag = labelled(params, {"n": 4, "device": "meta"}, ({}, [claim], {}))
    assert claims[0].statement.startswith("provisional (reduced configuration): ")
    _, claims, diag = labelled(params, {"n": 4, "device": "meta"}, ({}, [claim], {}), ("n",))
    assert claims == [claim] and diag["provisional"] is None
