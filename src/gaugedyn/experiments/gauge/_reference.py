"""An independent weight-space population loss, for checking the package's Hessian.

Written from the closed forms the theory notes state (the arc-cosine kernel of ReLU, Cho and
Saul 2009; the arcsine kernel of erf; Tian's 2017 ReLU gradient), not from the package's
generated kernels: torch float64 autograd of the loss gives the reference gradient and Hessian
where no two weight vectors are aligned; at aligned ReLU pairs, where autograd of the angle is
``0/0``, central differences of Tian's gradient (finite there) give the Hessian.
"""

from __future__ import annotations

import numpy as np


def _pair_torch(act: str, x, y):
    """``E[g(x . z) g(y . z)]``, ``z ~ N(0, I)``, for rows ``x (K, d)``, ``y (M, d)``."""
    import torch

    qx, qy = (x * x).sum(-1)[:, None], (y * y).sum(-1)[None, :]
    c = x @ y.T
    if act == "erf":
        return 2 / torch.pi * torch.asin(c / torch.sqrt((1 + qx) * (1 + qy)))
    s = torch.sqrt(torch.clamp(qx * qy - c * c, min=0.0))
    theta = torch.atan2(s, c)
    return (s + (torch.pi - theta) * c) / (2 * torch.pi)


def loss_torch(act: str, theta, K: int, d: int, b, V):
    """``L(a, W) = 1/2 E[(f - f*)^2]`` for ``theta = (a, W.ravel())`` (torch)."""
    a, W = theta[:K], theta[K:].reshape(K, d)
    if act == "relu":  # S(q) = q / 2 on the diagonal: the pair form's gradient is 0/0 there
        ss = (a * a * (W * W).sum(-1) / 2).sum()
        for i in range(K):
            for j in range(K):
                if i != j:
                    ss = ss + a[i] * a[j] * _pair_torch(act, W[i : i + 1], W[j : j + 1])[0, 0]
    else:
        ss = a @ _pair_torch(act, W, W) @ a
    st = a @ _pair_torch(act, W, V) @ b
    tt = b @ _pair_torch(act, V, V) @ b
    return 0.5 * ss - st + 0.5 * tt


def autograd_hessian(act: str, y, K: int, d: int, b, V) -> tuple[np.ndarray, np.ndarray]:
    """``(gradient, Hessian)`` of `loss_torch()` at ``y`` by torch autograd (float64)."""
    import torch

    bt, Vt = torch.tensor(np.asarray(b, float)), torch.tensor(np.asarray(V, float))
    theta = torch.tensor(np.asarray(y, float), requires_grad=True)

    def f(x):
        return loss_torch(act, x, K, d, bt, Vt)

    (grad,) = torch.autograd.grad(f(theta), theta)
    H = torch.autograd.functional.hessian(f, theta.detach())
    return grad.numpy(), H.numpy()


def tian_gradient(y, K: int, d: int, b, V) -> np.ndarray:
    """The ReLU weight-space gradient from Tian's formula ``d/dw1 E[relu(w1.z) relu(w2.z)] =
    ((pi - theta) w2 + |w2| sin(theta) w1 / |w1|) / (2 pi)``, finite at aligned pairs."""
    a, W = y[:K], y[K:].reshape(K, d)

    def pair(x, z):
        nx, nz = np.linalg.norm(x), np.linalg.norm(z)
        s = np.linalg.norm(z - (z @ x) / (nx * nx) * x) * nx
        th = np.arctan2(s, x @ z)
        return (
            (s + (np.pi - th) * (x @ z)) / (2 * np.pi),
            ((np.pi - th) * z + nz * np.sin(th) * x / nx) / (2 * np.pi),
        )

    ga, gW = np.zeros(K), np.zeros((K, d))
    for i in range(K):
        ga[i] = a[i] * (W[i] @ W[i]) / 2
        gW[i] = a[i] ** 2 * W[i] / 2
        for j in range(K):
            if j != i:
                v, dx = pair(W[i], W[j])
                ga[i] += a[j] * v
                gW[i] += a[i] * a[j] * dx
        for n in range(len(b)):
            v, dx = pair(W[i], V[n])
            ga[i] -= b[n] * v
            gW[i] -= a[i] * b[n] * dx
    return np.concatenate([ga, gW.ravel()])


def reference_hessian(point, aligned: float = 1e-6) -> tuple[np.ndarray, str]:
    """The reference Hessian at a weight-space or span `CriticalPoint` and how it was
    obtained: autograd where every pair's relative sine exceeds ``aligned``, otherwise (ReLU)
    central differences (step ``1e-7``) of `tian_gradient()`."""
    p = point.params
    K, d = p.K, p.coords
    y = point.y
    W = y[K:].reshape(K, d)
    X = np.concatenate([W, p.V])
    n = np.linalg.norm(X, axis=1)
    G = X @ X.T / np.outer(n, n)
    sines = np.sqrt(np.clip(1 - G * G, 0, None))[np.triu_indices(len(X), 1)]
    if p.activation != "relu" or sines.min() > aligned:
        return autograd_hessian(p.activation, y, K, d, p.b, p.V)[1], "autograd"
    h = 1e-7
    cols = [
        (tian_gradient(y + h * e, K, d, p.b, p.V) - tian_gradient(y - h * e, K, d, p.b, p.V))
        / (2 * h)
        for e in np.eye(y.size)
    ]
    return np.stack(cols, axis=1), "central differences of Tian's gradient"
