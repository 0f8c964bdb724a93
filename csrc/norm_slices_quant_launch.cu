// Host launcher of rms_norm_slices_quant_kernel (norm_slices_quant.cuh). Instantiations: bf16 /
// fp16 x NV {2, 6, 8} (slices of up to 512 / 1536 / 2048 elements; MLA's q_c is 1536 wide).
#include "device_attrs.h"
#include "norm_slices_quant.cuh"
#include "norm_slices_quant_launch.h"

namespace qlinear {
namespace {

bool aligned_rows(const void* p, int64_t stride_bytes, int64_t rows, int64_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0) return false;
  return rows <= 1 || stride_bytes % bytes == 0;
}

template <typename T, int NV>
cudaError_t launch_nv(const NsqArgs& a, const nsq::SliceSet& set, int warps, int blocks, bool pdl,
                      cudaStream_t stream) {
  auto kernel = nsq::rms_norm_slices_quant_kernel<T, NV>;
  const int rows = static_cast<int>(a.rows);
  return pdl::launch(kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(32 * warps)), stream, pdl, 0,
                     a.x, a.x_stride, set, rows, a.eps, a.scale_eps);
}

template <typename T>
cudaError_t launch_typed(const NsqArgs& a, const nsq::SliceSet& set, int nv, int warps, int blocks, bool pdl,
                         cudaStream_t stream) {
  if (nv <= 2) return launch_nv<T, 2>(a, set, warps, blocks, pdl, stream);
  if (nv <= 6) return launch_nv<T, 6>(a, set, warps, blocks, pdl, stream);
  return launch_nv<T, 8>(a, set, warps, blocks, pdl, stream);
}

}  // namespace

bool rms_norm_slices_quant_supported(const NsqArgs& a) {
  // rows: the kernel's warp task index (row x n_slices + slice, plus at most 31 idle tokens in the
  // last block) is an int
  if (a.dtype == NsqDType::kFloat32 || a.group_size != 128 || a.slices == nullptr || a.n_slices < 1 ||
      a.n_slices > kNsqMaxSlices || a.x == nullptr || a.rows < 0 || (a.rows + 32) * a.n_slices > INT32_MAX)
    return false;
  // e4m3 conversion instructions (cvt.rn.satfinite.e4m3x2): sm_89+
  if (devattr::cc_major() < 9) {
    int dev = 0, minor = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        major * 10 + minor < 89) {
      (void)cudaGetLastError();
      return false;
    }
  }
  // the scale's reciprocal (nq::div_rcp) and quotients stay on div.rn's fast path for these floors
  if (!(a.scale_eps >= 448.f * 1.1754944e-38f && a.scale_eps <= 1e30f)) return false;
  const int64_t xs = a.x_stride * 2;
  for (int s = 0; s < a.n_slices; ++s) {
    const NsqSlice& sl = a.slices[s];
    const bool quant = sl.scales != nullptr;
    if (sl.out == nullptr || sl.weight == nullptr || sl.col < 0 || sl.width <= 0 || sl.width > 2048) return false;
    if (sl.width % (quant ? 128 : 8) != 0) return false;
    if (!aligned_rows(static_cast<const char*>(a.x) + 2 * sl.col, xs, a.rows, 16)) return false;
    if (reinterpret_cast<uintptr_t>(sl.weight) % 16 != 0) return false;
    if (quant ? !aligned_rows(sl.out, sl.out_stride, a.rows, 8) : !aligned_rows(sl.out, sl.out_stride * 2, a.rows, 16))
      return false;
  }
  return true;
}

cudaError_t rms_norm_slices_quant_launch(const NsqArgs& a, cudaStream_t stream, NsqConfig cfg) {
  if (a.rows < 0 || a.n_slices < 1 || a.n_slices > kNsqMaxSlices || a.slices == nullptr) return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  if (!rms_norm_slices_quant_supported(a)) return cudaErrorNotSupported;
  nsq::SliceSet set{};
  set.n = a.n_slices;
  int64_t widest = 0;
  for (int s = 0; s < a.n_slices; ++s) {
    const NsqSlice& sl = a.slices[s];
    set.s[s] = nsq::Slice{sl.out, sl.out_stride, sl.scales, sl.s_row, sl.s_col, sl.weight,
                          static_cast<int>(sl.col), static_cast<int>(sl.width)};
    if (sl.width > widest) widest = sl.width;
  }
  const int nv = static_cast<int>((widest / 8 + 31) / 32);
  const int n = a.n_slices;
  // whole tokens per block: one while the rows are few (latency: spread over the SMs), else up
  // to 8 warps
  int tokens = 1;
  if (cfg.warps_per_block > 0) {
    tokens = cfg.warps_per_block / n;
  } else if (a.rows > int64_t{4} * devattr::sm_count()) {
    tokens = 8 / n;
  }
  if (tokens < 1) tokens = 1;
  const int warps = tokens * n;
  const int64_t blocks = (a.rows + tokens - 1) / tokens;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  const bool pdl = cfg.pdl > 0 && devattr::cc_major() >= 9;
  switch (a.dtype) {
    case NsqDType::kBFloat16:
      return launch_typed<__nv_bfloat16>(a, set, nv, warps, static_cast<int>(blocks), pdl, stream);
    case NsqDType::kFloat16:
      return launch_typed<__half>(a, set, nv, warps, static_cast<int>(blocks), pdl, stream);
    default:
      return cudaErrorNotSupported;
  }
}

}  // namespace qlinear
