//===- ExecutableWriter.cpp - execution plan to .kx -----------------------===//

#include "kiln/Target/ExecutableWriter.h"

#include "kiln/Exec/ExecOps.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Lowering/LibraryCalls.h"
#include "kiln/Reference/Tensor.h"
#include "kiln/Runtime/ExecutableFile.h"
#include "kiln/Runtime/ExecutableFormat_generated.h"

#include "llvm/ADT/DenseMap.h"

#include <cstring>
#include <map>

using namespace mlir;
using namespace mlir::kiln;
namespace kx = ::kiln::kx;

namespace {

/// Weights larger than this are refused rather than written.
constexpr int64_t kMaxWeightBytes = int64_t(4) << 30;

class Writer {
public:
  Writer(func::FuncOp func, const DeviceCode &code)
      : func(func), code(code), fbb(initialSize(func, code)) {}

  LogicalResult write(llvm::raw_ostream &os);

private:
  FailureOr<flatbuffers::Offset<kx::TensorType>> tensorType(Operation *at, Type type);
  flatbuffers::Offset<kx::SizeExpr> sizeExpr(AffineExpr size);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<kx::SizeExpr>>>
  sizeExprs(ArrayRef<AffineExpr> sizes);
  LogicalResult symbolicAttrs(Operation *op,
                              std::vector<flatbuffers::Offset<kx::Attr>> &attrs,
                              const ::kiln::ref::OpAttrs &refAttrs);
  FailureOr<uint32_t> valueIndex(Value value);
  /// `value` as a weight stored in `stored`'s layout; errors at `op`.
  FailureOr<flatbuffers::Offset<kx::Weight>> weight(Operation *op, StringRef name,
                                                    ElementsAttr value, Type stored);
  /// The states: inputs the runtime keeps, each updated by an output.
  FailureOr<std::vector<kx::State>> states();
  FailureOr<flatbuffers::Offset<kx::Step>> step(exec::StepOp step, unsigned stepIndex);
  FailureOr<flatbuffers::Offset<kx::GemmCall>> gemmCall(exec::StepOp step);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<kx::SymbolicField>>>
  symbolicFields(ArrayRef<AffineExpr> sizes);
  FailureOr<flatbuffers::Offset<kx::ConvCall>> convCall(exec::StepOp step);
  flatbuffers::Offset<kx::Attr> attr(const std::string &name, const ::kiln::ref::OpAttr &a);

  func::FuncOp func;
  const DeviceCode &code;
  flatbuffers::FlatBufferBuilder fbb;

  /// Room for the weights and device code up front: the builder grows by
  /// doubling, and copying hundreds of megabytes of weights a dozen times
  /// would dominate writing a large model.
  static size_t initialSize(func::FuncOp func, const DeviceCode &code) {
    size_t bytes = size_t(1) << 16;
    func.walk([&](Operation *op) {
      if (!llvm::isa<WeightOp, ConstantOp>(op))
        return;
      auto type = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (type && type.hasStaticShape())
        bytes += static_cast<size_t>(type.getNumElements()) *
                     std::max<size_t>(1, (type.getElementTypeBitWidth() + 7) / 8) +
                 64;
    });
    for (const DeviceCodeBlob &blob : code.blobs)
      bytes += blob.data.size() + 64;
    return std::min<size_t>(bytes, size_t(1) << 31);
  }
  /// A data-dependent length's symbol read from a computed value.
  LogicalResult bindLength(TakePrefixOp op, exec::StepOp step);

