//===- HostConv.h - single-precision convolutions on the CPU ----*- C++ -*-===//
//
// The CPU backend's f32 2-D convolutions run as oneDNN convolution
// primitives: direct convolutions over oneDNN's blocked layouts (the
// activations reordered from and back to NCHW around each call, the filter
// once), where im2col and sgemm materialised a column matrix of KH x KW
// times the input and multiplied it at GEMM speed (docs/performance.md has
// both). A primitive is created once per problem and filter and kept.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_HOSTCONV_H
#define KILN_LIB_RUNTIME_HOSTCONV_H

#include <cstdint>

namespace kiln {
namespace rt {

/// y = conv(x, w) + bias for row-major (NCHW, OIHW) f32 tensors; bias may be
/// null. `filter` must stay at its address (a weight): its reordered copy
/// is kept with the primitive. False when oneDNN cannot compute it (the
/// caller falls back to im2col).
struct HostConvShape {
  int64_t n, c, h, w;      ///< input
  int64_t o, kh, kw;       ///< filters (c / groups channels each)
  int64_t oh, ow;          ///< output
  int64_t groups;
  int64_t strides[2], dilations[2], padding[4]; ///< padding: top, left, bottom, right
};
bool hostConv2d(const HostConvShape &shape, const float *x, const float *filter,
                const float *bias, float *y);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_HOSTCONV_H
