//===- KernelGenerator.cpp - one kernel per step --------------------------===//

#include "kiln/CodeGen/KernelGenerator.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/Lowering/LibraryCalls.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

std::string locationOf(exec::StepOp step) {
  for (Operation &op : step.getBody().front())
    if (auto loc = llvm::dyn_cast<FileLineColLoc>(op.getLoc()))
      return loc.getFilename().str() + ":" + std::to_string(loc.getLine());
  return "";
}

std::string nameOf(exec::StepOp step) {
  std::vector<std::string> ops;
  for (Operation &op : step.getBody().front().without_terminator())
    ops.push_back(op.getName().stripDialect().str());
  std::string joined = llvm::join(ops, "+");
  return step.getKind() ? step.getKind()->str() + "(" + joined + ")" : joined;
}

} // namespace

std::vector<GeneratedKernel> mlir::kiln::generateKernels(func::FuncOp plan,
                                                         const CodeGenOptions &options) {
  std::vector<GeneratedKernel> kernels;
  unsigned index = 0;
  for (exec::StepOp step : plan.getBody().getOps<exec::StepOp>()) {
    GeneratedKernel kernel;
    kernel.step = index++;
    kernel.stepName = nameOf(step);
    kernel.location = locationOf(step);
    Operation &first = step.getBody().front().front();
    kernel.kind = step.getKind() ? step.getKind()->str() : first.getName().stripDialect().str();
    std::string base = step.getKind() ? step.getKind()->str() : kernel.kind;
    kernel.name = "kiln_" + base + "_" + std::to_string(kernel.step);
    bool oneReduction = !step.getKind() && isRowReductionOp(&first);
    bool oneMatmul = !step.getKind() && llvm::isa<MatMulOp>(first);
    bool oneConv = !step.getKind() && llvm::isa<Conv2dOp>(first);
    auto impl = step->getAttrOfType<StringAttr>(kImplAttr);
    auto gemm = step->getAttrOfType<DictionaryAttr>(kGemmAttr);
    if (impl && impl.getValue() == "cublaslt" && gemm) {
      kernel.name.clear();
      auto text = [&](StringRef field) {
        auto v = gemm.getAs<StringAttr>(field);
        return v ? v.getValue().str() : std::string("?");
      };
      auto reason = step->getAttrOfType<StringAttr>(kImplReasonAttr);
      kernel.library = "cuBLASLt matmul (epilogue " + text("epilogue") + ", compute " +
                       text("compute") + ")";
      kernel.reason = reason ? reason.getValue().str() : "";
    } else if (auto conv = step->getAttrOfType<DictionaryAttr>(kConvAttr);
               impl && impl.getValue() == "cudnn" && conv) {
      kernel.name.clear();
      auto text = [&](StringRef field) {
        auto v = conv.getAs<StringAttr>(field);
        return v ? v.getValue().str() : std::string("?");
      };
      auto reason = step->getAttrOfType<StringAttr>(kImplReasonAttr);
      kernel.library = "cuDNN convolution (" + text("type") + ", epilogue " + text("epilogue") + ")";
      kernel.reason = reason ? reason.getValue().str() : "";
    } else if (llvm::isa<TransferOp>(first) && !step.getKind()) {
      kernel.name.clear();
      kernel.reason = "a copy between host and device, not a kernel";
    } else if (step.getKind() && *step.getKind() == "attention") {
      emitAttentionKernel(step, kernel);
    } else if ((step.getKind() && *step.getKind() == "conv_epilogue") || oneConv) {
      emitConvKernel(step, kernel);
    } else if ((step.getKind() &&
         (*step.getKind() == "matmul_epilogue" || *step.getKind() == "horizontal")) ||
        oneMatmul) {
      emitMatmulKernel(step, kernel, options);
    } else if ((step.getKind() && *step.getKind() == "reduction") || oneReduction) {
      emitReductionKernel(step, kernel);
    } else if (!step.getKind() || *step.getKind() == "loop") {
      // An unfused elementwise op is a one-op loop.
      emitLoopKernel(step, kernel);
    } else {
      kernel.name.clear();
      kernel.reason = "'" + kernel.kind + "' kernels are not generated yet";
    }
    if (impl && impl.getValue() == "generated")
      if (auto reason = step->getAttrOfType<StringAttr>(kImplReasonAttr))
        kernel.whyGenerated = reason.getValue().str();
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}
