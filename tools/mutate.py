"""Mutation testing of the core with planted bugs: does the suite notice a realistic mistake?

Each mutation is ``(id, file, old text, new text, test selection)``: one single, realistic bug (a
sign, a factor, an axis, a tableau digit, an inverted comparison, a deleted check). The script
copies the repository (``src``, ``tests``, ``tools``, ``derivations``, ``simulations``, ``docs``,
``pyproject.toml``) into a temporary folder, never touching the working tree; for each mutation
it replaces the old text (which must occur exactly once) in the copy, runs the mutation's tests there with
``PYTHONPATH`` pointing at the copy and a time limit, restores the file and records

- ``killed``: a selected test failed (or the run exceeded its time limit: ``killed (timeout)``);
- ``survived``: every selected test passed with the bug in place;
- ``skipped``: the old text is not in the file (the code moved on; update the mutation).

The score is killed / (killed + survived). Before the mutations, the union of the selections is
run once on the unmutated copy and must pass, so a kill is the bug's doing (``--no-baseline``
skips this). Run from the repository root::

    nice -n 5 .venv/bin/python tools/mutate.py                  # every mutation
    .venv/bin/python tools/mutate.py --list                     # what would be planted
    .venv/bin/python tools/mutate.py --check                    # does every text still match?
    .venv/bin/python tools/mutate.py --only rodas-error-stage,owner-axis --timeout 120
    nice -n 5 .venv/bin/python tools/mutate.py --group issue34 --timeout 180   # one group

Groups: ``core`` (the developers' first set) and ``issue34`` (the newest library modules: the
order-parameter chain, the Adam state toolkit, the spike detector, the 1-D map, the edge
preconditioner, the prototype model and the shared-representation pulses, each against its
``tests/test_pinned_*.py`` file).

Exit status: 0 when every mutation that ran was killed, 1 when one survived, 2 on bad input or a
failing baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutants  # noqa: E402  (tools/ is not a package)

ROOT = Path(__file__).resolve().parents[1]
COPIED = (
    "src",
    "tests",
    "tools",
    "derivations",
    "simulations",
    "docs",
    "results-data",
    "pyproject.toml",
)
"""What a mutant's copy of the repository holds: the tests that check a generated page read the
committed runs in ``results-data/`` (without it they fail in every copy and read as kills)."""
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str
    group: str = "core"
    line: int = 0  # a generated mutant's place (tools/mutants.py): old is replaced there only
    col: int = 0


T = "tests/"
MUTATIONS = (
    # --- the six bugs that went through the suite unnoticed (issue 19) ---------------------------
    Mutation(
        "rodas-error-stage",
        "src/gaugedyn/theory/_rosenbrock.py",
        "err = _rms(ks[5] / (sys.atol",
        "err = _rms(ks[4] / (sys.atol",
        (T + "test_theory_integrators.py", T + "test_theory_solve.py"),
        "Rodas error estimate taken from the wrong stage",
    ),
    Mutation(
        "rodas-dense-digit",
        "src/gaugedyn/theory/_rosenbrock.py",
        "[10.12623508344586,",
        "[10.12623508344566,",
        (T + "test_theory_integrators.py", T + "test_theory_solve.py"),
        "one digit of a dense-output coefficient",
    ),
    Mutation(
        "gd-event-off-by-one",
        "src/gaugedyn/theory/_methods.py",
        "events[new] = ((k - 1) + frac[new]) * eta",
        "events[new] = (k + frac[new]) * eta",
        (T + "test_theory_integrators.py", T + "test_theory_solve.py"),
        "GD event time interpolated one step late",
    ),
    Mutation(
        "online-adam-eta-over-d",
        "src/gaugedyn/training/_trainer.py",
        'scale = 1.0 / D if (cfg.online and cfg.optimizer == "sgd") else 1.0',
        "scale = 1.0 / D if cfg.online else 1.0",
        (T + "test_training_online.py", T + "test_training.py"),
        "online SGD's eta/D step applied to online Adam",
    ),
    Mutation(
        "online-flow-time-no-d",
        "src/gaugedyn/training/_trainer.py",
        "t_flow += eta * scale",
        "t_flow += eta",
        (T + "test_training_online.py", T + "test_training.py"),
        "the /D dropped from online SGD's flow time",
    ),
    Mutation(
        "recorder-late-attach-swapped",
        "src/gaugedyn/adam/_recorder.py",
        'st["exp_avg"] * (bc2 / bc1)',
        'st["exp_avg"] * (bc1 / bc2)',
        (T + "test_adam_reference.py", T + "test_adam_recorder.py"),
        "late-attached AdamRecorder: bias corrections swapped",
    ),
    # --- the theory ----------------------------------------------------------------------------
    Mutation(
        "owner-axis",
        "src/gaugedyn/theory/_observables.py",
        "best = np.max(share, axis=-2, keepdims=True)",
        "best = np.max(share, axis=-1, keepdims=True)",
        (T + "test_theory_solve.py", T + "test_theory_flows.py"),
        "owner: the largest share taken over teachers instead of students",
    ),
    Mutation(
        "delta-sign",
        "src/gaugedyn/theory/_observables.py",
        "return a**2 - np.diagonal(Q, axis1=-2, axis2=-1)",
        "return a**2 + np.diagonal(Q, axis1=-2, axis2=-1)",
        (T + "test_theory_flows.py",),
        "gauge delta with the wrong sign",
    ),
    Mutation(
        "gradient-H-sign",
        "src/gaugedyn/theory/_population.py",
        "H = -ab * Fc_st",
        "H = ab * Fc_st",
        (T + "test_theory_flows.py",),
        "sign of the teacher-overlap gradient",
    ),
    Mutation(
        "gradient-diagonal-factor",
        "src/gaugedyn/theory/_population.py",
        "diag = 0.5 * a**2 * dS(dq)",
        "diag = a**2 * dS(dq)",
        (T + "test_theory_flows.py",),
        "factor 1/2 lost in the self-overlap gradient",
    ),
    Mutation(
        "gd-step-second-order",
        "src/gaugedyn/theory/_flows.py",
        "Q + eta * dQ + eta**2 * outer",
        "Q + eta * dQ + eta * outer",
        (T + "test_theory_flows.py", T + "test_theory_solve.py"),
        "GD in order parameters: eta^2 term with eta",
    ),
    Mutation(
        "rodas-tableau-digit",
        "src/gaugedyn/theory/_rosenbrock.py",
        "[1.544, 0, 0, 0, 0],",
        "[1.554, 0, 0, 0, 0],",
        (T + "test_theory_solve.py",),
        "one digit of the Rodas4 tableau",
    ),
    Mutation(
        "rodas-step-exponent",
        "src/gaugedyn/theory/_rosenbrock.py",
        "fac = np.clip(0.9 * err ** -0.25, 0.2, 6.0)",
        "fac = np.clip(0.9 * err ** -0.5, 0.2, 6.0)",
        (T + "test_theory_solve.py", T + "test_theory_integrators.py"),
        "step-size controller with the wrong order",
    ),
    Mutation(
        "lsoda-grid-start",
        "src/gaugedyn/theory/_lsoda.py",
        "t_min = max(min(1e-3, task.t_max / 10.0, scale), 1e-16 * task.t_max)",
        "t_min = min(1e-3, task.t_max / 10.0)",
        (T + "test_theory_solve.py",),
        "LSODA's grid ignores the initial time scale",
    ),
    Mutation(
        "lsoda-event-bracket-side",
        "src/gaugedyn/theory/_lsoda.py",
        "dense = {k: _bracket(task, ts[k - 1], ts[k], ys[k - 1], counted)",
        "dense = {k: _bracket(task, ts[k - 1], ts[k], ys[k], counted)",
        (T + "test_theory_solve.py",),
        "an event's bracket started from its right end",
    ),
    # --- the exact order-parameter chain of online SGD --------------------------------------------
    Mutation(
        "chain-free-directions",
        "src/gaugedyn/training/_online_kernels.py",
        "free = max(D - rank, 0)",
        "free = max(D, 0)",
        (T + "test_online_chain.py",),
        "the orthogonal part drawn with D degrees of freedom",
    ),
    Mutation(
        "chain-bartlett-dof",
        "src/gaugedyn/training/_online_kernels.py",
        "A[i, i] = math.sqrt(gen.chisquare(free - i))",
        "A[i, i] = math.sqrt(gen.chisquare(free))",
        (T + "test_online_chain.py",),
        "Bartlett's diagonal with the same degrees of freedom",
    ),
    Mutation(
        "chain-cross-gram",
        "src/gaugedyn/training/_online_kernels.py",
        "s += c[mu, i] * c[nu, j] * G[mu, nu]",
        "s += c[mu, i] * c[nu, j] * G[mu, mu]",
        (T + "test_online_chain.py",),
        "the batch's noise term without the samples' overlaps",
    ),
    Mutation(
        "chain-unspanned-draw",
        "src/gaugedyn/training/_online_kernels.py",
        "z[mu, p] = gen.standard_normal() if L[p, p] != 0.0 else 0.0",
        "z[mu, p] = gen.standard_normal()",
        (T + "test_online_chain.py",),
        "a direction the rows do not span counted twice",
    ),
    # --- Adam ------------------------------------------------------------------------------------
    Mutation(
        "adam-eps-part",
        "src/gaugedyn/adam/_decomposition.py",
        "eps_part = where(pos, -eps * w_hat / (s_safe * d), w_hat / d)",
        "eps_part = where(pos, -eps * w_hat / (s_safe * s_safe), w_hat / d)",
        (T + "test_adam_decomposition.py",),
        "eps part of the Adam split with s for s + eps",
    ),
    Mutation(
        "adam-lag-denominator",
        "src/gaugedyn/adam/_decomposition.py",
        "lag = (m_hat - w_hat) / d",
        "lag = (m_hat - w_hat) / s_safe",
        (T + "test_adam_decomposition.py",),
        "lag part divided by sqrt(v^) without eps",
    ),
    Mutation(
        "adam-bias-beta",
        "src/gaugedyn/adam/_decomposition.py",
        "bc1 = 1 - beta1**step\n    bc2 = 1 - beta2**step\n    return bc1, bc2, bc2**0.5",
        "bc1 = 1 - beta2**step\n    bc2 = 1 - beta2**step\n    return bc1, bc2, bc2**0.5",
        (T + "test_adam_decomposition.py", T + "test_adam_recorder.py"),
        "first-moment bias correction with beta2",
    ),
    # --- statistics and claims -------------------------------------------------------------------
    Mutation(
        "verdict-low-high",
        "src/gaugedyn/stats/__init__.py",
        '        if low > threshold:\n            return "HELD"',
        '        if high > threshold:\n            return "HELD"',
        (T + "test_stats.py",),
        "a finding held when only the interval's top clears it",
    ),
    Mutation(
        "mean-ci-quantile",
        "src/gaugedyn/stats/__init__.py",
        "stats.t.ppf(0.5 + confidence / 2, a.size - 1)",
        "stats.t.ppf(confidence, a.size - 1)",
        (T + "test_stats.py",),
        "one-sided quantile in the t interval",
    ),
    Mutation(
        "every-cell-without-holm",
        "src/gaugedyn/stats/_rules.py",
        "holm = self.bounds((x,), 1 - (1 - level) / m)",
        "holm = self.bounds((x,), level)",
        (T + "test_verdict_rules.py",),
        "the every-cell rule says NOT HELD without Holm",
    ),
    Mutation(
        "median-interpolation-weight",
        "src/gaugedyn/stats/_estimators.py",
        "lam = (n - k) * interp / (k + (n - 2 * k) * interp)",
        "lam = k * interp / (k + (n - 2 * k) * interp)",
        (T + "test_verdict_rules.py",),
        "a wrong Hettmansperger-Sheather weight",
    ),
    # --- the run machinery -----------------------------------------------------------------------
    Mutation(
        "store-checksum-deleted",
        "src/gaugedyn/harness/_store.py",
        'if record_digest(key, npz, layout) != meta["sha256"]:',
        "if False:",
        (T + "test_store.py",),
        "stored results no longer checked against their checksum",
    ),
    Mutation(
        "task-key-without-seed",
        "src/gaugedyn/harness/_store.py",
        "payload = canonical_json([experiment, task, int(root_seed), version])",
        "payload = canonical_json([experiment, task, version])",
        (T + "test_store.py", T + "test_experiments_run.py"),
        "the store address ignores the root seed",
    ),
    Mutation(
        "param-upper-bound-inverted",
        "src/gaugedyn/_options.py",
        "if self.hi is not None and (x > self.hi or",
        "if self.hi is not None and (x < self.hi or",
        (T + "test_experiments_config.py", T + "test_stats.py"),
        "Param's upper bound inverted",
    ),
    Mutation(
        "nan-check-deleted",
        "src/gaugedyn/harness/_config.py",
        "    if not _finite(value):\n",
        "    if False:\n",
        (T + "test_experiments_config.py",),
        "nan and inf settings accepted",
    ),
    Mutation(
        "retry-no-progress-test",
        "src/gaugedyn/harness/_sweep.py",
        "if len(again) == len(lost):",
        "if len(again) != len(lost):",
        (
            T
            + "test_experiments_run.py::test_a_dying_worker_fails_only_its_task_and_the_rerun_resumes",
        ),
        "a dead worker's suspects isolated at the wrong moment",
    ),
)


# --- issue 34: the newest library modules, against the pinned tests --------------------------
KERN = "src/gaugedyn/training/_online_kernels.py"
STATE = "src/gaugedyn/adam/_state.py"
SPIKES = "src/gaugedyn/adam/_spikes.py"
STAB = "src/gaugedyn/adam/_stability.py"
EDGE = "src/gaugedyn/experiments/adam_stability/_edge.py"
PROTO = "src/gaugedyn/experiments/prototypes/_model.py"
SREP = "src/gaugedyn/experiments/adam_state/_pulses.py"
CHAIN_T = (T + "test_pinned_chain.py",)
CHAIN_RUN_T = (
    T + "test_online_chain.py::test_chain_update_is_weight_space_sgd_on_the_same_samples",
)
STATE_T = (T + "test_pinned_adam_state.py",)
STAB_T = (T + "test_pinned_stability.py",)
EDGE_T = (T + "test_pinned_edge.py",)
PROTO_T = (T + "test_pinned_prototypes.py",)
SREP_T = (T + "test_pinned_shared_rep.py",)


def _m34(id: str, file: str, old: str, new: str, tests: tuple[str, ...], what: str) -> Mutation:
    return Mutation(id, file, old, new, tests, what, group="issue34")


MUTATIONS += (
    # the chain's per-step draw and its update
    _m34(
        "chain-field-transposed",
        KERN,
        "s += L[p, q] * z[mu, q]",
        "s += L[q, p] * z[mu, q]",
        CHAIN_T,
        "fields drawn as L^T z instead of L z",
    ),
    _m34(
        "chain-bartlett-upper",
        KERN,
        "A[i, j] = gen.standard_normal()",
        "A[j, i] = gen.standard_normal()",
        CHAIN_T,
        "Bartlett's factor filled above its diagonal (A^T A for A A^T)",
    ),
    _m34(
        "chain-bartlett-dof-minus-one",
        KERN,
        "math.sqrt(gen.chisquare(free - i))",
        "math.sqrt(gen.chisquare(free - i - 1))",
        CHAIN_T,
        "Bartlett's chi-square one degree of freedom short (1-based index)",
    ),
    _m34(
        "chain-explicit-transposed",
        KERN,
        "A[i, m] = gen.standard_normal()",
        "A[m, i] = gen.standard_normal()",
        CHAIN_T,
        "the explicit orthogonal normals stored transposed (free < B)",
    ),
    _m34(
        "chain-single-chi-rankless",
        KERN,
        "G[0, 0] += gen.chisquare(free)",
        "G[0, 0] += gen.chisquare(D)",
        CHAIN_T,
        "B = 1: |x_perp|^2 drawn with D degrees of freedom whatever the rank",
    ),
    _m34(
        "chain-pivot-guard-dropped",
        KERN,
        "if d > tol * C[j, j] and d > 0.0:",
        "if d > 0.0:",
        CHAIN_T,
        "the relative pivot threshold dropped: rounding counts as a direction",
    ),
    _m34(
        "chain-cholesky-row",
        KERN,
        "s -= L[i, m] * L[j, m]",
        "s -= L[i, m] * L[i, m]",
        CHAIN_T,
        "Cholesky's off-diagonal update with the wrong row",
    ),
    _m34(
        "chain-gram-mirror",
        KERN,
        "G[nu, mu] = G[mu, nu]",
        "G[mu, nu] = G[nu, mu]",
        CHAIN_T,
        "the samples' Gram matrix mirrored the wrong way",
    ),
    _m34(
        "chain-coef-batch",
        KERN,
        "c[mu, i] = (eta / batch) * e",
        "c[mu, i] = eta * e",
        CHAIN_RUN_T,
        "the chain's weight step not averaged over the batch",
    ),
    _m34(
        "chain-q-cross-term",
        KERN,
        "s -= c[mu, j] * u[mu, i]",
        "s -= c[mu, i] * u[mu, j]",
        CHAIN_RUN_T,
        "Q's update with one cross term counted twice",
    ),
    # the Adam state toolkit
    _m34(
        "state-bias-beta1",
        STATE,
        'b2 = float(g["betas"][1])',
        'b2 = float(g["betas"][0])',
        STATE_T,
        "adaptive scale bias-corrected with beta1",
    ),
    _m34(
        "state-bias-missing",
        STATE,
        'return 1.0 - b2 ** float(st["step"]), float(g["eps"])',
        'return 1.0, float(g["eps"])',
        STATE_T,
        "adaptive scale without bias correction",
    ),
    _m34(
        "state-bias-step-ahead",
        STATE,
        'b2 ** float(st["step"])',
        'b2 ** (float(st["step"]) + 1)',
        STATE_T,
        "bias correction one step ahead",
    ),
    _m34(
        "state-eps-inside-root",
        STATE,
        "terms.append(1.0 / ((v.double() / bc2).sqrt() + eps))",
        "terms.append(1.0 / ((v.double() / bc2 + eps).sqrt()))",
        STATE_T,
        "eps added under the square root",
    ),
    _m34(
        "state-group-first",
        STATE,
        'if any(q is p for q in g["params"]):',
        "if True:",
        STATE_T,
        "every parameter read with the first group's betas and eps",
    ),
    _m34(
        "state-layer-first-dot",
        STATE,
        'n.rpartition(".")[0]',
        'n.partition(".")[0]',
        STATE_T,
        "layers grouped by the name up to its first dot",
    ),
    _m34(
        "state-count-with-batch",
        STATE,
        "cnt += t[(0,) * batch_dims].numel() if batch_dims else t.numel()",
        "cnt += t.numel()",
        STATE_T,
        "per-batch means divided by the batch's count too",
    ),
    _m34(
        "state-amsgrad-both",
        STATE,
        'if "exp_avg_sq" in keys and "max_exp_avg_sq" in st',
        'if keys == ("exp_avg_sq",) and "max_exp_avg_sq" in st',
        STATE_T,
        "amsgrad's running maximum travels with v alone, not with 'both'",
    ),
    _m34(
        "state-equalise-c",
        STATE,
        "before * _expand(c * c, before, batch_dims)",
        "before * _expand(c, before, batch_dims)",
        STATE_T,
        "v scaled by c instead of c^2",
    ),
    _m34(
        "state-bisection-side",
        STATE,
        "too_big = a > target",
        "too_big = a < target",
        STATE_T,
        "the scale bisection keeps the wrong half",
    ),
    _m34(
        "state-exchange-b",
        STATE,
        "_put(tb, spec, before)",
        "_put(tb, spec, _get(ta, spec))",
        STATE_T,
        "exchange leaves the second optimizer with its own moment",
    ),
    _m34(
        "state-update-norm-rms",
        STATE,
        "return (_group_mean(sq, batch_dims) * _numel(sq, batch_dims)).sqrt()",
        "return _group_mean(sq, batch_dims).sqrt()",
        STATE_T,
        "update norm returned as a root mean square",
    ),
    # the spike detector
    _m34(
        "spikes-level-includes-the-block",
        SPIKES,
        "sliding_window_view(med[:-1], m, axis=0)",
        "sliding_window_view(med[1:], m, axis=0)",
        STAB_T,
        "the settled level taken over the judged block itself",
    ),
    _m34(
        "spikes-level-lower-median",
        SPIKES,
        "np.partition(windows, m // 2, axis=-1), m // 2, axis=-1)",
        "np.partition(windows, (m - 1) // 2, axis=-1), (m - 1) // 2, axis=-1)",
        STAB_T,
        "the level the lower median of the window",
    ),
    _m34(
        "spikes-warmup-kept",
        SPIKES,
        "r, resolved = rises(med[warm:], m, floor)",
        "r, resolved = rises(med, m, floor)",
        STAB_T,
        "the warm-up horizon judged",
    ),
    _m34(
        "spikes-horizon-faster",
        SPIKES,
        "tau = np.maximum(",
        "tau = np.minimum(",
        STAB_T,
        "horizon from the faster memory",
    ),
    _m34(
        "spikes-threshold-strict",
        SPIKES,
        "hits = r >= s.rise",
        "hits = r > s.rise",
        STAB_T,
        "a rise of exactly 2 decades not a spike",
    ),
    _m34(
        "spikes-judged-strict",
        SPIKES,
        "med.shape[0] >= judged_blocks(",
        "med.shape[0] > judged_blocks(",
        STAB_T,
        "a run of exactly the blocks it needs not judged",
    ),
    _m34(
        "spikes-divergence-low",
        SPIKES,
        "np.asarray(blocks.bad, dtype=bool).any(axis=0) & judged",
        "np.asarray(blocks.bad, dtype=bool).all(axis=0) & judged",
        STAB_T,
        "a run that diverges part way read as not diverged",
    ),
    # the 1-D Adam map
    _m34(
        "stab-step-m-with-c",
        STAB,
        "mh, vh = m / (1 - (1 - a) ** t)",
        "mh, vh = m / (1 - (1 - c) ** t)",
        STAB_T,
        "first moment corrected with beta2",
    ),
    _m34(
        "stab-step-v-uncorrected",
        STAB,
        "v / (1 - (1 - c) ** t)\n",
        "v\n",
        STAB_T,
        "the exact step's second moment not bias-corrected",
    ),
    _m34(
        "stab-sim-m-uncorrected",
        STAB,
        "x = x - lr * (m / (1 - p1))",
        "x = x - lr * m",
        STAB_T,
        "simulated losses without the first-moment correction",
    ),
    _m34(
        "stab-sim-powers-swapped",
        STAB,
        "p1, p2 = p1 * b1, p2 * b2",
        "p1, p2 = p1 * b2, p2 * b1",
        STAB_T,
        "simulated bias corrections with swapped betas",
    ),
    _m34(
        "stab-sim-loss-exponent",
        STAB,
        "n * np.log10(np.abs(x)) - np.log10(n)",
        "np.log10(np.abs(x)) - np.log10(n)",
        STAB_T,
        "log loss without the exponent n",
    ),
    _m34(
        "stab-orbit-amplitude",
        STAB,
        "A0 = lr * a / (2 * (2 - a))",
        "A0 = lr * a / (2 - a)",
        STAB_T,
        "orbit amplitude without its factor 1/2",
    ),
    _m34(
        "stab-orbit-m-sign",
        STAB,
        '"M": -a * G / (2 - a)',
        '"M": a * G / (2 - a)',
        STAB_T,
        "orbit momentum with the wrong sign",
    ),
    # the edge preconditioner
    _m34(
        "edge-no-bias",
        EDGE,
        "out.append((v / (1 - beta2**t)).sqrt() + eps)",
        "out.append(v.sqrt() + eps)",
        EDGE_T,
        "preconditioner without bias correction",
    ),
    _m34(
        "edge-step-behind",
        EDGE,
        't = int(st["step"]) + 1 if',
        't = int(st["step"]) if',
        EDGE_T,
        "preconditioner's bias correction one step behind",
    ),
    _m34(
        "edge-betas-swapped",
        EDGE,
        "v = beta2 * v_prev + (1 - beta2) * g * g",
        "v = (1 - beta2) * v_prev + beta2 * g * g",
        EDGE_T,
        "second moment with beta2 and 1 - beta2 swapped",
    ),
    _m34(
        "edge-kappa-plain",
        EDGE,
        "float(d @ Hd / (d @ (P * d)))",
        "float(d @ Hd / (d @ d))",
        EDGE_T,
        "active curvature not preconditioned",
    ),
    _m34(
        "edge-secant-plain",
        EDGE,
        "(dth @ (P * dth))",
        "(dth @ dth)",
        EDGE_T,
        "secant curvature not preconditioned",
    ),
    _m34(
        "edge-direction-gradient",
        EDGE,
        "d = (g.detach() / P)",
        "d = g.detach()",
        EDGE_T,
        "active curvature along g instead of P^-1 g",
    ),
    _m34(
        "edge-threshold-no-momentum",
        EDGE,
        "2.0 * (1.0 + beta1) / (1.0 - beta1)",
        "2.0 / (1.0 - beta1)",
        EDGE_T,
        "edge threshold without the (1 + beta1)",
    ),
    # the prototype model
    _m34(
        "proto-w-scale",
        PROTO,
        "w = n * rng.standard_normal(n)",
        "w = np.sqrt(n) * rng.standard_normal(n)",
        PROTO_T,
        "w ~ N(0, n) instead of N(0, n^2)",
    ),
    _m34(
        "proto-a-scale",
        PROTO,
        "a = rng.standard_normal(n) / np.sqrt(n)",
        "a = rng.standard_normal(n) / n",
        PROTO_T,
        "a ~ N(0, 1/n^2) instead of N(0, 1/n)",
    ),
    _m34(
        "proto-inside-sign",
        PROTO,
        "b = -w * rng.uniform(0.0, 1.0, size=n)",
        "b = w * rng.uniform(0.0, 1.0, size=n)",
        PROTO_T,
        "inside prototypes in [-1, 0]",
    ),
    _m34(
        "proto-broad-scale",
        PROTO,
        "b = n * rng.standard_normal(n)",
        "b = rng.standard_normal(n)",
        PROTO_T,
        "broad biases without the width scale",
    ),
    _m34(
        "proto-one-step-short",
        PROTO,
        "if step == last:",
        "if step == last - 1:",
        PROTO_T,
        "training stops one Adam step short",
    ),
    # the shared-representation pulses
    _m34(
        "srep-pulse-own-target",
        SREP,
        "o = (v.fav + 1) % K",
        "o = v.fav % K",
        SREP_T,
        "the pulse favours the route's own target",
    ),
    _m34(
        "srep-spec-previous",
        SREP,
        "o = (f + 1) % K",
        "o = (f - 1) % K",
        SREP_T,
        "specialization measured against the previous target",
    ),
    _m34(
        "srep-favour-share",
        SREP,
        "other = (1.0 - top) / (K - 1)",
        "other = (1.0 - top) / K",
        SREP_T,
        "the rest of the weight shared over K instead of K - 1",
    ),
    _m34(
        "srep-combined-weights",
        SREP,
        'if kind != "acquisition" else equal(K)',
        'if kind == "update" else equal(K)',
        SREP_T,
        "combined pulse with equal loss weights",
    ),
    _m34(
        "srep-combined-gains",
        SREP,
        '        if kind != "update":\n',
        '        if kind == "acquisition":\n',
        SREP_T,
        "combined pulse with equal gains",
    ),
    _m34(
        "srep-lost-sign",
        SREP,
        '"lost": s0 - s1',
        '"lost": s1 - s0',
        SREP_T,
        "specialization lost with the wrong sign",
    ),
    _m34(
        "srep-switched-inverted",
        SREP,
        '"switched": top0 & ~top1',
        '"switched": top0 & top1',
        SREP_T,
        "switch verdict inverted",
    ),
    _m34(
        "srep-switched-unconditional",
        SREP,
        '"switched": top0 & ~top1',
        '"switched": ~top1',
        (
            *SREP_T,
            T + "test_shared_representation.py::test_a_checkpoint_already_reversed_"
            "before_the_pulse_is_not_counted_as_switched",
        ),
        "a checkpoint counted as switched without its target on top before",
    ),
)
GROUPS = sorted({m.group for m in MUTATIONS})


def copy_repository(into: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=IGNORED)
        elif source.exists():
            shutil.copy2(source, into / name)


def run_tests(
    where: Path, tests: list[str], limit: float, per_test: float, extra: tuple[str, ...] = ()
) -> tuple[str, float, str]:
    """``("passed" | "failed" | "timeout", seconds, output)`` of the tests run in ``where``."""
    env = dict(os.environ, PYTHONPATH=str(where / "src"), PYTHONDONTWRITEBYTECODE="1")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        f"--timeout={per_test:g}",
        *extra,
        *tests,
    ]
    start = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=where, env=env, capture_output=True, text=True, timeout=limit
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, ""
    seconds = time.monotonic() - start
    if done.returncode == 0:
        return "passed", seconds, done.stdout
    if "Timeout" in done.stdout and "failed" in done.stdout:
        return "timeout", seconds, done.stdout
    return "failed", seconds, done.stdout


def plant(where: Path, mutation: Mutation) -> str | None:
    """The file's original text after planting the bug in the copy, or ``None`` (not found)."""
    path = where / mutation.file
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if mutation.line:
        planted = mutants.plant(text, _generated(mutation))
        if planted is None:
            return None
        path.write_text(planted, encoding="utf-8")
        return text
    if text.count(mutation.old) != 1:
        return None
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
    return text