  llvm::DenseMap<Value, uint32_t> valueIndices;
  /// Per symbol a kiln.take_prefix binds: its code (element 0 of the
  /// program value of its count, or the count's literal value).
  std::map<unsigned, SmallVector<int64_t>> boundLengths;
  std::vector<flatbuffers::Offset<kx::Value>> values;
  std::vector<flatbuffers::Offset<kx::Weight>> weights;
};

FailureOr<flatbuffers::Offset<kx::TensorType>> Writer::tensorType(Operation *at, Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  TensorEncodingAttr enc = getEncoding(type);
  std::optional<::kiln::ref::DType> dtype =
      tensor ? toReferenceDType(tensor.getElementType()) : std::nullopt;
  if (!enc || !dtype)
    return at->emitOpError("cannot serialize value of type ") << type;
  // A dynamic dimension is written -1, its size an expression in `sizes`.
  std::vector<int64_t> dims;
  for (int64_t d : tensor.getShape())
    dims.push_back(ShapedType::isDynamic(d) ? -1 : d);
  auto sizes = enc.getSizes().empty() ? 0 : sizeExprs(enc.getSizes());
  auto shape = fbb.CreateVector(dims);
  auto order = fbb.CreateVector(enc.getDimOrder().data(), enc.getDimOrder().size());
  return kx::CreateTensorType(fbb, static_cast<kx::DType>(*dtype), shape, order,
                              enc.getDeviceKind() == DeviceKind::CPU ? kx::DeviceKind::CPU
                                                                     : kx::DeviceKind::CUDA,
                              static_cast<int32_t>(enc.getDeviceOrdinal()), sizes);
}

flatbuffers::Offset<kx::SizeExpr> Writer::sizeExpr(AffineExpr size) {
  SmallVector<int64_t> code;
  appendSizeCode(size, code);
  return kx::CreateSizeExpr(fbb, fbb.CreateVector(code.data(), code.size()));
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<kx::SizeExpr>>>
Writer::sizeExprs(ArrayRef<AffineExpr> sizes) {
  std::vector<flatbuffers::Offset<kx::SizeExpr>> exprs;
  for (AffineExpr size : sizes)
    exprs.push_back(sizeExpr(size));
  return fbb.CreateVector(exprs);
}

/// The attributes whose values depend on the size symbols: a reshape's or
/// broadcast's symbolic target (`sizes`, written as `shape`), a
/// reduction's axes and a slice's bounds read at run time (`run_time_axes`,
/// `run_time_bounds`), and a slice's ends at the end of a dynamic
/// dimension. They replace the static forms.
LogicalResult Writer::symbolicAttrs(Operation *op,
                                    std::vector<flatbuffers::Offset<kx::Attr>> &attrs,
                                    const ::kiln::ref::OpAttrs &refAttrs) {
  auto withSizes = [&](const char *name, ArrayRef<AffineExpr> sizes) {
    // The entries are the sizes' values (the loader evaluates them): no ints.
    auto entry = kx::CreateAttr(fbb, fbb.CreateString(name), kx::AttrKind::Ints, 0, 0.0, 0, 0,
                                kx::DType::F32, sizeExprs(sizes));
    // Attributes are sorted by name: replace the static entry in place.
    auto it = refAttrs.find(name);
    attrs[std::distance(refAttrs.begin(), it)] = entry;
  };
  if (auto map = op->getAttrOfType<AffineMapAttr>("sizes"))
    withSizes("shape", map.getValue().getResults());
  if (auto map = op->getAttrOfType<AffineMapAttr>("run_time_axes"))
    withSizes("axes", map.getValue().getResults());
  if (auto iota = llvm::dyn_cast<IotaOp>(op))
    if (!llvm::isa<AffineConstantExpr>(iota.getLength().getResult(0)))
      withSizes("length", iota.getLength().getResults());
  if (auto prefix = llvm::dyn_cast<TakePrefixOp>(op))
    withSizes("length", prefix.getLength().getResults());
  if (auto map = op->getAttrOfType<AffineMapAttr>("run_time_bounds")) {
    ArrayRef<AffineExpr> bounds = map.getValue().getResults();
    size_t rank = bounds.size() / 3;
    withSizes("starts", bounds.take_front(rank));
    withSizes("ends", bounds.slice(rank, rank));
    withSizes("steps", bounds.take_back(rank));
  }
  if (auto slice = llvm::dyn_cast<SliceOp>(op)) {
    auto input = llvm::cast<RankedTensorType>(slice.getInput().getType());
    SmallVector<AffineExpr> ends, inputSizes = getDimSizes(input);
    std::optional<AffineMap> endSizes = slice.getEndSizes();
    bool symbolic = endSizes.has_value();
    for (auto [d, end] : llvm::enumerate(slice.getEnds())) {
      bool toEnd = input.isDynamicDim(d) && end == std::numeric_limits<int64_t>::max();
      ends.push_back(toEnd      ? inputSizes[d]
                     : endSizes ? endSizes->getResult(d)
                                : getAffineConstantExpr(end, op->getContext()));
      symbolic |= toEnd;
    }
    if (symbolic)
      withSizes("ends", ends);
  }
  return success();
}

FailureOr<flatbuffers::Offset<kx::Weight>> Writer::weight(Operation *op, StringRef name,
                                                          ElementsAttr value, Type stored) {
  auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
  auto type = llvm::cast<RankedTensorType>(value.getType());
  std::optional<::kiln::ref::DType> dtype = toReferenceDType(type.getElementType());
  if (!dense || !dtype)
    return op->emitOpError("cannot serialize this literal");
  int64_t width = ::kiln::ref::byteWidth(*dtype);
  int64_t bytes = type.getNumElements() * width;
  if (bytes > kMaxWeightBytes)
    return op->emitOpError("weight of ") << bytes << " bytes exceeds the executable's "
                                         << kMaxWeightBytes << "-byte limit per weight";
  // 32 bytes: the most FlatBuffers allows (FLATBUFFERS_MAX_ALIGNMENT), enough for AVX.
  fbb.ForceVectorAlignment(static_cast<size_t>(bytes), 1, 32);
  uint8_t *data = nullptr;
  auto vec = fbb.CreateUninitializedVector(static_cast<size_t>(bytes), 1, &data);
  if (*dtype == ::kiln::ref::DType::I1) {
    int64_t k = 0;
    for (bool v : dense.getValues<bool>())
      data[k++] = v;
  } else if (dense.isSplat()) {
    // A splat stores one element.
    ArrayRef<char> raw = dense.getRawData();
    for (int64_t k = 0; k < type.getNumElements(); ++k)
      std::memcpy(data + k * width, raw.data(), width);
  } else {
    // Dense storage is the raw little-endian elements.
    std::memcpy(data, dense.getRawData().data(), static_cast<size_t>(bytes));
  }
  // The literal is logical (row-major); the file holds it in its type's
  // layout, as the runtime reads every value (a KRSC filter, an NHWC
  // weight). A splat is the same in every layout.
  // Moved element by element, bytes unchanged.
  TensorEncodingAttr encoding = getEncoding(stored);
  if (encoding && !encoding.isRowMajor() && !dense.isSplat()) {
    std::vector<uint8_t> logical(data, data + bytes);
    std::vector<int64_t> offsets = ::kiln::ref::physicalOffsets(
        ::kiln::ref::Shape(type.getShape().begin(), type.getShape().end()),
        std::vector<int64_t>(encoding.getDimOrder().begin(), encoding.getDimOrder().end()));
    for (size_t k = 0; k < offsets.size(); ++k)
      std::memcpy(data + offsets[k] * width, logical.data() + k * width,
                  static_cast<size_t>(width));
  }
  return kx::CreateWeight(fbb, fbb.CreateString(name.str()), vec);
}

FailureOr<uint32_t> Writer::valueIndex(Value value) {
  auto it = valueIndices.find(value);
  if (it != valueIndices.end())
    return it->second;
  Operation *at = value.getDefiningOp() ? value.getDefiningOp() : func.getOperation();
  FailureOr<flatbuffers::Offset<kx::TensorType>> type = tensorType(at, value.getType());
  if (failed(type))
    return failure();
  kx::ValueKind kind;
  uint64_t index;
  if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
    kind = kx::ValueKind::Input;
    index = arg.getArgNumber();
  } else if (auto w = value.getDefiningOp<WeightOp>()) {
    auto data = weight(w, w.getName(), w.getValue(), w.getType());
    if (failed(data))
      return failure();
    kind = kx::ValueKind::Weight;
    index = weights.size();
    weights.push_back(*data);
  } else if (auto c = value.getDefiningOp<ConstantOp>()) {
    auto data = weight(c, "constant." + std::to_string(weights.size()), c.getValue(), c.getType());
    if (failed(data))
      return failure();
    kind = kx::ValueKind::Weight;
    index = weights.size();
    weights.push_back(*data);
  } else if (auto s = value.getDefiningOp<exec::StepOp>()) {
    auto offsets = s.getOffsets();
    if (!offsets)
      return s.emitOpError("has no buffer offsets; run kiln-assign-buffers first");
    kind = kx::ValueKind::Buffer;
    // -1: placed per run (kiln-assign-buffers), 2^64 - 1 in the file.
    int64_t offset = (*offsets)[llvm::cast<OpResult>(value).getResultNumber()];
    index = offset < 0 ? ~uint64_t(0) : static_cast<uint64_t>(offset);
  } else {
    return value.getDefiningOp()->emitOpError("is not part of an execution plan");
  }
  uint32_t id = values.size();
  values.push_back(kx::CreateValue(fbb, kind, index, *type));
  valueIndices[value] = id;
  return id;
}

flatbuffers::Offset<kx::Attr> Writer::attr(const std::string &name,
                                           const ::kiln::ref::OpAttr &a) {
  auto ints = a.kind == ::kiln::ref::OpAttr::Ints ? fbb.CreateVector(a.ints) : 0;
  auto str = a.kind == ::kiln::ref::OpAttr::String ? fbb.CreateString(a.s) : 0;
  return kx::CreateAttr(fbb, fbb.CreateString(name), static_cast<kx::AttrKind>(a.kind), a.i,
                        a.f, ints, str, static_cast<kx::DType>(a.dtype));
}

/// "matmul" for one op; "attention(matmul+mul+softmax+matmul)" for a fused
/// step, abbreviated after five ops so traces stay readable.
static std::string stepName(const std::string &kind, const std::vector<std::string> &ops) {
  std::string joined;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops.size() > 5 && k == 3) {
      joined += "+...+" + ops.back() + ", " + std::to_string(ops.size()) + " ops";
      break;
    }
    joined += (k ? "+" : "") + ops[k];
  }
  return kind.empty() ? joined : kind + "(" + joined + ")";
}

