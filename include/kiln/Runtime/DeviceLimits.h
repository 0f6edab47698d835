//===- DeviceLimits.h - shared-memory limits of the GPUs kiln targets -*- C++ -*-===//
//
// One place for the per-block shared-memory limits that the code generator
// sizes kernels by, the loader validates executables against, and the CUDA
// device opts kernels into (header-only: the compiler and the runtime both
// include it).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_DEVICELIMITS_H
#define KILN_RUNTIME_DEVICELIMITS_H

namespace kiln {
namespace rt {

/// Shared memory a block gets without opting in: static arrays, and dynamic
/// memory up to this without cudaFuncAttributeMaxDynamicSharedMemorySize.
constexpr unsigned kDefaultSharedBytes = 48 * 1024;
/// The most a block may opt into on sm_90 (227 KiB).
constexpr unsigned kMaxSharedBytesSm90 = 232448;
/// The most on every sm_8x GPU: 99 KiB on sm_86 and sm_89 (sm_80 has 163).
constexpr unsigned kMaxSharedBytesSm8x = 101376;

/// The most shared memory a block may have on every GPU of compute
/// capability `minArch` (e.g. 80) or newer.
constexpr unsigned maxSharedBytes(unsigned minArch) {
  return minArch >= 90 ? kMaxSharedBytesSm90
                       : minArch >= 80 ? kMaxSharedBytesSm8x : kDefaultSharedBytes;
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_DEVICELIMITS_H
