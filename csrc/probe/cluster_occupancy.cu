// How many thread-block clusters of each size are resident at once (cudaOccupancyMaxActiveClusters), for a
// CTA the shape of the W4A16 TMA ring's (one CTA per SM: 9 warps, ~100-200 KB of dynamic shared memory).
// Why: a K split over a cluster of C CTAs only pays if every cluster of the grid runs in one wave; the
// quad split of session 25 took ~9 us at every M because 33 clusters of four did not all fit.
//   nvcc -O2 -std=c++17 -arch=sm_90a csrc/probe/cluster_occupancy.cu -o /tmp/cluster_occupancy \
//     && /tmp/cluster_occupancy
#include <cstdio>
#include <cuda_runtime.h>

__global__ void probe_kernel(int* out) {
  extern __shared__ int s[];
  if (threadIdx.x == 0 && out != nullptr) out[blockIdx.x] = s[0];
}

int main() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  printf("SMs %d\n", sms);
  const int smems[] = {100 * 1024, 200 * 1024};
  for (int smem : smems) {
    for (int c = 1; c <= 16; ++c) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(c * 64, 1, 1);
      cfg.blockDim = dim3(288, 1, 1);
      cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = c;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      int n = -1;
      const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, probe_kernel, &cfg);
      printf("smem %d KB cluster %2d: max active clusters %3d (%3d CTAs)%s%s\n", smem / 1024, c, n, n * c,
             e == cudaSuccess ? "" : " error ", e == cudaSuccess ? "" : cudaGetErrorString(e));
      (void)cudaGetLastError();
    }
  }
  return 0;
}