/// Where a library call's workspace lies (0 without one), after checking
/// that the step is one call with one result.
static FailureOr<uint64_t> libraryWorkspace(exec::StepOp s, uint64_t bytes, StringRef library) {
  auto offset = s->getAttrOfType<IntegerAttr>(kWorkspaceOffsetAttr);
  if (bytes > 0 && !offset)
    return s.emitOpError("has a library workspace but no workspace_offset; run "
                         "kiln-assign-buffers first");
  if (s.getNumResults() != 1)
    return s.emitOpError("is a ") << library << " call but has " << s.getNumResults()
                                  << " results";
  return offset ? static_cast<uint64_t>(offset.getInt()) : uint64_t(0);
}

/// A library call's symbolic sizes (null where static), by field number;
/// null when none.
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<kx::SymbolicField>>>
Writer::symbolicFields(ArrayRef<AffineExpr> sizes) {
  std::vector<flatbuffers::Offset<kx::SymbolicField>> fields;
  for (auto [k, size] : llvm::enumerate(sizes))
    if (size)
      fields.push_back(kx::CreateSymbolicField(fbb, static_cast<uint8_t>(k), sizeExpr(size)));
  return fields.empty() ? 0 : fbb.CreateVector(fields);
}

/// The step's cuBLASLt descriptor, or a null offset when it has none.
FailureOr<flatbuffers::Offset<kx::GemmCall>> Writer::gemmCall(exec::StepOp s) {
  auto attr = s->getAttrOfType<DictionaryAttr>(kGemmAttr);
  if (!attr)
    return flatbuffers::Offset<kx::GemmCall>();
  std::string error;
  FailureOr<::kiln::rt::GemmCall> g = gemmCallFromAttr(attr, error);
  if (failed(g))
    return s.emitOpError(error);
  FailureOr<uint64_t> offset = libraryWorkspace(s, g->workspaceBytes, "cuBLASLt");
  if (failed(offset))
    return failure();
  auto symbolic = symbolicFields(symbolicCallSizes(attr, ::kiln::rt::kGemmSizeFields));
  return kx::CreateGemmCall(
      fbb, g->m, g->n, g->k, g->transA, g->transB, g->lda, g->ldb, g->ldc, g->batch, g->strideA,
      g->strideB, g->strideC, static_cast<kx::DType>(g->typeA), static_cast<kx::DType>(g->typeC),
      g->tf32, static_cast<kx::GemmEpilogue>(g->epilogue), g->alpha, g->beta, g->a, g->b, g->c,
      g->bias, g->workspaceBytes, *offset, g->deterministic, symbolic);
}