def _generated(m: Mutation) -> mutants.Generated:
    kind = m.what.split(":", 1)[0]
    return mutants.Generated(m.id, m.group, m.file, m.line, m.col, m.old, m.new, kind)


def generated(areas: list[str], per_area: int, seed: int) -> list[Mutation]:
    """The mutations drawn by :func:`mutants.sample` from each area, as :class:`Mutation`s
    whose tests are the area's."""
    out = []
    for area in areas:
        tests = mutants.AREAS[area][1]
        for g in mutants.sample(area, per_area, seed):
            what = f"{g.kind}: {g.old} -> {g.new}"
            out.append(Mutation(g.id, g.file, g.old, g.new, tests, what, area, g.line, g.col))
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Plant one bug at a time in a copy of the repository "
        "and see whether the tests notice."
    )
    p.add_argument("--only", default="", help="comma-separated mutation ids (default: all)")
    p.add_argument(
        "--group", default="", help=f"only this group ({', '.join(GROUPS)}; default: all)"
    )
    p.add_argument(
        "--tests",
        default="",
        help="comma-separated test selections run for every chosen mutation instead "
        "of its own (to measure another suite against the same bugs)",
    )
    p.add_argument(
        "--generated",
        action="store_true",
        help="the mutations generated by kind (tools/mutants.py) instead of the planted list",
    )
    p.add_argument(
        "--area",
        default="",
        help=f"with --generated: comma-separated areas ({', '.join(mutants.AREAS)}; default all)",
    )
    p.add_argument(
        "--per-area",
        type=int,
        default=60,
        help="with --generated: mutants drawn from each area's candidates (default 60)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="with --generated: the draw's seed (default 0)"
    )
    p.add_argument(
        "--select",
        choices=("files", "coverage"),
        default="files",
        help="the tests run against a mutant: its selection's whole files (default), or only "
        "the tests that execute its line (tools/covmap.py's map; results go to --record)",
    )
    p.add_argument(
        "--record",
        default="",
        help=f"write each result to this JSON record, resuming it (default with --select "
        f"coverage: {RECORD.relative_to(ROOT)})",
    )
    p.add_argument("--workers", type=int, default=1, help="mutants run side by side (default 1)")
    p.add_argument(
        "--budget",
        type=float,
        default=1e9,
        help="seconds after which no further mutant is started (a rerun resumes the record)",
    )
    p.add_argument("--list", action="store_true", help="list the mutations and exit")
    p.add_argument(
        "--check",
        action="store_true",
        help="only check that every chosen mutation's text occurs once in its file "
        "(exit 1 naming those that do not)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds allowed for one mutation's tests (default 300, at most 3600)",
    )
    p.add_argument(
        "--per-test",
        type=float,
        default=120.0,
        help="pytest-timeout limit per test in seconds (default 120, at most 3600)",
    )
    p.add_argument(
        "--no-baseline",
        action="store_true",
        help="do not first check that the selected tests pass without a bug",
    )
    args = p.parse_args(argv)
    if args.group and args.group not in GROUPS:
        p.error(f"--group {args.group}: unknown group; allowed: {', '.join(GROUPS)}")
    for name in ("timeout", "per_test"):
        value = getattr(args, name)
        if not 0 < value <= 3600:
            p.error(f"--{name.replace('_', '-')} {value:g} is not allowed; allowed: (0, 3600]")
    areas = [a for a in args.area.split(",") if a] or list(mutants.AREAS)
    bad = [a for a in areas if a not in mutants.AREAS]
    if bad:
        p.error(f"--area {','.join(bad)}: unknown area; allowed: {', '.join(mutants.AREAS)}")
    if not 1 <= args.workers <= 16:
        p.error(f"--workers {args.workers} is not allowed; allowed: 1 to 16")
    if args.budget <= 0:
        p.error(f"--budget {args.budget:g} is not allowed; allowed: positive seconds")
    if args.select == "coverage" and not args.record:
        args.record = str(RECORD)
    if args.per_area < 1:
        p.error(f"--per-area {args.per_area} is not allowed; allowed: a positive count")
    pool = generated(areas, args.per_area, args.seed) if args.generated else MUTATIONS
    known = {m.id for m in pool}
    chosen = [s for s in args.only.split(",") if s]
    unknown = [s for s in chosen if s not in known]
    if unknown:
        p.error(
            f"--only {','.join(unknown)}: unknown mutation; allowed: {', '.join(sorted(known))}"
        )
    args.mutations = [
        m
        for m in pool
        if (not chosen or m.id in chosen) and (not args.group or m.group == args.group)
    ]
    override = tuple(t for t in args.tests.split(",") if t)
    missing = [t for t in override if not (ROOT / t.split("::")[0]).exists()]
    if missing:
        p.error(f"--tests {','.join(missing)}: no such test file; allowed: paths under tests/")
    if override:
        args.mutations = [replace(m, tests=override) for m in args.mutations]
    return args


