//===- CudaGraph.cpp - a schedule captured once, replayed -----------------===//

#ifdef KILN_RUNTIME_HAVE_CUDA

#include "CudaGraph.h"

namespace kiln {
namespace rt {

Result<std::unique_ptr<CudaGraph>> CudaGraph::capture(const CudaApi &cuda, cudaStream_t origin,
                                                      const std::function<Status()> &enqueue) {
  // Thread-local mode: another thread's unrelated CUDA calls do not break
  // this capture, while this thread's forbidden calls fail loudly.
  Status st = cuda.check(cuda.cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal),
                         "capturing the schedule into a CUDA graph");
  if (!st)
    return st;
  Status queued = enqueue();
  // End the capture even after a failure, or the stream stays capturing.
  cudaGraph_t graph = nullptr;
  Status ended = cuda.check(cuda.cudaStreamEndCapture(origin, &graph),
                            "capturing the schedule into a CUDA graph");
  std::unique_ptr<CudaGraph> result(new CudaGraph(cuda));
  st = !queued ? queued : ended;
  if (st)
    st = cuda.check(cuda.cudaGraphInstantiate(&result->exec_, graph, 0),
                    "instantiating the CUDA graph");
  if (graph)
    cuda.cudaGraphDestroy(graph);
  if (!st)
    return st;
  return result;
}

CudaGraph::~CudaGraph() {
  if (exec_)
    cuda_.cudaGraphExecDestroy(exec_);
}

Status CudaGraph::launch(cudaStream_t stream) const {
  return cuda_.check(cuda_.cudaGraphLaunch(exec_, stream), "launching the CUDA graph");
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_HAVE_CUDA