/// The step's cuDNN descriptor, or a null offset when it has none.
FailureOr<flatbuffers::Offset<kx::ConvCall>> Writer::convCall(exec::StepOp s) {
  auto attr = s->getAttrOfType<DictionaryAttr>(kConvAttr);
  if (!attr)
    return flatbuffers::Offset<kx::ConvCall>();
  std::string error;
  FailureOr<::kiln::rt::ConvCall> g = convCallFromAttr(attr, error);
  if (failed(g))
    return s.emitOpError(error);
  FailureOr<uint64_t> offset = libraryWorkspace(s, g->workspaceBytes, "cuDNN");
  if (failed(offset))
    return failure();
  auto symbolic = symbolicFields(symbolicCallSizes(attr, ::kiln::rt::kConvSizeFields));
  return kx::CreateConvCall(fbb, g->n, g->c, g->h, g->w, g->k, g->r, g->s, g->p, g->q, g->groups,
                            g->strideH, g->strideW, g->dilationH, g->dilationW, g->padTop,
                            g->padLeft, g->padBottom, g->padRight,
                            static_cast<kx::DType>(g->type), g->bias, g->relu, g->x, g->filter,
                            g->biasInput, g->allowTf32, g->deterministic, g->workspaceBytes,
                            *offset, g->nhwc, symbolic);
}