def report(rows: list[tuple[Mutation, str, float]]) -> int:
    killed = sum(r.startswith("killed") for _, r, _ in rows)
    survived = [m.id for m, r, _ in rows if r == "survived"]
    skipped = [m.id for m, r, _ in rows if r.startswith("skipped")]
    timeouts = [m.id for m, r, _ in rows if r.endswith("(timeout)")]
    ran = killed + len(survived)
    score = f"{killed}/{ran} = {killed / ran:.0%}" if ran else "n/a"
    print(
        f"\nscore: {score} killed; survived: {', '.join(survived) or 'none'}; "
        f"skipped: {', '.join(skipped) or 'none'}; timed out: {', '.join(timeouts) or 'none'}"
    )
    return 1 if survived else 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    args.command_line = "python tools/mutate.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    if args.list:
        for m in args.mutations:
            print(f"{m.id:30s} {m.group:8s} {m.file}: {m.what}")
        return 0
    if args.check:
        stale = [
            m
            for m in args.mutations
            if not (ROOT / m.file).is_file()
            or (
                mutants.plant((ROOT / m.file).read_text(encoding="utf-8"), _generated(m)) is None
                if m.line
                else (ROOT / m.file).read_text(encoding="utf-8").count(m.old) != 1
            )
        ]
        for m in stale:
            print(f"{m.id}: its text does not occur exactly once in {m.file}")
        print(f"{len(args.mutations) - len(stale)} of {len(args.mutations)} mutations match")
        return 1 if stale else 0
    if args.record:
        return run_selected(args)
    with tempfile.TemporaryDirectory(prefix="gaugedyn-mutate-") as tmp:
        where = Path(tmp)
        copy_repository(where)
        if not args.no_baseline:
            tests = sorted({t for m in args.mutations for t in m.tests})
            outcome, seconds, output = run_tests(
                where, tests, 4 * args.timeout, args.per_test, ("--durations=5",)
            )
            slowest = (
                output[output.find("slowest") :].splitlines()[1:6] if "slowest" in output else []
            )
            print(
                f"baseline ({len(tests)} selections): {outcome} in {seconds:.0f} s; slowest:",
                *slowest,
                sep="\n  ",
                flush=True,
            )
            if outcome != "passed":
                print(*output.splitlines()[-30:], sep="\n", file=sys.stderr)
                print("the unmutated tests do not pass; fix that first", file=sys.stderr)
                return 2
        rows = []
        for m in args.mutations:
            original = plant(where, m)
            if original is None:
                result, seconds = "skipped (text not found once)", 0.0
            else:
                try:
                    outcome, seconds, _ = run_tests(
                        where, list(m.tests), args.timeout, args.per_test
                    )
                finally:
                    (where / m.file).write_text(original, encoding="utf-8")
                result = {"passed": "survived", "failed": "killed", "timeout": "killed (timeout)"}[
                    outcome
                ]
            rows.append((m, result, seconds))
            print(f"{m.id:30s} {result:30s} {seconds:6.0f} s  {m.what}", flush=True)
    return report(rows)


