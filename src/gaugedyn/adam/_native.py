"""A single-pass native CPU kernel for the recorder's per-step sums (built when asked for).

Per contiguous float32/float64 CPU tensor, one sweep reads ``g, m, v, w``, updates
``w <- lerp(w, g, 1 - b2)`` in place (when asked) and accumulates the eight unscaled sums of
``_recorder._chunk_sums`` (in the tensors' dtype within blocks of 2048 elements, so the loop
runs at full SIMD width; the block sums in double). With ``A = 1/sqrt(max(v, tiny))``,
``D = v A + eps c`` (``D = max(v, tiny) A`` when ``eps c = 0``), ``sg = sign g``,
``sw = sign w`` and ``T = sw - sg``, the sums are

    sum sg^2, sum ((m - k w)/D)^2, sum T^2, sum (sw - alpha w A)^2, sum (w A/D)^2,
    sum (sg - alpha w/D)^2, sum (m/D)^2, sum |T|.

The roots ``A`` and ``1/D`` take a square root and two divisions per entry in the tensors'
dtype, each correctly rounded: within one and two epsilons of the dtype of the exact values
(``ROOT_BOUNDS``; `adam_roots()` gives the kernel's own roots for the test). Estimates refined
by Newton steps (AVX-512 ``rsqrt14``/``rcp14``) measured 2% faster in this sweep (2026-12-07),
not worth a second code path: the loop's other vector operations, not the divisions, bound it.
One inline function (``add_terms``) defines an entry's terms for the sweep and the fused step.

`adam_sums_many()` sweeps a list of such tensors that share the constants (a parameter group at
one step) in one call, adding their sums in list order: the recorder's fast path, with no Python
per parameter. It checks every tensor first and declines (returns ``False``, touching nothing)
unless all are eligible, so the caller can take the per-tensor path. `adam_step_many()` is the
recorder's fused step: the optimizer's own update (as ``torch.optim.Adam``'s single-tensor path
writes it, the square root by torch's ``at::sqrt``) in the same sweep, block by block.

The extension is compiled with ``torch.utils.cpp_extension.load_inline`` (g++ and ninja) once
per machine and cached as ``<torch extensions directory>/gaugedyn/<name>.so`` (the directory is
``TORCH_EXTENSIONS_DIR`` when set; the name hashes the source, the flags and the torch and Python
versions). Only ``backend="native"`` (or `available()`) starts the build, saying so on
stderr with how long it takes; the recorder's default ``backend="auto"`` uses the kernel once it
is built and never builds it. A failed build is logged once (no Python warning) and the recorder
falls back to its eager path. ``GAUGEDYN_NATIVE=0`` in the environment disables it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

_log = logging.getLogger(__name__)

_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>
#include <ATen/Parallel.h>

namespace {

constexpr int64_t BLOCK = 2048;  // elements per partial sum (summed in T, blocks in double)
constexpr int64_t GRAIN = 16;    // blocks per parallel task

// The two roots of every entry, in the tensors' dtype: with vc = max(v, tiny), A = 1/sqrt(vc)
// and iD = 1/D, D = (eps c > 0 ? v : vc) A + eps c (one fused multiply-add), each operation
// correctly rounded: A within 1.5 units in the last place (u) of the exact 1/sqrt(vc), D within
// 2.5 u and iD within 3 u of the exact 1/(sqrt(v) + eps c) (ROOT_BOUNDS in Python: one and two
// epsilons of the dtype, tested).
template <typename T>
inline void roots_exact(T vj, T tiny, bool vsel, T ce, T& A, T& iD) {
  T vc = std::max(vj, tiny);
  A = T(1) / std::sqrt(vc);
  iD = T(1) / ((vsel ? vj : vc) * A + ce);
}

// One entry's terms of the eight sums (from g, m, v and w as updated), added into s0..s7: the
// one definition that the sweep (block_sums) and the fused step (step_sub) inline in their loops.
template <typename C, bool LAG>
inline __attribute__((always_inline)) void add_terms(C gj, C mj, C vj, C wj, C tiny, bool vsel,
                                                     C ce, C ck, C ca, C& s0, C& s1, C& s2,
                                                     C& s3, C& s4, C& s5, C& s6, C& s7) {
  C A, iD;
  roots_exact<C>(vj, tiny, vsel, ce, A, iD);
  C sg = (gj > C(0) ? C(1) : C(0)) - (gj < C(0) ? C(1) : C(0));
  C sw = (wj > C(0) ? C(1) : C(0)) - (wj < C(0) ? C(1) : C(0));
  C t = sw - sg;
  C U = mj * iD;
  C wD = wj * iD;
  C wA = wj * A;
  C R = sg - ca * wD;
  C Q = sw - ca * wA;
  C E = wA * iD;
  s0 += sg * sg;
  if (LAG) {
    C L = mj * iD - ck * wD;
    s1 += L * L;
  }
  s2 += t * t;
  s3 += Q * Q;
  s4 += E * E;
  s5 += R * R;
  s6 += U * U;
  s7 += std::fabs(t);
}

template <typename T, int MODE>
void block_sums(const T* __restrict m, const T* __restrict v, T* __restrict w,
                const T* __restrict g, int64_t n, double k, double alpha, double epsc, T lerp,
                double* out) {
  using C = T;  // elementwise and in-block sums in the tensors' precision (full SIMD width)
  const C tiny = std::numeric_limits<T>::min();
  const T w1 = T(1) - lerp;
  const bool vsel = epsc > 0.0;
  const C ce = C(epsc), ck = C(k), ca = C(alpha);
  C s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
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
    add_terms<C, MODE != 0>(gj, mj, vj, wj, tiny, vsel, ce, ck, ca, s0, s1, s2, s3, s4, s5, s6,
                            s7);
  }
  out[0] = s0; out[1] = s1; out[2] = s2; out[3] = s3;
  out[4] = s4; out[5] = s5; out[6] = s6; out[7] = s7;
}

template <typename T, int MODE>
void sweep(const T* pm, const T* pv, T* pw, const T* pg, int64_t n, double k, double alpha,
           double epsc, T lerp, double* total) {
  // Blocks run on torch's intra-op threads; their sums are added in block order afterwards,
  // so the result does not depend on the number of threads.
  const int64_t nb = (n + BLOCK - 1) / BLOCK;
  std::vector<double> part(8 * nb);
  at::parallel_for(0, nb, GRAIN, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t lo = b * BLOCK;
      block_sums<T, MODE>(pm + lo, pv + lo, MODE == 0 ? nullptr : pw + lo, pg + lo,
                          std::min(BLOCK, n - lo), k, alpha, epsc, lerp, &part[8 * b]);
    }
  });
  for (int64_t b = 0; b < nb; ++b)
    for (int a = 0; a < 8; ++a) total[a] += part[8 * b + a];
}

template <typename T>
void run(const torch::Tensor& m, const torch::Tensor& v, const torch::Tensor& w,
         const torch::Tensor& g, double k, double alpha, double epsc, double lerp, bool tied,
         double* total) {
  // adds this tensor's eight sums into total
  const int64_t n = m.numel();
  const T* pm = m.data_ptr<T>();
  const T* pv = v.data_ptr<T>();
  const T* pg = g.data_ptr<T>();
  T* pw = tied ? nullptr : w.data_ptr<T>();
  const bool upd = !tied && lerp >= 0.0;
  if (tied) {
    sweep<T, 0>(pm, pv, pw, pg, n, k, alpha, epsc, T(0), total);
  } else if (!upd) {
    sweep<T, 1>(pm, pv, pw, pg, n, k, alpha, epsc, T(0), total);
  } else if (std::abs(T(lerp)) < T(0.5)) {
    sweep<T, 2>(pm, pv, pw, pg, n, k, alpha, epsc, T(lerp), total);
  } else {
    sweep<T, 3>(pm, pv, pw, pg, n, k, alpha, epsc, T(lerp), total);
  }
}

bool fits(const torch::Tensor& x, c10::ScalarType dt, int64_t n) {
  return x.device().is_cpu() && x.scalar_type() == dt && x.is_contiguous() && x.numel() == n;
}

void check_out(const torch::Tensor& out) {
  TORCH_CHECK(out.device().is_cpu() && out.scalar_type() == torch::kFloat64 &&
              out.is_contiguous() && out.numel() >= 8,
              "adam_sums: out must be a contiguous float64 CPU tensor of >= 8 entries");
}

// The fused step: one parameter's Adam update as torch.optim.Adam's single-tensor path writes
// it, block by block (m <- fma(1 - b1, g - m, m), torch's lerp; v <- fma((1 - b2) g, g, v b2),
// its mul_ and addcmul_; sqrt(v) by torch's own at::sqrt, whose bits this build's kernel sets;
// p <- p + (-lr/bc1 m) / (sqrt(v)/sqrt(bc2) + eps), its addcdiv_), with w's lerp and, when
// asked, the eight sums (the sweep's own add_terms) on each sub-block while it is in cache.
constexpr int64_t STEP_BLOCK = 32768;  // 128 KiB of float32 per tensor: a block stays in L2

template <typename T, bool SUMS, bool TIED>
void step_sub(T* p, T* m, T* v, const T* g, T* w, const T* s, int64_t n, T bc2s, T eps, T ns,
              T lerp, double k, double alpha, double epsc, double* total) {
  const T tiny = std::numeric_limits<T>::min();
  const bool vsel = epsc > 0.0;
  const T ce = T(epsc), ck = T(k), ca = T(alpha);
  const bool small = std::abs(lerp) < T(0.5);
  T s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
  for (int64_t j = 0; j < n; ++j) {
    T gj = g[j], mj = m[j];
    T den = s[j] / bc2s + eps;
    p[j] = p[j] + (ns * mj) / den;
    T wj = mj;
    if (!TIED) {
      T d = gj - w[j];
      wj = small ? w[j] + lerp * d : gj - d * (T(1) - lerp);
      w[j] = wj;
    }
    // the sweep's own terms (add_terms), on the entry while it is in registers
    if (SUMS) add_terms<T, !TIED>(gj, mj, v[j], wj, tiny, vsel, ce, ck, ca, s0, s1, s2, s3, s4, s5, s6, s7);
  }
  if (!SUMS) return;
  total[0] += s0; total[1] += s1; total[2] += s2; total[3] += s3;
  total[4] += s4; total[5] += s5; total[6] += s6; total[7] += s7;
}

// One block: its sums from sub-blocks of BLOCK entries (summed in T), added in double in order.
template <typename T, bool SUMS, bool TIED>
void step_block(T* p, T* m, T* v, const T* g, T* w, const T* s, int64_t n, T bc2s, T eps, T ns,
                T lerp, double k, double alpha, double epsc, double* total) {
  for (int64_t lo = 0; lo < n; lo += BLOCK) {
    step_sub<T, SUMS, TIED>(p + lo, m + lo, v + lo, g + lo, TIED ? nullptr : w + lo, s + lo,
                            std::min(BLOCK, n - lo), bc2s, eps, ns, lerp, k, alpha, epsc, total);
  }
}

template <typename T, bool SUMS, bool TIED>
void step_one(const torch::Tensor& p, const torch::Tensor& m, const torch::Tensor& v,
              const torch::Tensor& g, const torch::Tensor& w, double lr, double b1, double b2,
              double eps, double step, bool maximize, double k, double alpha, double epsc,
              double* total) {
  const int64_t n = p.numel();
  T* pp = p.data_ptr<T>();
  T* pm = m.data_ptr<T>();
  T* pv = v.data_ptr<T>();
  const T* pg = g.data_ptr<T>();
  T* pw = TIED ? nullptr : w.data_ptr<T>();
  // the scalars as torch.optim.Adam forms them (Python floats, then the tensors' dtype)
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  const T lw = T(1 - b1), tb2 = T(b2), c2 = T(1 - b2), bc2s = T(std::pow(bc2, 0.5));
  const T teps = T(eps), ns = T(-(lr / bc1));
  const int64_t nb = (n + STEP_BLOCK - 1) / STEP_BLOCK;
  std::vector<double> part(8 * nb, 0.0);
  // Blocks run on torch's intra-op threads (each task with its own buffers); their sums are
  // added in block order afterwards, so nothing depends on the number of threads.
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1_) {
    at::NoGradGuard no_grad;
    auto sbuf = torch::empty({STEP_BLOCK}, p.options());
    auto gbuf = torch::empty({maximize ? STEP_BLOCK : 1}, p.options());
    T* ps = sbuf.data_ptr<T>();
    T* pgn = gbuf.data_ptr<T>();
    for (int64_t b = b0; b < b1_; ++b) {
      const int64_t lo = b * STEP_BLOCK;
      const int64_t len = std::min(STEP_BLOCK, n - lo);
      T* m_ = pm + lo;
      T* v_ = pv + lo;
      const T* g_ = pg + lo;
      if (maximize) {
        for (int64_t j = 0; j < len; ++j) pgn[j] = -g_[j];
        g_ = pgn;
      }
      for (int64_t j = 0; j < len; ++j) {
        T gj = g_[j];
        m_[j] = std::fma(lw, gj - m_[j], m_[j]);
        v_[j] = std::fma(c2 * gj, gj, v_[j] * tb2);
      }
      auto sb = sbuf.narrow(0, 0, len);
      at::sqrt_out(sb, torch::from_blob(v_, {len}, p.options()));
      step_block<T, SUMS, TIED>(pp + lo, m_, v_, g_, TIED ? nullptr : pw + lo, ps, len, bc2s,
                                teps, ns, T(1 - b2), k, alpha, epsc, &part[8 * b]);
    }
  });
  for (int64_t b = 0; b < nb; ++b)
    for (int a = 0; a < 8; ++a) total[a] += part[8 * b + a];
}

template <typename T>
void step_list(const std::vector<torch::Tensor>& ps, const std::vector<torch::Tensor>& ms,
               const std::vector<torch::Tensor>& vs, const std::vector<torch::Tensor>& gs,
               const std::vector<torch::Tensor>& ws, double lr, double b1, double b2, double eps,
               double step, bool maximize, bool tied, bool sums, double k, double alpha,
               double epsc, double* total) {
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto& w = tied ? ms[i] : ws[i];
    if (sums && tied)
      step_one<T, true, true>(ps[i], ms[i], vs[i], gs[i], w, lr, b1, b2, eps, step, maximize, k, alpha, epsc, total);
    else if (sums)
      step_one<T, true, false>(ps[i], ms[i], vs[i], gs[i], w, lr, b1, b2, eps, step, maximize, k, alpha, epsc, total);
    else if (tied)
      step_one<T, false, true>(ps[i], ms[i], vs[i], gs[i], w, lr, b1, b2, eps, step, maximize, k, alpha, epsc, total);
    else
      step_one<T, false, false>(ps[i], ms[i], vs[i], gs[i], w, lr, b1, b2, eps, step, maximize, k, alpha, epsc, total);
  }
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
  check_out(out);
  double total[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (m.scalar_type() == torch::kFloat64) {
    run<double>(m, v, w, g, k, alpha, epsc, lerp, tied, total);
  } else if (m.scalar_type() == torch::kFloat32) {
    run<float>(m, v, w, g, k, alpha, epsc, lerp, tied, total);
  } else {
    TORCH_CHECK(false, "adam_sums: float32 or float64 only");
  }
  double* po = out.data_ptr<double>();
  for (int a = 0; a < 8; ++a) po[a] = total[a];
}

// The two roots the sweep uses for every entry of v (float32 or float64, contiguous, CPU), as
// roots_exact computes them in block_sums: for tests of the declared error bound.
template <typename T>
void roots_of(const torch::Tensor& v, double epsc, torch::Tensor& A, torch::Tensor& iD) {
  const T* pv = v.data_ptr<T>();
  T* pa = A.data_ptr<T>();
  T* pd = iD.data_ptr<T>();
  const T tiny = std::numeric_limits<T>::min();
  for (int64_t j = 0; j < v.numel(); ++j) roots_exact<T>(pv[j], tiny, epsc > 0.0, T(epsc), pa[j], pd[j]);
}

void adam_roots(torch::Tensor v, double epsc, torch::Tensor A, torch::Tensor iD) {
  TORCH_CHECK(v.device().is_cpu() && v.is_contiguous() && A.is_contiguous() &&
              iD.is_contiguous() && A.scalar_type() == v.scalar_type() &&
              iD.scalar_type() == v.scalar_type() && A.numel() == v.numel() &&
              iD.numel() == v.numel(),
              "adam_roots: contiguous CPU tensors of one dtype and size");
  if (v.scalar_type() == torch::kFloat32) {
    roots_of<float>(v, epsc, A, iD);
  } else {
    TORCH_CHECK(v.scalar_type() == torch::kFloat64, "adam_roots: float32 or float64 only");
    roots_of<double>(v, epsc, A, iD);
  }
}

// The sums of several tensors that share the constants (one parameter group at one step), added
// tensor by tensor in list order into out[:8]: one call per group instead of one per tensor.
// Returns false, touching nothing, unless every tensor is a contiguous CPU tensor of the first
// m's dtype (float32 or float64) and each (m, v, w, g) has one size.
bool adam_sums_many(std::vector<torch::Tensor> ms, std::vector<torch::Tensor> vs,
                    std::vector<torch::Tensor> ws, std::vector<torch::Tensor> gs, double k,
                    double alpha, double epsc, double lerp, bool tied, torch::Tensor out) {
  const size_t n = ms.size();
  TORCH_CHECK(vs.size() == n && ws.size() == n && gs.size() == n,
              "adam_sums_many: lists of one length");
  check_out(out);
  if (n == 0) return false;
  const auto dt = ms[0].scalar_type();
  if (dt != torch::kFloat64 && dt != torch::kFloat32) return false;
  for (size_t i = 0; i < n; ++i) {
    const int64_t len = ms[i].numel();
    if (!fits(ms[i], dt, len) || !fits(vs[i], dt, len) || !fits(gs[i], dt, len) ||
        (!tied && !fits(ws[i], dt, len)))
      return false;
  }
  double total[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    if (dt == torch::kFloat64) {
      run<double>(ms[i], vs[i], ws[i], gs[i], k, alpha, epsc, lerp, tied, total);
    } else {
      run<float>(ms[i], vs[i], ws[i], gs[i], k, alpha, epsc, lerp, tied, total);
    }
  }
  double* po = out.data_ptr<double>();
  for (int a = 0; a < 8; ++a) po[a] = total[a];
  return true;
}

// The fused step over a parameter group (see step_block): every tensor checked first; false,
// touching nothing, unless all are contiguous CPU tensors of the first p's dtype (float32 or
// float64) with matching sizes. The sums (when asked) are added in list order into out[:8].
bool adam_step_many(std::vector<torch::Tensor> ps, std::vector<torch::Tensor> ms,
                    std::vector<torch::Tensor> vs, std::vector<torch::Tensor> gs,
                    std::vector<torch::Tensor> ws, double lr, double b1, double b2, double eps,
                    double step, bool maximize, bool tied, bool sums, double k, double alpha,
                    double epsc, torch::Tensor out) {
  const size_t n = ps.size();
  TORCH_CHECK(ms.size() == n && vs.size() == n && gs.size() == n && ws.size() == n,
              "adam_step_many: lists of one length");
  check_out(out);
  if (n == 0) return false;
  const auto dt = ps[0].scalar_type();
  if (dt != torch::kFloat64 && dt != torch::kFloat32) return false;
  for (size_t i = 0; i < n; ++i) {
    const int64_t len = ps[i].numel();
    if (!fits(ps[i], dt, len) || !fits(ms[i], dt, len) || !fits(vs[i], dt, len) ||
        !fits(gs[i], dt, len) || (!tied && !fits(ws[i], dt, len)))
      return false;
  }
  at::NoGradGuard no_grad;
  double total[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (dt == torch::kFloat64) {
    step_list<double>(ps, ms, vs, gs, ws, lr, b1, b2, eps, step, maximize, tied, sums, k, alpha, epsc, total);
  } else {
    step_list<float>(ps, ms, vs, gs, ws, lr, b1, b2, eps, step, maximize, tied, sums, k, alpha, epsc, total);
  }
  double* po = out.data_ptr<double>();
  for (int a = 0; a < 8; ++a) po[a] = total[a];
  return true;
}
"""

