//===- LibraryCalls.cpp - matmul and convolution steps as library calls ---===//
//
// Row-major graph tensors meet column-major cuBLASLt through the identity
// (X*Y)^T = Y^T * X^T: a row-major M x N result is a column-major N x M
// matrix, so the call computes D = op(Y') * op(X') with m = N, n = M, and
// each row-major operand read as its column-major transpose. No data moves.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/LibraryCalls.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/IR/ReferenceConversion.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::kiln;
namespace rt = ::kiln::rt;

namespace {

GemmMatch refuse(std::string reason) {
  GemmMatch m;
  m.reason = std::move(reason);
  return m;
}

/// The value of a known float splat (knownSplat) feeding the step through
/// `arg`.
std::optional<double> splatInput(exec::StepOp step, BlockArgument arg) {
  DenseElementsAttr dense = knownSplat(step.getInputs()[arg.getArgNumber()]);
  if (!dense || !llvm::isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// The batch stride of a matmul operand against the result's batch
/// dimensions: a whole matrix when it has every batch, 0 when it has none
/// (all batch dimensions 1); nothing when it broadcasts only some.
std::optional<int64_t> batchStride(RankedTensorType operand, ArrayRef<int64_t> resultBatch) {
  ArrayRef<int64_t> shape = operand.getShape();
  ArrayRef<int64_t> batch = shape.drop_back(2);
  int64_t matrix = shape[shape.size() - 1] * shape[shape.size() - 2];
  if (product(batch) == 1)
    return 0;
  SmallVector<int64_t> padded(resultBatch.size() - std::min(resultBatch.size(), batch.size()), 1);
  padded.append(batch.begin(), batch.end());
  if (ArrayRef<int64_t>(padded) == resultBatch)
    return matrix;
  return std::nullopt;
}

std::string opName(Operation *op) { return op->getName().getStringRef().str(); }

} // namespace

GemmMatch mlir::kiln::matchCublasLtGemm(exec::StepOp step, bool allowTf32) {
  if (step.getKind() && *step.getKind() == "horizontal")
    return refuse("a horizontal region writes column ranges of one product to several outputs");
  if (step.getKind() && *step.getKind() != "matmul_epilogue")
    return refuse("a " + step.getKind()->str() + " region is not a matmul");
  Block &body = step.getBody().front();
  auto ops = body.without_terminator();
  if (ops.empty())
    return refuse("the step computes nothing");
  auto matmul = llvm::dyn_cast<MatMulOp>(*ops.begin());
  if (!matmul)
    return refuse("the step does not start with a matmul");
  auto lhs = llvm::dyn_cast<BlockArgument>(matmul.getLhs());
  auto rhs = llvm::dyn_cast<BlockArgument>(matmul.getRhs());
  if (!lhs || !rhs)
    return refuse("a matmul operand is computed inside the step");
  if (splatInput(step, lhs) || splatInput(step, rhs))
    return refuse("a matmul operand is a splat constant");

  auto aType = llvm::cast<RankedTensorType>(lhs.getType());
  auto bType = llvm::cast<RankedTensorType>(rhs.getType());
  auto cType = llvm::cast<RankedTensorType>(matmul.getType());
  Type element = aType.getElementType();
  if (element != bType.getElementType() || element != cType.getElementType() ||
      !(element.isF32() || element.isF16() || element.isBF16()))
    return refuse("cuBLASLt is called for f32, f16 and bf16 matmuls with one element type");
  if (aType.getRank() < 2 || bType.getRank() < 2)
    return refuse("a matmul operand has fewer than two dimensions");

  // Row-major shapes: result [batch..., M, N], lhs M x K, rhs K x N.
  int64_t rank = cType.getRank();
  int64_t M = cType.getDimSize(rank - 2), N = cType.getDimSize(rank - 1);
  bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
  int64_t K = aType.getDimSize(ta ? aType.getRank() - 2 : aType.getRank() - 1);
  ArrayRef<int64_t> resultBatch = cType.getShape().drop_back(2);
  int64_t batches = product(resultBatch);
  std::optional<int64_t> strideLhs = batchStride(aType, resultBatch);
  std::optional<int64_t> strideRhs = batchStride(bType, resultBatch);
  if (!strideLhs || !strideRhs)
    return refuse("an operand broadcasts some batch dimensions but not all (cuBLASLt takes "
                  "one batch stride per matrix)");

  rt::GemmCall call;
  call.m = N;
  call.n = M;
  call.k = K;
  call.transA = tb;
  call.lda = tb ? K : N;
  call.transB = ta;
  call.ldb = ta ? M : K;
  call.ldc = N;
  call.batch = batches;
  call.strideA = *strideRhs;
  call.strideB = *strideLhs;
  call.strideC = batches > 1 ? M * N : 0;
  call.typeA = call.typeB = call.typeC = *toReferenceDType(element);
  call.tf32 = allowTf32 && element.isF32();
  call.a = static_cast<int32_t>(rhs.getArgNumber());
  call.b = static_cast<int32_t>(lhs.getArgNumber());

  // The epilogue, in the only order cuBLASLt applies it:
  // relu(alpha * AB + beta * C + bias).
  Value current = matmul.getResult();
  bool scaled = false, biased = false, residual = false, relu = false;
  for (Operation &op : llvm::drop_begin(ops)) {
    std::string name = opName(&op);
    if (!current.hasOneUse() || *current.getUsers().begin() != &op)
      return refuse("the matmul's result is read by more than the next epilogue op");
    if (relu)
      return refuse("'" + name + "' after the relu: cuBLASLt's epilogue ends with the activation");
    if (llvm::isa<ReluOp>(op)) {
      relu = true;
    } else if (llvm::isa<MulOp, AddOp>(op)) {
      Value other = op.getOperand(0) == current ? op.getOperand(1) : op.getOperand(0);
      auto arg = llvm::dyn_cast<BlockArgument>(other);
      if (!arg)
        return refuse("'" + name + "' takes a value computed inside the step");
      auto type = llvm::cast<RankedTensorType>(other.getType());
      if (llvm::isa<MulOp>(op)) {
        std::optional<double> factor = splatInput(step, arg);
        if (!factor || scaled || biased || residual)
          return refuse(scaled || biased || residual
                            ? "a scale after the bias or residual (cuBLASLt's alpha scales only the product)"
                            : "'kiln.mul' by a tensor (cuBLASLt scales by one number)");
        if (type.getElementType() != element)
          return refuse("the scale factor has another element type");
        call.alpha = static_cast<float>(*factor);
        scaled = true;
      } else if (type == cType) {
        if (residual)
          return refuse("a second residual add");
        call.c = static_cast<int32_t>(arg.getArgNumber());
        call.beta = 1.0f;
        residual = true;
      } else if (type.getElementType() == element && type.getRank() >= 1 &&
                 type.getDimSize(type.getRank() - 1) == N &&
                 product(type.getShape().drop_back()) == 1 && type.getRank() <= rank) {
        if (biased)
          return refuse("a second bias add");
        if (splatInput(step, arg))
          return refuse("the bias is a splat constant");
        call.bias = static_cast<int32_t>(arg.getArgNumber());
        biased = true;
      } else {
        return refuse("'kiln.add' of a " + std::to_string(type.getRank()) +
                      "-d tensor that is neither a bias of N elements nor a residual of the "
                      "result's shape");
      }
    } else {
      return refuse("'" + name + "' has no cuBLASLt epilogue");
    }
    if (op.getNumResults() != 1 || op.getResult(0).getType() != cType)
      return refuse("'" + name + "' changes the result's type");
    current = op.getResult(0);
  }
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1 || yield.getValues()[0] != current)
    return refuse("the step returns more than the epilogue's result");
  call.epilogue = biased ? (relu ? rt::GemmEpilogue::BiasRelu : rt::GemmEpilogue::Bias)
                         : (relu ? rt::GemmEpilogue::Relu : rt::GemmEpilogue::None);

  GemmMatch match;
  match.ok = true;
  match.call = call;
  int64_t width = element.isF32() ? 4 : 2;
  match.problem.m = M;
  match.problem.n = N;
  match.problem.k = K;
  match.problem.batch = batches;
  match.problem.bytesMoved = width * (aType.getNumElements() + bType.getNumElements() +
                                      cType.getNumElements() * (residual ? 2 : 1) +
                                      (biased ? N : 0));
  match.problem.tensorCores = !element.isF32() || call.tf32;
  match.problem.tf32 = call.tf32;
  return match;
}

DictionaryAttr mlir::kiln::gemmCallToAttr(MLIRContext *context, const rt::GemmCall &g) {
  Builder b(context);
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("m", i64(g.m)),
      b.getNamedAttr("n", i64(g.n)),
      b.getNamedAttr("k", i64(g.k)),
      b.getNamedAttr("trans_a", b.getBoolAttr(g.transA)),
      b.getNamedAttr("trans_b", b.getBoolAttr(g.transB)),
      b.getNamedAttr("lda", i64(g.lda)),
      b.getNamedAttr("ldb", i64(g.ldb)),
      b.getNamedAttr("ldc", i64(g.ldc)),
      b.getNamedAttr("batch", i64(g.batch)),
      b.getNamedAttr("stride_a", i64(g.strideA)),
      b.getNamedAttr("stride_b", i64(g.strideB)),
      b.getNamedAttr("stride_c", i64(g.strideC)),
      b.getNamedAttr("type", b.getStringAttr(::kiln::ref::dtypeName(g.typeA))),
      b.getNamedAttr("compute", b.getStringAttr(g.tf32 ? "32F_FAST_TF32" : "32F")),
      b.getNamedAttr("epilogue", b.getStringAttr(rt::gemmEpilogueName(g.epilogue))),
      b.getNamedAttr("alpha", b.getF32FloatAttr(g.alpha)),
      b.getNamedAttr("beta", b.getF32FloatAttr(g.beta)),
      b.getNamedAttr("a", i64(g.a)),
      b.getNamedAttr("b", i64(g.b)),
      b.getNamedAttr("c", i64(g.c)),
      b.getNamedAttr("bias", i64(g.bias)),
      b.getNamedAttr("workspace", i64(static_cast<int64_t>(g.workspaceBytes))),
      b.getNamedAttr("deterministic", b.getBoolAttr(g.deterministic)),
  };
  return b.getDictionaryAttr(fields);
}

