//===- CpuObject.h - an x86-64 ELF relocatable object, linked in memory -*- C++ -*-===//
//
// The CPU kernels arrive as the relocatable object LLVM emitted at compile
// time (kiln/CodeGen/CpuCode.h). Rather than write it to a file for the
// system's dynamic loader, the runtime links it itself, as IREE's
// llvm-cpu runtime does: copy its allocated sections into fresh pages,
// apply its relocations against its own symbols, make the code executable
// and the rest read-only. The object may reference no outside symbol (the
// compiler emits none and checks); every table is bounds-checked.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CPUOBJECT_H
#define KILN_LIB_RUNTIME_CPUOBJECT_H

#include "kiln/Runtime/Runtime.h"

#include <map>
#include <memory>
#include <string>

namespace kiln {
namespace rt {

class CpuObject {
public:
  /// Links `size` bytes of an ELF64 x86-64 relocatable object into memory;
  /// an error says what in the object is malformed or unsupported.
  static Result<std::unique_ptr<CpuObject>> link(const uint8_t *data, size_t size);
  ~CpuObject();
  CpuObject(const CpuObject &) = delete;
  CpuObject &operator=(const CpuObject &) = delete;

  /// The address of a defined global function, or null.
  void *symbol(const std::string &name) const;

private:
  CpuObject() = default;
  void *pages_ = nullptr;
  size_t bytes_ = 0;
  std::map<std::string, void *> functions_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CPUOBJECT_H
