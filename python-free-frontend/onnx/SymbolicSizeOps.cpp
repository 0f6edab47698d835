//===- SymbolicSizeOps.cpp - shape computations over dynamic sizes --------===//
//
// Exporters compute reshape targets from the input's shape at run time:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, with arithmetic in
// between. Over static shapes these fold to constants (ShapeOps.cpp); over
// dynamic dimensions they fold to symbolic sizes here, so the Reshape or
// Expand that reads them gets a symbolic target and no shape is computed
// at run time.
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/SymbolicSizes.h"

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

bool anySymbolic(NodeContext &c) {
  for (size_t k = 0; k < c.numInputs(); ++k)
    if (c.isSymbolic(k))
      return true;
  return false;
}

/// A result of the input's rank-ness: a vector unless the input is a scalar.
bool isVector(NodeContext &c, size_t k) { return c.rank(c.input(k)) == 1; }

/// Elementwise arithmetic with NumPy broadcasting of a scalar or [1].
std::optional<LogicalResult> arithmetic(NodeContext &c, const std::string &op) {
  auto a = c.sizeInts(0), b = c.sizeInts(1);
  if (!a || !b)
    return c.unsupportedBecause("computes on dynamic sizes with a value that is not a constant");
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1))
    return c.unsupportedBecause("computes on dynamic sizes of different lengths");
  SmallVector<AffineExpr> out;
  for (size_t i = 0; i < n; ++i) {
    AffineExpr x = (*a)[a->size() == 1 ? 0 : i], y = (*b)[b->size() == 1 ? 0 : i];
    if (op == "Add")
      out.push_back(x + y);
    else if (op == "Sub")
      out.push_back(x - y);
    else if (op == "Mul")
      out.push_back(x * y);
    else {
      // Integer division of sizes: exact quotients stay products, a
      // constant divisor floors (sizes are non-negative, so floor is
      // ONNX's truncation).
      if (std::optional<AffineExpr> q = exactQuotient(x, y))
        out.push_back(*q);
      else if (auto d = llvm::dyn_cast<AffineConstantExpr>(y); d && d.getValue() > 0)
        out.push_back(x.floorDiv(d.getValue()));
      else
        return c.unsupportedBecause("divides a dynamic size by a size that does not divide it");
    }
  }
  bool vector = isVector(c, 0) || isVector(c, 1);
  return c.finish(c.symbolicResult(out, vector, c.type(c.input(0)).getElementType()));
}

} // namespace

std::optional<LogicalResult> convertSymbolicSizes(NodeContext &c) {
  const std::string &op = c.node.op_type();
  MLIRContext *context = c.builder.getContext();
  if (op == "Shape" || op == "Size") {
    Value x = c.input(0);
    if (!x || !hasSymbolicSizes(x.getType()))
      return std::nullopt;
    SmallVector<AffineExpr> sizes = getDimSizes(c.type(x));
    Type i64 = c.builder.getI64Type();
    if (op == "Size")
      return c.finish(c.symbolicResult({productOf(sizes, context)}, false, i64));
    int64_t rank = sizes.size();
    int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, start, rank);
    return c.finish(c.symbolicResult(ArrayRef<AffineExpr>(sizes).slice(start, end - start),
                                     true, i64));
  }
  if (!anySymbolic(c))
    return std::nullopt;
  Type element = c.type(c.input(0)).getElementType();
  if (op == "Gather") {
    auto data = c.sizeInts(0), indices = c.sizeInts(1);
    if (!data || !indices || c.rank(c.input(0)) != 1)
      return c.unsupportedBecause("gathers from dynamic sizes with indices that are not constants");
    SmallVector<AffineExpr> out;
    for (AffineExpr i : *indices) {
      auto index = llvm::dyn_cast<AffineConstantExpr>(i);
      int64_t n = data->size();
      if (!index || index.getValue() < -n || index.getValue() >= n) {
        emitError(c.loc) << "gather index out of range for " << n << " sizes";
        return failure();
      }
      out.push_back((*data)[index.getValue() < 0 ? index.getValue() + n : index.getValue()]);
    }
    return c.finish(c.symbolicResult(out, isVector(c, 1), element));
  }
  if (op == "Concat") {
    SmallVector<AffineExpr> out;
    for (size_t k = 0; k < c.numInputs(); ++k) {
      auto part = c.sizeInts(k);
      if (!part)
        return c.unsupportedBecause("concatenates dynamic sizes with a value that is not a constant");
      out.append(part->begin(), part->end());
    }
    return c.finish(c.symbolicResult(out, true, element));
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Cast" || op == "Identity") {
    // Same values, rank 0 <-> [1] (Unsqueeze/Squeeze on axis 0).
    auto values = c.sizeInts(0);
    if (!values)
      return std::nullopt;
    bool vector = op == "Unsqueeze" ? true : op == "Squeeze" ? false : isVector(c, 0);
    if (op == "Unsqueeze" && isVector(c, 0))
      return c.unsupportedBecause("unsqueezes a vector of dynamic sizes");
    if (op == "Squeeze" && values->size() != 1)
      return c.unsupportedBecause("squeezes dynamic sizes to a scalar from more than one");
    Type to = element;
    if (op == "Cast") {
      int64_t target = c.attrInt("to", 0);
      // INT32 (6) or INT64 (7): sizes stay sizes; anything else is data.
      if (target != 6 && target != 7)
        return c.unsupportedBecause("casts dynamic sizes to a non-integer type");
      to = target == 6 ? c.builder.getI32Type() : c.builder.getI64Type();
    }
    return c.finish(c.symbolicResult(*values, vector, to));
  }
  if (op == "Slice") {
    if (!c.isSymbolic(0))
      return std::nullopt; // data sliced to symbolic bounds: ShapeOps.cpp
    auto values = c.sizeInts(0), starts = c.sizeInts(1), ends = c.sizeInts(2);
    if (!values || !starts || !ends || starts->size() != 1 || ends->size() != 1 ||
        c.input(4))
      return c.unsupportedBecause("slices dynamic sizes with bounds that are not constants");
    auto s = llvm::dyn_cast<AffineConstantExpr>((*starts)[0]);
    auto e = llvm::dyn_cast<AffineConstantExpr>((*ends)[0]);
    if (!s || !e)
      return c.unsupportedBecause("slices dynamic sizes with bounds that are not constants");
    int64_t n = values->size();
    int64_t start = std::clamp<int64_t>(s.getValue() < 0 ? s.getValue() + n : s.getValue(), 0, n);
    int64_t end = std::clamp<int64_t>(e.getValue() < 0 ? e.getValue() + n : e.getValue(), start, n);
    return c.finish(c.symbolicResult(ArrayRef<AffineExpr>(*values).slice(start, end - start),
                                     true, element));
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")
    return arithmetic(c, op);
  return std::nullopt;
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
