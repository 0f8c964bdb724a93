// Host-side check of the wgmma W4A16 GEMM launcher's config logic, used by
// tests/test_w4a16_wgmma_config_host.py (no GPU needed: w4_wgmma_resolve / w4_wgmma_supported run with
// the device attributes at their defaults, 132 SMs; without a device w4_wgmma_built is 0). Arguments:
// groups of 7 integers (n, k, m, tokens, splits, stages, rows per CTA or 0) on an asymmetric group-128
// layer; prints per group "supported tokens splits stages workspace_floats reduce rows".
#include <cstdio>
#include <cstdlib>

#include "w4a16_gemm_launch.h"
#include "w4a16_host_args.h"

int main(int argc, char** argv) {
  using namespace qlinear;
  for (int i = 1; i + 6 < argc; i += 7) {
    int v[7];
    for (int j = 0; j < 7; ++j) v[j] = std::atoi(argv[i + j]);
    const W4GemvArgs a = w4a16_host_args(v[0], v[1], v[2]);
    W4GemmConfig c;
    c.tokens = v[3];
    c.splits = v[4];
    c.stages = v[5];
    c.warps = v[6] / 16;
    const int64_t ws = w4_wgmma_workspace_floats(a, c);
    const int why = static_cast<int>(w4_wgmma_supported(a, c, ws, 1 << 20));
    const W4GemmConfig r = w4_wgmma_resolve(a, c);
    std::printf("%d %d %d %d %lld %d %d\n", why, r.tokens, r.splits, r.stages, static_cast<long long>(ws), r.reduce,
                r.warps * 16);
  }
  return 0;
}
