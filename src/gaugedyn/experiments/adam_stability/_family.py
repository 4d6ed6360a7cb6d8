"""The second network family of ``spike_boundary``: digits MLPs that are not teacher-student
(issue 42, Build 4), under cross-entropy into the confident regime or under a mean-squared loss
to one-hot labels.

The network tasks of ``_calibration`` are one teacher-student family with a mean-squared loss.
The abstract's linear boundary is about confident cross-entropy: a network that fits its
training labels drives the cross-entropy towards zero by growing its logits, and the loss along
an update develops a narrow core and a steep wall. The candidates, declared before any pilot
of each (`CANDIDATES`, in the order the pilot tries them), are full-batch float64 MLPs
64-``hidden``-10 (ReLU) on the first ``n_samples`` of scikit-learn's digits (``_batched``'s
``digits_ce`` and ``digits_mse``, the package's own programs: `_scan._run_task`):

- ``digits_ce``: width 32 on 64 images (2,410 parameters for 64 labels): it fits every label
  within a few hundred steps at ``lr = 1e-2`` and then sits in the confident regime for the
  rest of a run; the narrowest data set that holds every class several times, chosen for the
  CPU cost of runs of up to 1.3e5 steps (a copy-step costs about 0.2-0.4 ms on the session's
  EPYC at 8 copies);
- ``digits_ce_w16``: width 16 on 128 images (1,210 parameters for 128 labels): a narrower
  network on twice the data, still able to fit every label but with less room, the fallback
  when the first has fewer than `MIN_ROWS` rows with a settled edge.

Both were piloted and fail the rule (their loss falls to where the gradient meets Adam's
``eps``; ``docs/adam-stability.md``). Declared after that pilot and before any run of theirs,
the mean-squared side on the same real data (half the squared error to the one-hot labels,
summed over the ten outputs and averaged over the images: ``adam_edge``'s ``mse``), a family
that is still not teacher-student (real inputs, no teacher) but realizable: the loss can fall
towards 0 while the curvature at the fitted labels stays finite (the Gauss-Newton part does
not vanish with the loss, as cross-entropy's does), as in the teacher tasks whose settled runs
collapse and spike:

- ``digits_mse``: ``digits_ce``'s network and data (width 32 on 64 images, 2,410 parameters
  for 640 targets: enough to fit every one-hot label exactly), so that it differs from the
  first candidate in its loss alone and costs what its piloted rows cost (about five
  CPU-minutes a row without a spiky cell);
- ``digits_mse_n128``: width 32 on 128 images (2,410 parameters for 1,280 targets, still
  able to fit every label), the fallback on twice the data at a little more cost a step.

The pilot (`_family_pilot`) runs each candidate on `ROWS` x `COLUMNS` with `SEEDS` seeds a
cell and picks the first that meets the rule (`rule_verdict()`): the defining property, never
a slope. `family_task()` is the candidate as a ``spike_boundary`` task.

The grid's revision (declared 2026-12-07, before any pilot on it). The first grid
(`FIRST_ROWS`: 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01; quarter decades of ``1 - beta2`` from
1e-3 to 10^-0.5; at least `FIRST_MIN_ROWS` = 6 of the 7 rows with a settled edge) failed the
rule by itself: the teacher tasks, the one family known to spike, have settled edges near
``1 - beta2 = C (1 - beta1)`` with ``C`` about 0.035-0.06 (``task_pilot.json``: edges in 8 of
the 9 rows of `_protocol.SCAN_DESIGN`, none above 1e-3 in the rows 0.03 and 0.01), so on the
first grid a family with their boundary would have an edge in at most 4 of its 7 rows (0.3,
0.2, 0.1, 0.05). The revised grid is the network tasks' design: `ROWS` and `COLUMNS` are
`_protocol.SCAN_DESIGN`'s rows (0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.01) and columns
(the same quarter decades, at their exact values), `SEEDS` its 8, and the rule is issue 42's Must
show: at least `MIN_ROWS` = 6 rows with a settled edge, at least one of them at ``1 - beta1
<= LOW_ROW`` = 0.05. Its known-answer control (``tests/test_family_pilot.py``): the teacher
tasks' stored edges meet it (effect present) and the stored rows of the digits candidates do
not (effect absent). The first four candidates' stored rows (0.3 and 0.2, both rows of the
revised grid on the same columns) are kept as history and read as they are; they are
`STOPPED` (passed over by the choice, not rerun): quiet in every run, no rise reaching the
declared range's lower end, a settled level set by Adam's step size. No candidate has been
appended since: the declared readings of new task programs (`_family_pilot.DETECTOR_CELLS`:
the tied linear autoencoder on digits under the squared and the fourth-power residual, digits
ReLU networks with fewer parameters than targets) showed no settled sawtooth to pilot; nor did
the follow-up of the latter's lead (its two spiky copies were the two that fit deepest): with
eight copies a cell and longer settled runs (widths 16 and 20 on 256 images in the row 0.1 at
``1 - beta2`` 10^-2.5 and 10^-2.75), every copy that fit was quiet.

Memorisation (session 16). What separates the teacher tasks from every digits task may not be
the teacher but one output, isotropic Gaussian inputs and an exact zero-loss minimum the whole
loss collapses into. ``_batched``'s ``gauss_memo`` keeps those and drops the teacher: the
teacher tasks' student (20-``hidden``-1 ReLU, their initialisation and gradient) on
``n_samples`` inputs i.i.d. standard normal in 20 dimensions with i.i.d. standard normal
targets (random labels: no network generated them), drawn from the cell's seed as the teacher's
data are. At width 8 (177 parameters) and ``n_samples`` 64 or 128 the student interpolates its
targets exactly (with its activation pattern fixed its output is linear in 169 numbers). Its
declared detector reading (`_family_pilot.DETECTOR_CELLS`, committed before it ran, with the
rule for what follows) at four cells inside the teacher tasks' spiky region, 8 seeds a cell,
was spiky in more than half of the trained copies at both sizes: 16 of 26 at 64 inputs, 12 of
19 at 128 (`teacher_mse` at the two lowest cells, the positive control: 6/8 and 8/8). So two
candidates were declared after that reading and before any pilot of theirs, tried in this
order:

- ``gauss_memo``: width 8 on 64 inputs, ``lr = 1e-2``, ``eps = 1e-8`` (the teacher tasks'):
  first because its copies fit reliably (6 of 32 untrained in the reading against 13 of 32 at
  128 inputs), and a cell's spike probability counts only trained copies;
- ``gauss_memo_n128``: the same on 128 inputs, the fallback: its zero-loss set (dimension 177 -
  ``n``) nearer the teachers' isolated minimum, and spiky in 5 of 6 trained copies at the row
  0.05's cell where the first was in 2 of 7 (the rule needs an edge at ``1 - beta1 <= 0.05``).

``gauss_memo``'s pilot (``family_pilot.json``) has a settled edge in 8 of the 9 rows, every row
but 0.01, the row 0.05 included: it meets the rule and is the chosen family
(`_family_pilot.choose()`). ``gauss_memo_n128``, piloted afterwards as a reading of
robustness to ``n`` (not for the choice), meets the rule too (8 of 9 rows, 0.05 included). It is not teacher-student (no network generated its
targets) but shares the teacher tasks' student, inputs and loss: a second family in its targets.
A reading declared after it, not a candidate: ``digits_pc_memo`` (the same student and targets
on the digits' top 20 principal components, whitened, 64 images) spikes too, in 17 of 28
trained copies at the same four cells, so Gaussian inputs are not what the spikes need.

Declared after ``gauss_memo`` was chosen, before any pilot of its own (session 16, the lead), as
a reading of robustness to the inputs, not for the choice (appended after the chosen family,
so `_family_pilot.choose()` cannot pick it): ``digits_pc_memo``, ``gauss_memo``'s student,
targets, step size and ``eps`` on 64 digits images (their top 20 principal components,
whitened). Its pilot (``family_pilot.json``) meets the rule as well (8 of 9 rows with a settled
edge, 0.05 included): the memorisation family meets it on real inputs too; the published runs
keep ``gauss_memo``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._errors import InputError
from ._protocol import SCAN_DESIGN

CANDIDATES: dict[str, dict[str, Any]] = {
    "digits_ce": {"task": "digits_ce", "hidden": 32, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "digits_ce_w16": {
        "task": "digits_ce",
        "hidden": 16,
        "n_samples": 128,
        "lr": 1e-2,
        "eps": 1e-8,
    },
    "digits_mse": {"task": "digits_mse", "hidden": 32, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "digits_mse_n128": {
        "task": "digits_mse",
        "hidden": 32,
        "n_samples": 128,
        "lr": 1e-2,
        "eps": 1e-8,
    },
    # declared after the memorisation task's detector reading (`_family_pilot.DETECTOR_CELLS`,
    # session 16), before any pilot of theirs (module doc)
    "gauss_memo": {"task": "gauss_memo", "hidden": 8, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "gauss_memo_n128": {
        "task": "gauss_memo",
        "hidden": 8,
        "n_samples": 128,
        "lr": 1e-2,
        "eps": 1e-8,
    },
    # declared after gauss_memo was chosen, before any pilot of its own: a reading of
    # robustness to the inputs (module doc)
    "digits_pc_memo": {
        "task": "digits_pc_memo",
        "hidden": 8,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-8,
    },
}
"""The declared candidates, in the order the pilot tries them (module doc): ``_batched`` task,
hidden width, images (inputs), Adam's step size and ``eps`` (the network tasks' own,
`_protocol.ADAM_EPS`)."""
WALL_CANDIDATES: dict[str, dict[str, Any]] = {
    "digits_ce_wd": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 1.0,
    },
    "digits_ce_wd01": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.1,
    },
    "digits_ce_wd001": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.01,
    },
    "digits_ce_wd01_lr3": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-3,
        "eps": 1e-30,
        "weight_decay": 0.1,
    },
    "digits_ls3": {"task": "digits_ls3", "hidden": 32, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "digits_ls2": {"task": "digits_ls2", "hidden": 32, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "digits_ce_wd03": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.3,
    },
    "digits_ce_wd05": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.5,
    },
    "digits_ls3_w8": {"task": "digits_ls3", "hidden": 8, "n_samples": 32, "lr": 1e-2, "eps": 1e-8},
    "digits_ls3_lr3": {
        "task": "digits_ls3",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-3,
        "eps": 1e-8,
    },
    "digits_ce_wd07": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.7,
    },
    "teacher_kl": {"task": "teacher_kl", "hidden": 8, "n_samples": 256, "lr": 1e-2, "eps": 1e-8},
    "gauss_ls3": {"task": "gauss_ls3", "hidden": 8, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
}
"""The core-wall candidates (issue 42, Build 5), declared before their pilot on the cheap
diagnostics of ``docs/adam-stability.md`` ("What a confident cross-entropy task needs"): a
confident cross-entropy task has no finite minimiser, so under Adam its loss falls
exponentially (about 8 decades per 100 steps at ``1 - beta2 = 0.316``) until the gradient
meets ``eps`` and stays there quiet, whatever ``eps``; decoupled weight decay
(``torch.optim.AdamW``'s, `_batched.adam_step_sets`) gives it a finite minimiser that holds
the loss about 10-12 decades down, far above the float's resolution, with every label fit.
``digits_ce_wd``: ``digits_ce``'s network, data and step size with weight decay 1 and
``eps = 1e-30`` (below every gradient of the settled regime, so the level is the weight
decay's, not ``eps``'s). In their own tuple so that `CANDIDATES`' order (the family pilot's)
is not touched.

