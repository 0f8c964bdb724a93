// Launcher of the W4A16 tensor-core decode kernels (w4a16_gemv.cuh): support checks, the automatic
// launch config, and the dispatch over the compiled instances (ring kernel: dtype, WR, WK, S, ST, NT;
// register kernel: dtype, R, U, NT, PF, both in w4a16_ring_<dtype>.cu; bulk ring kernel: the ring's
// digits + 10000, in w4a16_bulk_<dtype>.cu; sub-group kernel: here).
#include "w4a16_params.cuh"
#include "w4a16_tma.cuh"
#include "w4a16_xs.cuh"
#include "device_attrs.h"

namespace qlinear {
namespace {

using w4a16g::FKind;
using w4a16g::Params;

using devattr::cc_major;
using devattr::sm_count;
using devattr::smem_optin;

bool sub_group(const W4GemvArgs& a) {
  return a.num_groups > 1 && (a.group_size == 16 || a.group_size == 32 || a.group_size == 64);
}

// Register-kernel code of a config: R U NT PF as decimal digits (w4a16g::kRegCodes); pipe 3 (the
// x-staged kernel): R U NT 3 (w4a16g::kXsCodes). pipe 2 (chunks dealt round-robin over the warps) runs
// the single-buffered (pipe 0) instance.
int reg_code(int nt, int r, int u, int pipe) {
  return r * 1000 + u * 100 + nt * 10 + (pipe == 3 ? 3 : (pipe == 1 ? 1 : 0));
}

bool is_xs(int pipe) { return pipe == 3; }

bool reg_compiled(int code, int fold) {
  if (code % 10 == 3) return code_listed(w4a16g::kXsCodes, code);  // both folds compiled
  if (fold != 0) return code_listed(w4a16g::kRegFoldCodes, code);
  return code_listed(w4a16g::kRegCodes, code);
}

int max_warps(int nt, int r, int u, int pipe, bool sub) {
  if (sub) return (nt == 1 ? w4a16g::max_threads<1, 2, 1>() : w4a16g::max_threads<1, 2, 2>()) / 32;
  if (is_xs(pipe)) return w4a16g::xs_code_threads(reg_code(nt, r, u, pipe)) / 32;
  return w4a16g::reg_code_threads(reg_code(nt, r, u, pipe)) / 32;
}

FKind fkind(W4GDType d) {
  return d == W4GDType::kFloat16 ? FKind::kFloat16 : (d == W4GDType::kBFloat16 ? FKind::kBFloat16 : FKind::kFloat32);
}

template <typename XT, int NT>
cudaError_t launch_sub(const Params& p, int warps, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.n + 15) / 16));
  const size_t smem = sizeof(float) * static_cast<size_t>(NT * 128 * warps);
  return w4a16g::launch_kernel(w4a16g::mma_gemv_kernel<XT, 1, 2, NT>, grid, dim3(32 * warps), smem, pdl, stream, p);
}

bool ring_ok(const W4GemvArgs& a) {
  return !sub_group(a) && a.n % 4 == 0 && reinterpret_cast<uintptr_t>(a.scales) % 4 == 0 &&
         reinterpret_cast<uintptr_t>(a.zeros) % 4 == 0;
}

// x rows 16-byte aligned: the pointer, and the row stride (% 8 elements) unless one row.
bool x_rows_aligned16(const W4GemvArgs& a) {
  return reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && (a.m <= 1 || a.x_stride % 8 == 0);
}

// 16-byte aligned operands for copy-engine kernels: sm_90, groups of >= 128 or per channel, N % 16 == 0
// (rows of 16 scales / zeros), x rows 16-byte aligned.
bool aligned16(const W4GemvArgs& a) {
  auto al16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return cc_major() >= 9 && !sub_group(a) && a.n % 16 == 0 && x_rows_aligned16(a) && al16(a.scales) &&
         al16(a.zeros);
}

// The x-staged kernel's copies (pipe 3): sm_90, groups of >= 128 or per channel, 16-byte copies of x
// rows (K % 8 == 0, 16-byte aligned x, row stride % 8 == 0 unless one row), one barrier per copy chunk.
bool xs_ok(const W4GemvArgs& a) {
  return cc_major() >= 9 && !sub_group(a) && a.k % 8 == 0 && w4a16g::xs_chunks(a.k) <= w4a16g::kXsBars &&
         x_rows_aligned16(a);
}

