//===- KxLoaderFuzzer.cpp - fuzz the executable loader, then run ----------===//
//
// Bytes as a .kx file: the loader must reject them with a message or
// accept an executable that then runs on the CPU without reading or
// writing out of bounds (ASan and UBSan watch). Executables too large to
// run quickly are only loaded. Native CPU code is linked (the linker's
// checks are fuzzed) but not called: it is machine code, which a mutation
// can make do anything. Stand-ins take its place (they touch exactly what
// the loader lets a kernel touch), so the runtime's handling of the
// compiled runs is fuzzed too.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/ExecutableFile.h"
#include "kiln/Runtime/Runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Most mutations would only meet the checksum: reseal them (as a hostile
  // writer would) so the payload's verifier and validation get fuzzed too,
  // unless the last byte is odd (then the checksum itself is tested).
  std::vector<uint8_t> bytes(data, data + size);
  if (size > kiln::rt::kHeaderSize && (data[size - 1] & 1) == 0) {
    uint64_t sum = kiln::rt::payloadChecksum(bytes.data() + kiln::rt::kHeaderSize,
                                             size - kiln::rt::kHeaderSize);
    std::memcpy(bytes.data() + offsetof(kiln::rt::FileHeader, payloadChecksum), &sum,
                sizeof(sum));
  }
  auto exe = kiln::rt::Executable::loadMemory(bytes.data(), bytes.size());
  if (!exe) {
    if (exe.status().message().empty())
      std::abort(); // a rejection must say why
    return 0;
  }
  if ((*exe)->arenaBytes() > (int64_t(64) << 20))
    return 0;
  // An executable over ranges of sizes runs at its OPT sizes.
  const std::vector<kiln::rt::TensorSpec> &inputs = (*exe)->inputsAtOpt();
  int64_t inputBytes = 0;
  for (const kiln::rt::TensorSpec &input : inputs)
    inputBytes += input.byteSize();
  if (inputBytes > (int64_t(64) << 20))
    return 0;
  kiln::rt::SessionOptions options;
  options.device = kiln::rt::DeviceChoice::CPU;
  options.cpuKernelStandIns = true;
  auto session = kiln::rt::Session::create(*exe, options);
  if (!session)
    return 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<uint8_t> zeros(static_cast<size_t>(inputs[k].byteSize()), 0);
    if (!(*session)->setInput(k, zeros.data(), zeros.size(), inputs[k].shape))
      return 0;
  }
  (void)(*session)->run(); // may fail cleanly; must not crash
  return 0;
}
