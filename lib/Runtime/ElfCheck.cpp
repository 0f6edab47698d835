//===- ElfCheck.cpp - an ELF image's tables lie inside it -----------------===//

#include "ElfCheck.h"

#include <cstring>
#include <elf.h>

namespace kiln {
namespace rt {

namespace {

/// Whether [offset, offset + count * entry) lies inside `size` bytes.
bool inside(uint64_t offset, uint64_t count, uint64_t entry, size_t size) {
  uint64_t bytes;
  return !__builtin_mul_overflow(count, entry, &bytes) && offset <= size &&
         bytes <= size - offset;
}

template <typename T> T read(const uint8_t *data, uint64_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T)); // ELF tables need no alignment here
  return value;
}

} // namespace

std::string checkElfImage(const uint8_t *data, size_t size) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0)
    return "is not an ELF image";
  auto header = read<Elf64_Ehdr>(data, 0);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return "is not a little-endian 64-bit ELF image";
  // Section headers first: linkers put them at the end, so a blob cut
  // short reads the same whatever the linker.
  if (header.e_shnum == 0 && header.e_shoff != 0)
    return "uses extended section numbering, which kiln never writes";
  if (header.e_shnum > 0) {
    if (header.e_shentsize != sizeof(Elf64_Shdr) ||
        !inside(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), size))
      return "has a section header table past its end";
    if (header.e_shstrndx >= header.e_shnum)
      return "names its sections with a section it does not have";
    for (uint16_t k = 0; k < header.e_shnum; ++k) {
      auto section = read<Elf64_Shdr>(data, header.e_shoff + k * sizeof(Elf64_Shdr));
      if (section.sh_type != SHT_NOBITS && !inside(section.sh_offset, section.sh_size, 1, size))
        return "has section #" + std::to_string(k) + " past its end";
    }
  }
  if (header.e_phnum > 0) {
    if (header.e_phentsize != sizeof(Elf64_Phdr) ||
        !inside(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size))
      return "has a program header table past its end";
    for (uint16_t k = 0; k < header.e_phnum; ++k) {
      auto segment = read<Elf64_Phdr>(data, header.e_phoff + k * sizeof(Elf64_Phdr));
      if (!inside(segment.p_offset, segment.p_filesz, 1, size))
        return "has segment #" + std::to_string(k) + " past its end";
    }
  }
  return "";
}

} // namespace rt
} // namespace kiln
