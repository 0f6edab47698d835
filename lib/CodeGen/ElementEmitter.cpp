//===- ElementEmitter.cpp - CUDA expressions for elementwise graph ops ----===//

#include "ElementEmitter.h"

#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/OpClasses.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/ReferenceConversion.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

/// "1.25f" / "1.25" with enough digits to round-trip.
std::string mlir::kiln::cudaLiteral(double value, bool isDouble) {
  if (std::isnan(value))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(value))
    return std::string(value < 0 ? "-" : "") + (isDouble ? "__longlong_as_double(0x7ff0000000000000LL)"
                                                          : "__int_as_float(0x7f800000)");
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  std::string s = buffer;
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return isDouble ? s : s + "f";
}


/// The memo key of `value` at `index`: a size-1 dimension is always index
/// 0, however the caller spelled it.
static std::string indexKey(Value value, const std::vector<std::string> &index) {
  auto dims = llvm::cast<RankedTensorType>(value.getType()).getShape();
  std::string key;
  for (size_t d = 0; d < index.size(); ++d)
    key += (d ? "," : "") + (d < dims.size() && dims[d] == 1 ? std::string("0LL") : index[d]);
  return key;
}

void ElementEmitter::seed(Value value, const std::vector<std::string> &index,
                          const std::string &expr) {
  computed[{value.getAsOpaquePointer(), indexKey(value, index)}] = expr;
}

std::vector<std::string> ElementEmitter::takeLines() {
  std::vector<std::string> out;
  out.swap(lines);
  computed.clear();
  return out;
}

std::vector<int64_t> ElementEmitter::rowMajorStrides(llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

std::vector<int64_t> ElementEmitter::physicalStrides(RankedTensorType type) {
  ArrayRef<int64_t> dims = type.getShape();
  TensorEncodingAttr encoding = getEncoding(type);
  if (!encoding || encoding.isRowMajor())
    return rowMajorStrides(dims);
  // dimOrder lists the logical dimensions outermost first.
  ArrayRef<int64_t> order = encoding.getDimOrder();
  std::vector<int64_t> strides(dims.size(), 1);
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = stride;
    stride *= dims[order[k]];
  }
  return strides;
}

std::optional<std::string> ElementEmitter::scalarType(Type type) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF32())
    return std::string("float");
  if (element.isF64())
    return std::string("double");
  if (element.isInteger(1))
    return std::string("bool");
  if (element.isF16() || element.isBF16())
    return std::string("float"); // stored narrow, computed in f32
  std::string name;
  llvm::raw_string_ostream os(name);
  os << element;
  fail("element type " + name + " is not generated yet (f32, f16, bf16, f64, i1)");
  return std::nullopt;
}

std::optional<std::string> ElementEmitter::storageType(Type type) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF16())
    return std::string("__half");
  if (element.isBF16())
    return std::string("__nv_bfloat16");
  return scalarType(type);
}

std::string ElementEmitter::load(Type type, const std::string &expr) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF16())
    return "__half2float(" + expr + ")";
  if (element.isBF16())
    return "__bfloat162float(" + expr + ")";
  return expr;
}

std::string ElementEmitter::store(Type type, const std::string &expr) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF16())
    return "__float2half(" + expr + ")";
  if (element.isBF16())
    return "__float2bfloat16(" + expr + ")";
  return expr;
}

bool ElementEmitter::isNarrowFloat(Type type) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  return element.isF16() || element.isBF16();
}

std::optional<double> ElementEmitter::splatOf(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense = constant ? llvm::dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  Type element = dense.getElementType();
  if (llvm::isa<FloatType>(element))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (element.isInteger(1))
    return dense.getSplatValue<bool>() ? 1.0 : 0.0;
  return std::nullopt;
}

