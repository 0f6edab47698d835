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
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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
std::optional<AffineExpr> batchStride(RankedTensorType operand, ArrayRef<AffineExpr> resultBatch) {
  SmallVector<AffineExpr> shape = getDimSizes(operand);
  MLIRContext *context = operand.getContext();
  AffineExpr one = getAffineConstantExpr(1, context);
  ArrayRef<AffineExpr> batch = ArrayRef(shape).drop_back(2);
  AffineExpr matrix = shape[shape.size() - 1] * shape[shape.size() - 2];
  if (productOf(batch, context) == one)
    return getAffineConstantExpr(0, context);
  SmallVector<AffineExpr> padded(resultBatch.size() - std::min(resultBatch.size(), batch.size()),
                                 one);
  padded.append(batch.begin(), batch.end());
  if (ArrayRef<AffineExpr>(padded) == resultBatch)
    return matrix;
  return std::nullopt;
}

/// A library call's sizes as numbers where they are static, and each
/// symbolic one as its expression (the number left 0); `field` gives the
/// call's field for each size, in the executable's order.
template <typename Call, typename Field>
SmallVector<AffineExpr> assignSizes(Call &call, ArrayRef<AffineExpr> sizes, Field field) {
  SmallVector<AffineExpr> symbolic(sizes.size());
  for (auto [k, size] : llvm::enumerate(sizes)) {
    auto constant = llvm::dyn_cast<AffineConstantExpr>(size);
    field(call, static_cast<unsigned>(k)) = constant ? constant.getValue() : 0;
    if (!constant)
      symbolic[k] = size;
  }
  if (llvm::none_of(symbolic, [](AffineExpr e) { return static_cast<bool>(e); }))
    symbolic.clear();
  return symbolic;
}

/// A size at the size symbols' largest values (the size itself when static):
/// what the cost model and the workspace are planned for.
int64_t largest(AffineExpr size, exec::StepOp step) {
  SmallVector<int64_t> values;
  for (const SizeSymbol &symbol : getSizeSymbols(step->getParentOfType<func::FuncOp>()))
    values.push_back(symbol.max);
  return evaluateSize(size, values).value_or(0);
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

  // Row-major shapes: result [batch..., M, N], lhs M x K, rhs K x N; each
  // size symbolic or static.
  int64_t rank = cType.getRank();
  SmallVector<AffineExpr> cDims = getDimSizes(cType), aDims = getDimSizes(aType);
  AffineExpr M = cDims[rank - 2], N = cDims[rank - 1];
  bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
  AffineExpr K = aDims[ta ? aType.getRank() - 2 : aType.getRank() - 1];
  ArrayRef<AffineExpr> resultBatch = ArrayRef(cDims).drop_back(2);
  AffineExpr batches = productOf(resultBatch, step.getContext());
  std::optional<AffineExpr> strideLhs = batchStride(aType, resultBatch);
  std::optional<AffineExpr> strideRhs = batchStride(bType, resultBatch);
  if (!strideLhs || !strideRhs)
    return refuse("an operand broadcasts some batch dimensions but not all (cuBLASLt takes "
                  "one batch stride per matrix)");

  rt::GemmCall call;
  call.transA = tb;
  call.transB = ta;
  // In rt::kGemmSizeFields' order: m n k lda ldb ldc batch stride_a
  // stride_b stride_c. (A stride of a single batch is unused: 0 when the
  // batch is static 1.)
  AffineExpr zero = getAffineConstantExpr(0, step.getContext());
  auto constantBatches = llvm::dyn_cast<AffineConstantExpr>(batches);
  bool oneBatch = constantBatches && constantBatches.getValue() <= 1;
  SmallVector<AffineExpr> sizes = {N, M, K, tb ? K : N, ta ? M : K, N, batches,
                                   *strideRhs, *strideLhs, oneBatch ? zero : M * N};
  SmallVector<AffineExpr> symbolic = assignSizes(call, sizes, rt::gemmSizeField);
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
                 !hasSymbolicSizes(type) && getDimSizes(type).back() == N &&
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
  match.sizes = symbolic;
  // The problem for the cost model and the workspace: at the largest sizes.
  int64_t width = element.isF32() ? 4 : 2;
  int64_t m = largest(M, step), n = largest(N, step), k = largest(K, step),
          batch = largest(batches, step);
  auto elements = [&](RankedTensorType t) {
    return largest(productOf(getDimSizes(t), step.getContext()), step);
  };
  match.problem.m = m;
  match.problem.n = n;
  match.problem.k = k;
  match.problem.batch = batch;
  match.problem.bytesMoved = width * (elements(aType) + elements(bType) +
                                      elements(cType) * (residual ? 2 : 1) + (biased ? n : 0));
  match.problem.tensorCores = !element.isF32() || call.tf32;
  match.problem.tf32 = call.tf32;
  return match;
}