# --- coverage-selected runs of the generated set (--select coverage) ------------------------------
RECORD = ROOT / "tools" / "mutation-data" / "generated.json"
PREIMPORTED = (
    "numpy",
    "scipy.special",
    "scipy.optimize",
    "scipy.stats",
    "scipy.integrate",
    "sympy",
    "torch",
    "hypothesis",
    "pytest",
)  # not pytest's plugins (xdist, pytest_timeout): pytest refuses plugins imported before it


def selected_tests(m: Mutation, cmap: dict) -> tuple[list[str], str]:
    """The tests that execute the mutant's line (fastest first, tests failing on the unmutated
    code left out) and how they were chosen: ``coverage``; ``compiled`` (a line inside a
    numba-compiled function, which coverage cannot see, or a line of such a file run only at
    import, a constant the kernels read: the tests that run the modules calling the kernels,
    ``mutants.COMPILED_CALLERS``, and those of the test files importing the kernels' module or
    a caller, `mutants.importing_test_files()`, whole where the map does not hold them);
    ``import`` (the line runs only at import, so
    every test of the area's files may depend on it: those files); ``not covered``."""
    tests = cmap["tests"]
    rel = m.file.removeprefix(mutants.SRC)
    imported_only = (
        str(m.line) in cmap["lines"].get(m.file, {}) and not cmap["lines"][m.file][str(m.line)]
    )
    if rel in mutants.COMPILED_CALLERS and (
        mutants.in_compiled_function(rel, m.line)
        or imported_only
        or mutants.at_module_level(rel, m.line)
    ):  # a kernel's line, or a module constant its kernels read (run at import: no test, or
        # the test that first imported the module, which says nothing of who reads it)
        # and the tests of the files that import the kernels' module, which may call a kernel
        # directly (coverage credits such a call to no line of a caller), or a caller (a file
        # outside the map's scope); a file the map does not hold runs whole, after the mapped
        # tests
        callers = [mutants.SRC + c for c in mutants.COMPILED_CALLERS[rel]]
        ids = {t for c in callers for ts in cmap["lines"].get(c, {}).values() for t in ts}
        modules = (rel, *mutants.COMPILED_CALLERS[rel])
        importers = tuple(
            dict.fromkeys(f for r in modules for f in mutants.importing_test_files(r))
        )
        ids |= {t for t in tests if t.split("::")[0] in importers}
        ids = {t for t in ids if tests.get(t, {}).get("outcome") != "failed"}
        mapped = {t.split("::")[0] for t in tests}
        whole = [f for f in importers if f not in mapped]
        ordered = sorted(ids, key=lambda t: (tests[t].get("seconds", 0.0), t))
        return ordered + whole, "compiled"
    ids = [t for t in cmap["lines"].get(m.file, {}).get(str(m.line), [])]
    ids = [t for t in ids if tests.get(t, {}).get("outcome") != "failed"]
    if ids:
        return sorted(ids, key=lambda t: (tests.get(t, {}).get("seconds", 0.0), t)), "coverage"
    if str(m.line) in cmap["lines"].get(m.file, {}):
        area_files = mutants.AREAS[m.group][1]
        ids = [
            t
            for t in tests
            if t.split("::")[0] in area_files and tests[t].get("outcome") != "failed"
        ]
        return sorted(ids, key=lambda t: (tests[t].get("seconds", 0.0), t)), "import"
    return [], "not covered"