FailureOr<rt::GemmCall> mlir::kiln::gemmCallFromAttr(DictionaryAttr attr, std::string &error) {
  rt::GemmCall g;
  bool ok = true;
  auto i64 = [&](StringRef name, int64_t &out) {
    auto v = attr.getAs<IntegerAttr>(name);
    ok &= static_cast<bool>(v);
    if (v)
      out = v.getInt();
  };
  auto flag = [&](StringRef name, bool &out) {
    auto v = attr.getAs<BoolAttr>(name);
    ok &= static_cast<bool>(v);
    if (v)
      out = v.getValue();
  };
  auto f32 = [&](StringRef name, float &out) {
    auto v = attr.getAs<FloatAttr>(name);
    ok &= static_cast<bool>(v);
    if (v)
      out = static_cast<float>(v.getValueAsDouble());
  };
  auto index = [&](StringRef name, int32_t &out) {
    int64_t v = -1;
    i64(name, v);
    out = static_cast<int32_t>(v);
  };
  i64("m", g.m), i64("n", g.n), i64("k", g.k);
  flag("trans_a", g.transA), flag("trans_b", g.transB);
  i64("lda", g.lda), i64("ldb", g.ldb), i64("ldc", g.ldc), i64("batch", g.batch);
  i64("stride_a", g.strideA), i64("stride_b", g.strideB), i64("stride_c", g.strideC);
  f32("alpha", g.alpha), f32("beta", g.beta);
  index("a", g.a), index("b", g.b), index("c", g.c), index("bias", g.bias);
  int64_t workspace = 0;
  i64("workspace", workspace);
  g.workspaceBytes = static_cast<uint64_t>(std::max<int64_t>(0, workspace));
  flag("deterministic", g.deterministic);
  auto type = attr.getAs<StringAttr>("type");
  auto compute = attr.getAs<StringAttr>("compute");
  auto epilogue = attr.getAs<StringAttr>("epilogue");
  if (!ok || !type || !compute || !epilogue) {
    error = "the gemm descriptor lacks a field or has one of the wrong kind";
    return failure();
  }
  static const ::kiln::ref::DType kTypes[] = {::kiln::ref::DType::F32, ::kiln::ref::DType::F16,
                                              ::kiln::ref::DType::BF16};
  bool known = false;
  for (::kiln::ref::DType t : kTypes)
    if (type.getValue() == ::kiln::ref::dtypeName(t)) {
      g.typeA = g.typeB = g.typeC = t;
      known = true;
    }
  bool epilogueKnown = false;
  for (rt::GemmEpilogue e : {rt::GemmEpilogue::None, rt::GemmEpilogue::Relu,
                             rt::GemmEpilogue::Bias, rt::GemmEpilogue::BiasRelu})
    if (epilogue.getValue() == rt::gemmEpilogueName(e)) {
      g.epilogue = e;
      epilogueKnown = true;
    }
  if (!known || !epilogueKnown ||
      (compute.getValue() != "32F" && compute.getValue() != "32F_FAST_TF32")) {
    error = "the gemm descriptor has an unknown type, compute type or epilogue";
    return failure();
  }
  g.tf32 = compute.getValue() == "32F_FAST_TF32";
  return g;
}

