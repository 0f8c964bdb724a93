// Micro-benchmark kernels for the W4A16 decode kernels (not part of the extension: built by
// benchmarks/bench_w4a16_cuda.py with nvcc into a small shared library reached through ctypes).
//   w4probe_ring(mode, code, ...): the ring kernel of w4a16_gemv.cuh (codes 1424 1824 4143) with
//     stages left out (mode 1: cp.async loads only, 2: loads + dequant + x reads, no mma, 0: full),
//     bf16, M <= 8.
//   w4probe_reg(mode, code, warps, ...): the register kernel (codes 1210 4110 1111 1211 4111 =
//     R U NT PF) with the same stages (1: loads only, 2: + dequant, no mma, 0: full; 3: loads without
//     x, 4: the weight words alone), bf16, M <= 8.
//   w4probe_reg16(mode, code, warps, il, ...): the same at M <= 16 (codes 2120 4120), il = chunks
//     dealt round-robin over the warps (the dispatch's pipe 2).
//   w4probe_read(ch, nl, ...): plain register loads of the packed weight, a CTA per 16 rows, 8 warps
//     splitting each row into ch-byte chunks (ch / 16 lanes per row per instruction), nl 16-byte
//     loads per lane in flight; words xor-ed so they stay live. ch = 64 is round 1's pattern.
#include "../w4a16_gemv.cuh"