UNMAPPED_FILE_SECONDS = 30.0
"""The time allowed for a whole test file the line -> tests map does not hold (a file that
imports a compiled module, selected by `selected_tests()`), in the mutant's time limit."""


def _seconds(t: str, cmap: dict) -> float:
    """The recorded seconds of the selected test ``t``; a whole file not in the map counts
    `UNMAPPED_FILE_SECONDS`."""
    if t in cmap["tests"]:
        return float(cmap["tests"][t].get("seconds", 0.0))
    return 0.0 if "::" in t else UNMAPPED_FILE_SECONDS


def _entry(
    m: Mutation,
    outcome: str,
    killed_by: str,
    how: str,
    selected: int,
    run: int,
    seconds: float,
    limit: float,
    head: str,
) -> dict:
    """One mutant's line of the record: where and what it plants, what became of it, which
    tests were selected and run, its time and time limit, and the commit and date it ran at."""
    return {
        "area": m.group,
        "file": m.file,
        "line": m.line,
        "col": m.col,
        "kind": m.what.split(":", 1)[0],
        "old": m.old,
        "new": m.new,
        "outcome": outcome,
        "killed_by": killed_by,
        "selection": how,
        "tests_selected": selected,
        "tests_run": run,
        "seconds": round(seconds, 1),
        "limit_s": round(limit, 1),
        "commit": head,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def _uptime() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _head() -> tuple[str, bool]:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", "src"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out, bool(dirty)


def _save(record: dict, path: Path, ids: list[str], run: dict | None = None) -> None:
    """Write the entries ``ids`` of ``record`` (and ``run``) into the record at ``path`` as it
    is on disk now, under a lock, so that two runs writing one record keep each other's
    results."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        disk = (
            json.loads(path.read_text(encoding="utf-8"))
            if path.exists()
            else {"mutants": {}, "runs": []}
        )
        disk["mutants"].update({i: record["mutants"][i] for i in ids})
        if run is not None:
            disk["runs"].append(run)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(disk, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)


def _child(
    where: Path, tests_file: Path | None, files: list[str], log: Path, per_test: float
) -> None:
    """In the forked child: run pytest on the copy (only the tests named in ``tests_file``,
    when given); never returns."""
    rc = 3
    try:
        os.setpgid(0, 0)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(where)
        sys.path[:0] = [str(where / "src"), str(ROOT / "tools")]
        sys.dont_write_bytecode = False
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPATH"] = str(where / "src")
        if tests_file is not None:
            os.environ["GAUGEDYN_MUTATION_TESTS"] = str(tests_file)
        import pytest

        rc = int(
            pytest.main(
                [
                    "-x",
                    "-q",
                    "-n",
                    "0",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "mutation_select",
                    # hypothesis was imported before pytest (by the parent), so pytest cannot
                    # rewrite the asserts of its plugin module: harmless, not an error here
                    "-W",
                    "ignore::pytest.PytestAssertRewriteWarning",
                    f"--timeout={per_test:g}",
                    *files,
                ]
            )
        )
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def _outcome(rc: int, log: str) -> tuple[str, str]:
    """``(outcome, the first failing test)`` from pytest's exit status and output."""
    failed = ""
    for line in log.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            failed = line.split(" ", 1)[1].split(" - ")[0].strip()
            break
    if rc == 0:
        return "survived", ""
    if rc == 1 and "Timeout" in log:
        return "killed (timeout)", failed
    if rc in (1, 2):  # a failing test, or a collection error (the mutant breaks an import)
        return "killed", failed
    return f"error (pytest exit {rc})", failed


def _tests_run(log: str) -> int:
    import re

    counts = re.findall(r"(\d+) (passed|failed|error|errors|xfailed|xpassed|skipped)", log)
    return sum(int(n) for n, what in counts if what in ("passed", "failed", "xfailed", "xpassed"))


def run_selected(args: argparse.Namespace) -> int:
    """Every chosen mutant against the tests that execute its line (``covmap.py``), with
    ``--workers`` forked children from a parent that has imported the heavy libraries once;
    each result written to the record as it comes."""
    import covmap

    cmap = covmap.current()
    if cmap is None and args.select == "coverage":
        print(
            "no line -> tests map matches the working tree's source files; build one first: "
            "python tools/covmap.py run --part I --of N (each part), then combine --of N",
            file=sys.stderr,
        )
        return 2
    record_path = Path(args.record)
    record = (
        json.loads(record_path.read_text(encoding="utf-8"))
        if record_path.exists()
        else {"mutants": {}, "runs": []}
    )
    head, dirty = _head()
    explicit = bool(args.tests)

    def pending(m: Mutation) -> bool:
        """Not yet recorded, or recorded on a line no test ran that the map now covers."""
        old = record["mutants"].get(m.id)
        if old is None:
            return True
        return bool(cmap) and old["selection"] == "not covered" and bool(selected_tests(m, cmap)[0])

    todo = [m for m in args.mutations if args.only or explicit or pending(m)]
    if cmap and args.select == "coverage":
        # cheapest first (the seconds of all its selected tests: what a survivor costs), so a
        # chunk that stops at --budget has run as many mutants as it could
        def cost(m: Mutation) -> float:
            return sum(_seconds(t, cmap) for t in selected_tests(m, cmap)[0])

        todo.sort(key=cost)
    print(f"{len(todo)} mutants to run ({len(args.mutations) - len(todo)} already recorded)")
    for name in PREIMPORTED:
        __import__(name)
    assert "gaugedyn" not in sys.modules, "the parent must not import the package under test"
    os.environ["CI"] = "1"  # hypothesis derandomized: the same examples every run
    run_entry = {
        "command": args.command_line,
        "commit": head,
        "dirty": dirty,
        "map": (
            {"commit": cmap["commit"], "scope": cmap["scope"], "tests": len(cmap["tests"])}
            if cmap
            else None
        ),
        "select": args.select,
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_start": _uptime(),
        "workers": args.workers,
    }
    cpu0 = os.times()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gaugedyn-mutate-") as tmp:
        copies = []
        for w in range(args.workers):
            where = Path(tmp) / f"w{w}"
            where.mkdir()
            copy_repository(where)
            copies.append(where)
        free = list(range(args.workers))
        running: dict[int, tuple] = {}  # pid -> (worker, mutation, original, start, limit, ...)
        queue = list(todo)
        done = 0

        def finish(pid: int, status: int, timed_out: bool) -> None:
            nonlocal done
            w, m, original, t0, limit, ids, how, log = running.pop(pid)
            seconds = time.monotonic() - t0
            path = copies[w] / m.file
            path.write_text(original, encoding="utf-8")
            _forget_bytecode(path)
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
            if timed_out:
                outcome, failed = "killed (timeout)", ""
            else:
                outcome, failed = _outcome(os.waitstatus_to_exitcode(status), text)
            entry = _entry(
                m, outcome, failed, how, len(ids), _tests_run(text), seconds, limit, head
            )
            if outcome.startswith("error"):
                entry["log_tail"] = text[-2000:]
            old = record["mutants"].get(m.id)
            if old is not None and old["selection"] != "not covered":
                entry["history"] = [*old.pop("history", []), old]
            record["mutants"][m.id] = entry
            _save(record, record_path, [m.id])
            free.append(w)
            done += 1
            print(
                f"[{done}/{len(todo)}] {m.id:45s} {outcome:18s} {seconds:6.1f} s "
                f"{len(ids):4d} tests ({how}) {failed}",
                flush=True,
            )

        while queue or running:
            while queue and free and time.monotonic() - start < args.budget:
                m = queue.pop(0)
                w = free.pop(0)
                where = copies[w]
                if args.select == "files":
                    ids, how = [], "given" if explicit else "files"
                    files = list(m.tests)
                else:
                    ids, how = selected_tests(m, cmap)
                    files = list(dict.fromkeys(t.split("::")[0] for t in ids))
                tests_file = Path(tmp) / f"tests{w}.txt"
                tests_file.write_text("\n".join(ids) + "\n", encoding="utf-8")
                seconds = sum(_seconds(t, cmap) for t in ids) if ids else 0
                limit = min(args.timeout, 60.0 + 4.0 * seconds) if ids else args.timeout
                original = plant(where, m)
                if original is None or (not files):
                    if original is not None:
                        (where / m.file).write_text(original, encoding="utf-8")
                    outcome = "skipped (text not found)" if original is None else "survived"
                    record["mutants"][m.id] = _entry(m, outcome, "", how, 0, 0, 0.0, 0.0, head)
                    _save(record, record_path, [m.id])
                    free.append(w)
                    done += 1
                    print(f"[{done}/{len(todo)}] {m.id:45s} {outcome} ({how})", flush=True)
                    continue
                _forget_bytecode(where / m.file)
                log = Path(tmp) / f"log{w}.txt"
                pid = os.fork()
                if pid == 0:
                    _child(where, tests_file if ids else None, files, log, args.per_test)
                running[pid] = (w, m, original, time.monotonic(), limit, ids, how, log)
            if not running:
                break
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid:
                finish(pid, status, False)
                continue
            now = time.monotonic()
            for pid, (_w, _m, _o, t0, limit, *_rest) in list(running.items()):
                if now - t0 > limit:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.waitpid(pid, 0)
                    finish(pid, 0, True)
            time.sleep(0.2)
    cpu1 = os.times()
    run_entry.update(
        ended=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        load_end=_uptime(),
        wall_s=round(time.monotonic() - start, 1),
        cpu_s=round(
            cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system, 1
        ),
        mutants=done,
    )
    _save(record, record_path, [], run_entry)
    left = [m.id for m in args.mutations if m.id not in record["mutants"]]
    print(f"{done} run in {run_entry['wall_s']:.0f} s; {len(left)} of the set not yet run")
    return 0


def _forget_bytecode(path: Path) -> None:
    """Remove the cached bytecode of ``path`` (a planted and a restored text can share size and
    modification second, and Python would then run the stale one); for a numba file, every
    numba cache of the copy (numba keys its cache by the file's time and size, and a kernel
    inlined into another file's kernel is not tracked at all)."""
    import importlib.util

    cached = Path(importlib.util.cache_from_source(str(path)))
    cached.unlink(missing_ok=True)
    if "numba" in path.read_text(encoding="utf-8"):
        src = next(p for p in path.parents if p.name == "src")
        for pattern in ("*.nbi", "*.nbc"):
            for f in src.rglob(pattern):
                f.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
