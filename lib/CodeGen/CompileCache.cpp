//===- CompileCache.cpp - compiled kernels kept on disk -------------------===//

#include "kiln/CodeGen/CompileCache.h"

#include "kiln/CodeGen/Nvrtc.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <cstdio>
#include <unistd.h>

namespace kiln {
namespace codegen {

CompileCache CompileCache::fromEnvironment() {
  CompileCache cache;
  std::string dir;
  if (const char *explicitDir = std::getenv("KILN_CACHE_DIR")) {
    if (std::string(explicitDir) == "off")
      return cache;
    dir = explicitDir;
  } else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = std::string(xdg) + "/kiln";
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/.cache/kiln";
  }
  if (!dir.empty() && !llvm::sys::fs::create_directories(dir))
    cache.directory_ = dir;
  return cache;
}

std::string CompileCache::key(const std::vector<std::string> &parts) {
  std::string joined;
  for (const std::string &part : parts) {
    joined += std::to_string(part.size()) + ":"; // no two part lists collide
    joined += part;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(llvm::xxh3_64bits(llvm::StringRef(joined))));
  return hex;
}

std::optional<std::string> CompileCache::get(const std::string &key,
                                             const std::string &suffix) const {
  if (!enabled())
    return std::nullopt;
  auto buffer = llvm::MemoryBuffer::getFile(directory_ + "/" + key + "." + suffix,
                                            /*IsText=*/false);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

void CompileCache::put(const std::string &key, const std::string &suffix,
                       const std::string &data) const {
  if (!enabled())
    return;
  std::string path = directory_ + "/" + key + "." + suffix;
  std::string temporary = path + ".tmp" + std::to_string(getpid());
  // A cache that cannot be written is only slower: every error is dropped.
  std::error_code ec;
  llvm::raw_fd_ostream os(temporary, ec, llvm::sys::fs::OF_None);
  if (ec)
    return;
  os << data;
  os.close();
  if (os.has_error()) {
    os.clear_error();
    llvm::sys::fs::remove(temporary);
    return;
  }
  if (llvm::sys::fs::rename(temporary, path))
    llvm::sys::fs::remove(temporary);
}

NvrtcResult compileCudaCached(const CompileCache &cache, const std::string &source,
                              const std::string &name, const std::string &arch, bool *cached) {
  if (cached)
    *cached = false;
  std::vector<std::string> parts = {"nvrtc", nvrtcVersion(), arch, name, source};
  for (const std::string &option : nvrtcOptions(arch))
    parts.push_back(option);
  std::string key = CompileCache::key(parts);
  std::optional<std::string> ptx = cache.get(key, "ptx"), cubin = cache.get(key, "cubin"),
                             log = cache.get(key, "log");
  if (ptx && cubin && log) {
    NvrtcResult hit;
    hit.ok = true;
    hit.ptx = std::move(*ptx);
    hit.cubin = std::move(*cubin);
    hit.log = std::move(*log);
    hit.resources = parsePtxasReport(hit.log);
    if (cached)
      *cached = true;
    return hit;
  }
  NvrtcResult result = compileCuda(source, name, arch);
  if (result.ok) {
    cache.put(key, "ptx", result.ptx);
    cache.put(key, "cubin", result.cubin);
    cache.put(key, "log", result.log);
  }
  return result;
}

} // namespace codegen
} // namespace kiln
