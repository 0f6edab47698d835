//===- CpuKernelEmitter.cpp - runs of elementwise ops as loop functions ---===//
//
// Finds, in each step, the runs of consecutive elementwise ops of one
// result shape (f32 arithmetic, casts to f32, comparisons, selects), and
// writes each run as a func.func of two scf.for loops (rows, then the
// elements of a row) over arith and math ops. Values inside a run stay in
// registers; only the values used after it are stored. Reshapes and
// broadcasts of what the run reads are folded into its reads (an attention
// mask's unsqueeze, expand, compare and select become one loop over the
// int64 mask).
//
// A value read from outside the run broadcasts onto the run's shape in one
// of four ways once the shape is seen as rows x row (CpuKernelEmitter.h):
// every element (full), one row repeated (a bias), one element per row (a
// per-row scale) or one element (a scalar). The split into rows is the one
// with the longest rows for which every read is one of these; a run whose
// reads fit no split stays with the runtime's kernels.
//
//===----------------------------------------------------------------------===//

#include "CpuKernelEmitter.h"

#include "kiln/Exec/ExecOps.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <functional>

namespace mlir {
namespace kiln {

namespace {

/// The sizes the planner gives the size symbols while it plans a step over
/// symbolic sizes (planCpuRuns plans such a step with two different sets
/// and keeps the runs that come out alike: their code does not depend on
/// the sizes); null for a static step.
thread_local const SmallVector<int64_t> *plannedSymbols = nullptr;

/// The shape the planner sees: static dimensions as they are, symbolic
/// ones at the planned symbol values; std::nullopt if a size is unknown.
std::optional<SmallVector<int64_t>> plannedShape(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return std::nullopt;
  if (tensor.hasStaticShape())
    return SmallVector<int64_t>(tensor.getShape());
  if (!plannedSymbols)
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (AffineExpr size : getDimSizes(tensor)) {
    std::optional<int64_t> d = evaluateSize(size, *plannedSymbols);
    if (!d || *d < 0)
      return std::nullopt;
    shape.push_back(*d);
  }
  return shape;
}

/// plannedShape of a type the planner has accepted (known shape).
SmallVector<int64_t> shapeOf(Type type) { return *plannedShape(type); }

/// Elements at the planned sizes; -1 when they overflow (no run then).
int64_t elementsOf(Type type) {
  int64_t n = 1;
  for (int64_t d : shapeOf(type))
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

bool isStaticRowMajor(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && plannedShape(tensor) && getEncoding(tensor).isRowMajor();
}

Type elementTypeOf(Type type) { return llvm::cast<RankedTensorType>(type).getElementType(); }

bool isF32RowMajor(Type type) {
  return isStaticRowMajor(type) && elementTypeOf(type).isF32();
}

/// f32 with a static shape, stored in any order: elementwise arithmetic
/// runs over the elements as stored (a channels-last chain's batch norm
/// and ReLU), finishRun checking that every read is stored alike.
bool isF32Stored(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && plannedShape(tensor) && tensor.getElementType().isF32() && getEncoding(tensor);
}

/// The type's memory order (empty: row-major).
ArrayRef<int64_t> dimOrderOf(Type type) { return getEncoding(type).getDimOrder(); }

/// Element types a kernel loads from memory (i1 stored as one byte): f32,
/// and the integers and booleans that casts and comparisons read (a mask,
/// an int8 weight's rows).
bool isLoadable(Type element) {
  if (element.isF32() || element.isSignlessInteger(1))
    return true;
  auto integer = llvm::dyn_cast<IntegerType>(element);
  return integer && !integer.isSigned() && llvm::is_contained({8u, 16u, 32u, 64u}, integer.getWidth()) &&
         !(integer.isUnsigned() && integer.getWidth() == 64);
}

bool isLoadableRowMajor(Type type) {
  return isStaticRowMajor(type) && isLoadable(elementTypeOf(type));
}

/// The unary and binary kinds a run computes (their f32 arithmetic below).
bool isCompiledKind(Operation *op) {
  using ::kiln::ref::BinaryKind;
  using ::kiln::ref::UnaryKind;
  if (llvm::isa<BatchNormOp>(op)) // per channel (dimension 1) of rank >= 2
    return llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank() >= 2;
  std::string name = op->getName().getStringRef().str();
  if (auto unary = ::kiln::ref::unaryKindOf(name)) {
    switch (*unary) {
    case UnaryKind::Neg: case UnaryKind::Abs: case UnaryKind::Exp: case UnaryKind::Log:
    case UnaryKind::Sqrt: case UnaryKind::Rsqrt: case UnaryKind::Tanh: case UnaryKind::Sigmoid:
    case UnaryKind::Relu: case UnaryKind::Gelu: case UnaryKind::Erf: case UnaryKind::Sign:
      return op->getNumOperands() == 1;
    default:
      return false;
    }
  }
  if (auto binary = ::kiln::ref::binaryKindOf(name)) {
    switch (*binary) {
    case BinaryKind::Add: case BinaryKind::Sub: case BinaryKind::Mul: case BinaryKind::Div:
    case BinaryKind::Max: case BinaryKind::Min:
      return op->getNumOperands() == 2;
    default:
      return false;
    }
  }
  return false;
}

/// Comparisons of two values of one loadable type, to i1.
bool isCompiledComparison(Operation *op) {
  if (!llvm::isa<EqOp, NeOp, LtOp, LeOp, GtOp, GeOp>(op))
    return false;
  Type lhs = op->getOperand(0).getType(), rhs = op->getOperand(1).getType();
  return isLoadableRowMajor(lhs) && isLoadableRowMajor(rhs) &&
         elementTypeOf(lhs) == elementTypeOf(rhs) && !elementTypeOf(lhs).isSignlessInteger(1);
}

bool isCompilable(Operation *op) {
  if (op->getNumResults() != 1 || (!isF32Stored(op->getResult(0).getType()) &&
                                    !isStaticRowMajor(op->getResult(0).getType())))
    return false;
  Type result = op->getResult(0).getType();
  // Conversions to f32 of any loadable type.
  if (auto cast = llvm::dyn_cast<CastOp>(op))
    return isLoadableRowMajor(cast.getInput().getType()) && isF32RowMajor(result);
  if (isCompiledComparison(op))
    return elementTypeOf(result).isSignlessInteger(1);
  if (auto select = llvm::dyn_cast<SelectOp>(op))
    return isLoadableRowMajor(select.getCond().getType()) &&
           elementTypeOf(select.getCond().getType()).isSignlessInteger(1) &&
           isF32RowMajor(select.getLhs().getType()) && isF32RowMajor(select.getRhs().getType()) &&
           isF32RowMajor(result);
  return isCompiledKind(op) && llvm::all_of(op->getOperandTypes(), isF32Stored) &&
         isF32Stored(result);
}

/// Reshapes and broadcasts compute nothing: inside a run, one of a value
/// read from outside it (or of another such view) is that value read with
/// another shape.
bool isView(Operation *op) {
  return llvm::isa<ReshapeOp, BroadcastOp>(op) && isLoadableRowMajor(op->getOperand(0).getType()) &&
         isLoadableRowMajor(op->getResult(0).getType());
}

/// For softmax and log_softmax over the last axis and layer_norm, on f32
/// row-major values: how many trailing dimensions they reduce; else none.
std::optional<size_t> reducedTrailingDims(Operation *op) {
  if (!llvm::isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp>(op) || op->getNumResults() != 1 ||
      !llvm::all_of(op->getOperandTypes(), isF32RowMajor) ||
      !isF32RowMajor(op->getResult(0).getType()))
    return std::nullopt;
  int64_t rank = llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  if (!axisAttr || rank == 0)
    return std::nullopt;
  int64_t axis = axisAttr.getInt() < 0 ? axisAttr.getInt() + rank : axisAttr.getInt();
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  if (llvm::isa<LayerNormOp>(op))
    return static_cast<size_t>(rank - axis);
  return axis == rank - 1 ? std::optional<size_t>(1) : std::nullopt;
}

/// `shape` right-aligned to `rank` dimensions, with leading ones.
SmallVector<int64_t> alignedTo(ArrayRef<int64_t> shape, size_t rank) {
  SmallVector<int64_t> aligned(rank - shape.size(), 1);
  aligned.append(shape.begin(), shape.end());
  return aligned;
}

/// For a row group: where the group's dimensions start and end, when the
/// read's dimensions before `split` are the run's (leading), then ones over
/// dimensions of the run > 1 (the group), then the run's again (inner): a
/// per-batch mask [B, 1, S, S] over [B, H, S, S] reads row
/// (r / (H * S)) * S + r % S.
std::optional<std::pair<size_t, size_t>> groupDims(ArrayRef<int64_t> read, ArrayRef<int64_t> out,
                                                   size_t split) {
  size_t e = 0;
  while (e < split && read[e] == out[e] && read[e] != 1)
    ++e;
  size_t f = e;
  int64_t rows = 1;
  while (f < split && read[f] == 1) {
    rows *= out[f];
    ++f;
  }
  for (size_t d = f; d < split; ++d)
    if (read[d] != out[d])
      return std::nullopt;
  if (e == 0 || f == e || rows <= 1)
    return std::nullopt;
  return std::make_pair(e, f);
}

std::optional<ReadBroadcast> classify(ArrayRef<int64_t> read, ArrayRef<int64_t> out, size_t split) {
  auto ones = [](ArrayRef<int64_t> dims) { return llvm::all_of(dims, [](int64_t d) { return d == 1; }); };
  // Leading ones, then equal: repeats along the leading dimensions.
  auto repeats = [&](ArrayRef<int64_t> r, ArrayRef<int64_t> o) {
    size_t lead = 0;
    while (lead < r.size() && r[lead] == 1)
      ++lead;
    return r.drop_front(lead) == o.drop_front(lead);
  };
  if (read == out)
    return ReadBroadcast::Full;
  if (ones(read))
    return ReadBroadcast::Scalar;
  // Whole rows repeating over the leading rows: a bias (one row), an
  // attention mask over the heads (a block of rows).
  if (repeats(read.take_front(split), out.take_front(split)) &&
      read.drop_front(split) == out.drop_front(split))
    return ReadBroadcast::Row;
  // One value per row, repeating over the leading rows (a per-channel
  // factor of NCHW: rows are (n, c), the value r % C).
  if (repeats(read.take_front(split), out.take_front(split)) && ones(read.drop_front(split)))
    return ReadBroadcast::Column;
  // Whole rows, one per group of consecutive rows: equal leading
  // dimensions, then ones (a per-batch mask over the heads and queries).
  if (read.drop_front(split) == out.drop_front(split) && groupDims(read, out, split))
    return ReadBroadcast::RowGroup;
  return std::nullopt;
}

/// Whether `op`, in a planned run, is one of its views: the planner takes
/// reshapes and broadcasts into runs only as views (after planning, the
/// planned sizes that isView reads are gone).
bool isRunView(Operation *op) { return llvm::isa<ReshapeOp, BroadcastOp>(op); }

/// The ops of `run` that compute (not views).
auto computedOps(const CpuRun &run) {
  return llvm::make_filter_range(run.ops, [](Operation *op) { return !isRunView(op); });
}

/// A step input the compiler knows is one value everywhere, as a literal:
/// a float, or an integer or boolean that a double holds exactly.
std::optional<double> literalOf(exec::StepOp step, Value value) {
  auto arg = llvm::dyn_cast<BlockArgument>(value);
  if (!arg)
    return std::nullopt;
  DenseElementsAttr splat = knownSplat(step.getInputs()[arg.getArgNumber()]);
  if (!splat)
    return std::nullopt;
  Type element = splat.getElementType();
  if (llvm::isa<FloatType>(element))
    return splat.getSplatValue<APFloat>().convertToDouble();
  auto integer = llvm::dyn_cast<IntegerType>(element);
  if (!integer)
    return std::nullopt;
  APInt v = splat.getSplatValue<APInt>();
  if (integer.getWidth() == 1)
    return v.getBoolValue() ? 1.0 : 0.0;
  int64_t n = integer.isUnsigned() ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
  if (n > (int64_t(1) << 53) || n < -(int64_t(1) << 53))
    return std::nullopt;
  return static_cast<double>(n);
}

/// Completes a run: its reads (through its views), writes and row split;
/// false when a read fits no split or a value the run cannot store is used
/// after it.
bool finishRun(exec::StepOp step, CpuRun &run) {
  llvm::DenseSet<Operation *> inRun(run.ops.begin(), run.ops.end());
  auto computed = computedOps(run);
  if (computed.empty())
    return false;
  SmallVector<int64_t> outShape = shapeOf((*computed.begin())->getResult(0).getType());
  ArrayRef<int64_t> out = outShape;
  // What each view is: a value from outside the run read with a shape (a
  // broadcast's, right-aligned to it, keeps ones where it repeats).
  struct ViewOf {
    Value read;
    SmallVector<int64_t> shape;
  };
  llvm::DenseMap<Value, ViewOf> views;
  auto readAs = [&](Value v) -> ViewOf {
    if (auto it = views.find(v); it != views.end())
      return it->second;
    return {v, shapeOf(v.getType())};
  };
  for (Operation *op : run.ops) {
    if (!isView(op))
      continue;
    Value input = op->getOperand(0);
    if (Operation *def = input.getDefiningOp(); def && inRun.contains(def) && !isView(def))
      return false; // a view of a computed value: would need it stored
    ViewOf from = readAs(input);
    auto result = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    if (llvm::isa<ReshapeOp>(op)) {
      // The same elements in another shape: only of a value read whole.
      if (from.shape != shapeOf(input.getType()))
        return false;
      views[op->getResult(0)] = {from.read, shapeOf(result)};
    } else {
      views[op->getResult(0)] = {from.read, alignedTo(from.shape, result.getRank())};
    }
  }
  // Each read as it broadcasts onto the run's shape: right-aligned, except
  // batch norm's per-channel operands, which align with dimension 1.
  llvm::SetVector<Value> reads;
  llvm::DenseMap<Value, SmallVector<int64_t>> readShapes;
  for (Operation *op : computed)
    for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
      if (Operation *def = operand.getDefiningOp(); def && inRun.contains(def) && !isView(def))
        continue;
      ViewOf view = readAs(operand);
      SmallVector<int64_t> shape = alignedTo(view.shape, out.size());
      if (llvm::isa<BatchNormOp>(op) && k > 0) {
        // Per channel, as the value read holds it (a view's ones repeat).
        shape.assign(out.size(), 1);
        shape[1] = 1;
        for (int64_t d : view.shape)
          shape[1] *= d;
      }
      auto [it, isNew] = readShapes.try_emplace(view.read, shape);
      if (!isNew && it->second != shape)
        return false; // read two ways
      if (std::optional<double> literal = literalOf(step, view.read)) {
        if (!llvm::is_contained(llvm::make_first_range(run.literals), view.read))
          run.literals.push_back({view.read, *literal});
        continue;
      }
      reads.insert(view.read);
    }
  for (Operation *op : run.ops)
    if (llvm::any_of(op->getResult(0).getUsers(),
                     [&](Operation *user) { return !inRun.contains(user); })) {
      // Only computed f32 values are stored.
      if (isView(op) || !isF32Stored(op->getResult(0).getType()))
        return false;
      run.writes.push_back(op->getResult(0));
    }
  if (run.writes.empty())
    return false; // nothing used after it: nothing to compute
  // Values stored in another order (channels last): the run computes its
  // elements as stored, so every computed value must be stored alike, so
  // must a read of the run's rank, and a lower-rank (broadcast) read must
  // be a row-major one whose dimensions keep their order when stored so (a
  // per-channel vector, a scalar); shapes below are then as stored.
  SmallVector<int64_t> storedOut(out);
  if (ArrayRef<int64_t> order = dimOrderOf((*computed.begin())->getResult(0).getType());
      !order.empty()) {
    if (!views.empty() ||
        llvm::any_of(computed, [&](Operation *op) { return dimOrderOf(op->getResult(0).getType()) != order; }))
      return false;
    auto stored = [&](ArrayRef<int64_t> logical) {
      SmallVector<int64_t> shape;
      for (int64_t d : order)
        shape.push_back(logical[d]);
      return shape;
    };
    for (auto &[read, shape] : readShapes) {
      ArrayRef<int64_t> readOrder = dimOrderOf(read.getType());
      if (readOrder == order) {
        // Stored alike: as stored, a row-major tensor of the stored shape.
        if (llvm::cast<RankedTensorType>(read.getType()).getRank() != static_cast<int64_t>(out.size()))
          return false;
      } else if (!readOrder.empty()) {
        return false;
      } else {
        int64_t last = -1;
        for (int64_t d : order)
          if (shape[d] != 1) {
            if (d < last)
              return false; // its bytes are not stored in the run's order
            last = d;
          }
      }
      shape = stored(shape);
    }
    storedOut = stored(out);
  }
  out = storedOut;
  // A reduction fixes the rows: its reduced dimensions.
  size_t firstSplit = 0, lastSplit = out.size();
  if (run.reduction) {
    run.reducedDims = *reducedTrailingDims(run.reduction);
    firstSplit = lastSplit = out.size() - run.reducedDims;
  }
  if (plannedSymbols) {
    // Over symbolic sizes a row is static dimensions only (the code loops
    // over rows of a size it knows): rows start after the last symbolic one
    // as stored.
    auto type = llvm::cast<RankedTensorType>((*computed.begin())->getResult(0).getType());
    SmallVector<AffineExpr> sizes = getDimSizes(type);
    ArrayRef<int64_t> order = dimOrderOf(type);
    size_t staticTail = 0;
    for (size_t k = sizes.size(); k-- > 0;) {
      if (!llvm::isa<AffineConstantExpr>(sizes[order.empty() ? k : order[k]]))
        break;
      ++staticTail;
    }
    // A reduction's row may be symbolic: the code then reads its length
    // per run (symbolicRow).
    if (!run.reduction)
      firstSplit = std::max(firstSplit, out.size() - staticTail);
    if (firstSplit > lastSplit)
      return false;
  }
  for (size_t split = firstSplit; split <= lastSplit; ++split) {
    SmallVector<ReadBroadcast> kinds;
    for (Value read : reads) {
      std::optional<ReadBroadcast> kind = classify(readShapes[read], out, split);
      if (!kind)
        break;
      kinds.push_back(*kind);
    }
    if (kinds.size() != reads.size())
      continue;
    run.reads.assign(reads.begin(), reads.end());
    run.broadcasts.assign(kinds.begin(), kinds.end());
    run.readElements.clear();
    for (Value read : reads)
      run.readElements.push_back(elementsOf(read.getType()));
    run.elements = 1;
    for (int64_t d : out)
      if (__builtin_mul_overflow(run.elements, d, &run.elements))
        return false;
    if (llvm::is_contained(run.readElements, -1))
      return false;
    run.row = 1;
    for (int64_t d : out.drop_front(split))
      run.row *= d;
    // Row groups: their rows per group and where the group starts.
    run.groupRows.assign(reads.size(), 0);
    run.groupInner.assign(reads.size(), 0);
    run.groupFrom.assign(reads.size(), 0);
    run.groupTo.assign(reads.size(), 0);
    for (auto [k, read] : llvm::enumerate(reads)) {
      if (kinds[k] != ReadBroadcast::RowGroup)
        continue;
      if (!dimOrderOf((*computed.begin())->getResult(0).getType()).empty())
        return false; // groups of rows as stored: row-major runs only
      auto [from, to] = *groupDims(readShapes[read], out, split);
      run.groupFrom[k] = from;
      run.groupTo[k] = to;
      run.groupRows[k] = run.groupInner[k] = 1;
      for (size_t d = from; d < to; ++d)
        run.groupRows[k] *= out[d];
      for (size_t d = to; d < split; ++d)
        run.groupInner[k] *= out[d];
    }
    // Which repeating reads hold one row (a column: one value) per row.
    run.perRow.clear();
    for (auto [k, kind] : llvm::enumerate(kinds)) {
      int64_t rows = run.row > 0 ? run.elements / run.row : 0; // empty: no run
      run.perRow.push_back(
          (kind == ReadBroadcast::Column && run.readElements[k] == rows) ||
          (kind == ReadBroadcast::Row && run.readElements[k] == run.elements && rows > 1));
    }
    return true;
  }
  return false;
}

/// An f32 literal.
Value f32Constant(OpBuilder &b, Location loc, double v) {
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(b.getF32Type(), v));
}

/// exp(x) by MLIR's polynomial, which flushes subnormal results to zero:
/// below -87 it computes exp(x + 32 ln 2) * 2^-32 instead, one rounding
/// into the subnormal range.
Value emitExp(OpBuilder &b, Location loc, Value x) {
  auto constant = [&](double v) { return f32Constant(b, loc, v); };
  Value small = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, constant(-87.0));
  Value shifted = b.create<arith::SelectOp>(
      loc, small, b.create<arith::AddFOp>(loc, x, constant(32 * M_LN2)), x);
  Value e = b.create<math::ExpOp>(loc, shifted);
  return b.create<arith::SelectOp>(loc, small, b.create<arith::MulFOp>(loc, e, constant(0x1p-32)),
                                   e);
}

/// The f32 arithmetic of one op on scalars, as the reference defines it
/// (lib/Reference/Elementwise.cpp), each result rounded to f32.
Value emitScalarOp(OpBuilder &b, Location loc, Operation *op, ArrayRef<Value> x) {
  using ::kiln::ref::BinaryKind;
  using ::kiln::ref::UnaryKind;
  auto constant = [&](double v) { return f32Constant(b, loc, v); };
  if (auto cast = llvm::dyn_cast<CastOp>(op)) {
    // As the reference converts: an integer to double, then rounded once
    // to f32 (exact for integers below 2^53; i64 through f64 so that larger
    // ones round as the reference's do); a boolean to 0 or 1.
    Type from = elementTypeOf(cast.getInput().getType());
    Value v = x[0];
    if (from.isF32())
      return v;
    if (from.isSignlessInteger(1) || from.isUnsignedInteger())
      return b.create<arith::UIToFPOp>(loc, b.getF32Type(), v);
    if (from.getIntOrFloatBitWidth() < 32)
      return b.create<arith::SIToFPOp>(loc, b.getF32Type(), v);
    Value wide = b.create<arith::SIToFPOp>(loc, b.getF64Type(), v);
    return b.create<arith::TruncFOp>(loc, b.getF32Type(), wide);
  }
  // Planning checked the operands; here (without the planned sizes) the
  // op's kind decides.
  if (llvm::isa<EqOp, NeOp, LtOp, LeOp, GtOp, GeOp>(op)) {
    Type element = elementTypeOf(op->getOperand(0).getType());
    if (element.isF32()) {
      // Ordered, except !=: NaN compares unequal to everything.
      auto predicate = llvm::isa<EqOp>(op)   ? arith::CmpFPredicate::OEQ
                       : llvm::isa<NeOp>(op) ? arith::CmpFPredicate::UNE
                       : llvm::isa<LtOp>(op) ? arith::CmpFPredicate::OLT
                       : llvm::isa<LeOp>(op) ? arith::CmpFPredicate::OLE
                       : llvm::isa<GtOp>(op) ? arith::CmpFPredicate::OGT
                                             : arith::CmpFPredicate::OGE;
      return b.create<arith::CmpFOp>(loc, predicate, x[0], x[1]);
    }
    bool isUnsigned = element.isUnsignedInteger();
    auto predicate = llvm::isa<EqOp>(op)   ? arith::CmpIPredicate::eq
                     : llvm::isa<NeOp>(op) ? arith::CmpIPredicate::ne
                     : llvm::isa<LtOp>(op) ? (isUnsigned ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt)
                     : llvm::isa<LeOp>(op) ? (isUnsigned ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle)
                     : llvm::isa<GtOp>(op) ? (isUnsigned ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
                                           : (isUnsigned ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge);
    return b.create<arith::CmpIOp>(loc, predicate, x[0], x[1]);
  }
  if (llvm::isa<SelectOp>(op))
    return b.create<arith::SelectOp>(loc, x[0], x[1], x[2]);
  if (llvm::isa<BatchNormOp>(op)) {
    // x * a + (bias - mean * a) with a = scale / sqrt(variance + epsilon),
    // as the reference computes it (per channel: hoisted out of the row).
    double epsilon = op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble();
    Value a = b.create<arith::DivFOp>(
        loc, x[1], b.create<math::SqrtOp>(loc, b.create<arith::AddFOp>(loc, x[4], constant(epsilon))));
    Value shift = b.create<arith::SubFOp>(loc, x[2], b.create<arith::MulFOp>(loc, x[3], a));
    return b.create<arith::AddFOp>(loc, b.create<arith::MulFOp>(loc, x[0], a), shift);
  }
  std::string name = op->getName().getStringRef().str();
  if (auto unary = ::kiln::ref::unaryKindOf(name)) {
    Value v = x[0];
    switch (*unary) {
    case UnaryKind::Neg: return b.create<arith::NegFOp>(loc, v);
    case UnaryKind::Abs: return b.create<math::AbsFOp>(loc, v);
    case UnaryKind::Exp: return emitExp(b, loc, v);
    case UnaryKind::Log: {
      // The polynomial flushes subnormal inputs; scale them into the normal
      // range first: log(x) = log(x * 2^23) - 23 ln 2.
      Value small = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, b.create<math::AbsFOp>(loc, v),
                                            constant(0x1p-126));
      Value scaled = b.create<arith::SelectOp>(
          loc, small, b.create<arith::MulFOp>(loc, v, constant(0x1p23)), v);
      Value log = b.create<math::LogOp>(loc, scaled);
      return b.create<arith::SelectOp>(
          loc, small, b.create<arith::SubFOp>(loc, log, constant(23 * M_LN2)), log);
    }
    case UnaryKind::Sqrt: return b.create<math::SqrtOp>(loc, v);
    case UnaryKind::Rsqrt:
      return b.create<arith::DivFOp>(loc, constant(1.0), b.create<math::SqrtOp>(loc, v));
    case UnaryKind::Tanh: return b.create<math::TanhOp>(loc, v);
    case UnaryKind::Sigmoid: {
      // With e = exp(-|x|) (no overflow): 1 / (1 + e) for x >= 0, else
      // e / (1 + e), which keeps tiny results for very negative x.
      Value e = emitExp(b, loc, b.create<arith::NegFOp>(loc, b.create<math::AbsFOp>(loc, v)));
      Value denominator = b.create<arith::AddFOp>(loc, constant(1.0), e);
      Value positive = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGE, v, constant(0.0));
      Value numerator = b.create<arith::SelectOp>(loc, positive, constant(1.0), e);
      return b.create<arith::DivFOp>(loc, numerator, denominator);
    }
    case UnaryKind::Relu: {
      // x > 0 or NaN: x; else 0 (keeps NaN, as the reference does).
      Value keep = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UGT, v, constant(0.0));
      return b.create<arith::SelectOp>(loc, keep, v, constant(0.0));
    }
    case UnaryKind::Gelu: {
      // 0.5 x (1 + erf(x / sqrt(2))), the exact (erf) form.
      Value erf = b.create<math::ErfOp>(loc, b.create<arith::MulFOp>(loc, v, constant(M_SQRT1_2)));
      Value half = b.create<arith::MulFOp>(loc, constant(0.5), v);
      return b.create<arith::MulFOp>(loc, half, b.create<arith::AddFOp>(loc, constant(1.0), erf));
    }
    case UnaryKind::Erf: return b.create<math::ErfOp>(loc, v);
    case UnaryKind::Sign: {
      // 1, -1, or x itself (0, -0 and NaN kept, as the reference does).
      Value positive = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, v, constant(0.0));
      Value negative = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, v, constant(0.0));
      return b.create<arith::SelectOp>(
          loc, positive, constant(1.0),
          b.create<arith::SelectOp>(loc, negative, constant(-1.0), v));
    }
    default: break;
    }
  }
  if (auto binary = ::kiln::ref::binaryKindOf(name)) {
    Value l = x[0], r = x[1];
    switch (*binary) {
    case BinaryKind::Add: return b.create<arith::AddFOp>(loc, l, r);
    case BinaryKind::Sub: return b.create<arith::SubFOp>(loc, l, r);
    case BinaryKind::Mul: return b.create<arith::MulFOp>(loc, l, r);
    case BinaryKind::Div: return b.create<arith::DivFOp>(loc, l, r);
    case BinaryKind::Max:
    case BinaryKind::Min: {
      // std::max / std::min, with NaN from either side propagating.
      bool isMax = *binary == BinaryKind::Max;
      Value takeRight = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, isMax ? l : r,
                                                isMax ? r : l);
      Value picked = b.create<arith::SelectOp>(loc, takeRight, r, l);
      Value unordered = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, l, r);
      return b.create<arith::SelectOp>(loc, unordered, constant(NAN), picked);
    }
    default: break;
    }
  }
  llvm_unreachable("not a compiled kind (isCompiledKind)");
}

} // namespace

