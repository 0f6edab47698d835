//===- Rematerialize.cpp - saved or recomputed forward values -------------===//
//
// kiln-remat decides, for a function kiln-grad differentiated, which forward
// values the backward pass reads saved and which it recomputes. Saving
// keeps a value alive from the forward pass to its last backward reader;
// recomputing clones its producer (and the producers it needs in turn)
// just before a backward reader, from saved values, inputs and
// weights, which are alive anyway and cost nothing.
//
// As AOTAutograd's min-cut partitioner: each forward op is an edge in -> out
// of capacity its result's bytes, each use an infinite edge, every forward
// value a backward op reads an infinite edge to the sink, and an op whose
// recomputation is banned an infinite edge from the source. The minimum
// cut is the cheapest set of values to save. Banning ops one at a time, the
// ones worth the most FLOPs per byte first (matmuls, convolutions,
// reductions before elementwise ops), gives plans from "save the fewest
// bytes" to "save everything, recompute nothing". Each plan recomputes
// either once, shared by every backward reader, or once per reader
// (holding nothing between readers), whichever peak of live bytes,
// estimated in program order, is lower. The plans kept form a chain along
// which the saved bytes and the estimated peak both fall, and the budget
// picks the first whose saved bytes are within it: a smaller budget never
// raises either.
//
//===----------------------------------------------------------------------===//

#include "../Fusion/FusionUtils.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNREMATERIALIZE
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;
/// The most plans compared (each a minimum cut and a peak estimate).
constexpr size_t kMaxCuts = 64;
/// Recomputing per reader, at most this many times as many clones as
/// forward ops, in all (one op may be cloned more often than that).
constexpr int64_t kMaxClonesPerForwardOp = 4;
/// A plan must lower the estimated peak by more than 1/kPeakMargin of it:
/// the arena after fusion and placement differs from the estimate
/// (measured: 4% to 45% above it), so a step smaller than that could rise.
constexpr int64_t kPeakMargin = 20;

int64_t resultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value result : op->getResults())
    bytes += tensorBytes(result.getType());
  return bytes;
}

/// What saving `op`'s results costs: their bytes, but for those the
/// function returns, which live to the end anyway.
int64_t savingCost(Operation *op) {
  int64_t bytes = 0;
  for (Value result : op->getResults())
    if (llvm::none_of(result.getUsers(),
                      [](Operation *user) { return user->hasTrait<OpTrait::IsTerminator>(); }))
      bytes += tensorBytes(result.getType());
  return bytes;
}

int64_t numElements(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getNumElements(); }

/// FLOPs to compute `op` once: what recomputing it costs.
double flopsOf(Operation *op) {
  double out = 0;
  for (Value result : op->getResults())
    out += double(numElements(result));
  if (auto matmul = llvm::dyn_cast<MatMulOp>(op)) {
    auto lhs = llvm::cast<RankedTensorType>(matmul.getLhs().getType());
    int64_t k = lhs.getDimSize(lhs.getRank() - (matmul.getTransposeA() ? 2 : 1));
    return 2.0 * out * double(k);
  }
  if (auto conv = llvm::dyn_cast<Conv2dOp>(op)) {
    auto filter = llvm::cast<RankedTensorType>(conv.getFilter().getType());
    return 2.0 * out * double(filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3));
  }
  // Reductions, normalisations and pooling read every input element.
  double in = 0;
  for (Value operand : op->getOperands())
    if (auto type = llvm::dyn_cast<RankedTensorType>(operand.getType()))
      in = std::max(in, double(type.getNumElements()));
  if (llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ArgMaxOp,
                MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp>(op))
    return in;
  if (llvm::isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp>(op))
    return 5.0 * in;
  // Data movement computes nothing; elementwise ops one FLOP per element.
  if (llvm::isa<ReshapeOp, TransposeOp, BroadcastOp, SliceOp, ConcatOp, PadOp, GatherOp,
                GatherElementsOp, CastOp>(op))
    return 0;
  return out;
}

/// Maximum flow by Dinic's algorithm; afterwards `sourceSide` gives the
/// minimum cut.
class MinCut {
public:
  explicit MinCut(int nodes) : adjacency(nodes), level(nodes), next(nodes) {}

  void addEdge(int from, int to, int64_t capacity) {
    adjacency[from].push_back(edges.size());
    edges.push_back({to, capacity});
    adjacency[to].push_back(edges.size());
    edges.push_back({from, 0});
  }