//===----------------------------------------------------------------------===//
// Convolutions for cuDNN
//===----------------------------------------------------------------------===//

namespace {

ConvMatch refuseConv(std::string reason) {
  ConvMatch m;
  m.reason = std::move(reason);
  return m;
}

bool isRowMajorType(Type type) {
  TensorEncodingAttr e = getEncoding(type);
  return !e || e.isRowMajor();
}

} // namespace

ConvMatch mlir::kiln::matchCudnnConv(exec::StepOp step, bool allowTf32) {
  if (step.getKind() && *step.getKind() != "conv_epilogue")
    return refuseConv("a " + step.getKind()->str() + " region is not a convolution");
  Block &body = step.getBody().front();
  auto ops = body.without_terminator();
  auto conv = ops.empty() ? Conv2dOp() : llvm::dyn_cast<Conv2dOp>(*ops.begin());
  if (!conv)
    return refuseConv("the step does not start with a convolution");
  auto x = llvm::dyn_cast<BlockArgument>(conv.getInput());
  auto w = llvm::dyn_cast<BlockArgument>(conv.getFilter());
  auto b = conv.getBias() ? llvm::dyn_cast<BlockArgument>(conv.getBias()) : BlockArgument();
  if (!x || !w || (conv.getBias() && !b))
    return refuseConv("a convolution operand is computed inside the step");
  auto xType = llvm::cast<RankedTensorType>(x.getType());
  auto wType = llvm::cast<RankedTensorType>(w.getType());
  auto yType = llvm::cast<RankedTensorType>(conv.getType());
  Type element = xType.getElementType();
  if (element != wType.getElementType() || element != yType.getElementType() ||
      !(element.isF32() || element.isF16() || element.isBF16()))
    return refuseConv("cuDNN is called for f32, f16 and bf16 convolutions with one element type");
  // Row-major (NCHW) or, as kiln-assign-layouts gives Tensor Core
  // convolutions, all channels last (NHWC, KRSC).
  auto channelsLast = [](RankedTensorType t) { return getEncoding(t).getLayoutString() == "nhwc"; };
  bool nhwc = channelsLast(xType) && channelsLast(wType) && channelsLast(yType);
  if (!nhwc && (!isRowMajorType(xType) || !isRowMajorType(wType) || !isRowMajorType(yType)))
    return refuseConv("the convolution is neither NCHW nor NHWC throughout");

  ::kiln::rt::ConvCall call;
  call.n = xType.getDimSize(0), call.c = xType.getDimSize(1);
  call.h = xType.getDimSize(2), call.w = xType.getDimSize(3);
  call.k = wType.getDimSize(0), call.r = wType.getDimSize(2), call.s = wType.getDimSize(3);
  call.p = yType.getDimSize(2), call.q = yType.getDimSize(3);
  call.groups = conv.getGroups();
  ArrayRef<int64_t> strides = conv.getStrides(), padding = conv.getPadding(),
                    dilations = conv.getDilations();
  call.strideH = strides[0], call.strideW = strides[1];
  call.padTop = padding[0], call.padLeft = padding[1];
  call.padBottom = padding[2], call.padRight = padding[3];
  call.dilationH = dilations[0], call.dilationW = dilations[1];
  call.type = *toReferenceDType(element);
  call.nhwc = nhwc;
  call.allowTf32 = allowTf32 && element.isF32();
  call.x = static_cast<int32_t>(x.getArgNumber());
  call.filter = static_cast<int32_t>(w.getArgNumber());
  if (b) {
    call.bias = true;
    call.biasInput = static_cast<int32_t>(b.getArgNumber());
  }

  // The epilogue cuDNN fuses here: a per-channel bias add (when the
  // convolution has none), then ReLU.
  Value current = conv.getResult();
  for (Operation &op : llvm::drop_begin(ops)) {
    std::string name = opName(&op);
    if (!current.hasOneUse() || *current.getUsers().begin() != &op)
      return refuseConv("the convolution's result is read by more than the next epilogue op");
    if (call.relu)
      return refuseConv("'" + name + "' after the relu");
    if (llvm::isa<ReluOp>(op)) {
      call.relu = true;
    } else if (auto add = llvm::dyn_cast<AddOp>(op)) {
      Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
      auto arg = llvm::dyn_cast<BlockArgument>(other);
      auto type = llvm::cast<RankedTensorType>(other.getType());
      // [K] would broadcast along W, not channels: only [1, K, 1, 1] (or
      // [K, 1, 1]) is a per-channel bias.
      ArrayRef<int64_t> shape = type.getShape();
      bool perChannel = shape.size() >= 3 && shape[shape.size() - 3] == call.k &&
                        shape[shape.size() - 2] == 1 && shape.back() == 1 &&
                        product(shape) == call.k;
      if (!arg || call.bias || !perChannel || type.getElementType() != element ||
          splatInput(step, arg))
        return refuseConv("'kiln.add' is not a per-channel bias cuDNN can fuse");
      call.bias = true;
      call.biasInput = static_cast<int32_t>(arg.getArgNumber());
    } else {
      return refuseConv("'" + name + "' has no fused cuDNN epilogue here");
    }
    if (op.getNumResults() != 1 || op.getResult(0).getType() != yType)
      return refuseConv("'" + name + "' changes the result's type");
    current = op.getResult(0);
  }
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1 || yield.getValues()[0] != current)
    return refuseConv("the step returns more than the epilogue's result");

  ConvMatch match;
  match.ok = true;
  match.call = call;
  int64_t width = element.isF32() ? 4 : 2;
  // The implicit GEMM: output pixels x output channels x reduction, per group.
  match.problem.m = call.n * call.p * call.q;
  match.problem.n = call.k / call.groups;
  match.problem.k = (call.c / call.groups) * call.r * call.s;
  match.problem.batch = call.groups;
  match.problem.bytesMoved =
      width * (xType.getNumElements() + wType.getNumElements() + yType.getNumElements());
  match.problem.tensorCores = !element.isF32() || call.allowTf32;
  match.problem.tf32 = call.allowTf32;
  return match;
}