BUILD_TIME = "about 30 s of CPU time: 2 minutes at a load of 15 on two cores, longer under more"
"""How long the one build takes (g++ at -O3 on one translation unit), as measured on 2026-12-06:
31 s of CPU time, 118 s of wall time at a load average of 15 on two cores."""
NOT_BUILT = (
    "not built on this machine yet; AdamRecorder(..., backend='native') builds it once "
    f"({BUILD_TIME})"
)
_MODULE = None
_TRIED = False
_ERROR: str | None = None
_LOGGED = False
DTYPES = (torch.float32, torch.float64)
# Instruction sets by torch's own CPU capability (part of the cached library's name). The
# kernel is bound by vector sqrt/div throughput, so full-width AVX-512 halves its cost.
_ISA = {
    "AVX2": ["-mavx2", "-mfma"],
    "AVX512": [
        "-mavx2",
        "-mfma",
        "-mavx512f",
        "-mavx512dq",
        "-mavx512vl",
        "-mavx512bw",
        "-mprefer-vector-width=512",
    ],
}


def _flags() -> list[str]:
    isa = _ISA.get(torch.backends.cpu.get_cpu_capability(), [])
    # With torch's OpenMP backend, at::parallel_for is inline OpenMP: compile it as such. Not
    # linking libgomp, the GOMP symbols resolve to the runtime torch already loaded, so the
    # kernel shares torch's thread pool instead of starting a second one.
    omp = ["-fopenmp"] if "parallel backend: OpenMP" in torch.__config__.parallel_info() else []
    return ["-O3", "-fno-math-errno", "-fopenmp-simd", "-fno-trapping-math", *omp, *isa]


