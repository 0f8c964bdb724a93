// Weight-only int4 / int8 decode GEMV (W4A16 / W8A16) on qlinear's packed layout, CUDA cores.
//
//   out[m, n] = sum_k x[m, shard(n) * K + k] * (q[n, k] - zero[grp, n]) * scale[grp, n]  (+ bias[n])
//
// Device code only (no torch headers). Layout (qlinear.reference.w4a16): qweight int32
// [N, Kp * BITS / 32], 16-word superblocks per row; bits [i*BITS, (i+1)*BITS) of word j of
// superblock sb hold packed column sb * SB + 16 i + j (SB = 16 * 32 / BITS). scales [G, N]
// (fp16 / bf16 / fp32), zeros uint8 [G, N] or null (symmetric: 2^(BITS-1)); group of packed
// column c is c / g. x is already in packed column order (the op gathers it through the act-order
// permutations once, [M, S * K]; shard s reads columns s*K ..).
//
// Work split: a *team* of T lanes (T a power of two >= 4; T > 32 spans several warps of one block)
// owns R consecutive rows of one shard. Lane t of a team reads the 16-byte vectors t, t + T, ...
// of each of its rows (consecutive lanes, consecutive vectors: a warp reads 512 contiguous bytes
// per row per load). Vector v is words 4 (v % 4) .. +3 of superblock v / 4, i.e. 4 contiguous
// columns in each of the 32 / BITS fields, so each field meets one 8-byte chunk of x per row of x;
// x is read through L1 (every row of the layer reads it) and each chunk serves R weight rows.
// U vectors per row are loaded before any is used (bytes in flight), with the streaming hint
// ld.global.nc.L1::no_allocate.L2::256B (weights are read once; the L2 hint prefetches the rest
// of the 256-byte segment the team reads next).
//
// Integer -> float without I2F: for a field at bit position p <= 12 (4-bit) / 8 (8-bit) of a word
// (the upper half of the fields is taken from w >> 16), (w & (mask << p)) | 0x4B000000 read as fp32
// is exactly 2^23 + q * 2^p; subtracting c_p = 2^23 + zero * 2^p (once per group) leaves the exact
// (q - zero) * 2^p. Fields at the same p share an fp32 accumulator; at the end of a group the
// accumulators are combined with their 2^-p weights and one multiply by the group scale. So per
// weight element: one LOP3, one FADD and one FFMA per row of x, no shifts except one per word.
//
// SUBGROUP = false: a group spans whole superblocks (g a power-of-two multiple of SB, or per
// channel): one scale / zero per vector per row, grp = sb >> gshift. SUBGROUP = true: groups of
// 16 / 32 / 64 columns inside a superblock: grp = (sb * SB + 16 i) >> gshift per field.
//
// End: shuffle reduction inside the warp, through shared memory across the warps of a team
// (T > 32), one store per row and row of x (+ bias). fp32 throughout; output rounded once.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace w4a16 {

constexpr int kMaxShards = 8;
constexpr int kMaxM = 8;
constexpr int kMaxBlockThreads = 256;

// Scalar type of scales / bias (runtime: read once per group, not in the inner loop).
enum class FloatKind : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

struct GemvParams {
  void* out;
  const void* x;
  const uint32_t* qweight;
  const void* scales;
  const uint8_t* zeros;  // null: symmetric
  const void* bias;      // null: none
  int64_t x_row_stride;    // elements
  int64_t x_shard_stride;  // elements (K when act-order, else 0)
  int64_t out_row_stride;  // elements
  int64_t qw_row_stride;   // int32 words
  int m, n, k;
  int num_vec;   // 16-byte vectors per row of qweight (Kp * BITS / 128)
  int gshift;    // see SUBGROUP above
  int num_groups;
  FloatKind scale_kind, bias_kind;
  int team_log2;  // T = 1 << team_log2
  int num_teams;
  int num_shards;
  int row_start[kMaxShards + 1];  // shard s owns rows row_start[s] .. row_start[s + 1]
  int team_start[kMaxShards + 1];  // and teams team_start[s] .. team_start[s + 1]
};

template <typename XT>
struct XConv;

template <>
struct XConv<__nv_bfloat16> {
  // 4 bf16 in two words -> 4 fp32 (bf16 is the top half of an fp32: a shift or a mask each)
  static __device__ __forceinline__ void to_f4(uint2 v, float (&f)[4]) {
    f[0] = __uint_as_float(v.x << 16);
    f[1] = __uint_as_float(v.x & 0xFFFF0000u);
    f[2] = __uint_as_float(v.y << 16);
    f[3] = __uint_as_float(v.y & 0xFFFF0000u);
  }
  static __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
};

