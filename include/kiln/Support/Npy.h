//===- Npy.h - NumPy .npy tensor files --------------------------*- C++ -*-===//
//
// Reads and writes version 1-3 .npy files of the dtypes kiln knows, in C
// order and little-endian. No MLIR; used by kiln-run and the standalone
// programs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_NPY_H
#define KILN_SUPPORT_NPY_H

#include "kiln/Reference/Tensor.h"

#include <string>
#include <vector>

namespace kiln {
namespace npy {

struct Array {
  ref::DType dtype = ref::DType::F32;
  ref::Shape shape;
  std::vector<uint8_t> data; ///< row-major, little-endian
  /// Unused by .npy (bf16 arrives as u16 raw bits); kept for callers that
  /// fill arrays from other formats.
  bool rawBFloat16 = false;
};

/// Reads `path`; on failure returns false with a message naming the file.
bool read(const std::string &path, Array &array, std::string &error);
/// Parses a .npy file's bytes (`path` only names it in messages).
bool parse(const std::string &bytes, const std::string &path, Array &array, std::string &error);

/// Writes `data` (row-major) as a .npy file. bf16 is written as float32,
/// which NumPy has and bf16 converts to exactly.
bool write(const std::string &path, ref::DType dtype, const ref::Shape &shape,
           const uint8_t *data, std::string &error);
/// The bytes of that file.
std::string encode(ref::DType dtype, const ref::Shape &shape, const uint8_t *data);

} // namespace npy
} // namespace kiln

#endif // KILN_SUPPORT_NPY_H