``digits_ce_wd`` failed its property (stored pilot, ``wall_pilot.json``). Declared after that
pilot and its diagnostics, before any run of theirs (session 15), three more, tried in this
order. The reason, from the stored diagnostics: at weight decay 1 the settled runs are quiet
with largest rises of 0.0-0.2 decades at ``1 - beta2 >= 0.03`` and hold the loss at 1e-10 ...
1e-12. A decoupled weight decay's stationary point has ``m / sqrt(v) = -wd theta`` per
coordinate; a gradient of steady sign gives ``|m / sqrt(v)| = 1``, so at ``wd = 1`` the
weights sit where ``|theta|`` is of order ``1 / wd`` and Adam moves like sign descent, pulled
back by the decay at a rate ``lr wd`` a step: no core to overshoot. A smaller decay lets the
weights and the margins grow (the level falls) and asks for ``|E g| / rms(g) = wd |theta|``
well below 1 at the stationary point: the gradient must change sign along the run, the iterate
crossing the valley's floor, the regime of the core-wall picture and of the teachers'
collapse-and-spike cycle:

- ``digits_ce_wd01``: weight decay 0.1, otherwise ``digits_ce_wd``;
- ``digits_ce_wd001``: weight decay 0.01 (a lower level still; ``eps = 1e-30`` may set it
  where the gradient meets ``eps``: the diagnostics show which);
