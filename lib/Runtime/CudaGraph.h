//===- CudaGraph.h - a schedule captured once, replayed ---------*- C++ -*-===//
//
// With --cuda-graph the CUDA device queues its schedule once under stream
// capture and replays the instantiated graph on every later run: one
// launch instead of one per step. What a capture needs from the schedule:
// every stream forks from the capturing stream and joins back to it
// (events, as the eager schedule already does), nothing synchronizes or
// touches the legacy default stream (the plan's streams are non-blocking),
// no host step runs in it (refused at load), and every module is loaded
// before it (the device runs once eagerly first). Timing events inside a
// capture are recorded as external event nodes, so a replay records them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDAGRAPH_H
#define KILN_LIB_RUNTIME_CUDAGRAPH_H

#include "CudaApi.h"

#include <functional>

namespace kiln {
namespace rt {

class CudaGraph {
public:
  /// Captures what `enqueue` queues, starting on `origin` (which every other
  /// stream it uses must join back to), into an instantiated graph.
  static Result<std::unique_ptr<CudaGraph>> capture(const CudaApi &cuda, cudaStream_t origin,
                                                    const std::function<Status()> &enqueue);
  ~CudaGraph();

  /// Queues one replay on `stream`.
  Status launch(cudaStream_t stream) const;

private:
  CudaGraph(const CudaApi &cuda) : cuda_(cuda) {}
  const CudaApi &cuda_;
  cudaGraphExec_t exec_ = nullptr;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDAGRAPH_H