/// The runs of a step whose shapes plannedShape gives.
std::vector<CpuRun> planRuns(exec::StepOp step) {
  std::vector<CpuRun> runs;
  std::optional<CpuRun> current;
  auto close = [&] {
    if (!current)
      return;
    // Views at the end feed what follows the run: they stay out of it.
    while (!current->ops.empty() && isView(current->ops.back()))
      current->ops.pop_back();
    if (!current->ops.empty() && finishRun(step, *current) && current->elements > 0)
      runs.push_back(std::move(*current));
    current.reset();
  };
  // The result shape of the run's computing ops.
  std::optional<SmallVector<int64_t>> shape;
  for (Operation &op : step.getBody().front()) {
    if (llvm::isa<exec::YieldOp>(op))
      break;
    if (isView(&op)) {
      // A view of a value the run computes would need it stored: a new run.
      Operation *def = op.getOperand(0).getDefiningOp();
      if (current && def && llvm::is_contained(current->ops, def) && !isView(def)) {
        close();
        shape.reset();
      }
      if (!current)
        current.emplace();
      current->ops.push_back(&op);
      continue;
    }
    bool reduction = reducedTrailingDims(&op).has_value();
    if (!reduction && !isCompilable(&op)) {
      close();
      shape.reset();
      continue;
    }
    // One shape a run; one reduction a run, with the elementwise ops before
    // it (its prologue) and after it (its epilogue).
    // (The shape as stored: its dimensions, then its memory order.)
    auto resultType = llvm::cast<RankedTensorType>(op.getResult(0).getType());
    SmallVector<int64_t> opShape = shapeOf(resultType);
    llvm::append_range(opShape, dimOrderOf(resultType));
    if (current && ((shape && *shape != opShape) ||
                    (reduction && current->reduction))) {
      // Views just before this op may feed it: they start the next run.
      SmallVector<Operation *> trailing;
      while (!current->ops.empty() && isView(current->ops.back())) {
        trailing.insert(trailing.begin(), current->ops.back());
        current->ops.pop_back();
      }
      close();
      current.emplace();
      current->ops.assign(trailing.begin(), trailing.end());
    }
    if (!current)
      current.emplace();
    shape = opShape;
    if (reduction)
      current->reduction = &op;
    current->ops.push_back(&op);
  }
  close();
  return runs;
}

