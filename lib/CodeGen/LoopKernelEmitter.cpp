//===- LoopKernelEmitter.cpp - elementwise regions as one loop kernel -----===//
//
// One thread per element of the region's output (grid-stride), every value
// of the body computed in registers at the index the output element needs:
// broadcasting and row-major reshapes are index arithmetic with constant
// strides, so nothing but the inputs and outputs touches memory. Each value
// is emitted once per distinct index (a value read through two different
// broadcasts is computed twice, cheaply, rather than stored).
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "kiln/CodeGen/DevicePrelude.h"
#include "kiln/CodeGen/KernelGenerator.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/IR/SymbolicSizes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <sstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr unsigned kThreadsPerBlock = 256;

class LoopEmitter : public KernelEmitter {
public:
  LoopEmitter(exec::StepOp step, GeneratedKernel &kernel)
      : KernelEmitter(step, kernel) {}

  void emit() {
    Block &body = step.getBody().front();
    auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
    // The iteration space: every output has the same shape.
    auto outType = llvm::cast<RankedTensorType>(yield.getValues().front().getType());
    shape = getDimSizes(outType);
    for (Value v : yield.getValues())
      if (getDimSizes(llvm::cast<RankedTensorType>(v.getType())) != shape)
        return fail("its outputs differ in shape");
    // An output in another layout (a conversion back to a model result's
    // layout) is stored element by element at its physical offset.
    bool rowMajorOutputs = llvm::all_of(step.getResults(), [](Value v) {
      return getEncoding(v.getType()).isRowMajor();
    });
    for (Operation &op : body.without_terminator())
      if (!elements.supported(&op))
        return;

    std::vector<std::string> params =
        kernelParameters(step, elements, kernel, /*anyOutputLayout=*/true);
    if (!kernel.reason.empty())
      return;

    MLIRContext *context = step.getContext();
    AffineExpr count = productOf(shape, context);
    // Groups of 4 consecutive elements with 16-byte loads and stores when
    // every output is f32 and the last dimension holds whole groups (so a
    // group never straddles a row, and row-major offsets stay multiples of
    // 4); one element per iteration otherwise, and where an element is a
    // loop over a window (four copies of the loop would only add code).
    bool windows = llvm::any_of(body.without_terminator(),
                                [](Operation &op) { return isWindowOp(&op); });
    // An input read with one 16-byte load per group: f32, row-major, its
    // last dimension the output's, every dimension the output's or 1 (so
    // the offset from the iteration index stays inside it even when it is
    // used only through a reshape).
    auto vectorizable = [&](BlockArgument arg) {
      auto type = llvm::cast<RankedTensorType>(arg.getType());
      if (!type.getElementType().isF32() || !getEncoding(type).isRowMajor() ||
          type.getRank() == 0 || type.getRank() > static_cast<int64_t>(shape.size()))
        return false;
      SmallVector<AffineExpr> dims = getDimSizes(type);
      if (dims.back() != shape.back())
        return false;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (dims[d] != shape[shape.size() - type.getRank() + d] && type.getDimSize(d) != 1)
          return false;
      return true;
    };
    // Any other input (a transpose or a reshape of it, a gather) is read
    // element by element: 4 per thread would be 4 strided requests, so
    // those kernels take one element per thread, which coalesces.
    auto readPerElement = [&](BlockArgument arg) {
      auto type = llvm::cast<RankedTensorType>(arg.getType());
      return !arg.use_empty() && !ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]) &&
             type.getRank() > 0 && type.getShape().back() != 1 && !vectorizable(arg);
    };
    int64_t group = 1;
    auto lastSize = shape.empty() ? AffineConstantExpr()
                                  : llvm::dyn_cast<AffineConstantExpr>(shape.back());
    if (rowMajorOutputs && !windows && lastSize && lastSize.getValue() % 4 == 0 &&
        llvm::all_of(yield.getValues(),
                     [](Value v) {
                       return llvm::cast<RankedTensorType>(v.getType())
                           .getElementType()
                           .isF32();
                     }) &&
        llvm::none_of(body.getArguments(), readPerElement))
      group = 4;

    // The iteration index, one variable per dimension.
    std::vector<std::string> lines;
    if (group > 1)
      lines.push_back("const long long linear = group * 4LL;");
    std::vector<std::string> index = ElementEmitter::decompose(shape, "linear", "i", lines);
    std::vector<std::vector<std::string>> laneIndex;
    for (int64_t lane = 0; lane < group; ++lane) {
      std::vector<std::string> at = index;
      if (lane > 0)
        at.back() = "(" + index.back() + " + " + std::to_string(lane) + "LL)";
      laneIndex.push_back(at);
    }
    if (group > 1) {
      // One vector load per input that varies along the last dimension.
      Block &entry = step.getBody().front();
      for (BlockArgument arg : entry.getArguments()) {
        auto type = llvm::cast<RankedTensorType>(arg.getType());
        if (ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]) || arg.use_empty() ||
            !vectorizable(arg))
          continue;
        std::vector<std::string> first = ElementEmitter::broadcastIndex(arg, laneIndex[0]);
        std::vector<AffineExpr> argStrides =
            ElementEmitter::rowMajorStrides(getDimSizes(type), type.getContext());
        std::string offset;
        for (size_t d = 0; d < first.size(); ++d)
          if (type.getDimSize(d) != 1)
            offset += (offset.empty() ? "" : " + ") + ElementEmitter::scaled(first[d], argStrides[d]);
        std::string name = "in" + std::to_string(arg.getArgNumber()) + "v";
        lines.push_back("const float4 " + name + " = kiln_load_vec<float4>(in" +
                        std::to_string(arg.getArgNumber()) + " + " +
                        (offset.empty() ? "0" : "(" + offset + ")") + ");");
        const char *fields[] = {".x", ".y", ".z", ".w"};
        for (int64_t lane = 0; lane < 4; ++lane)
          elements.seed(arg, ElementEmitter::broadcastIndex(arg, laneIndex[lane]),
                        name + fields[lane]);
      }
    }
    std::vector<std::string> stores;
    for (auto [k, v] : llvm::enumerate(yield.getValues())) {
      std::vector<std::string> values;
      for (int64_t lane = 0; lane < group; ++lane)
        values.push_back(elements.valueAt(v, laneIndex[lane]));
      if (!kernel.reason.empty())
        return;
      if (group > 1)
        stores.push_back("kiln_store_vec(out" + std::to_string(k) + " + group * 4LL, make_float4(" +
                         llvm::join(values, ", ") + "));");
      else
        stores.push_back("out" + std::to_string(k) + "[" +
                         physicalOffset(llvm::cast<RankedTensorType>(step.getResult(k).getType()),
                                        index) +
                         "] = " + ElementEmitter::store(v.getType(), values[0]) + ";");
    }

    kernel.blockThreads = kThreadsPerBlock;
    AffineExpr iterations = count.floorDiv(group);
    if (auto constant = llvm::dyn_cast<AffineConstantExpr>(iterations))
      kernel.gridBlocks = gridStrideBlocks(constant.getValue(), kThreadsPerBlock);
    else
      kernel.gridCode = gridCode(iterations, kThreadsPerBlock, kGridStrideBlocks);
    kernel.unit = "CUDA cores";

    std::ostringstream os;
    os << ElementEmitter::includesFor(step);
    if (group > 1) // kiln_load_vec, kiln_store_vec
      os << ::kiln::codegen::devicePrelude();
    os << "// Generated by kiln: " << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    std::string var = group > 1 ? "group" : "linear";
    os << (group > 1 ? "// One thread per group of 4 output elements (16-byte loads and stores;\n"
                       "// grid-stride); broadcasts and reshapes are index arithmetic, so only\n"
                       "// inputs and outputs touch memory.\n"
           : windows ? "// One thread per output element (grid-stride), each a loop over its\n"
                       "// window of the input.\n"
                     : "// One thread per output element (grid-stride); data movement is index\n"
                       "// arithmetic, so only inputs and outputs touch memory.\n")
       // A window's loop (f64 math especially) needs more registers than
       // ptxas targets given only the block size: a minimum of resident
       // blocks sets the target instead, as for the tiled kernels.
       << "extern \"C\" __global__ void "
       << (windows ? tiledLaunchBounds(kThreadsPerBlock)
                   : "__launch_bounds__(" + std::to_string(kThreadsPerBlock) + ")")
       << "\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n"
       << "  const long long count = " << sizeText(iterations) << ";\n"
       << "  for (long long " << var << " = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
       << var << " < count;\n"
       << "       " << var << " += (long long)gridDim.x * blockDim.x) {\n";
    std::vector<std::string> computeLines = elements.takeLines();
    lines.insert(lines.end(), computeLines.begin(), computeLines.end());
    for (const std::string &line : lines)
      os << "    " << line << "\n";
    for (const std::string &line : stores)
      os << "    " << line << "\n";
    os << "  }\n}\n";
    kernel.source = os.str();
  }

private:
  /// Where the element at logical `index` lives in a `type` buffer: the
  /// iteration's linear index when row-major.
  static std::string physicalOffset(RankedTensorType type, const std::vector<std::string> &index) {
    if (getEncoding(type).isRowMajor())
      return "linear";
    std::vector<AffineExpr> strides = ElementEmitter::physicalStrideSizes(type);
    std::string offset;
    for (size_t d = 0; d < index.size(); ++d)
      if (type.getDimSize(d) != 1)
        offset += (offset.empty() ? "" : " + ") + ElementEmitter::scaled(index[d], strides[d]);
    return offset.empty() ? "0LL" : offset;
  }

  SmallVector<AffineExpr> shape;
};

} // namespace

void mlir::kiln::emitLoopKernel(exec::StepOp step, GeneratedKernel &kernel) {
  LoopEmitter(step, kernel).emit();
  discardIfFailed(kernel);
}
