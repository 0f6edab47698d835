//===- NpyFuzzer.cpp - fuzz the .npy reader --------------------------------===//

#include "kiln/Support/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::npy::Array array;
  std::string error;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (!kiln::npy::parse(bytes, "fuzz.npy", array, error)) {
    if (error.empty())
      std::abort();
    return 0;
  }
  // An accepted array holds exactly its elements.
  if (static_cast<int64_t>(array.data.size()) !=
      kiln::ref::numElements(array.shape) * kiln::ref::byteWidth(array.dtype))
    std::abort();
  return 0;
}
