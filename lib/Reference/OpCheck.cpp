//===- OpCheck.cpp - is an op well-formed for its operands? ---------------===//
//
// The runtime's guard against hostile or corrupted executables: for every op
// it recomputes the result type from the operands and attributes, with the
// rules of the IR's type inference, and checks whatever the reference
// kernels rely on to stay in bounds.
//
//===----------------------------------------------------------------------===//

#include "kiln/Reference/Ops.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace kiln {
namespace ref {

namespace {

/// Collects the first failure; attribute accessors record a missing or
/// mistyped attribute and return a harmless value.
struct Checker {
  const OpAttrs &attrs;
  const std::vector<TensorInfo> &in;
  std::string error;

  bool fail(const std::string &message) {
    if (error.empty())
      error = message;
    return false;
  }
  const OpAttr *get(const char *name, OpAttr::Kind kind, bool required) {
    auto it = attrs.find(name);
    if (it == attrs.end()) {
      if (required)
        fail(std::string("missing attribute '") + name + "'");
      return nullptr;
    }
    bool ok = it->second.kind == kind ||
              (kind == OpAttr::Int && it->second.kind == OpAttr::Bool);
    if (!ok) {
      fail(std::string("attribute '") + name + "' has the wrong kind");
      return nullptr;
    }
    return &it->second;
  }
  int64_t integer(const char *name, std::optional<int64_t> fallback) {
    const OpAttr *a = get(name, OpAttr::Int, !fallback);
    return a ? a->i : fallback.value_or(0);
  }
  std::vector<int64_t> ints(const char *name, std::optional<std::vector<int64_t>> fallback) {
    const OpAttr *a = get(name, OpAttr::Ints, !fallback);
    return a ? a->ints : fallback.value_or(std::vector<int64_t>{});
  }
  bool arity(size_t lo, size_t hi) {
    if (in.size() < lo || in.size() > hi)
      return fail("wrong number of operands (" + std::to_string(in.size()) + ")");
    return true;
  }
  bool axis(int64_t a, int64_t rank) {
    return (a >= 0 && a < rank) || fail("axis " + std::to_string(a) + " out of range");
  }
  bool isFloatOperand(size_t k) {
    return isFloat(in[k].dtype) || fail("operand #" + std::to_string(k) + " must be floating-point");
  }
  bool sameDType(size_t a, size_t b) {
    return in[a].dtype == in[b].dtype || fail("operands have different dtypes");
  }
};

using Rule = std::function<std::optional<TensorInfo>(Checker &)>;

std::optional<Shape> broadcastChecked(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t da = d < rank - a.size() ? 1 : a[d - (rank - a.size())];
    int64_t db = d < rank - b.size() ? 1 : b[d - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[d] = da == 1 ? db : da;
  }
  return out;
}

std::optional<TensorInfo> reduced(Checker &c, const std::vector<int64_t> &axes, DType dtype) {
  int64_t rank = c.in[0].shape.size();
  bool keep = c.integer("keepdims", 0) != 0;
  std::set<int64_t> seen;
  for (int64_t a : axes)
    if (!c.axis(a, rank) || !seen.insert(a).second)
      return c.fail("bad reduction axes"), std::nullopt;
  Shape shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!seen.count(d))
      shape.push_back(c.in[0].shape[d]);
    else if (keep)
      shape.push_back(1);
  }
  return TensorInfo{dtype, shape};
}