namespace {

using namespace qlinear::w4a16g;

template <int CH, int NL>
__global__ void __launch_bounds__(256, 1) read_kernel(const uint32_t* qw, int n, int wpr, uint32_t* out) {
  constexpr int LPR = CH / 16, RPI = 32 / LPR, IPC = 16 / RPI, CPI = NL / IPC;  // chunks per iteration
  static_assert(NL % IPC == 0, "loads must cover the 16 rows");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int row0 = blockIdx.x * 16;
  const int nch = (wpr * 4 + CH - 1) / CH;
  const int c0 = nch * warp / nw, c1 = nch * (warp + 1) / nw;
  const int rr = lane / LPR, cl = lane % LPR;
  uint32_t sink = 0;
  for (int c = c0; c < c1; c += CPI) {
    uint4 v[NL];
#pragma unroll
    for (int j = 0; j < NL; ++j) {
      const int ch = c + j / IPC, row = min(row0 + (j % IPC) * RPI + rr, n - 1);
      const int w = ch * (CH / 4) + cl * 4;
      v[j] = (ch < c1 && w < wpr) ? load_stream(qw + static_cast<int64_t>(row) * wpr + w) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < NL; ++j) sink ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  if (sink == 0x9E3779B9u) out[0] = sink;
}

template <int CH, int NL>
int launch_read(const void* qw, int64_t n, int64_t wpr, void* out, cudaStream_t s) {
  read_kernel<CH, NL><<<static_cast<unsigned>((n + 15) / 16), 256, 0, s>>>(static_cast<const uint32_t*>(qw),
                                                                           static_cast<int>(n), static_cast<int>(wpr),
                                                                           static_cast<uint32_t*>(out));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

extern "C" int w4probe_read(int ch, int nl, const void* qw, int64_t n, int64_t wpr, void* out, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (ch == 64 && nl == 8) return launch_read<64, 8>(qw, n, wpr, out, s);
  if (ch == 64 && nl == 16) return launch_read<64, 16>(qw, n, wpr, out, s);
  if (ch == 128 && nl == 8) return launch_read<128, 8>(qw, n, wpr, out, s);
  if (ch == 128 && nl == 16) return launch_read<128, 16>(qw, n, wpr, out, s);
  if (ch == 256 && nl == 8) return launch_read<256, 8>(qw, n, wpr, out, s);
  if (ch == 256 && nl == 16) return launch_read<256, 16>(qw, n, wpr, out, s);
  if (ch == 512 && nl == 16) return launch_read<512, 16>(qw, n, wpr, out, s);
  return static_cast<int>(cudaErrorInvalidValue);
}

namespace {
Params probe_params(void* out, const void* x, const void* qw, const void* scales, const void* zeros, int64_t m,
                    int64_t n, int64_t k, int64_t group_size) {
  Params p{};
  p.out = out;
  p.x = x;
  p.qw = static_cast<const uint32_t*>(qw);
  p.scales = scales;
  p.zeros = static_cast<const uint8_t*>(zeros);
  p.bias = nullptr;
  p.x_stride = k;
  p.out_stride = n;
  p.nsb = static_cast<int>((k + 127) / 128);
  p.qw_stride = 16LL * p.nsb;
  p.m = static_cast<int>(m);
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.group_size = static_cast<int>(group_size);
  p.num_groups = static_cast<int>(k / group_size);
  p.sb_per_group = p.num_groups == 1 ? (1 << 30) : static_cast<int>(group_size / 128);
  p.scale_kind = FKind::kBFloat16;
  p.bias_kind = FKind::kBFloat16;
  p.pdl_prefetch = 0;
  p.grp_mul = group_mul(p.sb_per_group, p.num_groups == 1);
  return p;
}
}  // namespace

// Only the shapes the ladder times are instantiated (3 modes each: keeps this build ~ one TU).
template <int MODE>
cudaError_t probe_ring(const Params& p, int code, bool pdl, cudaStream_t s) {
  switch (code) {
    case 1424: return ring_launch<__nv_bfloat16, 1, 4, 2, 4, 1, MODE>(p, pdl, s);
    case 1824: return ring_launch<__nv_bfloat16, 1, 8, 2, 4, 1, MODE>(p, pdl, s);
    case 4143: return ring_launch<__nv_bfloat16, 4, 1, 4, 3, 1, MODE>(p, pdl, s);
    default: return cudaErrorInvalidValue;
  }
}

template <int MODE>
cudaError_t probe_reg(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  switch (code) {
    case 1210: return reg_launch<__nv_bfloat16, 1, 2, 1, false, MODE>(p, warps, pdl, s);
    case 4110: return reg_launch<__nv_bfloat16, 4, 1, 1, false, MODE>(p, warps, pdl, s);
    case 1111: return reg_launch<__nv_bfloat16, 1, 1, 1, true, MODE>(p, warps, pdl, s);
    case 1211: return reg_launch<__nv_bfloat16, 1, 2, 1, true, MODE>(p, warps, pdl, s);
    case 4111: return reg_launch<__nv_bfloat16, 4, 1, 1, true, MODE>(p, warps, pdl, s);
    case 2120: return reg_launch<__nv_bfloat16, 2, 1, 2, false, MODE>(p, warps, pdl, s);
    case 4120: return reg_launch<__nv_bfloat16, 4, 1, 2, false, MODE>(p, warps, pdl, s);
    default: return cudaErrorInvalidValue;
  }
}

// M = 1 (NT = 1) only. x bf16 [1, k], qw int32 [n, nsb * 16], scales bf16 [g, n], zeros uint8 [g, n] or null.
extern "C" int w4probe_ring(int mode, int code, void* out, const void* x, const void* qw, const void* scales,
                            const void* zeros, int64_t m, int64_t n, int64_t k, int64_t group_size, int pdl,
                            void* stream) {
  if (m > 8) return static_cast<int>(cudaErrorInvalidValue);
  const Params p = probe_params(out, x, qw, scales, zeros, m, n, k, group_size);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaErrorInvalidValue;
  if (mode == 0) e = probe_ring<0>(p, code, pdl != 0, s);
  if (mode == 1) e = probe_ring<1>(p, code, pdl != 0, s);
  if (mode == 2) e = probe_ring<2>(p, code, pdl != 0, s);
  return static_cast<int>(e);
}

namespace {
// The register kernel's micro-benchmark mode `mode` (0 .. 4) of code on p.
cudaError_t probe_reg_mode(int mode, const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  switch (mode) {
    case 0: return probe_reg<0>(p, code, warps, pdl, s);
    case 1: return probe_reg<1>(p, code, warps, pdl, s);
    case 2: return probe_reg<2>(p, code, warps, pdl, s);
    case 3: return probe_reg<3>(p, code, warps, pdl, s);
    case 4: return probe_reg<4>(p, code, warps, pdl, s);
    default: return cudaErrorInvalidValue;
  }
}
}  // namespace

// The register kernel (codes 1210 4110 1111 1211 4111: R U NT PF), same arguments plus warps per CTA.
extern "C" int w4probe_reg(int mode, int code, int warps, void* out, const void* x, const void* qw,
                           const void* scales, const void* zeros, int64_t m, int64_t n, int64_t k, int64_t group_size,
                           int pdl, void* stream) {
  if (m > 8) return static_cast<int>(cudaErrorInvalidValue);
  const Params p = probe_params(out, x, qw, scales, zeros, m, n, k, group_size);
  return static_cast<int>(probe_reg_mode(mode, p, code, warps, pdl != 0, static_cast<cudaStream_t>(stream)));
}

// M <= 16 (codes 2120 4120: two token tiles), il = sb_interleave (pipe 2), else as w4probe_reg.
extern "C" int w4probe_reg16(int mode, int code, int warps, int il, void* out, const void* x, const void* qw,
                             const void* scales, const void* zeros, int64_t m, int64_t n, int64_t k,
                             int64_t group_size, int pdl, void* stream) {
  if (m > 16) return static_cast<int>(cudaErrorInvalidValue);
  Params p = probe_params(out, x, qw, scales, zeros, m, n, k, group_size);
  p.sb_interleave = il;
  return static_cast<int>(probe_reg_mode(mode, p, code, warps, pdl != 0, static_cast<cudaStream_t>(stream)));
}