def _library_name(flags: list[str]) -> str:
    """A name that changes with everything the binary depends on (source, flags, torch, Python)."""
    key = "\0".join([_SOURCE, *flags, torch.__version__, sys.version, platform.machine()])
    return "gaugedyn_adam_native_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _summary(exc: BaseException) -> str:
    """The exception's type and the last line of its message (a compiler's verdict)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"


def _import(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module {name!r} at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _exclusive(path: Path):
    """An advisory lock that the kernel releases when its holder dies (no stale lock files)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): concurrent builds are still safe, just duplicated
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build():
    """Import the cached library, or compile it in a private folder and publish it atomically.

    torch's own build cache guards its folder with a lock *file*, which a build killed midway
    leaves behind, and every later build then waits on it forever. Here the build runs in a
    fresh temporary folder, a finished library is moved into place with ``os.replace``, and
    concurrent builders serialise on ``flock`` (released by the kernel if a builder dies). A
    failed build leaves ``<name>.failed`` with its error, so later processes fall back at once
    instead of failing the same build again; deleting it retries.
    """
    from torch.utils.cpp_extension import get_default_build_root, load_inline

    flags = _flags()
    name = _library_name(flags)
    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()) / "gaugedyn"
    ext = ".pyd" if os.name == "nt" else ".so"  # what load_inline writes
    lib = root / f"{name}{ext}"
    failed = root / f"{name}.failed"
    if lib.exists():
        return _import(name, lib)
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive(root / f"{name}.lock"):
        if lib.exists():  # built by another process while we waited
            return _import(name, lib)
        if failed.exists():  # do not pay a failing build in every process
            raise RuntimeError(
                f"an earlier build failed; delete {failed} to retry: {failed.read_text().strip()}"
            )
        for old in root.glob(f"{name}.build-*"):  # left by a killed build
            shutil.rmtree(old, ignore_errors=True)
        # said on stderr, not logged: a silent pause of tens of seconds looks like a hang
        print(
            f"gaugedyn: compiling the Adam recorder's native kernel (once per machine: "
            f"{BUILD_TIME}; cached as {lib}) ...",
            file=sys.stderr,
            flush=True,
        )
        started = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}.build-", dir=root))
        path = os.environ.get("PATH", "")
        bindir = os.path.dirname(sys.executable)
        if shutil.which("ninja") is None and os.path.exists(os.path.join(bindir, "ninja")):
            os.environ["PATH"] = bindir + os.pathsep + path
        try:
            module = load_inline(
                name=name,
                cpp_sources=[_SOURCE],
                functions=["adam_sums", "adam_sums_many", "adam_step_many", "adam_roots"],
                extra_cflags=flags,
                build_directory=str(tmp),
                verbose=False,
            )
            os.replace(tmp / f"{name}{ext}", lib)
        except Exception as exc:
            failed.write_text(_summary(exc) + "\n")
            print(
                "gaugedyn: compiling the native kernel failed; the recorder uses its eager "
                f"sums ({_summary(exc)})",
                file=sys.stderr,
                flush=True,
            )
            raise
        finally:
            os.environ["PATH"] = path
            shutil.rmtree(tmp, ignore_errors=True)
        print(
            f"gaugedyn: compiled the native kernel in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return module


def _have_ninja() -> bool:
    bindir = os.path.dirname(sys.executable)
    return shutil.which("ninja") is not None or os.path.exists(os.path.join(bindir, "ninja"))


def _cached() -> bool:
    from torch.utils.cpp_extension import get_default_build_root

    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()) / "gaugedyn"
    return (root / f"{_library_name(_flags())}{'.pyd' if os.name == 'nt' else '.so'}").exists()