std::optional<TensorInfo> window(Checker &c, bool conv) {
  const TensorInfo &x = c.in[0];
  if (x.shape.size() != 4)
    return c.fail("input must be 4-D"), std::nullopt;
  std::vector<int64_t> strides = c.ints("strides", std::vector<int64_t>{1, 1});
  std::vector<int64_t> padding = c.ints("padding", std::vector<int64_t>{0, 0, 0, 0});
  std::vector<int64_t> dilations = c.ints("dilations", std::vector<int64_t>{1, 1});
  std::vector<int64_t> kernel;
  int64_t channels = x.shape[1];
  if (conv) {
    const TensorInfo &w = c.in[1];
    int64_t groups = c.integer("groups", 1);
    // Divisions, not w.shape[1] * groups: the sizes may come from a hostile
    // file, and the product could overflow.
    if (w.shape.size() != 4 || groups < 1 || x.shape[1] % groups != 0 ||
        w.shape[1] != x.shape[1] / groups ||
        w.shape[0] % groups != 0 || w.dtype != x.dtype)
      return c.fail("filter does not match the input"), std::nullopt;
    if (c.in.size() > 2 && (c.in[2].shape != Shape{w.shape[0]} || c.in[2].dtype != x.dtype))
      return c.fail("bias does not match the filter"), std::nullopt;
    kernel = {w.shape[2], w.shape[3]};
    channels = w.shape[0];
  } else {
    kernel = c.ints("kernel", std::nullopt);
  }
  auto positive = [](const std::vector<int64_t> &v, size_t n) {
    return v.size() == n && std::all_of(v.begin(), v.end(), [](int64_t x) { return x >= 1; });
  };
  if (!positive(strides, 2) || !positive(dilations, 2) || !positive(kernel, 2) ||
      padding.size() != 4 ||
      std::any_of(padding.begin(), padding.end(), [](int64_t p) { return p < 0 || p > (1 << 20); }))
    return c.fail("bad window attributes"), std::nullopt;
  bool ceil = !conv && c.integer("ceil_mode", 0) != 0;
  int64_t oh = windowOutputSize(x.shape[2], padding[0], padding[2], kernel[0], strides[0],
                                dilations[0], ceil);
  int64_t ow = windowOutputSize(x.shape[3], padding[1], padding[3], kernel[1], strides[1],
                                dilations[1], ceil);
  if (oh < 1 || ow < 1)
    return c.fail("window does not fit the input"), std::nullopt;
  return TensorInfo{x.dtype, {x.shape[0], channels, oh, ow}};
}

/// GatherElements and ScatterElements: operand 1 indexes operand 0 along the
/// `axis` attribute, so it has the data's rank, an integer dtype, and fits in
/// the data on every other dimension.
bool elementIndicesFit(Checker &c) {
  int64_t axis = c.integer("axis", std::nullopt);
  const Shape &data = c.in[0].shape, &indices = c.in[1].shape;
  if (!c.axis(axis, data.size()))
    return false;
  if (c.in[1].dtype != DType::I32 && c.in[1].dtype != DType::I64)
    return c.fail("indices must be i32 or i64");
  if (indices.size() != data.size())
    return c.fail("indices must have the data's rank");
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d])
      return c.fail("indices exceed the data outside the axis");
  return true;
}

