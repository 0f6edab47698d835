//===- Ops.h - kiln ops by name, for evaluation and checking ----*- C++ -*-===//
//
// The MLIR-free description of one graph op: its name ("kiln.matmul"), its
// attributes and its operands. Constant folding (compiler) and the CPU
// backend (runtime) both evaluate ops through `evaluate`, so they compute the
// same values; the runtime's loader uses `checkOp` so that a kernel never
// runs an op whose shapes or attributes are inconsistent.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_OPS_H
#define KILN_REFERENCE_OPS_H

#include "kiln/Reference/Tensor.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace ref {

struct OpAttr {
  enum Kind : uint8_t { Int, Float, Bool, Ints, String, Type } kind = Int;
  int64_t i = 0;
  double f = 0.0;
  std::vector<int64_t> ints;
  std::string s;
  DType dtype = DType::F32;
};
using OpAttrs = std::map<std::string, OpAttr>;

struct TensorInfo {
  DType dtype;
  Shape shape;
};

/// Empty if `name` with `attrs` applied to `operands` is well-formed and
/// computes exactly `results`; otherwise why not.
std::string checkOp(const std::string &name, const OpAttrs &attrs,
                    const std::vector<TensorInfo> &operands,
                    const std::vector<TensorInfo> &results);

/// Evaluates an op; std::nullopt for ops it does not know. Operands must
/// have passed checkOp (or the IR verifier).
std::optional<Tensor> evaluate(const std::string &name, const OpAttrs &attrs,
                               const std::vector<const Tensor *> &operands);

/// The same for f32 row-major operands and result, in place of decoding
/// them to double tensors: elementwise ops, reshape, transpose, slice,
/// concat, constant pad, reductions, softmax, batch and layer norm, pooling. Writes `out` (the result's
/// elements, of `resultShape`) and returns true, bit-identical to
/// evaluate(); false for an op (or broadcast) it has no f32 path for.
bool evaluateF32(const std::string &name, const OpAttrs &attrs,
                 const std::vector<const float *> &operands,
                 const std::vector<const Shape *> &shapes, const Shape &resultShape, float *out);

/// The same for an op reading f32 values stored channels last (`nhwc`, the
/// physical shape): max pooling with dilation 1 (into NHWC) and global
/// average pooling (into N x C, which is [N, C, 1, 1] in either order);
/// false for anything else.
bool evaluateNhwcF32(const std::string &name, const OpAttrs &attrs, const float *x,
                     const Shape &nhwc, float *out);

} // namespace ref
} // namespace kiln

#endif // KILN_REFERENCE_OPS_H