def load(build: bool = True):
    """The compiled extension module, or ``None`` when it cannot be built (logged once),
    ``GAUGEDYN_NATIVE=0`` is set, ``ninja`` (the optional extra ``gaugedyn[native]``) is
    absent and no library is cached, or (``build=False``) it is not built on this machine yet:
    then nothing is compiled, and a later ``load()`` still may."""
    global _MODULE, _TRIED, _ERROR
    if not _TRIED:
        if os.environ.get("GAUGEDYN_NATIVE", "1").strip() == "0":
            _TRIED = True
            _ERROR = "disabled by GAUGEDYN_NATIVE=0"
            return None
        if not build and not _cached():
            _ERROR = NOT_BUILT
            return None
        _TRIED = True
        if not _have_ninja() and not _cached():
            _ERROR = "ninja is not installed (pip install 'gaugedyn[native]')"
            _log.info("gaugedyn.adam native kernel not built: %s", _ERROR)
            return None
        try:
            _MODULE = _build()
        except Exception as exc:  # any build failure means: use the eager path
            _ERROR = _summary(exc)
            log_fallback()
    return _MODULE


BACKENDS: tuple[str, ...] = ("eager", "native", "auto")


def resolve_backend(backend: str, compile: bool, tensors) -> tuple[str, object]:
    """The one place where the recorder's backend is chosen: ``(name, this module or None)``.

    ``compile=True`` wins (``"compile"``); ``"eager"`` never builds; ``"auto"`` (the default)
    uses the native kernel when one of ``tensors`` is a float32/float64 CPU tensor and the kernel
    is already built on this machine (it never starts a build), else eager without a word;
    ``"native"`` asks for it regardless, builds it if need be (saying so on stderr) and logs
    once when it is unavailable.
    """
    if compile:
        return "compile", None
    if backend == "eager":
        return "eager", None
    cpu = any(t.device.type == "cpu" and t.dtype in DTYPES for t in tensors)
    if (cpu or backend == "native") and available(build=backend == "native"):
        return "native", sys.modules[__name__]
    if backend == "native":
        log_fallback()
    return "eager", None


