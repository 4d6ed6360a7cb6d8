"""Offline training tasks for the beta grid, each trained with ``torch.optim.Adam`` + recorder.

Data ship with installed packages or are generated, nothing is downloaded:

- vision: ``digits_mlp``, ``digits_cnn``, ``digits_resnet`` (a small residual CNN) on
  scikit-learn's ``load_digits`` (8x8 images, 10 classes);
- language: ``char_transformer``, ``char_gru`` (next-character prediction) and ``word_mlp``
  (next-word prediction from four words, 500-word vocabulary) on the English text of Python's
  ``pydoc_data.topics``;
- neither: ``teacher_student``, the Gaussian ReLU teacher-student model (fresh inputs every step).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

from ..._errors import InputError
from ..._meta import integer_seed
from ...adam import (
    NORM_NAMES,
    READING_SUMS,
    AdamRecorder,
    StreamingSplit,
    reading_sums,
    smoothness,
)
from ...training import load_digits
from ._protocol import TASKS as TASKS

DEFAULTS: dict[str, dict] = {
    "digits_mlp": {"lr": 1e-3, "steps": 400, "quick_steps": 60, "batch": 64},
    "digits_cnn": {"lr": 2e-3, "steps": 400, "quick_steps": 50, "batch": 64},
    "digits_resnet": {"lr": 2e-3, "steps": 400, "quick_steps": 50, "batch": 64},
    "char_transformer": {"lr": 2e-3, "steps": 400, "quick_steps": 40, "batch": 16},
    "char_gru": {"lr": 3e-3, "steps": 400, "quick_steps": 40, "batch": 16},
    "word_mlp": {"lr": 3e-3, "steps": 400, "quick_steps": 50, "batch": 64},
    "teacher_student": {"lr": 2e-3, "steps": 600, "quick_steps": 80, "batch": 128},
}


@functools.lru_cache(maxsize=1)
def _text() -> tuple[np.ndarray, int]:
    from pydoc_data.topics import topics

    text = "\n".join(topics[k] for k in sorted(topics))
    chars = sorted(set(text))
    lut = {c: i for i, c in enumerate(chars)}
    return np.fromiter((lut[c] for c in text), dtype=np.int64, count=len(text)), len(chars)


_WORD_CTX = 4
_WORD_VOCAB = 500


@functools.lru_cache(maxsize=1)
def _words() -> tuple[np.ndarray, int]:
    """Lower-case words of the same text; the ``_WORD_VOCAB - 1`` most frequent keep their own
    index (ties broken alphabetically), every other word maps to one shared index."""
    import re
    from collections import Counter
    from pydoc_data.topics import topics

    words = re.findall(r"[a-z]+", "\n".join(topics[k] for k in sorted(topics)).lower())
    counts = Counter(words)
    keep = sorted(counts, key=lambda w: (-counts[w], w))[: _WORD_VOCAB - 1]
    lut = {w: i for i, w in enumerate(keep)}
    other = len(keep)
    return np.array([lut.get(w, other) for w in words], dtype=np.int64), other + 1


class _CausalBlock(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x))


class _CharTransformer(nn.Module):
    def __init__(self, vocab: int, d: int = 32, ctx: int = 32, layers: int = 1, heads: int = 2):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(*[_CausalBlock(d, heads) for _ in range(layers)])
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, vocab))

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.blocks(self.emb(idx) + self.pos(pos)))


class _CharGRU(nn.Module):
    def __init__(self, vocab: int, d: int = 32, hidden: int = 64):
        super().__init__()
        self.emb, self.gru, self.head = (
            nn.Embedding(vocab, d),
            nn.GRU(d, hidden, batch_first=True),
            nn.Linear(hidden, vocab),
        )

    def forward(self, idx):
        return self.head(self.gru(self.emb(idx))[0])


class _ResBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


class _DigitsResNet(nn.Module):
    """A small residual CNN on the 8x8 digits: stem, two residual blocks, pooled linear head."""

    def __init__(self, c: int = 8):
        super().__init__()
        self.stem = nn.Conv2d(1, c, 3, padding=1)
        self.blocks = nn.Sequential(_ResBlock(c), nn.MaxPool2d(2), _ResBlock(c))
        self.head = nn.Linear(c * 16, 10)

    def forward(self, x):
        return self.head(self.blocks(torch.relu(self.stem(x))).flatten(1))


class _WordMLP(nn.Module):
    """Next-word prediction from the previous ``_WORD_CTX`` words (embeddings concatenated)."""

    def __init__(self, vocab: int, d: int = 24, hidden: int = 64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mlp = nn.Sequential(
            nn.Linear(_WORD_CTX * d, hidden), nn.ReLU(), nn.Linear(hidden, vocab)
        )

    def forward(self, idx):
        return self.mlp(self.emb(idx).flatten(1))


class _TeacherStudent(nn.Module):
    """``f(x) = sum_i a_i relu(w_i . x)``."""

    def __init__(self, D: int, K: int, gen: torch.Generator, dtype):
        super().__init__()
        self.W = nn.Parameter(torch.randn(K, D, generator=gen, dtype=dtype) / D**0.5)
        self.a = nn.Parameter(torch.randn(K, generator=gen, dtype=dtype) / K**0.5)

    def forward(self, x):
        return torch.relu(x @ self.W.T) @ self.a


def _classifier(X: np.ndarray, y: np.ndarray, model, bs: int, dtype, device):
    ce = nn.functional.cross_entropy
    Xt = torch.as_tensor(X, dtype=dtype, device=device)
    yt = torch.as_tensor(y, device=device)

    def batch(g):
        i = torch.randint(0, Xt.shape[0], (bs,), generator=g).to(device)
        return Xt[i], yt[i]

    def evaluate(model):
        return float(ce(model(Xt), yt))

    return model, batch, ce, evaluate


def _setup_digits(task: str, gen, dtype, device):
    X, y = load_digits()
    model: nn.Module
    if task == "digits_mlp":
        model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
        return _classifier(X, y, model, DEFAULTS[task]["batch"], dtype, device)
    X = X.reshape(-1, 1, 8, 8)
    if task == "digits_cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(16 * 16, 10),
        )
    else:
        model = _DigitsResNet()
    return _classifier(X, y, model, DEFAULTS[task]["batch"], dtype, device)


def _sequence_task(data: np.ndarray, model, bs: int, ctx: int, device, last_only: bool):
    ce = nn.functional.cross_entropy
    dt = torch.as_tensor(data, device=device)

    def batch(g):
        i = torch.randint(0, dt.numel() - ctx - 1, (bs,), generator=g).to(device)
        seq = dt[i[:, None] + torch.arange(ctx + 1, device=device)]
        return (seq[:, :-1], seq[:, -1]) if last_only else (seq[:, :-1], seq[:, 1:])

    def loss(out, y):
        return ce(out.reshape(-1, out.shape[-1]), y.reshape(-1))

    eg = torch.Generator().manual_seed(12345)  # a fixed evaluation set, the same for every run
    pairs = [batch(eg) for _ in range(4)]
    ex, ey = torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])

    def evaluate(model):
        return float(loss(model(ex), ey))

    return model, batch, loss, evaluate


def _setup_text(task: str, gen, dtype, device):
    bs = DEFAULTS[task]["batch"]
    if task == "word_mlp":
        data, vocab = _words()
        return _sequence_task(data, _WordMLP(vocab), bs, _WORD_CTX, device, last_only=True)
    data, vocab = _text()
    model = _CharTransformer(vocab, ctx=32) if task == "char_transformer" else _CharGRU(vocab)
    return _sequence_task(data, model, bs, 32, device, last_only=False)


def _setup_teacher_student(task: str, gen, dtype, device):
    D, K, M = 20, 4, 2
    V = torch.randn(M, D, generator=gen, dtype=dtype)
    V = (V / V.norm(dim=1, keepdim=True)).to(device)
    model = _TeacherStudent(D, K, gen, dtype)
    bs = DEFAULTS[task]["batch"]

    def teacher(x):
        return torch.relu(x @ V.T).sum(-1)

    def batch(g):
        x = torch.randn(bs, D, generator=g, dtype=dtype).to(device)
        return x, teacher(x)

    def mse(out, y):
        return 0.5 * ((out - y) ** 2).mean()

    xe = torch.randn(4096, D, generator=torch.Generator().manual_seed(12345), dtype=dtype)
    xe = xe.to(device)
    ye = teacher(xe)

    def evaluate(model):
        return float(mse(model(xe), ye))

    return model, batch, mse, evaluate


_SETUPS = {
    "digits_mlp": _setup_digits,
    "digits_cnn": _setup_digits,
    "digits_resnet": _setup_digits,
    "char_transformer": _setup_text,
    "char_gru": _setup_text,
    "word_mlp": _setup_text,
    "teacher_student": _setup_teacher_student,
}


def _setup(task: str, gen: torch.Generator, dtype, device):
    """``(model, batch(gen) -> (x, y), loss(out, y), eval() -> float)`` for one task."""
    if task not in _SETUPS:
        raise InputError(f"task={task!r} is not allowed; choose one of {list(TASKS)}")
    return _SETUPS[task](task, gen, dtype, device)


def _seed_int(seed) -> int:
    if isinstance(seed, np.random.SeedSequence):
        return integer_seed(seed)
    return int(seed)


def train_task(
    task: str,
    beta1: float,
    beta2: float,
    seed=0,
    steps: int | None = None,
    lr: float | None = None,
    device: str = "cpu",
    quick: bool = False,
    dtype=torch.float32,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    sample: int = 0,
    threads: int | None = 1,
) -> dict:
    """Train ``task`` with ``torch.optim.Adam(betas=(beta1, beta2))`` and the recorder attached.

    Returns numpy arrays per step: ``loss`` (minibatch), ``norms`` ``(steps, 7)`` pooled over
    groups (names ``norm_names``), ``share_sign``, ``share_lag``, ``share_residual``,
    ``update_norm``, ``transition_frac`` (all from `AdamRecorder`), ``reference``
    ``(steps, len(READING_SUMS))`` (the same steps split by the reference
    `gaugedyn.adam.split_update()` in float64, both sign readings; see
    `gaugedyn.adam.READING_SUMS`); and scalars ``final_loss`` (evaluation loss after
    training), ``initial_loss``, ``smoothness``, ``n_params``, ``nonfinite_step`` (the first
    step whose minibatch loss was not finite, training stopped there and later rows are nan;
    ``-1`` if none). Deterministic given ``seed`` (an int or a ``numpy.random.SeedSequence``).
    ``threads`` sets torch's intra-op threads for the run (restored afterwards; ``None`` leaves
    them): one thread is fastest for these sizes.
    """
    if task not in TASKS:
        raise InputError(f"task={task!r} is not allowed; choose one of {list(TASKS)}")
    args = (task, beta1, beta2, seed, steps, lr, device, quick, dtype, eps, weight_decay, sample)
    if threads is None:
        return _train(*args)
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        return _train(*args)
    finally:
        torch.set_num_threads(before)


def _effective_grads(opt) -> list:
    out = []
    for group in opt.param_groups:
        for p in group["params"]:
            g = p.grad.detach().double()
            if group["weight_decay"]:
                g = g + group["weight_decay"] * p.detach().double()
            out.append((p, g))
    return out


def _reference_sums(opt, grads: list, split: StreamingSplit) -> np.ndarray:
    """The `READING_SUMS` of one step over all parameters, from the reference split."""
    total = np.zeros(len(READING_SUMS))
    for i, (p, g) in enumerate(grads):
        st = opt.state[p]
        parts = split.step(i, st["exp_avg"].double(), st["exp_avg_sq"].double(), g, int(st["step"]))
        total += reading_sums(parts)
    return total


def _loop(model, opt, batch, loss_fn, gen, steps: int, split: StreamingSplit):
    losses = np.full(steps, np.nan)
    ref = np.full((steps, len(READING_SUMS)), np.nan)
    for t in range(steps):
        x, y = batch(gen)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        losses[t] = float(loss.detach())
        if not np.isfinite(losses[t]):
            return losses, ref, t
        grads = _effective_grads(opt)
        opt.step()
        with torch.no_grad():
            ref[t] = _reference_sums(opt, grads, split)
    return losses, ref, -1


def _train(task, beta1, beta2, seed, steps, lr, device, quick, dtype, eps, weight_decay, sample):
    cfg = DEFAULTS[task]
    steps = int(steps if steps is not None else (cfg["quick_steps"] if quick else cfg["steps"]))
    if steps < 1:
        raise InputError(f"steps={steps!r} is not allowed; use an integer >= 1")
    lr = float(lr if lr is not None else cfg["lr"])
    s = _seed_int(seed)
    gen = torch.Generator().manual_seed(s)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(s)  # layer initialisers draw from the global generator
        model, batch, loss_fn, evaluate = _setup(task, gen, dtype, device)
    model = model.to(device=device, dtype=dtype)
    opt = torch.optim.Adam(
        model.parameters(), lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay
    )
    # eager: these models are small, so the recorder's cost is minor, and a reproduction needs
    # no compiler (nor a one-off build in every fresh worker pool)
    rec = AdamRecorder(opt, sample=sample, seed=s, backend="eager")
    with torch.no_grad():
        initial = evaluate(model)
    losses, ref, bad = _loop(
        model, opt, batch, loss_fn, gen, steps, StreamingSplit(beta1, beta2, eps)
    )
    with torch.no_grad():
        final = evaluate(model) if bad < 0 else float("nan")
    arrays, _ = rec.export()
    rec.detach()
    out = _recorded(arrays, rec, steps)
    out.update(
        loss=losses, reference=ref, final_loss=final, initial_loss=initial, nonfinite_step=int(bad)
    )
    if sample:
        out.update({k: _pad(v, steps) for k, v in arrays.items() if k.startswith("sample_")})
    return out


def _pad(x: np.ndarray, steps: int) -> np.ndarray:
    """``x`` with its first axis nan-padded to ``steps`` rows (a run stopped early)."""
    x = np.asarray(x, dtype=float)
    if x.shape[0] >= steps:
        return x
    return np.concatenate([x, np.full((steps - x.shape[0], *x.shape[1:]), np.nan)])


def _recorded(arrays: dict, rec: AdamRecorder, steps: int) -> dict:
    pooled = np.sqrt((arrays["norms"] ** 2).sum(axis=1))
    sh = rec.shares()
    counts = arrays["n_coords"].astype(float)
    update_norm = pooled[:, NORM_NAMES.index("update")]
    trans = (
        (arrays["transition_frac"] * counts).sum(axis=1) / counts.sum()
        if len(pooled)
        else np.zeros(0)
    )
    return {
        "norms": _pad(pooled.reshape(-1, len(NORM_NAMES)), steps),
        "share_sign": _pad(sh["sign"], steps),
        "share_lag": _pad(sh["lag"], steps),
        "share_residual": _pad(sh["residual"], steps),
        "update_norm": _pad(update_norm, steps),
        "transition_frac": _pad(trans, steps),
        "smoothness": smoothness(update_norm),
        "n_params": int(counts.sum()),
    }