// The TMA ring kernel's tensor maps: aligned16 and 16-bit scales. K needs nothing: columns past K land as
// zeros.
bool tma_ok(const W4GemvArgs& a) { return a.scale_dtype != W4GDType::kFloat32 && aligned16(a); }

// The bulk ring kernel's cp.async.bulk copies: aligned16 and whole superblocks of x (16-byte sizes:
// K % 128 == 0).
bool bulk_ok(const W4GemvArgs& a) { return a.k % 128 == 0 && aligned16(a); }

// kOk when the kernel family of ring `code` (cp.async ring, bulk >= 10000, TMA >= 20000) can take these
// operands, else that family's refusal.
W4GemvSupport ring_family_support(const W4GemvArgs& a, int code) {
  if (code >= 20000) return tma_ok(a) ? W4GemvSupport::kOk : W4GemvSupport::kNoTma;
  if (code >= 10000) return bulk_ok(a) ? W4GemvSupport::kOk : W4GemvSupport::kNoBulk;
  return ring_ok(a) ? W4GemvSupport::kOk : W4GemvSupport::kNoRing;
}

bool ring_compiled(int nt, int code) {
  using namespace w4a16g;
  if (code >= 20000) return nt == 1 ? code_listed(kTmaNT1, code) : code_listed(kTmaNT2, code);
  if (code >= 10000) return nt == 1 ? code_listed(kBulkNT1, code) : code_listed(kBulkNT2, code);
  return nt == 1 ? code_listed(kRingNT1, code) : code_listed(kRingNT2, code);
}

// Automatic ring shape. Round-1 data (H200): the grid must fill 132 SMs with enough cp.async
// bytes in flight; one 16-row tile per CTA while the tiles number about one wave (2112x7168:
// 132 tiles -> 8 K warps), 4 K warps for more tiles (7168x16384: 448), 64 rows per CTA when a row
// is short (24576x1536: 12 superblocks, one stage of 4 per warp).

int auto_ring(int nt, int64_t n, int64_t nsb, int sms) {
  const int64_t tiles = (n + 15) / 16;
  if (nt == 1) {
    if (nsb <= 16) return 4143;
    return tiles * 2 <= 3LL * sms ? 1824 : 1424;
  }
  if (nsb <= 16) return 4124;
  return tiles * 2 <= 3LL * sms ? 1414 : 2224;
}

}  // namespace

W4GemvConfig w4_gemv_resolve(const W4GemvArgs& a, const W4GemvConfig& cfg) {
  W4GemvConfig c = cfg;
  const int nt = a.m > 8 ? 2 : 1;
  const int sms = sm_count();
  const int64_t row_tiles = (a.n + 15) / 16;
  const int64_t nsb = (a.k + 127) / 128;
  // Auto: round 3's register kernel, except short rows at M <= 8 (nsb <= 16, e.g. 24576x1536:
  // round 2 ring 4143 12.7 us / 4124 14.7 us at M = 1 / 4 vs the register kernel's 21.9 / 19.1).
  // (the zero fold exists in the register kernel only: asking for it picks that kernel)
  // (an explicit pipe 3, the x-staged kernel, also picks the register family)
  if (c.ring == 0)
    c.ring = (c.fold == 0 && !is_xs(c.pipe) && ring_ok(a) && nt == 1 && nsb <= 16) ? auto_ring(nt, a.n, nsb, sms) : -1;
  if (c.pdl > 0 && cc_major() < 9) c.pdl = 0;
  if (c.ring > 0) {
    c.row_tiles = c.chunk = 0;
    // TMA ring: its consumer warps and the producer
    c.warps = c.ring >= 20000 ? w4a16g::tma_warps(c.ring) : ((c.ring % 10000) / 1000) * ((c.ring / 100) % 10);
    return c;
  }
  if (sub_group(a)) {
    c.row_tiles = 1;
    c.chunk = 2;
    c.pipe = 0;
  } else if (c.row_tiles <= 0 || c.chunk <= 0) {
    // Round-2 H200 data (old instruction mix): few row tiles -> one per CTA, 16 warps over K
    // (R1 U2 W16 best at 2112x7168); many -> 4 tiles sharing x (R4 U1 W8 at 7168x16384, W4 at
    // 24576x1536); M > 8: R2 U1 (W4-W8). Retune from the round-3 ladder / sweep.
    if (nt == 1) {
      if (row_tiles <= 2 * sms) {
        c.row_tiles = 1, c.chunk = 2;
      } else {
        c.row_tiles = 4, c.chunk = 1;
      }
    } else {
      c.row_tiles = 2, c.chunk = 1;
    }
    c.pipe = 0;
  }
  if (c.warps <= 0 && is_xs(c.pipe)) {  // (groups under 128 ran pipe 0 above)
    // the x-staged kernel's warps split the rows: about two CTAs per SM
    const int64_t w = (row_tiles + 2LL * sms * c.row_tiles - 1) / (2LL * sms * c.row_tiles);
    const int wmax = max_warps(nt, c.row_tiles, c.chunk, c.pipe, false);
    c.warps = static_cast<int>(w < 1 ? 1 : (w > wmax ? wmax : w));
  }
  if (c.warps <= 0) {
    // about 16 resident warps per SM over the grid, at least one chunk of superblocks per warp
    const int64_t ctas = (row_tiles + c.row_tiles - 1) / c.row_tiles;
    int64_t w = (16LL * sms + ctas - 1) / ctas;
    const int64_t cap = nsb / c.chunk > 0 ? nsb / c.chunk : 1;
    w = w < cap ? w : cap;
    const int wmax = max_warps(nt, c.row_tiles, c.chunk, c.pipe, sub_group(a));
    c.warps = static_cast<int>(w < 1 ? 1 : (w > wmax ? wmax : w));
  }
  if (c.pdl > 0 && cc_major() < 9) c.pdl = 0;
  return c;
}

