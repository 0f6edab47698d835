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
#include "kiln/Runtime/DeviceLimits.h"

#include "AccessProfiler.h"
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
#include <unordered_map>
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

// CUDA's limit on a block's static __shared__ arrays.
constexpr size_t kStaticSharedLimit = ::kiln::rt::kDefaultSharedBytes;

size_t pageSize() {
  static size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

//===----------------------------------------------------------------------===//
// Guarded memory: data that ends where an inaccessible page begins
//===----------------------------------------------------------------------===//

/// What fills a guarded buffer's first page below its start (all ones: a
/// NaN).
constexpr unsigned char kUnderrunFill = 0xFF;

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
  // The buffer ends at the trailing guard page; the bytes between the
  // leading one and its start are filled, so that a read there gives NaN,
  // not zeros, and a write there before a shared array's start can be found
  // (underrunOf, when the block releases its shared memory).
  std::memset(base + page, kUnderrunFill, static_cast<size_t>(data - (base + page)));
  std::lock_guard<std::mutex> lock(guardedMutex);
  guardedRegions[data] = {base, mapped, data, bytes, name};
  return data;
}

/// "out-of-bounds write to 'NAME' (N bytes) K bytes before its start" where
/// a kernel wrote below a guarded buffer (within its first page: further
/// below is the guard page, which traps); "" where nothing was.
std::string underrunOf(void *memory) {
  std::lock_guard<std::mutex> lock(guardedMutex);
  auto it = guardedRegions.find(static_cast<char *>(memory));
  if (it == guardedRegions.end())
    return "";
  const GuardedRegion &region = it->second;
  for (char *at = region.base + pageSize(); at < region.data; ++at)
    if (static_cast<unsigned char>(*at) != kUnderrunFill)
      return "out-of-bounds write to '" + region.name + "' (" + std::to_string(region.bytes) +
             " bytes) " + std::to_string(region.data - at) + " bytes before its start";
  return "";
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
  /// Profiling: how often each access site ran since the last barrier.
  std::unordered_map<uintptr_t, uint32_t> siteCounts;
  /// cp.async copies in flight: the open group, then committed ones
  /// (oldest first). The source bytes are read at issue.
  struct AsyncCopy {
    char *shared;
    unsigned bytes;
    char data[16];
  };
  std::vector<AsyncCopy> openGroup;
  std::vector<std::vector<AsyncCopy>> committedGroups;
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
  std::unique_ptr<AccessProfiler> profiler; ///< when the launch is profiled
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
  case Collective::LdMatrix:
    return "ldmatrix";
  case Collective::Mma:
    return "mma.sync";
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

bool inShared(const Launch &launch, const void *p) {
  auto a = static_cast<const char *>(p);
  if (a >= launch.arena.data() && a < launch.arena.data() + launch.arena.size())
    return true;
  if (launch.dynamic && a >= launch.dynamic && a < launch.dynamic + launch.dynamicShared)
    return true;
  for (const SharedSlot &slot : launch.slots)
    if (slot.guarded && a >= slot.data && a < slot.data + slot.bytes)
      return true;
  return false;
}

/// What a lane passes to ldmatrix and mma (the collective's value points
/// at it, on the lane's own stack).
struct LdMatrixArgs {
  unsigned *registers;
  int count;
  bool trans;
  const void *row;
};
struct MmaArgs {
  float *d;
  const unsigned *a, *b;
  bool bf16;
};

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: normalise
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float elementToFloat(uint16_t bits, bool bf16) {
  if (!bf16)
    return halfBitsToFloat(bits);
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

/// ldmatrix: matrix i's eight rows (16 bytes each) come from the addresses
/// of lanes 8i..8i+7; lane t receives, of each matrix, row t/4's elements
/// 2(t%4) and 2(t%4)+1 (with .trans, those of the transposed matrix).
std::string completeLdMatrix(Launch &launch, unsigned first, const char *file, int line) {
  auto args = [&](unsigned lane) {
    return reinterpret_cast<LdMatrixArgs *>(launch.threads[first + lane].value);
  };
  const LdMatrixArgs &lead = *args(0);
  std::vector<std::vector<LaneAccess>> phases(static_cast<size_t>(lead.count));
  for (int m = 0; m < lead.count; ++m) {
    uint16_t rows[8][8];
    for (unsigned r = 0; r < 8; ++r) {
      const LdMatrixArgs &a = *args(static_cast<unsigned>(m) * 8 + r);
      if (a.count != lead.count || a.trans != lead.trans)
        return "ldmatrix (" + where(file, line) + ") with different shapes across the warp";
      if (!inShared(launch, a.row) || reinterpret_cast<uintptr_t>(a.row) % 16 != 0)
        return "ldmatrix (" + where(file, line) + "): lane " + std::to_string(m * 8 + r) +
               "'s row address is not a 16-byte aligned shared-memory address";
      std::memcpy(rows[r], a.row, 16);
      phases[static_cast<size_t>(m)].push_back(
          {static_cast<unsigned>(m) * 8 + r, reinterpret_cast<uintptr_t>(a.row), 16});
    }
    for (unsigned t = 0; t < 32; ++t) {
      unsigned row = t / 4, col = 2 * (t % 4);
      uint16_t lo = lead.trans ? rows[col][row] : rows[row][col];
      uint16_t hi = lead.trans ? rows[col + 1][row] : rows[row][col + 1];
      args(t)->registers[m] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  }
  if (launch.profiler)
    launch.profiler->sharedRequest(phases);
  return "";
}

/// mma.m16n8k16 with the PTX ISA's fragments: lane t, g = t/4, c = t%4,
/// holds A rows g and g+8 at columns 2c, 2c+1 (a0, a1) and 2c+8, 2c+9 (a2,
/// a3); B rows 2c, 2c+1 (b0) and 2c+8, 2c+9 (b1) of column g; C rows g and
/// g+8 at columns 2c, 2c+1. Computed once for the warp.
std::string completeMma(Launch &launch, unsigned first) {
  auto args = [&](unsigned lane) {
    return reinterpret_cast<MmaArgs *>(launch.threads[first + lane].value);
  };
  bool bf16 = args(0)->bf16;
  float a[16][16], b[16][8], c[16][8];
  auto low = [](unsigned v) { return static_cast<uint16_t>(v & 0xffff); };
  auto high = [](unsigned v) { return static_cast<uint16_t>(v >> 16); };
  for (unsigned t = 0; t < 32; ++t) {
    const MmaArgs &m = *args(t);
    if (m.bf16 != bf16)
      return "mma.sync with different element types across the warp";
    unsigned g = t / 4, k = 2 * (t % 4);
    for (unsigned half = 0; half < 2; ++half) { // columns k.., then k+8..
      unsigned col = k + 8 * half;
      a[g][col] = elementToFloat(low(m.a[2 * half]), bf16);
      a[g][col + 1] = elementToFloat(high(m.a[2 * half]), bf16);
      a[g + 8][col] = elementToFloat(low(m.a[2 * half + 1]), bf16);
      a[g + 8][col + 1] = elementToFloat(high(m.a[2 * half + 1]), bf16);
      b[col][g] = elementToFloat(low(m.b[half]), bf16);
      b[col + 1][g] = elementToFloat(high(m.b[half]), bf16);
    }
    c[g][k] = m.d[0];
    c[g][k + 1] = m.d[1];
    c[g + 8][k] = m.d[2];
    c[g + 8][k + 1] = m.d[3];
  }
  for (unsigned i = 0; i < 16; ++i)
    for (unsigned j = 0; j < 8; ++j) {
      float sum = c[i][j];
      for (unsigned k = 0; k < 16; ++k)
        sum += a[i][k] * b[k][j];
      c[i][j] = sum;
    }
  for (unsigned t = 0; t < 32; ++t) {
    unsigned g = t / 4, k = 2 * (t % 4);
    float *d = args(t)->d;
    d[0] = c[g][k];
    d[1] = c[g][k + 1];
    d[2] = c[g + 8][k];
    d[3] = c[g + 8][k + 1];
  }
  if (launch.profiler)
    launch.profiler->tensorCoreFlops(2 * 16 * 8 * 16);
  return "";
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
    if (lead.kind == Collective::LdMatrix || lead.kind == Collective::Mma) {
      // .aligned: every lane of a full warp executes the same instruction.
      if (participants.size() != 32)
        return std::string(lead.kind == Collective::Mma ? "mma.sync" : "ldmatrix") + " (" +
               where(lead.file, lead.line) + ") needs all 32 lanes of a full warp";
      std::string error = lead.kind == Collective::Mma
                              ? completeMma(launch, first)
                              : completeLdMatrix(launch, first, lead.file, lead.line);
      if (!error.empty())
        return error;
      for (Thread *t : participants)
        t->state = State::Runnable;
      continue;
    }
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

/// Unmaps the block's guarded shared arrays; the first write found below
/// one's start, or "".
std::string releaseShared(Launch &launch) {
  std::string underrun;
  for (const SharedSlot &slot : launch.slots)
    if (slot.guarded) {
      if (underrun.empty())
        underrun = underrunOf(slot.data);
      unmapGuarded(slot.data);
    }
  launch.slots.clear();
  launch.arenaUsed = 0;
  return underrun;
}

std::string runBlock(Launch &launch) {
  unsigned n = static_cast<unsigned>(launch.threads.size());
  unsigned warps = (n + 31) / 32;
  while (true) {
    for (unsigned w : ordered(warps, launch)) {
      std::string error = runWarp(launch, w);
      if (!error.empty())
        return error;
      if (launch.profiler)
        launch.profiler->flushWarp(w);
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
  self->siteCounts.clear();
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

void traceWmmaTile(const void *tile, size_t ldmBytes, int rows, int rowBytes) {
  Launch *launch = active;
  if (!launch || !self || !launch->profiler || !inShared(*launch, tile))
    return;
  // Row by row in 16-byte chunks (the 32-byte alignment and 16-byte leading
  // dimension checkWmmaMatrix enforces keep every chunk whole), 8 chunks a
  // phase, as 16-byte shared accesses are served.
  std::vector<std::vector<LaneAccess>> phases(1);
  const auto *base = static_cast<const char *>(tile);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < rowBytes; c += 16) {
      if (phases.back().size() == 8)
        phases.emplace_back();
      auto chunk = reinterpret_cast<uintptr_t>(base + r * ldmBytes + c);
      phases.back().push_back({static_cast<unsigned>(phases.back().size()), chunk, 16});
    }
  launch->profiler->sharedRequest(phases);
}

void traceAccess(const void *site, const void *address, unsigned bytes, bool store) {
  Launch *launch = active;
  if (!launch || !self || !launch->profiler)
    return;
  Space space;
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  if (inShared(*launch, address))
    space = Space::Shared;
  else if ((at = launch->profiler->globalAddress(address)) != 0)
    space = Space::Global;
  else
    return; // the thread's stack, the emulator's state
  auto key = reinterpret_cast<uintptr_t>(site);
  uint32_t k = self->siteCounts[key]++;
  launch->profiler->record(self->linear / 32, self->linear % 32, key, k, space, store, at, bytes);
}

void cpAsync(void *shared, const void *global, unsigned bytes, const void *site) {
  char message[160];
  if (!inShared(*active, shared) || (bytes != 4 && bytes != 8 && bytes != 16) ||
      reinterpret_cast<uintptr_t>(shared) % bytes != 0 ||
      reinterpret_cast<uintptr_t>(global) % bytes != 0) {
    std::snprintf(message, sizeof(message),
                  "cp.async of %u bytes needs a shared destination and both addresses aligned "
                  "to %u bytes",
                  bytes, bytes);
    failWith(message);
  }
  traceAccess(site, global, bytes, false);
  traceAccess(site, shared, bytes, true);
  if (active->profiler)
    active->profiler->asyncCopy();
  Thread::AsyncCopy copy{static_cast<char *>(shared), bytes, {}};
  std::memcpy(copy.data, global, bytes);
  self->openGroup.push_back(copy);
}

void cpAsyncCommit() {
  self->committedGroups.push_back(std::move(self->openGroup));
  self->openGroup.clear();
}

void cpAsyncWait(int pendingGroups) {
  auto &groups = self->committedGroups;
  while (groups.size() > static_cast<size_t>(std::max(pendingGroups, 0))) {
    for (const Thread::AsyncCopy &copy : groups.front())
      std::memcpy(copy.shared, copy.data, copy.bytes);
    groups.erase(groups.begin());
  }
}

void ldMatrix(unsigned *registers, int count, bool trans, const void *row, const char *file,
              int line) {
  LdMatrixArgs args{registers, count, trans, row};
  warpCollective(Collective::LdMatrix, 0xffffffffu, reinterpret_cast<uint64_t>(&args), count, 32,
                 file, line);
}

void mmaM16N8K16(float *d, const unsigned *a, const unsigned *b, bool bf16, const char *file,
                 int line) {
  MmaArgs args{d, a, b, bf16};
  warpCollective(Collective::Mma, 0xffffffffu, reinterpret_cast<uint64_t>(&args), 0, 32, file,
                 line);
}

void countTensorCoreFlops(uint64_t flops) {
  if (active && active->profiler)
    active->profiler->tensorCoreFlops(flops);
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
  std::vector<unsigned> blocks = ordered(grid.count(), launch);
  if (options.profile) {
    launch.profiler =
        std::make_unique<AccessProfiler>(*options.profile, (block.count() + 31) / 32);
    unsigned sample = options.profile->sampleBlocks;
    if (sample > 0 && sample < grid.count()) { // evenly spaced
      blocks.clear();
      for (unsigned k = 0; k < sample; ++k)
        blocks.push_back(static_cast<unsigned>(uint64_t(k) * grid.count() / sample));
    }
  }
  active = &launch;
  blockDim = dim3(block.x, block.y, block.z);
  gridDim = dim3(grid.x, grid.y, grid.z);
  std::string error;
  for (unsigned b : blocks) {
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
      t.siteCounts.clear();
      t.openGroup.clear();
      t.committedGroups.clear();
      t.fiber->reset(&threadMain, &t);
    }
    error = runBlock(launch);
    if (launch.profiler)
      launch.profiler->blockDone();
    std::string underrun = releaseShared(launch);
    if (options.checked && launch.dynamic) {
      if (underrun.empty())
        underrun = underrunOf(launch.dynamic);
      unmapGuarded(launch.dynamic);
    }
    launch.dynamic = nullptr;
    if (error.empty())
      error = underrun;
    if (!error.empty()) {
      error = "block (" + std::to_string(blockIdx.x) + ", " + std::to_string(blockIdx.y) + ", " +
              std::to_string(blockIdx.z) + "): " + error;
      break;
    }
  }
  active = nullptr;
  if (launch.profiler && error.empty())
    launch.profiler->finish(grid.count());
  return {error.empty(), error};
}

} // namespace emu
} // namespace kiln

//===----------------------------------------------------------------------===//
// Access tracing: kernels built with -fsanitize-coverage=trace-loads,
// trace-stores call these for every load and store; the caller's address
// names the instruction.
//===----------------------------------------------------------------------===//

#define KILN_EMU_TRACE_HOOKS(bytes, type)                                                      \
  extern "C" __attribute__((visibility("default"))) void __sanitizer_cov_load##bytes(type *p) { \
    kiln::emu::traceAccess(__builtin_return_address(0), p, bytes, false);                      \
  }                                                                                             \
  extern "C" __attribute__((visibility("default"))) void __sanitizer_cov_store##bytes(type *p) {\
    kiln::emu::traceAccess(__builtin_return_address(0), p, bytes, true);                       \
  }
KILN_EMU_TRACE_HOOKS(1, uint8_t)
KILN_EMU_TRACE_HOOKS(2, uint16_t)
KILN_EMU_TRACE_HOOKS(4, uint32_t)
KILN_EMU_TRACE_HOOKS(8, uint64_t)
KILN_EMU_TRACE_HOOKS(16, __int128)
#undef KILN_EMU_TRACE_HOOKS
