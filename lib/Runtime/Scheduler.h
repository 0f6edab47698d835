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

#include <functional>

namespace kiln {
namespace rt {

/// Runs every step of `program` through `execute`, one thread per stream.
/// The first failing step stops the run; its status is returned. `timings`
/// receives one entry per executed step.
Status runSchedule(const Program &program,
                   const std::function<Status(size_t step)> &execute,
                   std::vector<StepTiming> *timings);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_SCHEDULER_H
