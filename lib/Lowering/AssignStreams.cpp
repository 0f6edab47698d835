//===- AssignStreams.cpp - streams and events for steps -------------------===//

#include "kiln/Lowering/Passes.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNSTREAMS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnAssignStreamsPass
    : public ::mlir::kiln::impl::KilnAssignStreamsBase<KilnAssignStreamsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxStreams < 1) {
      getOperation().emitError("max-streams must be at least 1");
      return signalPassFailure();
    }
    SmallVector<exec::StepOp> steps;
    getOperation().walk([&](exec::StepOp step) { steps.push_back(step); });

    llvm::DenseMap<Operation *, int64_t> streamOf, positionOf, eventOf;
    // Vector clocks: clock[a][b] = steps of stream b known complete on
    // stream a. Every clock has one entry per possible stream.
    llvm::DenseMap<Operation *, SmallVector<int64_t>> clockAfter;
    SmallVector<SmallVector<int64_t>> clock(maxStreams, SmallVector<int64_t>(maxStreams, 0));
    SmallVector<Operation *> tail;             // latest step of each open stream
    SmallVector<int64_t> load;                 // steps per open stream
    int64_t nextEvent = 0;

    auto openStream = [&] {
      tail.push_back(nullptr);
      load.push_back(0);
      return static_cast<int64_t>(tail.size() - 1);
    };

    for (exec::StepOp step : steps) {
      SmallVector<Operation *> producers;
      for (Value input : step.getInputs())
        if (auto p = input.getDefiningOp<exec::StepOp>())
          if (!llvm::is_contained(producers, p.getOperation()))
            producers.push_back(p);

      // Continue a producer's stream if the producer is its latest step.
      int64_t chosen = -1;
      for (Operation *p : producers)
        if (tail[streamOf[p]] == p) {
          chosen = streamOf[p];
          break;
        }
      if (chosen < 0 && static_cast<int64_t>(tail.size()) < maxStreams)
        chosen = openStream();
      if (chosen < 0)
        chosen = producers.empty()
                     ? std::min_element(load.begin(), load.end()) - load.begin()
                     : streamOf[producers.front()];

      // Wait for producers on other streams unless already ordered.
      SmallVector<int64_t> waits;
      for (Operation *p : producers) {
        int64_t ps = streamOf[p];
        if (ps == chosen || clock[chosen][ps] >= positionOf[p])
          continue;
        auto [it, inserted] = eventOf.try_emplace(p, nextEvent);
        if (inserted)
          ++nextEvent;
        waits.push_back(it->second);
        for (int64_t s = 0; s < maxStreams; ++s)
          clock[chosen][s] = std::max(clock[chosen][s], clockAfter[p][s]);
      }
      streamOf[step] = chosen;
      positionOf[step] = ++clock[chosen][chosen];
      clockAfter[step] = clock[chosen];
      tail[chosen] = step;
      ++load[chosen];

      Builder b(step.getContext());
      step.setStreamAttr(b.getI64IntegerAttr(chosen));
      if (waits.empty())
        step.removeWaitsAttr();
      else
        step.setWaitsAttr(b.getDenseI64ArrayAttr(waits));
      step.removeEventAttr();
    }
    Builder b(&getContext());
    for (auto [op, event] : eventOf)
      llvm::cast<exec::StepOp>(op).setEventAttr(b.getI64IntegerAttr(event));
    getOperation()->setAttr("exec.streams",
                            b.getI64IntegerAttr(std::max<int64_t>(tail.size(), 1)));
  }
};

} // namespace
