//===- CpuKernelEmitter.cpp - runs of elementwise ops as loop functions ---===//
//
// Finds, in each step, the runs of consecutive f32 elementwise ops of one
// result shape, and writes each run as a func.func of two scf.for loops
// (rows, then the elements of a row) over arith and math ops. Values inside
// a run stay in registers; only the values used after it are stored.
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
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
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

namespace mlir {
namespace kiln {

namespace {

bool isF32RowMajor(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getElementType().isF32() &&
         getEncoding(tensor).isRowMajor();
}

/// The unary and binary kinds a run computes (their f32 arithmetic below).
bool isCompiledKind(Operation *op) {
  using ::kiln::ref::BinaryKind;
  using ::kiln::ref::UnaryKind;
  std::string name = op->getName().getStringRef().str();
  if (auto unary = ::kiln::ref::unaryKindOf(name)) {
    switch (*unary) {
    case UnaryKind::Neg: case UnaryKind::Abs: case UnaryKind::Exp: case UnaryKind::Log:
    case UnaryKind::Sqrt: case UnaryKind::Rsqrt: case UnaryKind::Tanh: case UnaryKind::Sigmoid:
    case UnaryKind::Relu: case UnaryKind::Gelu: case UnaryKind::Erf:
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

bool isCompilable(Operation *op) {
  return op->getNumResults() == 1 && isCompiledKind(op) &&
         llvm::all_of(op->getOperandTypes(), isF32RowMajor) && isF32RowMajor(op->getResult(0).getType());
}

/// `shape` right-aligned to `rank` dimensions, with leading ones.
SmallVector<int64_t> alignedTo(ArrayRef<int64_t> shape, size_t rank) {
  SmallVector<int64_t> aligned(rank - shape.size(), 1);
  aligned.append(shape.begin(), shape.end());
  return aligned;
}

std::optional<ReadBroadcast> classify(ArrayRef<int64_t> read, ArrayRef<int64_t> out, size_t split) {
  auto ones = [](ArrayRef<int64_t> dims) { return llvm::all_of(dims, [](int64_t d) { return d == 1; }); };
  if (read == out)
    return ReadBroadcast::Full;
  if (ones(read))
    return ReadBroadcast::Scalar;
  if (ones(read.take_front(split)) && read.drop_front(split) == out.drop_front(split))
    return ReadBroadcast::Row;
  if (read.take_front(split) == out.take_front(split) && ones(read.drop_front(split)))
    return ReadBroadcast::Column;
  return std::nullopt;
}

/// Completes a run: its reads, writes and row split; false when a read fits
/// no split.
bool finishRun(exec::StepOp step, CpuRun &run) {
  llvm::DenseSet<Operation *> inRun(run.ops.begin(), run.ops.end());
  llvm::SetVector<Value> reads;
  for (Operation *op : run.ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && inRun.contains(def))
        continue;
      if (auto arg = llvm::dyn_cast<BlockArgument>(operand))
        if (DenseElementsAttr splat = knownSplat(step.getInputs()[arg.getArgNumber()])) {
          if (!llvm::is_contained(llvm::make_first_range(run.literals), operand))
            run.literals.push_back({operand, splat.getSplatValue<APFloat>().convertToDouble()});
          continue;
        }
      reads.insert(operand);
    }
  for (Operation *op : run.ops)
    if (llvm::any_of(op->getResult(0).getUsers(),
                     [&](Operation *user) { return !inRun.contains(user); }))
      run.writes.push_back(op->getResult(0));
  ArrayRef<int64_t> out = llvm::cast<RankedTensorType>(run.ops.front()->getResult(0).getType()).getShape();
  for (size_t split = 0; split <= out.size(); ++split) {
    SmallVector<ReadBroadcast> kinds;
    for (Value read : reads) {
      auto shape = alignedTo(llvm::cast<RankedTensorType>(read.getType()).getShape(), out.size());
      std::optional<ReadBroadcast> kind = classify(shape, out, split);
      if (!kind)
        break;
      kinds.push_back(*kind);
    }
    if (kinds.size() != reads.size())
      continue;
    run.reads.assign(reads.begin(), reads.end());
    run.broadcasts.assign(kinds.begin(), kinds.end());
    run.elements = 1;
    for (int64_t d : out)
      run.elements *= d;
    run.row = 1;
    for (int64_t d : out.drop_front(split))
      run.row *= d;
    return true;
  }
  return false;
}

/// exp(x) by MLIR's polynomial, which flushes subnormal results to zero:
/// below -87 it computes exp(x + 32 ln 2) * 2^-32 instead, one rounding
/// into the subnormal range.
Value emitExp(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type();
  auto constant = [&](double v) -> Value {
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(f32, v));
  };
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
  Type f32 = b.getF32Type();
  auto constant = [&](double v) -> Value {
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(f32, v));
  };
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

std::vector<CpuRun> planCpuRuns(exec::StepOp step) {
  std::vector<CpuRun> runs;
  std::optional<CpuRun> current;
  auto close = [&] {
    if (current && finishRun(step, *current) && current->elements > 0)
      runs.push_back(std::move(*current));
    current.reset();
  };
  unsigned index = 0;
  for (Operation &op : step.getBody().front()) {
    if (llvm::isa<exec::YieldOp>(op))
      break;
    unsigned at = index++;
    if (!isCompilable(&op)) {
      close();
      continue;
    }
    Type shape = op.getResult(0).getType();
    if (current && current->ops.back()->getResult(0).getType() != shape)
      close();
    if (!current) {
      current.emplace();
      current->firstOp = at;
    }
    current->ops.push_back(&op);
  }
  close();
  return runs;
}

void emitCpuKernel(OpBuilder &builder, Location loc, const CpuRun &run, StringRef symbol) {
  MLIRContext *context = builder.getContext();
  Type ptr = LLVM::LLVMPointerType::get(context);
  Type i64 = builder.getI64Type(), f32 = builder.getF32Type();

  // The body: one pointer per read and write (noalias once in LLVM IR).
  SmallVector<Type> bodyArgs(run.reads.size() + run.writes.size(), ptr);
  bodyArgs.append({i64, i64});
  std::string bodyName = (symbol + kCpuKernelBodySuffix).str();
  auto body = builder.create<func::FuncOp>(loc, bodyName, builder.getFunctionType(bodyArgs, {}));
  body.setPrivate();
  {
    OpBuilder::InsertionGuard guard(builder);
    Block *entry = body.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    auto args = entry->getArguments();
    Value begin = args[args.size() - 2], end = args[args.size() - 1];
    auto i64Constant = [&](int64_t v) -> Value {
      return builder.create<arith::ConstantOp>(loc, builder.getI64IntegerAttr(v));
    };
    auto load = [&](OpBuilder &b, Value base, Value index) -> Value {
      Value at = b.create<LLVM::GEPOp>(loc, ptr, f32, base, ValueRange{index});
      return b.create<LLVM::LoadOp>(loc, f32, at);
    };
    Value row = i64Constant(run.row), zero = i64Constant(0), one = i64Constant(1);
    // Scalars once, for the whole range.
    llvm::DenseMap<Value, Value> scalars;
    for (auto [k, read] : llvm::enumerate(run.reads))
      if (run.broadcasts[k] == ReadBroadcast::Scalar)
        scalars[read] = load(builder, args[k], zero);
    // Rows [begin / row, ceil(end / row)), each clipped to [begin, end).
    Value firstRow = builder.create<arith::DivSIOp>(loc, begin, row);
    Value endRows = builder.create<arith::DivSIOp>(
        loc, builder.create<arith::AddIOp>(loc, end, i64Constant(run.row - 1)), row);
    auto rows = builder.create<scf::ForOp>(loc, firstRow, endRows, one);
    builder.setInsertionPointToStart(rows.getBody());
    Value r = rows.getInductionVar();
    Value rowStart = builder.create<arith::MulIOp>(loc, r, row);
    Value from = builder.create<arith::MaxSIOp>(loc, builder.create<arith::SubIOp>(loc, begin, rowStart), zero);
    Value to = builder.create<arith::MinSIOp>(loc, builder.create<arith::SubIOp>(loc, end, rowStart), row);
    llvm::DenseMap<Value, Value> perRow;
    for (auto [k, read] : llvm::enumerate(run.reads))
      if (run.broadcasts[k] == ReadBroadcast::Column)
        perRow[read] = load(builder, args[k], r);
    auto elements = builder.create<scf::ForOp>(loc, from, to, one);
    builder.setInsertionPointToStart(elements.getBody());
    Value j = elements.getInductionVar();
    Value i = builder.create<arith::AddIOp>(loc, rowStart, j);
    llvm::DenseMap<Value, Value> scalar; // graph value -> its element here
    for (auto [k, read] : llvm::enumerate(run.reads)) {
      switch (run.broadcasts[k]) {
      case ReadBroadcast::Full: scalar[read] = load(builder, args[k], i); break;
      case ReadBroadcast::Row: scalar[read] = load(builder, args[k], j); break;
      case ReadBroadcast::Column: scalar[read] = perRow[read]; break;
      case ReadBroadcast::Scalar: scalar[read] = scalars[read]; break;
      }
    }
    for (auto [value, literal] : run.literals)
      scalar[value] = builder.create<arith::ConstantOp>(loc, builder.getFloatAttr(f32, literal));
    for (Operation *op : run.ops) {
      SmallVector<Value> operands;
      for (Value operand : op->getOperands())
        operands.push_back(scalar.lookup(operand));
      scalar[op->getResult(0)] = emitScalarOp(builder, op->getLoc(), op, operands);
    }
    for (auto [k, written] : llvm::enumerate(run.writes)) {
      Value at = builder.create<LLVM::GEPOp>(loc, ptr, f32, args[run.reads.size() + k], ValueRange{i});
      builder.create<LLVM::StoreOp>(loc, scalar.lookup(written), at);
    }
    builder.setInsertionPointAfter(rows);
    builder.create<func::ReturnOp>(loc);
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
  callArgs.append({entry->getArgument(2), entry->getArgument(3)});
  builder.create<func::CallOp>(loc, body, callArgs);
  builder.create<func::ReturnOp>(loc);
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
  os << run.row << "x" << run.elements << ";";
  for (auto [k, read] : llvm::enumerate(run.reads))
    os << "r" << id(read) << ":" << static_cast<int>(run.broadcasts[k]) << ";";
  for (auto [value, literal] : run.literals)
    os << "l" << id(value) << "=" << llvm::format("%a", literal) << ";";
  for (Operation *op : run.ops) {
    os << op->getName().getStringRef() << "(";
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
