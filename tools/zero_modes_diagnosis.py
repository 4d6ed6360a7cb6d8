"""Why two catalogue points of the landscape run had zero modes the symmetries did not predict.

The published landscape run before the fix found the ReLU catalogue's ``K = 2`` entry 4 with 3
zero eigenvalues (below 1e-8 of the largest) against 2 predicted, and ``K = 3`` entry 5 with 4
against 6. Both were reached by Newton's method from one random start at the loss of a
neighbouring entry. This script rebuilds them from the declared configuration
(``simulations/landscape.toml``: the catalogue tasks' teacher, starts and seeds), refines each
start with ``snap=0`` (the point as Newton's method leaves it, as before the fix) and with the
default ``snap`` (the fix), and prints for each:

- the units: coefficients ``a_i``, norms, ``rho_i = a_i |w_i|``, pair sines, and the singular
  values of the students' components outside the teacher span (the rotation count's rank);
- the spectrum nearest zero against the threshold ``zero_tol = 1e-8`` of the largest;
- along each of the six eigenvectors nearest zero, the even part of the loss change
  ``(L(y + t v) + L(y - t v)) / 2 - L(y)`` for ``t`` from 1e-4 to 1e-1 and its local order
  (2: a quadratic direction, 4: one flat to fourth order);
- the gradient at the exact coincidence of the near-coinciding units (coefficient-weighted
  direction) and the counts there.

Run: ``.venv/bin/python tools/zero_modes_diagnosis.py`` (about ten seconds).
"""

from __future__ import annotations

import numpy as np

from gaugedyn._meta import integer_seed, task_seed
from gaugedyn.harness import load_config
from gaugedyn.theory import Problem, critical_point
from gaugedyn.theory._catalogue import random_students
from gaugedyn.theory._landscape import _coords, _loss
from gaugedyn.theory._population import pair_sines

CASES = {2: (0.7230737304982, 4), 3: (1.487692857306, 5)}
"""``K: (loss, entry)`` of the two points in the published catalogue."""


def catalogue_starts(K: int):
    """The teacher and the random students of the ReLU catalogue task with ``K = M``."""
    cfg = load_config("simulations/landscape.toml")
    (task,) = [
        t
        for t in cfg.experiment.tasks(dict(cfg.params))
        if t["kind"] == "catalogue" and t["activation"] == "relu" and t["K"] == K
    ]
    rng = np.random.default_rng(task["teacher_seed"])
    V = rng.normal(size=(K, task["dim"]))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    teacher = Problem(a=np.ones(K), W=V.copy(), b=np.ones(K), V=V, activation="relu")
    seed = integer_seed(task_seed(cfg.seed, cfg.name, task))
    return random_students(teacher, task["starts"], seed)


def describe(point) -> None:
    p = point.params
    a, W, V = _coords(point.y, p)
    n = np.linalg.norm(W, axis=1)
    print(f"  |grad| {point.grad_norm:.2e}  loss {point.loss:.13f}  index {point.index}")
    print(f"  a {np.array2string(a, precision=3)}  |w| {np.array2string(n, precision=3)}")
    print(f"  rho {np.array2string(a * n, precision=3)}")
    sines = pair_sines(W, W) / np.outer(n, n)
    print("  pair sines", np.array2string(sines[np.triu_indices(len(a), 1)], precision=2))
    U = np.linalg.svd(V.T, full_matrices=True)[0][:, V.shape[0] :]
    outside = np.linalg.svd(W @ U, compute_uv=False)
    print("  outside the teacher span: singular values", np.array2string(outside, precision=2))
    lam = point.eigenvalues
    top = float(np.max(np.abs(lam)))
    order = np.argsort(np.abs(lam))
    print(
        "  |lambda| / max, nearest zero:",
        np.array2string(np.abs(lam[order[:7]]) / top, precision=2),
    )
    ts = np.geomspace(1e-4, 1e-1, 7)
    for k in order[:6]:
        v = point.eigenvectors[:, k]
        dl = np.array(
            [0.5 * (_loss(point.y + t * v, p) + _loss(point.y - t * v, p)) - point.loss for t in ts]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            order_t = np.diff(np.log(np.abs(dl))) / np.diff(np.log(ts))
        print(
            f"    lambda/max {lam[k] / top:+.1e}: even dL at t=1e-1 {dl[-1]:+.1e}, "
            f"local orders {np.array2string(order_t[-3:], precision=2)}"
        )
    print("  modes", point.modes)
    print("  units", point.units, " snapped", point.settings["snapped"])


def main() -> None:
    for K, (loss, entry) in CASES.items():
        for j, start in enumerate(catalogue_starts(K)):
            before = critical_point(start, snap=0.0)
            if not (before.success and abs(before.loss - loss) < 1e-9) or before.singular:
                continue
            if before.modes["unexplained"] == 0 or before.units["dead"]:
                continue
            print(f"ReLU K = M = {K}, catalogue entry {entry}: start {j}")
            print(" as Newton's method leaves it (snap=0, the published run):")
            describe(before)
            print(" with the exact coincidence (default snap, the fix):")
            describe(critical_point(start))
            print(" refined on to |grad| <= 1e-15 without snapping:")
            deeper = critical_point(start, snap=0.0, tol=1e-15, max_iter=400)
            print(f"  a {np.array2string(deeper.y[:K], precision=3)}  modes {deeper.modes}")
            print(f"  units {deeper.units}")


if __name__ == "__main__":
    main()