DictionaryAttr mlir::kiln::convCallToAttr(MLIRContext *context, const ::kiln::rt::ConvCall &g) {
  Builder b(context);
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("input", b.getDenseI64ArrayAttr({g.n, g.c, g.h, g.w})),
      b.getNamedAttr("filter", b.getDenseI64ArrayAttr({g.k, g.c / std::max<int64_t>(1, g.groups), g.r, g.s})),
      b.getNamedAttr("output", b.getDenseI64ArrayAttr({g.n, g.k, g.p, g.q})),
      b.getNamedAttr("groups", i64(g.groups)),
      b.getNamedAttr("strides", b.getDenseI64ArrayAttr({g.strideH, g.strideW})),
      b.getNamedAttr("dilations", b.getDenseI64ArrayAttr({g.dilationH, g.dilationW})),
      b.getNamedAttr("padding",
                     b.getDenseI64ArrayAttr({g.padTop, g.padLeft, g.padBottom, g.padRight})),
      b.getNamedAttr("type", b.getStringAttr(::kiln::ref::dtypeName(g.type))),
      b.getNamedAttr("epilogue", b.getStringAttr(g.bias ? (g.relu ? "bias_relu" : "bias")
                                                        : (g.relu ? "relu" : "none"))),
      b.getNamedAttr("x", i64(g.x)),
      b.getNamedAttr("w", i64(g.filter)),
      b.getNamedAttr("bias", i64(g.biasInput)),
      b.getNamedAttr("allow_tf32", b.getBoolAttr(g.allowTf32)),
      b.getNamedAttr("deterministic", b.getBoolAttr(g.deterministic)),
      b.getNamedAttr("workspace", i64(static_cast<int64_t>(g.workspaceBytes))),
      b.getNamedAttr("layout", b.getStringAttr(g.nhwc ? "nhwc" : "nchw")),
  };
  return b.getDictionaryAttr(fields);
}