  int64_t run(int source, int sink) {
    int64_t flow = 0;
    while (buildLevels(source, sink)) {
      std::fill(next.begin(), next.end(), 0);
      while (int64_t pushed = push(source, sink, kInfinite))
        flow += pushed;
    }
    markReachingSink(sink);
    return flow;
  }

  /// After run(): whether `node` is on the source side of the minimum cut
  /// closest to the sink (of equal cuts, the one that leaves the least on
  /// the sink side: the least recomputed).
  bool sourceSide(int node) const { return !reachesSink[node]; }

private:
  struct Edge {
    int to;
    int64_t capacity;
  };

  /// The nodes with a residual path to the sink.
  void markReachingSink(int sink) {
    reachesSink.assign(adjacency.size(), false);
    reachesSink[sink] = true;
    std::queue<int> queue;
    queue.push(sink);
    while (!queue.empty()) {
      int node = queue.front();
      queue.pop();
      // Edge e leaves `node`; its reverse e ^ 1 enters it from e's head.
      for (size_t e : adjacency[node])
        if (edges[e ^ 1].capacity > 0 && !reachesSink[edges[e].to]) {
          reachesSink[edges[e].to] = true;
          queue.push(edges[e].to);
        }
    }
  }

  bool buildLevels(int source, int sink) {
    std::fill(level.begin(), level.end(), -1);
    level[source] = 0;
    std::queue<int> queue;
    queue.push(source);
    while (!queue.empty()) {
      int node = queue.front();
      queue.pop();
      for (size_t e : adjacency[node])
        if (edges[e].capacity > 0 && level[edges[e].to] < 0) {
          level[edges[e].to] = level[node] + 1;
          queue.push(edges[e].to);
        }
    }
    return level[sink] >= 0;
  }

