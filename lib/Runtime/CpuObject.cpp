//===- CpuObject.cpp - linking an ELF relocatable object in memory --------===//

#include "CpuObject.h"

#include "ElfCheck.h"

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace kiln {
namespace rt {

namespace {

template <typename T> T read(const uint8_t *data, uint64_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T)); // no alignment assumed
  return value;
}

uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

} // namespace

Result<std::unique_ptr<CpuObject>> CpuObject::link(const uint8_t *data, size_t size) {
  auto fail = [](const std::string &why) {
    return Status::error("the CPU code object " + why);
  };
  if (std::string problem = checkElfImage(data, size); !problem.empty())
    return fail(problem);
  auto header = read<Elf64_Ehdr>(data, 0);
  if (header.e_type != ET_REL || header.e_machine != EM_X86_64)
    return fail("is not an x86-64 relocatable object");
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t k = 0; k < sections.size(); ++k)
    sections[k] = read<Elf64_Shdr>(data, header.e_shoff + k * sizeof(Elf64_Shdr));

  // Layout: code first, then the rest from a page boundary, so each part
  // gets its own protection.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<uint64_t> placedAt(sections.size(), UINT64_MAX);
  uint64_t end = 0;
  bool writable = false;
  uint64_t codeEnd = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1)
      end = codeEnd = alignTo(end, page);
    for (size_t k = 0; k < sections.size(); ++k) {
      const Elf64_Shdr &s = sections[k];
      bool code = s.sh_flags & SHF_EXECINSTR;
      if (!(s.sh_flags & SHF_ALLOC) || s.sh_size == 0 || code != (pass == 0))
        continue;
      uint64_t alignment = s.sh_addralign ? s.sh_addralign : 1;
      if ((alignment & (alignment - 1)) || alignment > page || s.sh_size > (uint64_t(1) << 30))
        return fail("has section #" + std::to_string(k) + " with an unsupported size or alignment");
      writable |= (s.sh_flags & SHF_WRITE) != 0;
      end = alignTo(end, alignment);
      placedAt[k] = end;
      end += s.sh_size;
    }
  }
  uint64_t bytes = alignTo(end, page);
  if (codeEnd == 0)
    return fail("has no code");

  std::unique_ptr<CpuObject> object(new CpuObject());
  void *pages = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED)
    return Status::error("cannot map " + std::to_string(bytes) + " bytes for the CPU code");
  object->pages_ = pages;
  object->bytes_ = bytes;
  auto *base = static_cast<uint8_t *>(pages);
  for (size_t k = 0; k < sections.size(); ++k)
    if (placedAt[k] != UINT64_MAX && sections[k].sh_type != SHT_NOBITS)
      std::memcpy(base + placedAt[k], data + sections[k].sh_offset, sections[k].sh_size);

  // The symbol table: one, with its names.
  size_t symtab = sections.size();
  for (size_t k = 0; k < sections.size(); ++k)
    if (sections[k].sh_type == SHT_SYMTAB) {
      if (symtab != sections.size())
        return fail("has two symbol tables");
      symtab = k;
    }
  if (symtab == sections.size())
    return fail("has no symbol table");
  const Elf64_Shdr &symbols = sections[symtab];
  if (symbols.sh_entsize != sizeof(Elf64_Sym) || symbols.sh_link >= sections.size() ||
      sections[symbols.sh_link].sh_type != SHT_STRTAB)
    return fail("has a malformed symbol table");
  const Elf64_Shdr &names = sections[symbols.sh_link];
  size_t symbolCount = symbols.sh_size / sizeof(Elf64_Sym);
  auto nameOf = [&](uint32_t offset) -> std::string {
    if (offset >= names.sh_size)
      return "";
    const char *start = reinterpret_cast<const char *>(data + names.sh_offset + offset);
    return std::string(start, strnlen(start, names.sh_size - offset));
  };
  // Each symbol's address; an undefined one is an error wherever used.
  std::vector<uint64_t> address(symbolCount, 0);
  std::vector<bool> defined(symbolCount, false);
  for (size_t k = 0; k < symbolCount; ++k) {
    auto sym = read<Elf64_Sym>(data, symbols.sh_offset + k * sizeof(Elf64_Sym));
    if (sym.st_shndx == SHN_UNDEF)
      continue;
    if (sym.st_shndx == SHN_ABS) {
      address[k] = sym.st_value;
      defined[k] = true;
      continue;
    }
    if (sym.st_shndx >= sections.size() || placedAt[sym.st_shndx] == UINT64_MAX ||
        sym.st_value > sections[sym.st_shndx].sh_size)
      continue; // in a section not loaded (debug info): unusable, as undefined
    address[k] = reinterpret_cast<uint64_t>(base + placedAt[sym.st_shndx] + sym.st_value);
    defined[k] = true;
    if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && ELF64_ST_BIND(sym.st_info) == STB_GLOBAL)
      object->functions_[nameOf(sym.st_name)] = reinterpret_cast<void *>(address[k]);
  }

  // Relocations into loaded sections.
  for (size_t k = 0; k < sections.size(); ++k) {
    const Elf64_Shdr &rela = sections[k];
    if (rela.sh_type == SHT_REL)
      return fail("has REL relocations, which x86-64 objects do not use");
    if (rela.sh_type != SHT_RELA || rela.sh_info >= sections.size() ||
        placedAt[rela.sh_info] == UINT64_MAX)
      continue;
    if (rela.sh_entsize != sizeof(Elf64_Rela) || rela.sh_link != symtab)
      return fail("has a malformed relocation section #" + std::to_string(k));
    const Elf64_Shdr &target = sections[rela.sh_info];
    for (size_t r = 0; r < rela.sh_size / sizeof(Elf64_Rela); ++r) {
      auto entry = read<Elf64_Rela>(data, rela.sh_offset + r * sizeof(Elf64_Rela));
      uint32_t type = ELF64_R_TYPE(entry.r_info);
      uint64_t index = ELF64_R_SYM(entry.r_info);
      if (type == R_X86_64_NONE)
        continue;
      bool wide = type == R_X86_64_64 || type == R_X86_64_PC64;
      uint64_t width = wide ? 8 : 4;
      if (entry.r_offset > target.sh_size || target.sh_size - entry.r_offset < width)
        return fail("relocates past the end of section #" + std::to_string(rela.sh_info));
      if (index >= symbolCount || !defined[index]) {
        std::string name = index < symbolCount
                               ? nameOf(read<Elf64_Sym>(data, symbols.sh_offset +
                                                                  index * sizeof(Elf64_Sym))
                                            .st_name)
                               : "";
        return fail("needs the symbol '" + name + "', which the runtime does not provide");
      }
      uint8_t *place = base + placedAt[rela.sh_info] + entry.r_offset;
      uint64_t s = address[index] + static_cast<uint64_t>(entry.r_addend);
      uint64_t p = reinterpret_cast<uint64_t>(place);
      switch (type) {
      case R_X86_64_64: std::memcpy(place, &s, 8); break;
      case R_X86_64_PC64: { uint64_t v = s - p; std::memcpy(place, &v, 8); break; }
      case R_X86_64_PC32:
      case R_X86_64_PLT32: {
        int64_t v = static_cast<int64_t>(s - p);
        if (v < INT32_MIN || v > INT32_MAX)
          return fail("has a PC-relative relocation out of range");
        int32_t v32 = static_cast<int32_t>(v);
        std::memcpy(place, &v32, 4);
        break;
      }
      default:
        return fail("has relocation type " + std::to_string(type) + ", which kiln does not link");
      }
    }
  }
  int dataProtection = PROT_READ | (writable ? PROT_WRITE : 0);
  if (mprotect(base, codeEnd, PROT_READ | PROT_EXEC) != 0 ||
      (bytes > codeEnd && mprotect(base + codeEnd, bytes - codeEnd, dataProtection) != 0))
    return Status::error("cannot make the CPU code executable (mprotect refused)");
  return object;
}

CpuObject::~CpuObject() {
  if (pages_)
    munmap(pages_, bytes_);
}

void *CpuObject::symbol(const std::string &name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

} // namespace rt
} // namespace kiln
