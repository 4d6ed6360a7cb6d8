"""The native single-pass kernel against the recorder's eager sums."""

import copy
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import NORM_NAMES, AdamRecorder
from gaugedyn.adam import _native as native
from gaugedyn.adam._decomposition import bias_corrections
from gaugedyn.adam._recorder import _chunk_sums

pytestmark = pytest.mark.skipif(
    not native.available(), reason=f"native extension does not build: {native._ERROR}"
)


def _state(n, dtype, seed):
    """Random (m, v, w, g) with exact zeros in g and w and an all-zero history block (v = 0)."""
    gen = torch.Generator().manual_seed(seed)
    g = torch.randn(n, generator=gen, dtype=torch.float64)
    m = 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    w = 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    v = torch.rand(n, generator=gen, dtype=torch.float64) ** 4
    g[::7] = 0.0
    w[::5] = 0.0
    m[:50] = v[:50] = w[:50] = g[:50] = 0.0
    return tuple(x.to(dtype) for x in (m, v, w, g))


def _eager(m, v, w, g, k, alpha, epsc, tied):
    out = torch.zeros(8, dtype=m.dtype)
    _chunk_sums(
        m, v, None if tied else w, g, k, alpha, epsc, torch.empty(5, m.numel(), dtype=m.dtype), out
    )
    return out.double().numpy()


def _native(m, v, w, g, k, alpha, epsc, lerp, tied):
    out = torch.full((8,), np.nan, dtype=torch.float64)
    native.adam_sums(m, v, w, g, k, alpha, epsc, lerp, tied, out)
    return out.numpy()


def _consts(step, b1, b2, eps):
    bc1, bc2, c = bias_corrections(step, b1, b2)
    return bc1 / bc2, c / bc2, eps * c


@pytest.mark.parametrize("eps", [0.0, 1e-8])
@pytest.mark.parametrize("betas", [(0.9, 0.99), (0.9, 0.9)])
def test_native_sums_equal_eager_float64(eps, betas):
    b1, b2 = betas
    tied = b1 == b2
    m, v, w, g = _state(50_000, torch.float64, 1)
    if tied:
        w = m
    k, alpha, epsc = _consts(7, b1, b2, eps)
    w_e, w_n = w.clone(), w.clone()
    if not tied:
        w_e.lerp_(g, 1 - b2)
    ref = _eager(m, v, w_e, g, k, alpha, epsc, tied)
    got = _native(m, v, m if tied else w_n, g, k, alpha, epsc, None if tied else 1 - b2, tied)
    keep = [i for i in range(8) if not (tied and i == 1)]
    assert np.all(ref[keep] > 0)
    np.testing.assert_allclose(got[keep], ref[keep], rtol=1e-12, atol=0)
    if tied:
        assert got[1] == 0.0  # no lag on the diagonal
    else:
        np.testing.assert_allclose(w_n.numpy(), w_e.numpy(), rtol=1e-15, atol=1e-300)
        assert not torch.equal(w_n, w)
        # without an update, w is read as is
        again = _native(m, v, w_n, g, k, alpha, epsc, None, False)
        np.testing.assert_allclose(again, ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_native_sums_float32(eps):
    m, v, w, g = _state(20_000, torch.float32, 2)
    k, alpha, epsc = _consts(3, 0.8, 0.95, eps)
    ref64 = _eager(*(x.double() for x in (m, v, w, g)), k, alpha, epsc, False)
    ref32 = _eager(m, v, w, g, k, alpha, epsc, False)
    got = _native(m, v, w, g, k, alpha, epsc, None, False)
    np.testing.assert_allclose(got, ref64, rtol=1e-5, atol=0)
    np.testing.assert_allclose(got, ref32, rtol=1e-5, atol=0)
    w_e, w_n = w.clone(), w.clone()
    w_e.lerp_(g, 0.05)
    _native(m, v, w_n, g, k, alpha, epsc, 0.05, False)
    np.testing.assert_allclose(w_n.numpy(), w_e.numpy(), rtol=1e-6, atol=1e-30)


def test_eligibility():
    x = torch.zeros(4, 3, dtype=torch.float64)
    assert native.eligible(x, x, x, x)
    assert not native.eligible(x, x.t(), x, x)
    assert not native.eligible(x, x.float(), x, x)
    assert not native.eligible(*(torch.zeros(3, dtype=torch.float16),) * 4)


def _run(backend, betas, every, steps=6):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(20, 300), torch.nn.Tanh(), torch.nn.Linear(300, 3)
    ).double()
    models = {b: copy.deepcopy(model) for b in ("eager", backend)}
    out = {}
    for b, mdl in models.items():
        opt = torch.optim.Adam(mdl.parameters(), lr=1e-2, betas=betas, eps=1e-8)
        rec = AdamRecorder(opt, every=every, backend=b)
        gen = torch.Generator().manual_seed(3)
        for _ in range(steps):
            x = torch.randn(32, 20, generator=gen, dtype=torch.float64)
            opt.zero_grad()
            mdl(x).pow(2).mean().backward()
            opt.step()
        arrays, meta = rec.export()
        out[b] = (arrays, meta, [rec._w.get(p) for p in mdl.parameters()])
    return out["eager"], out[backend]


