// Host-side check of the FP8 decode GEMM launcher's config logic, used by
// tests/test_fp8_gemv_config_host.py (no GPU needed: only decode / encode / resolve / supported run,
// and the device attributes fall back to an H100 / H200's values). Arguments: triples of
// (code, M, operands) on a 2112 x 7168 weight, operands = pre-quantized (1) + release flags (2); prints per triple
// "code M operands supported resolved-code decode-encode-round-trip flag-consumers".
#include <cstdio>
#include <cstdlib>

#include "fp8_gemv_launch.h"

int main(int argc, char** argv) {
  using namespace qlinear;
  alignas(16) static unsigned char buf[256];
  alignas(16) static int32_t ws[kFp8GemvCounters + (1 << 16)];
  alignas(16) static uint32_t flags[56];
  for (int i = 1; i + 2 < argc; i += 3) {
    const long long code = std::atoll(argv[i]);
    const int m = std::atoi(argv[i + 1]);
    const int ops = std::atoi(argv[i + 2]);
    const bool pq = (ops & 1) != 0;
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
    if (ops & 2) a.flags = flags;
    const int why = static_cast<int>(fp8_gemv_supported(a, code));
    const long long used = static_cast<long long>(fp8_gemv_encode(fp8_gemv_resolve(a, code)));
    const long long round = static_cast<long long>(fp8_gemv_encode(fp8_gemv_decode(code)));
    const long long consumers = static_cast<long long>(fp8_gemv_flag_consumers(a, code));
    std::printf("%lld %d %d %d %lld %lld %lld\n", code, m, ops, why, used, round, consumers);
  }
  return 0;
}
