//===- Fiber.h - cooperative user-space threads -----------------*- C++ -*-===//
//
// One fiber per emulated CUDA thread. Switching is a hand-written register
// swap on x86-64 (about 30 ns; ucontext's swapcontext makes a system call
// per switch and was measured 10x slower), ucontext elsewhere. Stacks are
// mmap'd with an inaccessible guard page below them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDAEMU_FIBER_H
#define KILN_LIB_RUNTIME_CUDAEMU_FIBER_H

#include <cstddef>
#include <memory>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace kiln {
namespace emu {

class Fiber {
public:
  /// A fiber with a `stackBytes` stack (and a guard page below it), or null
  /// when the stack cannot be mapped: the address space or the process's
  /// map count is spent (a fiber takes about two maps, stack and guard page:
  /// 256 streams each launching 256 threads need about 131 072, past Linux's
  /// default limit of 65 530).
  static std::unique_ptr<Fiber> create(size_t stackBytes);
  ~Fiber();
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  /// Prepares the fiber to run `entry(arg)` from the top of its stack the
  /// next time it is resumed. `entry` must never return: it ends by
  /// switching away for good.
  void reset(void (*entry)(void *), void *arg);

  /// Saves the current context in `from` and resumes `to`.
  static void switchTo(Fiber &from, Fiber &to);

  /// A fiber object for the OS thread's own stack (the scheduler).
  static Fiber &current();

  /// Completes a switch for AddressSanitizer on the stack just entered;
  /// called by switchTo and by a new fiber's first code. No-op without ASan.
  static void finishSwitch(void *fakeStack);

private:
  Fiber() = default;
  static void startSwitch(Fiber &from, Fiber &to, void **fakeStack);
  void clearStackShadow();
  /// ThreadSanitizer's own record of this stack (see Fiber.cpp); null
  /// without TSan.
  [[maybe_unused]] void *tsanFiber_ = nullptr;
  void *stack_ = nullptr;
  /// The usable stack (above the guard page); for the OS thread's own
  /// fiber, what AddressSanitizer reports (see finishSwitch).
  const void *stackBottom_ = nullptr;
  size_t stackBytes_ = 0, mappedBytes_ = 0;
#if defined(__x86_64__)
  void *sp_ = nullptr;
  void (*entry_)(void *) = nullptr; ///< set by reset, consumed by the first switch
  void *arg_ = nullptr;
#else
  ucontext_t context_;
#endif
};

} // namespace emu
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDAEMU_FIBER_H
