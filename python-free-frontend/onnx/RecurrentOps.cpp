//===- RecurrentOps.cpp - ONNX RNN, GRU and LSTM, unrolled ----------------===//
//
// Sequence lengths are static, so a recurrent layer unrolls into its
// per-step equations: the input projection of all steps is one matmul, and
// each step adds its recurrent matmul and gates. Outputs are the stacked
// hidden states (Y), the last hidden state (Y_h) and, for LSTM, the last
// cell state (Y_c).
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

enum class Cell { RNN, GRU, LSTM };

/// The most time steps (times directions) a recurrence is unrolled into.
constexpr int64_t kMaxUnrolledSteps = 16384;

/// v[..., from:to] along the last axis, or along `axis`.
Value sliceAxis(NodeContext &c, Value v, int64_t axis, int64_t from, int64_t to) {
  if (!v)
    return v;
  ArrayRef<int64_t> s = c.type(v).getShape();
  SmallVector<int64_t> starts(s.size(), 0), ends(s), steps(s.size(), 1);
  starts[axis] = from;
  ends[axis] = to;
  return c.build<SliceOp>(v, {c.named("starts", c.ints(starts)), c.named("ends", c.ints(ends)),
                              c.named("steps", c.ints(steps))});
}

/// Takes index `k` of axis 0 and drops that axis.
Value take(NodeContext &c, Value v, int64_t k) {
  Value s = sliceAxis(c, v, 0, k, k + 1);
  return s ? c.reshape(s, c.type(s).getShape().drop_front()) : s;
}

Value activation(NodeContext &c, const std::string &name, Value x) {
  if (name == "Sigmoid")
    return c.build<SigmoidOp>(x);
  if (name == "Tanh")
    return c.build<TanhOp>(x);
  if (name == "Relu")
    return c.build<ReluOp>(x);
  return Value();
}