LogicalResult Writer::bindLength(TakePrefixOp op, exec::StepOp step) {
  // The count is read between steps: it must be a step's input, which
  // another step computes, or a literal (a count folded to a constant).
  auto arg = llvm::dyn_cast<BlockArgument>(op.getCount());
  if (!arg || arg.getOwner() != &step.getBody().front())
    return op.emitOpError("reads its count from its own step; it must come from another");
  Value count = step.getInputs()[arg.getArgNumber()];
  unsigned symbol = llvm::cast<AffineSymbolExpr>(op.getLength().getResult(0)).getPosition();
  SmallVector<int64_t> code;
  ElementsAttr literal;
  if (auto c = count.getDefiningOp<ConstantOp>())
    literal = c.getValue();
  else if (auto w = count.getDefiningOp<WeightOp>())
    literal = w.getValue();
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(literal)) {
    code = {static_cast<int64_t>(::kiln::ref::SizeOp::Constant),
            (*dense.value_begin<APInt>()).getSExtValue()};
  } else if (llvm::isa<BlockArgument>(count)) {
    return op.emitOpError("reads its count from a model input; a size read from an input "
                          "is a size symbol's code");
  } else {
    FailureOr<uint32_t> value = valueIndex(count);
    if (failed(value))
      return failure();
    code = {static_cast<int64_t>(::kiln::ref::SizeOp::ValueElement), *value, 0};
  }
  if (!boundLengths.emplace(symbol, code).second)
    return op.emitOpError("binds size symbol s") << symbol << ", which another op binds too";
  return success();
}

