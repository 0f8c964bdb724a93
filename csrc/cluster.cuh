// Thread-block cluster primitives (sm_90+) for kernels whose CTAs feed each other's shared memory:
// the CTA's rank, remote mbarrier arrivals, the cluster barrier, and the multicast form of a 2-D TMA
// box copy. Device code only, no torch headers. Below sm_90 the calls compile to nothing: the
// launchers never pick a cluster kernel there.
//
// Addresses are 32-bit shared-window addresses (tma::smem_u32 of a local pointer); peer() maps one to
// the same offset in another CTA of the cluster.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace cluster {

__device__ __forceinline__ uint32_t cta_rank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}

// The shared::cluster address of local address `addr` in CTA `rank` of this cluster.
__device__ __forceinline__ uint32_t peer(uint32_t addr, uint32_t rank) {
  uint32_t r = addr;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
#endif
  return r;
}

// One arrival on the mbarrier at shared::cluster address `bar` (another CTA's, from peer()), with the
// instruction's default semantics (release, CTA scope): no cluster-scope fence per arrival.
__device__ __forceinline__ void arrive_remote(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
#endif
}

// The cluster barrier (every thread of every CTA, warp-uniform): arrive with release, wait with acquire.
__device__ __forceinline__ void sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// The box of a 2-D tensor map at (c0 innermost, c1) into shared dst of every CTA in `mask` (bit i =
// cluster rank i), each copy completing on the mbarrier at offset `bar` of its own CTA.
__device__ __forceinline__ void tensor_copy_2d_multicast(uint32_t dst, const void* map, int c0, int c1, uint32_t bar,
                                                         uint16_t mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
#endif
}

}  // namespace cluster
}  // namespace qlinear
