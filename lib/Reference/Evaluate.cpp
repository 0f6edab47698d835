//===- Evaluate.cpp - evaluate a kiln op by name --------------------------===//

#include "kiln/Reference/Kernels.h"
#include "kiln/Reference/Ops.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace kiln {
namespace ref {

namespace {

int64_t intAttr(const OpAttrs &attrs, const char *name, int64_t fallback) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second.i;
}
double floatAttr(const OpAttrs &attrs, const char *name, double fallback) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second.f;
}
std::vector<int64_t> intsAttr(const OpAttrs &attrs, const char *name,
                              std::vector<int64_t> fallback = {}) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second.ints;
}

template <size_t N>
void copyInts(const std::vector<int64_t> &from, int64_t (&to)[N]) {
  for (size_t k = 0; k < N && k < from.size(); ++k)
    to[k] = from[k];
}

Pool2dParams poolParams(const OpAttrs &a) {
  Pool2dParams p;
  copyInts(intsAttr(a, "kernel"), p.kernel);
  copyInts(intsAttr(a, "strides", {1, 1}), p.strides);
  copyInts(intsAttr(a, "dilations", {1, 1}), p.dilations);
  copyInts(intsAttr(a, "padding", {0, 0, 0, 0}), p.padding);
  p.ceilMode = intAttr(a, "ceil_mode", 0) != 0;
  p.countIncludePad = intAttr(a, "count_include_pad", 0) != 0;
  return p;
}

/// Op names of the elementwise kinds (kiln.mod takes an attribute: apart).
const std::pair<const char *, ReduceKind> kReduceOps[] = {
    {"kiln.reduce_sum", ReduceKind::Sum},   {"kiln.reduce_mean", ReduceKind::Mean},
    {"kiln.reduce_max", ReduceKind::Max},   {"kiln.reduce_min", ReduceKind::Min},
    {"kiln.reduce_prod", ReduceKind::Prod},
};

const std::pair<const char *, UnaryKind> kUnaryOps[] = {
    {"kiln.neg", UnaryKind::Neg},
    {"kiln.abs", UnaryKind::Abs},
    {"kiln.exp", UnaryKind::Exp},
    {"kiln.log", UnaryKind::Log},
    {"kiln.sqrt", UnaryKind::Sqrt},
    {"kiln.rsqrt", UnaryKind::Rsqrt},
    {"kiln.tanh", UnaryKind::Tanh},
    {"kiln.sigmoid", UnaryKind::Sigmoid},
    {"kiln.relu", UnaryKind::Relu},
    {"kiln.gelu", UnaryKind::Gelu},
    {"kiln.erf", UnaryKind::Erf},
    {"kiln.not", UnaryKind::Not},
    {"kiln.floor", UnaryKind::Floor},
    {"kiln.ceil", UnaryKind::Ceil},
    {"kiln.round", UnaryKind::Round},
    {"kiln.sin", UnaryKind::Sin},
    {"kiln.cos", UnaryKind::Cos},
    {"kiln.tan", UnaryKind::Tan},
    {"kiln.asin", UnaryKind::Asin},
    {"kiln.acos", UnaryKind::Acos},
    {"kiln.atan", UnaryKind::Atan},
    {"kiln.sinh", UnaryKind::Sinh},
    {"kiln.cosh", UnaryKind::Cosh},
    {"kiln.asinh", UnaryKind::Asinh},
    {"kiln.acosh", UnaryKind::Acosh},
    {"kiln.atanh", UnaryKind::Atanh},
    {"kiln.sign", UnaryKind::Sign},
};

const std::pair<const char *, BinaryKind> kBinaryOps[] = {
    {"kiln.add", BinaryKind::Add},
    {"kiln.sub", BinaryKind::Sub},
    {"kiln.mul", BinaryKind::Mul},
    {"kiln.div", BinaryKind::Div},
    {"kiln.pow", BinaryKind::Pow},
    {"kiln.max", BinaryKind::Max},
    {"kiln.min", BinaryKind::Min},
    {"kiln.and", BinaryKind::And},
    {"kiln.or", BinaryKind::Or},
    {"kiln.eq", BinaryKind::Eq},
    {"kiln.ne", BinaryKind::Ne},
    {"kiln.lt", BinaryKind::Lt},
    {"kiln.le", BinaryKind::Le},
    {"kiln.gt", BinaryKind::Gt},
    {"kiln.ge", BinaryKind::Ge},
};

