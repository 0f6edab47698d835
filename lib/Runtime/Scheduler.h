//===- Scheduler.h - streams and events -------------------------*- C++ -*-===//
//
// Runs a program's steps the way a GPU runs streams: each stream is a worker
// that executes its steps in program order, waiting before a step for the
// events it lists and signalling its event after it. The CPU backend uses
// threads as streams; the CUDA backend will map the same plan onto CUDA
// streams and events.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_SCHEDULER_H
#define KILN_LIB_RUNTIME_SCHEDULER_H

#include "Program.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace kiln {
namespace rt {

/// Threads kept for streams 1..N-1 between runs (stream 0 runs on the
/// caller), so that streams start together rather than one thread spawn
/// after another.
class StreamWorkers {
public:
  explicit StreamWorkers(uint32_t numStreams);
  ~StreamWorkers();
  /// Runs body(s) for every stream s, in parallel, and returns when all end.
  void run(const std::function<void(uint32_t)> &body);

private:
  void loop(uint32_t stream);
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(uint32_t)> *body_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  size_t running_ = 0;
  bool stop_ = false;
};

/// Runs steps [begin, end) of `program` through `execute`, one worker per
/// stream (from `workers` when given); the steps before `begin` ran
/// before, so the events they signal count as signalled. The first failing
/// step stops the run; its status is returned. `timings` receives one
/// entry per executed step.
Status runSchedule(const Program &program,
                   const std::function<Status(size_t step)> &execute,
                   std::vector<StepTiming> *timings, StreamWorkers *workers = nullptr,
                   size_t begin = 0, size_t end = SIZE_MAX);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_SCHEDULER_H