namespace {

/// Writes a kernel body: its arguments are one pointer per read, one per
/// write, then begin and end.
class BodyEmitter {
public:
  BodyEmitter(OpBuilder &b, Location loc, const CpuRun &run, Block *entry)
      : b(b), loc(loc), run(run), args(entry->getArguments()) {
    ptr = LLVM::LLVMPointerType::get(b.getContext());
    f32 = b.getF32Type();
  }

  void emit() {
    Value begin = args[args.size() - 2], end = args[args.size() - 1];
    // Counts are positive (the loader checks): r % n is defined.
    rowLength = run.symbolicRow ? count(run.rowCount) : i64(run.row);
    Value row = rowLength, zero = i64(0), one = i64(1);
    // Scalars once, for the whole range.
    for (auto [k, read] : llvm::enumerate(run.reads))
      if (run.broadcasts[k] == ReadBroadcast::Scalar)
        outer[read] = load(b, args[k], zero, read);
    // Rows [begin / row, ceil(end / row)); an elementwise run clips each
    // to [begin, end), a reduction's ranges are whole rows.
    Value firstRow = b.create<arith::DivSIOp>(loc, begin, row);
    Value endRows = b.create<arith::DivSIOp>(
        loc, b.create<arith::AddIOp>(loc, end, b.create<arith::SubIOp>(loc, row, i64(1))), row);
    auto rows = b.create<scf::ForOp>(loc, firstRow, endRows, one);
    b.setInsertionPointToStart(rows.getBody());
    Value r = rows.getInductionVar();
    rowStart = b.create<arith::MulIOp>(loc, r, row);
    // Reads repeating over the rows: row r reads their row (or value, for a
    // column) r modulo their count; one with a row (value) per row, row r.
    auto repeated = [&](size_t k, int64_t count) -> Value {
      if (run.perRow[k])
        return r;
      Value n = !run.countOf.empty() && run.countOf[k] >= 0 ? this->count(run.countOf[k])
                                                             : i64(count);
      return b.create<arith::RemSIOp>(loc, r, n);
    };
    for (auto [k, read] : llvm::enumerate(run.reads)) {
      if (run.broadcasts[k] == ReadBroadcast::Column)
        outer[read] = load(b, args[k], repeated(k, run.readElements[k]), read);
      if (run.broadcasts[k] == ReadBroadcast::Row && (run.perRow[k] || run.readElements[k] > run.row))
        rowOffsets[read] =
            b.create<arith::MulIOp>(loc, repeated(k, run.readElements[k] / run.row), row);
      if (run.broadcasts[k] == ReadBroadcast::RowGroup) {
        // Row (r / (G * I)) * I + r % I of the read: G rows a group, I the
        // rows inside (counts over symbolic sizes).
        bool counted = !run.groupCountOf.empty() && run.groupCountOf[k] >= 0;
        Value group = counted ? count(run.groupCountOf[k]) : i64(run.groupRows[k]);
        Value inner = counted ? count(run.groupCountOf[k] + 1) : i64(run.groupInner[k]);
        Value span = b.create<arith::MulIOp>(loc, group, inner);
        Value readRow = b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, b.create<arith::DivSIOp>(loc, r, span), inner),
            b.create<arith::RemSIOp>(loc, r, inner));
        rowOffsets[read] = b.create<arith::MulIOp>(loc, readRow, row);
      }
    }
    if (run.reduction) {
      emitRowReduction();
    } else {
      Value from = b.create<arith::MaxSIOp>(loc, b.create<arith::SubIOp>(loc, begin, rowStart), zero);
      Value to = b.create<arith::MinSIOp>(loc, b.create<arith::SubIOp>(loc, end, rowStart), row);
      auto elements = b.create<scf::ForOp>(loc, from, to, one);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(elements.getBody());
      auto values = computeElement(elements.getInductionVar(), run.ops.size());
      store(values);
    }
    b.setInsertionPointAfter(rows);
    b.create<func::ReturnOp>(loc);
  }