using Operands = std::vector<const Tensor *>;
using Evaluator = std::function<Tensor(const OpAttrs &, const Operands &)>;

const std::unordered_map<std::string, Evaluator> &evaluators() {
  static const std::unordered_map<std::string, Evaluator> table = [] {
    std::unordered_map<std::string, Evaluator> m;
    auto unaryOp = [&](const char *name, UnaryKind kind) {
      m[name] = [kind](const OpAttrs &, const Operands &in) { return unary(kind, *in[0]); };
    };
    auto binaryOp = [&](const char *name, BinaryKind kind) {
      m[name] = [kind](const OpAttrs &, const Operands &in) {
        return binary(kind, *in[0], *in[1]);
      };
    };
    auto reduceOp = [&](const char *name, ReduceKind kind) {
      m[name] = [kind](const OpAttrs &a, const Operands &in) {
        return reduce(kind, *in[0], intsAttr(a, "axes"), intAttr(a, "keepdims", 0) != 0);
      };
    };
    for (const auto &[name, kind] : kUnaryOps)
      unaryOp(name, kind);
    for (const auto &[name, kind] : kBinaryOps)
      binaryOp(name, kind);
    m["kiln.mod"] = [](const OpAttrs &a, const Operands &in) {
      return binary(intAttr(a, "fmod", 0) ? BinaryKind::FMod : BinaryKind::Mod, *in[0], *in[1]);
    };
    for (const auto &[name, kind] : kReduceOps)
      reduceOp(name, kind);
    m["kiln.select"] = [](const OpAttrs &, const Operands &in) {
      return select(*in[0], *in[1], *in[2]);
    };
    m["kiln.cast"] = [](const OpAttrs &a, const Operands &in) {
      return cast(*in[0], a.at("to").dtype);
    };
    m["kiln.reshape"] = [](const OpAttrs &a, const Operands &in) {
      // Resolve a -1 from the element count, as the IR's inference does.
      Shape shape = intsAttr(a, "shape");
      int64_t known = 1;
      for (int64_t d : shape)
        known *= d == -1 ? 1 : d;
      for (int64_t &d : shape)
        if (d == -1)
          d = known ? in[0]->numElements() / known : 0;
      return reshape(*in[0], shape);
    };
    m["kiln.iota"] = [](const OpAttrs &a, const Operands &) {
      int64_t n = intsAttr(a, "length").at(0);
      Tensor t = Tensor::zeros(DType::I64, {n});
      for (int64_t k = 0; k < n; ++k)
        t.setInt(k, k);
      return t;
    };
    m["kiln.transpose"] = [](const OpAttrs &a, const Operands &in) {
      return transpose(*in[0], intsAttr(a, "perm"));
    };
    m["kiln.broadcast"] = [](const OpAttrs &a, const Operands &in) {
      return broadcastTo(*in[0], intsAttr(a, "shape"));
    };
    m["kiln.slice"] = [](const OpAttrs &a, const Operands &in) {
      return slice(*in[0], intsAttr(a, "starts"), intsAttr(a, "ends"), intsAttr(a, "steps"));
    };
    m["kiln.concat"] = [](const OpAttrs &a, const Operands &in) {
      return concat(in, intAttr(a, "axis", 0));
    };
    m["kiln.pad"] = [](const OpAttrs &a, const Operands &in) {
      return pad(*in[0], intsAttr(a, "low"), intsAttr(a, "high"), floatAttr(a, "value", 0.0));
    };
    m["kiln.gather"] = [](const OpAttrs &a, const Operands &in) {
      return gather(*in[0], *in[1], intAttr(a, "axis", 0));
    };
    m["kiln.gather_elements"] = [](const OpAttrs &a, const Operands &in) {
      return gatherElements(*in[0], *in[1], intAttr(a, "axis", 0));
    };
    m["kiln.scatter_elements"] = [](const OpAttrs &a, const Operands &in) {
      auto it = a.find("reduction");
      return scatterElements(*in[0], *in[1], *in[2], intAttr(a, "axis", 0),
                             it == a.end() ? "none" : it->second.s);
    };
    m["kiln.non_max_suppression"] = [](const OpAttrs &a, const Operands &in) {
      return nonMaxSuppression(*in[0], *in[1], in[2]->getInt(0), in[3]->getDouble(0),
                               in[4]->getDouble(0), intAttr(a, "center_point_box", 0) != 0);
    };
    m["kiln.take_prefix"] = [](const OpAttrs &a, const Operands &in) {
      // `length` is the count the runtime read and bound (in[1]'s value).
      const Tensor &x = *in[0];
      std::vector<int64_t> starts(x.shape.size(), 0), ends = x.shape,
                           steps(x.shape.size(), 1);
      ends[intAttr(a, "axis", 0)] = intsAttr(a, "length").at(0);
      return slice(x, starts, ends, steps);
    };
    m["kiln.argsort"] = [](const OpAttrs &a, const Operands &in) {
      return argsort(*in[0], intAttr(a, "axis", 0), intAttr(a, "descending", 0) != 0);
    };
    // Transfers and relayouts keep the logical value.
    m["kiln.transfer"] = [](const OpAttrs &, const Operands &in) { return *in[0]; };
    m["kiln.relayout"] = [](const OpAttrs &, const Operands &in) { return *in[0]; };
    m["kiln.argmax"] = [](const OpAttrs &a, const Operands &in) {
      return argmax(*in[0], intAttr(a, "axis", 0), intAttr(a, "keepdims", 0) != 0);
    };
    m["kiln.softmax"] = [](const OpAttrs &a, const Operands &in) {
      return softmax(*in[0], intAttr(a, "axis", 0), false);
    };
    m["kiln.log_softmax"] = [](const OpAttrs &a, const Operands &in) {
      return softmax(*in[0], intAttr(a, "axis", 0), true);
    };
    m["kiln.batch_norm"] = [](const OpAttrs &a, const Operands &in) {
      return batchNorm(*in[0], *in[1], *in[2], *in[3], *in[4], floatAttr(a, "epsilon", 1e-5));
    };
    m["kiln.layer_norm"] = [](const OpAttrs &a, const Operands &in) {
      return layerNorm(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr, intAttr(a, "axis", 0),
                       floatAttr(a, "epsilon", 1e-5));
    };
    m["kiln.matmul"] = [](const OpAttrs &a, const Operands &in) {
      return matmul(*in[0], *in[1], intAttr(a, "transpose_a", 0) != 0,
                    intAttr(a, "transpose_b", 0) != 0);
    };
    m["kiln.conv2d"] = [](const OpAttrs &a, const Operands &in) {
      Conv2dParams p;
      copyInts(intsAttr(a, "strides", {1, 1}), p.strides);
      copyInts(intsAttr(a, "padding", {0, 0, 0, 0}), p.padding);
      copyInts(intsAttr(a, "dilations", {1, 1}), p.dilations);
      p.groups = intAttr(a, "groups", 1);
      return conv2d(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr, p);
    };
    m["kiln.max_pool2d"] = [](const OpAttrs &a, const Operands &in) {
      return maxPool2d(*in[0], poolParams(a));
    };
    m["kiln.avg_pool2d"] = [](const OpAttrs &a, const Operands &in) {
      return avgPool2d(*in[0], poolParams(a));
    };
    m["kiln.global_avg_pool"] = [](const OpAttrs &, const Operands &in) {
      return globalAvgPool(*in[0]);
    };
    return m;
  }();
  return table;
}

} // namespace