- ``digits_ce_wd01_lr3``: weight decay 0.1 at ``lr = 1e-3``: the same stationary weights (the
  decay per step is ``lr wd``, the balance ``wd theta`` does not involve ``lr``) with a ten
  times smaller step against the valley's width, the fallback if the first two sit too near
  the divergence line.

Their rows are scanned only below `WALL_TOP` (declared with them).

All four failed (every cell quiet; ``wall_pilot.json``). Declared after their pilots, before any
run of theirs (session 15, p42c2), two label-smoothed candidates. The reason: the teacher tasks
spike because their loss collapses towards an exact minimum with zero gradient, and Adam's
``v`` lags the shrinking gradient; AdamW's stationary point is not such a minimum (the decay
balances ``m / sqrt(v)``, a gradient that does not vanish), and a coupled L2 penalty's is, but
its objective's minimum lies far above zero, so the loss cannot fall by decades and a rise is
invisible on a log scale. Label smoothing gives a confident fit a finite minimiser where the
gradient vanishes *and* a known minimum value: the labels smoothed to ``1 - delta`` (``delta /
9`` on each other class) are fitted exactly by an interpolating network (2,410 parameters for
576 logit constraints), every label's probability ``1 - delta`` (confident), the logits finite.
The declared loss reading is the smoothed cross-entropy less its minimum, the entropy of the
smoothed labels: ``KL(q || p)`` (`_batched.smoothed_kl`, accurate to about ``1e-30``), which
falls by decades to 0 and rises back, as the teachers' losses do. Along a margin it is
``delta (e^|x| - 1 - |x|)``-like up to ``|x| ~ log(1 / delta)``, then a wall: the narrow core
and steep wall of the abstract, with an effective exponent above 2 at the scale of a logit.
``eps`` is the family's own (`_protocol.ADAM_EPS`, 1e-8, as the teacher tasks run): the
level is the exact minimum's, not ``eps``'s. The property (`WALL_MIN_ROWS`, the mean ``KL``
below `confident_level()`) and `WALL_TOP` are unchanged; tried in this order:

- ``digits_ls3``: ``delta = 1e-3`` (label probability 0.999, margins about 9.1): a wall about
  7 logits from the core;
- ``digits_ls2``: ``delta = 1e-2`` (margins about 6.8), a wider core against the wall, the
  fallback if the first's core is too narrow for its settled runs to collapse.

Both were stopped on their diagnostics (`WALL_STOPPED`). Declared after them, before any run of
theirs (session 16, p42w), two decays between the two regimes the stored diagnostics show. The
reason, from ``wall_pilot.json``: at weight decay 1 the loss is held (settled ``log10`` loss
-10 to -12 at ``1 - beta2 >= 0.03`` on the row 0.3, -14 to -19 on the rows 0.2 and 0.1), and
the row 0.3's small ``1 - beta2`` already show the collapse-and-spike sawtooth in some seeds
(``1 - beta2 = 0.01``: 4 of 8 runs spiky, rises up to 6.6 decades, the median trace falling
to -9 and jumping back to -4; the pilot's cells 0.0178 and 0.01: 3 and 1 of 8), never in half
of a cell's seeds; at weight decay 0.1 no level is held (the loss falls at a steady 3
decades per tenth of the run to the ``eps`` floor, -27 to -31, every run quiet). So the change
from a held level to the floor lies between 0.1 and 1: a decay there holds the level deeper
than at 1 (a deeper collapse, larger rises, the sawtooth in more seeds) while still holding it
above ``eps``. ``digits_ce_wd``'s set-up otherwise (``eps = 1e-30``, `WALL_TOP`), tried in
this order:

- ``digits_ce_wd03``: weight decay 0.3, the geometric middle of 0.1 and 1;
- ``digits_ce_wd05``: weight decay 0.5, the fallback nearer the held level of 1, if 0.3's
  loss already falls to the floor.

Declared with them (`_family_wall.DIAGNOSTICS`' last ten cells): five diagnostic cells each,
rows 0.3 (``1 - beta2`` 10^-1.5 and 0.01), 0.2 (10^-1.5) and 0.1 (10^-1.5 and 0.01). A
candidate is piloted only if its diagnostics read spiky below a quiet cell on a row (at least
half its seeds spiky under the settled window, every run confident), as for the label-smoothed
ones; otherwise it is stopped (`WALL_STOPPED`).

Both were stopped on their diagnostics (every cell of the rows 0.2 and 0.1 quiet, the loss
falling at a steady pace to the ``eps`` floor; on the row 0.3 at weight decay 0.5 three of 16
runs spiky, no cell with half). Declared after them, before any run of theirs (session 16,
p42w), two more label-smoothed candidates (``delta = 1e-3``, ``eps = 1e-8``), the one set-up
with an exact minimum where the gradient vanishes. The reason, from the stored data:
``digits_ls3``'s KL does not collapse, it holds a noisy level (settled ``log10`` KL -4.6 to
-6.4, reached within the first fifth of the run, lower at the smaller ``1 - beta1``) as
``digits_mse`` holds one on the same network (the family pilot: three to five decades down,
hardly falling with ``1 - beta2``): Adam's step keeps 2,410 parameters hovering about a fit
of 576 constraints. The teacher tasks, which collapse and spike, fit 256 targets with 177 and
353 parameters, and in the family pilot's follow-up of digits ReLU networks with fewer
parameters the only spiky copies were the two that fit deepest. Tried in this order:

