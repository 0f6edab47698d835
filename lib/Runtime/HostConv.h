//===- HostConv.h - single-precision convolutions on the CPU ----*- C++ -*-===//
//
// The CPU backend's f32 2-D convolutions run as oneDNN convolution
// primitives: direct convolutions on NHWC activations (channels-last
// chains, kilnc's CPU layout assignment) or over oneDNN's preferred layout
// (NCHW activations reordered to and from it around each call), the filter
// reordered once, where im2col and sgemm materialised a column matrix of
// KH x KW times the input and multiplied it at GEMM speed
// (docs/performance.md has both). A step's primitives are created once and
// kept by its device.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_HOSTCONV_H
#define KILN_LIB_RUNTIME_HOSTCONV_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

namespace kiln {
namespace rt {

/// The problem: sizes in NCHW terms, the filter OIHW (c / groups channels).
struct HostConvShape {
  int64_t n, c, h, w;      ///< input
  int64_t o, kh, kw;       ///< filters
  int64_t oh, ow;          ///< output
  int64_t groups;
  int64_t strides[2], dilations[2], padding[4]; ///< padding: top, left, bottom, right
  /// The activations stored NHWC and the filter OHWI (KRSC), as the CPU's
  /// channels-last convolution chains keep them: no reorder around the
  /// call (oneDNN's NHWC kernels); else NCHW and OIHW.
  bool channelsLast = false;
  /// Post-ops, channels last only: y = relu(conv + bias + residual), the
  /// residual an NHWC tensor of y's shape (a ResNet block's shortcut).
  bool addResidual = false, relu = false;
  /// The same bits on any thread count (kilnc --deterministic): the call
  /// runs on the calling thread alone (oneDNN's kernels may choose their
  /// blocking by the thread count).
  bool deterministic = false;
};

struct ConvPrimitive;

/// The primitives of one step's convolutions (by op index), with their
/// filters reordered: kept by the device for its session, so a filter is
/// reordered once. Only for filters that stay at their address with the
/// same values (weights).
class HostConvCache {
public:
  HostConvCache();
  ~HostConvCache();
  HostConvCache(HostConvCache &&) noexcept;
  std::unique_ptr<ConvPrimitive> &slot(size_t op);

private:
  std::map<size_t, std::unique_ptr<ConvPrimitive>> primitives_;
};

/// y = conv(x, filter) + bias for f32 tensors (NCHW and OIHW, or NHWC and
/// OHWI); bias may be null. With a cache slot the primitive (and the filter's copy)
/// is kept there; without, both are made for this call. False when oneDNN
/// cannot compute it (the caller falls back to im2col).
bool hostConv2d(const HostConvShape &shape, const float *x, const float *filter,
                const float *bias, float *y, std::unique_ptr<ConvPrimitive> *cached,
                const float *residual = nullptr);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_HOSTCONV_H
