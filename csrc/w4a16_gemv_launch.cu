// Host launcher for the W4A16 / W8A16 decode GEMV (w4a16_gemv.cuh): checks the case, picks rows
// per team / lanes per team / block size, fills the by-value parameter block and launches.
// The one translation unit holding every instantiation:
//   x dtype {bf16, fp16} x {4-bit: (M, R) in M 1..2 x R {1, 2, 4}, M 3..4 x R {1, 2}, M 5..8 x R 1;
//   sub-superblock groups: R 1} + {8-bit: M 1..4, R 1, both group modes}.
#include "w4a16_gemv.cuh"
#include "w4a16_gemv_launch.h"

namespace qlinear {
namespace {

using w4a16::GemvParams;
using Kernel = void (*)(const GemvParams);

int log2_exact(int64_t v) {  // -1 unless v is a power of two
  if (v <= 0 || (v & (v - 1))) return -1;
  int l = 0;
  while ((int64_t{1} << l) < v) ++l;
  return l;
}

int sm_count() {
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

template <typename XT, int BITS, bool SUB>
Kernel pick_m_r(int m, int r) {
  using w4a16::gemv_kernel;
  if constexpr (BITS == 8 || SUB) {
    if (r != 1) return nullptr;
    switch (m) {
      case 1: return gemv_kernel<XT, BITS, 1, 1, SUB>;
      case 2: return gemv_kernel<XT, BITS, 2, 1, SUB>;
      case 3: return gemv_kernel<XT, BITS, 3, 1, SUB>;
      case 4: return gemv_kernel<XT, BITS, 4, 1, SUB>;
    }
    if constexpr (BITS == 8) return nullptr;
    else switch (m) {
      case 5: return gemv_kernel<XT, BITS, 5, 1, SUB>;
      case 6: return gemv_kernel<XT, BITS, 6, 1, SUB>;
      case 7: return gemv_kernel<XT, BITS, 7, 1, SUB>;
      case 8: return gemv_kernel<XT, BITS, 8, 1, SUB>;
    }
    return nullptr;
  } else {
  switch (m * 8 + r) {
    case 1 * 8 + 1: return gemv_kernel<XT, BITS, 1, 1, SUB>;
    case 1 * 8 + 2: return gemv_kernel<XT, BITS, 1, 2, SUB>;
    case 1 * 8 + 4: return gemv_kernel<XT, BITS, 1, 4, SUB>;
    case 2 * 8 + 1: return gemv_kernel<XT, BITS, 2, 1, SUB>;
    case 2 * 8 + 2: return gemv_kernel<XT, BITS, 2, 2, SUB>;
    case 2 * 8 + 4: return gemv_kernel<XT, BITS, 2, 4, SUB>;
    case 3 * 8 + 1: return gemv_kernel<XT, BITS, 3, 1, SUB>;
    case 3 * 8 + 2: return gemv_kernel<XT, BITS, 3, 2, SUB>;
    case 4 * 8 + 1: return gemv_kernel<XT, BITS, 4, 1, SUB>;
    case 4 * 8 + 2: return gemv_kernel<XT, BITS, 4, 2, SUB>;
    case 5 * 8 + 1: return gemv_kernel<XT, BITS, 5, 1, SUB>;
    case 6 * 8 + 1: return gemv_kernel<XT, BITS, 6, 1, SUB>;
    case 7 * 8 + 1: return gemv_kernel<XT, BITS, 7, 1, SUB>;
    case 8 * 8 + 1: return gemv_kernel<XT, BITS, 8, 1, SUB>;
  }
  return nullptr;
  }
}

template <typename XT>
Kernel pick_bits(int bits, bool sub, int m, int r) {
  if (bits == 4) return sub ? pick_m_r<XT, 4, true>(m, r) : pick_m_r<XT, 4, false>(m, r);
  return sub ? pick_m_r<XT, 8, true>(m, r) : pick_m_r<XT, 8, false>(m, r);
}

Kernel pick_kernel(W4A16XType xt, int bits, bool sub, int m, int r) {
  return xt == W4A16XType::kBFloat16 ? pick_bits<__nv_bfloat16>(bits, sub, m, r)
                                     : pick_bits<__half>(bits, sub, m, r);
}

// Group mode: false + gshift (grp = sb >> gshift) when a group spans whole superblocks, true +
// gshift (grp = column >> gshift) for 16 / 32 / 64-column groups; -1 when not supported.
int group_mode(const W4A16GemvArgs& a, bool* sub) {
  const int sb = 16 * (32 / a.bits);
  if (a.num_groups == 1) {
    *sub = false;
    return 30;  // every superblock in group 0
  }
  const int l = log2_exact(a.group_size);
  if (l < 0) return -1;
  if (a.group_size >= sb) {
    *sub = false;
    return l - log2_exact(sb);
  }
  if (a.group_size < 16) return -1;
  *sub = true;
  return l;
}

struct Plan {
  int r, t_log2, block;
};

Plan make_plan(const W4A16GemvArgs& a, const W4A16GemvConfig& cfg, int num_vec) {
  const int sms = sm_count();
  Plan p{};
  if (cfg.rows_per_team > 0) {
    p.r = cfg.rows_per_team;
  } else {
    // two rows per team halve the x traffic, when the grid stays large enough to fill the GPU
    p.r = (a.bits == 4 && a.m <= 4 && (a.n / 2) >= 16 * sms) ? 2 : 1;
  }
  const int64_t rows = (a.n + p.r - 1) / p.r;
  if (cfg.team_lanes > 0) {
    p.t_log2 = log2_exact(cfg.team_lanes);
  } else {
    // the fewest lanes (8..32) that load a row in one batch of 4 vectors per lane; more lanes
    // (several warps, while each keeps 2+ vectors) when rows are too few to give every SM 8 warps
    int tl = 3;
    while (tl < 5 && num_vec > (int64_t{4} << tl)) ++tl;
    while (tl < 8 && rows * (int64_t{1} << tl) < int64_t{8} * 32 * sms && (int64_t{2} << (tl + 1)) <= num_vec) ++tl;
    p.t_log2 = tl;
  }
  const int t = 1 << (p.t_log2 < 0 ? 0 : p.t_log2);
  p.block = cfg.block_threads > 0 ? cfg.block_threads : (t > 128 ? t : 128);
  return p;
}

}  // namespace

W4A16GemvSupport w4a16_gemv_supported(const W4A16GemvArgs& a, const W4A16GemvConfig& cfg) {
  if (a.bits != 4 && a.bits != 8) return W4A16GemvSupport::kBadBits;
  if (a.m < 1 || a.m > (a.bits == 4 ? 8 : 4)) return W4A16GemvSupport::kBadM;
  bool sub = false;
  if (group_mode(a, &sub) < 0) return W4A16GemvSupport::kBadGroup;
  if (a.k % 4 != 0 || a.k <= 0) return W4A16GemvSupport::kBadK;
  if (a.num_shards < 1 || a.num_shards > w4a16::kMaxShards) return W4A16GemvSupport::kTooManyShards;
  if (reinterpret_cast<uintptr_t>(a.x) % 8 || (a.m > 1 && a.x_row_stride % 4) || a.x_shard_stride % 4 ||
      reinterpret_cast<uintptr_t>(a.qweight) % 16 || a.qw_row_stride % 4)
    return W4A16GemvSupport::kBadAlignment;
  if (cfg.rows_per_team < 0 || cfg.team_lanes < 0 || cfg.block_threads < 0) return W4A16GemvSupport::kBadConfig;
  if (cfg.team_lanes > 0) {
    const int l = log2_exact(cfg.team_lanes);
    if (l < 2 || l > 8) return W4A16GemvSupport::kBadConfig;
  }
  if (cfg.block_threads > 0) {
    const int l = log2_exact(cfg.block_threads);
    if (l < 5 || cfg.block_threads > w4a16::kMaxBlockThreads || cfg.block_threads < cfg.team_lanes)
      return W4A16GemvSupport::kBadConfig;
  }
  const int r = cfg.rows_per_team > 0 ? cfg.rows_per_team : 1;
  if (pick_kernel(a.x_type, a.bits, sub, a.m, r) == nullptr) return W4A16GemvSupport::kBadConfig;
  return W4A16GemvSupport::kOk;
}

cudaError_t w4a16_gemv_launch(const W4A16GemvArgs& a, cudaStream_t stream, W4A16GemvConfig cfg) {
  if (w4a16_gemv_supported(a, cfg) != W4A16GemvSupport::kOk) return cudaErrorInvalidValue;
  if (a.n == 0) return cudaSuccess;
  bool sub = false;
  const int gshift = group_mode(a, &sub);
  const int num_vec = static_cast<int>((a.k + 16 * (32 / a.bits) - 1) / (16 * (32 / a.bits))) * 4;
  Plan plan = make_plan(a, cfg, num_vec);
  Kernel kern = pick_kernel(a.x_type, a.bits, sub, a.m, plan.r);
  if (kern == nullptr) {  // automatic R not instantiated for this (bits, group mode, M)
    plan.r = 1;
    kern = pick_kernel(a.x_type, a.bits, sub, a.m, 1);
  }
  if (kern == nullptr) return cudaErrorInvalidValue;
  const int t = 1 << plan.t_log2;
  if (plan.block < t) plan.block = t;

  GemvParams p{};
  p.out = a.out;
  p.x = a.x;
  p.qweight = reinterpret_cast<const uint32_t*>(a.qweight);
  p.scales = a.scales;
  p.zeros = a.zeros;
  p.bias = a.bias;
  p.x_row_stride = a.x_row_stride;
  p.x_shard_stride = a.x_shard_stride;
  p.out_row_stride = a.out_row_stride;
  p.qw_row_stride = a.qw_row_stride;
  p.m = a.m;
  p.n = a.n;
  p.k = a.k;
  p.num_vec = num_vec;
  p.gshift = gshift;
  p.num_groups = a.num_groups;
  p.scale_kind = static_cast<w4a16::FloatKind>(static_cast<int>(a.scale_type));
  p.bias_kind = static_cast<w4a16::FloatKind>(static_cast<int>(a.bias_type));
  p.team_log2 = plan.t_log2;
  p.num_shards = a.num_shards;
  int teams = 0;
  for (int s = 0; s <= w4a16::kMaxShards; ++s) {
    const int si = s < a.num_shards ? s : a.num_shards;
    p.row_start[s] = static_cast<int>(a.shard_rows[si]);
    p.team_start[s] = teams;
    if (s < a.num_shards) {
      const int64_t rows = a.shard_rows[s + 1] - a.shard_rows[s];
      if (rows < 0) return cudaErrorInvalidValue;
      teams += static_cast<int>((rows + plan.r - 1) / plan.r);
    }
  }
  p.num_teams = teams;
  const int teams_per_block = plan.block / t;
  const int64_t blocks = (teams + teams_per_block - 1) / teams_per_block;
  if (blocks == 0) return cudaSuccess;
  kern<<<static_cast<unsigned>(blocks), plan.block, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace qlinear
