//===- Emulator.cpp - the cuda-emu block scheduler ------------------------===//
//
// A block runs as one fiber per thread on the calling OS thread. Warps run
// one at a time in the launch's order; within a warp, lanes run (in that
// order too) until each waits at a barrier or a warp collective or exits.
// When every lane a collective names has arrived, the scheduler computes
// the collective and lets the warp go on ("warp-eager"); when every thread
// waits at __syncthreads, the block goes on. Any other state in which no
// thread can move is a deadlock, reported with the source lines where the
// threads wait.
//
//===----------------------------------------------------------------------===//

#include "kiln/CudaEmu/Emulator.h"
#include "kiln/CudaEmu/cuda_emu.h"

#include "Fiber.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace kiln {
namespace emu {

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace {

constexpr size_t kStaticSharedLimit = 48 * 1024; // CUDA's static __shared__ limit

size_t pageSize() {
  static size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

//===----------------------------------------------------------------------===//
// Guarded memory: data that ends where an inaccessible page begins
//===----------------------------------------------------------------------===//

struct GuardedRegion {
  char *base;       ///< the mapping, guard pages included
  size_t mapped;
  char *data;       ///< what the caller got
  size_t bytes;
  std::string name;
};

std::mutex guardedMutex;
std::map<char *, GuardedRegion> guardedRegions; // by data pointer
struct sigaction previousAction;                 // chained to for faults not ours

void onSegfault(int signal, siginfo_t *info, void *context) {
  char *address = static_cast<char *>(info->si_addr);
  // Best effort without the lock (a handler must not block): a region
  // being added or removed at this very moment may be missed.
  for (const auto &[data, region] : guardedRegions) {
    if (address < region.base || address >= region.base + region.mapped)
      continue;
    char message[512];
    long offset = static_cast<long>(address - region.data);
    std::snprintf(message, sizeof(message),
                  "kiln cuda-emu: out-of-bounds access to '%s' (%zu bytes) at byte offset %ld, "
                  "by thread (%u,%u,%u) of block (%u,%u,%u)\n",
                  region.name.c_str(), region.bytes, offset, threadIdx.x, threadIdx.y,
                  threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z);
    ssize_t ignored = write(STDERR_FILENO, message, std::strlen(message));
    (void)ignored;
    _exit(70);
  }
  // Not ours: whoever handled SIGSEGV before, or the default.
  if (previousAction.sa_flags & SA_SIGINFO) {
    previousAction.sa_sigaction(signal, info, context);
  } else if (previousAction.sa_handler != SIG_DFL && previousAction.sa_handler != SIG_IGN) {
    previousAction.sa_handler(signal);
  } else {
    std::signal(signal, SIG_DFL); // fault again, normally
  }
}

void installSegfaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = &onSegfault;
    // On the alternate stack, so a fiber that overran its own stack into
    // the guard page still gets a report.
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previousAction);
  });
}

/// Alignment that keeps the end of `bytes` exactly at the guard page.
size_t endAlignment(size_t bytes, size_t required) {
  size_t align = 16;
  while (align > 1 && bytes % align != 0)
    align /= 2;
  return std::max(align, required);
}

/// An alternate signal stack for the calling thread, if it has none.
void ensureSignalStack() {
  thread_local std::vector<char> stack;
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE))
    return;
  stack.resize(64 * 1024);
  stack_t fresh = {};
  fresh.ss_sp = stack.data();
  fresh.ss_size = stack.size();
  sigaltstack(&fresh, nullptr);
}