LogicalResult recurrent(NodeContext &c, Cell cell) {
  Value x = c.input(0), w = c.input(1), r = c.input(2), b = c.input(3);
  int64_t hidden = c.attrInt("hidden_size", 0);
  std::string direction = c.attrString("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  // Batch-major (layout = 1): work time-major and transpose back at the end.
  bool batchMajor = c.attrInt("layout", 0) != 0;
  if (c.rank(x) != 3)
    return emitError(c.loc) << "takes an input of rank 3 ([sequence, batch, features]), got rank "
                            << c.rank(x);
  if (batchMajor)
    x = c.build<TransposeOp>(x, {c.named("perm", c.ints({1, 0, 2}))});
  if (!x)
    return failure(); // the transpose said why
  // Weights [D, G*H, I] and [D, G*H, H], bias [D, 2*G*H], states [D, B, H]
  // (batch-major: [B, D, H]), peepholes [D, 3*H]: ranks first, as every
  // slice below indexes them.
  const std::pair<size_t, int64_t> ranks[] = {{1, 3}, {2, 3}, {3, 2}, {5, 3}, {6, 3}, {7, 2}};
  for (auto [k, rank] : ranks) {
    Value v = c.numInputs() > k ? c.input(k) : Value();
    if (v && c.rank(v) != rank)
      return emitError(c.loc) << "input #" << k << " must have rank " << rank << ", got rank "
                              << c.rank(v);
  }
  auto stateInput = [&](size_t k) {
    Value v = c.numInputs() > k ? c.input(k) : Value();
    return v && batchMajor ? c.build<TransposeOp>(v, {c.named("perm", c.ints({1, 0, 2}))}) : v;
  };
  if (c.attr("clip") || c.attrInt("input_forget", 0) != 0)
    return c.unsupportedBecause("clip or input_forget");
  if (c.attr("activation_alpha") || c.attr("activation_beta"))
    return c.unsupportedBecause("parameterised activations");
  // sequence_lens: all full length only (read at run time: checked so).
  int64_t steps = c.type(x).getDimSize(0);
  if (c.numInputs() > 4 && c.input(4)) {
    if (c.readsAtRunTime(4)) {
      std::string name = c.node.output_size() && !c.node.output(0).empty() ? c.node.output(0)
                                                                           : c.node.name();
      if (failed(checkAllWithin(c, name + ": sequence lengths all " + std::to_string(steps), 4,
                                steps, steps)))
        return failure();
    } else {
      FailureOr<SmallVector<int64_t>> given = c.constantInts(4);
      if (failed(given))
        return failure();
      for (int64_t len : *given)
        if (len != steps)
          return c.unsupportedBecause("sequences of different lengths");
    }
  }
  Value peepholes = cell == Cell::LSTM && c.numInputs() > 7 ? c.input(7) : Value();
  std::vector<std::string> acts;
  if (auto a = c.attr("activations"))
    for (const std::string &s : a->strings())
      acts.push_back(s);
  std::vector<std::string> defaults = cell == Cell::RNN   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (acts.empty())
    for (int64_t d = 0; d < dirs; ++d)
      acts.insert(acts.end(), defaults.begin(), defaults.end());
  if (acts.size() != defaults.size() * dirs)
    return c.unsupportedBecause("activation list");
  ArrayRef<int64_t> xs = c.type(x).getShape();
  if (xs.size() != 3 || hidden < 1)
    return c.unsupportedBecause("input rank or hidden_size");
  int64_t batch = xs[1];
  // The recurrence is unrolled: a few ops per step and direction, so the
  // sequence length bounds the graph (and hidden_size the gate arithmetic).
  if (steps * dirs > kMaxUnrolledSteps || hidden > (int64_t(1) << 24))
    return emitError(c.loc) << "a sequence of " << steps << " steps in " << dirs
                            << " direction(s) with hidden_size " << hidden
                            << "; kiln unrolls at most " << kMaxUnrolledSteps
                            << " steps, with hidden_size up to 2^24";
  bool linearBeforeReset = c.attrInt("linear_before_reset", 0) != 0;

  SmallVector<Value> ys, lastH, lastC;
  for (int64_t d = 0; d < dirs; ++d) {
    auto act = [&](int k, Value v) { return activation(c, acts[d * defaults.size() + k], v); };
    for (size_t k = d * defaults.size(); k < (d + 1) * defaults.size(); ++k)
      if (acts[k] != "Sigmoid" && acts[k] != "Tanh" && acts[k] != "Relu")
        return c.unsupportedBecause("activation " + acts[k]);
    Value wd = take(c, w, d), rd = take(c, r, d);
    // All steps' input projections at once: [S, B, I] x [G*H, I]^T.
    Value xw = c.build<MatMulOp>({x, wd}, {c.named("transpose_b", c.builder.getBoolAttr(true))});
    Value wb, rb;
    if (b) {
      Value bd = take(c, b, d);
      wb = sliceAxis(c, bd, 0, 0, gates * hidden);
      rb = sliceAxis(c, bd, 0, gates * hidden, 2 * gates * hidden);
      xw = c.build<AddOp>({xw, wb});
    }
    Value h = stateInput(5) ? take(c, stateInput(5), d) : Value();
    Value cs = cell == Cell::LSTM && stateInput(6) ? take(c, stateInput(6), d) : Value();
    Value pd = peepholes ? take(c, peepholes, d) : Value(); // i, o, f
    auto peep = [&](Value pre, int k, Value state) {
      return pd ? c.build<AddOp>({pre, c.build<MulOp>({sliceAxis(c, pd, 0, k * hidden, (k + 1) * hidden), state})})
                : pre;
    };
    auto zeros = [&]() {
      return c.build<MulOp>({take(c, xw, 0), c.scalarLike(xw, 0)});
    };
    if (!h)
      h = sliceAxis(c, zeros(), 1, 0, hidden);
    if (cell == Cell::LSTM && !cs)
      cs = sliceAxis(c, zeros(), 1, 0, hidden);
    SmallVector<Value> outputs(steps);
    for (int64_t i = 0; i < steps && h; ++i) {
      int64_t t = (direction == "reverse" || d == 1) ? steps - 1 - i : i;
      Value xt = take(c, xw, t); // [B, G*H]
      auto gate = [&](Value v, int k) { return sliceAxis(c, v, 1, k * hidden, (k + 1) * hidden); };
      if (cell == Cell::GRU) {
        Value rGates = sliceAxis(c, rd, 0, 0, 2 * hidden);
        Value hr = c.build<MatMulOp>({h, rGates}, {c.named("transpose_b", c.builder.getBoolAttr(true))});
        if (rb)
          hr = c.build<AddOp>({hr, sliceAxis(c, rb, 0, 0, 2 * hidden)});
        Value z = act(0, c.build<AddOp>({gate(xt, 0), gate(hr, 0)}));
        Value rr = act(0, c.build<AddOp>({gate(xt, 1), gate(hr, 1)}));
        Value rh = sliceAxis(c, rd, 0, 2 * hidden, 3 * hidden);
        Value rbh = rb ? sliceAxis(c, rb, 0, 2 * hidden, 3 * hidden) : Value();
        Value recurrentTerm;
        if (linearBeforeReset) {
          Value lin = c.build<MatMulOp>({h, rh}, {c.named("transpose_b", c.builder.getBoolAttr(true))});
          if (rbh)
            lin = c.build<AddOp>({lin, rbh});
          recurrentTerm = c.build<MulOp>({rr, lin});
        } else {
          recurrentTerm = c.build<MatMulOp>({c.build<MulOp>({rr, h}), rh},
                                            {c.named("transpose_b", c.builder.getBoolAttr(true))});
          if (rbh)
            recurrentTerm = c.build<AddOp>({recurrentTerm, rbh});
        }
        Value candidate = act(1, c.build<AddOp>({gate(xt, 2), recurrentTerm}));
        Value keep = c.build<SubOp>({c.scalarLike(z, 1), z});
        h = c.build<AddOp>({c.build<MulOp>({keep, candidate}), c.build<MulOp>({z, h})});
      } else {
        Value hr = c.build<MatMulOp>({h, rd}, {c.named("transpose_b", c.builder.getBoolAttr(true))});
        if (rb)
          hr = c.build<AddOp>({hr, rb});
        Value pre = c.build<AddOp>({xt, hr});
        if (cell == Cell::RNN) {
          h = act(0, pre);
        } else { // gates i, o, f, c
          Value in = act(0, peep(gate(pre, 0), 0, cs)), forget = act(0, peep(gate(pre, 2), 2, cs));
          Value candidate = act(1, gate(pre, 3));
          cs = c.build<AddOp>({c.build<MulOp>({forget, cs}), c.build<MulOp>({in, candidate})});
          Value out = act(0, peep(gate(pre, 1), 1, cs));
          h = c.build<MulOp>({out, act(2, cs)});
        }
      }
      outputs[t] = h ? c.reshape(h, {1, 1, batch, hidden}) : h;
    }
    if (!h)
      return failure();
    ys.push_back(c.build<ConcatOp>(outputs, {c.named("axis", c.builder.getI64IntegerAttr(0))}));
    lastH.push_back(c.reshape(h, {1, batch, hidden}));
    if (cs)
      lastC.push_back(c.reshape(cs, {1, batch, hidden}));
  }
  auto join = [&](ArrayRef<Value> parts, int64_t axis) {
    return parts.size() == 1 ? parts[0]
                             : c.build<ConcatOp>(parts, {c.named("axis", c.builder.getI64IntegerAttr(axis))});
  };
  auto batchFirst = [&](Value v, ArrayRef<int64_t> perm) {
    return v && batchMajor ? c.build<TransposeOp>(v, {c.named("perm", c.ints(perm))}) : v;
  };
  c.results.push_back(batchFirst(join(ys, 1), {2, 0, 1, 3}));
  c.results.push_back(batchFirst(join(lastH, 0), {1, 0, 2}));
  if (cell == Cell::LSTM)
    c.results.push_back(batchFirst(join(lastC, 0), {1, 0, 2}));
  for (Value v : c.results)
    if (!v)
      return failure();
  return success();
}

} // namespace

void registerRecurrentConverters(ConverterMap &m) {
  m["RNN"] = [](NodeContext &c) { return recurrent(c, Cell::RNN); };
  m["GRU"] = [](NodeContext &c) { return recurrent(c, Cell::GRU); };
  m["LSTM"] = [](NodeContext &c) { return recurrent(c, Cell::LSTM); };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
