//===- DeviceCode.cpp - the generated kernels of a plan, compiled ---------===//

#include "kiln/Driver/DeviceCode.h"

#include "kiln/CodeGen/CompileCache.h"
#include "kiln/CodeGen/EmuLibrary.h"
#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/CodeGen/Nvrtc.h"
#include "kiln/Driver/Pipeline.h"
#include "kiln/Driver/Reports.h"
#include "kiln/IR/KilnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace mlir;

namespace kiln {
namespace driver {

namespace {

std::string seconds(std::chrono::steady_clock::duration d) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f s", std::chrono::duration<double>(d).count());
  return buffer;
}

/// Says, after an NVRTC failure, which kernel (and region of the model)
/// each error line of `log` is in; `firstLines` holds where each kernel
/// starts in the translation unit.
void nameKernelsOfErrors(
    llvm::StringRef log,
    const std::vector<std::pair<unsigned, const mlir::kiln::GeneratedKernel *>> &firstLines) {
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    size_t open = line.find(".cu("), close = line.find("): error");
    unsigned at = 0;
    if (open == llvm::StringRef::npos || close == llvm::StringRef::npos ||
        line.slice(open + 4, close).getAsInteger(10, at))
      continue;
    const mlir::kiln::GeneratedKernel *owner = nullptr;
    for (auto &[first, kernel] : firstLines)
      if (first <= at)
        owner = kernel;
    if (owner)
      llvm::errs() << "kilnc: note: line " << at << " is in kernel " << owner->name << " (step #"
                   << owner->step << " " << owner->stepName
                   << (owner->location.empty() ? "" : ", from " + owner->location) << ")\n";
  }
}

} // namespace

/// The bytes the plan's transfer steps copy between host and device in one
/// run (what crosses PCIe on a GPU): "N bytes", or over symbolic sizes "at
/// most N bytes" (at the ranges' largest sizes).
std::string transferBytes(func::FuncOp plan) {
  SmallVector<mlir::kiln::SizeSymbol> symbols = mlir::kiln::getSizeSymbols(plan);
  int64_t bytes = 0;
  bool symbolic = false;
  for (mlir::kiln::exec::StepOp step : plan.getBody().getOps<mlir::kiln::exec::StepOp>()) {
    Operation &first = step.getBody().front().front();
    if (!llvm::isa<mlir::kiln::TransferOp>(first) || step.getKind())
      continue;
    for (Value result : step.getResults()) {
      bytes += mlir::kiln::tensorBytes(result.getType(), symbols);
      symbolic |= mlir::kiln::hasSymbolicSizes(result.getType());
    }
  }
  return (symbolic ? "at most " : "") + std::to_string(bytes) + " bytes";
}