W4GemvSupport w4_gemv_supported(const W4GemvArgs& a, const W4GemvConfig& cfg) {
  if (a.m < 1 || a.m > 16) return W4GemvSupport::kBadM;
  if (a.x_dtype != W4GDType::kFloat16 && a.x_dtype != W4GDType::kBFloat16) return W4GemvSupport::kBadDtype;
  if (a.k < 1 || a.k % 4 != 0) return W4GemvSupport::kBadK;
  // K < 2^22: group_of_sb's multiply-shift division is exact (sb * sb_per_group < 2^31)
  if (a.n < 1 || a.n >= (int64_t{1} << 31) || a.k >= (int64_t{1} << 22)) return W4GemvSupport::kTooLarge;
  const bool per_channel = a.num_groups == 1;
  if (!per_channel) {
    const bool ok = sub_group(a) || (a.group_size > 0 && a.group_size % 128 == 0);
    if (!ok || a.group_size * a.num_groups != a.k) return W4GemvSupport::kBadGroup;
  }
  if (reinterpret_cast<uintptr_t>(a.x) % 8 != 0 || (a.m > 1 && a.x_stride % 4 != 0) ||
      reinterpret_cast<uintptr_t>(a.qweight) % 16 != 0 || a.qw_stride % 4 != 0)
    return W4GemvSupport::kMisaligned;
  const W4GemvConfig c = w4_gemv_resolve(a, cfg);
  const int nt = a.m > 8 ? 2 : 1;
  if (c.fold < 0 || c.fold > 1 || (c.fold != 0 && (c.ring > 0 || sub_group(a)))) return W4GemvSupport::kBadConfig;
  if (c.ring <= 0 && (c.pipe < 0 || c.pipe > 3)) return W4GemvSupport::kBadConfig;
  if (c.ring > 0) {
    const W4GemvSupport family = ring_family_support(a, c.ring);
    if (family != W4GemvSupport::kOk) return family;
    if (!ring_compiled(nt, c.ring)) return W4GemvSupport::kBadConfig;
    // refused here rather than failing in cudaFuncSetAttribute / the launch (cudaErrorInvalidValue)
    if (w4_ring_smem_bytes(c.ring, a.m) > static_cast<size_t>(smem_optin())) return W4GemvSupport::kTooMuchSmem;
    return W4GemvSupport::kOk;
  }
  const bool sub = sub_group(a);
  if (sub ? (c.row_tiles != 1 || c.chunk != 2) : !reg_compiled(reg_code(nt, c.row_tiles, c.chunk, c.pipe), c.fold))
    return W4GemvSupport::kBadConfig;
  if (c.warps < 1 || c.warps > max_warps(nt, c.row_tiles, c.chunk, c.pipe, sub)) return W4GemvSupport::kBadConfig;
  if (is_xs(c.pipe)) {  // (resolve gives groups under 128 pipe 0)
    if (!xs_ok(a)) return W4GemvSupport::kNoXs;
    if (w4a16g::xs_smem_bytes(a.m, a.k) > static_cast<int64_t>(smem_optin())) return W4GemvSupport::kTooMuchSmem;
  }
  return W4GemvSupport::kOk;
}

