// Host launchers: validate sizes, choose between the 16-byte register kernel and the generic
// kernel, pick threads per row / rows per block, and launch on the given stream.
// The one translation unit holding every kernel instantiation (3 dtypes x {vec NV=1,2,4,8,
// generic} x {plain, fused}) so a first build stays short.
#include "norm.cuh"
#include "norm_launch.h"

namespace qlinear {
namespace {

using norm::Rows;

int pow2_ceil_log2(int64_t v) {
  int l = 0;
  while ((int64_t{1} << l) < v) ++l;
  return l;
}

int sm_count() {
  // Cached per device: cudaDeviceGetAttribute is cheap but not free on the latency path.
  static int cache[64] = {0};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 132;
  if (cache[dev] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    cache[dev] = n;
  }
  return cache[dev];
}

size_t elem_size(NormDType t) { return t == NormDType::kFloat32 ? 4 : 2; }

bool aligned16(const NormOperand& o, int64_t n_outer, int64_t n_inner, size_t es) {
  if (reinterpret_cast<uintptr_t>(o.ptr) % 16 != 0) return false;
  if (n_outer > 1 && (o.s0 * static_cast<int64_t>(es)) % 16 != 0) return false;
  if (n_inner > 1 && (o.s1 * static_cast<int64_t>(es)) % 16 != 0) return false;
  return true;
}

struct Plan {
  int nv;        // vectors per thread; 0 = generic kernel
  int tpr_log2;  // threads per row = 1 << tpr_log2
  int rows_per_block;
};

// Short rows: sub-warp groups and several rows per 256-thread block (a warp per row would leave
// most lanes idle for H = 512). Long rows: one row per block, the row held in registers.
// Few rows (latency regime, n_rows <= SMs): one vector per thread so the row is spread over as
// many threads as possible and the single load round trip dominates.
Plan make_plan(bool vec_ok, int64_t n_rows, int64_t hidden, size_t es, const NormConfig& cfg) {
  Plan p{0, 0, 1};
  const int sms = sm_count();
  const bool few_rows = n_rows <= sms;
  const int64_t vw = static_cast<int64_t>(16 / es);
  bool use_vec = vec_ok && cfg.vecs_per_thread != -1 && hidden % vw == 0;
  if (use_vec) {
    const int64_t nvec = hidden / vw;
    int nv = cfg.vecs_per_thread > 0 ? cfg.vecs_per_thread : (few_rows ? 1 : 4);
    if (cfg.vecs_per_thread <= 0)
      while (nv > 1 && nv > nvec) nv >>= 1;
    int tl = pow2_ceil_log2((nvec + nv - 1) / nv);
    if (cfg.vecs_per_thread <= 0)
      while (tl > 10 && nv < 8) {
        nv <<= 1;
        tl = pow2_ceil_log2((nvec + nv - 1) / nv);
      }
    if (cfg.threads_per_row > 0) tl = pow2_ceil_log2(cfg.threads_per_row);
    if (tl <= 10 && (int64_t{nv} << tl) >= nvec && (nv == 1 || nv == 2 || nv == 4 || nv == 8)) {
      p.nv = nv;
      p.tpr_log2 = tl;
    } else {
      use_vec = false;
    }
  }
  if (!use_vec) {
    p.nv = 0;
    // about 8 elements per thread, at least a warp, at most a full block
    int tl = pow2_ceil_log2((hidden + 7) / 8);
    tl = tl < 5 ? 5 : (tl > 10 ? 10 : tl);
    if (cfg.threads_per_row > 0) tl = pow2_ceil_log2(cfg.threads_per_row);
    p.tpr_log2 = tl > 10 ? 10 : tl;
  }
  const int tpr = 1 << p.tpr_log2;
  int rpb;
  if (cfg.rows_per_block > 0) {
    rpb = cfg.rows_per_block;
  } else {
    const int block = few_rows ? (tpr < 32 ? 32 : tpr) : (tpr < 256 ? 256 : tpr);
    rpb = block / tpr;
    // keep at least two blocks per SM when there are enough rows for that
    while (rpb > 1 && (rpb << p.tpr_log2) > 32 && (n_rows + rpb - 1) / rpb < 2 * sms) rpb >>= 1;
  }
  rpb = 1 << pow2_ceil_log2(rpb < 1 ? 1 : (rpb > 1024 ? 1024 : rpb));
  while (rpb > 1 && (rpb << p.tpr_log2) > 1024) rpb >>= 1;
  // whole warps only: the reductions shuffle with a full mask
  while ((rpb << p.tpr_log2) < 32) rpb <<= 1;
  p.rows_per_block = rpb;
  return p;
}

template <typename T, bool FUSED>
cudaError_t launch_typed(const Plan& p, Rows dst, Rows src, Rows res, const void* weight,
                         int64_t n_rows, int64_t n_inner, int64_t hidden, float eps,
                         cudaStream_t stream) {
  const int threads = p.rows_per_block << p.tpr_log2;
  const int64_t blocks = (n_rows + p.rows_per_block - 1) / p.rows_per_block;
  const dim3 grid(static_cast<unsigned>(blocks));
  const T* w = static_cast<const T*>(weight);
  const uint32_t nr = static_cast<uint32_t>(n_rows);
  const uint32_t ni = static_cast<uint32_t>(n_inner);
  const int h = static_cast<int>(hidden);
  switch (p.nv) {
    case 1:
      norm::rms_norm_vec_kernel<T, 1, FUSED><<<grid, threads, 0, stream>>>(dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
      break;
    case 2:
      norm::rms_norm_vec_kernel<T, 2, FUSED><<<grid, threads, 0, stream>>>(dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
      break;
    case 4:
      norm::rms_norm_vec_kernel<T, 4, FUSED><<<grid, threads, 0, stream>>>(dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
      break;
    case 8:
      norm::rms_norm_vec_kernel<T, 8, FUSED><<<grid, threads, 0, stream>>>(dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
      break;
    default:
      norm::rms_norm_generic_kernel<T, FUSED><<<grid, threads, 0, stream>>>(dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
      break;
  }
  return cudaGetLastError();
}

template <bool FUSED>
cudaError_t launch(NormOperand dst, NormOperand src, NormOperand res, const void* weight,
                   int64_t n_rows, int64_t n_inner, int64_t hidden, float eps, NormDType dtype,
                   cudaStream_t stream, const NormConfig& cfg) {
  if (n_rows < 0 || hidden < 0 || n_inner < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || hidden == 0) return cudaSuccess;
  // 32-bit row indices and element counts inside the kernels
  if (n_rows > INT32_MAX || hidden > INT32_MAX || n_inner <= 0 || n_inner > n_rows ||
      n_rows % n_inner != 0)
    return cudaErrorInvalidValue;
  if (dst.ptr == nullptr || src.ptr == nullptr || weight == nullptr || (FUSED && res.ptr == nullptr))
    return cudaErrorInvalidValue;
  const size_t es = elem_size(dtype);
  const int64_t n_outer = n_rows / n_inner;
  const bool vec_ok = aligned16(dst, n_outer, n_inner, es) && aligned16(src, n_outer, n_inner, es) &&
                      (!FUSED || aligned16(res, n_outer, n_inner, es)) &&
                      reinterpret_cast<uintptr_t>(weight) % 16 == 0;
  const Plan p = make_plan(vec_ok, n_rows, hidden, es, cfg);
  const Rows d{dst.ptr, dst.s0, dst.s1}, s{src.ptr, src.s0, src.s1}, r{res.ptr, res.s0, res.s1};
  switch (dtype) {
    case NormDType::kFloat16:
      return launch_typed<__half, FUSED>(p, d, s, r, weight, n_rows, n_inner, hidden, eps, stream);
    case NormDType::kBFloat16:
      return launch_typed<__nv_bfloat16, FUSED>(p, d, s, r, weight, n_rows, n_inner, hidden, eps, stream);
    case NormDType::kFloat32:
      return launch_typed<float, FUSED>(p, d, s, r, weight, n_rows, n_inner, hidden, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t rms_norm_launch(NormOperand out, NormOperand x, const void* weight, int64_t n_rows,
                            int64_t n_inner, int64_t hidden, float eps, NormDType dtype,
                            cudaStream_t stream, NormConfig config) {
  return launch<false>(out, x, NormOperand{nullptr, 0, 0}, weight, n_rows, n_inner, hidden, eps,
                       dtype, stream, config);
}

cudaError_t fused_add_rms_norm_launch(NormOperand x, NormOperand residual, const void* weight,
                                      int64_t n_rows, int64_t n_inner, int64_t hidden, float eps,
                                      NormDType dtype, cudaStream_t stream, NormConfig config) {
  return launch<true>(x, x, residual, weight, n_rows, n_inner, hidden, eps, dtype, stream, config);
}

}  // namespace qlinear
