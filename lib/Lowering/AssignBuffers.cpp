//===- AssignBuffers.cpp - arena offsets with liveness-based reuse --------===//

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Lowering/LibraryCalls.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/StepSchedule.h"
#include "kiln/Runtime/LibraryAlignment.h"

#include <map>

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNBUFFERS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// cuBLASLt and cuDNN choose (and some of their kernels need) operands and
/// workspaces on 256-byte boundaries, as cudaMalloc gives them; XLA and
/// TensorRT align their buffers so too.
constexpr int64_t kLibraryAlignment = ::kiln::rt::kLibraryAlignment;

struct Block {
  int64_t offset, size;
  int64_t producer;              ///< step index
  SmallVector<int64_t> readers;  ///< step indices
  bool liveToEnd;                ///< a function result
};

struct KilnAssignBuffersPass
    : public ::mlir::kiln::impl::KilnAssignBuffersBase<KilnAssignBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (alignment < 1 || (alignment & (alignment - 1))) {
      func.emitError("alignment must be a power of two");
      return signalPassFailure();
    }
    FailureOr<StepSchedule> schedule = StepSchedule::build(func);
    if (failed(schedule))
      return signalPassFailure();

    std::vector<Block> blocks;
    int64_t peak = 0, unshared = 0;
    for (exec::StepOp step : schedule->getSteps()) {
      int64_t t = schedule->indexOf(step);
      SmallVector<int64_t> offsets;
      for (Value result : step.getResults()) {
        FailureOr<int64_t> bytes = bufferBytes(step, result);
        if (failed(bytes))
          return signalPassFailure();
        if (*bytes < 0) {
          // Sized by values read at run time: no bound to plan it at; the
          // loader places it after the arena per run (-1), unshared.
          offsets.push_back(-1);
          continue;
        }
        int64_t align = usedByLibrary(step, result)
                            ? std::max<int64_t>(alignment, kLibraryAlignment)
                            : alignment;
        // Blocks still needed by a step not ordered before this one.
        SmallVector<const Block *> busy;
        for (const Block &b : blocks)
          if (!isDeadBefore(b, t, *schedule))
            busy.push_back(&b);
        llvm::sort(busy, [](const Block *x, const Block *y) { return x->offset < y->offset; });
        int64_t offset = 0;
        for (const Block *b : busy) {
          if (offset + *bytes <= b->offset)
            break;
          offset = llvm::alignTo(std::max(offset, b->offset + b->size), align);
        }
        Block block{offset, *bytes, t, {}, false};
        for (Operation *user : result.getUsers()) {
          if (auto reader = llvm::dyn_cast<exec::StepOp>(user))
            block.readers.push_back(schedule->indexOf(reader));
          else
            block.liveToEnd = true; // returned (or used outside any step)
        }
        blocks.push_back(block);
        offsets.push_back(offset);
        peak = std::max(peak, offset + *bytes);
        unshared += *bytes;
      }
      step.setOffsetsAttr(Builder(step.getContext()).getDenseI64ArrayAttr(offsets));
    }
    Builder b(&getContext());
    // Library workspaces follow the buffers: one per stream, as large as
    // the largest its calls want (calls on one stream run one at a time).
    std::map<int64_t, int64_t> workspace; // stream -> bytes
    for (exec::StepOp step : schedule->getSteps())
      if (int64_t bytes = workspaceBytes(step))
        workspace[step.getStream().value_or(0)] =
            std::max(workspace[step.getStream().value_or(0)], bytes);
    std::map<int64_t, int64_t> workspaceOffset;
    int64_t end = peak;
    int64_t workspaceAlign = std::max<int64_t>(alignment, kLibraryAlignment);
    for (auto [stream, bytes] : workspace) {
      workspaceOffset[stream] = llvm::alignTo(end, workspaceAlign);
      end = workspaceOffset[stream] + bytes;
    }
    for (exec::StepOp step : schedule->getSteps())
      if (workspaceBytes(step))
        step->setAttr(kWorkspaceOffsetAttr,
                      b.getI64IntegerAttr(workspaceOffset[step.getStream().value_or(0)]));
    if (end > peak)
      func->setAttr("exec.workspace_bytes", b.getI64IntegerAttr(end - peak));
    peak = end;
    func->setAttr("exec.arena_bytes", b.getI64IntegerAttr(peak));
    func->setAttr("exec.unshared_bytes", b.getI64IntegerAttr(unshared));
  }

  static bool isLibraryCall(Operation *op) {
    return op->hasAttr(kGemmAttr) || op->hasAttr(kConvAttr);
  }

  /// Whether a library call writes or reads `value`.
  static bool usedByLibrary(exec::StepOp step, Value value) {
    return isLibraryCall(step) ||
           llvm::any_of(value.getUsers(), [](Operation *user) {
             return llvm::isa<exec::StepOp>(user) && isLibraryCall(user);
           });
  }

  static int64_t workspaceBytes(exec::StepOp step) {
    auto call = step->getAttrOfType<DictionaryAttr>(kGemmAttr);
    if (!call)
      call = step->getAttrOfType<DictionaryAttr>(kConvAttr);
    auto bytes = call ? call.getAs<IntegerAttr>("workspace") : nullptr;
    return bytes ? std::max<int64_t>(0, bytes.getInt()) : 0;
  }

  FailureOr<int64_t> bufferBytes(exec::StepOp step, Value value) {
    auto type = llvm::cast<RankedTensorType>(value.getType());
    std::optional<::kiln::ref::DType> dtype = toReferenceDType(type.getElementType());
    if (!dtype)
      return step.emitOpError("result of unsupported element type ") << type.getElementType();
    // A buffer of symbolic size is planned at the symbols' largest values,
    // so one plan holds every size in the ranges; -1 for one sized by
    // values read at run time.
    SmallVector<SizeSymbol> symbols = getSizeSymbols(step->getParentOfType<func::FuncOp>());
    if (usesComputedSymbols(type, symbols))
      return -1; // their ranges are loose bounds, far past what runs use
    std::optional<int64_t> elements = maxElements(type, symbols);
    if (!elements || *elements > ::kiln::ref::kMaxElements)
      return step.emitOpError("result ")
             << type << " has no bounded, non-negative size over the ranges of '"
             << kSizeSymbolsAttrName << "'";
    int64_t bytes = std::max<int64_t>(1, *elements * ::kiln::ref::byteWidth(*dtype));
    return (bytes + alignment - 1) / alignment * alignment;
  }

  /// A block may be overwritten by step `t` once it is not a result and its
  /// producer and readers all completed before `t` starts.
  static bool isDeadBefore(const Block &b, int64_t t, const StepSchedule &s) {
    if (b.liveToEnd || b.producer == t || !s.happensBefore(b.producer, t))
      return false;
    return llvm::all_of(b.readers, [&](int64_t r) { return r != t && s.happensBefore(r, t); });
  }
};

} // namespace
