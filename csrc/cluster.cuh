// Thread-block cluster primitives (sm_90+): distributed shared memory stores, remote mbarrier
// arrivals, the cluster barrier. Device code only, no torch headers. Below sm_90 the calls compile to
// nothing: the launchers never pick a cluster kernel there.
//
// Addresses are 32-bit shared-window addresses (tma::smem_u32 of a local pointer); peer() maps one
// to the same offset in another CTA of the cluster, which the st / arrive helpers then target.
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

// Asynchronous stores into another CTA's shared memory that complete on that CTA's mbarrier `bar`
// (a shared::cluster address in the same CTA as `addr`): each lowers the barrier's pending
// transaction count by its bytes when it lands, so a waiter on the phase sees the data without any
// release fence on the storing side (a release would wait for this thread's loads in flight).
__device__ __forceinline__ void st_async_v4(uint32_t addr, uint4 v, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(addr),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(bar)
               : "memory");
#endif
}

__device__ __forceinline__ void st_async_v2f(uint32_t addr, float a, float b, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(addr), "f"(a),
               "f"(b), "r"(bar)
               : "memory");
#endif
}

// Spin until phase `parity` of the local mbarrier `bar` completes. CTA scope: the data came with
// st.async, whose completion on the barrier makes it visible to the waiters; an acquire at cluster
// scope would cost more than this needs.
__device__ __forceinline__ void wait_phase(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// The cluster barrier split in two (every thread of every CTA, warp-uniform). arrive is relaxed: it
// publishes nothing but mbarrier inits fenced by fence.mbarrier_init (tma::mbar_fence_init), so it
// does not wait for this thread's loads in flight; wait returns once all threads have arrived.
__device__ __forceinline__ void barrier_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void barrier_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

}  // namespace cluster
}  // namespace qlinear
