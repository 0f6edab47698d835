//===- ConvCall.h - one cuDNN convolution, as the executable stores it -*- C++ -*-===//
//
// A convolution step given to cuDNN carries this descriptor instead of a
// kernel, as a cuBLASLt step carries a GemmCall: made at compile time,
// checked by the loader, turned into a cuDNN operation graph on a GPU and
// run on the host by cuda-emu (runConvOnHost), so the compiler's
// translation is tested without a GPU.
//
//   y = epilogue(conv(x, w) + bias)
//
// x is [N, C, H, W], w is [K, C/groups, R, S], y is [N, K, P, Q] (the
// logical dimensions), all row-major (NCHW), or with `nhwc` all stored
// channels last: x as NHWC, w as KRSC, y as NPQK (kiln-assign-layouts
// chooses that for Tensor Core convolutions, whose fast cuDNN engines
// take channels last); bias has K elements; the epilogue's ReLU follows
// the bias.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CONVCALL_H
#define KILN_RUNTIME_CONVCALL_H

#include "kiln/Reference/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

struct ConvCall {
  int64_t n = 0, c = 0, h = 0, w = 0; ///< input
  int64_t k = 0, r = 0, s = 0;        ///< filters: k of them, r x s
  int64_t p = 0, q = 0;               ///< output height and width
  int64_t groups = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  ref::DType type = ref::DType::F32; ///< x, w, y and the bias
  bool bias = false, relu = false;
  /// x, w and y stored channels last (see above).
  bool nhwc = false;
  /// Step inputs (by position) holding x, w and the bias (-1: none); y is
  /// the step's only output.
  int32_t x = -1, filter = -1, biasInput = -1;
  /// Exclude engines that round f32 inputs (TF32 Tensor Cores) unless the
  /// user allowed it, and engines whose results vary between runs.
  bool allowTf32 = false, deterministic = false;
  uint64_t workspaceBytes = 0, workspaceOffset = 0;
};

/// The call's sizes, in the order an executable numbers them when one is
/// symbolic (ExecutableFormat.fbs, SymbolicField), and the name the
/// compiler's descriptor gives each.
constexpr const char *kConvSizeFields[] = {"n", "c", "h", "w", "k", "r", "s", "p", "q"};
constexpr unsigned kNumConvSizeFields = 9;
inline int64_t &convSizeField(ConvCall &call, unsigned field) {
  int64_t *fields[kNumConvSizeFields] = {&call.n, &call.c, &call.h, &call.w, &call.k,
                                         &call.r, &call.s, &call.p, &call.q};
  return *fields[field];
}

/// Why `call` cannot run on these buffers, or "" when every access stays
/// inside them and the shapes agree.
std::string checkConvCall(const ConvCall &call, const std::vector<ref::DType> &inputTypes,
                          const std::vector<int64_t> &inputElements, ref::DType outputType,
                          int64_t outputElements, uint64_t arenaBytes);

/// Runs `call` on host memory (f32 accumulation), as cuDNN would.
void runConvOnHost(const ConvCall &call, const uint8_t *x, const uint8_t *w, const uint8_t *bias,
                   uint8_t *y);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_CONVCALL_H
