//===- Memory.cpp - tensors to and from raw memory ------------------------===//

#include "kiln/Reference/Tensor.h"

#include <cstring>

namespace kiln {
namespace ref {

std::vector<int64_t> physicalOffsets(const Shape &shape, const std::vector<int64_t> &dimOrder) {
  if (dimOrder.empty())
    return {};
  Shape physical(shape.size());
  for (size_t k = 0; k < shape.size(); ++k)
    physical[k] = shape[dimOrder[k]];
  std::vector<int64_t> physicalStrides = rowMajorStrides(physical);
  std::vector<int64_t> strides(shape.size());
  for (size_t k = 0; k < shape.size(); ++k)
    strides[dimOrder[k]] = physicalStrides[k];
  std::vector<int64_t> offsets;
  offsets.reserve(numElements(shape));
  for (IndexIterator it(shape); !it.done(); it.next()) {
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      offset += it.index()[d] * strides[d];
    offsets.push_back(offset);
  }
  return offsets;
}

namespace {

double loadFloat(DType dtype, const uint8_t *p) {
  switch (dtype) {
  case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
  case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
  case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); return halfToFloat(v); }
  default: { uint16_t v; std::memcpy(&v, p, 2); return bfloat16ToFloat(v); }
  }
}

int64_t loadInt(DType dtype, const uint8_t *p) {
  switch (dtype) {
  case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return v; }
  case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case DType::I8: return static_cast<int8_t>(*p);
  case DType::U8: return *p;
  case DType::I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case DType::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  case DType::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case DType::U64: { int64_t v; std::memcpy(&v, p, 8); return v; }
  default: return *p != 0;
  }
}

void storeFloat(DType dtype, double value, uint8_t *p) {
  switch (dtype) {
  case DType::F32: { float v = static_cast<float>(value); std::memcpy(p, &v, 4); break; }
  case DType::F64: std::memcpy(p, &value, 8); break;
  case DType::F16: { uint16_t v = floatToHalf(static_cast<float>(value)); std::memcpy(p, &v, 2); break; }
  default: { uint16_t v = floatToBFloat16(static_cast<float>(value)); std::memcpy(p, &v, 2); break; }
  }
}

void storeInt(DType dtype, int64_t value, uint8_t *p) {
  switch (dtype) {
  case DType::I64: std::memcpy(p, &value, 8); break;
  case DType::I32: { int32_t v = static_cast<int32_t>(value); std::memcpy(p, &v, 4); break; }
  case DType::I8: case DType::U8: *p = static_cast<uint8_t>(value); break;
  case DType::I16: case DType::U16: { uint16_t v = static_cast<uint16_t>(value); std::memcpy(p, &v, 2); break; }
  case DType::U32: { uint32_t v = static_cast<uint32_t>(value); std::memcpy(p, &v, 4); break; }
  case DType::U64: std::memcpy(p, &value, 8); break;
  default: *p = value != 0; break;
  }
}

} // namespace

Tensor decodeTensor(DType dtype, const Shape &shape, const std::vector<int64_t> &dimOrder,
                    const uint8_t *data) {
  Tensor t = Tensor::zeros(dtype, shape);
  std::vector<int64_t> offsets = physicalOffsets(shape, dimOrder);
  int64_t width = byteWidth(dtype), n = t.numElements();
  for (int64_t k = 0; k < n; ++k) {
    const uint8_t *p = data + (offsets.empty() ? k : offsets[k]) * width;
    if (t.isFloat())
      t.f[k] = loadFloat(dtype, p);
    else
      t.i[k] = loadInt(dtype, p);
  }
  return t;
}

void encodeTensor(const Tensor &t, const std::vector<int64_t> &dimOrder, uint8_t *data) {
  std::vector<int64_t> offsets = physicalOffsets(t.shape, dimOrder);
  int64_t width = byteWidth(t.dtype), n = t.numElements();
  for (int64_t k = 0; k < n; ++k) {
    uint8_t *p = data + (offsets.empty() ? k : offsets[k]) * width;
    if (t.isFloat())
      storeFloat(t.dtype, t.f[k], p);
    else
      storeInt(t.dtype, t.i[k], p);
  }
}

} // namespace ref
} // namespace kiln
