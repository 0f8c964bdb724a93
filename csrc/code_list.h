// Compiled-instance lists (plain C++, no CUDA or torch headers). A kernel family names the template
// shapes it compiles once, as an array of decimal codes (`constexpr int kCodes[] = {...}`, the digits
// of a code are its template arguments); the launchers look a run-time code up in that array, so no
// other place names an instance. Shared by the kernel families (W4A16 decode / GEMM / wgmma, FP8
// decode).
#pragma once

#include <stddef.h>

#include <iterator>
#include <type_traits>
#include <utility>

namespace qlinear {

// Whether code is one of codes.
template <size_t L>
constexpr bool code_listed(const int (&codes)[L], int code) {
  for (size_t i = 0; i < L; ++i)
    if (codes[i] == code) return true;
  return false;
}

// Appends a compiled-code list to codes[0 .. cap) after the n already there; returns the new count
// (which may exceed cap: the caller learns how many there are). Host side, for the *_configs() queries.
template <size_t N>
inline int append_codes(const int (&list)[N], int* codes, int cap, int n) {
  for (int c : list)
    if (n++ < cap) codes[n - 1] = c;
  return n;
}

template <const auto& Codes, typename R, typename F, size_t... I>
constexpr R with_listed_code(int code, R none, F& f, std::index_sequence<I...>) {
  R r = none;
  // at most one entry equals code (the lists hold distinct codes); || stops at it
  (void)((code == Codes[I] && ((r = f(std::integral_constant<int, Codes[I]>{})), true)) || ...);
  return r;
}

// f(std::integral_constant<int, C>{}) for the entry C of Codes equal to code, `none` when code is not
// listed: a run-time code becomes the compile-time constant that instantiates the instance.
template <const auto& Codes, typename R, typename F>
constexpr R with_listed_code(int code, R none, F f) {
  return with_listed_code<Codes>(code, none, f, std::make_index_sequence<std::size(Codes)>{});
}

}  // namespace qlinear