const std::unordered_map<std::string, Rule> &rules() {
  static const std::unordered_map<std::string, Rule> table = [] {
    std::unordered_map<std::string, Rule> m;
    for (const char *name : {"kiln.neg", "kiln.abs", "kiln.relu", "kiln.not", "kiln.transfer",
                             "kiln.relayout", "kiln.sign"})
      m[name] = [](Checker &c) -> std::optional<TensorInfo> {
        if (!c.arity(1, 1))
          return std::nullopt;
        return c.in[0];
      };
    for (const char *name : {"kiln.exp", "kiln.log", "kiln.sqrt", "kiln.rsqrt", "kiln.tanh",
                             "kiln.sigmoid", "kiln.gelu", "kiln.erf", "kiln.floor", "kiln.ceil", "kiln.round", "kiln.sin", "kiln.cos", "kiln.tan", "kiln.asin", "kiln.acos", "kiln.atan", "kiln.sinh", "kiln.cosh", "kiln.asinh", "kiln.acosh", "kiln.atanh"})
      m[name] = [](Checker &c) -> std::optional<TensorInfo> {
        if (!c.arity(1, 1) || !c.isFloatOperand(0))
          return std::nullopt;
        return c.in[0];
      };
    for (const char *name : {"kiln.softmax", "kiln.log_softmax"})
      m[name] = [](Checker &c) -> std::optional<TensorInfo> {
        if (!c.arity(1, 1) || !c.isFloatOperand(0) ||
            !c.axis(c.integer("axis", std::nullopt), c.in[0].shape.size()))
          return std::nullopt;
        return c.in[0];
      };
    for (const char *name : {"kiln.add", "kiln.sub", "kiln.mul", "kiln.div", "kiln.pow",
                             "kiln.max", "kiln.min", "kiln.and", "kiln.or", "kiln.eq", "kiln.ne",
                             "kiln.lt", "kiln.le", "kiln.gt", "kiln.ge", "kiln.mod"}) {
      bool compare = std::string(name).size() == 7; // kiln.eq ... kiln.ge
      m[name] = [compare](Checker &c) -> std::optional<TensorInfo> {
        if (!c.arity(2, 2) || !c.sameDType(0, 1))
          return std::nullopt;
        auto shape = broadcastChecked(c.in[0].shape, c.in[1].shape);
        if (!shape)
          return c.fail("shapes do not broadcast"), std::nullopt;
        return TensorInfo{compare ? DType::I1 : c.in[0].dtype, *shape};
      };
    }
    m["kiln.select"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(3, 3) || !c.sameDType(1, 2))
        return std::nullopt;
      if (c.in[0].dtype != DType::I1)
        return c.fail("condition must be i1"), std::nullopt;
      auto s = broadcastChecked(c.in[0].shape, c.in[1].shape);
      s = s ? broadcastChecked(*s, c.in[2].shape) : s;
      if (!s)
        return c.fail("shapes do not broadcast"), std::nullopt;
      return TensorInfo{c.in[1].dtype, *s};
    };
    m["kiln.cast"] = [](Checker &c) -> std::optional<TensorInfo> {
      const OpAttr *to = c.get("to", OpAttr::Type, true);
      if (!c.arity(1, 1) || !to)
        return std::nullopt;
      return TensorInfo{to->dtype, c.in[0].shape};
    };
    m["kiln.reshape"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1))
        return std::nullopt;
      Shape shape = c.ints("shape", std::nullopt);
      int64_t known = 1, unknown = -1;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == -1 && unknown < 0)
          unknown = d;
        else if (shape[d] < 0 || __builtin_mul_overflow(known, shape[d], &known))
          return c.fail("bad reshape target"), std::nullopt;
      }
      int64_t total = numElements(c.in[0].shape);
      if (unknown >= 0) {
        if (known == 0 || total % known)
          return c.fail("bad reshape target"), std::nullopt;
        shape[unknown] = total / known;
        known = total;
      }
      if (known != total)
        return c.fail("reshape changes the element count"), std::nullopt;
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.iota"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(0, 0))
        return std::nullopt;
      std::vector<int64_t> length = c.ints("length", std::nullopt);
      if (length.size() != 1 || length[0] < 0 || length[0] > kMaxElements)
        return c.fail("iota length must be one size in [0, 2^40]"), std::nullopt;
      return TensorInfo{DType::I64, {length[0]}};
    };
    m["kiln.transpose"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1))
        return std::nullopt;
      std::vector<int64_t> perm = c.ints("perm", std::nullopt);
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d)
        if (sorted[d] != static_cast<int64_t>(d))
          return c.fail("perm is not a permutation"), std::nullopt;
      if (perm.size() != c.in[0].shape.size())
        return c.fail("perm does not match the rank"), std::nullopt;
      Shape shape;
      for (int64_t p : perm)
        shape.push_back(c.in[0].shape[p]);
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.broadcast"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1))
        return std::nullopt;
      Shape shape = c.ints("shape", std::nullopt);
      auto b = broadcastChecked(c.in[0].shape, shape);
      if (!b || *b != shape)
        return c.fail("cannot broadcast"), std::nullopt;
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.slice"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1))
        return std::nullopt;
      auto starts = c.ints("starts", std::nullopt), ends = c.ints("ends", std::nullopt),
           steps = c.ints("steps", std::nullopt);
      const Shape &in = c.in[0].shape;
      if (starts.size() != in.size() || ends.size() != in.size() || steps.size() != in.size())
        return c.fail("slice attributes do not match the rank"), std::nullopt;
      Shape shape;
      for (size_t d = 0; d < in.size(); ++d) {
        int64_t s = starts[d], e = ends[d], st = steps[d], dim = in[d];
        bool ok = st > 0 ? (s >= 0 && s <= dim && e >= 0 && e <= dim)
                         : (st < 0 && s >= 0 && s <= dim - 1 && e >= -1 && e <= dim - 1);
        if (!ok)
          return c.fail("slice out of bounds"), std::nullopt;
        shape.push_back(sliceExtent(s, e, st));
      }
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.concat"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1 << 16))
        return std::nullopt;
      int64_t axis = c.integer("axis", std::nullopt);
      if (!c.axis(axis, c.in[0].shape.size()))
        return std::nullopt;
      Shape shape = c.in[0].shape;
      for (size_t k = 1; k < c.in.size(); ++k) {
        if (!c.sameDType(0, k) || c.in[k].shape.size() != shape.size())
          return c.fail("concat operands differ"), std::nullopt;
        for (size_t d = 0; d < shape.size(); ++d)
          if (static_cast<int64_t>(d) != axis && c.in[k].shape[d] != shape[d])
            return c.fail("concat operands differ"), std::nullopt;
        shape[axis] += c.in[k].shape[axis];
      }
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.pad"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1))
        return std::nullopt;
      auto low = c.ints("low", std::nullopt), high = c.ints("high", std::nullopt);
      Shape shape = c.in[0].shape;
      if (low.size() != shape.size() || high.size() != shape.size())
        return c.fail("pad attributes do not match the rank"), std::nullopt;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (low[d] < 0 || high[d] < 0 || low[d] > (int64_t(1) << 32) || high[d] > (int64_t(1) << 32))
          return c.fail("bad padding"), std::nullopt;
        shape[d] += low[d] + high[d];
      }
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.gather"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(2, 2))
        return std::nullopt;
      int64_t axis = c.integer("axis", std::nullopt);
      if (!c.axis(axis, c.in[0].shape.size()))
        return std::nullopt;
      if (c.in[1].dtype != DType::I32 && c.in[1].dtype != DType::I64)
        return c.fail("indices must be i32 or i64"), std::nullopt;
      const Shape &data = c.in[0].shape;
      Shape shape(data.begin(), data.begin() + axis);
      shape.insert(shape.end(), c.in[1].shape.begin(), c.in[1].shape.end());
      shape.insert(shape.end(), data.begin() + axis + 1, data.end());
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.gather_elements"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(2, 2))
        return std::nullopt;
      if (!elementIndicesFit(c))
        return std::nullopt;
      return TensorInfo{c.in[0].dtype, c.in[1].shape};
    };
    m["kiln.scatter_elements"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(3, 3))
        return std::nullopt;
      if (!elementIndicesFit(c))
        return std::nullopt;
      if (c.in[1].shape != c.in[2].shape || !c.sameDType(0, 2))
        return c.fail("updates must match the indices and the data"), std::nullopt;
      const OpAttr *reduction = c.get("reduction", OpAttr::String, false);
      if (reduction && reduction->s != "none" && reduction->s != "add" && reduction->s != "mul")
        return c.fail("unknown reduction"), std::nullopt;
      return c.in[0];
    };
    m["kiln.non_max_suppression"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(5, 5))
        return std::nullopt;
      const Shape &boxes = c.in[0].shape, &scores = c.in[1].shape;
      if (boxes.size() != 3 || scores.size() != 3 || boxes[2] != 4 || scores[0] != boxes[0] ||
          scores[2] != boxes[1] || c.in[0].dtype != DType::F32 || c.in[1].dtype != DType::F32)
        return c.fail("takes f32 boxes [B, N, 4] and scores [B, C, N]"), std::nullopt;
      if (c.in[2].dtype != DType::I64 || c.in[3].dtype != DType::F32 ||
          c.in[4].dtype != DType::F32 || !c.in[2].shape.empty() || !c.in[3].shape.empty() ||
          !c.in[4].shape.empty())
        return c.fail("takes an i64 max_output and f32 thresholds, scalars"), std::nullopt;
      return TensorInfo{DType::I64, {scores[0] * scores[1] * scores[2], 3}};
    };
    m["kiln.take_prefix"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(2, 2))
        return std::nullopt;
      int64_t axis = c.integer("axis", std::nullopt);
      Shape length = c.ints("length", std::nullopt);
      if (!c.axis(axis, c.in[0].shape.size()))
        return std::nullopt;
      if (c.in[1].dtype != DType::I64 || !c.in[1].shape.empty())
        return c.fail("the count must be an i64 scalar"), std::nullopt;
      if (length.size() != 1 || length[0] < 0 || length[0] > c.in[0].shape[axis])
        return c.fail("the length must lie within the axis"), std::nullopt;
      Shape shape = c.in[0].shape;
      shape[axis] = length[0];
      return TensorInfo{c.in[0].dtype, shape};
    };
    m["kiln.argsort"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1) || !c.axis(c.integer("axis", std::nullopt), c.in[0].shape.size()))
        return std::nullopt;
      return TensorInfo{DType::I64, c.in[0].shape};
    };
    for (const char *name : {"kiln.reduce_sum", "kiln.reduce_mean", "kiln.reduce_max",
                             "kiln.reduce_min", "kiln.reduce_prod"})
      m[name] = [](Checker &c) -> std::optional<TensorInfo> {
        if (!c.arity(1, 1))
          return std::nullopt;
        return reduced(c, c.ints("axes", std::nullopt), c.in[0].dtype);
      };
    m["kiln.argmax"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1))
        return std::nullopt;
      return reduced(c, {c.integer("axis", std::nullopt)}, DType::I64);
    };
    m["kiln.batch_norm"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(5, 5) || !c.isFloatOperand(0))
        return std::nullopt;
      if (c.in[0].shape.size() < 2)
        return c.fail("batch_norm input must have rank >= 2"), std::nullopt;
      for (size_t k = 1; k < 5; ++k)
        if (!c.sameDType(0, k) || c.in[k].shape != Shape{c.in[0].shape[1]})
          return c.fail("batch_norm parameters do not match the channels"), std::nullopt;
      return c.in[0];
    };
    m["kiln.layer_norm"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(2, 3) || !c.isFloatOperand(0))
        return std::nullopt;
      int64_t axis = c.integer("axis", std::nullopt);
      if (!c.axis(axis, c.in[0].shape.size()))
        return std::nullopt;
      Shape normalized(c.in[0].shape.begin() + axis, c.in[0].shape.end());
      for (size_t k = 1; k < c.in.size(); ++k)
        if (!c.sameDType(0, k) || c.in[k].shape != normalized)
          return c.fail("layer_norm parameters do not match"), std::nullopt;
      return c.in[0];
    };
    m["kiln.matmul"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(2, 2) || !c.sameDType(0, 1))
        return std::nullopt;
      const Shape &a = c.in[0].shape, &b = c.in[1].shape;
      if (a.size() < 2 || b.size() < 2)
        return c.fail("matmul operands must have rank >= 2"), std::nullopt;
      bool ta = c.integer("transpose_a", 0) != 0, tb = c.integer("transpose_b", 0) != 0;
      int64_t m = a[a.size() - (ta ? 1 : 2)], ka = a[a.size() - (ta ? 2 : 1)];
      int64_t kb = b[b.size() - (tb ? 1 : 2)], n = b[b.size() - (tb ? 2 : 1)];
      auto batch = broadcastChecked(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
      if (ka != kb || !batch)
        return c.fail("matmul shapes do not match"), std::nullopt;
      batch->push_back(m);
      batch->push_back(n);
      return TensorInfo{c.in[0].dtype, *batch};
    };
    m["kiln.conv2d"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(2, 3))
        return std::nullopt;
      return window(c, /*conv=*/true);
    };
    for (const char *name : {"kiln.max_pool2d", "kiln.avg_pool2d"})
      m[name] = [](Checker &c) -> std::optional<TensorInfo> {
        if (!c.arity(1, 1))
          return std::nullopt;
        return window(c, /*conv=*/false);
      };
    m["kiln.global_avg_pool"] = [](Checker &c) -> std::optional<TensorInfo> {
      if (!c.arity(1, 1) || !c.isFloatOperand(0))
        return std::nullopt;
      if (c.in[0].shape.size() < 3)
        return c.fail("global_avg_pool input must have rank >= 3"), std::nullopt;
      Shape shape = c.in[0].shape;
      std::fill(shape.begin() + 2, shape.end(), 1);
      return TensorInfo{c.in[0].dtype, shape};
    };
    return m;
  }();
  return table;
}

} // namespace

std::string checkOp(const std::string &name, const OpAttrs &attrs,
                    const std::vector<TensorInfo> &operands,
                    const std::vector<TensorInfo> &results) {
  auto it = rules().find(name);
  if (it == rules().end())
    return "unknown op '" + name + "'";
  Checker checker{attrs, operands, {}};
  std::optional<TensorInfo> expected = it->second(checker);
  if (!checker.error.empty())
    return checker.error;
  if (!expected)
    return "invalid op";
  if (results.size() != 1)
    return "expected exactly one result";
  if (results[0].dtype != expected->dtype || results[0].shape != expected->shape)
    return "declared result " + std::string(dtypeName(results[0].dtype)) +
           shapeToString(results[0].shape) + " differs from the computed " +
           dtypeName(expected->dtype) + shapeToString(expected->shape);
  return "";
}

} // namespace ref
} // namespace kiln