- ``digits_ls3_w8``: width 8 on 32 images (610 parameters for 288 logit constraints, still
  able to fit them): fewer parameters to hover, a fit nearer the teachers' proportions;
- ``digits_ls3_lr3``: ``digits_ls3`` at ``lr = 1e-3``: if the level is Adam's step size's, a
  tenth of the step holds it lower and lets the KL fall towards the minimum.

Declared with them (`_family_wall.DIAGNOSTICS`' last ten cells): the same five cells each, and
the same gate before a pilot. Both were stopped on their diagnostics (`WALL_STOPPED`).

Declared after them, before any run of its own (session 16, p42w), the last untried decay
between 0.5 and 1, ``digits_ce_wd07`` (weight decay 0.7, ``digits_ce_wd``'s set-up otherwise).
The reason, from the stored diagnostics: the row 0.3's spiky runs come at both neighbours (at
``1 - beta2`` 10^-1.5 and 0.01: 3 of 16 runs at 0.5, 5 of 16 at 1), while the rows 0.2 and 0.1
fall to the ``eps`` floor at 0.5 and are held at 1 (settled ``log10`` loss -14 to -19, still
falling at 0.01); a decay between may hold those rows deep enough for a collapse. The same five
diagnostic cells (`_family_wall.DIAGNOSTICS`' last five) and the same gate. It was stopped on
them (`WALL_STOPPED`: the row 0.3 spiky in 3 of 16 runs, the rows 0.2 and 0.1 quiet, their loss
still falling at the end of every run).

Declared after it, before any run of its own (session 16, p42w), a confident cross-entropy
with an exact minimum on a realizable fit: ``teacher_kl`` (`_batched.TeacherKLMLP`), students
20-8-10 (ReLU, 258 parameters) on 256 Gaussian inputs trained on the cross-entropy to the
softmax of a 20-4-10 ReLU teacher whose median margin is 9 (``digits_ls3``'s label margin),
read as its excess over its minimum, ``KL(q || p)``; ``lr = 1e-2``, ``eps = 1e-8``, the
teacher tasks' set-up (`_calibration`'s ``teacher_mse``: width 8, 256 inputs). The reason,
from the stored data: every digits set-up with an exact minimum hovers at a level its step
size sets (``digits_ls3``, and ``digits_ls3_lr3`` 1.5-2 decades lower at a tenth of the step;
``digits_mse`` in the family pilot) or does not fit (``digits_ls3_w8``), and the weight-decay
set-ups have no minimum where the gradient vanishes; the only tasks whose settled runs
collapse and spike are the teacher tasks, realizable fits with fewer parameters than
constraints (177 and 353 parameters for 256 targets; here 258 for 2,304 logit constraints).
A teacher's softmax keeps that realizability and gives the confident cross-entropy's core and
wall along a margin (the targets' other classes at about ``e^-9``). Teacher-student, so not
the second family of Build 4 (`CANDIDATES`), a core-wall candidate only. Seven diagnostic
cells (`_family_wall.DIAGNOSTICS`' last seven), the same gate. It was stopped on them
(`WALL_STOPPED`: every run quiet, the KL creeping down slowly instead of collapsing).

Declared after it and after the second family's pilot (p42g, ``family_pilot.json``), before
any run of its own: ``gauss_ls3`` (`_batched.GaussianSmoothedMLP`), ``gauss_memo``'s students
(20-8-1 ReLU, 177 parameters) and 64 Gaussian inputs under a confident binary cross-entropy
with an exact minimum: random labels (the signs of ``gauss_memo``'s targets) smoothed to
0.999, read as ``KL(q || p)``, zero exactly where every margin is ``log 999`` (6.9);
``lr = 1e-2``, ``eps = 1e-8``. The reason, from the stored data: ``gauss_memo``, the
mean-squared memorisation of random targets on these students and inputs, collapses and spikes
with a settled edge in 8 of its 9 rows, where every digits set-up hovers and ``teacher_kl``
(ten outputs, 2,304 constraints for 258 parameters) creeps; ``gauss_ls3`` keeps
``gauss_memo``'s proportions (one margin per input, 177 parameters for 64) and changes only
the loss, to the confident cross-entropy's core and wall along each margin. The same seven
diagnostic cells as ``teacher_kl`` (`_family_wall.DIAGNOSTICS`' seven after ``teacher_kl``'s),
the same gate. They read quiet at ``1 - beta2 >= 0.01`` (the KL held 6-7.3 decades down), but
the largest settled rises grow as ``1 - beta2`` falls (median over seeds about 0.3, 0.8, 1.8
decades at 10^-1.5, 0.01, 10^-2.5 on the row 0.1) and the row 0.1's cell at 10^-2.5 has 3
of its 7 judged runs spiky, short of half. Declared after them, before running, five cells
further down in ``1 - beta2`` (`_family_wall.DIAGNOSTICS`' last five: the rows 0.3 and 0.2
at 10^-2.5 and 10^-3, the row 0.1 at 10^-3), the gate unchanged. They read spiky at 10^-3
below quiet cells on every row, so ``gauss_ls3`` was piloted: a settled edge on each of the
rows 0.3, 0.2 and 0.1 (near ``1 - beta2 = 0.002``), every trained run confident, but 7 of its
208 runs untrained with their settled KL above `confident_level()`, so it fails the property
as declared (every run confident; `_family_wall.wall_summary`)."""
WALL_ROWS = (0.3, 0.2, 0.1)
"""The core-wall candidates' declared rows: those of `ROWS` whose edges the diagnostics place
inside `COLUMNS` at a cost the session's two cores can pay (the row 0.3's edge lies between
``1 - beta2`` = 0.0316, quiet, and 0.01, half its seeds spiky)."""
WALL_TOP = 1.0
"""The core-wall pilot scans a row ``1 - beta1 = a`` only over the columns ``1 - beta2 <=
WALL_TOP * a`` (declared after ``digits_ce_wd``'s pilot, before any run of the later
candidates; `wall_columns()`). Adam's moments grow without bound beyond ``beta1 = sqrt(beta2)``,
``1 - beta2 = 2a - a^2``; the stored pilot's rows 0.2 and 0.1 were spiky or diverged at their
top cells, ``beta1 / sqrt(beta2)`` 0.97 and 0.99, and the downward scan stopped there, while
the stored diagnostics read the cells below them (row 0.2 at 0.1, row 0.1 at 0.1 and 0.01)
quiet: spikes of the divergence line, not of a settled edge. Half the line's ``1 - beta2``
(about ``a``) keeps the scan clear of it and keeps a teacher-like edge ``1 - beta2 = C a``
(``C`` about 0.04-0.06) inside by a factor above 15. ``digits_ce_wd``'s stored rows were scanned
over every column, before this was declared (`WALL_UNCAPPED`)."""
WALL_UNCAPPED = ("digits_ce_wd",)
"""The core-wall candidates piloted before `WALL_TOP` was declared: scanned over every column."""
WALL_MIN_ROWS = 2
"""The defining property of a core-wall candidate (declared before its pilot): confident (every
run's settled median loss below `confident_level()`: every image's loss below ``log 2``, so
every training label has probability above 1/2) and a spiky regime with a settled edge in at
least this many of `WALL_ROWS`."""
WALL_STOPPED: dict[str, str] = (
    {
        name: "stopped on its declared diagnostics, not piloted: no diagnostic cell spiky, the KL "
        "held at a noisy level, no collapse towards the exact minimum"
        for name in ("digits_ls3", "digits_ls2")
    }
    | {
        name: "stopped on its declared diagnostics, not piloted: no diagnostic cell with half its "
        "runs spiky, the loss falling at a steady pace towards the eps floor on the rows 0.2 and 0.1"
        for name in ("digits_ce_wd03", "digits_ce_wd05")
    }
    | {
        "digits_ce_wd07": "stopped on its declared diagnostics, not piloted: no diagnostic cell "
        "with half its runs spiky, the loss on the rows 0.2 and 0.1 still falling at the end of "
        "every run"
    }
    | {
        "teacher_kl": "stopped on its declared diagnostics, not piloted: no diagnostic cell "
        "spiky, the KL still creeping down at a noisy level, no collapse onto the exact fit"
    }
    | {
        "digits_ls3_w8": "stopped on its declared diagnostics, not piloted: no diagnostic cell "
        "spiky; width 8 does not fit the smoothed labels (the KL stalls about three decades down, "
        "some runs untrained)",
        "digits_ls3_lr3": "stopped on its declared diagnostics, not piloted: no diagnostic cell "
        "spiky, the KL held at a noisy level 1.5-2 decades below digits_ls3's (Adam's step sets "
        "it), no collapse towards the exact minimum",
    }
)
"""Core-wall candidates stopped before a pilot (the brief: a candidate is piloted only if its
diagnostics read spiky below quiet cells on a row), passed over by `_family_wall.wall_choose`,
with the reason (``wall_pilot.json``'s diagnostics)."""
WALL_SEED_OFFSET = 100
"""Seed index of the first core-wall candidate (`seed_index()`), apart from `CANDIDATES`'."""
LOSSES = {
    "digits_ce": "cross-entropy",
    "digits_mse": "half the squared error to the one-hot labels",
    "gauss_memo": "half the squared error to i.i.d. standard normal targets (no teacher)",
    "digits_pc_memo": "half the squared error to i.i.d. standard normal targets (no teacher)",
}
"""The loss of each ``_batched`` task a candidate may name, in words (the pilot's tables)."""
NETWORKS = {
    "digits_ce": "MLP 64-{hidden}-10 on {n_samples} digits",
    "digits_mse": "MLP 64-{hidden}-10 on {n_samples} digits",
    "gauss_memo": "MLP 20-{hidden}-1 on {n_samples} Gaussian inputs",
    "digits_pc_memo": "MLP 20-{hidden}-1 on {n_samples} digits (top 20 components, whitened)",
}
"""The network and data of each ``_batched`` task a candidate may name, in words (the pilot's
tables; filled with the candidate's ``hidden`` and ``n_samples``)."""
WALL_NETWORKS = {
    "digits_ls3": "MLP 64-{hidden}-10 on {n_samples} digits",
    "digits_ls2": "MLP 64-{hidden}-10 on {n_samples} digits",
    "teacher_kl": "MLP 20-{hidden}-10 on {n_samples} Gaussian inputs",
    "gauss_ls3": "MLP 20-{hidden}-1 on {n_samples} Gaussian inputs",
}
"""`NETWORKS` of the ``_batched`` tasks only a core-wall candidate names."""
FIRST_ROWS = (0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01)
"""The family pilot's first grid's rows (history: the four first candidates' stored rows were
run on it with `FIRST_MIN_ROWS`; quarter-decade columns from 1e-3 to 10^-0.5, the same columns
as `COLUMNS`)."""
FIRST_MIN_ROWS = 6
"""The first grid's rule: at least this many of `FIRST_ROWS` with a settled edge."""
ROWS = tuple(float(a) for a in SCAN_DESIGN["one_minus_beta1"])
"""Rows ``1 - beta1`` of the family pilot: the network tasks' design's
(`_protocol.SCAN_DESIGN`), declared 2026-12-07 before any pilot on them (the grid's revision,
module doc)."""
COLUMNS = tuple(10 ** round(math.log10(c), 2) for c in SCAN_DESIGN["one_minus_beta2"])
"""Columns ``1 - beta2``: the design's (`_protocol.SCAN_DESIGN`), quarter decades from 1e-3 to
10^-0.5, at the exact quarter decades that the design rounds to four digits: the first grid's
values, so that its stored cells (the family and core-wall pilots) rerun to their bits."""
SEEDS = int(SCAN_DESIGN["seeds"])
"""Seeds per evaluated cell (the design's, 8): with 8, a cell whose seeds agree is significant
at 95% (the edge's interval, `_bisect.row_edge`)."""
MIN_ROWS = 6
"""Rows with a settled edge a candidate must show to be chosen (issue 42's Must show)."""
LOW_ROW = 0.05
"""...of which at least one at ``1 - beta1 <= LOW_ROW`` (issue 42's Must show: "at least 6
rows with an edge including ``1 - beta1 <= 0.05``")."""
STOPPED: dict[str, str] = {
    name: "stopped on the first grid: quiet in every run of its rows 0.3 and 0.2 (rows of "
    "`ROWS`, on the same columns), no rise reaching the declared range's lower end; not rerun"
    for name in ("digits_ce", "digits_ce_w16", "digits_mse", "digits_mse_n128")
}
"""Candidates stopped before the grid's revision (module doc), passed over by the choice: their
stored rows 0.3 and 0.2 are rows of `ROWS` on the same columns and read as they are (no edge),
which under the revised rule's arithmetic alone leaves them undecided (two of nine rows run
without an edge); they are not rerun, their diagnosis (the settled level is Adam's step size's,
a smooth loss without the sawtooth) says the other rows would not spike either."""
SEED_ROWS = FIRST_ROWS + tuple(a for a in ROWS if a not in FIRST_ROWS)
"""The rows' positions in a cell's seed (`_family_pilot.cell_seed`): the first grid's rows in
their order, then the revised grid's new rows, so that a stored cell keeps its seeds."""


def column_index(c: float) -> int:
    """The position of column ``c`` in ``sorted(COLUMNS)`` (matched to 0.1%: the design's
    columns as `_protocol` rounds them name the same cells).

    Raises
    ------
    InputError
        When ``c`` is not a declared column (to 0.1%).
    """
    cols = sorted(COLUMNS)
    j = int(np.argmin(np.abs(np.log(cols) - math.log(c)))) if c > 0 else 0
    if not (c > 0 and math.isclose(cols[j], c, rel_tol=1e-3)):
        raise InputError(f"column {c!r} is not allowed; the declared columns are {cols}")
    return j


def rule_verdict(run: list[float], with_edge: list[float]) -> str:
    """The family rule on rows ``run`` of `ROWS` of which ``with_edge`` have a settled edge:
    ``"meets"`` with at least `MIN_ROWS` edges, one of them at ``1 - beta1 <= LOW_ROW``;
    ``"fails"`` once the rows not run cannot bring it there (more than ``len(ROWS) -
    MIN_ROWS`` rows run without an edge, or every row at or below `LOW_ROW` run without one);
    else ``"undecided"``. The one definition of the rule (the pilot's choice and its
    known-answer control on the teacher tasks' stored edges)."""
    edges = [a for a in with_edge if a in run]
    if len(edges) >= MIN_ROWS and any(a <= LOW_ROW for a in edges):
        return "meets"
    without = [a for a in run if a not in edges]
    low = [a for a in ROWS if a <= LOW_ROW]
    if len(without) > len(ROWS) - MIN_ROWS or all(a in without for a in low):
        return "fails"
    return "undecided"


def candidate(name: str) -> dict[str, Any]:
    """The declared candidate ``name``, of `CANDIDATES` or `WALL_CANDIDATES`.

    Raises
    ------
    InputError
        When ``name`` is not a declared candidate.
    """
    if name in CANDIDATES:
        return CANDIDATES[name]
    if name in WALL_CANDIDATES:
        return WALL_CANDIDATES[name]
    raise InputError(
        f"family task {name!r} is not allowed; choose one of "
        f"{list(CANDIDATES) + list(WALL_CANDIDATES)}"
    )


def wall_columns(name: str, a: float) -> list[float]:
    """The ascending columns the core-wall pilot scans on row ``a`` of candidate ``name``:
    every column of `COLUMNS` for those of `WALL_UNCAPPED`, those with ``1 - beta2 <=
    WALL_TOP * a`` for the later candidates.

    Raises
    ------
    InputError
        When ``name`` is not a core-wall candidate.
    """
    if name not in WALL_CANDIDATES:
        raise InputError(
            f"core-wall candidate {name!r} is not allowed; choose one of {list(WALL_CANDIDATES)}"
        )
    cols = sorted(COLUMNS)
    if name in WALL_UNCAPPED:
        return cols
    return [c for c in cols if c <= WALL_TOP * a * (1 + 1e-9)]


def seed_index(name: str) -> int:
    """The candidate's index in the seeds of its cells (``SeedSequence([SEED, index, i,
    j])``): its place in `CANDIDATES`, or `WALL_SEED_OFFSET` plus its place in
    `WALL_CANDIDATES`."""
    candidate(name)
    if name in CANDIDATES:
        return list(CANDIDATES).index(name)
    return WALL_SEED_OFFSET + list(WALL_CANDIDATES).index(name)


def confident_level(name: str) -> float:
    """``log10`` of the mean loss below which every image's loss is below ``log 2`` (the mean
    times the images bounds each image's loss): ``log10(log(2) / n_samples)``."""
    return math.log10(math.log(2.0) / candidate(name)["n_samples"])


def family_task(
    name: str,
    spikes,
    seeds: int = SEEDS,
    a=ROWS,
    c=COLUMNS,
    also=(),
) -> dict[str, Any]:
    """Candidate ``name`` (`candidate()`) as a ``spike_boundary`` network task (``kind``
    ``"task"``, ``weight_decay`` where it has one, the
    initialisation start) on rows ``a`` and columns ``c`` with ``seeds`` copies a cell, judged
    by the detector sampling ``spikes`` (rise, block_min, blocks per horizon) and, when given,
    the shared pass's further samplings ``also``.

    Raises
    ------
    InputError
        When ``name`` is not a declared candidate.
    """
    cand = candidate(name)
    out = {
        "kind": "task",
        "task": cand["task"],
        "start": "init",
        "a": [float(x) for x in a],
        "c": sorted(float(x) for x in c),
        "seeds": int(seeds),
        "lr": float(cand["lr"]),
        "n_samples": int(cand["n_samples"]),
        "hidden": int(cand["hidden"]),
        "eps": float(cand["eps"]),
        "spikes": list(spikes),
    }
    if cand.get("weight_decay"):
        out["weight_decay"] = float(cand["weight_decay"])
    if also:
        out["also"] = [list(z) for z in also]
    return out