@pytest.mark.parametrize("betas,every", [((0.9, 0.99), 1), ((0.9, 0.99), 2), ((0.95, 0.95), 1)])
def test_recorder_native_equals_eager(betas, every):
    (ea, em, ew), (na, nm, nw) = _run("native", betas, every)
    assert em["backend"] == "eager" and nm["backend"] == "native"
    assert len(na["step"]) == len(ea["step"]) > 0
    np.testing.assert_array_equal(na["step"], ea["step"])
    scale = np.abs(ea["norms"]).max(axis=-1, keepdims=True)
    assert np.max(np.abs(na["norms"] - ea["norms"]) / scale) < 1e-12
    np.testing.assert_array_equal(na["transition_frac"], ea["transition_frac"])
    if betas[0] == betas[1]:
        assert np.all(na["norms"][..., 1] == 0.0)
    else:
        assert np.all(na["norms"][..., 1] > 0)
        for a, b in zip(ew, nw, strict=True):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-14, atol=1e-300)


def test_backend_auto_and_bad_value():
    opt = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    if not native.available():  # built here if need be, as backend="native" would
        pytest.skip(f"native extension does not build: {native._ERROR}")
    assert AdamRecorder(opt, backend="auto").metadata()["backend"] == "native"
    with pytest.raises(InputError, match="backend"):
        AdamRecorder(opt, backend="cuda")


def test_auto_never_starts_a_build_and_native_says_it_does(monkeypatch, tmp_path, capsys):
    """The first ``AdamRecorder(opt)`` on a machine without the library records at once on the
    eager path; ``backend="native"`` builds, saying so (with how long it takes) on stderr."""
    import torch.utils.cpp_extension as cpp

    _fresh(monkeypatch)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_have_ninja", lambda: True)
    calls = []

    def fake_load_inline(*, name, build_directory, **kwargs):
        (Path(build_directory) / f"{name}.so").write_bytes(b"binary")
        calls.append(name)
        return "built"

    monkeypatch.setattr(cpp, "load_inline", fake_load_inline)
    opt = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    assert AdamRecorder(opt).metadata()["backend"] == "eager"
    assert not calls and "not built on this machine" in native._ERROR
    assert capsys.readouterr().err == ""
    assert native.resolve_backend("native", False, list(opt.param_groups[0]["params"]))[0] == (
        "native"
    )
    err = capsys.readouterr().err
    assert len(calls) == 1 and "compiling the Adam recorder's native kernel" in err
    assert native.BUILD_TIME in err and "compiled the native kernel in" in err


def test_failed_build_falls_back_to_eager(monkeypatch, caplog):
    def broken():
        raise RuntimeError("no compiler\nError building extension")

    for name, value in (
        ("_build", broken),
        ("_TRIED", False),
        ("_MODULE", None),
        ("_LOGGED", False),
        ("_ERROR", None),
    ):
        monkeypatch.setattr(native, name, value)
    with caplog.at_level("WARNING", logger=native.__name__):
        assert not native.available()
        opt = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
        rec = AdamRecorder(opt, backend="native")
        assert not native.available()
    assert rec.metadata()["backend"] == "eager"
    lines = [r.getMessage() for r in caplog.records if r.name == native.__name__]
    assert len(lines) == 1 and "Error building extension" in lines[0]


def _fresh(monkeypatch):
    """Forget this process's load attempt (restored after the test)."""
    for name, value in (("_TRIED", False), ("_MODULE", None), ("_LOGGED", False), ("_ERROR", None)):
        monkeypatch.setattr(native, name, value)


