//===- OnnxContext.h - state shared by the ONNX op converters ---*- C++ -*-===//

#ifndef KILN_FRONTEND_ONNX_ONNXCONTEXT_H
#define KILN_FRONTEND_ONNX_ONNXCONTEXT_H

#include "kiln/Frontend/BuildOp.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// Constants the importer computes or reads value by value (masks, iotas,
/// folded subgraphs, shape inputs) stay below this many elements, as .kg's
/// generated weights do: an attribute or a shape must not make the compiler
/// allocate without bound.
constexpr int64_t kMaxComputedElements = int64_t(1) << 26;

/// The kiln element type of an ONNX TensorProto data type, or null.
mlir::Type elementTypeOf(mlir::MLIRContext *context, int32_t dataType);
/// A readable name of an ONNX data type ("UINT8").
std::string dataTypeName(int32_t dataType);

/// A TensorProto's contents as a dense literal; fails with `error` set.
mlir::FailureOr<mlir::DenseElementsAttr> tensorToAttr(mlir::MLIRContext *context,
                                                      const onnx::TensorProto &tensor,
                                                      std::string &error);

/// Integer tensors (rank 0 or 1) whose values are sizes known only as
/// symbolic expressions: a Shape of a dynamic tensor and what exporters
/// compute from it (Gather, Concat, Unsqueeze, arithmetic). The importer
/// keeps their values here and stands each for them with a size value (an operand-less
/// builtin.unrealized_conversion_cast) that must be dead once the consumers
/// (Reshape, Expand, ConstantOfShape) have read the sizes.
using SymbolicInts = llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::AffineExpr>>;

/// One node being converted.
class NodeContext {
public:
  NodeContext(mlir::OpBuilder &builder, const onnx::NodeProto &node, int64_t opset,
              mlir::Location loc, llvm::SmallVector<mlir::Value> inputs)
      : builder(builder), node(node), opset(opset), loc(loc), inputs(std::move(inputs)) {}

  mlir::OpBuilder &builder;
  const onnx::NodeProto &node;
  int64_t opset;
  mlir::Location loc;
  /// Null for omitted optional inputs.
  llvm::SmallVector<mlir::Value> inputs;
  llvm::SmallVector<mlir::Value> results;
  /// Set when kiln cannot compile this node; the reason is reported.
  std::string unsupported;
  /// Set when an attribute has the wrong type; the node is in error.
  mutable std::string attrError;

  // Inputs.
  size_t numInputs() const { return inputs.size(); }
  mlir::Value input(size_t k) const { return k < inputs.size() ? inputs[k] : mlir::Value(); }
  mlir::RankedTensorType type(mlir::Value v) const {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }
  int64_t rank(mlir::Value v) const { return type(v).getRank(); }

  // Attributes.
  const onnx::AttributeProto *attr(const std::string &name) const;
  /// The attribute if present with type `type` (or untyped); records an
  /// error and returns null for another type.
  const onnx::AttributeProto *typedAttr(const std::string &name,
                                        onnx::AttributeProto::AttributeType type) const;
  int64_t attrInt(const std::string &name, int64_t fallback) const;
  float attrFloat(const std::string &name, float fallback) const;
  std::string attrString(const std::string &name, const std::string &fallback) const;
  std::optional<std::vector<int64_t>> attrInts(const std::string &name) const;

  /// Marks the node unsupported; returns failure for `return unsupportedBecause(...)`.
  mlir::LogicalResult unsupportedBecause(const std::string &reason) {
    unsupported = reason;
    return mlir::failure();
  }

  // Building.
  /// Builds an op; null if an operand is null (an earlier build failed and
  /// reported why) or if this one fails. The converters' helpers likewise
  /// return null (or failure) for a null operand, so one failed build ends
  /// the node's conversion with its error instead of a null dereference.
  template <typename OpT>
  mlir::Value build(mlir::ValueRange operands,
                    llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    for (mlir::Value v : operands)
      if (!v)
        return mlir::Value();
    mlir::Operation *op = buildOp<OpT>(builder, loc, operands, attrs);
    return op ? op->getResult(0) : mlir::Value();
  }
  mlir::NamedAttribute named(const char *name, mlir::Attribute value) {
    return builder.getNamedAttr(name, value);
  }
  mlir::DenseI64ArrayAttr ints(llvm::ArrayRef<int64_t> values) {
    return builder.getDenseI64ArrayAttr(values);
  }
  /// Records `v` as the next result; fails if it is null (an error was
  /// reported when it was built).
  mlir::LogicalResult finish(mlir::Value v) {
    if (!v)
      return mlir::failure();
    results.push_back(v);
    return mlir::success();
  }
  mlir::Value constant(mlir::DenseElementsAttr value);
  /// A rank-0 constant of `like`'s element type (and device) holding `value`;
  /// null if `like` is (an earlier build failed).
  mlir::Value scalarLike(mlir::Value like, double value);
  mlir::Value constantI64(llvm::ArrayRef<int64_t> values, bool asVector = true);
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// A reshape to possibly symbolic sizes (static when all are constants).
  mlir::Value reshapeTo(mlir::Value v, llvm::ArrayRef<mlir::AffineExpr> sizes);
  /// A broadcast of `v` to possibly symbolic sizes.
  mlir::Value broadcastTo(mlir::Value v, llvm::ArrayRef<mlir::AffineExpr> sizes);
  /// `v` cast to element type `to` (itself when it has it, or is null).
  mlir::Value cast(mlir::Value v, mlir::Type to);