private:
  using Values = llvm::DenseMap<Value, Value>;

  Value i64(int64_t v) { return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v)); }
  Value constant(double v) { return f32Constant(b, loc, v); }
  /// Element `index` of `read`, in its element type (a boolean stored as a
  /// byte, 0 or 1, loaded as i1).
  Value load(OpBuilder &at, Value base, Value index, Value read) {
    Type element = elementTypeOf(read.getType());
    Type stored = element.isSignlessInteger(1) ? at.getI8Type()
                  : element.isInteger()        ? at.getIntegerType(element.getIntOrFloatBitWidth())
                                               : element;
    Value address = at.create<LLVM::GEPOp>(loc, ptr, stored, base, ValueRange{index});
    Value value = at.create<LLVM::LoadOp>(loc, stored, address);
    if (!element.isSignlessInteger(1))
      return value;
    return at.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, value,
                                    at.create<arith::ConstantOp>(loc, at.getI8IntegerAttr(0)));
  }
  /// A literal of `value`'s element type.
  Value literal(Value value, double v) {
    Type element = elementTypeOf(value.getType());
    if (element.isF32())
      return constant(v);
    auto integer = llvm::cast<IntegerType>(element);
    // Signless: the bits are what matter.
    Type bits = b.getIntegerType(integer.getWidth());
    return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(bits, static_cast<int64_t>(v)));
  }
  /// Sums that may be reassociated, so that LLVM vectorises the reduction.
  Value sum(Value x, Value y) {
    return b.create<arith::AddFOp>(
        loc, x, y, arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc));
  }

  /// Element j of the current row: the reads, then ops [0, count) of the
  /// run.
  Values computeElement(Value j, size_t count) {
    Value i = element = b.create<arith::AddIOp>(loc, rowStart, j);
    Values values;
    for (auto [k, read] : llvm::enumerate(run.reads)) {
      switch (run.broadcasts[k]) {
      case ReadBroadcast::Full: values[read] = load(b, args[k], i, read); break;
      case ReadBroadcast::Row:
      case ReadBroadcast::RowGroup: {
        Value offset = rowOffsets.lookup(read);
        values[read] = load(b, args[k], offset ? b.create<arith::AddIOp>(loc, offset, j) : j, read);
        break;
      }
      case ReadBroadcast::Column:
      case ReadBroadcast::Scalar: values[read] = outer.lookup(read); break;
      }
    }
    for (auto [value, v] : run.literals)
      values[value] = literal(value, v);
    return computeOps(count, std::move(values));
  }

  /// Ops [0, count) of the run on values holding the reads (and any op
  /// results computed already).
  Values computeOps(size_t count, Values values) {
    for (Operation *op : llvm::ArrayRef(run.ops).take_front(count)) {
      if (values.count(op->getResult(0)))
        continue; // the reduction's result, computed by the caller
      if (isRunView(op)) { // the value it views, as read
        values[op->getResult(0)] = values.lookup(op->getOperand(0));
        continue;
      }
      SmallVector<Value> operands;
      for (Value operand : op->getOperands())
        operands.push_back(values.lookup(operand));
      values[op->getResult(0)] = emitScalarOp(b, op->getLoc(), op, operands);
    }
    return values;
  }

  /// Stores the written values of the element computeElement computed last.
  void store(const Values &values) {
    Value i = element;
    for (auto [k, written] : llvm::enumerate(run.writes)) {
      Value address = b.create<LLVM::GEPOp>(loc, ptr, f32, args[run.reads.size() + k], ValueRange{i});
      b.create<LLVM::StoreOp>(loc, values.lookup(written), address);
    }
  }

  /// A pass over the row accumulating `init` through `step(accumulator,
  /// element's values)`.
  Value accumulate(Value init, const std::function<Value(Value, const Values &)> &step) {
    auto loop = b.create<scf::ForOp>(loc, i64(0), rowLength, i64(1), ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Values values = computeElement(loop.getInductionVar(), prologueSize());
    b.create<scf::YieldOp>(loc, step(loop.getRegionIterArgs()[0], values));
    return loop.getResult(0);
  }

  size_t prologueSize() const {
    return llvm::find(run.ops, run.reduction) - run.ops.begin();
  }

  /// The reduction's passes over the row (its prologue recomputed in each,
  /// as the reference reads its input again), then the last pass: the
  /// reduction's element, the epilogue and the stores.
  void emitRowReduction() {
    Operation *op = run.reduction;
    Value input = op->getOperand(0);
    // The row's length as f32 (exact below 2^24, as the reference's
    // division by it rounds).
    Value n = b.create<arith::SIToFPOp>(loc, f32, rowLength);
    std::function<Value(const Values &)> element;
    if (llvm::isa<SoftmaxOp, LogSoftmaxOp>(op)) {
      // The row's maximum (NaN propagating: a row with NaN is NaN, as the
      // reference's), then the sum of exp(x - max).
      Value max = accumulate(constant(-INFINITY), [&](Value m, const Values &v) -> Value {
        return b.create<arith::MaximumFOp>(loc, m, v.lookup(input));
      });
      Value total = accumulate(constant(0.0), [&](Value t, const Values &v) -> Value {
        return sum(t, emitExp(b, loc, b.create<arith::SubFOp>(loc, v.lookup(input), max)));
      });
      bool isLog = llvm::isa<LogSoftmaxOp>(op);
      Value logTotal = isLog ? b.create<math::LogOp>(loc, total).getResult() : Value();
      element = [&, max, total, logTotal, isLog](const Values &v) -> Value {
        Value shifted = b.create<arith::SubFOp>(loc, v.lookup(input), max);
        if (isLog)
          return b.create<arith::SubFOp>(loc, shifted, logTotal);
        return b.create<arith::DivFOp>(loc, emitExp(b, loc, shifted), total);
      };
    } else {
      // Layer norm: the mean, then the variance in a second pass.
      Value mean = b.create<arith::DivFOp>(
          loc, accumulate(constant(0.0), [&](Value t, const Values &v) { return sum(t, v.lookup(input)); }),
          n);
      Value squares = accumulate(constant(0.0), [&](Value t, const Values &v) -> Value {
        Value d = b.create<arith::SubFOp>(loc, v.lookup(input), mean);
        return sum(t, b.create<arith::MulFOp>(loc, d, d));
      });
      double epsilon = op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble();
      Value variance = b.create<arith::DivFOp>(loc, squares, n);
      Value invStd = b.create<arith::DivFOp>(
          loc, constant(1.0),
          b.create<math::SqrtOp>(loc, b.create<arith::AddFOp>(loc, variance, constant(epsilon))));
      element = [&, mean, invStd](const Values &v) -> Value {
        Value centred = b.create<arith::SubFOp>(loc, v.lookup(input), mean);
        Value scaled = b.create<arith::MulFOp>(
            loc, b.create<arith::MulFOp>(loc, centred, invStd), v.lookup(op->getOperand(1)));
        if (op->getNumOperands() < 3)
          return scaled;
        return b.create<arith::AddFOp>(loc, scaled, v.lookup(op->getOperand(2)));
      };
    }
    auto last = b.create<scf::ForOp>(loc, i64(0), rowLength, i64(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.getBody());
    Value j = last.getInductionVar();
    Values values = computeElement(j, prologueSize());
    values[op->getResult(0)] = element(values);
    values = computeOps(run.ops.size(), std::move(values)); // the epilogue
    store(values);
  }

  OpBuilder &b;
  Location loc;
  const CpuRun &run;
  Block::BlockArgListType args;
  Type ptr, f32;
  Value rowStart;
  Value element; ///< the index of the element computeElement computed last
  Values outer;  ///< scalars and the row's column values
  Values rowOffsets; ///< where the row's values start in reads repeating a block of rows
  Value rowLength;   ///< the row's length: a constant, or a count read per run

  /// Count `c` of the caller's counts array (after the reads and writes).
  Value count(int c) {
    Value counts = args[run.reads.size() + run.writes.size()];
    Value at = b.create<LLVM::GEPOp>(loc, ptr, b.getI64Type(), counts, ArrayRef<LLVM::GEPArg>{c});
    return b.create<LLVM::LoadOp>(loc, b.getI64Type(), at);
  }
};

} // namespace

