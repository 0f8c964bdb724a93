// What the W4A16 wgmma GEMM's stage ring (csrc/w4a16_wgmma.cuh) costs without its arithmetic: the same TMA
// boxes (x: two 64-column atoms of TN tokens, 128-byte swizzle; the weight rows' 16 words), the same stage
// bytes, mbarrier protocol and grid, but no dequantization and no wgmma. The consumers stand in for the
// tensor cores with a clock: superblock j "completes" C cycles after the later of its stage's arrival and
// superblock j - 1's completion (the CTA's wgmmas run one group after the other), and a warp spins until a
// completion before it releases that stage, as the kernel's wg_wait does.
//
// Release policies (what a warp does in superblock j, as the kernel's step() orders it):
//   0, the kernel today: wait for stage j, then (group j issued) wait for superblock j - 1's completion and
//      release stage j - 1. While stage j is late, stage j - 1 stays held although its group is done.
//   1, early release: if stage j has not arrived yet, wait for superblock j - 1's completion and release its
//      stage first, so that its refill is issued while this warp would only be waiting anyway.
// C = 0 is the data movement alone. Thread 0 refills a stage once all 8 warps released it, as in the kernel.
// One copy of x and of the weights, so both sit in L2 after the first launch (probe_w4a16_gemm.py rotates copies
// of x past L2; the GEMM re-reads each x tile from L2 33 times on 2112 rows either way). Session 41 run 1:
// benchmarks/results/session41.
//
// Output: one line per case, microseconds per launch (the span from the first CTA's start to the last CTA's
// end, %globaltimer; median of 7 launches after 2 untimed ones), bytes each CTA brought in, and the rate per
// SM in bytes per SM clock (the clock read from block 0's clock64 against %globaltimer).
//   nvcc -O3 -std=c++17 -arch=sm_90a csrc/probe/ingress_probe.cu -o /tmp/ingress_probe && /tmp/ingress_probe
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "../bulk_copy.cuh"
#include "../tensor_map.h"

