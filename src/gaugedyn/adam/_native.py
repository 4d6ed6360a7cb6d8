"""A single-pass native CPU kernel for the recorder's per-step sums (built on first use).

Per contiguous float32/float64 CPU tensor, one sweep reads ``g, m, v, w``, updates
``w <- lerp(w, g, 1 - b2)`` in place (when asked) and accumulates, in double, the eight unscaled
sums of ``_recorder._chunk_sums``: with ``A = 1/sqrt(max(v, tiny))``, ``D = v A + eps c``
(``D = max(v, tiny) A`` when ``eps c = 0``), ``sg = sign g``, ``sw = sign w``, ``T = sw - sg``:

    sum sg^2, sum ((m - k w)/D)^2, sum T^2, sum (sw - alpha w A)^2, sum (w A/D)^2,
    sum (sg - alpha w/D)^2, sum (m/D)^2, sum |T|.

The extension is compiled with ``torch.utils.cpp_extension.load_inline`` (g++ and ninja; cached
under the torch extensions directory). :func:`available` reports whether it built; a failed build
is logged once (no Python warning) and the recorder falls back to its eager path.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys

import torch

_log = logging.getLogger(__name__)

_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>
#include <algorithm>
#include <limits>

namespace {

constexpr int64_t BLOCK = 4096;  // elements per partial sum

template <typename T, int MODE>
void block_sums(const T* __restrict m, const T* __restrict v, T* __restrict w,
                const T* __restrict g, int64_t n, double k, double alpha, double epsc, T lerp,
                double* out) {
  using C = T;  // elementwise in the tensors' precision, sums in double
  const C tiny = std::numeric_limits<T>::min();
  const T w1 = T(1) - lerp;
  const bool vsel = epsc > 0.0;
  const C ce = C(epsc), ck = C(k), ca = C(alpha);
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
  for (int64_t j = 0; j < n; ++j) {
    C gj = g[j];
    C mj = m[j];
    C vj = v[j];
    C wj;
    if (MODE == 0) {
      wj = mj;
    } else if (MODE == 1) {
      wj = w[j];
    } else {
      T d = g[j] - w[j];
      T wn = MODE == 2 ? w[j] + lerp * d : g[j] - d * w1;
      w[j] = wn;
      wj = wn;
    }
    C vc = std::max(vj, tiny);
    C A = C(1) / std::sqrt(vc);
    C D = (vsel ? vj : vc) * A + ce;
    C iD = C(1) / D;
    C sg = (gj > C(0) ? C(1) : C(0)) - (gj < C(0) ? C(1) : C(0));
    C sw = (wj > C(0) ? C(1) : C(0)) - (wj < C(0) ? C(1) : C(0));
    double t = double(sw - sg);
    double U = double(mj * iD);
    C wD = wj * iD;
    C wA = wj * A;
    double R = double(sg - ca * wD);
    double Q = double(sw - ca * wA);
    double E = double(wA * iD);
    s0 += double(sg * sg);
    if (MODE != 0) {
      double L = double(mj * iD - ck * wD);
      s1 += L * L;
    }
    s2 += t * t;
    s3 += Q * Q;
    s4 += E * E;
    s5 += R * R;
    s6 += U * U;
    s7 += std::fabs(t);
  }
  out[0] = s0; out[1] = s1; out[2] = s2; out[3] = s3;
  out[4] = s4; out[5] = s5; out[6] = s6; out[7] = s7;
}

template <typename T, int MODE>
void sweep(const T* pm, const T* pv, T* pw, const T* pg, int64_t n, double k, double alpha,
           double epsc, T lerp, double* total) {
  double part[8];
  for (int64_t lo = 0; lo < n; lo += BLOCK) {
    int64_t len = std::min(BLOCK, n - lo);
    block_sums<T, MODE>(pm + lo, pv + lo, MODE == 0 ? nullptr : pw + lo, pg + lo, len, k, alpha,
                        epsc, lerp, part);
    for (int a = 0; a < 8; ++a) total[a] += part[a];
  }
}

template <typename T>
void run(torch::Tensor m, torch::Tensor v, torch::Tensor w, torch::Tensor g, double k,
         double alpha, double epsc, double lerp, bool tied, torch::Tensor out) {
  const int64_t n = m.numel();
  const T* pm = m.data_ptr<T>();
  const T* pv = v.data_ptr<T>();
  const T* pg = g.data_ptr<T>();
  T* pw = tied ? nullptr : w.data_ptr<T>();
  const bool upd = !tied && lerp >= 0.0;
  double total[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (tied) {
    sweep<T, 0>(pm, pv, pw, pg, n, k, alpha, epsc, T(0), total);
  } else if (!upd) {
    sweep<T, 1>(pm, pv, pw, pg, n, k, alpha, epsc, T(0), total);
  } else if (std::abs(T(lerp)) < T(0.5)) {
    sweep<T, 2>(pm, pv, pw, pg, n, k, alpha, epsc, T(lerp), total);
  } else {
    sweep<T, 3>(pm, pv, pw, pg, n, k, alpha, epsc, T(lerp), total);
  }
  double* po = out.data_ptr<double>();
  for (int a = 0; a < 8; ++a) po[a] = total[a];
}

}  // namespace

void adam_sums(torch::Tensor m, torch::Tensor v, torch::Tensor w, torch::Tensor g, double k,
               double alpha, double epsc, double lerp, bool tied, torch::Tensor out) {
  TORCH_CHECK(m.device().is_cpu() && v.device().is_cpu() && w.device().is_cpu() &&
              g.device().is_cpu() && out.device().is_cpu(), "adam_sums: CPU tensors only");
  TORCH_CHECK(m.is_contiguous() && v.is_contiguous() && w.is_contiguous() && g.is_contiguous(),
              "adam_sums: contiguous tensors only");
  TORCH_CHECK(v.scalar_type() == m.scalar_type() && w.scalar_type() == m.scalar_type() &&
              g.scalar_type() == m.scalar_type(), "adam_sums: one dtype for m, v, w, g");
  TORCH_CHECK(v.numel() == m.numel() && w.numel() == m.numel() && g.numel() == m.numel(),
              "adam_sums: equal sizes");
  TORCH_CHECK(out.scalar_type() == torch::kFloat64 && out.is_contiguous() && out.numel() >= 8,
              "adam_sums: out must be a contiguous float64 tensor of >= 8 entries");
  if (m.scalar_type() == torch::kFloat64) {
    run<double>(m, v, w, g, k, alpha, epsc, lerp, tied, out);
  } else if (m.scalar_type() == torch::kFloat32) {
    run<float>(m, v, w, g, k, alpha, epsc, lerp, tied, out);
  } else {
    TORCH_CHECK(false, "adam_sums: float32 or float64 only");
  }
}
"""

