"""``online_sgd``'s quick design is the one its power computation chose
(``tools/online_sgd_quick_power.py``): the erf spread exponent, judged by ``slope_band`` on
the quick dimensions and seeds, is HELD with probability at least 0.94 (the rule's ceiling is
0.95, its lack-of-fit test) if the full run's line is the truth, within the quick budget."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "online_sgd_quick_power", ROOT / "tools" / "online_sgd_quick_power.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_the_quick_spread_design_has_the_declared_power():
    from gaugedyn.experiments.gauge.online_sgd import EXPERIMENT

    tool = _tool()
    dims, seeds = EXPERIMENT.params["dims"].quick, EXPERIMENT.params["seeds"].quick
    assert EXPERIMENT.params["t_max"].quick == tool.T_MAX
    assert dims == tool.design(100, 400, 10) and seeds == 160
    slope = tool.truth()[0]
    assert round(slope, 3) == -0.538
    held, half, lof = tool.power(dims, seeds, slope, tool.SIGMA64, 4000)
    assert held >= tool.CRITERION and half < 0.08, (held, half)
    assert tool.cost(dims, seeds) + tool.other(seeds) <= tool.BUDGET_S
    # the design it replaced (six D, 48 seeds) could not show the claim
    held, half, lof = tool.power([100, 130, 175, 230, 300, 400], 48, slope, tool.SIGMA64, 4000)
    assert held < 0.5 and half > 0.15, (held, half)