namespace {

using namespace qlinear;

struct ProbeParams {
  CUtensorMap xmap;  // x [M, K] bf16: box 64 columns x TN tokens, 128-byte swizzle
  CUtensorMap wmap;  // qweight [N, K / 8] int32: box 16 words x ROWS rows
  int sb_per_split, nsb, st, policy;
  long long cycles;               // C: the stand-in tensor time per superblock, SM clock cycles
  unsigned long long* span;       // [0] min start, [1] max end (%globaltimer, ns)
  unsigned long long* clk;        // block 0: clock64 / %globaltimer at its start and end
};

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ bool mbar_test(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ void spin_until(long long t) {
  while (static_cast<long long>(clock64()) < t) {
  }
}

template <int TN, int ROWS>
__global__ void __launch_bounds__(256, 1) ring_kernel(const __grid_constant__ ProbeParams p) {
  constexpr uint32_t kX = TN * 256, kW = ROWS * 64, kStage = (kX + kW + 1023) / 1024 * 1024;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw = tma::smem_u32(smem_raw);
  const uint32_t ring = (raw + 1023u) & ~1023u;
  const int st = p.st;
  const uint32_t full0 = ring + st * kStage, empty0 = full0 + 8 * st;
  const int tid = threadIdx.x, lane = tid & 31;
  const unsigned long long t_start = gtime();
  const long long c_start = clock64();
  const int row0 = blockIdx.x * ROWS, tok0 = blockIdx.z * TN, sb_lo = blockIdx.y * p.sb_per_split;
  const int nsb = min(sb_lo + p.sb_per_split, p.nsb) - sb_lo;

  auto fill = [&](int j) {
    const int s = j % st;
    const uint32_t dst = ring + s * kStage, bar = full0 + 8 * s;
    tma::mbar_arrive_tx(bar, kX + kW);
    tma::tensor_copy_2d(dst + kX, &p.wmap, (sb_lo + j) * 16, row0, bar);
    tma::tensor_copy_2d(dst, &p.xmap, (sb_lo + j) * 128, tok0, bar);
    tma::tensor_copy_2d(dst + TN * 128, &p.xmap, (sb_lo + j) * 128 + 64, tok0, bar);
  };
  if (tid == 0) {
    for (int s = 0; s < st; ++s) {
      tma::mbar_init(full0 + 8 * s, 1);
      tma::mbar_init(empty0 + 8 * s, 8);
    }
    tma::mbar_fence_init();
  }
  __syncthreads();
  if (tid == 0)
    for (int j = 0; j < st && j < nsb; ++j) fill(j);

  // stage of superblock jp released by this warp; thread 0 refills it once all 8 warps have
  auto release = [&](int jp) {
    if (lane == 0) tma::mbar_arrive(empty0 + 8 * (jp % st));
    if (tid == 0 && jp + st < nsb) {
      tma::mbar_wait(empty0 + 8 * (jp % st), static_cast<uint32_t>((jp / st) & 1));
      fill(jp + st);
    }
  };
  long long done_prev = 0;  // superblock j - 1's completion (clock64)
  for (int j = 0; j < nsb; ++j) {
    const uint32_t full = full0 + 8 * (j % st), par = static_cast<uint32_t>((j / st) & 1);
    bool released = j == 0;
    if (p.policy == 1 && !released && !mbar_test(full, par)) {
      spin_until(done_prev);
      release(j - 1);
      released = true;
    }
    tma::mbar_wait(full, par);
    const long long now = clock64();
    const long long done = (now > done_prev ? now : done_prev) + p.cycles;
    if (!released) {
      spin_until(done_prev);
      release(j - 1);
    }
    done_prev = done;
  }
  spin_until(done_prev);
  __syncthreads();
  if (tid == 0) {
    atomicMin(p.span, t_start);
    atomicMax(p.span + 1, gtime());
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
      p.clk[0] = static_cast<unsigned long long>(c_start);
      p.clk[1] = t_start;
      p.clk[2] = static_cast<unsigned long long>(clock64());
      p.clk[3] = gtime();
    }
  }
}

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

struct Case {
  const char* name;
  int rows, tn, st, splits, policy;
  long long cycles;
  int row_tiles, tok_tiles;  // grid x and z (0: all the shape's tiles)
};

template <int TN, int ROWS>
void run_case(const Case& c, void* x, void* w, int m, int n, int k, unsigned long long* dev) {
  constexpr int kStage = (TN * 256 + ROWS * 64 + 1023) / 1024 * 1024;
  ProbeParams p{};
  const int nsb = k / 128;
  if (!tmap::encode_2d(&p.xmap, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, x, k, m, static_cast<uint64_t>(k) * 2, 64, TN,
                       CU_TENSOR_MAP_SWIZZLE_128B) ||
      !tmap::encode_2d(&p.wmap, CU_TENSOR_MAP_DATA_TYPE_INT32, w, nsb * 16, n, static_cast<uint64_t>(nsb) * 64, 16,
                       ROWS, CU_TENSOR_MAP_SWIZZLE_NONE)) {
    std::fprintf(stderr, "tensor map encoding failed\n");
    std::exit(1);
  }
  p.nsb = nsb;
  p.sb_per_split = (nsb + c.splits - 1) / c.splits;
  p.st = c.st;
  p.policy = c.policy;
  p.cycles = c.cycles;
  p.span = dev;
  p.clk = dev + 2;
  const int smem = c.st * kStage + 16 * c.st + 1024;
  CK(cudaFuncSetAttribute(ring_kernel<TN, ROWS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int rt = c.row_tiles > 0 ? c.row_tiles : (n + ROWS - 1) / ROWS;
  const int tt = c.tok_tiles > 0 ? c.tok_tiles : (m + TN - 1) / TN;
  const dim3 grid(rt, c.splits, tt);
  std::vector<double> us;
  double mhz = 0;
  for (int it = 0; it < 9; ++it) {
    unsigned long long init[6] = {~0ull, 0, 0, 0, 0, 0};
    CK(cudaMemcpy(dev, init, sizeof(init), cudaMemcpyHostToDevice));
    ring_kernel<TN, ROWS><<<grid, 256, smem>>>(p);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    unsigned long long h[6];
    CK(cudaMemcpy(h, dev, sizeof(h), cudaMemcpyDeviceToHost));
    if (it >= 2) {
      us.push_back((h[1] - h[0]) * 1e-3);
      mhz = static_cast<double>(h[4] - h[2]) / static_cast<double>(h[5] - h[3]) * 1e3;
    }
  }
  std::sort(us.begin(), us.end());
  const double med = us[us.size() / 2];
  const double bytes = static_cast<double>(p.sb_per_split) * (TN * 256 + ROWS * 64);  // per CTA, full tiles
  const int ctas = rt * c.splits * tt;
  std::printf("%-34s rows %3d tokens %3d stages %d splits %d policy %d C %5lld CTAs %3d: %8.2f us (min %8.2f) "
              "%5.2f MB/CTA %6.1f B/clk/SM %5.2f TB/s all, clock %4.0f MHz\n",
              c.name, ROWS, TN, c.st, c.splits, c.policy, c.cycles, ctas, med, us.front(), bytes / 1e6,
              bytes / (med * 1e-6) / (mhz * 1e6), bytes * ctas / (med * 1e-6) / 1e12, mhz);
}

}  // namespace

int main() {
  const int m = 1024, n = 2112, k = 7168;
  void *x, *w;
  unsigned long long* dev;
  CK(cudaMalloc(&x, static_cast<size_t>(m) * k * 2));
  CK(cudaMalloc(&w, static_cast<size_t>(n) * k / 2));
  CK(cudaMalloc(&dev, 6 * sizeof(unsigned long long)));
  CK(cudaMemset(x, 0x3c, static_cast<size_t>(m) * k * 2));
  CK(cudaMemset(w, 0x5a, static_cast<size_t>(n) * k / 2));
  // 64-row CTAs x 256 tokens (the few row at M = 1024: 33 x 4 CTAs), 3 stages of 68 KB
  const Case c64[] = {
      {"64x256 data only", 64, 256, 3, 1, 0, 0, 0, 0},
      {"64x256 data only, 16 CTAs", 64, 256, 3, 1, 0, 0, 4, 4},
      {"64x256 data only, 2 stages", 64, 256, 2, 1, 0, 0, 0, 0},
      {"64x256 C=1024 today", 64, 256, 3, 1, 0, 1024, 0, 0},
      {"64x256 C=1024 early release", 64, 256, 3, 1, 1, 1024, 0, 0},
      {"64x256 C=1400 today", 64, 256, 3, 1, 0, 1400, 0, 0},
      {"64x256 C=1400 early release", 64, 256, 3, 1, 1, 1400, 0, 0},
      {"64x256 C=1024 today, 16 CTAs", 64, 256, 3, 1, 0, 1024, 4, 4},
  };
  for (const Case& c : c64) run_case<256, 64>(c, x, w, m, n, k, dev);
  // 128-row CTAs x 256 tokens over two K splits (the paired grid's data, 16 x 2 x 4 = 128 CTAs on 2048 rows)
  const Case c128[] = {
      {"128x256 data only, 2 splits", 128, 256, 3, 2, 0, 0, 16, 0},
      {"128x256 C=2048 today, 2 splits", 128, 256, 3, 2, 0, 2048, 16, 0},
      {"128x256 C=2048 early, 2 splits", 128, 256, 3, 2, 1, 2048, 16, 0},
  };
  for (const Case& c : c128) run_case<256, 128>(c, x, w, m, n, k, dev);
  // 128-row CTAs x 128 tokens (16 x 8 = 128 CTAs on 2048 rows), 4 stages of 40 KB
  const Case c128b[] = {
      {"128x128 data only", 128, 128, 4, 1, 0, 0, 16, 0},
      {"128x128 C=1024 today", 128, 128, 4, 1, 0, 1024, 16, 0},
  };
  for (const Case& c : c128b) run_case<128, 128>(c, x, w, m, n, k, dev);
  CK(cudaFree(x));
  CK(cudaFree(w));
  CK(cudaFree(dev));
  return 0;
}
