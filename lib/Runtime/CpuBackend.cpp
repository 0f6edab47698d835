//===- CpuBackend.cpp - run a step on the CPU -----------------------------===//
//
// The reference path decodes the step's inputs from memory (any dtype and
// layout), evaluates its ops with the shared reference kernels and encodes
// the results. Single-precision row-major matmuls and convolutions take the
// host GEMM path (oneDNN's sgemm, HostGemm.h; convolutions as oneDNN
// primitives, HostConv.h, else through im2col),
// also inside fused steps, where the other ops of the region run on the
// matmul's result in memory; f16 and bf16 matmuls widen to f32 for it and
// round once. f32 elementwise ops run on f32 values directly
// (bit-identical to the reference, which rounds every result to f32
// anyway), as do data movement, normalisations and pooling
// (ref::evaluateF32), on the host's threads.
//
//===----------------------------------------------------------------------===//

#include "CpuCode.h"
#include "HostConv.h"
#include "HostGemm.h"
#include "HostThreads.h"
#include "ScratchBuffer.h"
#include "Program.h"

#include "kiln/Reference/Kernels.h"
#include "kiln/Reference/Ops.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

namespace kiln {
namespace rt {

namespace {

bool flag(const OpDesc &op, const char *name) {
  auto it = op.attrs.find(name);
  return it != op.attrs.end() && it->second.i != 0;
}

/// C = A x B on the host GEMM, for f32 row-major operands whose batch
/// dimensions are equal or where B has none (a weight); `deterministic`:
/// the same bits on any thread count (hostSgemmDeterministic).
bool sgemmMatmul(const OpDesc &op, const ref::Shape &as, const float *pa, const ref::Shape &bs,
                 const float *pb, const ref::Shape &cs, float *pc, bool deterministic) {
  bool ta = flag(op, "transpose_a"), tb = flag(op, "transpose_b");
  size_t ra = as.size(), rb = bs.size();
  if (ra < 2 || rb < 2 || cs.size() < 2)
    return false;
  int64_t m = as[ra - (ta ? 1 : 2)], k = as[ra - (ta ? 2 : 1)];
  int64_t n = bs[rb - (tb ? 2 : 1)];
  ref::Shape batchShapeA(as.begin(), as.end() - 2), batchShapeB(bs.begin(), bs.end() - 2);
  int64_t batchA = ref::numElements(batchShapeA), batchB = ref::numElements(batchShapeB);
  int64_t batchC = ref::numElements(ref::Shape(cs.begin(), cs.end() - 2));
  if (!(batchShapeA == batchShapeB || (rb == 2 && batchA == batchC)) || batchC == 0 || m == 0 ||
      n == 0)
    return false;
  auto gemm = deterministic ? hostSgemmDeterministic : hostSgemm;
  for (int64_t i = 0; i < batchC; ++i)
    gemm(ta, tb, m, n, k, 1.0f, pa + (batchA > 1 ? i * m * k : 0), ta ? m : k,
         pb + (batchB > 1 ? i * k * n : 0), tb ? k : n, 0.0f, pc + i * m * n, n);
  return true;
}

/// How a convolution runs, beyond its operands.
struct ConvRun {
  /// Where its oneDNN primitive is kept (a filter that is a weight), or null.
  std::unique_ptr<ConvPrimitive> *cached = nullptr;
  bool channelsLast = false; ///< NHWC activations, OHWI filter
  const float *residual = nullptr; ///< post-ops (channels last only): + residual,
  bool relu = false;               ///< then ReLU
  bool deterministic = false;      ///< the same bits on any thread count
};

/// 2-D convolution of f32 input, filter, bias and output (NCHW and OIHW, or
/// NHWC and OHWI): a oneDNN primitive (HostConv.h), else, for NCHW,
/// im2col + sgemm per image and group; false (for the reference kernel)
/// when oneDNN cannot and im2col's column matrix's size does not fit in 64
/// bits.
bool hostConvolution(const OpDesc &op, const ref::Shape &xs, const float *x, const ref::Shape &ws,
                     const float *filter, const float *bias, const ref::Shape &ys, float *y,
                     const ConvRun &run) {
  auto ints = [&](const char *name, std::vector<int64_t> fallback) {
    auto it = op.attrs.find(name);
    return it == op.attrs.end() ? fallback : it->second.ints;
  };
  std::vector<int64_t> strides = ints("strides", {1, 1});
  std::vector<int64_t> padding = ints("padding", {0, 0, 0, 0});
  std::vector<int64_t> dilations = ints("dilations", {1, 1});
  auto groupsIt = op.attrs.find("groups");
  int64_t groups = groupsIt == op.attrs.end() ? 1 : groupsIt->second.i;
  int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  int64_t o = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  int64_t oh = ys[2], ow = ys[3], og = o / groups;
  HostConvShape shape{n, c, h, w, o, kh, kw, oh, ow, groups,
                      {strides[0], strides[1]}, {dilations[0], dilations[1]},
                      {padding[0], padding[1], padding[2], padding[3]}, run.channelsLast,
                      run.residual != nullptr, run.relu, run.deterministic};
  if (hostConv2d(shape, x, filter, bias, y, run.cached, run.residual))
    return true;
  if (run.channelsLast || run.residual || run.relu)
    return false; // (im2col reads NCHW and has no post-ops)
  int64_t rows = cg * kh * kw, cols = oh * ow, columnCount;
  if (__builtin_mul_overflow(rows, cols, &columnCount))
    return false;
  // A 1x1, stride-1, unpadded convolution reads the image as the matrix.
  bool direct = kh == 1 && kw == 1 && strides == std::vector<int64_t>{1, 1} &&
                padding == std::vector<int64_t>{0, 0, 0, 0};
  // Every element of the column matrix is written: no zero fill.
  std::unique_ptr<float[]> columns(direct ? nullptr : new float[columnCount]);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const float *image = x + (b * c + g * cg) * h * w;
      if (!direct)
        ref::im2colF32(image, cg, h, w, kh, kw, oh, ow, strides.data(), padding.data(),
                       dilations.data(), columns.get());
      float *result = y + (b * o + g * og) * cols;
      (run.deterministic ? hostSgemmDeterministic : hostSgemm)(
          false, false, og, cols, rows, 1.0f, filter + g * og * rows, rows,
          direct ? image : columns.get(), cols, 0.0f, result, cols);
      if (bias)
        for (int64_t oc = 0; oc < og; ++oc)
          for (int64_t k = 0; k < cols; ++k)
            result[oc * cols + k] += bias[g * og + oc];
    }
  return true;
}

/// Where op `index` of `step` keeps its convolution primitive: a slot of
/// the step's cache when its filter is a weight (the same values at the
/// same address every run), else nowhere.
std::unique_ptr<ConvPrimitive> *convSlot(const Program &program, const StepDesc &step,
                                         size_t index, HostConvCache *convolutions) {
  const OpDesc &op = step.ops[index];
  if (!convolutions || op.operands.size() < 2 || op.operands[1] >= step.inputs.size() ||
      program.values[step.inputs[op.operands[1]]].kind != ValueKind::Weight)
    return nullptr;
  return &convolutions->slot(index);
}

/// A step of one f32 matmul or convolution runs on the step's buffers
/// directly, without decoding them.
bool tryBlasStep(const StepDesc &step, const Program &program,
                 const std::vector<const uint8_t *> &inputs,
                 const std::vector<uint8_t *> &outputs, HostConvCache *convolutions) {
  if (step.ops.size() != 1 || step.yields.size() != 1 || step.yields[0] != step.inputs.size())
    return false;
  const OpDesc &op = step.ops[0];
  if (op.name != "kiln.matmul" && op.name != "kiln.conv2d")
    return false;
  for (uint32_t operand : op.operands)
    if (!isRowMajorF32(program.values[step.inputs[operand]].type))
      return false;
  const TensorSpec &out = program.values[step.outputs[0]].type;
  if (!isRowMajorF32(out))
    return false;
  auto shape = [&](size_t k) -> const ref::Shape & {
    return program.values[step.inputs[op.operands[k]]].type.shape;
  };
  auto data = [&](size_t k) {
    return k < op.operands.size() ? reinterpret_cast<const float *>(inputs[op.operands[k]])
                                  : nullptr;
  };
  float *result = reinterpret_cast<float *>(outputs[0]);
  if (op.name == "kiln.matmul")
    return sgemmMatmul(op, shape(0), data(0), shape(1), data(1), out.shape, result,
                       program.deterministic);
  ConvRun run;
  run.cached = convSlot(program, step, 0, convolutions);
  run.deterministic = program.deterministic;
  return hostConvolution(op, shape(0), data(0), shape(1), data(1), data(2), out.shape, result, run);
}

/// A value inside a step: a step input still in memory, a result written
/// straight into the step's output buffer, an f32 row-major result in a
/// scratch array, or a decoded reference tensor. Decoding happens only
/// when an op on the reference path needs it, so a fused step's matmul reads
/// its weights in place, as an unfused one does.
class StepValue {
public:
  StepValue(const TensorSpec &type, const uint8_t *memory) : type_(&type), memory_(memory) {}
  StepValue(const TensorSpec &type, ScratchBuffer f32) : type_(&type), f32_(std::move(f32)) {}
  StepValue(const TensorSpec &type, ref::Tensor tensor) : type_(&type), tensor_(std::move(tensor)) {}
  StepValue(StepValue &&) = default;
  StepValue &operator=(StepValue &&) = default;
  // memory_ may point into bytes_: a copy would point into its source.
  StepValue(const StepValue &) = delete;
  StepValue &operator=(const StepValue &) = delete;
  /// A result already encoded as its type's bytes.
  StepValue(const TensorSpec &type, std::vector<uint8_t> bytes)
      : type_(&type), bytes_(std::move(bytes)) {
    memory_ = bytes_.data();
  }

