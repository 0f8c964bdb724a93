// The W4A16 operands the host config programs ask their launchers about: an asymmetric group-128
// layer of n x k with m rows of x, every pointer at one 16-byte aligned dummy buffer (nothing is
// read: the launchers only check alignment and sizes).
#pragma once

#include "w4a16_gemv_launch.h"

inline qlinear::W4GemvArgs w4a16_host_args(int n, int k, int m) {
  alignas(16) static unsigned char buf[256];
  qlinear::W4GemvArgs a;
  a.x = buf;
  a.qweight = reinterpret_cast<const int32_t*>(buf);
  a.scales = buf;
  a.zeros = buf;
  a.out = buf;
  a.n = n;
  a.k = k;
  a.m = m;
  a.x_stride = a.k;
  a.out_stride = a.n;
  a.qw_stride = (a.k + 127) / 128 * 16;
  a.group_size = 128;
  a.num_groups = (a.k + 127) / 128;
  return a;
}