const char* w4_gemv_support_reason(W4GemvSupport s) {
  switch (s) {
    case W4GemvSupport::kOk: return "supported";
    case W4GemvSupport::kBadM: return "M must be 1..16";
    case W4GemvSupport::kBadDtype: return "x must be float16 or bfloat16";
    case W4GemvSupport::kBadK: return "K must be a positive multiple of 4";
    case W4GemvSupport::kBadGroup: return "group size must be 16, 32, 64, a multiple of 128 or K";
    case W4GemvSupport::kMisaligned:
      return "x must be 8-byte aligned with row stride % 4 == 0, qweight 16-byte aligned with row stride % 4 == 0";
    case W4GemvSupport::kBadConfig:
      return "config / ring code not compiled for this token-tile count (M <= 8 / M <= 16) (with fold: not in "
             "w4a16_reg_fold_configs), warps out of range, fold not 0 / 1, with a ring code or groups < 128, or pipe "
             "not 0 / 1 / 2";
    case W4GemvSupport::kTooLarge: return "N must be < 2^31 and K < 2^22";
    case W4GemvSupport::kNoRing:
      return "ring kernel needs groups >= 128 or per channel, N % 4 == 0, 4-byte aligned scales / zeros";
    case W4GemvSupport::kNoBulk:
      return "bulk ring kernel needs sm_90+, groups >= 128 or per channel, N % 16 == 0, K % 128 == 0, 16-byte "
             "aligned x / scales / zeros, x row stride % 8 == 0";
    case W4GemvSupport::kNoTma:
      return "TMA ring kernel needs sm_90+, groups >= 128 or per channel, fp16 / bf16 scales, N % 16 == 0, 16-byte "
             "aligned x / scales / zeros, x row stride % 8 == 0";
    case W4GemvSupport::kTooMuchSmem:
      return "ring code's (or the x-staged kernel's x rows') shared memory at this M exceeds the device's per-block "
             "opt-in limit";
    case W4GemvSupport::kNoXs:
      return "x-staged kernel (pipe 3) needs sm_90+, groups >= 128 or per channel, K % 8 == 0 and K <= 8192, "
             "16-byte aligned x with row stride % 8 == 0";
  }
  return "unknown";
}

size_t w4_ring_smem_bytes(int code, int64_t m) {
  if (code <= 0 || m < 1 || m > 16) return 0;
  const int nt = m > 8 ? 2 : 1;
  const int mb = static_cast<int>(m < 8 * nt ? m : 8 * nt);
  if (code >= 20000) return static_cast<size_t>(w4a16g::tma_smem_bytes(code, nt, mb));
  return w4a16g::ring_smem_bytes(code, nt, mb);
}

Params w4_params(const W4GemvArgs& a, int pdl_prefetch) {
  Params p{};
  p.out = a.out;
  p.x = a.x;
  p.qw = reinterpret_cast<const uint32_t*>(a.qweight);
  p.scales = a.scales;
  p.zeros = a.zeros;
  p.bias = a.bias;
  p.x_stride = a.x_stride;
  p.out_stride = a.out_stride;
  p.qw_stride = a.qw_stride;
  p.m = static_cast<int>(a.m);
  p.n = static_cast<int>(a.n);
  p.k = static_cast<int>(a.k);
  p.nsb = static_cast<int>((a.k + 127) / 128);
  p.group_size = static_cast<int>(a.group_size);
  p.num_groups = static_cast<int>(a.num_groups);
  p.sb_per_group = a.num_groups == 1 ? (1 << 30) : static_cast<int>(a.group_size / 128);
  p.grp_mul = w4a16g::group_mul(p.sb_per_group, a.num_groups == 1);
  p.scale_kind = fkind(a.scale_dtype);
  p.bias_kind = fkind(a.bias_dtype);
  p.pdl_prefetch = pdl_prefetch;
  return p;
}