  int64_t push(int node, int sink, int64_t limit) {
    if (node == sink)
      return limit;
    for (size_t &i = next[node]; i < adjacency[node].size(); ++i) {
      Edge &edge = edges[adjacency[node][i]];
      if (edge.capacity <= 0 || level[edge.to] != level[node] + 1)
        continue;
      if (int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity))) {
        edge.capacity -= pushed;
        edges[adjacency[node][i] ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<Edge> edges;
  std::vector<std::vector<size_t>> adjacency;
  std::vector<int> level;
  std::vector<size_t> next;
  std::vector<bool> reachesSink;
};

/// One way to split the work: which forward ops' results are saved, which
/// are recomputed, and what that costs.
struct Plan {
  llvm::DenseSet<Operation *> saved, recomputed;
  int64_t savedBytes = 0;
  /// Each backward reader recomputes what it needs itself, instead of one
  /// clone per recomputed op shared by all its readers.
  bool perReader = false;
  int64_t clones = 0; ///< ops cloned
  double recomputedFlops = 0;
  int64_t peakBytes = 0; ///< live bytes at the worst point, in program order
};

/// The function split into forward and backward ops.
struct JointGraph {
  SmallVector<Operation *> forward;  ///< in program order
  SmallVector<Operation *> backward; ///< in program order
  llvm::DenseMap<Operation *, int> forwardIndex;
  llvm::DenseMap<Operation *, int64_t> position; ///< every op's place in the body
  /// Forward ops a backward op reads.
  llvm::DenseSet<Operation *> needed;
  /// Forward ops the needed ones depend on (themselves included): those
  /// that could be recomputed.
  SmallVector<Operation *> candidates;

  static bool isFree(Value v) {
    Operation *def = v.getDefiningOp();
    return !def || llvm::isa<WeightOp, ConstantOp>(def);
  }
};

/// Splits the body at the loss: forward ops are those it depends on.
JointGraph splitAtLoss(Block &body, Value loss) {
  JointGraph graph;
  llvm::DenseSet<Operation *> forward;
  SmallVector<Value> work = {loss};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (JointGraph::isFree(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (forward.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  int64_t position = 0;
  for (Operation &op : body.without_terminator()) {
    graph.position[&op] = position++;
    if (llvm::isa<WeightOp, ConstantOp>(op))
      continue;
    if (forward.contains(&op)) {
      graph.forwardIndex[&op] = graph.forward.size();
      graph.forward.push_back(&op);
    } else {
      graph.backward.push_back(&op);
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp(); def && forward.contains(def))
          graph.needed.insert(def);
    }
  }
  llvm::DenseSet<Operation *> reaching(graph.needed.begin(), graph.needed.end());
  for (Operation *op : llvm::reverse(graph.forward)) {
    if (!reaching.contains(op))
      continue;
    graph.candidates.push_back(op);
    for (Value operand : op->getOperands())
      if (!JointGraph::isFree(operand))
        reaching.insert(operand.getDefiningOp());
  }
  std::reverse(graph.candidates.begin(), graph.candidates.end());
  return graph;
}

/// The cheapest values to save when `banned` may not be recomputed.
Plan cutPlan(const JointGraph &graph, const llvm::DenseSet<Operation *> &banned) {
  int n = graph.forward.size();
  const int source = 2 * n, sink = 2 * n + 1;
  auto in = [](int i) { return 2 * i; };
  auto out = [](int i) { return 2 * i + 1; };
  MinCut cut(2 * n + 2);
  for (Operation *op : graph.candidates) {
    int i = graph.forwardIndex.lookup(op);
    cut.addEdge(in(i), out(i), savingCost(op));
    if (banned.contains(op))
      cut.addEdge(source, in(i), kInfinite);
    if (graph.needed.contains(op))
      cut.addEdge(out(i), sink, kInfinite);
    for (Value operand : op->getOperands())
      if (!JointGraph::isFree(operand))
        cut.addEdge(out(graph.forwardIndex.lookup(operand.getDefiningOp())), in(i), kInfinite);
  }
  cut.run(source, sink);

  Plan plan;
  for (Operation *op : graph.candidates) {
    int i = graph.forwardIndex.lookup(op);
    if (cut.sourceSide(in(i)) && !cut.sourceSide(out(i))) {
      plan.saved.insert(op);
      plan.savedBytes += savingCost(op);
    }
  }
  // Recomputed: what the backward reads unsaved, and what that needs.
  SmallVector<Operation *> work;
  for (Operation *op : graph.needed)
    if (!plan.saved.contains(op))
      work.push_back(op);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!plan.recomputed.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (!JointGraph::isFree(operand) && !plan.saved.contains(operand.getDefiningOp()))
        work.push_back(operand.getDefiningOp());
  }
  return plan;
}

/// Whether loop fusion will compute `op` inside the kernels of `readers`
/// rather than write its result: a loop op read only by loop ops, once or
/// cheap enough to compute again per reader (FusionUtils' rules), all in
/// the same pass as itself.
bool fusesIntoReaders(Operation *op, ArrayRef<Operation *> readers, bool crossesPasses) {
  llvm::SmallPtrSet<Operation *, 4> distinct(readers.begin(), readers.end());
  return fusion::isLoopFusible(op) && !readers.empty() && !crossesPasses &&
         llvm::all_of(readers, fusion::isLoopFusible) &&
         (distinct.size() == 1 || fusion::isCheapToDuplicate(op));
}

/// Where recomputation happens: each clone (of `op`, made at `time`, last
/// read at `last`, by `readers`), and until when clones read each value
/// that is not recomputed. An op at position p in the body runs at time
/// p * kTicks; clones run in the ticks just before the op they serve, each
/// before its readers.
struct CloneSite {
  Operation *op;
  int64_t time, last;
  SmallVector<Operation *> readers;
};
struct Schedule {
  SmallVector<CloneSite> clones;
  llvm::DenseMap<Operation *, int64_t> readByClonesUntil;
  double flops = 0;
};

constexpr int64_t kTicks = int64_t(1) << 20;

int64_t timeOf(const JointGraph &graph, Operation *op) {
  return graph.position.lookup(op) * kTicks;
}

bool isBackwardOp(const JointGraph &graph, Operation *op) {
  return graph.position.count(op) && !graph.forwardIndex.count(op);
}

/// One clone per recomputed op, just before the first backward op that
/// reads it (or a clone of its readers), shared by all its readers.
Schedule scheduleShared(const JointGraph &graph, const Plan &plan) {
  const int64_t end = (int64_t(graph.position.size()) + 1) * kTicks;
  Schedule schedule;
  llvm::DenseMap<Operation *, int64_t> cloneTime;
  for (Operation *op : llvm::reverse(graph.forward)) {
    if (!plan.recomputed.contains(op))
      continue;
    CloneSite site{op, end, 0, {}};
    for (Operation *user : op->getUsers()) {
      int64_t t;
      if (plan.recomputed.contains(user))
        t = cloneTime.lookup(user);
      else if (isBackwardOp(graph, user))
        t = timeOf(graph, user);
      else
        continue; // a forward reader reads the original
      site.readers.push_back(user);
      site.time = std::min(site.time, t - 1);
      site.last = std::max(site.last, t);
    }
    cloneTime[op] = site.time;
    schedule.flops += flopsOf(op);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && !JointGraph::isFree(operand) && !plan.recomputed.contains(def))
        schedule.readByClonesUntil[def] =
            std::max(schedule.readByClonesUntil.lookup(def), site.time);
    schedule.clones.push_back(std::move(site));
  }
  return schedule;
}

/// The recomputed ops `reader` needs (its recomputed operands, theirs, and
/// so on down to saved values), in program order.
SmallVector<Operation *> chainFor(Operation *reader, const JointGraph &graph, const Plan &plan) {
  llvm::DenseSet<Operation *> seen;
  SmallVector<Operation *> work, chain;
  for (Value operand : reader->getOperands())
    if (Operation *def = operand.getDefiningOp(); def && plan.recomputed.contains(def))
      work.push_back(def);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    chain.push_back(op);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && plan.recomputed.contains(def))
        work.push_back(def);
  }
  llvm::sort(chain, [&](Operation *a, Operation *b) {
    return graph.position.lookup(a) < graph.position.lookup(b);
  });
  return chain;
}