def test_default_backend_is_auto_and_skips_the_build_without_cpu_tensors(monkeypatch):
    opt = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    if not native.available():
        pytest.skip(f"native extension does not build: {native._ERROR}")
    assert AdamRecorder(opt).metadata()["backend"] == "native"
    _fresh(monkeypatch)

    def no_build():
        raise AssertionError("built for an optimizer without CPU tensors")

    monkeypatch.setattr(native, "_build", no_build)
    meta = torch.optim.Adam(torch.nn.Linear(2, 2, device="meta").parameters())
    assert AdamRecorder(meta).metadata()["backend"] == "eager"
    assert not native._TRIED


def test_environment_switch_disables_native(monkeypatch, caplog):
    _fresh(monkeypatch)
    monkeypatch.setenv("GAUGEDYN_NATIVE", "0")
    opt = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    with caplog.at_level("WARNING", logger=native.__name__):
        assert AdamRecorder(opt).metadata()["backend"] == "eager"  # auto: silently eager
    assert not caplog.records and "GAUGEDYN_NATIVE=0" in native._ERROR
    with caplog.at_level("WARNING", logger=native.__name__):
        AdamRecorder(opt, backend="native")  # asked for: says why not
    assert len(caplog.records) == 1 and "GAUGEDYN_NATIVE=0" in caplog.records[0].getMessage()


def test_build_runs_in_a_private_folder_and_publishes_atomically(monkeypatch, tmp_path):
    """A killed build's leftovers neither block nor leak into the next build; the cache is used."""
    import torch.utils.cpp_extension as cpp

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    name = native._library_name(native._flags())
    root = tmp_path / "gaugedyn"
    stale = root / f"{name}.build-killed"  # as a SIGKILL mid-build leaves it, torch's lock inside
    stale.mkdir(parents=True)
    (stale / "lock").write_text("")
    calls = []

    def fake_load_inline(*, name, build_directory, **kwargs):
        folder = Path(build_directory)
        assert folder.parent == root and folder != stale and not any(folder.iterdir())
        (folder / f"{name}.so").write_bytes(b"binary")
        calls.append(folder)
        return "built"

    monkeypatch.setattr(cpp, "load_inline", fake_load_inline)
    monkeypatch.setattr(native, "_import", lambda n, path: ("cached", n, path))
    assert native._build() == "built"
    lib = root / f"{name}.so"
    assert lib.read_bytes() == b"binary"
    assert not stale.exists() and not calls[0].exists()  # no build folder is left behind
    assert native._build() == ("cached", name, lib)  # a second process imports, builds nothing
    assert len(calls) == 1


