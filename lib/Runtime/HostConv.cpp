//===- HostConv.cpp - f32 convolutions as oneDNN primitives ---------------===//

#include "HostConv.h"

#include "HostThreads.h"

#include "kiln/Reference/Kernels.h"

#include <dnnl.hpp>

#include <optional>
#include <unordered_map>

namespace kiln {
namespace rt {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

} // namespace

/// One problem's primitive, its filter in the primitive's layout, and the
/// activations' blocked copies (when the primitive wants another layout
/// than NCHW). Those copies are shared by the primitive's calls: safe
/// because a step never runs concurrently with itself (one session runs
/// its steps once each per run; each device keeps its own primitives).
struct ConvPrimitive {
  dnnl::convolution_forward conv;
  memory filter, source, result; ///< source and result: blocked scratch, or empty
  memory::desc userSource, userResult, bias;
  /// What it was made for beyond the sizes: the post-ops it computes and
  /// whether on one thread (a cached primitive is reused only for the same).
  bool addResidual = false, relu = false, deterministic = false;
  /// With a ReLU post-op: whether the filter and bias are all finite
  /// (scanned once). oneDNN's ReLU post-op is max(x, 0), which takes NaN to
  /// 0; the reference's ReLU keeps it. Where a NaN or infinity could reach
  /// it (in the weights, the input or the residual), the call runs
  /// `withoutRelu` and applies the reference's ReLU itself.
  bool finiteWeights = true;
  std::unique_ptr<ConvPrimitive> withoutRelu;
};

HostConvCache::HostConvCache() = default;
HostConvCache::~HostConvCache() = default;
HostConvCache::HostConvCache(HostConvCache &&) noexcept = default;
std::unique_ptr<ConvPrimitive> &HostConvCache::slot(size_t op) { return primitives_[op]; }

namespace {

std::unique_ptr<ConvPrimitive> create(const HostConvShape &s, const float *filter,
                                      const float *bias) {
  bool hasBias = bias != nullptr;
  auto f32 = memory::data_type::f32;
  memory::dims source = {s.n, s.c, s.h, s.w}, result = {s.n, s.o, s.oh, s.ow};
  memory::dims weights = s.groups > 1 ? memory::dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw}
                                      : memory::dims{s.o, s.c, s.kh, s.kw};
  // oneDNN counts dilation from 0 (no gaps), ONNX from 1.
  memory::dims strides = {s.strides[0], s.strides[1]};
  memory::dims dilations = {s.dilations[0] - 1, s.dilations[1] - 1};
  memory::dims padLow = {s.padding[0], s.padding[1]}, padHigh = {s.padding[2], s.padding[3]};
  auto p = std::make_unique<ConvPrimitive>();
  p->addResidual = s.addResidual;
  p->relu = s.relu;
  p->deterministic = s.deterministic;
  Tag activations = s.channelsLast ? Tag::nhwc : Tag::nchw;
  p->userSource = memory::desc(source, f32, activations);
  p->userResult = memory::desc(result, f32, activations);
  p->bias = memory::desc({s.o}, f32, Tag::x);
  // Channels last: NHWC in and out, as the values are stored (oneDNN's
  // brgconv kernels take it); else whatever layout oneDNN prefers.
  memory::desc any = s.channelsLast ? p->userSource : memory::desc(source, f32, Tag::any);
  memory::desc anyResult = s.channelsLast ? p->userResult : memory::desc(result, f32, Tag::any);
  memory::desc anyWeights(weights, f32, Tag::any);
  auto desc = hasBias ? dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                            any, anyWeights, p->bias, anyResult, strides, dilations, padLow, padHigh)
                      : dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                            any, anyWeights, anyResult, strides, dilations, padLow, padHigh);
  // The epilogue as post-ops, computed on each output tile while it is in
  // registers: no pass over the result afterwards.
  dnnl::primitive_attr attr;
  dnnl::post_ops postOps;
  if (s.addResidual)
    postOps.append_binary(dnnl::algorithm::binary_add, p->userResult);
  if (s.relu)
    postOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  attr.set_post_ops(postOps);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, cpuEngine());
  p->conv = dnnl::convolution_forward(pd);
  // The filter, reordered once.
  dnnl::stream stream(cpuEngine());
  Tag filterTag = s.groups > 1 ? (s.channelsLast ? Tag::gohwi : Tag::goihw)
                               : (s.channelsLast ? Tag::ohwi : Tag::oihw);
  memory userFilter(memory::desc(weights, f32, filterTag), cpuEngine(), const_cast<float *>(filter));
  p->filter = memory(pd.weights_desc(), cpuEngine());
  dnnl::reorder(userFilter, p->filter).execute(stream, userFilter, p->filter);
  stream.wait();
  if (s.relu)
    p->finiteWeights = ref::allFiniteF32(filter, s.o * (s.c / s.groups) * s.kh * s.kw) &&
                       (!bias || ref::allFiniteF32(bias, s.o));
  if (pd.src_desc() != p->userSource)
    p->source = memory(pd.src_desc(), cpuEngine());
  if (pd.dst_desc() != p->userResult)
    p->result = memory(pd.dst_desc(), cpuEngine());
  return p;
}

} // namespace

