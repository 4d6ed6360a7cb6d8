"""The bend of the landscape run's escape rows: the next order in ``eps`` of the escape time.

Near a hyperbolic saddle with unstable rate ``lambda_+`` the flow on the unstable manifold is
smoothly conjugate to ``ds/dt = lambda_+ s`` (``s = xi + c xi^2 + ...``, ``xi`` the coordinate
along ``v_+``), so a start ``xi = +-eps`` reaches the exit band after

    lambda_+ T = ln(1/eps) + C_+- -+ c eps + O(eps^2)

(the start is off the unstable manifold by ``O(eps^2)`` in the other directions, which changes
``T`` at ``O(eps^2)`` too). The leading correction to the straight line in ``ln(1/eps)`` is
linear in ``eps``, of opposite signs on the two sides of the saddle: it bends the rows at the
large-``eps`` end. This script reads a run folder's ``arrays.npz`` (rows ``escape_k``:
``ln(1/eps)``, ``lambda_+ T`` from ``+v_+`` and from ``-v_+``) and, per saddle and side, prints
the line's slope with the p-value of the slope rule's lack-of-fit test
(`gaugedyn.stats._estimators.lack_of_fit()`: the quadratic term added to the line), and the
fit ``lambda_+ T = b0 + b1 ln(1/eps) + b2 eps`` (the theory's first two orders) with its slope
``b1``, its ``b2`` and the largest residual of each fit.

It explains the rows; it judges nothing (the finding's rule is unchanged).

Run: ``.venv/bin/python tools/escape_bend.py RUN_FOLDER`` (e.g. ``results/landscape``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from gaugedyn.stats._estimators import lack_of_fit


def fits(x: np.ndarray, y: np.ndarray) -> dict:
    """The line and the line plus ``eps = exp(-x)`` fitted to ``y`` by least squares."""
    line = np.stack([np.ones_like(x), x], axis=1)
    bent = np.stack([np.ones_like(x), x, np.exp(-x)], axis=1)
    c1, *_ = np.linalg.lstsq(line, y, rcond=None)
    c2, *_ = np.linalg.lstsq(bent, y, rcond=None)
    return {
        "slope": float(c1[1]),
        "lack_of_fit_p": float(lack_of_fit(x, y)),
        "line_residual": float(np.max(np.abs(y - line @ c1))),
        "slope_with_eps": float(c2[1]),
        "eps_coefficient": float(c2[2]),
        "eps_residual": float(np.max(np.abs(y - bent @ c2))),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a landscape run folder (with arrays.npz)")
    args = parser.parse_args(argv)
    path = args.run / "arrays.npz"
    if not path.is_file():
        print(
            f"run={str(args.run)!r} has no arrays.npz; give a landscape run folder", file=sys.stderr
        )
        return 2
    with np.load(path) as z:
        labels = [str(s) for s in z["escape_labels"]]
        rows = [z[f"escape_{k}"] for k in range(len(labels))]
    print(
        f"{'saddle':44s} {'side':5s} {'slope':>9s} {'p(bend)':>8s} {'res line':>9s}"
        f" {'slope+eps':>9s} {'b2 (eps)':>9s} {'res +eps':>9s}"
    )
    for label, (x, plus, minus) in zip(labels, rows, strict=True):
        for side, y in (("+v", plus), ("-v", minus)):
            f = fits(x, y)
            print(
                f"{label[:44]:44s} {side:5s} {f['slope']:9.6f} {f['lack_of_fit_p']:8.3f}"
                f" {f['line_residual']:9.2e} {f['slope_with_eps']:9.6f}"
                f" {f['eps_coefficient']:+9.3f} {f['eps_residual']:9.2e}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