void emitCpuKernel(OpBuilder &builder, Location loc, const CpuRun &run, StringRef symbol) {
  MLIRContext *context = builder.getContext();
  Type ptr = LLVM::LLVMPointerType::get(context);
  Type i64 = builder.getI64Type();

  // The body: one pointer per read and write (noalias once in LLVM IR),
  // then the counts array when some are read at run time.
  bool counted = !run.countReads.empty() || !run.countSizes.empty();
  SmallVector<Type> bodyArgs(run.reads.size() + run.writes.size() + counted, ptr);
  bodyArgs.append({i64, i64});
  std::string bodyName = (symbol + kCpuKernelBodySuffix).str();
  auto body = builder.create<func::FuncOp>(loc, bodyName, builder.getFunctionType(bodyArgs, {}));
  body.setPrivate();
  {
    OpBuilder::InsertionGuard guard(builder);
    Block *entry = body.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    BodyEmitter(builder, loc, run, entry).emit();
  }

  // The entry point: unpacks the pointer arrays of the C signature.
  auto kernel = builder.create<func::FuncOp>(loc, symbol,
                                             builder.getFunctionType({ptr, ptr, i64, i64}, {}));
  OpBuilder::InsertionGuard guard(builder);
  Block *entry = kernel.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  SmallVector<Value> callArgs;
  auto unpack = [&](Value array, size_t count) {
    for (size_t k = 0; k < count; ++k) {
      Value at = builder.create<LLVM::GEPOp>(loc, ptr, ptr, array,
                                             ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(k)});
      callArgs.push_back(builder.create<LLVM::LoadOp>(loc, ptr, at));
    }
  };
  unpack(entry->getArgument(0), run.reads.size());
  unpack(entry->getArgument(1), run.writes.size());
  if (counted) { // the counts array follows the reads' pointers
    Value at = builder.create<LLVM::GEPOp>(loc, ptr, ptr, entry->getArgument(0),
                                           ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(run.reads.size())});
    callArgs.push_back(builder.create<LLVM::LoadOp>(loc, ptr, at));
  }
  callArgs.append({entry->getArgument(2), entry->getArgument(3)});
  builder.create<func::CallOp>(loc, body, callArgs);
  builder.create<func::ReturnOp>(loc);
}