def test_build_lock_is_released_when_its_holder_is_killed(tmp_path):
    lock = tmp_path / "x.lock"
    code = (
        "import sys, time; from pathlib import Path; from gaugedyn.adam import _native as n\n"
        "with n._exclusive(Path(sys.argv[1])):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout.readline().strip() == "held"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            again = (
                "import sys; from pathlib import Path; from gaugedyn.adam import _native as n\n"
                "with n._exclusive(Path(sys.argv[1])):\n    print('acquired')\n"
            )
            t0 = time.monotonic()  # a lock that outlived its holder would hang: time out instead
            out = subprocess.run(
                [sys.executable, "-c", again, str(lock)],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
            assert out.strip() == "acquired" and time.monotonic() - t0 < 30
        finally:
            proc.kill()


def test_sums_do_not_depend_on_the_thread_count():
    m, v, w, g = _state(300_000, torch.float32, 4)  # many parallel blocks
    k, alpha, epsc = _consts(5, 0.9, 0.99, 1e-8)
    threads = torch.get_num_threads()
    try:
        got = []
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            w_n = w.clone()
            got.append((_native(m, v, w_n, g, k, alpha, epsc, 0.01, False), w_n))
    finally:
        torch.set_num_threads(threads)
    for sums, w_n in got[1:]:
        np.testing.assert_array_equal(sums, got[0][0])  # bitwise: blocks are added in order
        assert torch.equal(w_n, got[0][1])


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_float32_without_eps_and_tiny_second_moments_stays_finite(backend):
    """eps = 0 and v ~ 1e-36: w/s^2 overflows float32, but the eps part is exactly 0."""
    p = torch.nn.Parameter(torch.ones(4096))
    opt = torch.optim.Adam([p], lr=1e-3, betas=(0.9, 0.99), eps=0.0)
    rec = AdamRecorder(opt, backend=backend)
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        p.grad = 1e-18 * torch.randn(4096, generator=gen)
        opt.step()
    norms = rec.norms()
    assert rec.metadata()["backend"] == backend
    assert np.all(np.isfinite(norms)) and np.all(norms[:, 0, NORM_NAMES.index("eps")] == 0.0)
    assert np.all(norms[:, 0, NORM_NAMES.index("update")] > 0)


def test_a_failed_build_is_not_repeated_until_its_marker_is_deleted(monkeypatch, tmp_path):
    import torch.utils.cpp_extension as cpp

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    calls = []

    def failing_load_inline(**kwargs):
        calls.append(kwargs["build_directory"])
        raise RuntimeError("compiling\nError building extension 'x': g++ not found")

    monkeypatch.setattr(cpp, "load_inline", failing_load_inline)
    with pytest.raises(RuntimeError, match="g[+][+] not found"):
        native._build()
    with pytest.raises(RuntimeError, match="earlier build failed.*g[+][+] not found"):
        native._build()  # at once, without compiling
    assert len(calls) == 1
    (marker,) = (tmp_path / "gaugedyn").glob("*.failed")
    marker.unlink()
    with pytest.raises(RuntimeError, match="g[+][+] not found"):
        native._build()
    assert len(calls) == 2


def _exact_roots(v, epsc):
    """A* = 1/sqrt(max(v, tiny)) and iD* = 1/(v A* + eps c) (``max(v, tiny) A*`` without eps) in
    extended precision (``np.longdouble``), from the tensor's own values and constants."""
    dt = v.dtype
    tiny = np.longdouble(torch.finfo(dt).tiny)
    ce = np.longdouble(torch.tensor(epsc, dtype=dt).item())  # eps c as the kernel rounds it
    x = v.numpy().astype(np.longdouble)
    vc = np.maximum(x, tiny)
    a = 1 / np.sqrt(vc)
    return a, 1 / ((x if epsc > 0 else vc) * a + ce)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("epsc", [0.0, 1e-8, 3e-3])
def test_the_sweeps_roots_are_within_the_declared_bound(dtype, epsc):
    """The per-entry roots of the sweep (the kernel's own code) against extended-precision roots
    of the same inputs, over v from 0 and subnormals to the largest float: within
    ``ROOT_BOUNDS`` epsilons of the dtype. Not last bits: an error of a few epsilons more fails
    (an estimate without its Newton step, 2**-14, fails by far)."""
    info = torch.finfo(dtype)
    gen = torch.Generator().manual_seed(5)
    lo, hi = np.log10(info.tiny) - 6, np.log10(info.max)
    e = lo + (hi - lo) * torch.rand(100_003, generator=gen, dtype=torch.float64)
    v = (10.0**e).clamp(max=info.max).to(dtype)
    v[:3] = torch.tensor([0.0, info.tiny, info.max], dtype=dtype)
    v[3:50_003] = torch.rand(50_000, generator=gen, dtype=torch.float64).to(dtype)  # in [0, 1)
    assert torch.isfinite(v).all()
    A, iD = native.adam_roots(v, epsc)
    a, d = _exact_roots(v, epsc)
    err_a = np.abs(A.numpy().astype(np.longdouble) / a - 1).max() / info.eps
    err_d = np.abs(iD.numpy().astype(np.longdouble) / d - 1).max() / info.eps
    assert err_a <= native.ROOT_BOUNDS["A"] and err_d <= native.ROOT_BOUNDS["iD"]
    assert err_a > 0.1 and err_d > 0.1  # rounded, and compared in more precision than the dtype


def test_float32_sums_within_a_float32_bound_of_the_float64_sums():
    """The float32 sweep's eight sums (in float32 within 2048-entry blocks) against the same
    inputs swept in float64: within 2**-23 * 64, which the block sums' rounding keeps and an
    error of 2**-14 in the roots (no Newton step) would not."""
    m, v, w, g = _state(200_000, torch.float32, 6)
    v = v + 1e-6  # the roots' error dominates only where the terms are not dominated by zeros
    k, alpha, epsc = _consts(9, 0.9, 0.99, 1e-8)
    got = _native(m, v, w.clone(), g, k, alpha, epsc, None, False)
    ref = _native(*(x.double() for x in (m, v, w, g)), k, alpha, epsc, None, False)
    np.testing.assert_allclose(got, ref, rtol=64 * 2.0**-23, atol=0)
