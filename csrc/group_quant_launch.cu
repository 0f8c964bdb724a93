// Host launcher of the per-token-group FP8 quantizer: checks the case (group of 1 to 32 16-byte
// vectors, 16-byte aligned rows), picks the instance for the dtype and lanes per group, and launches
// one thread per vector on the given stream.
#include "code_list.h"
#include "group_quant.cuh"
#include "group_quant_launch.h"

namespace qlinear {
namespace {

constexpr int kDefaultThreads = 128;

int elem_bytes(NqDType t) { return t == NqDType::kFloat32 ? 4 : 2; }

bool aligned(const void* p, int64_t n) { return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(n) == 0; }

// Lanes per group of the compiled instances (16-byte vectors per group: the powers of two up to a warp).
constexpr int kLanesPerGroup[] = {1, 2, 4, 8, 16, 32};

template <typename T>
cudaError_t launch_typed(const gq::Params& p, int lpg, dim3 grid, dim3 block, cudaStream_t stream, bool pdl,
                         int carveout) {
  return with_listed_code<kLanesPerGroup>(lpg, cudaErrorInvalidValue, [&](auto l) {
    return pdl::launch_smem_cv(gq::group_quant_kernel<T, decltype(l)::value>, grid, block, 0, stream, pdl, 1, carveout,
                               p);
  });
}

}  // namespace

int group_quant_fp8_supported(const GroupQuantArgs& a) {
  const int eb = elem_bytes(a.dtype);
  const int64_t gbytes = a.group_size * eb;
  if (a.group_size <= 0 || gbytes < 16 || gbytes > 512 || (gbytes & (gbytes - 1)) != 0) return kGqGroup;
  if (!aligned(a.x, 16) || (a.x_stride * eb) % 16 != 0 || (a.hidden * eb) % 16 != 0) return kGqAlign;
  const int code_bytes = 16 / eb;
  if (!aligned(a.q, code_bytes) || a.q_stride % code_bytes != 0) return kGqCodeAlign;
  const int64_t groups = (a.hidden + a.group_size - 1) / a.group_size;
  if (a.hidden >= (int64_t{1} << 31) || a.rows_pad * groups * (gbytes / 16) >= (int64_t{1} << 31)) return kGqSize;
  return kGqOk;
}

cudaError_t group_quant_fp8_launch(const GroupQuantArgs& a, cudaStream_t stream, GroupQuantLaunch launch) {
  if (group_quant_fp8_supported(a) != kGqOk || a.rows < 0 || a.rows_pad < a.rows || a.hidden <= 0) {
    return cudaErrorInvalidValue;
  }
  const int threads = launch.threads == 0 ? kDefaultThreads : launch.threads;
  if (threads < 32 || threads > 512 || threads % 32 != 0 || launch.trigger < 0 || launch.trigger > 3) {
    return cudaErrorInvalidValue;
  }
  if (a.rows_pad == 0) return cudaSuccess;
  const int eb = elem_bytes(a.dtype);
  const int lpg = static_cast<int>(a.group_size * eb / 16);
  const int64_t groups = (a.hidden + a.group_size - 1) / a.group_size;

  gq::Params p;
  p.x = a.x;
  p.x_stride = a.x_stride;
  p.q = static_cast<uint8_t*>(a.q);
  p.q_stride = a.q_stride;
  p.scales = a.scales;
  p.s_row_stride = a.s_row_stride;
  p.s_col_stride = a.s_col_stride;
  p.m = a.rows;
  p.m_pad = a.rows_pad;
  p.vpr = groups * lpg;
  p.k = static_cast<int>(a.hidden);
  p.scale_eps = a.scale_eps;
  p.trigger = launch.trigger;
  p.prefetch = launch.prefetch;

  const int64_t total = a.rows_pad * p.vpr;
  const dim3 grid(static_cast<unsigned>((total + threads - 1) / threads));
  const dim3 block(static_cast<unsigned>(threads));
  switch (a.dtype) {
    case NqDType::kBFloat16:
      return launch_typed<__nv_bfloat16>(p, lpg, grid, block, stream, launch.pdl, launch.carveout);
    case NqDType::kFloat16:
      return launch_typed<__half>(p, lpg, grid, block, stream, launch.pdl, launch.carveout);
    case NqDType::kFloat32:
      return launch_typed<float>(p, lpg, grid, block, stream, launch.pdl, launch.carveout);
  }
  return cudaErrorInvalidValue;
}

}  // namespace qlinear
