"""The result tables of ``shared_representation`` generated from its published summary alone
(the ``publish:tables`` block): the pulse dose-response in numbers.

The numbers are the run's ``dose_lost`` and ``dose_switch`` arrays (`._analysis._dose()`),
which ``gaugedyn publish --add`` copies from the run's ``arrays.npz`` into the summary
(`PUBLISHED_ARRAYS`, checked against its checksum).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._protocol import DOSE_PULSES

PUBLISHED_ARRAYS = ("dose_strengths", "dose_meanings", "dose_lost", "dose_switch")
"""The arrays the dose-response table is read from (`gaugedyn.harness.Experiment.published_arrays`)."""
ROUTES = ("acquisition", "update")
"""The formation routes, in the arrays' route axis order (``a``, ``b``)."""
READOUTS = ("heads", "probe")
"""The readouts, in the arrays' readout axis order."""


def _num(v: Any) -> float:
    return float("nan") if isinstance(v, str) else float(v)


def _floats(nested: Any) -> np.ndarray:
    """A stored array (nested lists; non-finite numbers as strings) as floats."""
    if isinstance(nested, list):
        return np.asarray([_floats(v) for v in nested], dtype=float)
    return np.asarray(_num(nested))


def _cell(row: Any) -> str:
    """``mean [low, high]`` at three significant figures."""
    m, lo, hi = (_num(v) for v in row)
    if not np.isfinite(m):
        return "-"
    return f"{m:.3g} [{lo:.3g}, {hi:.3g}]"


def dose_table(summary: dict) -> list[str]:
    """Markdown lines of the dose-response table: per acquisition reading (meaning and readout)
    and declared pulse strength, the specialization removed by each pulse kind from each
    formation route (mean over Table 2's seeds, 95% t interval) and, under the combined pulse,
    each route's switch fraction (switched of specialized before the pulse, Wilson interval);
    the primary strength of each meaning marked, beside the calibration's share of the
    update-formed route's specialization the combined pulse removes (the dose rule's property).
    A summary without the arrays gives one sentence saying so."""
    arrays = summary.get("published_arrays") or {}
    if not all(k in arrays for k in PUBLISHED_ARRAYS):
        return [
            "The published run carries no dose-response arrays (it was added before "
            "`publish --add` copied them from its `arrays.npz`)."
        ]
    strengths = [str(s) for s in arrays["dose_strengths"]]
    meanings = [str(m) for m in arrays["dose_meanings"]]
    lost = _floats(arrays["dose_lost"])
    switch = _floats(arrays["dose_switch"])
    readings = (summary.get("diagnostics") or {}).get("readings") or {}
    seeds = (summary.get("configuration") or {}).get("params", {}).get("seeds", "?")
    head = ["reading", "strength", "calibration: removed / starting, update-formed"]
    head += [f"{k} pulse: {r}-formed" for k in DOSE_PULSES for r in ROUTES]
    head += [f"switched (combined): {r}-formed" for r in ROUTES]
    lines = [
        f"Specialization removed, $s_0 - s_T$ (mean over Table 2's {seeds} seeds [95% t "
        "interval]), by each pulse at each declared strength, weakest first, per formation "
        "route; switched: the share of checkpoints specialized before the combined pulse whose "
        "favoured target is no longer on top after it [Wilson interval]. The calibration column "
        "is the update-formed route's specialization the combined pulse removes over its "
        "starting level on the calibration seeds (heads; above 1 the favoured target ends "
        "below the opposed one), the property the primary strength (**bold**: closest to 1/2) "
        "is chosen by.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for i, m in enumerate(meanings):
        info = readings.get(m) or {}
        fractions = info.get("dose_fractions") or {}
        for q, ro in enumerate(READOUTS):
            for j, st in enumerate(strengths):
                name = f"**{st}**" if st == info.get("strength") else st
                frac = fractions.get(st)
                cells = [f"{m}/{ro}", name, "-" if frac is None else f"{float(frac):.3g}"]
                cells += [
                    _cell(lost[i, j, k, t, q]) for k in range(len(DOSE_PULSES)) for t in (0, 1)
                ]
                cells += [_cell(switch[i, j, t, q]) for t in (0, 1)]
                lines.append("| " + " | ".join(cells) + " |")
    return lines
