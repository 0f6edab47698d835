//===- ElfCheck.h - an ELF image's tables lie inside it ---------*- C++ -*-===//
//
// Device code in an executable is an ELF file (a cubin for the CUDA driver,
// a shared object for cuda-emu's dlopen), and neither reader is told its
// size: the driver takes a pointer, dlopen maps a file of exactly the blob's
// size, where a table past the end is a SIGBUS. So the loader checks, before
// either sees it, that the header, the program and section header tables and
// every section and segment with file contents lie inside the blob. What the
// code does is not checked (docs/reliability.md: device code is trusted).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_ELFCHECK_H
#define KILN_LIB_RUNTIME_ELFCHECK_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {
namespace rt {

/// Why `data` is not a whole little-endian ELF64 image, or "".
std::string checkElfImage(const uint8_t *data, size_t size);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_ELFCHECK_H