  const TensorSpec &type() const { return *type_; }
  /// The value's bytes as its type encodes them, where it has them (a step
  /// input, an encoded result), else null.
  const uint8_t *memory() const { return memory_; }

  /// The elements of an f32 value as stored, in its type's memory order
  /// (any layout), or null for another dtype.
  const float *f32Stored() {
    if (type_->dtype != ref::DType::F32)
      return nullptr;
    if (type_->dimOrder.empty())
      return f32();
    if (memory_)
      return reinterpret_cast<const float *>(memory_);
    if (f32_.empty() && tensor_) {
      f32_ = ScratchBuffer(tensor_->numElements());
      ref::encodeTensor(*tensor_, type_->dimOrder, reinterpret_cast<uint8_t *>(f32_.data()));
    }
    return f32_.data();
  }

  /// The elements as f32 row-major, or null for another dtype or layout.
  const float *f32() {
    if (!isRowMajorF32(*type_))
      return nullptr;
    if (memory_)
      return reinterpret_cast<const float *>(memory_);
    if (f32_.empty() && tensor_) {
      f32_ = ScratchBuffer(tensor_->f.size());
      std::copy(tensor_->f.begin(), tensor_->f.end(), f32_.data());
    }
    return f32_.data();
  }

  /// The elements as the type encodes them (row-major f32 wherever they
  /// are; another dtype's bytes, encoded from the reference's tensor if need
  /// be): what compiled kernels read.
  const void *bytes() {
    if (const float *f = f32Stored())
      return f;
    if (!memory_) {
      bytes_.resize(static_cast<size_t>(type_->byteSize()));
      ref::encodeTensor(tensor(), type_->dimOrder, bytes_.data());
      memory_ = bytes_.data();
    }
    return memory_;
  }

