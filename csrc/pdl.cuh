// Programmatic dependent launch (PDL, sm_90+): the device-side calls and the host launch, shared
// by every kernel family (norm, norm-slices + FP8, W4A16 decode). CUDA runtime only, no torch.
//
// wait: block until the preceding grid has completed and its memory is visible (returns at once
// when this grid was launched without PDL); every global access that may depend on the previous
// kernel must come after it. launch_dependents: the next grid may start launching (it still waits
// for our completion before touching memory), so calling it early is always safe.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <cstdlib>

namespace qlinear {
namespace pdl {

__device__ __forceinline__ void wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// QLINEAR_SMEM_CARVEOUT (0 .. 100; unset or empty: none) is set as the preferred shared-memory carveout of every
// kernel launched below, before its launch (a diagnostic: kernels whose shared-memory configurations differ may
// not share an SM, which can serialize a PDL pair).
inline int smem_carveout() {
  static const int v = [] {
    const char* s = std::getenv("QLINEAR_SMEM_CARVEOUT");
    if (s == nullptr || *s == 0) return -1;
    const int x = std::atoi(s);
    return x < 0 ? -1 : (x > 100 ? 100 : x);
  }();
  return v;
}

// A plain <<<>>> launch, or cudaLaunchKernelEx when PDL (programmatic stream serialization), a
// thread-block cluster of `cluster` CTAs (more than one; dims x, y, z), or a cooperative launch (all CTAs
// resident at once; the runtime refuses a grid that cannot be) is asked for.
template <typename... KArgs, typename... Args>
inline cudaError_t launch_smem_ex(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                  bool pdl, dim3 cluster, bool cooperative, Args... args) {
  const bool clustered = cluster.x * cluster.y * cluster.z > 1;
  if (smem_carveout() >= 0) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, smem_carveout());
    if (e != cudaSuccess) return e;
  }
  if (!pdl && !clustered && !cooperative) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[3];
  unsigned n = 0;
  if (cooperative) {
    attrs[n].id = cudaLaunchAttributeCooperative;
    attrs[n].val.cooperative = 1;
    ++n;
  }
  if (pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (clustered) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = cluster.x;
    attrs[n].val.clusterDim.y = cluster.y;
    attrs[n].val.clusterDim.z = cluster.z;
    ++n;
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

// launch_smem_ex without a cooperative launch, with a cluster of `cluster` CTAs along x (1: none).
template <typename... KArgs, typename... Args>
inline cudaError_t launch_smem(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                               bool pdl, int cluster, Args... args) {
  return launch_smem_ex(kernel, grid, block, smem, stream, pdl, dim3(static_cast<unsigned>(cluster > 1 ? cluster : 1)),
                        false, args...);
}

// launch_smem without dynamic shared memory.
template <typename... KArgs, typename... Args>
inline cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream, bool pdl, int cluster,
                          Args... args) {
  return launch_smem(kernel, grid, block, 0, stream, pdl, cluster, args...);
}

}  // namespace pdl
}  // namespace qlinear
