// The W4A16 kernels' parameter block (w4a16_gemv.cuh Params) from the launchers' operands
// (w4a16_gemv_launch.h W4GemvArgs): shared by the decode launcher and the GEMM launcher.
#pragma once

#include "w4a16_gemv.cuh"
#include "w4a16_gemv_launch.h"

namespace qlinear {

// Pointers, strides, sizes, superblock / group bookkeeping and dtype kinds of `a`; pdl_prefetch as
// given (decode kernels only). Defined in w4a16_gemv_launch.cu.
w4a16g::Params w4_params(const W4GemvArgs& a, int pdl_prefetch);

}  // namespace qlinear
