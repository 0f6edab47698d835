//===- LibraryCalls.cpp - matmul steps as cuBLASLt calls ------------------===//
//
// Row-major graph tensors meet column-major cuBLASLt through the identity
// (X*Y)^T = Y^T * X^T: a row-major M x N result is a column-major N x M
// matrix, so the call computes D = op(Y') * op(X') with m = N, n = M, and
// each row-major operand read as its column-major transpose. No data moves.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/LibraryCalls.h"

#include "kiln/IR/KilnOps.h"
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

/// The value of a splat constant feeding the step through `arg`.
std::optional<double> splatInput(exec::StepOp step, BlockArgument arg) {
  auto constant = step.getInputs()[arg.getArgNumber()].getDefiningOp<ConstantOp>();
  auto dense = constant ? llvm::dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !llvm::isa<FloatType>(dense.getElementType()))
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
        if (type.getNumElements() > cType.getNumElements() || type.getElementType() != element)
          return refuse("the scale factor broadcasts the result");
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
