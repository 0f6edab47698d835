//===- TuningCache.cpp - measured implementation times --------------------===//

#include "kiln/Lowering/TuningCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::kiln;

std::string TuningCache::keyOf(int arch, const ::kiln::rt::GemmCall &g) {
  // cuBLASLt's terms, which both implementations compute.
  return "sm_" + std::to_string(arch) + " " + ::kiln::ref::dtypeName(g.typeA) +
         (g.tf32 ? " tf32" : "") + " m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) +
         " k=" + std::to_string(g.k) + " batch=" + std::to_string(g.batch) +
         " trans=" + (g.transA ? "T" : "N") + (g.transB ? "T" : "N") +
         " epilogue=" + ::kiln::rt::gemmEpilogueName(g.epilogue) + (g.c >= 0 ? "+residual" : "");
}

std::optional<TuningCache> TuningCache::load(const std::string &path, std::string &error) {
  TuningCache cache;
  if (!llvm::sys::fs::exists(path))
    return cache;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = path + ": " + buffer.getError().message();
    return std::nullopt;
  }
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (auto [number, line] : llvm::enumerate(lines)) {
    llvm::StringRef text = line.trim();
    if (text.empty() || text.starts_with("#"))
      continue;
    llvm::SmallVector<llvm::StringRef> fields;
    text.split(fields, '\t');
    TunedTimes times;
    bool ok = fields.size() == 3 && !fields[0].trim().empty();
    auto number_ = [&](llvm::StringRef field, llvm::StringRef name, double &out) {
      if (!field.consume_front(name))
        return false;
      return !field.getAsDouble(out) && out >= 0;
    };
    ok = ok && number_(fields[1], "cublaslt_us=", times.libraryUs) &&
         number_(fields[2], "generated_us=", times.generatedUs);
    if (!ok) {
      error = path + ":" + std::to_string(number + 1) +
              ": expected 'KEY<tab>cublaslt_us=N<tab>generated_us=N'";
      return std::nullopt;
    }
    cache.entries[fields[0].trim().str()] = times;
  }
  return cache;
}

bool TuningCache::save(const std::string &path, std::string &error) const {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    error = path + ": " + ec.message();
    return false;
  }
  os << "# kiln tuning cache: measured microseconds per matmul, by kilnc --autotune\n";
  for (const auto &[key, times] : entries) {
    char line[128];
    std::snprintf(line, sizeof(line), "\tcublaslt_us=%.3f\tgenerated_us=%.3f\n", times.libraryUs,
                  times.generatedUs);
    os << key << line;
  }
  return true;
}

const TunedTimes *TuningCache::find(const std::string &key) const {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}
