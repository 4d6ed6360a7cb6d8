"""examples/sae_resampling.py: its spike-amplitude readout on planted spikes (present, absent,
before the event), its resampling through monitor events, and the docs table generated from the
committed run."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "examples/data/sae_resampling/summary.json"


@pytest.fixture(scope="module")
def sae():
    spec = importlib.util.spec_from_file_location(
        "sae_resampling", ROOT / "examples/sae_resampling.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_amplitude_readout_on_known_answers(sae):
    rng = np.random.default_rng(0)
    ell = -2 + 0.01 * rng.standard_normal(1000)
    assert abs(sae.amplitude(ell, 400)) < 0.05  # no spike: about the noise's range
    spiked = ell.copy()
    spiked[410:415] += 1.5  # a spike of 1.5 decades, 10 steps after the event
    assert sae.amplitude(spiked, 400) == pytest.approx(1.5, abs=0.05)
    early = ell.copy()
    early[380:385] += 1.5  # a spike before the event raises the baseline's max only
    assert sae.amplitude(early, 400) < 0.05
    late = ell.copy()
    late[400 + sae.WINDOW + 5] += 1.5  # outside the window
    assert sae.amplitude(late, 400) < 0.05


def test_resampling_resets_the_resampled_rows_state_through_the_monitor(sae, monkeypatch):
    seen = {}
    real = sae.Monitor

    class Spy(real):
        def emit(self, event, **info):
            out = super().emit(event, **info)
            rows = info["rows"]
            st = self.optimizer.state
            params = dict(self.model.named_parameters())
            seen["zero"] = all(
                bool(torch.all(st[params[n]]["exp_avg"].index_select(a, i) == 0))
                for n, (a, i) in rows.items()
            )
            seen["dead"] = int(rows["enc.bias"][1].numel())
            return out

    monkeypatch.setattr(sae, "Monitor", Spy)
    monkeypatch.setattr(sae, "BATCH", 32)  # a quarter of the cost; latents still die by step 800
    res = sae.run(0, "rows", False, steps=801)
    assert res["events"][-1][0] == 800 and res["events"][-1][1] == seen["dead"] > 0
    assert seen["zero"]
    assert res["loss"].shape == (801,) and np.isfinite(res["loss"]).all()


def _refuse(constant):
    raise ValueError(f"{constant} in a summary: not strict JSON")


def test_the_docs_table_is_the_committed_runs(sae):
    summary = json.loads(SUMMARY.read_text(), parse_constant=_refuse)
    assert not summary["quick"] and summary["seeds"] >= 10
    page = (ROOT / "docs/monitor.md").read_text()
    match = re.search(r"<!-- sae table -->\n(.*?)\n<!-- end sae table -->", page, re.S)
    assert match, "docs/monitor.md has no sae table block"
    assert match.group(1).strip() == sae.table(summary).strip()
    assert (ROOT / "docs/figures/sae_resampling.png").is_file()


def test_the_figure_redraws_from_the_committed_run(sae, tmp_path):
    png = tmp_path / "sae.png"
    sae.main(["--figure", str(SUMMARY.parent), "--png", str(png)])
    assert png.stat().st_size > 10_000
    with pytest.raises(SystemExit) as exc:
        sae.main(["--figure", str(tmp_path)])  # no stored run there
    assert exc.value.code == 2
