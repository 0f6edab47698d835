//===- Npy.cpp - NumPy .npy tensor files ----------------------------------===//

#include "kiln/Support/Npy.h"
#include "kiln/Support/FileBytes.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln {
namespace npy {

namespace {

const char kMagic[] = "\x93NUMPY";

struct DescrName {
  const char *descr;
  ref::DType dtype;
};
const DescrName kDescrs[] = {
    {"<f4", ref::DType::F32}, {"<f2", ref::DType::F16}, {"<f8", ref::DType::F64},
    {"<i8", ref::DType::I64}, {"<i4", ref::DType::I32}, {"|i1", ref::DType::I8},
    {"|b1", ref::DType::I1},  {"<i2", ref::DType::I16}, {"|u1", ref::DType::U8},
    {"<u2", ref::DType::U16}, {"<u4", ref::DType::U32}, {"<u8", ref::DType::U64}};

/// The value after 'key': in the header dict, up to the next top-level ','.
bool field(const std::string &header, const std::string &key, std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  size_t colon = header.find(':', at);
  if (colon == std::string::npos)
    return false;
  size_t begin = colon + 1, end = begin;
  int depth = 0;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  value = header.substr(begin, end - begin);
  size_t first = value.find_first_not_of(" "), last = value.find_last_not_of(" ");
  value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  return true;
}

} // namespace

bool read(const std::string &path, Array &array, std::string &error) {
  std::string bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  return parse(bytes, path, array, error);
}

bool parse(const std::string &bytes, const std::string &path, Array &array, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = path + ": not a valid .npy file: " + why;
    return false;
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return fail("bad magic");
  uint8_t major = bytes[6];
  size_t headerLen, start;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated header");
    headerLen = 0;
    for (int k = 0; k < 4; ++k)
      headerLen |= size_t(uint8_t(bytes[8 + k])) << (8 * k);
    start = 12;
  } else {
    return fail("unsupported version " + std::to_string(major));
  }
  if (headerLen > bytes.size() - start)
    return fail("truncated header");
  std::string header = bytes.substr(start, headerLen);
  std::string descr, fortran, shape;
  if (!field(header, "descr", descr) || !field(header, "fortran_order", fortran) ||
      !field(header, "shape", shape))
    return fail("header lacks descr, fortran_order or shape");
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
    return fail("bad descr");
  descr = descr.substr(1, descr.size() - 2);
  bool known = false;
  for (const DescrName &d : kDescrs)
    if (descr == d.descr || (descr == "<b1" && d.dtype == ref::DType::I1) ||
        (descr == "<i1" && d.dtype == ref::DType::I8) ||
        (descr == "<u1" && d.dtype == ref::DType::U8)) {
      array.dtype = d.dtype;
      known = true;
    }
  if (!known)
    return fail("unsupported dtype '" + descr + "' (kiln reads f4, f2, f8, i8, i4, i2, i1, "
                "b1, u8, u4, u2 and u1; bfloat16 as raw u2)");
  array.rawBFloat16 = false;
  if (fortran != "False")
    return fail("Fortran-ordered arrays are not supported");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return fail("bad shape");
  array.shape.clear();
  std::stringstream dims(shape.substr(1, shape.size() - 2));
  std::string dim;
  int64_t elements = 1;
  while (std::getline(dims, dim, ',')) {
    size_t b = dim.find_first_not_of(" "), e = dim.find_last_not_of(" ");
    if (b == std::string::npos)
      continue;
    dim = dim.substr(b, e - b + 1);
    char *endp = nullptr;
    long long d = std::strtoll(dim.c_str(), &endp, 10);
    if (*endp != '\0' || d < 0 || __builtin_mul_overflow(elements, d, &elements) ||
        elements > ref::kMaxElements)
      return fail("bad dimension '" + dim + "'");
    array.shape.push_back(d);
  }
  if (!ref::withinElementLimit(array.shape)) // a zero dimension hides the rest
    return fail("bad shape: more than 2^40 elements beside a zero dimension");
  uint64_t expected = uint64_t(elements) * ref::byteWidth(array.dtype);
  uint64_t available = bytes.size() - start - headerLen;
  if (available != expected)
    return fail("holds " + std::to_string(available) + " data bytes; its header promises " +
                std::to_string(expected));
  array.data.assign(bytes.begin() + start + headerLen, bytes.end());
  return true;
}

std::string encode(ref::DType dtype, const ref::Shape &shape, const uint8_t *data) {
  int64_t n = ref::numElements(shape);
  std::vector<uint8_t> converted;
  const char *descr = nullptr;
  for (const DescrName &d : kDescrs)
    if (d.dtype == dtype)
      descr = d.descr;
  if (dtype == ref::DType::BF16) {
    converted.resize(n * 4);
    for (int64_t k = 0; k < n; ++k) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * k, 2);
      float f = ref::bfloat16ToFloat(bits);
      std::memcpy(converted.data() + 4 * k, &f, 4);
    }
    data = converted.data();
    descr = "<f4";
    dtype = ref::DType::F32;
  }
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.erase(dims.size() - 2); // "(2, 3)", but "(5,)" for one dimension
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad so the data starts on a 64-byte boundary; the header ends in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, 6);
  bytes += '\x01';
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(data), n * ref::byteWidth(dtype));
  return bytes;
}

bool write(const std::string &path, ref::DType dtype, const ref::Shape &shape,
           const uint8_t *data, std::string &error) {
  std::string bytes = encode(dtype, shape, data);
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

} // namespace npy
} // namespace kiln
