"""The stored choice of the network tasks' step size and scan range (issue 25, item 3).

Chosen before the scan of ``spike_boundary`` on a calibration pilot (:func:`calibration_pilot`),
whose result is kept here beside the choice, so that quick runs and ``--set`` extensions reuse
it. Rule: the task trains full batch in float64 to low loss at every ``beta1`` row of the pilot,
and at least three rows have an edge (a spiky cell below a quiet one) inside the pilot's
``1 - beta2`` range; the scan range is the pilot's, extended by a decade upwards where a row is
spiky at the pilot's top.

Pilot of 2026-12-02 (``calibration_pilot()``, ``teacher_mse``: D = 20, student width 4, teacher
width 2, 256 samples, float64, Adam ``lr = 1e-2``, 30000 steps, one seed per cell; statuses of
the transient-inclusive detector, ``not judged`` where 30000 steps hold fewer than five horizons)::

    beta1 \\ 1-beta2    1e-2    3e-3    1e-3    3e-4
    0.9                spiky   spiky   spiky   not judged
    0.97               quiet   quiet   spiky   not judged
    0.99               quiet   spiky   spiky   not judged
    0.995              quiet   quiet   spiky   not judged

    final log10 loss: -5.6 to -30.8 in every cell but (0.97, 3e-3) (-1.6; its minimum -1.6)

Rows with an edge inside [1e-3, 1e-2]: 0.97, 0.99, 0.995 (three); 0.9 is spiky at 1e-2, so the
range is extended to 0.1. The digits MLP is left out: 13 ms per step for 48 copies (10 times the
teacher-student) puts a settled scan beyond the budget.
"""

from __future__ import annotations

import numpy as np

TASKS = {
    "teacher_mse": {
        "lr": 1e-2,
        "n_samples": 256,
        "one_minus_beta1": [0.1, 0.03, 0.01, 0.005],
        "one_minus_beta2": [1e-3, 3e-3, 1e-2, 3e-2, 0.1],
        "pilot": {
            "beta1": [0.9, 0.97, 0.99, 0.995],
            "one_minus_beta2": [1e-2, 3e-3, 1e-3, 3e-4],
            "status": [["spiky", "spiky", "spiky", "not judged"],
                       ["quiet", "quiet", "spiky", "not judged"],
                       ["quiet", "spiky", "spiky", "not judged"],
                       ["quiet", "quiet", "spiky", "not judged"]],
            "final_log10_loss": [[-5.56, -5.56, -7.51, -6.99], [-6.47, -1.6, -6.59, -14.21],
                                 [-7.37, -7.45, -7.58, -29.87], [-6.97, -7.72, -7.66, -30.82]],
            "steps": 30000, "date": "2026-12-02",
        },
    },
}
"""Per task: the chosen ``lr``, ``n_samples`` and scan grid, and the pilot they were chosen on."""


def calibration_pilot(task: str = "teacher_mse", steps: int = 30000, lr: float = 1e-2,
                      n_samples: int = 256) -> dict:
    """Rerun the pilot: one seed per cell of the pilot's grid, the transient-inclusive detector;
    returns the statuses and the final and smallest ``log10`` losses."""
    import torch

    from ...adam._spikes import detect
    from ._batched import BatchedMLP, adam_steps

    pilot = TASKS[task]["pilot"]
    b1, c = np.array(pilot["beta1"]), np.array(pilot["one_minus_beta2"])
    A, C = np.meshgrid(b1, c, indexing="ij")
    model = BatchedMLP(task, A.size, np.arange(A.size), n_samples=n_samples,
                       dtype=torch.float64)
    rec = 10
    ell = adam_steps(model, lr, A.ravel(), 1 - C.ravel(), steps, record=rec)
    status = [[str(detect(ell[:, i * c.size + j], b1[i], 1 - c[j], stride=rec,
                          ceiling=ell[0, i * c.size + j])["status"]) for j in range(c.size)]
              for i in range(b1.size)]
    return {"status": status, "final_log10_loss": ell[-1].reshape(A.shape).round(2).tolist(),
            "min_log10_loss": ell.min(axis=0).reshape(A.shape).round(2).tolist()}
