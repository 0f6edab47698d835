//===- KernelGenerator.cpp - one kernel per step --------------------------===//

#include "kiln/CodeGen/KernelGenerator.h"

#include "ElementEmitter.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Lowering/LibraryCalls.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

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

/// The kernel's text without what differs between identical kernels: its
/// name and the model location in its header comment.
std::string canonicalText(const GeneratedKernel &kernel) {
  std::string text;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(kernel.source).split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.starts_with("// from "))
      text += line.str() + "\n";
  std::string canonical;
  for (size_t at = 0;;) {
    size_t found = text.find(kernel.name, at);
    canonical += text.substr(at, found - at);
    if (found == std::string::npos)
      break;
    canonical += "KILN_KERNEL";
    at = found + kernel.name.size();
  }
  // A kernel over symbolic sizes: its grid's and buffers' size codes (the
  // sizes it takes are in the text).
  auto codeText = [](llvm::ArrayRef<int64_t> code) {
    return llvm::join(llvm::map_range(code, [](int64_t c) { return std::to_string(c); }), ",");
  };
  canonical += "|" + codeText(kernel.gridCode);
  for (const std::vector<int64_t> &code : kernel.paramByteCodes)
    canonical += "|" + codeText(code);
  return canonical + "|" + std::to_string(kernel.gridBlocks) + "x" +
         std::to_string(kernel.blockThreads) + "|" + llvm::join(kernel.paramTypes, ",") + "|" +
         llvm::join(llvm::map_range(kernel.paramBytes, [](int64_t b) { return std::to_string(b); }),
                    ",") +
         "|" +
         llvm::join(llvm::map_range(kernel.inputArgs, [](uint32_t k) { return std::to_string(k); }),
                    ",");
}

/// Later steps whose kernel is identical to an earlier one launch that one.
void shareIdenticalKernels(std::vector<GeneratedKernel> &kernels) {
  std::map<std::string, const GeneratedKernel *> first;
  for (GeneratedKernel &kernel : kernels) {
    if (kernel.name.empty())
      continue;
    auto [it, inserted] = first.try_emplace(canonicalText(kernel), &kernel);
    if (inserted)
      continue;
    kernel.sameAs = static_cast<int>(it->second->step);
    kernel.name = it->second->name;
    kernel.source.clear();
  }
}

} // namespace

std::vector<GeneratedKernel> mlir::kiln::generateKernels(func::FuncOp plan,
                                                         const CodeGenOptions &options) {
  std::vector<GeneratedKernel> kernels;
  unsigned index = 0;

  for (exec::StepOp step : plan.getBody().getOps<exec::StepOp>()) {
    GeneratedKernel kernel;
    std::vector<GeneratedKernel> classes; // the step's size classes, if any
    kernel.step = index++;
    kernel.stepName = nameOf(step);
    kernel.location = locationOf(step);
    Operation &first = step.getBody().front().front();
    kernel.kind = step.getKind() ? step.getKind()->str() : first.getName().stripDialect().str();
    std::string base = step.getKind() ? step.getKind()->str() : kernel.kind;
    kernel.name = "kiln_" + base + "_" + std::to_string(kernel.step);
    // Other reductions (integer, or over leading axes) are per-element loops.
    bool oneReduction = !step.getKind() && hasRowReductionKernel(&first);
    // Integer matmuls and convolutions are per-element loops (isWindowOp).
    bool oneMatmul = !step.getKind() && llvm::isa<MatMulOp>(first) && !isWindowOp(&first);
    bool oneConv = !step.getKind() && llvm::isa<Conv2dOp>(first) && !isWindowOp(&first);
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
      std::string error;
      if (FailureOr<::kiln::rt::ConvCall> call = convCallFromAttr(conv, error); succeeded(call))
        emitLibraryEpilogueKernel(step, *call, kernel);
    } else if (llvm::isa<TransferOp>(first) && !step.getKind()) {
      kernel.name.clear();
      kernel.reason = "a copy between host and device, not a kernel";
    } else if (options.placed && exec::runsOnHost(step)) {
      kernel.name.clear();
      kernel.reason = "kiln-place put it on the host (its warning says why)";
    } else if (touchesSymbolicSizes(step) &&
               (step.getKind() ? *step.getKind() == "horizontal"
                               : llvm::isa<ArgSortOp>(first))) {
      // Over symbolic sizes the loop, reduction, convolution, matmul and
      // attention kernels take their sizes as arguments
      // (hasDeviceCodeOverSymbolicSizes); argsort and sibling matmuls
      // (never formed over symbolic sizes) take them as constants.
      kernel.name.clear();
      kernel.reason = "'" + kernel.kind + "' kernels take their sizes as constants so far, and "
                      "this step's sizes are known only at run time";
    } else if (!step.getKind() && llvm::isa<ArgSortOp>(first)) {
      emitArgSortKernel(step, kernel);
    } else if (step.getKind() && *step.getKind() == "attention") {
      emitAttentionKernel(step, kernel, options);
    } else if ((step.getKind() && *step.getKind() == "conv_epilogue") || oneConv) {
      emitConvKernel(step, kernel);
    } else if ((step.getKind() &&
         (*step.getKind() == "matmul_epilogue" || *step.getKind() == "horizontal")) ||
        oneMatmul) {
      emitMatmulKernel(step, kernel, options);
    } else if ((step.getKind() && *step.getKind() == "reduction") || oneReduction) {
      emitReductionKernel(step, kernel, classes);
    } else if (!step.getKind() || *step.getKind() == "loop") {
      // An unfused elementwise op is a one-op loop; a transpose that moves
      // the last dimension goes through shared memory, and pooling stages
      // its input rows there.
      if ((touchesSymbolicSizes(step) || !emitTiledTransposeKernel(step, kernel)) &&
          !emitPoolKernel(step, kernel))
        emitLoopKernel(step, kernel);
    } else {
      kernel.name.clear();
      kernel.reason = "'" + kernel.kind + "' kernels are not generated yet";
    }
    if (impl && impl.getValue() == "generated")
      if (auto reason = step->getAttrOfType<StringAttr>(kImplReasonAttr))
        kernel.whyGenerated = reason.getValue().str();
    kernels.push_back(std::move(kernel));
    for (GeneratedKernel &sizeClass : classes)
      kernels.push_back(std::move(sizeClass));
  }
  for (GeneratedKernel &kernel : kernels) {
    if (kernel.source.empty())
      continue;
    kernel.source = integerHelpersFor(kernel.source) + kernel.source;
    // A kernel taking sizes launches by size code even where its grid is
    // static (rows of a static count, each of a symbolic length).
    if (!kernel.sizeArgs.empty() && kernel.gridCode.empty()) {
      kernel.gridCode = {static_cast<int64_t>(::kiln::ref::SizeOp::Constant), kernel.gridBlocks};
      kernel.gridBlocks = 0;
    }
  }
  shareIdenticalKernels(kernels);
  return kernels;
}