/// `call`'s fields with a `symbolic` dictionary added: each symbolic size
/// by its field's name, as a map of the size symbols.
static DictionaryAttr withSymbolicSizes(DictionaryAttr call, ArrayRef<AffineExpr> sizes,
                                        ArrayRef<const char *> names) {
  if (sizes.empty())
    return call;
  Builder b(call.getContext());
  SmallVector<NamedAttribute> symbolic;
  for (auto [k, size] : llvm::enumerate(sizes))
    if (size)
      symbolic.push_back(b.getNamedAttr(
          names[k], AffineMapAttr::get(getSizesMap({size}, call.getContext()))));
  SmallVector<NamedAttribute> fields(call.getValue());
  fields.push_back(b.getNamedAttr("symbolic", b.getDictionaryAttr(symbolic)));
  return b.getDictionaryAttr(fields);
}

/// "" when `call`'s `symbolic` dictionary (if any) names only the call's
/// sizes, each by a map of one result; else what is wrong.
static std::string checkSymbolicSizes(DictionaryAttr call, ArrayRef<const char *> names) {
  Attribute attr = call.get("symbolic");
  if (!attr)
    return "";
  auto symbolic = llvm::dyn_cast<DictionaryAttr>(attr);
  if (!symbolic)
    return "its 'symbolic' sizes are not a dictionary";
  for (NamedAttribute named : symbolic) {
    auto map = llvm::dyn_cast<AffineMapAttr>(named.getValue());
    if (!llvm::is_contained(names, named.getName().strref()) || !map ||
        map.getValue().getNumResults() != 1 || map.getValue().getNumDims() != 0)
      return "its symbolic size '" + named.getName().str() +
             "' is not one of the call's sizes as a map of the size symbols";
  }
  return "";
}

SmallVector<AffineExpr> mlir::kiln::symbolicCallSizes(DictionaryAttr call,
                                                      ArrayRef<const char *> names) {
  auto symbolic = call.getAs<DictionaryAttr>("symbolic");
  if (!symbolic)
    return {};
  SmallVector<AffineExpr> sizes(names.size());
  for (auto [k, name] : llvm::enumerate(names))
    if (auto map = symbolic.getAs<AffineMapAttr>(name);
        map && map.getValue().getNumResults() == 1)
      sizes[k] = map.getValue().getResult(0);
  return sizes;
}

DictionaryAttr mlir::kiln::gemmCallToAttr(MLIRContext *context, const rt::GemmCall &g,
                                          ArrayRef<AffineExpr> sizes) {
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
  return withSymbolicSizes(b.getDictionaryAttr(fields), sizes, rt::kGemmSizeFields);
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
  if (std::string problem = checkSymbolicSizes(attr, rt::kGemmSizeFields); !problem.empty()) {
    error = "the gemm descriptor: " + problem;
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
  // In rt::kConvSizeFields' order: n c h w k r s p q, each symbolic or
  // static (the filter's are static).
  SmallVector<AffineExpr> xDims = getDimSizes(xType), wDims = getDimSizes(wType),
                          yDims = getDimSizes(yType);
  SmallVector<AffineExpr> sizes = {xDims[0], xDims[1], xDims[2], xDims[3], wDims[0],
                                   wDims[2], wDims[3], yDims[2], yDims[3]};
  SmallVector<AffineExpr> symbolic = assignSizes(call, sizes, rt::convSizeField);
  if (!symbolic.empty() && (symbolic[4] || symbolic[5] || symbolic[6]))
    return refuseConv("the filter has symbolic sizes");
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
      bool perChannel = !hasSymbolicSizes(type) && shape.size() >= 3 &&
                        shape[shape.size() - 3] == call.k &&
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
  match.sizes = symbolic;
  int64_t width = element.isF32() ? 4 : 2;
  // The implicit GEMM: output pixels x output channels x reduction, per
  // group; at the largest sizes.
  ::kiln::rt::ConvCall at = call;
  for (unsigned f = 0; f < symbolic.size(); ++f)
    if (symbolic[f])
      ::kiln::rt::convSizeField(at, f) = largest(symbolic[f], step);
  auto elements = [&](RankedTensorType t) {
    return largest(productOf(getDimSizes(t), step.getContext()), step);
  };
  match.problem.m = at.n * at.p * at.q;
  match.problem.n = at.k / at.groups;
  match.problem.k = (at.c / at.groups) * at.r * at.s;
  match.problem.batch = at.groups;
  match.problem.bytesMoved = width * (elements(xType) + elements(wType) + elements(yType));
  match.problem.tensorCores = !element.isF32() || call.allowTf32;
  match.problem.tf32 = call.allowTf32;
  return match;
}

DictionaryAttr mlir::kiln::convCallToAttr(MLIRContext *context, const ::kiln::rt::ConvCall &g,
                                          ArrayRef<AffineExpr> sizes) {
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
  return withSymbolicSizes(b.getDictionaryAttr(fields), sizes, ::kiln::rt::kConvSizeFields);
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
  if (std::string problem = checkSymbolicSizes(attr, ::kiln::rt::kConvSizeFields);
      !problem.empty()) {
    error = "the conv descriptor: " + problem;
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