namespace {
cudaError_t launch_impl(const W4GemvArgs& a, cudaStream_t stream, const W4GemvConfig& cfg, W4GemvConfig* used) {
  if (w4_gemv_supported(a, cfg) != W4GemvSupport::kOk) return cudaErrorInvalidValue;
  const W4GemvConfig c = w4_gemv_resolve(a, cfg);
  if (used != nullptr) *used = c;
  Params p = w4_params(a, c.pdl > 0 ? 1 : 0);
  p.sb_interleave = c.pipe == 2 ? 1 : 0;
  const int nt = a.m > 8 ? 2 : 1;
  if (c.ring >= 20000) {
    // instances and tensor maps live in w4a16_tma_launch.cu
    return a.x_dtype == W4GDType::kBFloat16 ? w4a16g::tma_dispatch_bf16(p, c.ring, nt, c.pdl > 0, stream)
                                            : w4a16g::tma_dispatch_f16(p, c.ring, nt, c.pdl > 0, stream);
  }
  if (c.ring >= 10000) {
    // instances live in w4a16_bulk_bf16.cu / w4a16_bulk_f16.cu
    return a.x_dtype == W4GDType::kBFloat16 ? w4a16g::bulk_dispatch_bf16(p, c.ring, nt, c.pdl > 0, stream)
                                            : w4a16g::bulk_dispatch_f16(p, c.ring, nt, c.pdl > 0, stream);
  }
  if (c.ring > 0) {
    // instances live in w4a16_ring_bf16.cu / w4a16_ring_f16.cu (parallel compiles)
    return a.x_dtype == W4GDType::kBFloat16 ? w4a16g::ring_dispatch_bf16(p, c.ring, nt, c.pdl > 0, stream)
                                            : w4a16g::ring_dispatch_f16(p, c.ring, nt, c.pdl > 0, stream);
  }
  const bool bf = a.x_dtype == W4GDType::kBFloat16;
  if (sub_group(a)) {
    if (nt == 1) return bf ? launch_sub<__nv_bfloat16, 1>(p, c.warps, c.pdl > 0, stream)
                           : launch_sub<__half, 1>(p, c.warps, c.pdl > 0, stream);
    return bf ? launch_sub<__nv_bfloat16, 2>(p, c.warps, c.pdl > 0, stream)
              : launch_sub<__half, 2>(p, c.warps, c.pdl > 0, stream);
  }
  const int code = reg_code(nt, c.row_tiles, c.chunk, c.pipe);
  if (is_xs(c.pipe))  // instances live in w4a16_xs.cu
    return bf ? w4a16g::xs_dispatch_bf16(p, code, c.warps, c.fold, c.pdl > 0, stream)
              : w4a16g::xs_dispatch_f16(p, code, c.warps, c.fold, c.pdl > 0, stream);
  if (c.fold != 0)
    return bf ? w4a16g::reg_fold_dispatch_bf16(p, code, c.warps, c.pdl > 0, stream)
              : w4a16g::reg_fold_dispatch_f16(p, code, c.warps, c.pdl > 0, stream);
  return bf ? w4a16g::reg_dispatch_bf16(p, code, c.warps, c.pdl > 0, stream)
            : w4a16g::reg_dispatch_f16(p, code, c.warps, c.pdl > 0, stream);
}

}  // namespace

cudaError_t w4_gemv_launch(const W4GemvArgs& a, cudaStream_t stream, W4GemvConfig cfg, W4GemvConfig* used) {
  const cudaError_t e = launch_impl(a, stream, cfg, used);
  // a failed cudaFuncSetAttribute / launch also sets the thread's last error, which the next
  // unrelated torch kernel check would report as its own: consume it here, the caller has it
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

int w4_ring_configs(int nt, int* codes, int cap) {
  using namespace w4a16g;
  if (nt == 1)
    return append_codes(kTmaNT1, codes, cap, append_codes(kBulkNT1, codes, cap, append_codes(kRingNT1, codes, cap, 0)));
  return append_codes(kTmaNT2, codes, cap, append_codes(kBulkNT2, codes, cap, append_codes(kRingNT2, codes, cap, 0)));
}

namespace w4a16g {
cudaError_t reg_fold_dispatch_bf16(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  return reg_fold_dispatch<__nv_bfloat16>(p, code, warps, pdl, s);
}
cudaError_t reg_fold_dispatch_f16(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  return reg_fold_dispatch<__half>(p, code, warps, pdl, s);
}
}  // namespace w4a16g

int w4_reg_configs(int* codes, int cap) { return append_codes(w4a16g::kRegCodes, codes, cap, 0); }

int w4_reg_fold_configs(int* codes, int cap) { return append_codes(w4a16g::kRegFoldCodes, codes, cap, 0); }

int w4_xs_configs(int* codes, int cap) { return append_codes(w4a16g::kXsCodes, codes, cap, 0); }

}  // namespace qlinear
