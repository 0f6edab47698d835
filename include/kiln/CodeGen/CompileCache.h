//===- CompileCache.h - compiled kernels kept on disk -----------*- C++ -*-===//
//
// NVRTC and the host compiler take a noticeable time per translation unit;
// a recompile whose kernels did not change reads the previous results from
// the cache instead. Entries are keyed by a hash of everything that affects
// the output (compiler and version, options, the kernel text, the emulation
// header) and written atomically (temporary file, then rename).
//
// Location: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
// KILN_CACHE_DIR=off disables it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMPILECACHE_H
#define KILN_CODEGEN_COMPILECACHE_H

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace codegen {

class CompileCache {
public:
  /// The cache at its configured location (disabled if none can be used).
  static CompileCache fromEnvironment();

  bool enabled() const { return !directory_.empty(); }
  const std::string &directory() const { return directory_; }

  /// A key for these parts (hex of a 64-bit hash of all of them).
  static std::string key(const std::vector<std::string> &parts);

  std::optional<std::string> get(const std::string &key, const std::string &suffix) const;
  void put(const std::string &key, const std::string &suffix, const std::string &data) const;

private:
  std::string directory_;
};

struct NvrtcResult;

/// compileCuda through the cache: a hit returns the stored PTX, cubin and
/// log (resources parsed again) without running NVRTC.
NvrtcResult compileCudaCached(const CompileCache &cache, const std::string &source,
                              const std::string &name, const std::string &arch,
                              bool *cached = nullptr);

} // namespace codegen
} // namespace kiln

#endif // KILN_CODEGEN_COMPILECACHE_H