FailureOr<std::vector<kx::State>> Writer::states() {
  std::vector<kx::State> states;
  for (BlockArgument arg : func.getArguments()) {
    unsigned k = arg.getArgNumber();
    auto initial = func.getArgAttrOfType<ElementsAttr>(k, "kiln.state");
    auto output = func.getArgAttrOfType<IntegerAttr>(k, "kiln.state_output");
    if (!initial && !output)
      continue;
    auto name = func.getArgAttrOfType<StringAttr>(k, "kiln.name");
    auto type = llvm::cast<RankedTensorType>(arg.getType());
    if (!initial || !output || !name || output.getInt() < 0 ||
        output.getInt() >= static_cast<int64_t>(func.getNumResults()) ||
        func.getResultTypes()[output.getInt()] != arg.getType() ||
        initial.getShapedType().getShape() != type.getShape() ||
        initial.getShapedType().getElementType() != type.getElementType() ||
        llvm::any_of(states, [&](const kx::State &s) {
          return s.output() == static_cast<uint32_t>(output.getInt());
        }) ||
        hasSymbolicSizes(type))
      return func.emitOpError("input #") << k << " is a state without a name, an initial value "
                                            "of its type or an output of its own of its type";
    auto data = weight(func, name.getValue(), initial, arg.getType());
    if (failed(data))
      return failure();
    states.emplace_back(k, static_cast<uint32_t>(output.getInt()),
                        static_cast<uint32_t>(weights.size()));
    weights.push_back(*data);
  }
  return states;
}