LogicalResult buildDeviceCode(func::FuncOp plan, const CompileOptions &options,
                              mlir::kiln::DeviceCode &code, PhaseClock &clock) {
  std::vector<mlir::kiln::GeneratedKernel> kernels =
      mlir::kiln::generateKernels(plan, codeGenOptions(options));
  clock.mark("codegen");
  unsigned generated = 0, copies = 0, cublas = 0, cudnn = 0;
  for (const mlir::kiln::GeneratedKernel &kernel : kernels) {
    copies += kernel.kind == "transfer";
    cublas += llvm::StringRef(kernel.library).starts_with("cuBLASLt");
    cudnn += llvm::StringRef(kernel.library).starts_with("cuDNN");
    if (kernel.name.empty())
      continue;
    if (!kernel.sizeClass.empty()) { // another kernel of a step counted already
      code.kernels[kernel.step].classes.push_back(
          {kernel.sizeClass, kernel.name, kernel.blockThreads, kernel.dynamicSharedBytes,
           kernel.gridCode, kernel.sizeArgs});
      continue;
    }
    // A cuDNN step's kernel is its fallback epilogue, not the step.
    generated += kernel.library.empty();
    mlir::kiln::StepKernel step;
    step.name = kernel.name;
    step.grid = kernel.gridBlocks;
    step.block = kernel.blockThreads;
    step.dynamicShared = kernel.dynamicSharedBytes;
    step.inputs = kernel.inputArgs;
    step.sizes = kernel.sizeArgs;
    step.gridCode = kernel.gridCode;
    code.kernels[kernel.step] = step;
  }
  // The steps (a step with size classes has several entries).
  size_t steps = kernels.empty() ? 0 : kernels.back().step + 1;
  // Kernels to compile: the steps' own and the cuDNN steps' epilogues.
  unsigned distinct = 0, distinctSteps = 0, epilogues = 0;
  for (const mlir::kiln::GeneratedKernel &kernel : kernels) {
    distinct += !kernel.name.empty() && kernel.sameAs < 0;
    distinctSteps += !kernel.name.empty() && kernel.sameAs < 0 && kernel.library.empty() &&
                     kernel.sizeClass.empty();
    epilogues += !kernel.name.empty() && !kernel.library.empty();
  }
  llvm::errs() << "kilnc: " << generated << " of " << steps - copies
               << " steps have generated kernels";
  if (distinctSteps < generated)
    llvm::errs() << " (" << distinctSteps << " distinct)";
  if (cublas)
    llvm::errs() << ", " << cublas << (cublas == 1 ? " is a cuBLASLt call" : " are cuBLASLt calls");
  if (cudnn)
    llvm::errs() << ", " << cudnn << (cudnn == 1 ? " is a cuDNN call" : " are cuDNN calls");
  if (epilogues)
    llvm::errs() << " (with " << epilogues
                 << (epilogues == 1 ? " epilogue kernel" : " epilogue kernels")
                 << " for when cuDNN has no fused engine)";
  size_t onHost = steps - copies - generated - cublas - cudnn;
  llvm::errs() << "; " << onHost << (onHost == 1 ? " runs" : " run") << " on the host";
  if (copies)
    llvm::errs() << " (and " << copies << " copies between host and device, "
                 << transferBytes(plan) << " a run)";
  llvm::errs() << "\n";
  if (options.target == Target::CudaEmu) {
    // Built even when empty: the library marks the executable as cuda-emu.
    std::string library, error;
    bool cached = false;
    auto start = std::chrono::steady_clock::now();
    mlir::kiln::EmuBuild build;
    build.sanitizers = options.emuSanitize;
    build.profile = options.emuProfile;
    if (build.profile && codegen::haveNvrtc()) {
      // Occupancy needs each kernel's registers and shared memory on sm_90.
      std::string source;
      for (const mlir::kiln::GeneratedKernel &kernel : kernels)
        if (!kernel.name.empty() && kernel.sameAs < 0)
          source += kernel.source + "\n";
      if (!source.empty()) {
        codegen::NvrtcResult compiled = codegen::compileCudaCached(
            codegen::CompileCache::fromEnvironment(), source, plan.getName().str() + ".cu",
            "sm_90");
        for (const auto &[name, r] : compiled.resources)
          build.resources[name] = {r.registers, r.sharedBytes};
        if (!compiled.ok)
          llvm::errs() << "kilnc: warning: NVRTC did not compile the kernels for sm_90, so the "
                          "profile has no registers or occupancy:\n"
                       << compiled.log << "\n";
      }
    }
    if (!mlir::kiln::buildEmuLibrary(kernels, build, library, error, &cached)) {
      llvm::errs() << "kilnc: error: " << error << "\n";
      return failure();
    }
    llvm::errs() << "kilnc: cuda-emu kernels: "
                 << (cached ? std::string("from the kernel cache")
                            : "built in " + seconds(std::chrono::steady_clock::now() - start))
                 << "\n";
    code.blobs.push_back({"cuda-emu", "elf-so", std::move(library)});
    clock.mark("host-compile");
    return success();
  }
  if (distinct == 0)
    return success();
  // One translation unit per architecture, all kernels in it; remember
  // where each kernel starts, to name it in NVRTC's errors.
  std::string source;
  std::vector<std::pair<unsigned, const mlir::kiln::GeneratedKernel *>> firstLines;
  for (const mlir::kiln::GeneratedKernel &kernel : kernels)
    if (!kernel.name.empty() && kernel.sameAs < 0) {
      firstLines.push_back(
          {1 + static_cast<unsigned>(std::count(source.begin(), source.end(), '\n')), &kernel});
      source += kernel.source + "\n";
    }
  auto cache = codegen::CompileCache::fromEnvironment();
  for (auto [index, arch] : llvm::enumerate(options.archs)) {
    auto start = std::chrono::steady_clock::now();
    bool cached = false;
    codegen::NvrtcResult compiled =
        codegen::compileCudaCached(cache, source, plan.getName().str() + ".cu", arch, &cached);
    llvm::errs() << "kilnc: [" << index + 1 << "/" << options.archs.size() << "] " << distinct
                 << " kernels for " << arch << ": "
                 << (cached ? std::string("from the kernel cache")
                            : "NVRTC " + seconds(std::chrono::steady_clock::now() - start))
                 << "\n";
    if (!compiled.ok) {
      llvm::errs() << "kilnc: error: NVRTC failed for " << arch << ":\n" << compiled.log << "\n";
      nameKernelsOfErrors(compiled.log, firstLines);
      return failure();
    }
    code.blobs.push_back({arch, "ptx", compiled.ptx});
    code.blobs.push_back({arch, "cubin", compiled.cubin});
  }
  clock.mark("nvrtc");
  return success();
}

LogicalResult writeKernelSources(ModuleOp module, const CompileOptions &options,
                                 llvm::StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    llvm::errs() << "kilnc: error: cannot create '" << dir << "': " << ec.message() << "\n";
    return failure();
  }
  unsigned written = 0, total = 0, shared = 0;
  for (auto func : module.getOps<func::FuncOp>())
    for (const mlir::kiln::GeneratedKernel &kernel :
         mlir::kiln::generateKernels(func, codeGenOptions(options))) {
      total += kernel.sizeClass.empty(); // a step's size classes are more kernels of it
      shared += kernel.sameAs >= 0;
      if (kernel.name.empty() || kernel.sameAs >= 0)
        continue;
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, kernel.name + ".cu");
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        llvm::errs() << "kilnc: error: cannot write '" << path << "': " << ec.message() << "\n";
        return failure();
      }
      os << kernel.source;
      ++written;
    }
  llvm::errs() << "kilnc: wrote " << written << " kernels for " << total << " steps to " << dir;
  if (shared)
    llvm::errs() << " (" << shared << " steps launch a kernel another step has)";
  llvm::errs() << "\n";
  return success();
}

} // namespace driver
} // namespace kiln
