//===- kiln-standalone.cpp - the stub of standalone programs --------------===//
//
// `kilnc MODEL -o PROGRAM` copies this binary and appends the executable and
// a 16-byte trailer: the executable's size (little-endian u64) and the magic
// "KILNEMBD". At startup the program finds its executable in itself and runs
// it with kiln-run's options.
//
//===----------------------------------------------------------------------===//

#include "RunMain.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

int main(int argc, char **argv) {
  std::ifstream self("/proc/self/exe", std::ios::binary);
  std::vector<uint8_t> image((std::istreambuf_iterator<char>(self)),
                             std::istreambuf_iterator<char>());
  const char magic[8] = {'K', 'I', 'L', 'N', 'E', 'M', 'B', 'D'};
  uint64_t size = 0;
  if (image.size() >= 16)
    std::memcpy(&size, image.data() + image.size() - 16, 8);
  if (image.size() < 16 || std::memcmp(image.data() + image.size() - 8, magic, 8) != 0 ||
      size > image.size() - 16) {
    std::fprintf(stderr, "%s: error: this program carries no kiln executable "
                         "(build one with kilnc MODEL -o PROGRAM)\n", argv[0]);
    return 1;
  }
  auto exe = kiln::rt::Executable::loadMemory(image.data() + image.size() - 16 - size, size);
  if (!exe) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], exe.status().message().c_str());
    return 1;
  }
  image.clear();
  image.shrink_to_fit();
  return kiln::tools::runMain(argc, argv, *exe);
}