/// Each backward op recomputes what it needs just before itself, its
/// clones read by it alone: recomputing more, holding nothing between
/// readers. Fails past `maxClones` clones.
FailureOr<Schedule> schedulePerReader(const JointGraph &graph, const Plan &plan,
                                      int64_t maxClones) {
  Schedule schedule;
  for (Operation *reader : graph.backward) {
    SmallVector<Operation *> chain = chainFor(reader, graph, plan);
    if (chain.empty())
      continue;
    if (int64_t(schedule.clones.size() + chain.size()) > maxClones ||
        int64_t(chain.size()) >= kTicks)
      return failure();
    // The chain's clones in its order, in the ticks before the reader.
    int64_t at = timeOf(graph, reader);
    llvm::DenseMap<Operation *, int64_t> tick;
    for (auto [k, op] : llvm::enumerate(chain))
      tick[op] = at - int64_t(chain.size() - k);
    for (Operation *op : chain) {
      CloneSite site{op, tick[op], tick[op], {}};
      for (Operation *user : op->getUsers())
        if (tick.count(user)) {
          site.readers.push_back(user);
          site.last = std::max(site.last, tick[user]);
        }
      if (llvm::any_of(reader->getOperands(),
                       [&](Value v) { return v.getDefiningOp() == op; })) {
        site.readers.push_back(reader);
        site.last = at;
      }
      schedule.flops += flopsOf(op);
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && !JointGraph::isFree(operand) && !plan.recomputed.contains(def))
          schedule.readByClonesUntil[def] =
              std::max(schedule.readByClonesUntil.lookup(def), tick[op]);
      schedule.clones.push_back(std::move(site));
    }
  }
  return schedule;
}

