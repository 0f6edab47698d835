//===- Fiber.cpp - cooperative user-space threads -------------------------===//

#include "Fiber.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>

// ThreadSanitizer keeps a shadow stack and clock per thread; a stack switch
// it does not know about corrupts both. Under TSan every fiber is announced
// (scripts/test --tsan runs cuda-emu executables); the switches synchronise,
// as the emulated threads of a block take turns on one OS thread.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_EMU_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif
#endif

// AddressSanitizer checks instrumented code (the kernels under
// `kilnc --emu-sanitize`, the emulator's own tests) against the current
// stack's bounds: every switch tells it which stack it moves to, and a
// reused stack's shadow is cleared of frames that never returned.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_EMU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#endif

#if defined(__x86_64__)
// kiln_emu_switch(void **saveSp, void *loadSp): pushes the callee-saved
// registers and the SSE/x87 control words, stores the stack pointer, loads
// the other one and pops the same in reverse. A new fiber's stack is laid
// out as if it had been switched away from at the start of its entry.
asm(R"(
  .text
  .globl kiln_emu_switch
  .type kiln_emu_switch, @function
kiln_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kiln_emu_switch, .-kiln_emu_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");
extern "C" void kiln_emu_switch(void **saveSp, void *loadSp);
#endif

namespace kiln {
namespace emu {

namespace {

size_t pageSize() {
  static size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

/// The fiber the last switch on this OS thread left; AddressSanitizer
/// reports its stack's bounds when the switch finishes.
thread_local Fiber *switchedFrom = nullptr;

#if defined(__x86_64__)
thread_local void (*pendingEntry)(void *) = nullptr;
thread_local void *pendingArg = nullptr;

/// The first code a new fiber runs: calls the entry it was reset with.
[[noreturn]] void trampoline() {
  Fiber::finishSwitch(nullptr);
  pendingEntry(pendingArg);
  std::fprintf(stderr, "kiln cuda-emu: a fiber entry returned\n");
  std::abort();
}
#else
void ucontextEntry(unsigned hi, unsigned lo, unsigned argHi, unsigned argLo) {
  Fiber::finishSwitch(nullptr);
  auto entry = reinterpret_cast<void (*)(void *)>((uintptr_t(hi) << 32) | lo);
  entry(reinterpret_cast<void *>((uintptr_t(argHi) << 32) | argLo));
  std::abort();
}
#endif

} // namespace

std::unique_ptr<Fiber> Fiber::create(size_t stackBytes) {
  size_t page = pageSize();
  std::unique_ptr<Fiber> fiber(new Fiber());
  fiber->stackBytes_ = (stackBytes + page - 1) / page * page;
  fiber->mappedBytes_ = fiber->stackBytes_ + page;
  void *memory = mmap(nullptr, fiber->mappedBytes_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    return nullptr;
  fiber->stack_ = memory;
  // Stacks grow down into the guard page; a stack without one is refused.
  if (mprotect(memory, page, PROT_NONE) != 0)
    return nullptr;
  fiber->stackBottom_ = static_cast<char *>(memory) + page;
#ifdef KILN_EMU_TSAN
  fiber->tsanFiber_ = __tsan_create_fiber(0);
#endif
  return fiber;
}

Fiber::~Fiber() {
  if (stack_)
    munmap(stack_, mappedBytes_);
#ifdef KILN_EMU_TSAN
  if (stack_ && tsanFiber_)
    __tsan_destroy_fiber(tsanFiber_);
#endif
}

Fiber &Fiber::current() {
  static thread_local Fiber self;
#ifdef KILN_EMU_TSAN
  if (!self.tsanFiber_)
    self.tsanFiber_ = __tsan_get_current_fiber();
#endif
  return self;
}

void Fiber::startSwitch(Fiber &from, Fiber &to, void **fakeStack) {
  switchedFrom = &from;
#ifdef KILN_EMU_ASAN
  __sanitizer_start_switch_fiber(fakeStack, to.stackBottom_, to.stackBytes_);
#else
  (void)to;
  (void)fakeStack;
#endif
}

void Fiber::finishSwitch(void *fakeStack) {
#ifdef KILN_EMU_ASAN
  const void *bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fakeStack, &bottom, &size);
  // The OS thread's own stack (the scheduler's) is learnt on the first
  // switch away from it.
  if (switchedFrom && !switchedFrom->stackBottom_) {
    switchedFrom->stackBottom_ = bottom;
    switchedFrom->stackBytes_ = size;
  }
#else
  (void)fakeStack;
#endif
}

void Fiber::clearStackShadow() {
#ifdef KILN_EMU_ASAN
  // A thread that failed or deadlocked left its frames' redzones poisoned.
  __asan_unpoison_memory_region(stackBottom_, stackBytes_);
#endif
}

#if defined(__x86_64__)
void Fiber::reset(void (*entry)(void *), void *arg) {
  clearStackShadow();
  auto top = reinterpret_cast<uintptr_t>(stack_) + mappedBytes_;
  top &= ~uintptr_t(15);
  auto *slot = reinterpret_cast<uint64_t *>(top);
  *--slot = 0;                                           // trampoline's return address
  *--slot = reinterpret_cast<uint64_t>(&trampoline);     // popped by `ret`
  for (int k = 0; k < 6; ++k)                            // rbp rbx r12 r13 r14 r15
    *--slot = 0;
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  *--slot = uint64_t(mxcsr) | (uint64_t(fpucw) << 32);
  sp_ = slot;
  // Handed to the trampoline by the switch that first resumes this fiber.
  entry_ = entry;
  arg_ = arg;
}

void Fiber::switchTo(Fiber &from, Fiber &to) {
  if (to.entry_) {
    pendingEntry = to.entry_;
    pendingArg = to.arg_;
    to.entry_ = nullptr;
  }
#ifdef KILN_EMU_TSAN
  __tsan_switch_to_fiber(to.tsanFiber_, 0);
#endif
  void *fakeStack = nullptr;
  startSwitch(from, to, &fakeStack);
  kiln_emu_switch(&from.sp_, to.sp_);
  finishSwitch(fakeStack);
}
#else
void Fiber::reset(void (*entry)(void *), void *arg) {
  clearStackShadow();
  getcontext(&context_);
  context_.uc_stack.ss_sp = static_cast<char *>(stack_) + pageSize();
  context_.uc_stack.ss_size = stackBytes_;
  context_.uc_link = nullptr;
  auto e = reinterpret_cast<uintptr_t>(entry), a = reinterpret_cast<uintptr_t>(arg);
  makecontext(&context_, reinterpret_cast<void (*)()>(&ucontextEntry), 4, unsigned(e >> 32),
              unsigned(e), unsigned(a >> 32), unsigned(a));
}

void Fiber::switchTo(Fiber &from, Fiber &to) {
#ifdef KILN_EMU_TSAN
  __tsan_switch_to_fiber(to.tsanFiber_, 0);
#endif
  void *fakeStack = nullptr;
  startSwitch(from, to, &fakeStack);
  swapcontext(&from.context_, &to.context_);
  finishSwitch(fakeStack);
}
#endif

} // namespace emu
} // namespace kiln
