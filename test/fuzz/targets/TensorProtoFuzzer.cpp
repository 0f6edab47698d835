//===- TensorProtoFuzzer.cpp - fuzz the ONNX TensorProto (.pb) reader ------===//

#include "kiln/Support/OnnxTensorFile.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::npy::Array array;
  std::string name, error;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (!kiln::onnxpb::parseTensorFile(bytes, "fuzz.pb", array, name, error)) {
    if (error.empty())
      std::abort();
    return 0;
  }
  if (static_cast<int64_t>(array.data.size()) !=
      kiln::ref::numElements(array.shape) * kiln::ref::byteWidth(array.dtype))
    std::abort();
  return 0;
}
