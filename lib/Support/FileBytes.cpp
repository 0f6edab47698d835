//===- FileBytes.cpp - Whole-file reads with a readable error -------------===//
//
// C stdio rather than istreambuf_iterator: libstdc++'s filebuf opens a
// directory and then throws from the iterator, which would abort the tools.
//
//===----------------------------------------------------------------------===//

#include "kiln/Support/FileBytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

namespace kiln {

bool readFileBytes(const std::string &path, std::string &bytes, std::string &error) {
  std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat info;
  if (fstat(fileno(file.get()), &info) != 0 || !S_ISREG(info.st_mode)) {
    error = path + ": cannot open: not a regular file";
    return false;
  }
  bytes.clear();
  bytes.reserve(static_cast<size_t>(info.st_size));
  char chunk[1 << 16];
  while (size_t n = std::fread(chunk, 1, sizeof(chunk), file.get()))
    bytes.append(chunk, n);
  if (std::ferror(file.get())) {
    error = path + ": read failed: " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace kiln