bool ElementEmitter::supported(Operation *op) {
  // Every op loop fusion may put in a region (isElementwiseOp and the
  // data-free broadcast and reshape), so a region never falls back to the
  // host for one op.
  bool ok = isElementwiseOp(op) ||
            llvm::isa<BroadcastOp, ReshapeOp, RelayoutOp, TransposeOp>(op);
  if (!ok) {
    fail("'" + op->getName().stripDialect().str() + "' is not generated yet by the loop emitter");
    return false;
  }
  // Values are computed by logical index; only a conversion may produce
  // another layout (which matters only where it is stored).
  for (Type t : op->getResultTypes())
    if (!scalarType(t) || (!getEncoding(t).isRowMajor() && !llvm::isa<RelayoutOp>(op)))
      return fail("a value is not row-major"), false;
  return true;
}

std::string ElementEmitter::valueAt(Value value, const std::vector<std::string> &index) {
  std::string key = indexKey(value, index);
  auto memo = computed.find({value.getAsOpaquePointer(), key});
  if (memo != computed.end())
    return memo->second;
  std::string result = compute(value, index);
  computed[{value.getAsOpaquePointer(), key}] = result;
  return result;
}

std::string ElementEmitter::fresh(Value value, const std::string &expr) {
  std::string name = "v" + std::to_string(next++);
  lines.push_back("const " + scalarType(value.getType()).value_or("float") + " " + name + " = " +
                  expr + ";");
  return name;
}

std::vector<std::string> ElementEmitter::broadcastIndex(Value operand,
                                                      const std::vector<std::string> &index) {
  auto dims = llvm::cast<RankedTensorType>(operand.getType()).getShape();
  std::vector<std::string> out;
  size_t skip = index.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    out.push_back(dims[d] == 1 ? "0LL" : index[skip + d]);
  return out;
}