void *mapGuarded(size_t bytes, size_t align, const std::string &name) {
  installSegfaultHandler();
  ensureSignalStack();
  size_t page = pageSize();
  size_t dataPages = (bytes + align + page - 1) / page;
  size_t mapped = (dataPages + 2) * page;
  char *base = static_cast<char *>(
      mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (base == MAP_FAILED)
    return nullptr;
  char *end = base + (dataPages + 1) * page;
  if (mprotect(base, page, PROT_NONE) != 0 || mprotect(end, page, PROT_NONE) != 0) {
    munmap(base, mapped); // without its guard pages the buffer checks nothing
    return nullptr;
  }
  auto data = reinterpret_cast<char *>(
      (reinterpret_cast<uintptr_t>(end) - bytes) & ~(uintptr_t(align) - 1));
  std::lock_guard<std::mutex> lock(guardedMutex);
  guardedRegions[data] = {base, mapped, data, bytes, name};
  return data;
}

void unmapGuarded(void *memory) {
  std::lock_guard<std::mutex> lock(guardedMutex);
  auto it = guardedRegions.find(static_cast<char *>(memory));
  if (it == guardedRegions.end())
    return;
  munmap(it->second.base, it->second.mapped);
  guardedRegions.erase(it);
}

//===----------------------------------------------------------------------===//
// Threads and launches
//===----------------------------------------------------------------------===//

enum class State { Runnable, AtBarrier, AtCollective, Exited, Failed };

struct Thread {
  std::unique_ptr<Fiber> fiber;
  unsigned linear = 0;
  uint3 index{0, 0, 0};
  State state = State::Runnable;
  const char *file = "";
  int line = 0;
  Collective kind = Collective::SyncWarp;
  unsigned mask = 0;
  uint64_t value = 0, result = 0;
  int param = 0, width = 32;
  size_t sharedCalls = 0;
};

struct SharedSlot {
  char *data;
  size_t bytes;
  const char *file;
  int line;
  bool guarded;
};

struct Launch {
  Dim3 grid, block;
  size_t dynamicShared;
  LaunchOptions options;
  const std::function<void()> *body;
  std::vector<Thread> threads;
  std::vector<char> arena;    ///< static shared memory of the running block
  size_t arenaUsed = 0;
  std::vector<SharedSlot> slots;
  char *dynamic = nullptr;
  std::vector<char> dynamicStorage;
  std::string error;          ///< set by a thread that failed
  std::mt19937_64 random;
};

thread_local Launch *active = nullptr;
thread_local Thread *self = nullptr;

std::string where(const char *file, int line) {
  const char *slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

const char *collectiveName(Collective kind) {
  switch (kind) {
  case Collective::SyncWarp:
    return "__syncwarp";
  case Collective::ShflIdx:
    return "__shfl_sync";
  case Collective::ShflXor:
    return "__shfl_xor_sync";
  case Collective::ShflDown:
    return "__shfl_down_sync";
  case Collective::ShflUp:
    return "__shfl_up_sync";
  case Collective::Any:
    return "__any_sync";
  case Collective::All:
    return "__all_sync";
  case Collective::Ballot:
    return "__ballot_sync";
  }
  return "?";
}

/// "threads 0..15, 17" for a sorted list of thread numbers.
std::string describeThreads(const std::vector<unsigned> &ids, const char *noun = "threads") {
  std::string s = noun;
  for (size_t k = 0; k < ids.size();) {
    size_t j = k;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    s += (k ? ", " : " ") + std::to_string(ids[k]);
    if (j > k)
      s += ".." + std::to_string(ids[j]);
    k = j + 1;
  }
  return s;
}

/// What a thread waits at, for reports.
std::string waitingAt(const Thread &t) {
  if (t.state == State::AtBarrier)
    return "__syncthreads (" + where(t.file, t.line) + ")";
  if (t.state == State::AtCollective)
    return std::string(collectiveName(t.kind)) + " (" + where(t.file, t.line) + ")";
  return "exit";
}

/// Groups threads by what they wait at: "threads 0..15 wait at X; threads
/// 16..31 exited".
std::string describeWaits(const std::vector<const Thread *> &threads) {
  std::map<std::string, std::vector<unsigned>> groups;
  for (const Thread *t : threads)
    groups[waitingAt(*t)].push_back(t->linear);
  std::string s;
  for (auto &[what, ids] : groups) {
    std::sort(ids.begin(), ids.end());
    s += (s.empty() ? "" : "; ") + describeThreads(ids) +
         (what == "exit" ? " exited" : " wait at " + what);
  }
  return s;
}

[[noreturn]] void threadMain(void *arg) {
  Thread *t = static_cast<Thread *>(arg);
  (*active->body)();
  t->state = State::Exited;
  Fiber::switchTo(*t->fiber, Fiber::current());
  std::abort(); // an exited thread is never resumed
}

void yieldToScheduler() { Fiber::switchTo(*self->fiber, Fiber::current()); }

/// Ends the calling thread's part in the launch with an error. The
/// thread's frames are abandoned, not unwound: a caller that must not leak
/// builds `message` without heap temporaries and calls failWith.
[[noreturn]] void failWith(const char *message) {
  if (active->error.empty())
    active->error = message;
  self->state = State::Failed;
  yieldToScheduler();
  std::abort();
}

[[noreturn]] void fail(const std::string &message) {
  if (active->error.empty())
    active->error = message;
  self->state = State::Failed;
  yieldToScheduler();
  std::abort();
}

void resume(Thread &t) {
  self = &t;
  threadIdx = t.index;
  Fiber::switchTo(Fiber::current(), *t.fiber);
  self = nullptr;
}

std::vector<unsigned> ordered(unsigned count, Launch &launch) {
  std::vector<unsigned> order(count);
  std::iota(order.begin(), order.end(), 0u);
  if (launch.options.order == Order::Reverse)
    std::reverse(order.begin(), order.end());
  else if (launch.options.order == Order::Shuffled)
    std::shuffle(order.begin(), order.end(), launch.random);
  return order;
}

/// The lane whose value lane `lane` receives, or -1 for its own.
int sourceLane(const Thread &t, unsigned lane) {
  int width = t.width > 0 && t.width <= 32 ? t.width : 32;
  int base = static_cast<int>(lane) / width * width, offset = static_cast<int>(lane) - base;
  switch (t.kind) {
  case Collective::ShflIdx:
    return base + ((t.param % width) + width) % width;
  case Collective::ShflXor: {
    int source = static_cast<int>(lane) ^ t.param;
    return source / width * width == base ? source : -1;
  }
  case Collective::ShflDown:
    return offset + t.param < width ? static_cast<int>(lane) + t.param : -1;
  case Collective::ShflUp:
    return offset - t.param >= 0 ? static_cast<int>(lane) - t.param : -1;
  default:
    return -1;
  }
}

/// Runs warp `w` until its lanes all wait at __syncthreads or have exited.
std::string runWarp(Launch &launch, unsigned w) {
  unsigned n = static_cast<unsigned>(launch.threads.size());
  unsigned first = w * 32, count = std::min(32u, n - first);
  std::vector<unsigned> lanes = ordered(count, launch);
  while (true) {
    for (unsigned lane : lanes) {
      Thread &t = launch.threads[first + lane];
      while (t.state == State::Runnable)
        resume(t);
      if (!launch.error.empty())
        return launch.error;
    }
    std::vector<Thread *> waiting;
    for (unsigned lane = 0; lane < count; ++lane)
      if (launch.threads[first + lane].state == State::AtCollective)
        waiting.push_back(&launch.threads[first + lane]);
    if (waiting.empty())
      return "";
    const Thread &lead = *waiting.front();
    std::vector<const Thread *> all;
    for (unsigned lane = 0; lane < count; ++lane)
      all.push_back(&launch.threads[first + lane]);
    for (const Thread *t : waiting)
      if (t->kind != lead.kind || t->line != lead.line || std::strcmp(t->file, lead.file) != 0 ||
          t->mask != lead.mask)
        return "warp " + std::to_string(w) + " diverged at warp collectives: " + describeWaits(all);
    // Every lane the mask names must be here.
    std::vector<Thread *> participants;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (!(lead.mask >> lane & 1u))
        continue;
      if (lane >= count)
        return std::string(collectiveName(lead.kind)) + " (" + where(lead.file, lead.line) +
               ") names lane " + std::to_string(lane) + ", which does not exist in warp " +
               std::to_string(w);
      Thread &t = launch.threads[first + lane];
      if (t.state != State::AtCollective)
        return "deadlock in warp " + std::to_string(w) + ": " + describeWaits(all);
      participants.push_back(&t);
    }
    for (const Thread *t : waiting)
      if (!(lead.mask >> (t->linear - first) & 1u))
        return std::string(collectiveName(lead.kind)) + " (" + where(lead.file, lead.line) +
               ") called by lane " + std::to_string(t->linear - first) +
               ", which is not in its mask";
    uint64_t ballot = 0;
    bool any = false, allSet = true;
    for (const Thread *t : participants) {
      ballot |= uint64_t(t->value != 0) << (t->linear - first);
      any |= t->value != 0;
      allSet &= t->value != 0;
    }
    for (Thread *t : participants) {
      unsigned lane = t->linear - first;
      switch (t->kind) {
      case Collective::SyncWarp:
        t->result = 0;
        break;
      case Collective::Any:
        t->result = any;
        break;
      case Collective::All:
        t->result = allSet;
        break;
      case Collective::Ballot:
        t->result = ballot;
        break;
      default: {
        int source = sourceLane(*t, lane);
        if (source < 0) {
          t->result = t->value;
        } else if (!(lead.mask >> source & 1u) || static_cast<unsigned>(source) >= count) {
          return std::string(collectiveName(t->kind)) + " (" + where(t->file, t->line) +
                 "): lane " + std::to_string(lane) + " reads lane " + std::to_string(source) +
                 ", which is not in the mask";
        } else {
          t->result = launch.threads[first + source].value;
        }
      }
      }
    }
    for (Thread *t : participants)
      t->state = State::Runnable;
  }
}

void releaseShared(Launch &launch) {
  for (const SharedSlot &slot : launch.slots)
    if (slot.guarded)
      unmapGuarded(slot.data);
  launch.slots.clear();
  launch.arenaUsed = 0;
}

std::string runBlock(Launch &launch) {
  unsigned n = static_cast<unsigned>(launch.threads.size());
  unsigned warps = (n + 31) / 32;
  while (true) {
    for (unsigned w : ordered(warps, launch)) {
      std::string error = runWarp(launch, w);
      if (!error.empty())
        return error;
    }
    std::vector<const Thread *> all;
    size_t atBarrier = 0, exited = 0;
    for (const Thread &t : launch.threads) {
      all.push_back(&t);
      atBarrier += t.state == State::AtBarrier;
      exited += t.state == State::Exited;
    }
    if (atBarrier == 0)
      return "";
    const Thread *lead = nullptr;
    for (const Thread &t : launch.threads)
      if (t.state == State::AtBarrier) {
        if (!lead)
          lead = &t;
        else if (t.line != lead->line || std::strcmp(t.file, lead->file) != 0)
          return "threads wait at different __syncthreads: " + describeWaits(all);
      }
    if (exited > 0)
      return "deadlock: not every thread of the block reaches __syncthreads: " +
             describeWaits(all);
    for (Thread &t : launch.threads)
      t.state = State::Runnable;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Called from kernel code
//===----------------------------------------------------------------------===//

void syncThreads(const char *file, int line) {
  if (!active || !self) {
    std::fprintf(stderr, "kiln cuda-emu: __syncthreads outside a kernel launch\n");
    std::abort();
  }
  self->state = State::AtBarrier;
  self->file = file;
  self->line = line;
  yieldToScheduler();
}

uint64_t warpCollective(Collective kind, unsigned mask, uint64_t value, int param, int width,
                        const char *file, int line) {
  if (!active || !self) {
    std::fprintf(stderr, "kiln cuda-emu: %s outside a kernel launch\n", collectiveName(kind));
    std::abort();
  }
  self->state = State::AtCollective;
  self->kind = kind;
  self->mask = mask;
  self->value = value;
  self->param = param;
  self->width = width;
  self->file = file;
  self->line = line;
  yieldToScheduler();
  return self->result;
}

void *sharedArray(size_t bytes, size_t align, const char *file, int line) {
  Launch &launch = *active;
  size_t k = self->sharedCalls++;
  if (k < launch.slots.size()) {
    const SharedSlot &slot = launch.slots[k];
    if (slot.line != line || slot.bytes != bytes || std::strcmp(slot.file, file) != 0)
      fail("thread " + std::to_string(self->linear) + " declares shared array #" +
           std::to_string(k) + " at " + where(file, line) + " but thread 0's is at " +
           where(slot.file, slot.line) + " (shared arrays must be declared by every thread, "
           "in the same order)");
    return slot.data;
  }
  SharedSlot slot{nullptr, bytes, file, line, launch.options.checked};
  if (slot.guarded) {
    slot.data = static_cast<char *>(
        mapGuarded(bytes, endAlignment(bytes, align), "shared array at " + where(file, line)));
    if (!slot.data)
      fail("cannot map a guarded page for the shared array at " + where(file, line));
    if (launch.options.poisonShared)
      std::memset(slot.data, 0xFF, bytes);
  } else {
    // Offsets count from the arena's first 256-byte boundary (its storage
    // is aligned only as the allocator likes), so an aligned offset is an
    // aligned address.
    size_t alignment = std::max<size_t>(align, 16);
    if (alignment > 256 || (alignment & (alignment - 1)))
      fail("the shared array at " + where(file, line) + " asks for " + std::to_string(align) +
           "-byte alignment (a power of two up to 256)");
    size_t offset = (launch.arenaUsed + alignment - 1) / alignment * alignment;
    if (offset + bytes > kStaticSharedLimit)
      fail("shared arrays of the block exceed " + std::to_string(kStaticSharedLimit) +
           " bytes at " + where(file, line));
    auto base = reinterpret_cast<uintptr_t>(launch.arena.data());
    slot.data = launch.arena.data() + ((base + 255) / 256 * 256 - base) + offset;
    launch.arenaUsed = offset + bytes;
  }
  launch.slots.push_back(slot);
  return slot.data;
}

void checkWmmaMatrix(const void *p, size_t ldmBytes, const char *call) {
  // The message is built in a stack buffer: a failing thread's frames are
  // abandoned, not unwound, so a std::string temporary here would leak.
  char message[160];
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0) {
    std::snprintf(message, sizeof(message),
                  "wmma::%s on a pointer that is not 32-byte aligned (%zu bytes past a 32-byte "
                  "boundary)",
                  call, static_cast<size_t>(reinterpret_cast<uintptr_t>(p) % 32));
    failWith(message);
  }
  if (ldmBytes % 16 != 0) {
    std::snprintf(message, sizeof(message),
                  "wmma::%s with a leading dimension of %zu bytes, not a multiple of 16", call,
                  ldmBytes);
    failWith(message);
  }
}

void *sharedDynamic(const char *file, int line) {
  if (!active->dynamic)
    fail("the kernel uses dynamic shared memory (" + where(file, line) +
         ") but the launch provides none");
  return active->dynamic;
}

//===----------------------------------------------------------------------===//
// Host API
//===----------------------------------------------------------------------===//

void *allocateGuarded(size_t bytes, const char *name) {
  return mapGuarded(bytes, endAlignment(bytes, 1), name);
}

void freeGuarded(void *memory) { unmapGuarded(memory); }

LaunchResult launch(Dim3 grid, Dim3 block, size_t dynamicShared, const LaunchOptions &options,
                    const std::function<void()> &thread) {
  if (active)
    return {false, "kernel launches from inside a kernel are not supported"};
  if (block.count() == 0 || block.count() > 1024 || block.z > 64)
    return {false, "invalid block shape (" + std::to_string(block.x) + ", " +
                       std::to_string(block.y) + ", " + std::to_string(block.z) +
                       "): at most 1024 threads, z at most 64"};
  if (grid.count() == 0)
    return {false, "empty grid"};
  Launch launch;
  launch.grid = grid;
  launch.block = block;
  launch.dynamicShared = dynamicShared;
  launch.options = options;
  launch.body = &thread;
  launch.random.seed(options.seed);
  // Room to start at a 256-byte boundary.
  launch.arena.resize(kStaticSharedLimit + 256);
  launch.threads.resize(block.count());
  for (unsigned k = 0; k < block.count(); ++k) {
    Thread &t = launch.threads[k];
    t.fiber = Fiber::create(options.stackBytes);
    if (!t.fiber)
      return {false, "cannot map a stack for emulated thread " + std::to_string(k) + " of " +
                         std::to_string(block.count()) + ": " + std::strerror(errno)};
    t.linear = k;
    t.index = {k % block.x, k / block.x % block.y, k / (block.x * block.y)};
  }
  active = &launch;
  blockDim = dim3(block.x, block.y, block.z);
  gridDim = dim3(grid.x, grid.y, grid.z);
  std::string error;
  for (unsigned b : ordered(grid.count(), launch)) {
    blockIdx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
    if (options.poisonShared)
      std::memset(launch.arena.data(), 0xFF, launch.arena.size());
    if (dynamicShared > 0) {
      if (options.checked) {
        launch.dynamic = static_cast<char *>(
            mapGuarded(dynamicShared, endAlignment(dynamicShared, 16), "dynamic shared memory"));
        if (!launch.dynamic) {
          error = "cannot map guarded pages for dynamic shared memory";
          break;
        }
      } else {
        launch.dynamicStorage.assign(dynamicShared, 0);
        launch.dynamic = launch.dynamicStorage.data();
      }
      if (options.poisonShared)
        std::memset(launch.dynamic, 0xFF, dynamicShared);
    }
    for (Thread &t : launch.threads) {
      t.state = State::Runnable;
      t.sharedCalls = 0;
      t.fiber->reset(&threadMain, &t);
    }
    error = runBlock(launch);
    releaseShared(launch);
    if (options.checked && launch.dynamic)
      unmapGuarded(launch.dynamic);
    launch.dynamic = nullptr;
    if (!error.empty()) {
      error = "block (" + std::to_string(blockIdx.x) + ", " + std::to_string(blockIdx.y) + ", " +
              std::to_string(blockIdx.z) + "): " + error;
      break;
    }
  }
  active = nullptr;
  return {error.empty(), error};
}

} // namespace emu
} // namespace kiln