FailureOr<::kiln::rt::ConvCall> mlir::kiln::convCallFromAttr(DictionaryAttr attr,
                                                             std::string &error) {
  ::kiln::rt::ConvCall g;
  auto array = [&](StringRef name, size_t size) -> ArrayRef<int64_t> {
    auto v = attr.getAs<DenseI64ArrayAttr>(name);
    return v && v.size() == static_cast<int64_t>(size) ? v.asArrayRef() : ArrayRef<int64_t>();
  };
  auto i64 = [&](StringRef name) -> std::optional<int64_t> {
    auto v = attr.getAs<IntegerAttr>(name);
    return v ? std::optional<int64_t>(v.getInt()) : std::nullopt;
  };
  ArrayRef<int64_t> input = array("input", 4), filter = array("filter", 4),
                    output = array("output", 4), strides = array("strides", 2),
                    dilations = array("dilations", 2), padding = array("padding", 4);
  auto groups = i64("groups"), x = i64("x"), w = i64("w"), bias = i64("bias"),
       workspace = i64("workspace");
  auto type = attr.getAs<StringAttr>("type");
  auto epilogue = attr.getAs<StringAttr>("epilogue");
  auto tf32 = attr.getAs<BoolAttr>("allow_tf32");
  auto deterministic = attr.getAs<BoolAttr>("deterministic");
  auto layout = attr.getAs<StringAttr>("layout");
  if (layout && layout.getValue() != "nhwc" && layout.getValue() != "nchw") {
    error = "the conv descriptor has an unknown layout '" + layout.getValue().str() + "'";
    return failure();
  }
  g.nhwc = layout && layout.getValue() == "nhwc";
  if (input.empty() || filter.empty() || output.empty() || strides.empty() ||
      dilations.empty() || padding.empty() || !groups || !x || !w || !bias || !workspace ||
      !type || !epilogue || !tf32 || !deterministic) {
    error = "the conv descriptor lacks a field or has one of the wrong kind";
    return failure();
  }
  g.n = input[0], g.c = input[1], g.h = input[2], g.w = input[3];
  g.k = filter[0], g.r = filter[2], g.s = filter[3];
  g.p = output[2], g.q = output[3];
  g.groups = *groups;
  g.strideH = strides[0], g.strideW = strides[1];
  g.dilationH = dilations[0], g.dilationW = dilations[1];
  g.padTop = padding[0], g.padLeft = padding[1], g.padBottom = padding[2], g.padRight = padding[3];
  g.x = static_cast<int32_t>(*x), g.filter = static_cast<int32_t>(*w);
  g.biasInput = static_cast<int32_t>(*bias);
  g.bias = g.biasInput >= 0;
  g.relu = epilogue.getValue().ends_with("relu");
  g.allowTf32 = tf32.getValue();
  g.deterministic = deterministic.getValue();
  g.workspaceBytes = static_cast<uint64_t>(std::max<int64_t>(0, *workspace));
  bool known = false;
  for (::kiln::ref::DType t :
       {::kiln::ref::DType::F32, ::kiln::ref::DType::F16, ::kiln::ref::DType::BF16})
    if (type.getValue() == ::kiln::ref::dtypeName(t)) {
      g.type = t;
      known = true;
    }
  if (!known) {
    error = "the conv descriptor has an unknown type";
    return failure();
  }
  return g;
}
