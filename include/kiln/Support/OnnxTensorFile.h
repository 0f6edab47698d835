//===- OnnxTensorFile.h - ONNX TensorProto .pb files ------------*- C++ -*-===//
//
// Reads and writes single ONNX TensorProto messages, the input and output
// files of the ONNX backend test suite. The protobuf wire format of this one
// message is decoded by hand so that kiln-run and standalone programs need
// no protobuf library; the reader bounds-checks every field.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_ONNXTENSORFILE_H
#define KILN_SUPPORT_ONNXTENSORFILE_H

#include "kiln/Support/Npy.h"

namespace kiln {
namespace onnxpb {

/// Reads a TensorProto. UINT16 data reads as u16; kiln-run accepts it for
/// bfloat16 inputs, as the ONNX test data stores bfloat16 that way.
bool read(const std::string &path, npy::Array &array, std::string &name, std::string &error);
/// Parses a TensorProto file's bytes (`path` only names it in messages).
bool parseTensorFile(const std::string &bytes, const std::string &path, npy::Array &array,
                     std::string &name, std::string &error);

/// Writes a TensorProto with raw little-endian data.
bool write(const std::string &path, const std::string &name, ref::DType dtype,
           const ref::Shape &shape, const uint8_t *data, std::string &error);

} // namespace onnxpb
} // namespace kiln

#endif // KILN_SUPPORT_ONNXTENSORFILE_H