bool evaluateF32(const std::string &name, const OpAttrs &a,
                 const std::vector<const float *> &in, const std::vector<const Shape *> &shapes,
                 const Shape &resultShape, float *out) {
  if (in.empty() || in.size() != shapes.size())
    return false;
  const Shape &xs = *shapes[0];
  if (std::optional<UnaryKind> kind = unaryKindOf(name)) {
    if (in.size() != 1 || *kind == UnaryKind::Not)
      return false;
    unaryF32(*kind, in[0], numElements(xs), out);
    return true;
  }
  if (std::optional<BinaryKind> kind = binaryKindOf(name))
    return in.size() == 2 && binaryF32(*kind, xs, in[0], *shapes[1], in[1], out);
  for (const auto &[reduceName, kind] : kReduceOps)
    if (name == reduceName)
      return reduceF32(kind, in[0], xs, intsAttr(a, "axes"), out);
  if (name == "kiln.reshape" || name == "kiln.transfer") { // the same elements
    std::copy(in[0], in[0] + numElements(resultShape), out);
    return true;
  }
  if (name == "kiln.transpose") {
    transposeF32(in[0], xs, intsAttr(a, "perm"), out);
    return true;
  }
  if (name == "kiln.slice") {
    sliceF32(in[0], xs, intsAttr(a, "starts"), intsAttr(a, "ends"), intsAttr(a, "steps"), out);
    return true;
  }
  if (name == "kiln.concat") {
    concatF32(in, shapes, intAttr(a, "axis", 0), out);
    return true;
  }
  if (name == "kiln.pad" && in.size() == 1) {
    padF32(in[0], xs, intsAttr(a, "low"), intsAttr(a, "high"), floatAttr(a, "value", 0.0), out);
    return true;
  }
  if (name == "kiln.softmax" || name == "kiln.log_softmax") {
    softmaxF32(in[0], xs, intAttr(a, "axis", 0), name == "kiln.log_softmax", out);
    return true;
  }
  if (name == "kiln.batch_norm" && in.size() == 5) {
    batchNormF32(in[0], xs, in[1], in[2], in[3], in[4], floatAttr(a, "epsilon", 1e-5), out);
    return true;
  }
  if (name == "kiln.layer_norm" && (in.size() == 2 || in.size() == 3)) {
    layerNormF32(in[0], xs, in[1], in.size() > 2 ? in[2] : nullptr, intAttr(a, "axis", 0),
                 floatAttr(a, "epsilon", 1e-5), out);
    return true;
  }
  if (name == "kiln.global_avg_pool" && xs.size() >= 2) {
    globalAvgPoolF32(in[0], xs, out);
    return true;
  }
  if ((name == "kiln.max_pool2d" || name == "kiln.avg_pool2d") && xs.size() == 4) {
    pool2dF32(name == "kiln.max_pool2d", in[0], xs, poolParams(a), out);
    return true;
  }
  return false;
}

