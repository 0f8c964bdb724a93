// Bulk (TMA, 1-D) copies from global to shared memory completing on an mbarrier (sm_90+), shared by
// the kernels that stage operands with the copy engine (norm_quant.cuh's bulk row kernel, the W4A16
// bulk ring, the FP8 decode GEMM's bulk variant). Device code only, no torch headers. Below sm_90
// the calls compile to nothing: the launchers never pick these kernels there.
//
// Protocol: one thread inits a barrier with the number of arrivals of a phase, fences the init;
// an arrival with expect_tx adds the phase's transaction bytes; each bulk copy subtracts the bytes it
// lands. The phase completes when every arrival happened and the byte count is back at zero (a
// copy may land before its arming: the count goes negative, which the PTX ISA allows), and waiting
// on its parity then returns with the copied bytes visible to the waiting thread.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace tma {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}

__device__ __forceinline__ void mbar_fence_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival that also raises the phase's expected transaction bytes.
__device__ __forceinline__ void mbar_arrive_tx(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#endif
}

// Spin until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// bytes (a multiple of 16) from global src to shared dst (both 16-byte aligned), completing on bar.
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}

// One plain arrival (no transaction bytes).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
#endif
}

// The box of a 2-D tensor map (a CUtensorMap kernel parameter: `map` is its generic address) at
// coordinates (c0 innermost, c1) into shared dst (aligned as the map's swizzle needs), completing
// on bar; elements outside the tensor land as zeros.
__device__ __forceinline__ void tensor_copy_2d(uint32_t dst, const void* map, int c0, int c1, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
          "r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
#endif
}

// Shared src (128-byte aligned, laid out as the map's box) into the box of a 2-D tensor map at (c0
// innermost, c1), as a bulk async-group of the issuing thread; elements outside the tensor are not written.
__device__ __forceinline__ void tensor_store_2d(const void* map, int c0, int c1, uint32_t src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(map), "r"(c0),
               "r"(c1), "r"(src)
               : "memory");
#endif
}
// Commits the thread's bulk stores and waits until they have read their shared memory (which may then be
// reused or, at the CTA's end, released; the writes complete before the grid does).
__device__ __forceinline__ void bulk_store_commit_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
}

// The box of a 3-D tensor map at coordinates (c0 innermost, c1, c2); as tensor_copy_2d otherwise.
__device__ __forceinline__ void tensor_copy_3d(uint32_t dst, const void* map, int c0, int c1, int c2, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
#endif
}

}  // namespace tma
}  // namespace qlinear