bool hostConv2d(const HostConvShape &shape, const float *x, const float *filter,
                const float *bias, float *y, std::unique_ptr<ConvPrimitive> *cached,
                const float *residual) {
  if ((shape.addResidual || shape.relu) && !shape.channelsLast)
    return false; // (post-ops only where the result needs no reorder)
  if (shape.addResidual != (residual != nullptr))
    return false;
  try {
    // One thread from the primitive's creation on: oneDNN fixes its thread
    // count, and its blocking for it, when it makes the primitive.
    std::optional<SingleThreadScope> alone;
    if (shape.deterministic)
      alone.emplace();
    std::unique_ptr<ConvPrimitive> made;
    ConvPrimitive *kept = cached ? cached->get() : nullptr;
    if (!kept || kept->addResidual != shape.addResidual || kept->relu != shape.relu ||
        kept->deterministic != shape.deterministic)
      made = create(shape, filter, bias);
    ConvPrimitive *p = made ? made.get() : kept;
    if (cached && made)
      *cached = std::move(made);
    // A NaN or infinity that could reach the ReLU post-op: without it, and
    // the reference's ReLU (NaN kept) after.
    bool reluAfter = false;
    if (shape.relu &&
        !(p->finiteWeights && ref::allFiniteF32(x, shape.n * shape.c * shape.h * shape.w) &&
          (!residual || ref::allFiniteF32(residual, shape.n * shape.o * shape.oh * shape.ow)))) {
      if (!p->withoutRelu) {
        HostConvShape plain = shape;
        plain.relu = false;
        p->withoutRelu = create(plain, filter, bias);
      }
      p = p->withoutRelu.get();
      reluAfter = true;
    }
    dnnl::stream stream(cpuEngine());
    memory source(p->userSource, cpuEngine(), const_cast<float *>(x));
    memory result(p->userResult, cpuEngine(), y);
    memory convSource = source, convResult = result;
    if (p->source) {
      dnnl::reorder(source, p->source).execute(stream, source, p->source);
      convSource = p->source;
    }
    if (p->result)
      convResult = p->result;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, convSource}, {DNNL_ARG_WEIGHTS, p->filter}, {DNNL_ARG_DST, convResult}};
    if (bias)
      args[DNNL_ARG_BIAS] = memory(p->bias, cpuEngine(), const_cast<float *>(bias));
    if (residual)
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
          memory(p->userResult, cpuEngine(), const_cast<float *>(residual));
    p->conv.execute(stream, args);
    if (p->result)
      dnnl::reorder(p->result, result).execute(stream, p->result, result);
    stream.wait();
    if (reluAfter) // x > 0 or NaN: x; else 0
      for (int64_t i = 0, n = shape.n * shape.o * shape.oh * shape.ow; i < n; ++i)
        y[i] = (y[i] > 0.0f || y[i] != y[i]) ? y[i] : 0.0f;
    return true;
  } catch (const dnnl::error &) {
    return false; // a problem oneDNN has no implementation for: im2col
  }
}

} // namespace rt
} // namespace kiln