std::string ElementEmitter::compute(Value value, const std::vector<std::string> &index) {
  auto dims = llvm::cast<RankedTensorType>(value.getType()).getShape();
  if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
    Value input = step.getInputs()[arg.getArgNumber()];
    if (std::optional<double> splat = splatOf(input))
      return cudaLiteral(*splat, scalarType(value.getType()) == std::string("double"));
    // Inputs may be in any layout (a conversion reads the old one).
    std::vector<int64_t> strides =
        physicalStrides(llvm::cast<RankedTensorType>(value.getType()));
    std::string offset;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1)
        continue;
      std::string term = strides[d] == 1 ? index[d] : index[d] + " * " + std::to_string(strides[d]) + "LL";
      offset += (offset.empty() ? "" : " + ") + term;
    }
    return fresh(value, load(value.getType(), "in" + std::to_string(arg.getArgNumber()) + "[" +
                                                  (offset.empty() ? "0" : offset) + "]"));
  }
  Operation *op = value.getDefiningOp();
  bool isDouble = scalarType(value.getType()) == std::string("double");
  std::string f = isDouble ? "" : "f"; // float or double math functions
  auto operand = [&](unsigned k) {
    return valueAt(op->getOperand(k), broadcastIndex(op->getOperand(k), index));
  };
  if (llvm::isa<RelayoutOp>(op)) // the same logical element
    return operand(0);
  if (auto reshape = llvm::dyn_cast<ReshapeOp>(op)) {
    // Same row-major linear position in the input's shape.
    std::vector<int64_t> strides = rowMajorStrides(dims);
    std::string linear;
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] != 1)
        linear += (linear.empty() ? "" : " + ") +
                  (strides[d] == 1 ? index[d] : index[d] + " * " + std::to_string(strides[d]) + "LL");
    if (linear.empty())
      linear = "0LL";
    auto inDims = llvm::cast<RankedTensorType>(reshape.getInput().getType()).getShape();
    std::vector<int64_t> inStrides = rowMajorStrides(inDims);
    std::vector<std::string> inIndex;
    for (size_t d = 0; d < inDims.size(); ++d) {
      if (inDims[d] == 1) {
        inIndex.push_back("0LL");
        continue;
      }
      std::string expr = "(" + linear + ")";
      if (inStrides[d] != 1)
        expr += " / " + std::to_string(inStrides[d]) + "LL";
      if (d > 0)
        expr += " % " + std::to_string(inDims[d]) + "LL";
      inIndex.push_back("(" + expr + ")");
    }
    return valueAt(reshape.getInput(), inIndex);
  }
  if (llvm::isa<BroadcastOp>(op))
    return operand(0);
  if (auto transpose = llvm::dyn_cast<TransposeOp>(op)) {
    // Result dimension k is input dimension perm[k]: index arithmetic, as
    // for a reshape (the writes stay coalesced; the reads follow the
    // permutation).
    ArrayRef<int64_t> perm = transpose.getPerm();
    std::vector<std::string> inIndex(index.size());
    for (size_t k = 0; k < perm.size(); ++k)
      inIndex[static_cast<size_t>(perm[k])] = index[k];
    return valueAt(transpose.getInput(), inIndex);
  }
  if (auto norm = llvm::dyn_cast<BatchNormOp>(op)) {
    // Per channel (dimension 1): (x - mean) * scale / sqrt(var + eps) + bias.
    std::vector<std::string> channel = {index.size() > 1 ? index[1] : "0LL"};
    std::string x = operand(0), scale = valueAt(norm.getScale(), channel),
                bias = valueAt(norm.getBias(), channel), mean = valueAt(norm.getMean(), channel),
                var = valueAt(norm.getVariance(), channel);
    return fresh(value, "(" + x + " - " + mean + ") * " + scale + " / sqrt" + f + "(" + var +
                            " + " + cudaLiteral(norm.getEpsilon().convertToDouble(), isDouble) +
                            ") + " + bias);
  }
  if (llvm::isa<CastOp>(op)) {
    // A cast to f16/bf16 rounds to it, though the value stays in f32.
    std::string converted = "(" + *scalarType(value.getType()) + ")(" + operand(0) + ")";
    if (isNarrowFloat(value.getType()))
      converted = load(value.getType(), store(value.getType(), converted));
    return fresh(value, converted);
  }
  if (llvm::isa<SelectOp>(op))
    return fresh(value, operand(0) + " ? " + operand(1) + " : " + operand(2));
  std::string one = cudaLiteral(1.0, isDouble), zero = cudaLiteral(0.0, isDouble);
  if (op->getNumOperands() == 1) {
    std::string a = operand(0);
    std::string expr =
        llvm::TypeSwitch<Operation *, std::string>(op)
            .Case([&](NegOp) { return "-(" + a + ")"; })
            .Case([&](AbsOp) { return "fabs" + f + "(" + a + ")"; })
            .Case([&](ExpOp) { return "exp" + f + "(" + a + ")"; })
            .Case([&](LogOp) { return "log" + f + "(" + a + ")"; })
            .Case([&](SqrtOp) { return "sqrt" + f + "(" + a + ")"; })
            .Case([&](RsqrtOp) { return one + " / sqrt" + f + "(" + a + ")"; })
            .Case([&](TanhOp) { return "tanh" + f + "(" + a + ")"; })
            .Case([&](SigmoidOp) { return one + " / (" + one + " + exp" + f + "(-(" + a + ")))"; })
            // NaN stays NaN, as in the reference.
            .Case([&](ReluOp) { return a + " > " + zero + " ? " + a + " : (" + a + " != " + a + " ? " + a + " : " + zero + ")"; })
            .Case([&](GeluOp) {
              return cudaLiteral(0.5, isDouble) + " * " + a + " * (" + one + " + erf" + f + "(" + a +
                     " * " + cudaLiteral(0.70710678118654752, isDouble) + "))";
            })
            .Case([&](ErfOp) { return "erf" + f + "(" + a + ")"; })
            .Case([&](NotOp) { return "!" + a; })
            .Case([&](FloorOp) { return "floor" + f + "(" + a + ")"; })
            .Case([&](CeilOp) { return "ceil" + f + "(" + a + ")"; })
            .Case([&](RoundOp) { return "rint" + f + "(" + a + ")"; })
            .Case([&](SinOp) { return "sin" + f + "(" + a + ")"; })
            .Case([&](CosOp) { return "cos" + f + "(" + a + ")"; })
            .Case([&](TanOp) { return "tan" + f + "(" + a + ")"; })
            .Case([&](AsinOp) { return "asin" + f + "(" + a + ")"; })
            .Case([&](AcosOp) { return "acos" + f + "(" + a + ")"; })
            .Case([&](AtanOp) { return "atan" + f + "(" + a + ")"; })
            .Case([&](SinhOp) { return "sinh" + f + "(" + a + ")"; })
            .Case([&](CoshOp) { return "cosh" + f + "(" + a + ")"; })
            .Case([&](AsinhOp) { return "asinh" + f + "(" + a + ")"; })
            .Case([&](AcoshOp) { return "acosh" + f + "(" + a + ")"; })
            .Case([&](AtanhOp) { return "atanh" + f + "(" + a + ")"; })
            // Keeps NaN and -0, as the reference does.
            .Case([&](SignOp) { return a + " > " + zero + " ? " + one + " : (" + a + " < " + zero + " ? -" + one + " : " + a + ")"; })
            .Default([&](Operation *) { return std::string(); });
    return fresh(value, expr);
  }
  std::string a = operand(0), b = operand(1);
  // Max and min propagate NaN, as in the reference (fmaxf would not).
  std::string nan = "(" + a + " != " + a + " || " + b + " != " + b + ")";
  std::string expr =
      llvm::TypeSwitch<Operation *, std::string>(op)
          .Case([&](AddOp) { return a + " + " + b; })
          .Case([&](SubOp) { return a + " - " + b; })
          .Case([&](MulOp) { return a + " * " + b; })
          .Case([&](DivOp) { return a + " / " + b; })
          .Case([&](PowOp) { return "pow" + f + "(" + a + ", " + b + ")"; })
          .Case([&](MaxOp) { return nan + " ? " + a + " + " + b + " : (" + a + " > " + b + " ? " + a + " : " + b + ")"; })
          .Case([&](MinOp) { return nan + " ? " + a + " + " + b + " : (" + a + " < " + b + " ? " + a + " : " + b + ")"; })
          .Case([&](ModOp mod) {
            // fmod keeps the dividend's sign; Python-style mod the divisor's.
            std::string r = "fmod" + f + "(" + a + ", " + b + ")";
            if (mod.getFmod())
              return r;
            return "(" + r + " != " + zero + " && ((" + r + " < " + zero + ") != (" + b + " < " +
                   zero + ")) ? " + r + " + " + b + " : " + r + ")";
          })
          .Case([&](AndOp) { return a + " && " + b; })
          .Case([&](OrOp) { return a + " || " + b; })
          .Case([&](EqOp) { return a + " == " + b; })
          .Case([&](NeOp) { return a + " != " + b; })
          .Case([&](LtOp) { return a + " < " + b; })
          .Case([&](LeOp) { return a + " <= " + b; })
          .Case([&](GtOp) { return a + " > " + b; })
          .Case([&](GeOp) { return a + " >= " + b; })
          .Default([&](Operation *) { return std::string(); });
  return fresh(value, expr);
}

