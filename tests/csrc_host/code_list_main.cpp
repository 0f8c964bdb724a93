// Host program of tests/test_code_list_host.py: csrc/code_list.h on a list of its own. For each code
// given on the command line, one line: code_listed, and with_listed_code's result for a functor that
// needs its argument as a compile-time constant (-1 when the code is not listed).
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "code_list.h"

namespace {

constexpr int kCodes[] = {1210, 4110, 11824, 7};

// a template argument: only a compile-time constant compiles here
template <int C>
constexpr long encoded() {
  return std::integral_constant<long, 3L * C + 1>::value;
}

constexpr long lookup(int code) {
  return qlinear::with_listed_code<kCodes>(code, -1L, [](auto c) { return encoded<decltype(c)::value>(); });
}

// usable in constant expressions, as csrc's reg_code_threads is
static_assert(lookup(4110) == 12331 && lookup(4111) == -1, "with_listed_code in a constant expression");

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const int code = std::atoi(argv[i]);
    std::printf("%d %ld\n", qlinear::code_listed(kCodes, code) ? 1 : 0, lookup(code));
  }
  return 0;
}