_MODULE = None
_TRIED = False
_ERROR: str | None = None
_LOGGED = False
DTYPES = (torch.float32, torch.float64)


def _build():
    from torch.utils.cpp_extension import load_inline

    path = os.environ.get("PATH", "")
    bindir = os.path.dirname(sys.executable)
    if shutil.which("ninja") is None and os.path.exists(os.path.join(bindir, "ninja")):
        os.environ["PATH"] = bindir + os.pathsep + path
    try:
        cap = torch.backends.cpu.get_cpu_capability()
        isa = ["-mavx2", "-mfma"] if cap in ("AVX2", "AVX512") else []
        return load_inline(
            name=f"gaugedyn_adam_native_v6_{'avx2' if isa else 'base'}",
            cpp_sources=[_SOURCE],
            functions=["adam_sums"],
            extra_cflags=["-O3", "-fno-math-errno", "-fopenmp-simd", "-fno-trapping-math", *isa],
            verbose=False,
        )
    finally:
        os.environ["PATH"] = path


def load():
    """The compiled extension module, or ``None`` when it cannot be built (logged once)."""
    global _MODULE, _TRIED, _ERROR
    if not _TRIED:
        _TRIED = True
        try:
            _MODULE = _build()
        except Exception as exc:  # any build failure means: use the eager path
            lines = str(exc).strip().splitlines()
            _ERROR = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
            log_fallback()
    return _MODULE


def log_fallback() -> None:
    """Log (once per process) that the native kernel is unavailable."""
    global _LOGGED
    if not _LOGGED:
        _LOGGED = True
        _log.warning("gaugedyn.adam native kernel unavailable, using eager sums (%s)", _ERROR)


def available() -> bool:
    """Whether the native kernel is built (builds it on first call)."""
    return load() is not None


def eligible(*tensors: torch.Tensor) -> bool:
    """True when all tensors are contiguous CPU tensors of one float32/float64 dtype."""
    dt = tensors[0].dtype
    return dt in DTYPES and all(
        t.device.type == "cpu" and t.dtype == dt and t.is_contiguous() for t in tensors
    )


def adam_sums(m, v, w, g, k: float, alpha: float, epsc: float, lerp: float | None, tied: bool,
              out: torch.Tensor) -> None:
    """Write the eight unscaled sums into ``out[:8]`` (float64); update ``w`` first when ``lerp``
    is a weight (``w <- lerp(w, g, lerp)``, as ``torch.lerp``). ``tied``: ``w`` is ``m``."""
    load().adam_sums(m, v, w, g, float(k), float(alpha), float(epsc),
                     -1.0 if lerp is None else float(lerp), bool(tied), out)