/// Whether two plans of one run agree on everything its code depends on
/// but the repeating reads' counts: its ops, reads, writes, literals,
/// broadcasts and rows.
static bool sameCode(const CpuRun &a, const CpuRun &b) {
  return a.ops == b.ops && a.reads == b.reads && a.writes == b.writes &&
         a.broadcasts == b.broadcasts && a.literals == b.literals &&
         (a.row == b.row || a.reduction) && a.reduction == b.reduction && a.perRow == b.perRow &&
         a.groupFrom == b.groupFrom && a.groupTo == b.groupTo;
}

/// Over symbolic sizes: each repeating read whose count (of rows, for a
/// row read; of values, for a column) differs between the two plans is
/// read at run time, as its elements over a static divisor; false when
/// such a count does not divide.
static bool countRepeats(CpuRun &run, const CpuRun &twin) {
  run.countOf.assign(run.reads.size(), -1);
  for (size_t k = 0; k < run.reads.size(); ++k) {
    if (run.broadcasts[k] == ReadBroadcast::Full || run.perRow[k] ||
        run.broadcasts[k] == ReadBroadcast::RowGroup ||
        run.readElements[k] == twin.readElements[k])
      continue;
    // A row read of a symbolic row: a static number of rows.
    if (run.broadcasts[k] == ReadBroadcast::Row && run.row != twin.row &&
        run.readElements[k] % run.row == 0 && twin.readElements[k] % twin.row == 0 &&
        run.readElements[k] / run.row == twin.readElements[k] / twin.row)
      continue;
    if (run.broadcasts[k] == ReadBroadcast::Scalar)
      return false;
    // Its rows vary with a row that does too: no static divisor.
    if (run.broadcasts[k] == ReadBroadcast::Row && run.row != twin.row)
      return false;
    int64_t divisor = run.broadcasts[k] == ReadBroadcast::Row ? run.row : 1;
    if (run.readElements[k] % divisor != 0 || twin.readElements[k] % divisor != 0)
      return false;
    run.countOf[k] = run.countReads.size();
    run.countReads.push_back(k);
    run.countDivisors.push_back(divisor);
  }
  return true;
}