FailureOr<flatbuffers::Offset<kx::Step>> Writer::step(exec::StepOp s, unsigned stepIndex) {
  FailureOr<flatbuffers::Offset<kx::GemmCall>> gemm = gemmCall(s);
  if (failed(gemm))
    return failure();
  FailureOr<flatbuffers::Offset<kx::ConvCall>> conv = convCall(s);
  if (failed(conv))
    return failure();
  std::vector<uint32_t> inputs, outputs, yields;
  for (Value v : s.getInputs()) {
    auto id = valueIndex(v);
    if (failed(id))
      return failure();
    inputs.push_back(*id);
  }
  for (Value v : s.getResults()) {
    auto id = valueIndex(v);
    if (failed(id))
      return failure();
    outputs.push_back(*id);
  }
  // Local numbering: block arguments, then each op's results in order.
  llvm::DenseMap<Value, uint32_t> local;
  for (BlockArgument arg : s.getBody().getArguments())
    local[arg] = local.size();
  llvm::DenseMap<Operation *, uint32_t> opIndex;
  std::vector<flatbuffers::Offset<kx::Op>> ops;
  std::vector<std::string> opNames;
  for (Operation &op : s.getBody().front()) {
    if (auto yield = llvm::dyn_cast<exec::YieldOp>(op)) {
      for (Value v : yield.getValues())
        yields.push_back(local.lookup(v));
      continue;
    }
    if (auto prefix = llvm::dyn_cast<TakePrefixOp>(op); prefix && failed(bindLength(prefix, s)))
      return failure();
    std::vector<uint32_t> operands;
    for (Value v : op.getOperands())
      operands.push_back(local.lookup(v));
    std::vector<flatbuffers::Offset<kx::TensorType>> results;
    for (Type t : op.getResultTypes()) {
      auto type = tensorType(&op, t);
      if (failed(type))
        return failure();
      results.push_back(*type);
    }
    FailureOr<::kiln::ref::OpAttrs> refAttrs = toReferenceAttrs(&op);
    if (failed(refAttrs))
      return failure();
    std::vector<flatbuffers::Offset<kx::Attr>> attrs;
    for (const auto &[name, a] : *refAttrs) // a std::map: sorted, so reproducible
      attrs.push_back(attr(name, a));
    if (failed(symbolicAttrs(&op, attrs, *refAttrs)))
      return failure();
    std::string location;
    if (auto loc = llvm::dyn_cast<FileLineColLoc>(op.getLoc()))
      location = (loc.getFilename().str() + ":" + std::to_string(loc.getLine()) + ":" +
                  std::to_string(loc.getColumn()));
    opIndex[&op] = opNames.size();
    opNames.push_back(op.getName().stripDialect().str());
    ops.push_back(kx::CreateOpDirect(fbb, op.getName().getStringRef().str().c_str(), &attrs,
                                     &operands, &results, location.c_str()));
    for (Value r : op.getResults())
      local[r] = local.size();
  }
  std::vector<uint32_t> waits;
  if (auto w = s.getWaits())
    for (int64_t e : *w)
      waits.push_back(static_cast<uint32_t>(e));
  std::string kind = s.getKind() ? s.getKind()->str() : "";
  std::vector<flatbuffers::Offset<kx::CpuKernel>> cpuKernels;
  if (auto it = code.cpuKernels.find(stepIndex); it != code.cpuKernels.end())
    for (const CpuKernel &c : it->second) {
      std::vector<uint32_t> reads, writes;
      std::vector<kx::DType> readTypes;
      for (Value v : c.reads) {
        reads.push_back(local.lookup(v));
        auto dtype = toReferenceDType(llvm::cast<RankedTensorType>(v.getType()).getElementType());
        readTypes.push_back(static_cast<kx::DType>(dtype.value_or(::kiln::ref::DType::F32)));
      }
      for (Value v : c.writes)
        writes.push_back(local.lookup(v));
      auto elementsSize = c.elementsSize ? sizeExpr(c.elementsSize) : 0;
      std::vector<uint32_t> countReads(c.countReads.begin(), c.countReads.end());
      std::vector<flatbuffers::Offset<kx::SizeExpr>> countSizes;
      for (AffineExpr size : c.countSizes)
        countSizes.push_back(sizeExpr(size));
      cpuKernels.push_back(kx::CreateCpuKernelDirect(
          fbb, c.symbol.c_str(), opIndex.lookup(c.firstOp), c.opCount, &reads, &writes,
          c.elements, c.row, &readTypes, elementsSize, countReads.empty() ? nullptr : &countReads,
          countReads.empty() ? nullptr : &c.countDivisors,
          countSizes.empty() ? nullptr : &countSizes, c.rowSize ? sizeExpr(c.rowSize) : 0));
    }
  auto kernel = code.kernels.find(stepIndex);
  StepKernel none;
  const StepKernel &k = kernel == code.kernels.end() ? none : kernel->second;
  bool symbolic = !k.name.empty() && !k.gridCode.empty();
  std::vector<flatbuffers::Offset<kx::SizeExpr>> kernelSizes;
  if (symbolic)
    for (AffineExpr size : k.sizes)
      kernelSizes.push_back(sizeExpr(size));
  auto code = [&](const std::vector<int64_t> &c) {
    return kx::CreateSizeExpr(fbb, fbb.CreateVector(c.data(), c.size()));
  };
  auto gridSize = symbolic ? code(k.gridCode) : 0;
  std::vector<flatbuffers::Offset<kx::KernelClass>> classes;
  for (const StepKernel::SizeClass &c : k.classes) {
    std::vector<flatbuffers::Offset<kx::SizeExpr>> sizes;
    for (AffineExpr size : c.sizes)
      sizes.push_back(sizeExpr(size));
    classes.push_back(kx::CreateKernelClassDirect(fbb, code(c.when), c.name.c_str(),
                                                  code(c.gridCode), c.block, c.dynamicShared,
                                                  &sizes));
  }
  return kx::CreateStepDirect(fbb, stepName(kind, opNames).c_str(), s.getStream().value_or(0),
                              s.getEvent() ? static_cast<int64_t>(*s.getEvent()) : -1, &waits,
                              &inputs, &outputs, &ops, &yields, kind.c_str(),
                              k.name.empty() ? nullptr : k.name.c_str(),
                              k.name.empty() || symbolic ? 0 : k.grid,
                              k.name.empty() ? 0 : k.block,
                              k.name.empty() ? nullptr : &k.inputs, *gemm, *conv,
                              k.name.empty() ? 0 : k.dynamicShared,
                              cpuKernels.empty() ? nullptr : &cpuKernels,
                              symbolic ? &kernelSizes : nullptr, gridSize,
                              classes.empty() ? nullptr : &classes);
}

