// Error-message text for the torch bindings, built without std::ostream number formatting.
//
// Why: on the session-5 H200 image (torch 2.11 built with gcc-toolset-13, extensions built with
// Ubuntu g++ 13.3) a c10 error thrown from an extension kills the process with SIGSEGV as soon as
// its message inserts a number into a stream, while messages made only of strings raise normally
// (benchmarks/probe_binding_errors.py, benchmarks/results/session5/probe5_r3/probe5.log):
//   TORCH_CHECK(false, "plain error")                    -> RuntimeError
//   TORCH_CHECK(false, "error with an int ", kind)       -> SIGSEGV (so do _TYPE / _VALUE / _INDEX)
//   "weight: dtype Float differs from x's BFloat16"      -> TypeError (strings and ScalarTypes only)
//   any message printing sizes() / strides() / int64_t  -> SIGSEGV
// torch's own errors are unaffected. The likely cause is the libstdc++ numeric insertion (num_put)
// the extension's inline c10::str instantiates not matching torch's build; not proven.
//
// Hence every binding message is one std::string made by msg::cat from strings, ScalarTypes and
// Devices only; numbers go through num() / dims() / shape() / strides(), which format with
// std::to_string / snprintf into exactly the text the stream would have produced ("[2, 3]",
// "1e-10"). TORCH_CHECK given a single std::string passes it through untouched (c10::str's
// one-string case), so no ostream is involved at all. cat() refuses anything else at compile time.
//
// Host-only; include from binding .cpp files, never from .cu / .cuh.
#pragma once

#include <ATen/core/TensorBase.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

namespace qlinear::msg {

// Decimal text of an integer (bool excluded: it would read as 0 / 1).
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
inline std::string num(T v) {
  return std::to_string(v);
}

// "%g": the default ostream format of a double (6 significant digits, 1e-10 not 0.000000).
inline std::string num(double v) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof(buf), "%g", v);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

// "[d0, d1, ...]", as c10 prints an IntArrayRef.
inline std::string dims(c10::IntArrayRef d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(d[i]);
  }
  s += "]";
  return s;
}

inline std::string shape(const at::TensorBase& t) { return dims(t.sizes()); }
inline std::string strides(const at::TensorBase& t) { return dims(t.strides()); }

namespace detail {
template <typename T>
inline constexpr bool kNever = false;

template <typename T>
inline void append(std::string& s, const T& v) {
  if constexpr (std::is_same_v<T, c10::ScalarType>) {
    s += c10::toString(v);
  } else if constexpr (std::is_same_v<T, c10::Device>) {
    s += v.str();  // "cuda:0", the text c10's operator<< writes
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    s += std::string_view(v);
  } else {
    static_assert(kNever<T>, "qlinear::msg::cat takes strings, ScalarType and Device only: wrap numbers in "
                             "msg::num(), sizes / strides in msg::shape() / msg::strides() / msg::dims()");
  }
}
}  // namespace detail

// Concatenation of strings (std::string, string literals, const char*), ScalarType names and
// Device names; anything else does not compile.
template <typename... Args>
inline std::string cat(const Args&... args) {
  std::string s;
  (detail::append(s, args), ...);
  return s;
}

}  // namespace qlinear::msg
