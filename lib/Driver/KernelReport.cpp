//===- KernelReport.cpp - each step's kernel, compiled with NVRTC ---------===//

#include "kiln/Driver/Reports.h"

#include "kiln/CodeGen/CompileCache.h"
#include "kiln/CodeGen/Nvrtc.h"
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace kiln {
namespace driver {

LogicalResult reportKernels(ModuleOp module, const std::vector<std::string> &archs,
                            const mlir::kiln::CodeGenOptions &codeGen, llvm::raw_ostream &os) {
  bool ok = true;
  auto cache = codegen::CompileCache::fromEnvironment();
  for (auto func : module.getOps<func::FuncOp>()) {
    os << "kilnc: kernels @" << func.getName() << " (NVRTC " << codegen::nvrtcVersion() << "):\n";
    std::vector<std::string> symbolNames;
    for (const mlir::kiln::SizeSymbol &symbol : mlir::kiln::getSizeSymbols(func))
      symbolNames.push_back(symbol.name);
    for (const mlir::kiln::GeneratedKernel &kernel : mlir::kiln::generateKernels(func, codeGen)) {
      os << "  #" << kernel.step << " " << kernel.stepName;
      if (!kernel.sizeClass.empty()) // chosen per run over the step's own kernel
        os << ", for " << kernel.sizeClassText;
      if (!kernel.library.empty()) {
        os << ": " << kernel.library << ": " << kernel.reason << "\n";
        if (kernel.name.empty())
          continue;
        // A cuDNN step's epilogue, for when no engine takes the fused graph.
        os << "      if cuDNN has no engine for the fused graph: the plain convolution, then";
      }
      if (kernel.name.empty()) {
        os << ": no kernel (runs on the host): " << kernel.reason << "\n";
        continue;
      }
      if (kernel.sameAs >= 0) {
        os << (kernel.library.empty() ? ": " : " ") << kernel.name
           << " (the same kernel as #" << kernel.sameAs << ")\n";
        continue;
      }
      os << (kernel.library.empty() ? ": " : " ") << kernel.name << ", " << kernel.unit << ", ";
      if (kernel.gridCode.empty())
        os << kernel.gridBlocks;
      else // over symbolic sizes: "min(max(ceildiv(batch * 4096, 256), 1), 4096)"
        os << ::kiln::ref::sizeCodeText(kernel.gridCode.data(), kernel.gridCode.size(),
                                        symbolNames, {});
      os << " x " << kernel.blockThreads << " threads";
      if (!kernel.sizeArgs.empty()) {
        os << "; sizes passed:";
        for (AffineExpr size : kernel.sizeArgs)
          os << " " << mlir::kiln::sizeString(size) << " = "
             << symbolNames[llvm::cast<AffineSymbolExpr>(size).getPosition()];
      }
      os << "\n";
      if (!kernel.whyGenerated.empty())
        os << "      generated, not a library call: " << kernel.whyGenerated << "\n";
      for (const std::string &arch : archs) {
        codegen::NvrtcResult compiled =
            codegen::compileCudaCached(cache, kernel.source, kernel.name + ".cu", arch);
        if (!compiled.ok) {
          os << "      " << arch << ": error: " << compiled.log << "\n";
          ok = false;
          continue;
        }
        const codegen::KernelResources &r = compiled.resources[kernel.name];
        os << "      " << arch << ": " << r.summary(kernel.dynamicSharedBytes) << "\n";
      }
    }
  }
  return success(ok);
}

} // namespace driver
} // namespace kiln