def log_fallback() -> None:
    """Log (once per process) that the native kernel is unavailable."""
    global _LOGGED
    if not _LOGGED:
        _LOGGED = True
        _log.warning("gaugedyn.adam native kernel unavailable, using eager sums (%s)", _ERROR)


def available(build: bool = True) -> bool:
    """Whether the native kernel is usable (with ``build``, built on first call if need be)."""
    return load(build) is not None


def eligible(*tensors: torch.Tensor) -> bool:
    """True when all tensors are contiguous CPU tensors of one float32/float64 dtype."""
    dt = tensors[0].dtype
    return dt in DTYPES and all(
        t.device.type == "cpu" and t.dtype == dt and t.is_contiguous() for t in tensors
    )


def adam_sums(
    m,
    v,
    w,
    g,
    k: float,
    alpha: float,
    epsc: float,
    lerp: float | None,
    tied: bool,
    out: torch.Tensor,
) -> None:
    """Write the eight unscaled sums into ``out[:8]`` (float64); update ``w`` first when ``lerp``
    is a weight (``w <- lerp(w, g, lerp)``, as ``torch.lerp``). ``tied``: ``w`` is ``m``."""
    load().adam_sums(
        m,
        v,
        w,
        g,
        float(k),
        float(alpha),
        float(epsc),
        -1.0 if lerp is None else float(lerp),
        bool(tied),
        out,
    )