/// The most bytes alive at once when the function runs in program order
/// under `plan`, its clones where `schedule` puts them. Values loop fusion
/// keeps in registers count nothing.
int64_t estimatePeak(Block &body, const JointGraph &graph, const Plan &plan,
                     const Schedule &schedule) {
  const int64_t end = (int64_t(graph.position.size()) + 1) * kTicks;
  std::map<int64_t, int64_t> delta; // time -> change of live bytes
  auto live = [&](Operation *op, int64_t from, int64_t to, ArrayRef<Operation *> readers,
                  bool crossesPasses) {
    if (fusesIntoReaders(op, readers, crossesPasses))
      return;
    delta[from] += resultBytes(op);
    delta[std::max(from, to) + 1] -= resultBytes(op);
  };
  for (const CloneSite &site : schedule.clones)
    live(site.op, site.time, site.last, site.readers, /*crossesPasses=*/false);
  // The function's own ops: a recomputed op's backward readers read a
  // clone; clones read the saved values.
  for (Operation &op : body.without_terminator()) {
    if (llvm::isa<WeightOp, ConstantOp>(op))
      continue;
    bool recomputed = plan.recomputed.contains(&op);
    bool forward = graph.forwardIndex.count(&op), crossesPasses = false;
    int64_t last = timeOf(graph, &op);
    SmallVector<Operation *> readers;
    for (Operation *user : op.getUsers()) {
      if (!graph.position.count(user)) {
        last = end; // returned
        readers.push_back(user);
        continue;
      }
      if (recomputed && isBackwardOp(graph, user))
        continue;
      // (A saved value: read by the backward pass, or by a clone there.)
      crossesPasses |= forward && isBackwardOp(graph, user);
      readers.push_back(user);
      last = std::max(last, timeOf(graph, user));
    }
    if (auto it = schedule.readByClonesUntil.find(&op); it != schedule.readByClonesUntil.end()) {
      crossesPasses |= forward;
      last = std::max(last, it->second);
    }
    live(&op, timeOf(graph, &op), last, readers, crossesPasses);
  }

  int64_t current = 0, peak = 0;
  for (auto [time, change] : delta) {
    current += change;
    peak = std::max(peak, current);
  }
  return peak;
}

/// Clones the recomputed ops before their backward readers, where
/// scheduleShared or schedulePerReader put them, and points those readers
/// at the clones.
void applyPlan(const JointGraph &graph, const Plan &plan) {
  IRMapping shared;
  for (Operation *reader : graph.backward) {
    OpBuilder builder(reader);
    if (plan.perReader) {
      // The chain in program order, as schedulePerReader timed it.
      IRMapping own;
      for (Operation *op : chainFor(reader, graph, plan))
        builder.clone(*op, own);
      for (OpOperand &use : reader->getOpOperands())
        if (Value clone = own.lookupOrNull(use.get()))
          use.set(clone);
      continue;
    }
    std::function<void(Operation *)> recompute = [&](Operation *op) {
      if (shared.contains(op))
        return;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && plan.recomputed.contains(def))
          recompute(def);
      shared.map(op, builder.clone(*op, shared));
    };
    for (OpOperand &use : reader->getOpOperands())
      if (Operation *def = use.get().getDefiningOp(); def && plan.recomputed.contains(def)) {
        recompute(def);
        use.set(shared.lookup(use.get()));
      }
  }
}

/// The layer a value belongs to, as the user's model names it: an ONNX
/// node name up to its last '/' (PyTorch's and tf2onnx's scopes), else the
/// op's location.
std::string layerOf(Operation *op) {
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc())) {
    StringRef full = name.getName().getValue();
    size_t slash = full.rfind('/');
    return (slash == StringRef::npos || slash == 0 ? full : full.take_front(slash)).str();
  }
  if (auto file = llvm::dyn_cast<FileLineColLoc>(op->getLoc()))
    return (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine())).str();
  std::string text;
  llvm::raw_string_ostream os(text);
  op->getLoc().print(os);
  return text;
}

