//===- Scheduler.cpp - streams and events ---------------------------------===//

#include "Scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>

namespace kiln {
namespace rt {

namespace {

/// A one-shot fence between streams.
class Event {
public:
  void signal() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      signalled_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return signalled_; });
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool signalled_ = false;
};

} // namespace

StreamWorkers::StreamWorkers(uint32_t numStreams) {
  for (uint32_t s = 1; s < numStreams; ++s)
    threads_.emplace_back([this, s] { loop(s); });
}

StreamWorkers::~StreamWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread &t : threads_)
    t.join();
}

void StreamWorkers::loop(uint32_t stream) {
  uint64_t seen = 0;
  while (true) {
    // Spin briefly before sleeping: a stream should start when the run
    // starts, not a thread wake-up later.
    auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (generation_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spinUntil)
      std::this_thread::yield();
    const std::function<void(uint32_t)> *body;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_)
        return;
      seen = generation_;
      body = body_;
    }
    (*body)(stream);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    done_.notify_all();
  }
}

void StreamWorkers::run(const std::function<void(uint32_t)> &body) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    running_ = threads_.size();
    ++generation_;
  }
  start_.notify_all();
  body(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
}

Status runSchedule(const Program &program, const std::function<Status(size_t)> &execute,
                   std::vector<StepTiming> *timings, StreamWorkers *workers, size_t begin,
                   size_t end) {
  std::vector<Event> events(program.numEvents);
  std::vector<std::vector<size_t>> perStream(program.numStreams);
  end = std::min(end, program.steps.size());
  for (size_t i = 0; i < program.steps.size(); ++i) {
    if (i >= begin && i < end)
      perStream[program.steps[i].stream].push_back(i);
    else if (i < begin && program.steps[i].event >= 0)
      events[program.steps[i].event].signal();
  }

  std::atomic<bool> failed{false};
  std::mutex errorMutex;
  Status firstError = Status::ok();
  std::vector<std::vector<StepTiming>> streamTimings(program.numStreams);
  auto start = std::chrono::steady_clock::now();
  auto micros = [&] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  };

  auto runStream = [&](uint32_t stream) {
    for (size_t index : perStream[stream]) {
      const StepDesc &step = program.steps[index];
      for (uint32_t e : step.waits)
        events[e].wait();
      // After a failure, keep signalling so no other stream waits forever.
      if (!failed.load()) {
        double begin = micros();
        Status s = execute(index);
        double end = micros();
        streamTimings[stream].push_back({index, step.name, static_cast<int>(stream), begin, end});
        if (!s) {
          std::lock_guard<std::mutex> lock(errorMutex);
          if (!failed.exchange(true))
            firstError = Status::error("step #" + std::to_string(index) + " (" + step.name +
                                       "): " + s.message());
        }
      }
      if (step.event >= 0)
        events[step.event].signal();
    }
  };

  if (program.numStreams == 1) {
    runStream(0);
  } else if (workers) {
    workers->run(runStream);
  } else {
    std::vector<std::thread> workers;
    for (uint32_t s = 1; s < program.numStreams; ++s)
      workers.emplace_back(runStream, s);
    runStream(0);
    for (std::thread &t : workers)
      t.join();
  }
  if (timings) {
    timings->clear();
    for (auto &t : streamTimings)
      timings->insert(timings->end(), t.begin(), t.end());
    std::sort(timings->begin(), timings->end(),
              [](const StepTiming &a, const StepTiming &b) { return a.step < b.step; });
  }
  return failed ? firstError : Status::ok();
}

} // namespace rt
} // namespace kiln
