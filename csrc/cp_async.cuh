// Per-thread asynchronous global -> shared copies (cp.async, sm_80+), shared by the kernels that stage
// operands through shared memory without the copy engine (the W4A16 decode rings, the FP8 decode GEMM's
// staged-weight variant). Device code only, no torch headers.
//
// A thread's copies land in groups (commit_group closes one); wait_group N returns once at most N of its
// groups are still in flight, and what its finished groups copied is then visible to that thread (other
// threads need a barrier as well).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace cpa {

// 16 bytes, n of them read (the rest zero-filled), L2 fetched 256 bytes at a time, no L1 allocation.
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp8(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp4(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace cpa
}  // namespace qlinear