struct KilnRematerializePass
    : public ::mlir::kiln::impl::KilnRematerializeBase<KilnRematerializePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!(budget >= 0.0 && budget <= 1.0)) {
      func.emitError("kiln-remat: the memory budget must be between 0 and 1, got ")
          << llvm::formatv("{0}", llvm::format("%g", double(budget))).str();
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    Value loss;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto name = func.getResultAttrOfType<StringAttr>(i, "kiln.name");
          name && name.getValue() == this->loss)
        loss = ret.getOperand(i);
    if (!loss) {
      func.emitError("kiln-remat: the function has no output named '") << this->loss << "'";
      return signalPassFailure();
    }
    for (Operation &op : body.without_terminator())
      for (Value result : op.getResults())
        if (!llvm::cast<RankedTensorType>(result.getType()).hasStaticShape()) {
          op.emitError("kiln-remat: sizes must be static to plan memory by them");
          return signalPassFailure();
        }

    JointGraph graph = splitAtLoss(body, loss);
    // Ban recomputation, most FLOPs per byte first; the plans go from
    // "recompute all that can be" (nothing banned) to "save every value the
    // backward reads" (everything banned). Among equals, the last in the
    // forward pass is saved first: the backward pass reads it first, so
    // what it recomputes is read later and lives a shorter while.
    SmallVector<Operation *> order(llvm::reverse(graph.candidates));
    llvm::stable_sort(order, [](Operation *a, Operation *b) {
      return flopsOf(a) / double(std::max<int64_t>(1, resultBytes(a))) >
             flopsOf(b) / double(std::max<int64_t>(1, resultBytes(b)));
    });
    // At most kMaxCuts cuts, evenly spaced in the number banned: each is a
    // max flow over the whole forward graph.
    SmallVector<Plan> chain;
    llvm::DenseSet<Operation *> banned(order.begin(), order.end());
    size_t stride = std::max<size_t>(1, (order.size() + kMaxCuts - 1) / kMaxCuts);
    for (size_t k = order.size() + 1; k-- > 0;) {
      if (k < order.size())
        banned.erase(order[k]);
      if (k % stride != 0 && k != order.size())
        continue;
      Plan plan = cutPlan(graph, banned);
      Schedule schedule = scheduleShared(graph, plan);
      plan.peakBytes = estimatePeak(body, graph, plan, schedule);
      plan.clones = schedule.clones.size();
      plan.recomputedFlops = schedule.flops;
      // Recomputing per reader, if that peaks lower by more than the
      // estimate's error (within a bound on the clones: a long chain
      // recomputed for every reader grows quadratically).
      if (!plan.recomputed.empty())
        if (FailureOr<Schedule> each = schedulePerReader(
                graph, plan, kMaxClonesPerForwardOp * int64_t(graph.forward.size()));
            succeeded(each)) {
          int64_t peak = estimatePeak(body, graph, plan, *each);
          if (peak < plan.peakBytes - plan.peakBytes / kPeakMargin) {
            plan.perReader = true;
            plan.peakBytes = peak;
            plan.clones = each->clones.size();
            plan.recomputedFlops = each->flops;
          }
        }
      // Kept only if it saves less and peaks lower than the last kept, by
      // more than the estimate's error (recomputing costs time: for
      // nothing, if the plan's arena need not fall).
      if (chain.empty() ||
          (plan.savedBytes < chain.back().savedBytes &&
           plan.peakBytes < chain.back().peakBytes - chain.back().peakBytes / kPeakMargin))
        chain.push_back(std::move(plan));
    }
    // As PyTorch's activation memory budget: a fraction of the bytes
    // saved recomputing nothing; below the least the chain reaches, that.
    const Plan &most = chain.front(), &least = chain.back();
    const Plan *chosen = &least;
    for (const Plan &plan : chain)
      if (double(plan.savedBytes) <= budget * double(most.savedBytes)) {
        chosen = &plan;
        break;
      }

    if (report)
      reportPlan(func, *chosen, most, least);
    applyPlan(graph, *chosen);
  }

  void reportPlan(func::FuncOp func, const Plan &chosen, const Plan &most, const Plan &least) {
    func.emitRemark("kiln-remat: budget ")
        << llvm::formatv("{0}", llvm::format("%g", double(budget))).str() << ": saves "
        << chosen.savedBytes << " bytes for the backward pass (" << chosen.saved.size()
        << (chosen.saved.size() == 1 ? " value; " : " values; ") << least.savedBytes
        << " at the least, " << most.savedBytes << " recomputing nothing), recomputes "
        << chosen.clones << (chosen.clones == 1 ? " op (" : " ops (")
        << int64_t(chosen.recomputedFlops) << " FLOPs"
        << (chosen.perReader ? ", each backward op its own" : "") << "); estimated peak "
        << chosen.peakBytes
        << " bytes live (" << least.peakBytes << " to " << most.peakBytes << ")";
    // Layers in the order the forward pass reaches them.
    SmallVector<Operation *> saved(chosen.saved.begin(), chosen.saved.end());
    llvm::sort(saved, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    SmallVector<std::string> layers;
    llvm::StringMap<std::pair<int64_t, int64_t>> perLayer; // bytes, values
    for (Operation *op : saved) {
      std::string layer = layerOf(op);
      if (!perLayer.count(layer))
        layers.push_back(layer);
      auto &[bytes, values] = perLayer[layer];
      bytes += savingCost(op);
      ++values;
    }
    for (const std::string &layer : layers) {
      auto [bytes, values] = perLayer.lookup(layer);
      func.emitRemark("kiln-remat: layer '") << layer << "' saves " << bytes << " bytes (" << values
                                             << (values == 1 ? " value)" : " values)");
    }
  }
};

} // namespace