LogicalResult Writer::write(llvm::raw_ostream &os) {
  std::vector<flatbuffers::Offset<kx::Step>> steps;
  int64_t numEvents = 0;
  for (exec::StepOp s : func.getBody().getOps<exec::StepOp>()) {
    auto offset = step(s, static_cast<unsigned>(steps.size()));
    if (failed(offset))
      return failure();
    steps.push_back(*offset);
    if (auto e = s.getEvent())
      numEvents = std::max<int64_t>(numEvents, static_cast<int64_t>(*e) + 1);
  }
  std::vector<flatbuffers::Offset<kx::IOSpec>> inputs, outputs;
  for (BlockArgument arg : func.getArguments()) {
    auto id = valueIndex(arg);
    if (failed(id))
      return failure();
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "kiln.name");
    inputs.push_back(kx::CreateIOSpecDirect(
        fbb, name ? name.str().c_str() : ("input" + std::to_string(arg.getArgNumber())).c_str(),
        *id));
  }
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto id = valueIndex(v);
    if (failed(id))
      return failure();
    auto name = func.getResultAttrOfType<StringAttr>(i, "kiln.name");
    outputs.push_back(kx::CreateIOSpecDirect(
        fbb, name ? name.str().c_str() : ("output" + std::to_string(i)).c_str(), *id));
  }
  auto arena = func->getAttrOfType<IntegerAttr>("exec.arena_bytes");
  auto streams = func->getAttrOfType<IntegerAttr>("exec.streams");
  if (!arena)
    return func.emitOpError("has no buffer plan; run kiln-assign-buffers first");
  std::vector<flatbuffers::Offset<kx::DeviceCode>> deviceCode;
  for (const DeviceCodeBlob &blob : code.blobs) {
    fbb.ForceVectorAlignment(blob.data.size(), 1, 16);
    auto data = fbb.CreateVector(reinterpret_cast<const uint8_t *>(blob.data.data()),
                                 blob.data.size());
    deviceCode.push_back(kx::CreateDeviceCode(fbb, fbb.CreateString(blob.target),
                                              fbb.CreateString(blob.format), data));
  }
  std::vector<flatbuffers::Offset<kx::SizeSymbol>> symbols;
  for (auto [k, s] : llvm::enumerate(getSizeSymbols(func))) {
    SmallVector<int64_t> code = s.code;
    if (s.bound) {
      // What its kiln.take_prefix reads; a length whose op was removed
      // sizes nothing (the dialect refuses a bound symbol used unbound): a
      // constant.
      auto it = boundLengths.find(k);
      code = it == boundLengths.end()
                 ? SmallVector<int64_t>{static_cast<int64_t>(::kiln::ref::SizeOp::Constant), s.min}
                 : it->second;
    }
    auto codeVector = code.empty() ? 0 : fbb.CreateVector(code.data(), code.size());
    symbols.push_back(
        kx::CreateSizeSymbol(fbb, fbb.CreateString(s.name), s.min, s.max, s.opt, codeVector));
  }
  FailureOr<std::vector<kx::State>> stateList = states();
  if (failed(stateList))
    return failure();
  auto root = kx::CreateExecutableDirect(
      fbb, func.getName().str().c_str(), &inputs, &outputs, &values, &weights,
      arena.getInt(), streams ? streams.getInt() : 1, numEvents, &steps, &deviceCode,
      code.deterministic, symbols.empty() ? nullptr : &symbols,
      stateList->empty() ? nullptr : &*stateList);
  kx::FinishExecutableBuffer(fbb, root);

  ::kiln::rt::FileHeader header{};
  std::memcpy(header.magic, ::kiln::rt::kFileMagic, sizeof(header.magic));
  header.version = ::kiln::rt::kFormatVersion;
  header.headerSize = ::kiln::rt::kHeaderSize;
  header.payloadSize = fbb.GetSize();
  header.payloadChecksum = ::kiln::rt::payloadChecksum(fbb.GetBufferPointer(), fbb.GetSize());
  os.write(reinterpret_cast<const char *>(&header), sizeof(header));
  os.write(reinterpret_cast<const char *>(fbb.GetBufferPointer()), fbb.GetSize());
  return success();
}

} // namespace

LogicalResult mlir::kiln::writeExecutable(func::FuncOp func, llvm::raw_ostream &os,
                                          const DeviceCode &code) {
  return Writer(func, code).write(os);
}