  /// The importer's symbolic integers (null for importers without them)
  /// and its size symbols with their ranges.
  SymbolicInts *symbolic = nullptr;
  llvm::ArrayRef<mlir::kiln::SizeSymbol> sizeSymbols;
  /// Input #k's values as sizes: a constant's values, or the symbolic
  /// expressions of a shape computation; std::nullopt for anything else.
  std::optional<llvm::SmallVector<mlir::AffineExpr>> sizeInts(size_t k);
  /// Size symbols read at run time from integer model inputs: the
  /// importer's list of symbols (appended to), and the symbols already
  /// standing for each input's elements. Null for importers without them.
  struct RunTimeSizes {
    explicit RunTimeSizes(llvm::SmallVector<mlir::kiln::SizeSymbol> *symbols)
        : symbols(symbols) {}
    llvm::SmallVector<mlir::kiln::SizeSymbol> *symbols;
    llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::AffineExpr>> elements;
  };
  RunTimeSizes *runTime = nullptr;
  /// Input #k's elements as size symbols read at run time, when input #k is
  /// an integer (or boolean) model input of static shape, rank 0 or 1, with
  /// at most 16 elements (a shape, repeats); std::nullopt otherwise. Each may be any int32 value:
  /// the converter gives it its meaning (computedSize).
  std::optional<llvm::SmallVector<mlir::AffineExpr>> runTimeInts(size_t k);
  /// Codes reading each element of `v` (SizeCode `12 k j`) when it is a
  /// model input runTimeInts reads, for a converter that combines them in
  /// its own sizes and checks; no symbol is made (so no range bounds them).
  std::optional<llvm::SmallVector<llvm::SmallVector<int64_t>>>
  runTimeElements(mlir::Value v, bool anyRank = false);
  bool readsAtRunTime(size_t k) { return runTimeElements(input(k)).has_value(); }
  /// The same for a value `v`, its symbols named after `name`; with
  /// `anyRank`, of any rank (its elements in row-major order).
  std::optional<llvm::SmallVector<mlir::AffineExpr>> runTimeInts(mlir::Value v,
                                                                const std::string &name,
                                                                bool anyRank = false);
  /// A new size symbol computed at run time by `code` (over the symbols
  /// and input elements) and refused outside [min, max]; null (and the node
  /// unsupported) past the kMaxSizeSymbols a model may have.
  mlir::AffineExpr computedSize(const std::string &name, llvm::ArrayRef<int64_t> code,
                                int64_t min, int64_t max);
  /// The first `count` (an i64 scalar computed by the model) entries of
  /// `v` along `axis`: a kiln.take_prefix binding a new size symbol named
  /// `name` in 0..size, read when the model runs; null (and the node
  /// unsupported) past the symbols a model may have.
  mlir::Value takePrefix(mlir::Value v, mlir::Value count, int64_t axis, const std::string &name);

  /// Appends `s` to the size symbols (a name taken is told apart) and
  /// gives its expression; null (and the node unsupported) past
  /// kMaxSizeSymbols.
  mlir::AffineExpr addSizeSymbol(mlir::kiln::SizeSymbol s);

  /// True if input #k holds symbolic sizes.
  bool isSymbolic(size_t k) const {
    return symbolic && input(k) && symbolic->count(input(k));
  }
  /// A size value standing for symbolic sizes (`asVector`: shape [n],
  /// else a scalar) of element type `element`.
  mlir::Value symbolicResult(llvm::ArrayRef<mlir::AffineExpr> values, bool asVector,
                             mlir::Type element);

  /// The value of `v` if it is (or folds to) a constant; else the node is
  /// marked unsupported with "input #k must be a constant".
  mlir::FailureOr<mlir::DenseElementsAttr> constantOf(mlir::Value v, size_t k);
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(size_t k);
  mlir::FailureOr<double> constantScalar(size_t k);
  /// constantScalar for a count, an index or an axis: an error unless it
  /// is within +-2^62 (so that it converts, and sums of two do not overflow).
  mlir::FailureOr<int64_t> constantInteger(size_t k);

