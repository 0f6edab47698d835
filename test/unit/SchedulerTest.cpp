//===- SchedulerTest.cpp - streams, events and stream workers ------------===//
//
// The runtime's scheduler without the compiler: built into
// kiln-runtime-tests, which links the runtime alone, so the multi-stream
// execution can also run under ThreadSanitizer (scripts/test --tsan). Steps
// read and write plain (non-atomic) memory on purpose: a missing
// happens-before edge is a data race that TSan reports, and a wrong order
// fails the assertions in any build.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/Program.h"
#include "../../lib/Runtime/Scheduler.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

using namespace kiln;

namespace {

/// A program of two streams where stream 0's step consumes what a slow step
/// of stream 1 produces: without honouring the event, it reads too early.
TEST(Scheduler, WaitsForEvents) {
  rt::Program program;
  program.numStreams = 2;
  program.numEvents = 1;
  rt::StepDesc producer, consumer;
  producer.name = "produce";
  producer.stream = 1;
  producer.event = 0;
  consumer.name = "consume";
  consumer.stream = 0;
  consumer.waits = {0};
  program.steps = {producer, consumer};
  for (int trial = 0; trial < 5; ++trial) {
    std::atomic<int> value{0};
    int seen = -1;
    std::vector<rt::StepTiming> timings;
    rt::Status s = rt::runSchedule(
        program,
        [&](size_t step) {
          if (step == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            value = 42;
          } else {
            seen = value;
          }
          return rt::Status::ok();
        },
        &timings);
    ASSERT_TRUE(s);
    EXPECT_EQ(seen, 42);
    ASSERT_EQ(timings.size(), 2u);
  }
}

TEST(Scheduler, AFailingStepStopsTheRunWithoutHanging) {
  rt::Program program;
  program.numStreams = 2;
  program.numEvents = 1;
  rt::StepDesc a, b, c;
  a.name = "fails";
  a.stream = 1;
  a.event = 0;
  b.name = "waits";
  b.stream = 0;
  b.waits = {0};
  c.name = "later";
  c.stream = 0;
  program.steps = {a, b, c};
  int executed = 0;
  rt::Status s = rt::runSchedule(
      program,
      [&](size_t step) {
        ++executed;
        return step == 0 ? rt::Status::error("boom") : rt::Status::ok();
      },
      nullptr);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message(), "step #0 (fails): boom");
  EXPECT_EQ(executed, 1);
}

/// A random program: steps on random streams, some signalling an event
/// that later steps on other streams wait for (as kiln-assign-streams
/// writes them: each event is signalled by one step and waited for after).
rt::Program randomProgram(std::mt19937 &rng, uint32_t numStreams, size_t numSteps) {
  rt::Program program;
  program.numStreams = numStreams;
  std::vector<uint32_t> signalled; // events signalled so far
  for (size_t i = 0; i < numSteps; ++i) {
    rt::StepDesc step;
    step.name = "s" + std::to_string(i);
    step.stream = rng() % numStreams;
    for (int k = rng() % 3; k > 0 && !signalled.empty(); --k)
      step.waits.push_back(signalled[rng() % signalled.size()]);
    if (rng() % 2) {
      step.event = program.numEvents++;
      signalled.push_back(static_cast<uint32_t>(step.event));
    }
    program.steps.push_back(step);
  }
  return program;
}

/// Every step sees what the steps it depends on wrote: the step before it
/// on its stream and the signallers of the events it waits for. Run many
/// times over random programs, with kept stream workers and without.
TEST(Scheduler, RandomProgramsHonourStreamOrderAndEvents) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 60; ++trial) {
    uint32_t numStreams = 1 + trial % 4;
    rt::Program program = randomProgram(rng, numStreams, 40);
    std::vector<int64_t> signaller(program.numEvents, -1);
    std::vector<std::vector<size_t>> needs(program.steps.size());
    std::vector<int64_t> lastOnStream(numStreams, -1);
    for (size_t i = 0; i < program.steps.size(); ++i) {
      const rt::StepDesc &step = program.steps[i];
      if (lastOnStream[step.stream] >= 0)
        needs[i].push_back(static_cast<size_t>(lastOnStream[step.stream]));
      lastOnStream[step.stream] = static_cast<int64_t>(i);
      for (uint32_t e : step.waits)
        needs[i].push_back(static_cast<size_t>(signaller[e]));
      if (step.event >= 0)
        signaller[step.event] = static_cast<int64_t>(i);
    }
    rt::StreamWorkers workers(numStreams);
    for (int run = 0; run < 3; ++run) {
      std::vector<int> written(program.steps.size(), 0); // plain ints: TSan sees the edges
      std::vector<int> missed(program.steps.size(), 0);
      rt::Status s = rt::runSchedule(
          program,
          [&](size_t step) {
            for (size_t before : needs[step])
              if (written[before] != run + 1)
                missed[step] = 1;
            written[step] = run + 1;
            return rt::Status::ok();
          },
          nullptr, run == 0 ? nullptr : &workers);
      ASSERT_TRUE(s) << s.message();
      for (size_t i = 0; i < program.steps.size(); ++i) {
        EXPECT_EQ(written[i], run + 1) << "step " << i << " did not run (trial " << trial << ")";
        EXPECT_EQ(missed[i], 0) << "step " << i << " ran before a step it depends on (trial "
                                << trial << ", run " << run << ")";
      }
    }
  }
}

/// Kept workers run one body after another without mixing generations:
/// every stream runs every body exactly once.
TEST(Scheduler, StreamWorkersRunEachBodyOncePerStream) {
  rt::StreamWorkers workers(4);
  std::vector<int> count(4, 0); // each stream writes only its own slot
  for (int round = 1; round <= 200; ++round) {
    workers.run([&](uint32_t stream) { ++count[stream]; });
    for (uint32_t s = 0; s < 4; ++s)
      ASSERT_EQ(count[s], round) << "stream " << s;
  }
}

} // namespace