/// Records a parameter's size and element type (its storage type known, so
/// the reference has its dtype).
static void recordParam(GeneratedKernel &kernel, Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  ::kiln::ref::DType dtype = *toReferenceDType(tensor.getElementType());
  kernel.paramBytes.push_back(tensor.getNumElements() * ::kiln::ref::byteWidth(dtype));
  kernel.paramDTypes.push_back(static_cast<int>(dtype));
}

std::vector<std::string> mlir::kiln::kernelParameters(exec::StepOp step, ElementEmitter &elements,
                                                      GeneratedKernel &kernel,
                                                      bool anyOutputLayout) {
  std::vector<std::string> params;
  for (auto [k, input] : llvm::enumerate(step.getInputs())) {
    if (ElementEmitter::splatOf(input))
      continue;
    std::optional<std::string> type = elements.storageType(input.getType());
    if (!type)
      return {};
    // Only a layout conversion reads another layout (through the element
    // emitter's physical strides); the tiled emitters index row-major.
    Value arg = step.getBody().getArgument(static_cast<unsigned>(k));
    if (!getEncoding(input.getType()).isRowMajor() &&
        !llvm::all_of(arg.getUsers(), [](Operation *u) { return llvm::isa<RelayoutOp>(u); })) {
      elements.fail("an input is not row-major");
      return {};
    }
    params.push_back("const " + *type + " *__restrict__ in" + std::to_string(k));
    kernel.inputArgs.push_back(static_cast<uint32_t>(k));
    kernel.paramTypes.push_back("const " + *type + " *");
    recordParam(kernel, input.getType());
  }
  for (auto [k, output] : llvm::enumerate(step.getResults())) {
    std::optional<std::string> type = elements.storageType(output.getType());
    if (!type)
      return {};
    if (!anyOutputLayout && !getEncoding(output.getType()).isRowMajor()) {
      elements.fail("an output is not row-major");
      return {};
    }
    params.push_back(*type + " *__restrict__ out" + std::to_string(k));
    kernel.paramTypes.push_back(*type + " *");
    recordParam(kernel, output.getType());
  }
  return params;
}

