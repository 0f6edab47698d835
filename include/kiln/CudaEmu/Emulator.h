//===- Emulator.h - running CUDA kernels on the CPU -------------*- C++ -*-===//
//
// cuda-emu runs the kernel text kiln generates for the GPU on the CPU: the
// text is compiled by the host compiler with cuda_emu.h force-included, and
// every CUDA thread of a block becomes a fiber. Barriers and warp
// collectives switch fibers, so they behave as on the GPU; the scheduler
// turns the usual kernel bugs into errors instead of hangs or silent wrong
// answers:
//   - a barrier that not every thread of the block reaches (divergence, an
//     early return) is reported with the source lines involved;
//   - shared memory is poisoned (all bytes 0xFF: NaN for floats) before each
//     block, and warps run eagerly up to the next __syncthreads in the
//     chosen order (forward, reverse or shuffled), so a missing barrier
//     reads poison or stale data in at least one order;
//   - in checked mode, shared arrays and buffers from allocateGuarded() end
//     at a page boundary followed by an inaccessible page, so the first
//     out-of-range access traps with a message.
//
// With LaunchOptions::profile, a launch also counts what it asks of the
// memory system and the Tensor Cores (Profile.h, docs/cuda-emu.md).
//
// ../shared/notes/cuda-emulation.md records the facts this builds on.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDAEMU_EMULATOR_H
#define KILN_CUDAEMU_EMULATOR_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "kiln/CudaEmu/Profile.h"

namespace kiln {
namespace emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  unsigned count() const { return x * y * z; }
};

/// In which order warps (and the lanes within a warp) run between barriers.
enum class Order { Forward, Reverse, Shuffled };

struct LaunchOptions {
  Order order = Order::Forward;
  uint64_t seed = 1; ///< for Order::Shuffled
  /// Fill shared memory with 0xFF bytes before each block.
  bool poisonShared = true;
  /// Shared arrays in their own pages, followed by a guard page; the bytes
  /// before each array's start are filled, and a write there fails the
  /// launch.
  bool checked = false;
  size_t stackBytes = 64 * 1024;
  /// When set, the launch counts its memory requests and Tensor Core work
  /// into it (Profile.h), and emulates only its sampleBlocks if it has any.
  Profile *profile = nullptr;
};

struct LaunchResult {
  bool ok = true;
  std::string error; ///< what went wrong, with source lines, when !ok
};

/// Runs `thread` once per CUDA thread of a `grid` x `block` launch (one OS
/// thread; blocks one after another). `dynamicShared` bytes back
/// KILN_DYNAMIC_SHARED.
LaunchResult launch(Dim3 grid, Dim3 block, size_t dynamicShared, const LaunchOptions &options,
                    const std::function<void()> &thread);

/// Launches a kernel function with arguments, as kernel<<<grid, block>>>.
template <typename... Params, typename... Args>
LaunchResult launchKernel(void (*kernel)(Params...), Dim3 grid, Dim3 block, size_t dynamicShared,
                          const LaunchOptions &options, Args... args) {
  return launch(grid, block, dynamicShared, options,
                [&] { kernel(static_cast<Params>(args)...); });
}

/// `bytes` of memory that end at a page boundary followed by an
/// inaccessible page (and start after one), so an access past the end traps
/// with a message naming the buffer. Free with freeGuarded.
void *allocateGuarded(size_t bytes, const char *name);
void freeGuarded(void *memory);

} // namespace emu
} // namespace kiln

#endif // KILN_CUDAEMU_EMULATOR_H