std::vector<CpuRun> planCpuRuns(exec::StepOp step) {
  if (!touchesSymbolicSizes(step))
    return planRuns(step);
  // Sizes read from input values hold only for the values a run gives (a
  // reshape's target with its input), not at made-up ones: such steps run
  // on the runtime's kernels.
  if (usesComputedSymbols(step, getSizeSymbols(step->getParentOfType<func::FuncOp>())))
    return {};
  // Over symbolic sizes: plan at two sets of sizes, distinct from each
  // other and (almost surely) from every static size, and keep each run
  // planned alike at both: its code is then the same at every size, and
  // only its element count is symbolic.
  SmallVector<int64_t> first, second;
  for (unsigned k = 0; k < kMaxSizeSymbols; ++k) {
    first.push_back(1009 + 2 * k);
    second.push_back(2003 + 2 * k);
  }
  plannedSymbols = &first;
  std::vector<CpuRun> runs = planRuns(step);
  plannedSymbols = &second;
  std::vector<CpuRun> check = planRuns(step);
  plannedSymbols = nullptr;
  std::vector<CpuRun> kept;
  SmallVector<SizeSymbol> symbols = getSizeSymbols(step->getParentOfType<func::FuncOp>());
  for (CpuRun &run : runs) {
    auto twin = llvm::find_if(check, [&](const CpuRun &c) { return sameCode(run, c); });
    if (twin == check.end() || !countRepeats(run, *twin))
      continue;
    if (run.row != twin->row) {
      // A reduction over symbolic sizes: the row's length is read per run,
      // as the elements of a full read (or the run's) over its rows.
      auto out = llvm::cast<RankedTensorType>(run.reduction->getResult(0).getType());
      SmallVector<AffineExpr> sizes = getDimSizes(out);
      run.symbolicRow = productOf(ArrayRef<AffineExpr>(sizes).take_back(run.reducedDims),
                                  out.getContext());
      run.rowCount = run.countReads.size() + run.countSizes.size();
      run.countSizes.push_back(run.symbolicRow);
    }
    // Row groups whose rows per group vary: a count of the run's sizes
    // over the group's dimensions, read per run.
    run.groupCountOf.assign(run.reads.size(), -1);
    for (size_t k = 0; k < run.reads.size(); ++k) {
      if (run.broadcasts[k] != ReadBroadcast::RowGroup ||
          (run.groupRows[k] == twin->groupRows[k] && run.groupInner[k] == twin->groupInner[k]))
        continue;
      auto out = llvm::cast<RankedTensorType>((*computedOps(run).begin())->getResult(0).getType());
      SmallVector<AffineExpr> sizes = getDimSizes(out);
      size_t split = sizes.size() - (run.reduction ? run.reducedDims : 0);
      if (!run.reduction) {
        // An elementwise run's split: the rows of its row, from its size.
        int64_t row = 1;
        split = sizes.size();
        while (split > 0 && row < run.row) {
          auto c = llvm::dyn_cast<AffineConstantExpr>(sizes[split - 1]);
          if (!c)
            break;
          row *= c.getValue();
          --split;
        }
        if (row != run.row)
          break;
      }
      // Two counts: the group's rows, then the rows inside.
      run.groupCountOf[k] = run.countReads.size() + run.countSizes.size();
      ArrayRef<AffineExpr> dims(sizes);
      run.countSizes.push_back(productOf(
          dims.slice(run.groupFrom[k], run.groupTo[k] - run.groupFrom[k]), out.getContext()));
      run.countSizes.push_back(
          productOf(dims.slice(run.groupTo[k], split - run.groupTo[k]), out.getContext()));
    }
    if (llvm::any_of(llvm::enumerate(run.broadcasts), [&](auto b) {
          size_t k = b.index();
          return b.value() == ReadBroadcast::RowGroup && run.groupCountOf[k] < 0 &&
                 (run.groupRows[k] != twin->groupRows[k] ||
                  run.groupInner[k] != twin->groupInner[k]);
        }))
      continue;
    auto out = llvm::cast<RankedTensorType>((*computedOps(run).begin())->getResult(0).getType());
    run.symbolicElements = productOf(getDimSizes(out), out.getContext());
    // Empty at the ranges' smallest sizes: nothing to compile (the loader
    // checks a run at them).
    std::optional<std::pair<int64_t, int64_t>> range = sizeRange(run.symbolicElements, symbols);
    if (!range || range->first < 1)
      continue;
    kept.push_back(std::move(run));
  }
  return kept;
}

