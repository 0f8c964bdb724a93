// Host helpers shared by the torch bindings (binding_*.cpp); never included from .cu / .cuh.
#pragma once

#include <ATen/core/TensorBase.h>
#include <c10/util/Exception.h>

#include "msg.h"

namespace qlinear {

// The launcher's dtype enum value for a float16 / bfloat16 / float32 tensor; any other dtype raises
// TypeError naming the parameter. E is one of the launchers' own enums (NormDType, NqDType, ...),
// each with kFloat16, kBFloat16 and kFloat32: matched by name, not by numeric value.
template <typename E>
E float_dtype(const at::TensorBase& t, const char* name) {
  switch (t.scalar_type()) {
    case at::kHalf:
      return E::kFloat16;
    case at::kBFloat16:
      return E::kBFloat16;
    case at::kFloat:
      return E::kFloat32;
    default:
      TORCH_CHECK_TYPE(false, msg::cat(name, ": expected float16, bfloat16 or float32, got ", t.scalar_type()));
  }
  return E::kFloat32;  // not reached: the default case throws
}

// A launch's preferred shared-memory carveout argument (pdl.cuh): -1 (none) or a percent 0 .. 100, else
// RuntimeError naming it.
inline void check_carveout(int64_t carveout) {
  TORCH_CHECK(carveout >= -1 && carveout <= 100,
              msg::cat("carveout: expected -1 (none) or a percent from 0 to 100, got ", msg::num(carveout)));
}

}  // namespace qlinear
