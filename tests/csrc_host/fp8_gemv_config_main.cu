// Host-side check of the FP8 decode GEMM launcher's config logic, used by
// tests/test_fp8_gemv_config_host.py (no GPU needed: only decode / encode / resolve / supported run,
// and the device attributes fall back to an H100 / H200's values). Arguments: triples of
// (code, M, pre-quantized 0 / 1) on a 2112 x 7168 weight; prints per triple
// "code M pq supported resolved-code decode-encode-round-trip".
#include <cstdio>
#include <cstdlib>

#include "fp8_gemv_launch.h"

int main(int argc, char** argv) {
  using namespace qlinear;
  alignas(16) static unsigned char buf[256];
  alignas(16) static int32_t ws[kFp8GemvCounters + (1 << 16)];
  for (int i = 1; i + 2 < argc; i += 3) {
    const long long code = std::atoll(argv[i]);
    const int m = std::atoi(argv[i + 1]);
    const bool pq = std::atoi(argv[i + 2]) != 0;
    Fp8GemvArgs a;
    a.x = buf;
    a.weight = buf;
    a.wsi = reinterpret_cast<const float*>(buf);
    a.x_scales = pq ? reinterpret_cast<const float*>(buf) : nullptr;
    a.m = m;
    a.n = 2112;
    a.k = 7168;
    a.x_stride = 7168;
    a.w_stride = 7168;
    a.workspace = ws;
    a.workspace_words = sizeof(ws) / sizeof(ws[0]);
    const int why = static_cast<int>(fp8_gemv_supported(a, code));
    const long long used = static_cast<long long>(fp8_gemv_encode(fp8_gemv_resolve(a, code)));
    const long long round = static_cast<long long>(fp8_gemv_encode(fp8_gemv_decode(code)));
    std::printf("%lld %d %d %d %lld %lld\n", code, m, pq ? 1 : 0, why, used, round);
  }
  return 0;
}
