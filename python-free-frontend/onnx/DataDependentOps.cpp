//===- DataDependentOps.cpp - ONNX ops whose output lengths follow data ---===//
//
// The length of NonZero's, Compress's and Unique's outputs follows the
// values of their operands. Where those values are computed by the model
// (not constants, not small model inputs read before the run), the entries
// are computed at their upper bound, ordered so that the kept ones come
// first, and cut to their count when the model runs: kiln.take_prefix,
// whose length the runtime reads between steps (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/SymbolicSizes.h"

#include <limits>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

Value nonZeroPrefix(NodeContext &c, Value flat, const std::string &name) {
  Type i64 = c.builder.getI64Type();
  Value isZero = c.cast(c.build<EqOp>({flat, c.scalarLike(flat, 0)}), i64);
  Value order = c.build<ArgSortOp>(isZero, {c.named("axis", c.builder.getI64IntegerAttr(0))});
  Value count = c.build<ReduceSumOp>(c.build<SubOp>({c.constantI64(1, false), isZero}),
                                     {c.named("axes", c.ints({0}))});
  return order && count ? c.takePrefix(order, count, 0, name) : Value();
}

namespace {

/// The most entries Unique compares: each group is found by comparing
/// every entry with every group's first (an [entries, groups] table of
/// i64, planned at its largest: 8 MiB).
constexpr int64_t kMaxUniqueEntries = 1024;
/// The most values in one entry (a row along `axis`): sorted one by one.
constexpr int64_t kMaxUniqueRowValues = 64;

/// Unique: the distinct entries of X (its elements, or its slices along
/// `axis`), sorted or in order of first occurrence, with the index of each
/// one's first occurrence, each entry's index into them and their counts.
///
/// The entries are sorted stably and lexicographically (by their last
/// value, then stably by each earlier one, as a radix sort does); an entry
/// that differs from the one before starts a group; the groups' starts,
/// first in a stable sort of "does not start one", are cut to their count.
LogicalResult uniqueOf(NodeContext &c) {
  Value x = c.input(0);
  RankedTensorType type = c.type(x);
  if (hasSymbolicSizes(type))
    return c.unsupportedBecause("Unique of dynamic dimensions");
  Type i64 = c.builder.getI64Type();
  MLIRContext *context = c.builder.getContext();
  auto axisAttr = [&](int64_t a) { return c.named("axis", c.builder.getI64IntegerAttr(a)); };
  auto gather = [&](Value data, Value indices, int64_t a = 0) {
    return c.build<GatherOp>({data, indices}, {axisAttr(a)});
  };
  auto argsort = [&](Value v) { return c.build<ArgSortOp>(v, {axisAttr(0)}); };
  auto sum = [&](Value v, int64_t a) {
    return c.build<ReduceSumOp>(v, {c.named("axes", c.ints({a}))});
  };
  std::optional<int64_t> axis;
  if (c.attr("axis")) {
    FailureOr<int64_t> a = c.axis(c.attrInt("axis", 0), type.getRank());
    if (failed(a))
      return failure();
    axis = *a;
  }
  // The entries as rows of `width` values.
  int64_t n = axis ? type.getDimSize(*axis) : type.getNumElements();
  int64_t width = n ? type.getNumElements() / n : 1;
  if (n == 0 || n > kMaxUniqueEntries || width > kMaxUniqueRowValues)
    return c.unsupportedBecause("Unique of 1 to " + std::to_string(kMaxUniqueEntries) +
                                " entries of at most " + std::to_string(kMaxUniqueRowValues) +
                                " values each");
  Value rows;
  if (axis) {
    SmallVector<int64_t> perm = {*axis};
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != *axis)
        perm.push_back(d);
    rows = c.reshape(c.build<TransposeOp>(x, {c.named("perm", c.ints(perm))}), {n, width});
  } else {
    rows = c.reshape(x, {n, 1});
  }
  SmallVector<int64_t> positions(n);
  for (int64_t k = 0; k < n; ++k)
    positions[k] = k;
  Value position = c.constantI64(positions);
  Value order = position;
  for (int64_t k = width - 1; k >= 0; --k) {
    Value column = c.reshape(
        c.build<SliceOp>(rows, {c.named("starts", c.ints({0, k})),
                                c.named("ends", c.ints({n, k + 1})),
                                c.named("steps", c.ints({1, 1}))}),
        {n});
    order = gather(order, argsort(gather(column, order)));
  }
  // isNew[p]: the sorted entry p starts a group.
  Value isNew = c.constantI64(SmallVector<int64_t>{1});
  if (n > 1) {
    Value sortedRows = gather(rows, order);
    auto cut = [&](int64_t from, int64_t to) {
      return c.build<SliceOp>(sortedRows, {c.named("starts", c.ints({from, 0})),
                                           c.named("ends", c.ints({to, width})),
                                           c.named("steps", c.ints({1, 1}))});
    };
    Value differs = c.build<ReduceMaxOp>(
        c.cast(c.build<NeOp>({cut(1, n), cut(0, n - 1)}), i64), {c.named("axes", c.ints({1}))});
    isNew = c.build<ConcatOp>({isNew, differs}, {axisAttr(0)});
  }
  Value count = sum(isNew, 0);
  Value notNew = c.build<SubOp>({c.constantI64(1, false), isNew});
  std::string name = c.node.output(0) + ".dim" + std::to_string(axis.value_or(0));
  Value starts = c.takePrefix(argsort(notNew), count, 0, name);
  if (!starts)
    return failure();
  AffineExpr groups = getDimSizes(c.type(starts))[0];
  AffineExpr one = getAffineConstantExpr(1, context);
  // The group of each sorted entry: the starts at or before it, less one;
  // each group's count: the sorted entries in it.
  Value startsBefore = c.cast(c.build<LeOp>({c.reshapeTo(starts, {groups, one}),
                                              c.reshape(position, {1, n})}),
                              i64);
  Value groupOfSorted = c.build<SubOp>({sum(startsBefore, 0), c.constantI64(1, false)});
  Value inGroup = c.cast(c.build<EqOp>({c.reshape(groupOfSorted, {1, n}),
                                        c.reshapeTo(iotaAtRunTime(c, groups), {groups, one})}),
                         i64);
  Value countsSorted = sum(inGroup, 1);
  Value inverseSorted = gather(groupOfSorted, argsort(order));
  Value picks = starts, counts = countsSorted, inverse = inverseSorted;
  if (c.attrInt("sorted", 1) == 0) {
    // In order of first occurrence: the starts sorted by their first
    // entry's index (the other entries after them all), cut to the count.
    Value key = c.build<AddOp>(
        {c.build<MulOp>({isNew, order}),
         c.build<MulOp>({notNew, c.build<AddOp>({position, c.constantI64(n, false)})})});
    Value byOccurrence = argsort(key);
    picks = c.takePrefix(byOccurrence, count, 0, name + " (by occurrence)");
    counts = gather(countsSorted, gather(groupOfSorted, picks));
    // A sorted group's rank in that order: where its start stands in it.
    inverse = gather(gather(argsort(byOccurrence), starts), inverseSorted);
  }
  Value first = gather(order, picks);
  Value y = axis ? gather(x, first, *axis) : gather(c.reshape(x, {n}), first);
  if (failed(c.finish(y)) || failed(c.finish(first)) || failed(c.finish(inverse)))
    return failure();
  return c.finish(counts);
}

