//===- Npz.cpp - NumPy .npz archives --------------------------------------===//
//
// The ZIP subset np.savez writes: local file headers followed by their data
// (method 0, stored), a central directory and its end record. Sizes may be
// in a ZIP64 extra field (np.savez asks for one on every entry).
//
//===----------------------------------------------------------------------===//

#include "kiln/Support/Npz.h"

#include "kiln/Support/FileBytes.h"

#include <array>
#include <cstring>
#include <fstream>

namespace kiln {
namespace npz {

namespace {

uint32_t crc32(const std::string &bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : bytes)
    c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::string &out, uint32_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string &out, uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}
uint64_t get(const std::string &in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k)
    v = v << 8 | static_cast<unsigned char>(in[at + k]);
  return v;
}

} // namespace

bool write(const std::string &path, const std::vector<std::pair<std::string, npy::Array>> &arrays,
           std::string &error) {
  std::string archive, directory;
  if (arrays.size() > 0xFFFF) {
    error = path + ": more than 65535 arrays, which a ZIP without ZIP64 cannot list";
    return false;
  }
  for (const auto &[name, array] : arrays) {
    std::string file = name + ".npy";
    std::string data = npy::encode(array.dtype, array.shape, array.data.data());
    // Every offset and size, the central directory's included, must fit 32
    // bits (kiln writes no ZIP64 fields).
    uint64_t headers = 2 * (46 + file.size()) * (arrays.size() + 1);
    if (file.size() > 0xFFFF || archive.size() + data.size() + headers >= 0xFFFFFFFFu) {
      error = path + ": '" + name + "' makes the archive larger than a ZIP without ZIP64 holds "
              "(4 GiB)";
      return false;
    }
    uint32_t offset = static_cast<uint32_t>(archive.size()), crc = crc32(data);
    auto header = [&](std::string &out, bool central) {
      put32(out, central ? 0x02014b50u : 0x04034b50u);
      if (central)
        put16(out, 20); // made by
      put16(out, 20);   // needed to extract
      put16(out, 0);    // flags
      put16(out, 0);    // stored
      put16(out, 0);    // time
      put16(out, 0x21); // date: 1980-01-01
      put32(out, crc);
      put32(out, static_cast<uint32_t>(data.size()));
      put32(out, static_cast<uint32_t>(data.size()));
      put16(out, static_cast<uint32_t>(file.size()));
      put16(out, 0); // extra
      if (central) {
        put16(out, 0); // comment
        put16(out, 0); // disk
        put16(out, 0); // internal attributes
        put32(out, 0); // external attributes
        put32(out, offset);
      }
      out += file;
    };
    header(archive, false);
    archive += data;
    header(directory, true);
  }
  uint32_t start = static_cast<uint32_t>(archive.size());
  archive += directory;
  put32(archive, 0x06054b50u);
  put16(archive, 0);
  put16(archive, 0);
  put16(archive, static_cast<uint32_t>(arrays.size()));
  put16(archive, static_cast<uint32_t>(arrays.size()));
  put32(archive, static_cast<uint32_t>(directory.size()));
  put32(archive, start);
  put16(archive, 0);
  std::ofstream out(path, std::ios::binary);
  out.write(archive.data(), static_cast<std::streamsize>(archive.size()));
  out.close();
  if (!out) {
    error = path + ": cannot write";
    return false;
  }
  return true;
}

bool read(const std::string &path, std::vector<std::pair<std::string, npy::Array>> &arrays,
          std::string &error) {
  std::string bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    return false;
  };
  size_t at = 0;
  while (at + 4 <= bytes.size() && get(bytes, at, 4) == 0x04034b50u) {
    if (at + 30 > bytes.size())
      return fail("an entry's header is cut short");
    uint32_t flags = get(bytes, at + 6, 2), method = get(bytes, at + 8, 2);
    uint64_t size = get(bytes, at + 18, 4), unpacked = get(bytes, at + 22, 4);
    size_t nameLength = get(bytes, at + 26, 2), extraLength = get(bytes, at + 28, 2);
    size_t data = at + 30 + nameLength + extraLength;
    if (data > bytes.size())
      return fail("an entry's name or extra field is cut short");
    std::string name = bytes.substr(at + 30, nameLength);
    if (method != 0)
      return fail("'" + name + "' is compressed (np.savez_compressed); kiln reads the stored "
                  "archives np.savez writes");
    if (flags & 0x8)
      return fail("'" + name + "' has its sizes after its data, which kiln does not read");
    // ZIP64: the sizes in the extra field (id 1), uncompressed first.
    for (size_t e = at + 30 + nameLength; e + 4 <= data;) {
      size_t id = get(bytes, e, 2), length = get(bytes, e + 2, 2);
      if (e + 4 + length > data)
        return fail("'" + name + "' has a malformed extra field");
      if (id == 1 && length >= 16) {
        unpacked = get(bytes, e + 4, 8);
        size = get(bytes, e + 12, 8);
      }
      e += 4 + length;
    }
    if (size != unpacked || size > bytes.size() - data)
      return fail("'" + name + "' is cut short or its sizes disagree");
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      return fail("'" + name + "' is not a .npy file");
    npy::Array array;
    std::string content = bytes.substr(data, size);
    if (crc32(content) != get(bytes, at + 14, 4))
      return fail("'" + name + "' fails its checksum");
    if (!npy::parse(content, path + ":" + name, array, error))
      return false;
    arrays.push_back({name.substr(0, name.size() - 4), std::move(array)});
    at = data + size;
  }
  if (arrays.empty())
    return fail("not an .npz archive (no stored .npy entries)");
  return true;
}

} // namespace npz
} // namespace kiln
