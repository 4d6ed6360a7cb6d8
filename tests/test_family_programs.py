"""The second network family's task programs declared after the digits_mse diagnostics (issue
42, Build 4): the whitened digits (`_batched.whitened_digits`, `WhitenedDigitsMLP`) and the
factorisation on digits (`_batched.lowrank_digits`, `DigitsFactorisation`) and the tied linear
autoencoder on them (`DigitsTiedAutoencoder`), built through
`_batched.task_model` by the batched runner (`_scan._run_cells`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn._errors import InputError
from gaugedyn.experiments.adam_stability import _batched
from gaugedyn.training import load_digits


def test_whitened_digits_have_a_gram_matrix_n_times_a_projector():
    X = _batched.whitened_digits(40).numpy()
    assert X.shape == (40, 64)
    np.testing.assert_allclose(X.mean(0), 0.0, atol=1e-12)  # centred over the images
    eig = np.linalg.eigvalsh(X @ X.T)
    kept = eig > 1.0
    np.testing.assert_allclose(eig[kept], 40.0, rtol=1e-10)
    np.testing.assert_allclose(eig[~kept], 0.0, atol=1e-8)
    # the images' span: the rank of the centred images, and the same directions
    raw = load_digits()[0][:40]
    raw = raw - raw.mean(0)
    assert kept.sum() == np.linalg.matrix_rank(raw)
    proj = X.T @ np.linalg.pinv(X.T)
    np.testing.assert_allclose(proj @ raw.T, raw.T, atol=1e-10)
    with pytest.raises(InputError, match="n_samples=1 is not allowed"):
        _batched.whitened_digits(1)


def test_whitened_model_is_digits_mse_on_whitened_images():
    m = _batched.task_model("digits_white_mse", 2, [3, 4], 24, hidden=8)
    ref = _batched.BatchedMLP("digits_mse", 2, [3, 4], 24, hidden=8)
    assert isinstance(m, _batched.WhitenedDigitsMLP)
    torch.testing.assert_close(m.X, _batched.whitened_digits(24))
    torch.testing.assert_close(m.y, ref.y)
    for p, q in zip(m.params, ref.params):
        torch.testing.assert_close(p, q)  # the same initialisation
    ps = [p.detach().clone().requires_grad_(True) for p in m.params]
    want = torch.autograd.grad(m.losses(ps).sum(), ps)
    _, got = m.losses_and_grads(m.params)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-15)
    with pytest.raises(InputError, match="task='digits_mse' is not allowed"):
        _batched.WhitenedDigitsMLP("digits_mse", 1, [0], 8)


@pytest.mark.parametrize("k", [1, 4])
def test_lowrank_digits_is_the_best_rank_k_fit(k):
    Y = _batched.lowrank_digits(30, k).numpy()
    raw = load_digits()[0][:30]
    raw = raw - raw.mean(0)
    s = np.linalg.svd(raw, compute_uv=False)
    assert np.linalg.matrix_rank(Y) == k
    # Eckart-Young: the residual's squared norm is the discarded singular values' squares
    np.testing.assert_allclose(((raw - Y) ** 2).sum(), (s[k:] ** 2).sum(), rtol=1e-10)
    with pytest.raises(InputError, match="rank=0 is not allowed"):
        _batched.lowrank_digits(30, 0)
    with pytest.raises(InputError, match="rank=30 is not allowed"):
        _batched.lowrank_digits(30, 30)


def test_factorisation_hand_gradient_equals_autograd():
    m = _batched.task_model("digits_lowrank", 3, [1, 2, 3], 20, hidden=3)
    assert isinstance(m, _batched.DigitsFactorisation)
    assert [tuple(p.shape) for p in m.params] == [(3, 20, 3), (3, 3, 64)]
    ps = [p.detach().clone().requires_grad_(True) for p in m.params]
    L = m.losses(ps)
    want = torch.autograd.grad(L.sum(), ps)
    got_L, got = m.losses_and_grads(m.params)
    torch.testing.assert_close(got_L, L.detach(), rtol=1e-13, atol=0)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-15)
    # the loss by its definition: half the squared error summed over pixels, mean over images
    A, C = (p.detach()[1].numpy() for p in m.params)
    r = A @ C - _batched.lowrank_digits(20, 3).numpy()
    np.testing.assert_allclose(L[1].item(), 0.5 * (r**2).sum() / 20, rtol=1e-12)
    # the exact factors fit with loss 0
    U, s, Vt = np.linalg.svd(_batched.lowrank_digits(20, 3).numpy(), full_matrices=False)
    exact = [torch.as_tensor(U[None, :, :3] * s[:3]), torch.as_tensor(Vt[None, :3])]
    assert m.losses(exact).item() < 1e-28
    with pytest.raises(InputError, match="task='digits_mse' is not allowed"):
        _batched.DigitsFactorisation("digits_mse", 1, [0], 8, hidden=2)
    with pytest.raises(InputError, match="hidden=None is not allowed"):
        _batched.DigitsFactorisation("digits_lowrank", 1, [0], 8)


def test_tied_autoencoder_hand_gradient_equals_autograd_and_its_minimum_is_exact():
    m = _batched.task_model("digits_tied_ae", 3, [1, 2, 3], 20, hidden=2)
    assert isinstance(m, _batched.DigitsTiedAutoencoder)
    assert [tuple(p.shape) for p in m.params] == [(3, 64, 2)]
    ps = [p.detach().clone().requires_grad_(True) for p in m.params]
    L = m.losses(ps)
    (want,) = torch.autograd.grad(L.sum(), ps)
    got_L, (got,) = m.losses_and_grads(m.params)
    torch.testing.assert_close(got_L, L.detach(), rtol=1e-13, atol=0)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)
    # away from the initialisation too (a gradient that is right only near W = 0 would pass
    # there): a random W of norm about 1
    far = [torch.randn(3, 64, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
           .div(8).requires_grad_(True)]  # fmt: skip
    (want,) = torch.autograd.grad(m.losses(far).sum(), far)
    _, (got,) = m.losses_and_grads(far)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)
    # the loss by its definition: half the squared error summed over pixels, mean over images
    X = _batched.lowrank_digits(20, 2).numpy()
    W = m.params[0].detach()[1].numpy()
    r = X @ W @ W.T - X
    np.testing.assert_allclose(L[1].item(), 0.5 * (r**2).sum() / 20, rtol=1e-12)
    # the top two principal directions, in any orthonormal basis (the compact gauge W Q), fit
    # with loss 0; the factorisation's unbalanced scaling is no minimum here
    Vt = np.linalg.svd(X, full_matrices=False)[2]
    Q = np.array([[0.6, -0.8], [0.8, 0.6]])
    exact = torch.as_tensor(np.stack([Vt[:2].T, Vt[:2].T @ Q, 2 * Vt[:2].T]))
    Ls = m.losses([exact]).numpy()
    assert Ls[0] < 1e-28 and Ls[1] < 1e-28 and Ls[2] > 1e-3
    with pytest.raises(InputError, match="task='digits_mse' is not allowed"):
        _batched.DigitsTiedAutoencoder("digits_mse", 1, [0], 8, hidden=2)
    with pytest.raises(InputError, match="hidden=None is not allowed"):
        _batched.DigitsTiedAutoencoder("digits_tied_ae", 1, [0], 8)


def test_the_quartic_autoencoder_is_the_fourth_power_with_its_exact_gradient():
    m = _batched.task_model("digits_tied_ae4", 2, [4, 5], 20, hidden=2)
    g = torch.Generator().manual_seed(1)
    far = [(torch.randn(2, 64, 2, generator=g, dtype=torch.float64) / 8).requires_grad_(True)]
    (want,) = torch.autograd.grad(m.losses(far).sum(), far)
    L, (got,) = m.losses_and_grads(far)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-18)
    X = _batched.lowrank_digits(20, 2).numpy()
    W = far[0].detach()[0].numpy()
    r = X @ W @ W.T - X
    np.testing.assert_allclose(L[0].item(), (r**4).sum() / 4 / 20, rtol=1e-12)


@pytest.mark.parametrize(
    "task,hidden",
    [
        ("digits_lowrank", 2),
        ("digits_white_mse", 8),
        ("digits_tied_ae", 2),
        ("gauss_memo", 8),
        ("digits_pc_memo", 8),
    ],
)
def test_a_copys_run_does_not_depend_on_the_copies_beside_it(task, hidden):
    seeds = [5, 6, 7]
    betas = (np.array([0.8, 0.9, 0.95]), np.array([0.99, 0.9, 0.999]))
    n = 24 if task == "digits_pc_memo" else 16  # more images than its 20 components
    together = _batched.task_model(task, 3, seeds, n, hidden=hidden)
    blocks, _ = _batched.adam_steps(together, 1e-2, *betas, 40, 1)
    for i in range(3):
        alone = _batched.task_model(task, 1, seeds[i : i + 1], n, hidden=hidden)
        own, _ = _batched.adam_steps(alone, 1e-2, betas[0][i], betas[1][i], 40, 1)
        np.testing.assert_allclose(own[0].median, blocks[i].median, rtol=0, atol=1e-9)
        for p, q in zip(alone.params, together.params):
            torch.testing.assert_close(p[0], q[i], rtol=1e-10, atol=1e-12)


def test_the_batched_runner_builds_the_family_programs():
    from gaugedyn.adam import SPIKE_SAMPLING
    from gaugedyn.experiments.adam_stability._scan import _run_task

    task = {
        "kind": "task",
        "task": "digits_lowrank",
        "start": "init",
        "a": [0.5],
        "c": [10**-0.5],
        "seeds": 2,
        "lr": 1e-2,
        "n_samples": 16,
        "hidden": 2,
        "spikes": list(SPIKE_SAMPLING[:3]),
    }
    r = _run_task(task, np.random.SeedSequence(1))
    lv = np.asarray(r["settled_median_log10_loss"], float)
    assert lv.shape[:2] == (1, 1) and np.isfinite(lv).all()
    # a factorisation that fits: its settled loss far below its first (about 10^0)
    assert (lv < -3).all()


def test_diagnose_keeps_stored_cells_and_runs_only_new_ones():
    from gaugedyn.experiments.adam_stability import _family_pilot as fp

    cells = (
        {"task": "digits_lowrank", "hidden": 1, "lr": 1e-2, "a": 0.2, "c": 0.1},
        {"task": "digits_lowrank", "hidden": 2, "lr": 1e-2, "a": 0.2, "c": 0.1},
    )
    stored = dict(cells[0]) | {"steps": 1000, "median": "kept"}
    out = fp.diagnose(cells, steps=1000, done=[stored, dict(cells[1]) | {"steps": 5}])
    assert out[0] is stored
    assert out[1]["steps"] == 1000 and len(out[1]["median"]) == fp.DIAGNOSTIC_SEEDS
    assert all(len(m) == 1 for m in out[1]["median"])  # one block of DIAGNOSTIC_BLOCK steps
    lines = fp.diagnostics_markdown(out[1:])
    assert lines[-1].startswith("| `digits_lowrank` rank 2 | 0.01 | 0.2 | 0.1 |")


def test_the_stored_readings_are_drawn_on_the_page():
    from gaugedyn.experiments.adam_stability import _family_pilot as fp

    p = fp.stored()
    lines = fp.pilot_markdown(p)
    reading = fp.detector_markdown(p["detector_reading"])
    assert len(reading) == 4 + len(fp.DETECTOR_CELLS)
    assert "\n".join(reading) in "\n".join(lines)
    assert len(fp.diagnostics_markdown(p["diagnostics"])) == 4 + len(fp.DIAGNOSTIC_CELLS)
    z = p["detector_reading"][0]
    assert [z[k] for k in ("task", "hidden", "a", "c")] == list(fp.DETECTOR_CELLS[0].values())


def test_a_detector_cell_runs_the_seeds_it_names():
    """A cell of `DETECTOR_CELLS` that names ``seeds`` runs that many copies (one status, rise
    and level each, the steps of one copy's settled run), one that does not runs
    `DIAGNOSTIC_SEEDS`, and the table says which."""
    from gaugedyn.experiments.adam_stability import _family_pilot as fp
    from gaugedyn.experiments.adam_stability._protocol import run_steps

    cell = {"task": "digits_mse", "hidden": 4, "a": 0.5, "c": 10**-0.5, "n_samples": 16}
    (named,) = fp.detector_reading(cells=(cell | {"seeds": 2},))
    assert [len(named[k]) for k in ("status", "max_rise", "settled_median_log10_loss")] == [2] * 3
    assert named["steps"] == int(run_steps(0.5, 10**-0.5))
    assert "width 4 on 16 images, 2 seeds |" in fp.detector_markdown([named])[-1]
    stored = [z for z in fp.stored()["detector_reading"] if "seeds" not in z]
    assert stored and all(len(z["status"]) == fp.DIAGNOSTIC_SEEDS for z in stored)
    assert "seeds |" not in fp.detector_markdown(stored[:1])[-1]


def test_memorisation_task_is_the_students_squared_error_on_random_targets():
    """``gauss_memo``: the teacher tasks' student and initialisation on i.i.d. Gaussian inputs
    with i.i.d. Gaussian targets (no teacher) from the data seed; its hand-written gradient is
    autograd's, at the initialisation and far from it; an exact zero-loss fit exists."""
    m = _batched.task_model("gauss_memo", 3, [1, 2, 3], 12, data_seed=7, hidden=8)
    assert isinstance(m, _batched.GaussianMemorisationMLP)
    assert [tuple(p.shape) for p in m.params] == [(3, 20, 8), (3, 1, 8), (3, 8, 1), (3, 1, 1)]
    X, y = _batched.memorisation_data(12, 7)
    torch.testing.assert_close(m.X, X)
    torch.testing.assert_close(m.y, y)
    assert X.shape == (12, 20) and y.shape == (12, 1)
    other = _batched.memorisation_data(12, 8)
    assert not torch.equal(other[0], X) and not torch.equal(other[1], y)
    # the targets are not the teacher's outputs on these inputs
    teacher = _batched.BatchedMLP("teacher_mse", 3, [1, 2, 3], 12, data_seed=7, hidden=8)
    assert not torch.allclose(teacher.y, y)
    for p, q in zip(m.params, teacher.params):
        torch.testing.assert_close(p, q)  # the student's own initialisation
    g = torch.Generator().manual_seed(0)
    far = [(torch.randn(p.shape, generator=g, dtype=torch.float64)) for p in m.params]
    for ps in (m.params, far):
        mine = [p.detach().clone().requires_grad_(True) for p in ps]
        L = m.losses(mine)
        want = torch.autograd.grad(L.sum(), mine)
        got_L, got = m.losses_and_grads(ps)
        torch.testing.assert_close(got_L, L.detach(), rtol=1e-13, atol=0)
        for a, b in zip(got, want):
            assert a.shape == b.shape
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    # the loss by its definition: half the mean squared error over the inputs
    W1, b1, W2, b2 = (p.detach()[1].numpy() for p in m.params)
    r = np.maximum(X.numpy() @ W1 + b1, 0) @ W2 + b2 - y.numpy()
    np.testing.assert_allclose(m.losses()[1].item(), 0.5 * (r**2).mean(), rtol=1e-12)
    # interpolation: with the first layer fixed, the last layer solves the 8 hidden units plus
    # the bias for 9 inputs exactly (a zero-loss minimum)
    small = _batched.task_model("gauss_memo", 1, [4], 9, data_seed=3, hidden=8)
    W1, b1 = (p.detach()[0] for p in small.params[:2])
    H = torch.cat([torch.relu(small.X @ W1 + b1), torch.ones(9, 1, dtype=torch.float64)], 1)
    sol = torch.linalg.solve(H, small.y)
    fit = [W1[None], b1[None], sol[None, :8], sol[None, 8:]]
    assert small.losses(fit).item() < 1e-26
    with pytest.raises(InputError, match="task='teacher_mse' is not allowed"):
        _batched.GaussianMemorisationMLP("teacher_mse", 1, [0], 8, hidden=8)
    with pytest.raises(InputError, match="hidden=None is not allowed"):
        _batched.GaussianMemorisationMLP("gauss_memo", 1, [0], 8)
    with pytest.raises(InputError, match="n_samples=0 is not allowed"):
        _batched.memorisation_data(0, 1)


def test_the_digits_memorisation_task_is_gauss_memo_on_whitened_principal_components():
    """``digits_pc_memo``: `gauss_memo`'s student, initialisation and targets, its inputs the
    digits' top 20 principal components whitened (Gram matrix n times the identity, the
    centred images' top directions); its hand-written gradient is autograd's."""
    X = _batched.digit_components(40).numpy()
    assert X.shape == (40, 20)
    np.testing.assert_allclose(X.T @ X, 40 * np.eye(20), atol=1e-9)
    raw = load_digits()[0][:40]
    raw = raw - raw.mean(0)
    U = np.linalg.svd(raw, full_matrices=False)[0][:, :20]
    np.testing.assert_allclose(X @ X.T / 40, U @ U.T, atol=1e-10)  # the same subspace
    m = _batched.task_model("digits_pc_memo", 2, [1, 2], 40, data_seed=5, hidden=8)
    ref = _batched.task_model("gauss_memo", 2, [1, 2], 40, data_seed=5, hidden=8)
    assert isinstance(m, _batched.DigitsMemorisationMLP)
    torch.testing.assert_close(m.X, torch.as_tensor(X))
    torch.testing.assert_close(m.y, ref.y)  # the same random targets
    for p, q in zip(m.params, ref.params):
        torch.testing.assert_close(p, q)
    g = torch.Generator().manual_seed(2)
    far = [torch.randn(p.shape, generator=g, dtype=torch.float64) for p in m.params]
    mine = [p.clone().requires_grad_(True) for p in far]
    want = torch.autograd.grad(m.losses(mine).sum(), mine)
    _, got = m.losses_and_grads(far)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    with pytest.raises(InputError, match="n_samples=20 is not allowed"):
        _batched.digit_components(20)
    with pytest.raises(InputError, match="task='gauss_memo' is not allowed"):
        _batched.DigitsMemorisationMLP("gauss_memo", 1, [0], 40, hidden=8)
    with pytest.raises(InputError, match="hidden=None is not allowed"):
        _batched.DigitsMemorisationMLP("digits_pc_memo", 1, [0], 40)
