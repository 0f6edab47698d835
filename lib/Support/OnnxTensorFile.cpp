//===- OnnxTensorFile.cpp - ONNX TensorProto .pb files --------------------===//

#include "kiln/Support/OnnxTensorFile.h"
#include "kiln/Support/FileBytes.h"

#include <cstring>
#include <fstream>

namespace kiln {
namespace onnxpb {

namespace {

// TensorProto.DataType values.
enum : int64_t {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13,
  kBFloat16 = 16
};

/// A bounds-checked reader of protobuf wire format.
struct Reader {
  const uint8_t *p, *end;
  bool ok = true;

  bool done() const { return p >= end || !ok; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        ok = false;
        return 0;
      }
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    ok = false;
    return 0;
  }
  const uint8_t *bytes(uint64_t n) {
    if (n > static_cast<uint64_t>(end - p)) {
      ok = false;
      return nullptr;
    }
    const uint8_t *at = p;
    p += n;
    return at;
  }
  void skip(int wire) {
    switch (wire) {
    case 0: varint(); break;
    case 1: bytes(8); break;
    case 2: bytes(varint()); break;
    case 5: bytes(4); break;
    default: ok = false;
    }
  }
};

struct Proto {
  std::vector<int64_t> dims;
  int64_t dataType = 0;
  std::string name, raw;
  bool hasRaw = false;
  std::vector<float> floats;
  std::vector<int64_t> ints; // int32_data, int64_data and uint64_data (as int64)
  std::vector<double> doubles;
  bool external = false;
};

/// Reads a repeated scalar field in packed or unpacked form: fixed-width
/// elements through `decode` (width 4 or 8), varints otherwise. (Kept as two
/// branches: a ?: of the two would convert every varint through double.)
template <typename T, typename Fn>
void repeated(Reader &r, int wire, std::vector<T> &out, int width, Fn decode) {
  auto one = [&](Reader &from) {
    if (width)
      out.push_back(static_cast<T>(decode(from.bytes(width))));
    else
      out.push_back(static_cast<T>(from.varint()));
  };
  if (wire == 2) {
    uint64_t n = r.varint();
    const uint8_t *at = r.bytes(n);
    if (!at)
      return;
    Reader inner{at, at + n};
    while (!inner.done())
      one(inner);
    r.ok &= inner.ok;
  } else {
    one(r);
  }
}

bool parse(const std::string &bytes, Proto &t) {
  Reader r{reinterpret_cast<const uint8_t *>(bytes.data()),
           reinterpret_cast<const uint8_t *>(bytes.data()) + bytes.size()};
  auto f32 = [&](const uint8_t *b) { float v = 0; if (b) std::memcpy(&v, b, 4); return v; };
  auto f64 = [&](const uint8_t *b) { double v = 0; if (b) std::memcpy(&v, b, 8); return v; };
  while (!r.done()) {
    uint64_t key = r.varint();
    int field = static_cast<int>(key >> 3), wire = key & 7;
    switch (field) {
    case 1: repeated(r, wire, t.dims, 0, f64); break;
    case 2: t.dataType = static_cast<int64_t>(r.varint()); break;
    case 4: repeated(r, wire, t.floats, wire == 2 || wire == 5 ? 4 : 0, f32); break;
    case 5: case 7: repeated(r, wire, t.ints, 0, f64); break;
    case 8: {
      uint64_t n = r.varint();
      const uint8_t *at = r.bytes(n);
      if (at)
        t.name.assign(reinterpret_cast<const char *>(at), n);
      break;
    }
    case 9: {
      uint64_t n = r.varint();
      const uint8_t *at = r.bytes(n);
      if (at)
        t.raw.assign(reinterpret_cast<const char *>(at), n);
      t.hasRaw = true;
      break;
    }
    case 10: repeated(r, wire, t.doubles, 8, f64); break;
    case 11: repeated(r, wire, t.ints, 0, f64); break;
    case 14: t.external = r.varint() == 1; break;
    default: r.skip(wire);
    }
  }
  return r.ok;
}

} // namespace

bool read(const std::string &path, npy::Array &array, std::string &name, std::string &error) {
  std::string bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  return parseTensorFile(bytes, path, array, name, error);
}

bool parseTensorFile(const std::string &bytes, const std::string &path, npy::Array &array,
                     std::string &name, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = path + ": not a valid ONNX TensorProto: " + why;
    return false;
  };
  Proto t;
  if (!parse(bytes, t))
    return fail("malformed protobuf");
  if (t.external)
    return fail("external data is not supported");
  name = t.name;
  switch (t.dataType) {
  case kFloat: array.dtype = ref::DType::F32; break;
  case kFloat16: array.dtype = ref::DType::F16; break;
  case kBFloat16: array.dtype = ref::DType::BF16; break;
  case kUint8: array.dtype = ref::DType::U8; break;
  case kUint16: array.dtype = ref::DType::U16; break;
  case kInt16: array.dtype = ref::DType::I16; break;
  case kUint32: array.dtype = ref::DType::U32; break;
  case kUint64: array.dtype = ref::DType::U64; break;
  case kDouble: array.dtype = ref::DType::F64; break;
  case kInt64: array.dtype = ref::DType::I64; break;
  case kInt32: array.dtype = ref::DType::I32; break;
  case kInt8: array.dtype = ref::DType::I8; break;
  case kBool: array.dtype = ref::DType::I1; break;
  default: return fail("unsupported data type " + std::to_string(t.dataType));
  }
  array.rawBFloat16 = false;
  array.shape.clear();
  int64_t count = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count) || count > ref::kMaxElements)
      return fail("invalid shape");
    array.shape.push_back(d);
  }
  if (!ref::withinElementLimit(array.shape)) // a zero dimension hides the rest
    return fail("invalid shape");
  int64_t width = ref::byteWidth(array.dtype);
  // The data must be there before anything is allocated for it: a few
  // bytes of header must not make the reader reserve gigabytes.
  if (t.hasRaw) {
    if (static_cast<int64_t>(t.raw.size()) != count * width)
      return fail("raw data holds " + std::to_string(t.raw.size()) + " bytes for " +
                  std::to_string(count) + " elements");
    array.data.assign(t.raw.begin(), t.raw.end());
    return true;
  }
  // Typed fields.
  auto store = [&](auto values, auto convert) {
    if (static_cast<int64_t>(values.size()) != count)
      return fail("holds " + std::to_string(values.size()) + " values for " +
                  std::to_string(count) + " elements");
    array.data.assign(count * width, 0);
    for (int64_t k = 0; k < count; ++k) {
      auto v = convert(values[k]);
      std::memcpy(array.data.data() + k * width, &v, width);
    }
    return true;
  };
  switch (array.dtype) {
  case ref::DType::F32: return store(t.floats, [](float v) { return v; });
  case ref::DType::F64: return store(t.doubles, [](double v) { return v; });
  case ref::DType::I64: return store(t.ints, [](int64_t v) { return v; });
  case ref::DType::I32: return store(t.ints, [](int64_t v) { return static_cast<int32_t>(v); });
  case ref::DType::U32: return store(t.ints, [](int64_t v) { return static_cast<uint32_t>(v); });
  case ref::DType::U64: return store(t.ints, [](int64_t v) { return v; });
  case ref::DType::U16:
  case ref::DType::I16: return store(t.ints, [](int64_t v) { return static_cast<uint16_t>(v); });
  case ref::DType::F16:
  case ref::DType::BF16: return store(t.ints, [](int64_t v) { return static_cast<uint16_t>(v); });
  default: return store(t.ints, [](int64_t v) { return static_cast<int8_t>(v); });
  }
}

