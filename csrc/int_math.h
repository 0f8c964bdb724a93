// Integer arithmetic shared by the launchers (plain C++, no CUDA or torch headers).
#pragma once

#include <stdint.h>

namespace qlinear {

// ceil(a / b) for a >= 0, b > 0.
constexpr int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace qlinear
