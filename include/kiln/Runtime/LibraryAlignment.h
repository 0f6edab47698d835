//===- LibraryAlignment.h - what cuBLASLt and cuDNN buffers get -*- C++ -*-===//
//
// cudaMalloc returns 256-byte aligned memory, and cuBLASLt and cuDNN pick
// their fastest algorithms only for operands that aligned (they are told
// the real alignment, up to this). The memory plan places every buffer a
// library call reads or writes, and every workspace, on such a boundary;
// the runtime reports alignments up to it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIBRARYALIGNMENT_H
#define KILN_RUNTIME_LIBRARYALIGNMENT_H

#include <cstdint>

namespace kiln {
namespace rt {

constexpr uint32_t kLibraryAlignment = 256;

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIBRARYALIGNMENT_H
