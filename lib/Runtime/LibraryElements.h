//===- LibraryElements.h - f32/f16/bf16 elements for host library calls -*- C++ -*-===//
//
// The host runs of cuBLASLt and cuDNN descriptors (GemmCall, ConvCall) read
// and write their matrices in the library's storage types and compute in
// f32, as the libraries do with f32 accumulation.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_LIBRARYELEMENTS_H
#define KILN_LIB_RUNTIME_LIBRARYELEMENTS_H

#include "kiln/Reference/Tensor.h"

#include <cstdint>
#include <cstring>

namespace kiln {
namespace rt {

/// Element `index` of an f32, f16 or bf16 array, as f32.
inline float loadElement(ref::DType type, const uint8_t *base, int64_t index) {
  uint16_t bits;
  switch (type) {
  case ref::DType::F16:
    std::memcpy(&bits, base + 2 * index, 2);
    return ref::halfToFloat(bits);
  case ref::DType::BF16:
    std::memcpy(&bits, base + 2 * index, 2);
    return ref::bfloat16ToFloat(bits);
  default: {
    float v;
    std::memcpy(&v, base + 4 * index, 4);
    return v;
  }
  }
}

/// Stores `v` as element `index` of an f32, f16 or bf16 array (rounded to
/// nearest even).
inline void storeElement(ref::DType type, uint8_t *base, int64_t index, float v) {
  uint16_t bits;
  switch (type) {
  case ref::DType::F16:
    bits = ref::floatToHalf(v);
    std::memcpy(base + 2 * index, &bits, 2);
    return;
  case ref::DType::BF16:
    bits = ref::floatToBFloat16(v);
    std::memcpy(base + 2 * index, &bits, 2);
    return;
  default:
    std::memcpy(base + 4 * index, &v, 4);
  }
}

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_LIBRARYELEMENTS_H
