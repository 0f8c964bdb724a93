// Host launcher of the per-token-group FP8 quantizer (group_quant.cuh). Raw pointers, strides in
// elements (x) or bytes (q), a cudaStream_t; no torch headers (compiles with nvcc alone).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "norm_quant_launch.h"

namespace qlinear {

// x [rows, hidden] (row stride x_stride elements) -> q [rows_pad, hidden] (row stride q_stride bytes) and
// scales [rows_pad, cdiv(hidden, group_size)]; rows in [rows, rows_pad) get codes 0 and the scale
// scale_eps / 448.
struct GroupQuantArgs : QuantOperands {
  int64_t rows_pad = 0;
};

// threads: per CTA (a multiple of 32 up to 512; 0 = the default, 128). pdl: launch with programmatic
// stream serialization; trigger: where the kernel lets the next grid launch (gq::Trigger: 0 late,
// after its x is loaded; 1 early, after the wait; 2 first, before it; 3 exit).
struct GroupQuantLaunch {
  int threads = 0;
  bool pdl = false;
  int trigger = 0;
  bool prefetch = false;  // x's lines requested into L2 before the PDL wait
  int carveout = -1;      // the launch's preferred shared-memory carveout, percent (-1: none; pdl.cuh)
};

// Why a case is not supported (0 = it is): the caller quantizes with another kernel.
enum GroupQuantSupport : int {
  kGqOk = 0,
  kGqGroup = 1,      // group_size * element size not a power of two from 16 to 512 bytes (1 to 32 vectors)
  kGqAlign = 2,      // x's base or row stride, or hidden * element size, not a multiple of 16 bytes
  kGqCodeAlign = 3,  // q's base or row stride not a multiple of the thread's code word (8 or 4 bytes)
  kGqSize = 4,       // 2^31 threads or columns or more
};

int group_quant_fp8_supported(const GroupQuantArgs& args);

// cudaErrorInvalidValue for an unsupported case (group_quant_fp8_supported != 0) or a bad launch
// config; else the launch's error (cudaSuccess when nothing needs doing).
cudaError_t group_quant_fp8_launch(const GroupQuantArgs& args, cudaStream_t stream,
                                   GroupQuantLaunch launch = GroupQuantLaunch());

}  // namespace qlinear
