// Thread-block cluster primitives (sm_90+) for kernels whose CTAs read each other's shared memory: the
// shared::cluster address of a peer's variable, a 32-bit float load from it, the CTA's rank and the
// cluster barrier (with a cluster along x only, as most launchers use, the rank is blockIdx.x % cluster
// size). Device code only, no torch headers. Below sm_90 the calls compile to nothing: the launchers
// never pick a cluster kernel there.
//
// Addresses are 32-bit shared-window addresses (tma::smem_u32 of a local pointer); peer() maps one to
// the same offset in another CTA of the cluster.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace cluster {

// The shared::cluster address of local address `addr` in CTA `rank` of this cluster.
__device__ __forceinline__ uint32_t peer(uint32_t addr, uint32_t rank) {
  uint32_t r = addr;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
#endif
  return r;
}

// The float at shared::cluster address `addr` (from peer()).
__device__ __forceinline__ float load_f32(uint32_t addr) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
#endif
  return v;
}

// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t rank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}

// The cluster barrier (every thread of every CTA, warp-uniform): arrive with release, wait with acquire,
// so shared-memory writes before it are visible to every CTA of the cluster after it.
__device__ __forceinline__ void sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

}  // namespace cluster
}  // namespace qlinear