  const ref::Tensor &tensor() {
    if (!tensor_) {
      if (memory_)
        tensor_ = ref::decodeTensor(type_->dtype, type_->shape, type_->dimOrder, memory_);
      else if (!type_->dimOrder.empty()) // f32 elements in the type's order
        tensor_ = ref::decodeTensor(type_->dtype, type_->shape, type_->dimOrder,
                                    reinterpret_cast<const uint8_t *>(f32_.data()));
      else {
        tensor_ = ref::Tensor::zeros(ref::DType::F32, type_->shape);
        tensor_->f.assign(f32_.data(), f32_.data() + f32_.size());
      }
    }
    return *tensor_;
  }

  /// Writes the value into an output buffer of its type.
  void store(uint8_t *out) {
    if (!bytes_.empty()) {
      std::memcpy(out, bytes_.data(), bytes_.size());
      return;
    }
    if (type_->dtype == ref::DType::F32 && !tensor_) { // stored in the type's order
      std::memcpy(out, f32Stored(), type_->numElements() * sizeof(float));
      return;
    }
    ref::encodeTensor(tensor(), type_->dimOrder, out);
  }

private:
  const TensorSpec *type_;
  const uint8_t *memory_ = nullptr;
  std::vector<uint8_t> bytes_;
  ScratchBuffer f32_;
  std::optional<ref::Tensor> tensor_;
};

/// Where an f32 row-major result is computed: straight into the step's
/// output buffer when the value is one of the step's outputs (no copy
/// afterwards), else into a scratch array. Every path writes every element.
class F32Result {
public:
  F32Result(const TensorSpec &type, uint8_t *output) : type_(type), output_(output) {
    if (!output_)
      scratch_ = ScratchBuffer(type.numElements());
  }
  float *data() { return output_ ? reinterpret_cast<float *>(output_) : scratch_.data(); }
  StepValue take() {
    return output_ ? StepValue(type_, static_cast<const uint8_t *>(output_))
                   : StepValue(type_, std::move(scratch_));
  }

private:
  const TensorSpec &type_;
  uint8_t *output_;
  ScratchBuffer scratch_;
};

/// What a fast path may need of the step around its op.
struct OpContext {
  const Program &program;
  const StepDesc &step;
  size_t index; ///< the op's, in the step
  HostConvCache *convolutions;
};

/// Inside a fused step: an f32 row-major matmul or convolution through
/// the host GEMM or oneDNN, or nothing.
std::optional<StepValue> tryBlasOp(const OpDesc &op, std::vector<StepValue> &local,
                                   uint8_t *output, const OpContext &context) {
  if ((op.name != "kiln.matmul" && op.name != "kiln.conv2d") || op.results.size() != 1 ||
      !isRowMajorF32(op.results[0]))
    return std::nullopt;
  std::vector<const float *> data;
  for (uint32_t operand : op.operands) {
    const float *p = local[operand].f32();
    if (!p)
      return std::nullopt;
    data.push_back(p);
  }
  auto shape = [&](size_t k) -> const ref::Shape & { return local[op.operands[k]].type().shape; };
  F32Result out(op.results[0], output);
  bool deterministic = context.program.deterministic;
  if (op.name == "kiln.matmul") {
    if (!sgemmMatmul(op, shape(0), data[0], shape(1), data[1], op.results[0].shape, out.data(),
                     deterministic))
      return std::nullopt;
  } else {
    ConvRun run;
    run.cached = convSlot(context.program, context.step, context.index, context.convolutions);
    run.deterministic = deterministic;
    if (!hostConvolution(op, shape(0), data[0], shape(1), data[1],
                         data.size() > 2 ? data[2] : nullptr, op.results[0].shape, out.data(), run))
      return std::nullopt;
  }
  return out.take();
}

/// Inside a fused step: a gather from a row-major table of any dtype,
/// copying only the rows it picks (the reference would decode the whole
/// table: an embedding's 30522 x 384 elements for 32 tokens, or an int8
/// one's).
std::optional<StepValue> tryGather(const OpDesc &op, std::vector<StepValue> &local,
                                   uint8_t *output, const OpContext &) {
  if (op.name != "kiln.gather" || op.results.size() != 1 || op.operands.size() != 2)
    return std::nullopt;
  const TensorSpec &type = op.results[0];
  StepValue &data = local[op.operands[0]];
  if (data.type().dtype != type.dtype || !data.type().dimOrder.empty() || !type.dimOrder.empty())
    return std::nullopt;
  // The table's bytes: f32 values wherever they are, other dtypes in memory.
  const uint8_t *table = isRowMajorF32(type) ? reinterpret_cast<const uint8_t *>(data.f32())
                                             : data.memory();
  if (!table)
    return std::nullopt;
  const ref::Tensor &indices = local[op.operands[1]].tensor(); // small: decoded
  if (indices.isFloat())
    return std::nullopt;
  auto it = op.attrs.find("axis");
  int64_t axis = it == op.attrs.end() ? 0 : it->second.i;
  if (axis < 0 || axis >= static_cast<int64_t>(data.type().shape.size()))
    return std::nullopt;
  auto gather = [&](uint8_t *out) {
    ref::gatherRows(table, ref::byteWidth(type.dtype), data.type().shape, indices.i.data(),
                    indices.numElements(), axis, out);
  };
  if (isRowMajorF32(type)) {
    F32Result out(type, output);
    gather(reinterpret_cast<uint8_t *>(out.data()));
    return out.take();
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(type.byteSize()));
  gather(bytes.data());
  return StepValue(type, std::move(bytes));
}

/// Inside a fused step: an f16 or bf16 row-major matmul through the host
/// GEMM in f32 (the operands widened exactly, the product rounded to the
/// result's dtype once), where the reference would multiply in double:
/// f16 and bf16 go through f32 tiles, never element by element in double.
std::optional<StepValue> tryHalfMatmul(const OpDesc &op, std::vector<StepValue> &local,
                                       uint8_t * /*output: f16 or bf16, not taken*/,
                                       const OpContext &context) {
  if (op.name != "kiln.matmul" || op.results.size() != 1 || op.operands.size() != 2)
    return std::nullopt;
  const TensorSpec &type = op.results[0];
  bool half = type.dtype == ref::DType::F16 || type.dtype == ref::DType::BF16;
  if (!half || !type.dimOrder.empty())
    return std::nullopt;
  std::vector<ScratchBuffer> wide;
  for (uint32_t operand : op.operands) {
    StepValue &value = local[operand];
    const TensorSpec &t = value.type();
    if (t.dtype != type.dtype || !t.dimOrder.empty())
      return std::nullopt;
    ScratchBuffer &f = wide.emplace_back(t.numElements());
    if (const uint8_t *bytes = value.memory())
      ref::widenToF32(t.dtype, bytes, t.numElements(), f.data());
    else // computed by the reference: its doubles hold the dtype's values
      std::copy(value.tensor().f.begin(), value.tensor().f.end(), f.data());
  }
  ScratchBuffer product(type.numElements());
  if (!sgemmMatmul(op, local[op.operands[0]].type().shape, wide[0].data(),
                   local[op.operands[1]].type().shape, wide[1].data(), type.shape,
                   product.data(), context.program.deterministic))
    return std::nullopt;
  std::vector<uint8_t> bytes(product.size() * 2);
  ref::narrowFromF32(type.dtype, product.data(), type.numElements(), bytes.data());
  return StepValue(type, std::move(bytes));
}

/// Inside a fused step: an op on f32 row-major values with an f32 path
/// (elementwise, data movement, normalisations, pooling), without decoding
/// them to double tensors; bit-identical to the reference evaluator.
std::optional<StepValue> tryF32Op(const OpDesc &op, std::vector<StepValue> &local,
                                  uint8_t *output, const OpContext &) {
  if (op.results.size() != 1 || !isRowMajorF32(op.results[0]))
    return std::nullopt;
  std::vector<const float *> data;
  std::vector<const ref::Shape *> shapes;
  for (uint32_t operand : op.operands) {
    const float *p = local[operand].f32();
    if (!p)
      return std::nullopt;
    data.push_back(p);
    shapes.push_back(&local[operand].type().shape);
  }
  const TensorSpec &type = op.results[0];
  F32Result out(type, output);
  if (!ref::evaluateF32(op.name, op.attrs, data, shapes, type.shape, out.data()))
    return std::nullopt;
  return out.take();
}

/// The dimension order of `t` (empty: row-major) as a permutation.
std::vector<int64_t> dimOrderOf(const TensorSpec &t) {
  if (!t.dimOrder.empty())
    return t.dimOrder;
  std::vector<int64_t> order(t.shape.size());
  for (size_t d = 0; d < order.size(); ++d)
    order[d] = static_cast<int64_t>(d);
  return order;
}

/// The shape of `t` as stored: its dimensions in memory order.
ref::Shape storedShape(const TensorSpec &t) {
  ref::Shape shape;
  for (int64_t d : dimOrderOf(t))
    shape.push_back(t.shape[d]);
  return shape;
}

constexpr int64_t kChannelsLast[] = {0, 2, 3, 1};

bool isChannelsLastF32(const TensorSpec &t) {
  return t.dtype == ref::DType::F32 && t.shape.size() == 4 &&
         t.dimOrder == std::vector<int64_t>(std::begin(kChannelsLast), std::end(kChannelsLast));
}

/// Inside a fused step: f32 ops on values stored in another order than
/// row-major, in that order (the CPU's channels-last convolution chains):
/// relayouts and transposes as one permutation of the stored elements
/// (none: a copy), NHWC convolutions on oneDNN, max and global average
/// pooling of NHWC values.
std::optional<StepValue> tryStoredOrderOp(const OpDesc &op, std::vector<StepValue> &local,
                                          uint8_t *output, const OpContext &context) {
  if (op.results.size() != 1 || op.operands.empty() || op.results[0].dtype != ref::DType::F32)
    return std::nullopt;
  const TensorSpec &type = op.results[0];
  StepValue &input = local[op.operands[0]];
  const TensorSpec &in = input.type();
  if (in.dtype != ref::DType::F32 || (in.dimOrder.empty() && type.dimOrder.empty()))
    return std::nullopt; // row-major: the other paths
  if (op.name == "kiln.relayout" || op.name == "kiln.transpose") {
    // Result dimension d is input dimension perm[d]; stored position k of
    // the result holds result dimension out[k], stored at position
    // inverse(in)[perm[out[k]]] of the input.
    std::vector<int64_t> perm = dimOrderOf(type);
    if (op.name == "kiln.transpose") {
      auto it = op.attrs.find("perm");
      if (it == op.attrs.end())
        return std::nullopt;
      perm = it->second.ints;
    } else {
      for (size_t d = 0; d < perm.size(); ++d)
        perm[d] = static_cast<int64_t>(d);
    }
    std::vector<int64_t> inOrder = dimOrderOf(in), outOrder = dimOrderOf(type);
    if (perm.size() != inOrder.size() || outOrder.size() != inOrder.size())
      return std::nullopt;
    std::vector<int64_t> storedAt(inOrder.size());
    for (size_t k = 0; k < inOrder.size(); ++k)
      storedAt[inOrder[k]] = static_cast<int64_t>(k);
    std::vector<int64_t> moves(outOrder.size());
    for (size_t k = 0; k < outOrder.size(); ++k)
      moves[k] = storedAt[perm[outOrder[k]]];
    F32Result out(type, output);
    ref::transposeF32(input.f32Stored(), storedShape(in), moves, out.data());
    return out.take();
  }
  if (op.name == "kiln.conv2d") {
    if (!isChannelsLastF32(in) || !isChannelsLastF32(type) || op.operands.size() < 2)
      return std::nullopt;
    StepValue &filter = local[op.operands[1]];
    if (!isChannelsLastF32(filter.type()))
      return std::nullopt;
    const float *bias = nullptr;
    if (op.operands.size() > 2 && !(bias = local[op.operands[2]].f32()))
      return std::nullopt;
    F32Result out(type, output);
    ConvRun run;
    run.cached = convSlot(context.program, context.step, context.index, context.convolutions);
    run.channelsLast = true;
    run.deterministic = context.program.deterministic;
    if (!hostConvolution(op, in.shape, input.f32Stored(), filter.type().shape, filter.f32Stored(),
                         bias, type.shape, out.data(), run))
      return std::nullopt;
    return out.take();
  }
  if (op.name == "kiln.max_pool2d" || op.name == "kiln.global_avg_pool") {
    if (!isChannelsLastF32(in))
      return std::nullopt;
    // Max pooling keeps NHWC; global average pooling gives [N, C, 1, 1],
    // the same bytes in either order.
    if (op.name == "kiln.max_pool2d" && !isChannelsLastF32(type))
      return std::nullopt;
    F32Result out(type, output);
    if (!ref::evaluateNhwcF32(op.name, op.attrs, input.f32Stored(), storedShape(in), out.data()))
      return std::nullopt;
    return out.take();
  }
  return std::nullopt;
}

/// Calls a kernel of the linked CPU code. Clang's -fsanitize=function
/// reads a signature word just before the callee, which native code linked
/// at run time does not have (at the start of its pages: a fault).
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
void callCpuKernel(CpuKernelFn fn, const void *const *reads, float *const *writes, int64_t begin,
                   int64_t end) {
  fn(reads, writes, begin, end);
}

/// What a kernel may touch, as the loader checked it: every byte of each
/// read (at most the run's elements) and [begin, end) of each write. The
/// stand-in reads the former and zeroes the latter.
void runCpuKernelStandIn(const std::vector<const void *> &reads,
                         const std::vector<int64_t> &readBytes,
                         const std::vector<float *> &writes, int64_t begin, int64_t end) {
  volatile uint8_t sink = 0;
  for (size_t k = 0; k < reads.size(); ++k)
    for (int64_t i = 0; i < readBytes[k]; ++i)
      sink = sink ^ static_cast<const uint8_t *>(reads[k])[i];
  for (float *write : writes)
    std::fill(write + begin, write + end, 0.0f);
}

/// A compiled run of the step's ops (CpuCode.h): its reads in place, its
/// writes into the step's output buffers or scratch arrays, the elements
/// split over the host's threads (each element computed once, by one
/// thread: results do not depend on the split). `outputOf` gives, per local
/// value, the output buffer it goes to, or null.
void runCpuKernel(const CpuKernelDesc &kernel, CpuKernelFn fn, std::vector<StepValue> &local,
                  const StepDesc &step, const std::vector<uint8_t *> &outputOf, bool standIn) {
  std::vector<const void *> reads;
  std::vector<int64_t> readBytes;
  for (uint32_t r : kernel.reads) {
    reads.push_back(local[r].bytes());
    readBytes.push_back(local[r].type().byteSize());
  }
  // The counts the code reads at run time follow the read pointers.
  std::vector<const void *> readsAndCounts = reads;
  if (!kernel.counts.empty())
    readsAndCounts.push_back(kernel.counts.data());
  size_t firstLocal = local.size();
  std::vector<F32Result> results;
  results.reserve(kernel.writes.size());
  std::vector<float *> writes;
  for (uint32_t w : kernel.writes) {
    size_t op = kernel.firstOp + (w - firstLocal); // one result per compiled op
    writes.push_back(results.emplace_back(step.ops[op].results[0], outputOf[w]).data());
  }
  // Whole rows for a reduction (row > 1), any range of elements otherwise.
  int64_t row = kernel.row, cost;
  if (__builtin_mul_overflow(4 * row, static_cast<int64_t>(kernel.opCount), &cost))
    cost = INT64_MAX; // a hostile size: parallelFor saturates too
  ref::parallelRanges(kernel.elements / row, cost,
                      [&](int64_t begin, int64_t end) {
                        if (standIn)
                          runCpuKernelStandIn(reads, readBytes, writes, begin * row, end * row);
                        else
                          callCpuKernel(fn, readsAndCounts.data(), writes.data(), begin * row,
                                        end * row);
                      });
  // Every result of the run gets a slot; those kept in registers stay empty.
  for (uint32_t o = kernel.firstOp; o < kernel.firstOp + kernel.opCount; ++o) {
    size_t at = local.size();
    auto written = std::find(kernel.writes.begin(), kernel.writes.end(), at);
    if (written == kernel.writes.end())
      local.emplace_back(step.ops[o].results[0], ScratchBuffer());
    else
      local.push_back(results[written - kernel.writes.begin()].take());
  }
}

/// What a channels-last convolution's oneDNN call takes as post-ops: the
/// ops right after it that add a residual (an NHWC value of its shape) and
/// then apply ReLU, each reading the one before, none of their results but
/// the last used elsewhere, and covering exactly the compiled kernel that
/// would otherwise run them (if one starts there).
struct ConvPostOps {
  size_t count = 0; ///< ops taken after the convolution
  std::optional<uint32_t> residual;
  bool relu = false;
};

ConvPostOps convPostOps(const StepDesc &step, size_t o, uint32_t convLocal,
                        const std::vector<StepValue> &local, const CpuKernelDesc *nextKernel) {
  ConvPostOps post;
  const OpDesc &conv = step.ops[o];
  if (conv.name != "kiln.conv2d" || conv.results.size() != 1 || !isChannelsLastF32(conv.results[0]))
    return post;
  // Uses of a local value by the ops after `from` and by the yields.
  auto usedAfter = [&](uint32_t value, size_t from) {
    for (size_t k = from; k < step.ops.size(); ++k)
      if (std::count(step.ops[k].operands.begin(), step.ops[k].operands.end(), value))
        return true;
    return std::count(step.yields.begin(), step.yields.end(), value) > 0;
  };
  uint32_t current = convLocal;
  size_t k = o + 1;
  auto takes = [&](const OpDesc &op) {
    return op.results.size() == 1 && op.results[0].shape == conv.results[0].shape &&
           op.results[0].dimOrder == conv.results[0].dimOrder &&
           op.results[0].dtype == ref::DType::F32;
  };
  if (k < step.ops.size() && step.ops[k].name == "kiln.add" && takes(step.ops[k]) &&
      step.ops[k].operands.size() == 2) {
    const std::vector<uint32_t> &in = step.ops[k].operands;
    uint32_t other = in[0] == current ? in[1] : in[0];
    if ((in[0] == current) != (in[1] == current) && other < local.size() &&
        local[other].type().shape == conv.results[0].shape &&
        local[other].type().dimOrder == conv.results[0].dimOrder &&
        local[other].type().dtype == ref::DType::F32 && !usedAfter(current, k + 1)) {
      post.residual = other;
      ++post.count;
      current = convLocal + 1;
      ++k;
    }
  }
  if (k < step.ops.size() && step.ops[k].name == "kiln.relu" && takes(step.ops[k]) &&
      step.ops[k].operands.size() == 1 && step.ops[k].operands[0] == current &&
      !usedAfter(current, k + 1)) {
    post.relu = true;
    ++post.count;
  }
  if (nextKernel && nextKernel->firstOp == o + 1 && nextKernel->opCount != post.count)
    return {};
  return post;
}

/// A channels-last convolution and its post-ops (convPostOps) as one oneDNN
/// call; false (nothing done) when oneDNN has no such primitive.
bool runConvWithPostOps(const StepDesc &step, size_t o, const ConvPostOps &post,
                        std::vector<StepValue> &local, const std::vector<uint8_t *> &outputOf,
                        const OpContext &context) {
  const OpDesc &conv = step.ops[o];
  StepValue &input = local[conv.operands[0]];
  if (!isChannelsLastF32(input.type()) || conv.operands.size() < 2 ||
      !isChannelsLastF32(local[conv.operands[1]].type()))
    return false;
  StepValue &filter = local[conv.operands[1]];
  const float *bias = nullptr;
  if (conv.operands.size() > 2 && !(bias = local[conv.operands[2]].f32()))
    return false;
  const float *residual = post.residual ? local[*post.residual].f32Stored() : nullptr;
  size_t last = o + post.count;
  size_t lastLocal = local.size() + post.count; // one result per op
  F32Result out(step.ops[last].results[0], outputOf[lastLocal]);
  ConvRun run;
  run.cached = convSlot(context.program, step, o, context.convolutions);
  run.channelsLast = true;
  run.residual = residual;
  run.relu = post.relu;
  run.deterministic = context.program.deterministic;
  if (!hostConvolution(conv, input.type().shape, input.f32Stored(), filter.type().shape,
                       filter.f32Stored(), bias, conv.results[0].shape, out.data(), run))
    return false;
  // The convolution's and the residual add's results exist only inside the call.
  for (size_t k = o; k < last; ++k)
    local.emplace_back(step.ops[k].results[0], ScratchBuffer());
  local.push_back(out.take());
  return true;
}

} // namespace

Status runStepOnCpu(const Program &program, const StepDesc &step,
                    const std::vector<const uint8_t *> &inputs,
                    const std::vector<uint8_t *> &outputs, CpuMode mode,
                    const CpuStepResources &resources) {
  const std::vector<CpuKernelFn> *kernels = resources.kernels;
  // Empty results are computed by doing nothing. The kernels would still
  // loop over the other dimensions, whose product a zero dimension leaves
  // unbounded (2^40 iterations for a 0-byte tensor of a hostile .kx).
  if (std::all_of(step.outputs.begin(), step.outputs.end(),
                  [&](uint32_t v) { return program.values[v].type.numElements() == 0; }))
    return Status::ok();
  bool reference = mode == CpuMode::Reference;
  // The library's and the f32 loops' threads, for this calling thread.
  applyHostThreads();
  if (!reference && tryBlasStep(step, program, inputs, outputs, resources.convolutions))
    return Status::ok();
  std::vector<StepValue> local;
  local.reserve(step.inputs.size() + step.ops.size());
  for (size_t k = 0; k < step.inputs.size(); ++k)
    local.emplace_back(program.values[step.inputs[k]].type, inputs[k]);
  // f32 results that are step outputs are computed in their output buffer
  // (the first output yielding them; step inputs never share its memory).
  size_t localCount = step.inputs.size();
  for (const OpDesc &op : step.ops)
    localCount += op.results.size();
  std::vector<uint8_t *> outputOf(localCount, nullptr);
  std::vector<size_t> outputIndexOf(localCount, 0); // the k of outputOf's buffer
  std::vector<bool> inPlace(step.outputs.size(), false);
  if (!reference)
    for (size_t k = 0; k < step.yields.size(); ++k) {
      uint32_t y = step.yields[k];
      if (y >= step.inputs.size() && !outputOf[y] &&
          program.values[step.outputs[k]].type.dtype == ref::DType::F32) { // in its order
        outputOf[y] = outputs[k];
        outputIndexOf[y] = k;
        inPlace[k] = true;
      }
    }
  bool compiled = !reference && kernels && kernels->size() == step.cpuKernels.size();
  size_t nextKernel = 0;
  for (size_t o = 0; o < step.ops.size(); ++o) {
    if (compiled && nextKernel < step.cpuKernels.size() && step.cpuKernels[nextKernel].firstOp == o) {
      const CpuKernelDesc &kernel = step.cpuKernels[nextKernel];
      runCpuKernel(kernel, (*kernels)[nextKernel++], local, step, outputOf,
                   resources.kernelStandIns);
      o += kernel.opCount - 1;
      continue;
    }
    const OpDesc &op = step.ops[o];
    OpContext context{program, step, o, resources.convolutions};
    if (!reference && op.name == "kiln.conv2d") {
      const CpuKernelDesc *next =
          compiled && nextKernel < step.cpuKernels.size() ? &step.cpuKernels[nextKernel] : nullptr;
      ConvPostOps post = convPostOps(step, o, static_cast<uint32_t>(local.size()), local, next);
      if (post.count > 0 && runConvWithPostOps(step, o, post, local, outputOf, context)) {
        if (next && next->firstOp == o + 1)
          ++nextKernel; // (the kernel's ops are the post-ops)
        o += post.count;
        continue;
      }
    }
    uint8_t *output = op.results.size() == 1 ? outputOf[local.size()] : nullptr;
    if (op.results[0].numElements() == 0) {
      local.emplace_back(op.results[0], ref::Tensor::zeros(op.results[0].dtype, op.results[0].shape));
      continue; // (an output of no elements has nothing to store)
    }
    // The fast paths, in order; the reference evaluator takes the rest.
    using FastPath = std::optional<StepValue> (*)(const OpDesc &, std::vector<StepValue> &,
                                                  uint8_t *, const OpContext &);
    static constexpr FastPath kFastPaths[] = {tryBlasOp, tryF32Op, tryGather, tryHalfMatmul,
                                              tryStoredOrderOp};
    std::optional<StepValue> fast;
    for (FastPath path : kFastPaths)
      if (!reference && (fast = path(op, local, output, context)))
        break;
    if (fast) {
      local.push_back(std::move(*fast));
      continue;
    }
    std::vector<const ref::Tensor *> operands;
    for (uint32_t x : op.operands)
      operands.push_back(&local[x].tensor());
    std::optional<ref::Tensor> result = ref::evaluate(op.name, op.attrs, operands);
    if (!result)
      return Status::error("the CPU backend cannot run " + op.name);
    local.emplace_back(op.results[0], std::move(*result));
    if (output) // computed off the output buffer after all: stored below
      inPlace[outputIndexOf[local.size() - 1]] = false;
  }
  for (size_t k = 0; k < step.outputs.size(); ++k)
    if (!inPlace[k])
      local[step.yields[k]].store(outputs[k]);
  return Status::ok();
}

} // namespace rt
} // namespace kiln