def adam_roots(v: torch.Tensor, epsc: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The two per-entry roots the sweep computes for ``v`` (contiguous float32/float64 CPU),
    by the kernel's own code (``roots_exact``): ``A = 1/sqrt(max(v, tiny))`` and ``iD = 1/(v A +
    epsc)`` (``max(v, tiny) A`` when ``epsc = 0``), a square root and two divisions per entry,
    in the tensors' dtype. For the test of ``ROOT_BOUNDS`` (and for checking it on a machine
    whose compiler or ``libm`` one doubts)."""
    A, iD = torch.empty_like(v), torch.empty_like(v)
    load().adam_roots(v, float(epsc), A, iD)
    return A, iD


ROOT_BOUNDS: dict[str, float] = {"A": 1.0, "iD": 2.0}
"""The sweep's roots' relative error bounds in epsilons of the tensors' dtype (``2**-23`` for
float32, ``2**-52`` for float64), against the exact ``A* = 1/sqrt(max(v, tiny))`` and
``iD* = 1/(v A* + eps c)``: each operation correctly rounded gives at most 1.5 and 3 units in
the last place (half an epsilon each); measured (2026-12-07) 1.5 and 2.7. The recorder's sums
are these entries' products and squares added in the dtype within blocks of 2,048 entries, so
their error is dominated by the block sums' rounding, not the roots'."""


def adam_sums_many(
    ms: list,
    vs: list,
    ws: list,
    gs: list,
    k: float,
    alpha: float,
    epsc: float,
    lerp: float | None,
    tied: bool,
    out: torch.Tensor,
) -> bool:
    """`adam_sums()` over several tensors that share the constants (a parameter group at one
    step) in one call: their sums added in list order into ``out[:8]``, each ``w`` updated in its
    own sweep. Returns ``False``, touching nothing, unless every tensor is eligible
    (`eligible()`, one dtype for all); the caller then takes the per-tensor path. ``ws`` is
    ignored when ``tied`` (pass ``ms``)."""
    return bool(
        load().adam_sums_many(
            ms,
            vs,
            ws,
            gs,
            float(k),
            float(alpha),
            float(epsc),
            -1.0 if lerp is None else float(lerp),
            bool(tied),
            out,
        )
    )


def adam_step_many(
    ps: list,
    ms: list,
    vs: list,
    gs: list,
    ws: list,
    lr: float,
    b1: float,
    b2: float,
    eps: float,
    step: float,
    maximize: bool,
    tied: bool,
    sums: bool,
    k: float,
    alpha: float,
    epsc: float,
    out: torch.Tensor,
) -> bool:
    """The fused step over a parameter group: each parameter's Adam update at ``step`` (the
    count after it) as ``torch.optim.Adam``'s single-tensor path writes it (``p``, ``m``, ``v`` in
    place; the square root by torch's own ``sqrt``), ``w`` lerped and, with ``sums``, the eight
    sums of `adam_sums()` added into ``out[:8]``, block by block in one sweep. ``False``,
    touching nothing, unless every tensor is eligible (`eligible()`, one dtype); ``ws`` is
    ignored when ``tied`` (pass ``ms``)."""
    return bool(
        load().adam_step_many(
            ps,
            ms,
            vs,
            gs,
            ws,
            float(lr),
            float(b1),
            float(b2),
            float(eps),
            float(step),
            bool(maximize),
            bool(tied),
            bool(sums),
            float(k),
            float(alpha),
            float(epsc),
            out,
        )
    )
