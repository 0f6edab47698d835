//===- KxLoaderFuzzer.cpp - fuzz the executable loader, then run ----------===//
//
// Bytes as a .kx file: the loader must reject them with a message or
// accept an executable that then runs on the CPU without reading or
// writing out of bounds (ASan and UBSan watch). Executables too large to
// run quickly are only loaded.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Runtime.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto exe = kiln::rt::Executable::loadMemory(data, size);
  if (!exe) {
    if (exe.status().message().empty())
      std::abort(); // a rejection must say why
    return 0;
  }
  if ((*exe)->arenaBytes() > (int64_t(64) << 20))
    return 0;
  int64_t inputBytes = 0;
  for (const kiln::rt::TensorSpec &input : (*exe)->inputs())
    inputBytes += input.byteSize();
  if (inputBytes > (int64_t(64) << 20))
    return 0;
  kiln::rt::SessionOptions options;
  options.device = kiln::rt::DeviceChoice::CPU;
  auto session = kiln::rt::Session::create(*exe, options);
  if (!session)
    return 0;
  for (size_t k = 0; k < (*exe)->inputs().size(); ++k) {
    std::vector<uint8_t> zeros(static_cast<size_t>((*exe)->inputs()[k].byteSize()), 0);
    if (!(*session)->setInput(k, zeros.data(), zeros.size()))
      return 0;
  }
  (void)(*session)->run(); // may fail cleanly; must not crash
  return 0;
}
