// Launcher of the FP8 block-scaled decode GEMM (fp8_gemv.cuh): support checks, the automatic
// config, and the dispatch over the compiled instances (dtype x NT x (R, PF)).
#include "fp8_gemv_dispatch.cuh"
#include "fp8_gemv_launch.h"
#include "fp8_tma.cuh"
#include "device_attrs.h"
#include "int_math.h"

namespace qlinear {
namespace fp8g {
QLINEAR_FP8G_LAUNCH_PQ(launch_quant, false)
}  // namespace fp8g

namespace {

using fp8g::Params;

int max_warps(int nt, int r, int pf, bool pq, bool xa) { return fp8g::max_threads(nt, r, pf, pq, xa) / 32; }

int64_t partial_words(const Fp8GemvArgs& a, const Fp8GemvConfig& c) {
  const int nt = a.m > 8 ? 2 : 1;
  return cdiv64(cdiv64(a.n, 16), c.r) * c.splits * c.r * nt * 128;
}

int tma_key(const Fp8GemvConfig& c) { return c.r * 1000 + c.splits * 100 + c.pf * 10 + c.warps; }

// The TMA ring kernel's own conditions (after the common ones): pre-quantized x, sm_90, a
// compiled shape, and scale rows that its tensor maps can describe (contiguous, 16-byte multiples and
// addresses; a single row any length).
Fp8GemvSupport tma_supported(const Fp8GemvArgs& a, const Fp8GemvConfig& c) {
  if (a.x_scales == nullptr || c.xa > 1 || devattr::cc_major() != 9 || c.splits > 9 || c.pf > 9 || c.warps > 9 ||
      !fp8g::tma_key_compiled(tma_key(c)))
    return Fp8GemvSupport::kBadConfig;
  const int64_t nblk = cdiv64(a.n, 128);
  if (a.xs_s1 != 1 || (a.m > 1 && a.xs_s0 % 4 != 0) || a.wsi_s1 != 1 || (nblk > 1 && a.wsi_s0 % 4 != 0) ||
      reinterpret_cast<uintptr_t>(a.x_scales) % 16 != 0 || reinterpret_cast<uintptr_t>(a.wsi) % 16 != 0)
    return Fp8GemvSupport::kMisaligned;
  return Fp8GemvSupport::kOk;
}

}  // namespace

Fp8GemvConfig fp8_gemv_decode(int64_t code) {
  Fp8GemvConfig c;
  if (code <= 0) return c;
  c.tma = static_cast<int>((code / 100000000) % 10);
  c.xa = static_cast<int>((code / 10000000) % 10);
  c.preq = static_cast<int>((code / 1000000) % 10);
  c.splits = static_cast<int>((code / 10000) % 100);
  c.r = static_cast<int>((code / 1000) % 10);
  c.pf = static_cast<int>((code / 100) % 10);
  c.warps = static_cast<int>(code % 100);
  return c;
}

int64_t fp8_gemv_encode(const Fp8GemvConfig& c) {
  return int64_t{c.tma} * 100000000 + int64_t{c.xa} * 10000000 + int64_t{c.preq} * 1000000 + int64_t{c.splits} * 10000 + c.r * 1000 +
         c.pf * 100 + c.warps;
}

// Automatic choice (zero fields of the code): R = 1 for m <= 4, 2 for m <= 8, 4 above (x is quantized
// once per CTA per k-block: more rows per CTA cut that work, which grows with m; pre-quantized x:
// R = 1); PF = 1 where compiled. Warps: about 16 resident warps per SM over the grid (8 for R = 4,
// register-bound), at least two k-blocks per warp; a tile group needing more warps than a CTA holds
// splits K over CTAs.
Fp8GemvConfig fp8_gemv_resolve(const Fp8GemvArgs& a, int64_t code) {
  Fp8GemvConfig c = fp8_gemv_decode(code);
  const bool pq = a.x_scales != nullptr;
  c.preq = pq ? 1 : 0;
  if (c.tma == 1) {
    // the shape key's digits; zero fields take the 7168x16384 shape's (fp8_tma.cuh)
    if (c.r <= 0) c.r = 2;
    if (c.splits <= 0) c.splits = 4;
    if (c.pf <= 0) c.pf = 4;
    if (c.warps <= 0) c.warps = 4;
    return c;
  }
  if (c.r <= 0) {
    c.r = c.xa || pq || a.m <= 4 ? 1 : (a.m <= 8 ? 2 : 4);
    c.pf = c.r <= 2 ? 1 : 0;
  }
  const int64_t kb = a.k / 128;
  const int64_t tgs = cdiv64(cdiv64(a.n, 16), c.r);
  const int wmax = max_warps(a.m > 8 ? 2 : 1, c.r, c.pf, pq, c.xa != 0);
  const int64_t target = static_cast<int64_t>(devattr::sm_count()) * (c.r >= 4 ? 8 : 16);
  int64_t wpt = cdiv64(target, tgs);
  const int64_t cap = kb / 2 > 0 ? kb / 2 : 1;
  wpt = wpt < cap ? wpt : cap;
  if (c.warps <= 0 && c.splits <= 0) {
    c.warps = static_cast<int>(wpt <= wmax ? wpt : wmax);
    c.splits = static_cast<int>(cdiv64(wpt, c.warps));
  } else if (c.warps <= 0) {
    const int64_t w = cdiv64(wpt, c.splits);
    c.warps = static_cast<int>(w < 1 ? 1 : (w > wmax ? wmax : w));
  } else if (c.splits <= 0) {
    c.splits = static_cast<int>(cdiv64(wpt, c.warps));
  }
  if (c.splits < 1) c.splits = 1;
  if (c.splits > kb) c.splits = static_cast<int>(kb);
  // no empty splits: S = cdiv(kb, cdiv(kb, S))
  c.splits = static_cast<int>(cdiv64(kb, cdiv64(kb, c.splits)));
  // an automatic split count shrinks to what the workspace holds
  if (fp8_gemv_decode(code).splits <= 0 && c.splits > 1) {
    const int64_t room = a.workspace_words - kFp8GemvCounters;
    while (c.splits > 1 && (tgs > kFp8GemvCounters || partial_words(a, c) > room)) {
      c.splits = static_cast<int>(cdiv64(kb, cdiv64(kb, c.splits - 1)));
    }
  }
  return c;
}

Fp8GemvSupport fp8_gemv_supported(const Fp8GemvArgs& a, int64_t code) {
  if (a.m < 1 || a.m > 16) return Fp8GemvSupport::kBadM;
  if (a.k < 128 || a.k % 128 != 0 || a.k >= (int64_t{1} << 24)) return Fp8GemvSupport::kBadK;
  if (a.n < 1 || a.n >= (int64_t{1} << 30)) return Fp8GemvSupport::kBadN;
  const bool pq = a.x_scales != nullptr;
  if (a.x == nullptr || a.weight == nullptr || a.wsi == nullptr) return Fp8GemvSupport::kBadPointer;
  if (reinterpret_cast<uintptr_t>(a.x) % 16 != 0 || (a.m > 1 && a.x_stride % (pq ? 16 : 8) != 0) ||
      reinterpret_cast<uintptr_t>(a.weight) % 16 != 0 || (a.n > 1 && a.w_stride % 16 != 0))
    return Fp8GemvSupport::kMisaligned;
  const Fp8GemvConfig c = fp8_gemv_resolve(a, code);
  const int q = fp8_gemv_decode(code).preq;  // as asked (resolve sets c.preq from the operands)
  if (code >= 200000000 || q > 1 || (q == 1 && !pq) || c.xa > 1)
    return Fp8GemvSupport::kBadConfig;
  if (c.tma == 1) return tma_supported(a, c);
  if (!fp8g::pair_compiled(c.r, c.pf, pq, c.xa != 0) || c.warps < 1 ||
      c.warps > max_warps(a.m > 8 ? 2 : 1, c.r, c.pf, pq, c.xa != 0) || c.splits < 1 || c.splits > 99)
    return Fp8GemvSupport::kBadConfig;
  if (c.splits > 1) {
    const int64_t tgs = cdiv64(cdiv64(a.n, 16), c.r);
    if (a.workspace == nullptr || tgs > kFp8GemvCounters ||
        partial_words(a, c) > a.workspace_words - kFp8GemvCounters)
      return Fp8GemvSupport::kWorkspace;
  }
  return Fp8GemvSupport::kOk;
}

int fp8_gemv_configs(int* codes, int cap) { return append_codes(fp8g::kPairs, codes, cap, 0); }

cudaError_t fp8_gemv_launch(const Fp8GemvArgs& a, cudaStream_t stream, int64_t code, bool pdl, Fp8GemvConfig* used) {
  if (fp8_gemv_supported(a, code) != Fp8GemvSupport::kOk) return cudaErrorInvalidValue;
  const Fp8GemvConfig c = fp8_gemv_resolve(a, code);
  if (used != nullptr) *used = c;
  const int64_t kb = a.k / 128;
  Params p{};
  p.out = a.out;
  p.out_stride = a.out_stride;
  p.x = a.x;
  p.x_stride = a.x_stride;
  p.w = a.weight;
  p.w_stride = a.w_stride;
  p.wsi = a.wsi;
  p.wsi_s0 = a.wsi_s0;
  p.wsi_s1 = a.wsi_s1;
  p.bias = a.bias;
  p.xs = a.x_scales;
  p.xs_s0 = a.xs_s0;
  p.xs_s1 = a.xs_s1;
  p.counters = a.workspace;
  p.ws = a.workspace != nullptr ? reinterpret_cast<float*>(a.workspace + kFp8GemvCounters) : nullptr;
  p.m = static_cast<int>(a.m);
  p.n = static_cast<int>(a.n);
  p.kb = static_cast<int>(kb);
  p.splits = c.splits;
  p.kb_per_split = static_cast<int>(cdiv64(kb, c.splits));
  p.scale_eps = a.scale_eps;
  p.carveout = a.carveout;
  const int tgs = static_cast<int>(cdiv64(cdiv64(a.n, 16), c.r));
  const bool use_pdl = pdl && devattr::cc_major() >= 9;
  const bool bf16 = a.dtype == Fp8GDType::kBFloat16, two = a.m > 8;
  const bool xa = c.xa != 0;
  if (c.tma == 1) {
    p.splits = 1;  // one CTA per row tile over the whole K: reduce_store sums the warps only
    p.kb_per_split = p.kb;
    return fp8g::launch_tma(p, bf16, tma_key(c), xa, use_pdl, stream);
  }
  if (a.x_scales != nullptr) return fp8g::launch_preq(p, bf16, two, c.r, c.pf, xa, c.warps, tgs, use_pdl, stream);
  return fp8g::launch_quant(p, bf16, two, c.r, c.pf, xa, c.warps, tgs, use_pdl, stream);
}

}  // namespace qlinear