/// NonMaxSuppression: kiln.non_max_suppression's rows at their upper
/// bound, those kept first, cut to the count of them.
LogicalResult nonMaxSuppressionOf(NodeContext &c) {
  Value boxes = c.input(0), scores = c.input(1);
  if (!boxes || !scores || !c.type(boxes).hasStaticShape() || !c.type(scores).hasStaticShape())
    return c.unsupportedBecause("NonMaxSuppression of dynamic dimensions");
  Type i64 = c.builder.getI64Type(), f32 = c.builder.getF32Type();
  // Each optional scalar as a rank-0 value: absent, max_output_boxes_per_class
  // keeps nothing, the IoU threshold is 0 and every score counts.
  auto scalar = [&](size_t k, Type element, double absent) -> Value {
    Value v = c.input(k);
    if (!v)
      return element == i64 ? c.constantI64(static_cast<int64_t>(absent), false)
                            : c.scalarLike(scores, absent);
    if (c.type(v).getNumElements() != 1)
      return emitError(c.loc) << "takes input #" << k << " as one value, got "
                              << c.type(v).getNumElements(),
             Value();
    return c.cast(c.reshape(v, {}), element);
  };
  Value maxOutput = scalar(2, i64, 0);
  Value iou = scalar(3, f32, 0);
  Value scoreThreshold = scalar(4, f32, -std::numeric_limits<double>::infinity());
  int64_t centerPointBox = c.attrInt("center_point_box", 0);
  Value rows = c.build<NonMaxSuppressionOp>(
      {boxes, scores, maxOutput, iou, scoreThreshold},
      {c.named("center_point_box", c.builder.getI64IntegerAttr(centerPointBox))});
  if (!rows)
    return failure();
  int64_t bound = c.type(rows).getDimSize(0);
  Value batches = c.reshape(c.build<SliceOp>(rows, {c.named("starts", c.ints({0, 0})),
                                                     c.named("ends", c.ints({bound, 1})),
                                                     c.named("steps", c.ints({1, 1}))}),
                            {bound});
  Value count = c.build<ReduceSumOp>(
      c.cast(c.build<GeOp>({batches, c.constantI64(0, false)}), i64),
      {c.named("axes", c.ints({0}))});
  return c.finish(c.takePrefix(rows, count, 0, c.node.output(0) + ".dim0"));
}

} // namespace

void registerDataDependentConverters(ConverterMap &m) {
  m["Unique"] = uniqueOf;
  m["NonMaxSuppression"] = nonMaxSuppressionOf;
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