bool evaluateNhwcF32(const std::string &name, const OpAttrs &a, const float *x,
                     const Shape &nhwc, float *out) {
  if (nhwc.size() != 4)
    return false;
  if (name == "kiln.max_pool2d") {
    Pool2dParams p = poolParams(a);
    if (p.dilations[0] != 1 || p.dilations[1] != 1)
      return false;
    maxPool2dNhwcF32(x, nhwc, p, out);
    return true;
  }
  if (name == "kiln.global_avg_pool") {
    globalAvgPoolNhwcF32(x, nhwc[0], nhwc[1] * nhwc[2], nhwc[3], out);
    return true;
  }
  return false;
}

std::optional<UnaryKind> unaryKindOf(const std::string &opName) {
  for (const auto &[name, kind] : kUnaryOps)
    if (opName == name)
      return kind;
  return std::nullopt;
}

std::optional<BinaryKind> binaryKindOf(const std::string &opName) {
  for (const auto &[name, kind] : kBinaryOps)
    if (opName == name)
      return kind;
  return std::nullopt;
}

std::optional<Tensor> evaluate(const std::string &name, const OpAttrs &attrs,
                               const std::vector<const Tensor *> &operands) {
  auto it = evaluators().find(name);
  if (it == evaluators().end())
    return std::nullopt;
  return it->second(attrs, operands);
}

} // namespace ref
} // namespace kiln