std::vector<std::string> ElementEmitter::decompose(llvm::ArrayRef<int64_t> dims,
                                                   const std::string &linear,
                                                   const std::string &prefix,
                                                   std::vector<std::string> &lines) {
  std::vector<int64_t> strides = rowMajorStrides(dims);
  std::vector<std::string> index;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) {
      index.push_back("0LL");
      continue;
    }
    std::string expr = strides[d] == 1 ? linear : "(" + linear + " / " + std::to_string(strides[d]) + "LL)";
    if (d > 0)
      expr += " % " + std::to_string(dims[d]) + "LL";
    std::string name = prefix + std::to_string(d);
    lines.push_back("const long long " + name + " = " + expr + ";");
    index.push_back(name);
  }
  return index;
}

std::string ElementEmitter::batchOffset(RankedTensorType operand,
                                        const std::vector<std::string> &resultBatchIndex) {
  auto dims = operand.getShape();
  size_t rank = dims.size();
  std::vector<int64_t> strides = rowMajorStrides(dims);
  std::string offset;
  size_t skip = resultBatchIndex.size() - (rank - 2);
  for (size_t d = 0; d + 2 < rank; ++d)
    if (dims[d] != 1)
      offset += (offset.empty() ? "" : " + ") + resultBatchIndex[skip + d] + " * " +
                std::to_string(strides[d]) + "LL";
  return offset.empty() ? std::string("0LL") : offset;
}

std::string ElementEmitter::includesFor(exec::StepOp step) {
  bool f16 = false, bf16 = false;
  auto note = [&](Type type) {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return;
    f16 |= tensor.getElementType().isF16();
    bf16 |= tensor.getElementType().isBF16();
  };
  for (Value v : step.getInputs())
    note(v.getType());
  step.getBody().walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      note(t);
  });
  return std::string(f16 ? "#include <cuda_fp16.h>\n" : "") +
         (bf16 ? "#include <cuda_bf16.h>\n" : "");
}

const char *mlir::kiln::kernelPrelude() {
  return "#ifndef KILN_SHARED\n"
         "#define KILN_SHARED(T, name, count) __shared__ T name[count]\n"
         "#endif\n"
         "#ifndef KILN_SHARED_ALIGNED\n"
         "#define KILN_SHARED_ALIGNED(T, name, count, align) __shared__ __align__(align) T "
         "name[count]\n"
         "#endif\n";
}

const char *mlir::kiln::blockReduceHelpers() {
  static const std::string text = std::string(kernelPrelude()) + R"(#ifndef KILN_REDUCE_HELPERS
#define KILN_REDUCE_HELPERS
struct KilnSum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct KilnProd {
  __device__ float operator()(float a, float b) const { return a * b; }
};
// Max and min propagate NaN, as the reference does.
struct KilnMax {
  __device__ float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
};
struct KilnMin {
  __device__ float operator()(float a, float b) const { return (a < b || a != a) ? a : b; }
};
// The reduction of every thread's `v` over the block, returned to all of
// them. blockDim.x is a multiple of 32; `scratch` holds 32 floats.
template <typename Op>
__device__ float kiln_block_reduce(float v, float *scratch, Op op, float identity) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (lane == 0)
      scratch[0] = v;
  }
  __syncthreads();
  v = scratch[0];
  __syncthreads(); // the scratch is reused by the next reduction
  return v;
}
#endif
)";
  return text.c_str();
}