std::string cpuRunSignature(const CpuRun &run) {
  // What the generated code depends on: shapes, broadcasts, ops and which
  // values they combine, literals; not the model's names or locations.
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, unsigned> number;
  auto id = [&](Value v) {
    auto [it, inserted] = number.try_emplace(v, number.size());
    return it->second;
  };
  // Over symbolic sizes the code does not depend on the element count.
  if (run.symbolicRow)
    os << "?x?;";
  else if (run.symbolicElements)
    os << run.row << "x?;";
  else
    os << run.row << "x" << run.elements << ";";
  // A column's index depends on its element count (r, or r modulo it).
  for (auto [k, read] : llvm::enumerate(run.reads)) {
    os << "r" << id(read) << ":" << static_cast<int>(run.broadcasts[k]) << ":";
    if (run.perRow[k] || (run.symbolicElements && run.broadcasts[k] == ReadBroadcast::Full) ||
        (run.symbolicRow && run.broadcasts[k] == ReadBroadcast::Row))
      os << "row" << (run.symbolicRow ? std::to_string(run.readElements[k] / run.row) : "");
    else if (!run.countOf.empty() && run.countOf[k] >= 0)
      os << "count" << run.countOf[k] << "/" << run.countDivisors[run.countOf[k]];
    else if (run.broadcasts[k] == ReadBroadcast::RowGroup)
      os << "group" << (!run.groupCountOf.empty() && run.groupCountOf[k] >= 0
                            ? "?" + std::to_string(run.groupCountOf[k])
                            : std::to_string(run.groupRows[k]) + "/" +
                                  std::to_string(run.groupInner[k]));
    else
      os << run.readElements[k];
    os << ":" << elementTypeOf(read.getType()) << ";";
  }
  for (auto [value, literal] : run.literals)
    os << "l" << id(value) << "=" << llvm::format("%a", literal) << ":"
       << elementTypeOf(value.getType()) << ";";
  for (Operation *op : run.ops) {
    os << op->getName().getStringRef() << op->getAttrDictionary() << "(";
    for (Value operand : op->getOperands())
      os << id(operand) << ",";
    os << ")->" << id(op->getResult(0)) << ";";
  }
  for (Value written : run.writes)
    os << "w" << id(written) << ";";
  return text;
}

} // namespace kiln
} // namespace mlir