namespace {
void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
} // namespace

bool write(const std::string &path, const std::string &name, ref::DType dtype,
           const ref::Shape &shape, const uint8_t *data, std::string &error) {
  int64_t type = 0;
  switch (dtype) {
  case ref::DType::F32: type = kFloat; break;
  case ref::DType::F16: type = kFloat16; break;
  case ref::DType::BF16: type = kBFloat16; break;
  case ref::DType::F64: type = kDouble; break;
  case ref::DType::I64: type = kInt64; break;
  case ref::DType::I32: type = kInt32; break;
  case ref::DType::I8: type = kInt8; break;
  case ref::DType::I1: type = kBool; break;
  case ref::DType::U8: type = kUint8; break;
  case ref::DType::U16: type = kUint16; break;
  case ref::DType::U32: type = kUint32; break;
  case ref::DType::U64: type = kUint64; break;
  case ref::DType::I16: type = kInt16; break;
  }
  std::string out;
  for (int64_t d : shape) {
    putVarint(out, (1 << 3) | 0);
    putVarint(out, static_cast<uint64_t>(d));
  }
  putVarint(out, (2 << 3) | 0);
  putVarint(out, type);
  putVarint(out, (8 << 3) | 2);
  putVarint(out, name.size());
  out += name;
  size_t bytes = ref::numElements(shape) * ref::byteWidth(dtype);
  putVarint(out, (9 << 3) | 2);
  putVarint(out, bytes);
  out.append(reinterpret_cast<const char *>(data), bytes);
  std::ofstream file(path, std::ios::binary);
  file << out;
  if (!file) {
    error = path + ": cannot write";
    return false;
  }
  return true;
}

} // namespace onnxpb
} // namespace kiln
