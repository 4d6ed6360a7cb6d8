"""The batched full-batch Adam of adam_stability._batched against torch.optim.Adam, copy by copy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.experiments.adam_stability._batched import BatchedMLP, adam_steps


@pytest.mark.parametrize("task", ["digits_ce", "teacher_mse"])
def test_per_copy_betas_reproduce_torch_adam(task):
    betas = [(0.9, 0.999), (0.5, 0.9), (0.0, 0.99)]
    model = BatchedMLP(task, len(betas), [3, 4, 5], n_samples=32)
    start = [p.detach().clone() for p in model.params]
    ell = adam_steps(model, 1e-2, [b[0] for b in betas], [b[1] for b in betas], 6)
    for k, (b1, b2) in enumerate(betas):
        ps = [p[k].clone().requires_grad_(True) for p in start]
        opt = torch.optim.Adam(ps, lr=1e-2, betas=(b1, b2), eps=1e-8)
        want = []
        for _ in range(6):
            opt.zero_grad()
            L = model.losses([p[None] for p in ps])[0]
            want.append(float(torch.log10(L.detach())))
            L.backward()
            opt.step()
        np.testing.assert_allclose(ell[:, k], want, rtol=1e-12)
        for p, q in zip(model.params, ps):
            torch.testing.assert_close(p[k].detach(), q.detach(), rtol=1e-10, atol=1e-12)
