//===- Tensor.cpp - reference tensors and dtype conversions ---------------===//

#include "kiln/Reference/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln {
namespace ref {

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

bool isUnsigned(DType dtype) {
  return dtype == DType::U8 || dtype == DType::U16 || dtype == DType::U32 || dtype == DType::U64;
}

int64_t byteWidth(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::U16:
  case DType::I16:
    return 2;
  case DType::U8:
  case DType::I8:
  case DType::I1:
    return 1;
  }
  return 1;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F64: return "f64";
  case DType::I64: return "i64";
  case DType::I32: return "i32";
  case DType::I8: return "i8";
  case DType::I1: return "i1";
  case DType::U8: return "u8";
  case DType::U16: return "u16";
  case DType::U32: return "u32";
  case DType::U64: return "u64";
  case DType::I16: return "i16";
  }
  return "?";
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "x" : "") + std::to_string(shape[d]);
  return s + "]";
}

Shape broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t da = d < rank - a.size() ? 1 : a[d - (rank - a.size())];
    int64_t db = d < rank - b.size() ? 1 : b[d - (rank - b.size())];
    out[d] = da == 1 ? db : da;
  }
  return out;
}

uint16_t floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exponent = (x >> 23) & 0xffu;
  uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xffu) // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 31) // overflow to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) { // subnormal half or zero
    if (e < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, which is the correct rounding
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t x;
  if (exponent == 0x1fu) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else { // normalise the subnormal
      int32_t e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
          ((mantissa & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &x, 4);
  return value;
}

uint16_t floatToBFloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &x, 4);
  return value;
}

double roundToFloat(DType dtype, double value) {
  switch (dtype) {
  case DType::F64:
    return value;
  case DType::F32:
    return static_cast<float>(value);
  case DType::F16:
    return halfToFloat(floatToHalf(static_cast<float>(value)));
  case DType::BF16:
    return bfloat16ToFloat(floatToBFloat16(static_cast<float>(value)));
  default:
    return value;
  }
}

int64_t wrapToInt(DType dtype, int64_t value) {
  switch (dtype) {
  case DType::I1:
    return value != 0;
  case DType::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(value));
  case DType::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(value));
  case DType::I16:
    return static_cast<int16_t>(static_cast<uint16_t>(value));
  case DType::U8:
    return static_cast<uint8_t>(value);
  case DType::U16:
    return static_cast<uint16_t>(value);
  case DType::U32:
    return static_cast<uint32_t>(value);
  default: // i64, and u64 as its bit pattern
    return value;
  }
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.isFloat())
    t.f.assign(t.numElements(), 0.0);
  else
    t.i.assign(t.numElements(), 0);
  return t;
}

void Tensor::setDouble(int64_t k, double value) {
  if (isFloat()) {
    f[k] = roundToFloat(dtype, value);
    return;
  }
  if (dtype == DType::I1) {
    i[k] = value != 0.0;
    return;
  }
  // Float to integer truncates toward zero; NaN and out-of-range saturate
  // rather than invoking undefined behaviour.
  double t = std::trunc(value);
  int64_t v;
  if (std::isnan(t))
    v = 0;
  else if (t >= 9.2233720368547758e18)
    v = INT64_MAX;
  else if (t <= -9.2233720368547758e18)
    v = INT64_MIN;
  else
    v = static_cast<int64_t>(t);
  i[k] = wrapToInt(dtype, v);
}

void Tensor::setInt(int64_t k, int64_t value) {
  if (isFloat())
    f[k] = roundToFloat(dtype, static_cast<double>(value));
  else
    i[k] = wrapToInt(dtype, value);
}

void IndexIterator::next() {
  for (int64_t d = static_cast<int64_t>(shape_.size()) - 1; d >= 0; --d) {
    if (++index_[d] < shape_[d])
      return;
    index_[d] = 0;
  }
  done_ = true;
}

int64_t broadcastOffset(const Shape &shape, const std::vector<int64_t> &strides,
                        const std::vector<int64_t> &index) {
  size_t lead = index.size() - shape.size();
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      offset += index[lead + d] * strides[d];
  return offset;
}

} // namespace ref
} // namespace kiln
