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

// A plain <<<>>> launch, or cudaLaunchKernelEx when PDL (programmatic stream serialization), a
// thread-block cluster of `cluster` CTAs (more than one; dims x, y, z), a cooperative launch (all CTAs
// resident at once; the runtime refuses a grid that cannot be) or a preferred shared-memory carveout
// (`carveout` percent of the most shared memory an SM has, 0 .. 100; -1: none) is asked for.
//
// Why a carveout: an SM holds the CTAs of two grids at once only while both run under one split of its
// memory into L1 and shared memory. A PDL pair whose kernels the driver would configure differently (e.g. a
// quantizer without shared memory beside a GEMV with 14 KB) loses the overlap PDL is for; the same carveout on
// both keeps it (session 46 run 3: 2112x7168 at M = 16, quantizer + GEMV 8.10 us at 10 % against 8.48 without).
template <typename... KArgs, typename... Args>
inline cudaError_t launch_smem_ex(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                  bool pdl, dim3 cluster, bool cooperative, int carveout, Args... args) {
  const bool clustered = cluster.x * cluster.y * cluster.z > 1;
  if (!pdl && !clustered && !cooperative && carveout < 0) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[4];
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
  if (carveout >= 0) {
    attrs[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attrs[n].val.sharedMemCarveout = static_cast<unsigned>(carveout > 100 ? 100 : carveout);
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

// launch_smem_ex without a cooperative launch, with a cluster of `cluster` CTAs along x (1: none) and the
// preferred carveout `carveout` (-1: none).
template <typename... KArgs, typename... Args>
inline cudaError_t launch_smem_cv(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                  bool pdl, int cluster, int carveout, Args... args) {
  return launch_smem_ex(kernel, grid, block, smem, stream, pdl, dim3(static_cast<unsigned>(cluster > 1 ? cluster : 1)),
                        false, carveout, args...);
}

// launch_smem_cv without a carveout.
template <typename... KArgs, typename... Args>
inline cudaError_t launch_smem(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                               bool pdl, int cluster, Args... args) {
  return launch_smem_cv(kernel, grid, block, smem, stream, pdl, cluster, -1, args...);
}

// launch_smem without dynamic shared memory.
template <typename... KArgs, typename... Args>
inline cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream, bool pdl, int cluster,
                          Args... args) {
  return launch_smem(kernel, grid, block, 0, stream, pdl, cluster, args...);
}

}  // namespace pdl
}  // namespace qlinear