  /// Normalizes a possibly negative axis for rank `rank`; an error for an
  /// axis outside [-rank, rank) (so for any axis of a scalar).
  mlir::FailureOr<int64_t> axis(int64_t a, int64_t rank);
};

using Converter = std::function<mlir::LogicalResult(NodeContext &)>;
using ConverterMap = std::unordered_map<std::string, Converter>;

void registerElementwiseConverters(ConverterMap &map);
void registerShapeConverters(ConverterMap &map);
void registerNeuralConverters(ConverterMap &map);
void registerReductionConverters(ConverterMap &map);
void registerCompositeConverters(ConverterMap &map);
void registerGatherBasedConverters(ConverterMap &map);
void registerResizeConverters(ConverterMap &map);
void registerRecurrentConverters(ConverterMap &map);
void registerDataDependentConverters(ConverterMap &map);

/// The positions of the nonzero elements of the vector `flat`, whose
/// values a step computes: every position, the nonzeros' first (a stable
/// sort of "is zero"), cut to their count when the model runs (a length
/// named `name`; DataDependentOps.cpp). Null on failure.
mlir::Value nonZeroPrefix(NodeContext &c, mlir::Value flat, const std::string &name);

/// Shapes given as model inputs, read at run time (RunTimeSizeOps.cpp):
/// Reshape, Expand and Tile to the run-time values `shape` / `repeats`
/// (NodeContext::runTimeInts of input #1).
mlir::LogicalResult reshapeAtRunTime(NodeContext &c, llvm::ArrayRef<mlir::AffineExpr> shape);
mlir::LogicalResult expandAtRunTime(NodeContext &c, llvm::ArrayRef<mlir::AffineExpr> shape);
mlir::LogicalResult tileAtRunTime(NodeContext &c, llvm::ArrayRef<mlir::AffineExpr> repeats);
/// Squeeze and Unsqueeze of axes read at run time: reshapes to sizes
/// chosen by them.
mlir::LogicalResult squeezeAtRunTime(NodeContext &c, llvm::ArrayRef<mlir::AffineExpr> axes);
mlir::LogicalResult unsqueezeAtRunTime(NodeContext &c, llvm::ArrayRef<mlir::AffineExpr> axes);
/// Pad (constant, edge or reflect) by pads read at run time.
mlir::LogicalResult padAtRunTime(NodeContext &c, llvm::ArrayRef<mlir::AffineExpr> pads,
                                 const std::string &mode);
/// Range of integers with any of start, limit and delta read at run time.
mlir::LogicalResult rangeAtRunTime(NodeContext &c);
/// 0, 1, ..., length - 1 (i64) for a length read at run time.
mlir::Value iotaAtRunTime(NodeContext &c, mlir::AffineExpr length);
/// Slice with any of its starts, ends, axes and steps read at run time;
/// Split by the sizes of input #1 read at run time along `axis`.
mlir::LogicalResult sliceAtRunTime(NodeContext &c);
mlir::LogicalResult splitAtRunTime(NodeContext &c, int64_t axis);
/// One check that every element of input #k read at run time is within
/// [lo, hi], named `name` (the run is refused otherwise).
mlir::LogicalResult checkAllWithin(NodeContext &c, const std::string &name, size_t k, int64_t lo,
                                   int64_t hi);
/// A size symbol counting the nonzero elements among the first `limit` of
/// `v` read at run time; null when `v` is not read so.
mlir::AffineExpr nonZerosAtRunTime(NodeContext &c, const std::string &name, mlir::Value v,
                                   size_t limit = SIZE_MAX);
/// A reduction of `x` over axes read at run time, built by `build` with
/// the attributes it takes (kiln's reductions' run_time_axes and
/// result_sizes); null on failure.
mlir::Value reduceAtRunTime(
    NodeContext &c, mlir::Value x, llvm::ArrayRef<mlir::AffineExpr> axes, bool keepdims,
    llvm::function_ref<mlir::Value(llvm::ArrayRef<mlir::NamedAttribute>)> build);
/// A size symbol `name` equal to `value` (an element read at run time),
/// refused outside [min, max]; null when the node has too many sizes.
mlir::AffineExpr sizeAtRunTime(NodeContext &c, mlir::AffineExpr value, const std::string &name,
                               int64_t min, int64_t max);

/// Converts a node computing on symbolic sizes (Shape or Size of a dynamic
/// tensor, Gather, Concat, Unsqueeze, Squeeze, Cast, Slice, Add, Sub, Mul,
/// Div of them); std::nullopt when the node does not (it converts as usual).
std::optional<mlir::LogicalResult> convertSymbolicSizes(NodeContext &c);

} // namespace onnx_import
} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_ONNX_ONNXCONTEXT_H
