//===- TuningCache.h - measured implementation times ------------*- C++ -*-===//
//
// What `kilnc --autotune` measured on a GPU, kept in a text file that later
// compiles reuse (`--tuning-cache=FILE`): per matmul problem (architecture,
// shape, types, transposes, epilogue), the time of its cuBLASLt call and of
// kiln's generated kernel. A measured problem is decided by the
// measurements instead of the cost model.
//
// One entry per line: the key, then `cublaslt_us=` and `generated_us=`,
// tab-separated; `#` starts a comment line.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_TUNINGCACHE_H
#define KILN_LOWERING_TUNINGCACHE_H

#include "kiln/Runtime/GemmCall.h"

#include <map>
#include <optional>
#include <string>

namespace mlir {
namespace kiln {

struct TunedTimes {
  double libraryUs = 0, generatedUs = 0;
};

class TuningCache {
public:
  /// Reads `path`; a missing file is an empty cache. Fails with
  /// "path:line: why" on a malformed line.
  static std::optional<TuningCache> load(const std::string &path, std::string &error);
  /// Writes every entry, sorted, so the file is reproducible.
  bool save(const std::string &path, std::string &error) const;

  /// The key of a call on `arch`: everything that changes its speed.
  static std::string keyOf(int arch, const ::kiln::rt::GemmCall &call);

  const TunedTimes *find(const std::string &key) const;
  void record(const std::string &key, TunedTimes times) { entries[key] = times; }
  size_t size() const { return entries.size(); }

private:
  std::map<std::string, TunedTimes> entries;
};

} // namespace kiln
} // namespace mlir

#endif // KILN_LOWERING_TUNINGCACHE_H
