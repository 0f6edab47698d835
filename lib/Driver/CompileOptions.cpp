//===- CompileOptions.cpp - what kilnc compiles, for what -----------------===//

#include "kiln/Driver/CompileOptions.h"

#include "kiln/CodeGen/EmuLibrary.h"

#include <cmath>

namespace kiln {
namespace driver {

std::optional<unsigned> parseArch(llvm::StringRef arch) {
  // A compute capability: sm_10 (1.0) to sm_999; the number also becomes an
  // int (kiln-select-impl's arch).
  unsigned number = 0;
  if (!arch.consume_front("sm_") || arch.getAsInteger(10, number) || number < 10 || number > 999)
    return std::nullopt;
  return number;
}

std::optional<int64_t> parseByteSize(llvm::StringRef text) {
  int64_t scale = 1, bytes = 0;
  if (text.consume_back("KiB"))
    scale = int64_t(1) << 10;
  else if (text.consume_back("MiB"))
    scale = int64_t(1) << 20;
  else if (text.consume_back("GiB"))
    scale = int64_t(1) << 30;
  if (text.getAsInteger(10, bytes) || bytes < 0 || bytes > (int64_t(1) << 40) / scale)
    return std::nullopt;
  return bytes * scale;
}

llvm::StringRef stringifyTarget(Target target) {
  switch (target) {
  case Target::CPU:
    return "cpu";
  case Target::CudaEmu:
    return "cuda-emu";
  case Target::Cuda:
    return "cuda";
  }
  return "";
}

llvm::StringRef stringifyPrecision(Precision precision) {
  return precision == Precision::Tf32 ? "tf32" : "strict";
}

llvm::StringRef stringifyImplementation(Implementation implementation) {
  switch (implementation) {
  case Implementation::Auto:
    return "auto";
  case Implementation::Library:
    return "library";
  case Implementation::Generated:
    return "generated";
  }
  return "";
}

std::string verifyCompileOptions(const CompileOptions &options) {
  for (const std::string &arch : options.archs)
    if (!parseArch(arch))
      return "--arch takes sm_XX, a compute capability (e.g. sm_90), got '" + arch + "'";
  if (options.maxStreams && *options.maxStreams < 1)
    return "--max-streams must be at least 1, got " + std::to_string(*options.maxStreams);
  if (options.autotune &&
      (options.target != Target::Cuda || options.tuningCache.empty() || !options.lower))
    return "--autotune measures on a GPU: it needs --target=cuda, --tuning-cache=FILE to record "
           "the times in, and an executable or plan to compile";
  if (!options.emuSanitize.empty()) {
    if (options.target != Target::CudaEmu)
      return "--emu-sanitize applies to --target=cuda-emu";
    std::string problem = mlir::kiln::checkEmuSanitizers(options.emuSanitize);
    if (!problem.empty())
      return "--emu-sanitize: " + problem;
  }
  if (options.emuProfile && options.target != Target::CudaEmu)
    return "--emu-profile applies to --target=cuda-emu";
  if (!options.hostOps.empty() && options.target == Target::CPU)
    return "--host-ops applies to --target=cuda and cuda-emu (on the CPU every op runs on the "
           "host)";
  if (options.noHostFallback && options.target == Target::CPU)
    return "--no-host-fallback applies to --target=cuda and cuda-emu (on the CPU every op runs "
           "on the host)";
  if (!(options.foldBudgetSeconds >= 0))
    return "--fold-budget takes seconds, 0 or more";
  if (options.foldBudgetBytes < 0)
    return "--fold-budget-bytes takes bytes, 0 or more";
  if (!options.tuningCache.empty() && options.target == Target::CPU)
    return "--tuning-cache applies to --target=cuda and cuda-emu";
  if (options.trainable != ".*" && options.gradLoss.empty())
    return "--trainable applies with --grad or --train (it chooses the weights differentiated)";
  if (options.memoryBudget) {
    if (options.gradLoss.empty())
      return "--memory-budget applies with --grad or --train (it chooses what the backward "
             "pass recomputes)";
    if (!(*options.memoryBudget >= 0 && *options.memoryBudget <= 1))
      return "--memory-budget takes a fraction from 0 to 1";
  }
  if (options.train) {
    if (options.optimizer != "sgd" && options.optimizer != "momentum" &&
        options.optimizer != "adam")
      return "--optimizer takes sgd, momentum or adam, got '" + options.optimizer + "'";
    if (!(options.learningRate > 0) || !std::isfinite(options.learningRate) ||
        !(options.weightDecay >= 0) || !std::isfinite(options.weightDecay))
      return "--lr takes a positive rate and --weight-decay 0 or more (finite)";
  }
  if (!options.optimize) {
    if (!options.gradLoss.empty())
      return "-O0 stops after parsing; --grad and --train need the graph pipeline";
    if (options.target != Target::CPU)
      return "-O0 stops after parsing; --target=cuda and cuda-emu need the pipeline";
    if (options.lower)
      return "-O0 stops after parsing; it cannot produce a plan or an executable";
    if (!options.dumpDot.empty() || options.fusionReport)
      return "-O0 stops after parsing; --dump-dot and --fusion-report need the graph pipeline";
  }
  return "";
}

} // namespace driver
} // namespace kiln