template <>
struct XConv<__half> {
  static __device__ __forceinline__ void to_f4(uint2 v, float (&f)[4]) {
    const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&v.x));
    const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&v.y));
    f[0] = a.x;
    f[1] = a.y;
    f[2] = b.x;
    f[3] = b.y;
  }
  static __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
};

__device__ __forceinline__ float load_float(const void* p, int64_t i, FloatKind kind) {
  switch (kind) {
    case FloatKind::kFloat16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case FloatKind::kBFloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

// Streamed weights: not kept in L1, prefetch the rest of the 256-byte L2 segment.
__device__ __forceinline__ uint4 load_stream(const uint32_t* p) {
  uint4 v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#else
  v = __ldg(reinterpret_cast<const uint4*>(p));
#endif
  return v;
}

// x chunk of 4 columns starting at column col of one row (0 past K: the padded tail of the last
// superblock holds q = 0, but x there is not ours to read).
template <typename XT>
__device__ __forceinline__ void load_x4(const XT* row, int col, int k, float (&f)[4]) {
  uint2 v = make_uint2(0u, 0u);
  if (col < k) v = __ldg(reinterpret_cast<const uint2*>(row + col));
  XConv<XT>::to_f4(v, f);
}

// Register budget (ptxas -v, no spills): 80 (24 warps per SM) for R * M <= 2, 128 for <= 4,
// up to 255 above (those cases are FFMA-bound, occupancy matters less).
template <int R, int M>
constexpr int min_blocks() {
  return R * M <= 2 ? 3 : (R * M <= 4 ? 2 : 1);
}

template <typename XT, int BITS, int M, int R, bool SUBGROUP>
__global__ void __launch_bounds__(kMaxBlockThreads, min_blocks<R, M>()) gemv_kernel(const GemvParams p) {
  constexpr int FIELDS = 32 / BITS;
  constexpr int HALF = FIELDS / 2;  // fields 0..HALF-1 from w, the rest from w >> 16
  constexpr int SB = 16 * FIELDS;
  constexpr uint32_t MASK = (1u << BITS) - 1u;
  // vectors per row loaded ahead of use: 4 per lane in total at M = 1, fewer as registers fill
  // (halved for sub-superblock groups, whose per-field scale loads take the registers)
  constexpr int U0 = M > 4 ? 1 : (M == 1 ? 4 / R : (R == 1 ? 2 : 1));
  constexpr int U = (SUBGROUP && U0 > 1) ? U0 / 2 : U0;
  constexpr float MAGIC = 8388608.0f;  // 2^23

  __shared__ float red[kMaxBlockThreads / 32][R * M];

  const int T = 1 << p.team_log2;
  const int tid = threadIdx.x;
  const int team = blockIdx.x * (blockDim.x >> p.team_log2) + (tid >> p.team_log2);
  const int t = tid & (T - 1);
  const bool active = team < p.num_teams;

  // Shard of this team (tiles never straddle a shard; compile-time indices keep p in param space).
  int shard = 0, row0 = 0, row_end = 0, first_team = 0;
#pragma unroll
  for (int s = 0; s < kMaxShards; ++s) {
    if (s < p.num_shards && team >= p.team_start[s]) {
      shard = s;
      row0 = p.row_start[s];
      row_end = p.row_start[s + 1];
      first_team = p.team_start[s];
    }
  }
  const int n0 = row0 + (team - first_team) * R;

  float total[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) total[r][m] = 0.f;

  if (active) {
    const uint32_t* wrow[R];
    int nrow[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      // rows past the shard's end recompute its last row (valid memory, result not stored)
      nrow[r] = min(n0 + r, row_end - 1);
      wrow[r] = p.qweight + static_cast<int64_t>(nrow[r]) * p.qw_row_stride;
    }
    const XT* xrow[M];
#pragma unroll
    for (int m = 0; m < M; ++m)
      xrow[m] = static_cast<const XT*>(p.x) + static_cast<int64_t>(m) * p.x_row_stride +
                static_cast<int64_t>(shard) * p.x_shard_stride;
    const int c4 = (t & 3) * 4;  // this lane's column offset inside each 16-column field
    const float zsym = static_cast<float>(1 << (BITS - 1));

    for (int v0 = t; v0 < p.num_vec; v0 += U * T) {
      uint4 w[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r)
          w[u][r] = (v0 + u * T < p.num_vec) ? load_stream(wrow[r] + 4 * (v0 + u * T)) : make_uint4(0, 0, 0, 0);

#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int v = v0 + u * T;
        if (v >= p.num_vec) break;
        const int sb = v >> 2;
        const int col0 = sb * SB + c4;
        uint32_t lo[R][4], hi[R][4];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          lo[r][0] = w[u][r].x;
          lo[r][1] = w[u][r].y;
          lo[r][2] = w[u][r].z;
          lo[r][3] = w[u][r].w;
#pragma unroll
          for (int j = 0; j < 4; ++j) hi[r][j] = lo[r][j] >> 16;
        }

        if constexpr (!SUBGROUP) {
          const int grp = sb >> p.gshift;
          float sc[R], cz[R][HALF];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const int64_t gi = static_cast<int64_t>(grp) * p.n + nrow[r];
            sc[r] = load_float(p.scales, gi, p.scale_kind);
            const float z = p.zeros ? static_cast<float>(__ldg(p.zeros + gi)) : zsym;
#pragma unroll
            for (int h = 0; h < HALF; ++h) cz[r][h] = fmaf(z, static_cast<float>(1 << (h * BITS)), MAGIC);
          }
          float acc[R][M][HALF];
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int m = 0; m < M; ++m)
#pragma unroll
              for (int h = 0; h < HALF; ++h) acc[r][m][h] = 0.f;
#pragma unroll
          for (int i = 0; i < FIELDS; ++i) {
            const int h = i % HALF;
            float xf[M][4];
#pragma unroll
            for (int m = 0; m < M; ++m) load_x4<XT>(xrow[m], col0 + 16 * i, p.k, xf[m]);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
              for (int j = 0; j < 4; ++j) {
                const uint32_t src = i < HALF ? lo[r][j] : hi[r][j];
                const float q = __uint_as_float((src & (MASK << (h * BITS))) | 0x4B000000u) - cz[r][h];
#pragma unroll
                for (int m = 0; m < M; ++m) acc[r][m][h] = fmaf(q, xf[m][j], acc[r][m][h]);
              }
          }
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int m = 0; m < M; ++m) {
              float a = acc[r][m][HALF - 1];
#pragma unroll
              for (int h = HALF - 2; h >= 0; --h) a = fmaf(a, 1.0f / static_cast<float>(1 << BITS), acc[r][m][h]);
              total[r][m] = fmaf(a, sc[r], total[r][m]);
            }
        } else {
#pragma unroll
          for (int i = 0; i < FIELDS; ++i) {
            const int h = i % HALF;
            // min(): fields of the padded tail of the last superblock (x = 0 there) map to the last group
            const int grp = min((sb * SB + 16 * i) >> p.gshift, p.num_groups - 1);
            float xf[M][4];
#pragma unroll
            for (int m = 0; m < M; ++m) load_x4<XT>(xrow[m], col0 + 16 * i, p.k, xf[m]);
#pragma unroll
            for (int r = 0; r < R; ++r) {
              const int64_t gi = static_cast<int64_t>(grp) * p.n + nrow[r];
              const float sp = load_float(p.scales, gi, p.scale_kind) * (1.0f / static_cast<float>(1 << (h * BITS)));
              const float z = p.zeros ? static_cast<float>(__ldg(p.zeros + gi)) : zsym;
              const float cz = fmaf(z, static_cast<float>(1 << (h * BITS)), MAGIC);
              float part[M];
#pragma unroll
              for (int m = 0; m < M; ++m) part[m] = 0.f;
#pragma unroll
              for (int j = 0; j < 4; ++j) {
                const uint32_t src = i < HALF ? lo[r][j] : hi[r][j];
                const float q = __uint_as_float((src & (MASK << (h * BITS))) | 0x4B000000u) - cz;
#pragma unroll
                for (int m = 0; m < M; ++m) part[m] = fmaf(q, xf[m][j], part[m]);
              }
#pragma unroll
              for (int m = 0; m < M; ++m) total[r][m] = fmaf(part[m], sp, total[r][m]);
            }
          }
        }
      }
    }
  }

  // Reduce over the team: shuffles inside a warp (xor offsets < T stay inside an aligned team),
  // then shared memory across the warps of a team. Every lane takes part (no early exit).
  const int wl = T < 32 ? T : 32;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m)
      for (int off = wl >> 1; off > 0; off >>= 1) total[r][m] += __shfl_xor_sync(0xffffffffu, total[r][m], off);
  if (T > 32) {
    const int warp = tid >> 5;
    if ((tid & 31) == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) red[warp][r * M + m] = total[r][m];
    }
    __syncthreads();
    if (t == 0) {
      const int wpt = T >> 5;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) {
          float a = 0.f;
          for (int q = 0; q < wpt; ++q) a += red[warp + q][r * M + m];  // fixed order: deterministic
          total[r][m] = a;
        }
    }
  }
  if (active && t == 0) {
    XT* out = static_cast<XT*>(p.out);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int n = n0 + r;
      if (n >= row_end) break;
      const float b = p.bias ? load_float(p.bias, n, p.bias_kind) : 0.f;
#pragma unroll
      for (int m = 0; m < M; ++m)
        if (m < p.m) out[static_cast<int64_t>(m) * p.out_row_stride + n] = XConv<XT>::from_f(total[r][m] + b);
    }
  }
}

}  // namespace w4a16
}  // namespace qlinear
