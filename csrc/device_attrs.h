// Cached device attributes for the host launchers (CUDA runtime only, no torch headers).
// cudaDeviceGetAttribute is cheap but not free on a decode step's latency path, so each value is
// read once per device.
#pragma once

#include <cuda_runtime.h>

namespace qlinear {
namespace devattr {

// read(dev) of the current device, read once per device into `cache` (zero-initialized);
// `fallback` when there is no current device or read returned <= 0.
template <typename Read>
inline int per_device(int (&cache)[64], int fallback, Read read) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return fallback;
  if (cache[dev] == 0) {
    const int n = read(dev);
    cache[dev] = n > 0 ? n : -1;
  }
  return cache[dev] > 0 ? cache[dev] : fallback;
}

// The attribute `attr` of the current device, `fallback` when it cannot be read (or is <= 0).
inline int cached(cudaDeviceAttr attr, int fallback, int (&cache)[64]) {
  return per_device(cache, fallback, [attr](int dev) {
    int n = 0;
    return cudaDeviceGetAttribute(&n, attr, dev) == cudaSuccess ? n : -1;
  });
}

// Multiprocessors of the current device (132, an H100 / H200's count, when unknown).
inline int sm_count() {
  static int cache[64] = {0};
  return cached(cudaDevAttrMultiProcessorCount, 132, cache);
}

// The largest dynamic shared memory a CTA may opt into on the current device (48 KB when unknown).
inline int smem_optin() {
  static int cache[64] = {0};
  return cached(cudaDevAttrMaxSharedMemoryPerBlockOptin, 48 * 1024, cache);
}

// Compute-capability major of the current device (0 when unknown).
inline int cc_major() {
  static int cache[64] = {0};
  return cached(cudaDevAttrComputeCapabilityMajor, 0, cache);
}

}  // namespace devattr
}  // namespace qlinear
