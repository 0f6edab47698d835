//===- StepSchedule.cpp - order and concurrency of steps ------------------===//

#include "kiln/Lowering/StepSchedule.h"

using namespace mlir;
using namespace mlir::kiln;

FailureOr<StepSchedule> StepSchedule::build(func::FuncOp func) {
  StepSchedule s;
  func.walk([&](exec::StepOp step) {
    s.index[step] = s.steps.size();
    s.steps.push_back(step);
    int64_t stream = step.getStream().value_or(0);
    s.stream.push_back(stream);
    s.numStreams = std::max(s.numStreams, stream + 1);
  });

  // clock[A][B]: how many steps of stream B are known complete on stream A.
  SmallVector<SmallVector<int64_t>> clock(s.numStreams,
                                          SmallVector<int64_t>(s.numStreams, 0));
  llvm::DenseMap<int64_t, SmallVector<int64_t>> signalled;
  for (auto [i, step] : llvm::enumerate(s.steps)) {
    int64_t a = s.stream[i];
    if (auto waits = step.getWaits()) {
      for (int64_t event : *waits) {
        auto it = signalled.find(event);
        if (it == signalled.end())
          return step.emitOpError("waits for event ")
                 << event << ", which no earlier step signals";
        for (int64_t b = 0; b < s.numStreams; ++b)
          clock[a][b] = std::max(clock[a][b], it->second[b]);
      }
    }
    s.clockAtStart.push_back(clock[a]);
    s.position.push_back(++clock[a][a]);
    if (auto event = step.getEvent()) {
      if (signalled.count(*event))
        return step.emitOpError("signals event ") << *event << " a second time";
      signalled[*event] = clock[a];
    }
  }
  return s;
}

bool StepSchedule::happensBefore(int64_t before, int64_t after) const {
  return clockAtStart[after][stream[before]] >= position[before];
}
