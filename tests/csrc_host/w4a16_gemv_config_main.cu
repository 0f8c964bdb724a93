// Host-side check of the W4A16 decode launcher's config logic, used by
// tests/test_w4a16_gemv_config_host.py (no GPU needed: only w4_gemv_supported / w4_gemv_resolve run,
// and the device attributes fall back to their defaults: 132 SMs, 48 KB of opt-in shared memory,
// compute capability 0, so the bulk ring is refused). Arguments: groups of 9 integers (n, k, m,
// row_tiles, chunk, warps, ring, pipe, fold) on an asymmetric group-128 layer; prints per group
// "supported row_tiles chunk warps ring pipe fold" (the resolved config). With the single argument
// "lists": the compiled ring codes (w4_ring_configs) for one and two token tiles, a line each.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "w4a16_gemv_launch.h"
#include "w4a16_host_args.h"

int main(int argc, char** argv) {
  using namespace qlinear;
  if (argc == 2 && std::strcmp(argv[1], "lists") == 0) {
    for (int nt = 1; nt <= 2; ++nt) {
      int codes[256];
      const int n = w4_ring_configs(nt, codes, 256);
      for (int j = 0; j < n && j < 256; ++j) std::printf(j ? " %d" : "%d", codes[j]);
      std::printf("\n");
    }
    return 0;
  }
  for (int i = 1; i + 8 < argc; i += 9) {
    int v[9];
    for (int j = 0; j < 9; ++j) v[j] = std::atoi(argv[i + j]);
    const W4GemvArgs a = w4a16_host_args(v[0], v[1], v[2]);
    W4GemvConfig c;
    c.row_tiles = v[3];
    c.chunk = v[4];
    c.warps = v[5];
    c.ring = v[6];
    c.pipe = v[7];
    c.fold = v[8];
    const int why = static_cast<int>(w4_gemv_supported(a, c));
    const W4GemvConfig r = w4_gemv_resolve(a, c);
    std::printf("%d %d %d %d %d %d %d\n", why, r.row_tiles, r.chunk, r.warps, r.ring, r.pipe, r.fold);
  }
  return 0;
}
