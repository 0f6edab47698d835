//===- ConvCall.cpp - checking and host execution of cuDNN calls ----------===//

#include "kiln/Runtime/ConvCall.h"

#include "LibraryElements.h"

#include <algorithm>

namespace kiln {
namespace rt {

std::string checkConvCall(const ConvCall &g, const std::vector<ref::DType> &inputTypes,
                          const std::vector<int64_t> &inputElements, ref::DType outputType,
                          int64_t outputElements, uint64_t arenaBytes) {
  // cuDNN takes int sizes.
  const int64_t limit = int64_t(1) << 31;
  for (int64_t v : {g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.p, g.q, g.groups, g.strideH, g.strideW,
                    g.dilationH, g.dilationW, g.padTop, g.padLeft, g.padBottom, g.padRight})
    if (v < 0 || v >= limit)
      return "has a negative or oversized size";
  for (int64_t v : {g.n, g.c, g.k, g.r, g.s, g.groups, g.strideH, g.strideW, g.dilationH,
                    g.dilationW})
    if (v < 1)
      return "has a zero size, stride, dilation or group count";
  if (g.c % g.groups || g.k % g.groups)
    return "has channels that do not split into its groups";
  if (g.type != ref::DType::F32 && g.type != ref::DType::F16 && g.type != ref::DType::BF16)
    return "has an element type cuDNN is not called with here";
  // The output size must follow from the input, or the loops below would
  // read outside x.
  int64_t spanH = g.dilationH * (g.r - 1) + 1, spanW = g.dilationW * (g.s - 1) + 1;
  int64_t paddedH = g.h + g.padTop + g.padBottom, paddedW = g.w + g.padLeft + g.padRight;
  int64_t wantP = paddedH < spanH ? 0 : (paddedH - spanH) / g.strideH + 1;
  int64_t wantQ = paddedW < spanW ? 0 : (paddedW - spanW) / g.strideW + 1;
  if (g.p != wantP || g.q != wantQ)
    return "has an output size that does not follow from its input, filter, strides and padding";
  // Each size fits in 32 bits but their products need not fit in 64: a
  // wrapped product could match a small (even empty) tensor. Within the
  // element limit, the products and every index below are exact.
  using Dims = std::initializer_list<int64_t>;
  if (!ref::withinElementLimit(Dims{g.n, g.c, g.h, g.w}) ||
      !ref::withinElementLimit(Dims{g.k, g.c / g.groups, g.r, g.s}) ||
      !ref::withinElementLimit(Dims{g.n, g.k, g.p, g.q}))
    return "has more elements than a tensor may hold";
  int64_t needX = g.n * g.c * g.h * g.w, needFilter = g.k * (g.c / g.groups) * g.r * g.s,
          needY = g.n * g.k * g.p * g.q;
  struct Operand {
    const char *name;
    int32_t input;
    int64_t need;
    bool optional;
  };
  Operand operands[] = {{"x", g.x, needX, false},
                        {"the filter", g.filter, needFilter, false},
                        {"the bias", g.biasInput, g.k, true}};
  if (g.bias != (g.biasInput >= 0))
    return "has a bias flag without a bias input, or a bias input without the flag";
  for (const Operand &o : operands) {
    if (o.input < 0 && o.optional)
      continue;
    if (o.input < 0 || static_cast<size_t>(o.input) >= inputTypes.size())
      return std::string("takes ") + o.name + " from a step input it does not have";
    if (inputTypes[o.input] != g.type)
      return std::string("reads ") + o.name + " with another element type than its input's";
    if (inputElements[o.input] != o.need)
      return std::string("reads ") + std::to_string(o.need) + " elements of " + o.name +
             ", whose input has " + std::to_string(inputElements[o.input]);
  }
  if (outputType != g.type || outputElements != needY)
    return "writes y with another type or size than the step's output";
  if (g.workspaceBytes > arenaBytes || g.workspaceOffset > arenaBytes - g.workspaceBytes)
    return "has a workspace outside the arena";
  return "";
}

void runConvOnHost(const ConvCall &g, const uint8_t *x, const uint8_t *w, const uint8_t *bias,
                   uint8_t *y) {
  int64_t cg = g.c / g.groups, kg = g.k / g.groups;
  // Where logical element [a, b, c, d] of a tensor of dims [A, B, C, D]
  // lives: row-major, or channels (b) last.
  auto offset = [&](int64_t a, int64_t b, int64_t c, int64_t d, int64_t B, int64_t C,
                    int64_t D) {
    return g.nhwc ? ((a * C + c) * D + d) * B + b : ((a * B + b) * C + c) * D + d;
  };
  std::vector<float> filter(static_cast<size_t>(g.k * cg * g.r * g.s)); // logical KCRS
  for (int64_t k = 0; k < g.k; ++k)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < g.r; ++r)
        for (int64_t s = 0; s < g.s; ++s)
          filter[((k * cg + c) * g.r + r) * g.s + s] =
              loadElement(g.type, w, offset(k, c, r, s, cg, g.r, g.s));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t k = 0; k < g.k; ++k) {
      int64_t group = k / kg;
      for (int64_t p = 0; p < g.p; ++p)
        for (int64_t q = 0; q < g.q; ++q) {
          float sum = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < g.r; ++r) {
              int64_t ih = p * g.strideH - g.padTop + r * g.dilationH;
              if (ih < 0 || ih >= g.h)
                continue;
              for (int64_t s = 0; s < g.s; ++s) {
                int64_t iw = q * g.strideW - g.padLeft + s * g.dilationW;
                if (iw < 0 || iw >= g.w)
                  continue;
                int64_t xi = offset(n, group * cg + c, ih, iw, g.c, g.h, g.w);
                sum += loadElement(g.type, x, xi) * filter[((k * cg + c) * g.r + r) * g.s + s];
              }
            }
          if (g.bias)
            sum += loadElement(g.type, bias, k);
          if (g.relu)
            sum = std::max(sum, 0.0f);
          storeElement(g.type, y, offset(n, k, p, q, g.k, g.p, g.q), sum);
        }
    }
}

} // namespace rt
} // namespace kiln
