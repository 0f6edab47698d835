//===- Placement.cpp - ops on the device, or on the host -----------------===//
//
// The device is where kiln has code for an op; the host is the fallback.
// Which ops have device code is whyNoDeviceCode (kiln/IR/OpClasses.h), the
// list the kernel emitters consult too. A cost model keeps small ops that
// continue a host chain on the host (hostIsCheaper).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/Transforms/OpEvaluator.h"
#include "kiln/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cstdio>

#include <map>
#include <set>

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNPLACE
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

// The cost model's constants: a conservative PCIe link and kernel launch,
// and a host core's throughput on the reference kernels.
constexpr double kLaunchSeconds = 5e-6;
constexpr double kCopyLatencySeconds = 10e-6;
constexpr double kCopyBytesPerSecond = 25e9;
constexpr double kHostSecondsPerElement = 1e-9;
constexpr double kHostSecondsPerMultiplyAdd = 1e-10;

int64_t bytesOf(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  int64_t width = std::max<int64_t>(1, tensor.getElementTypeBitWidth() / 8);
  return tensor.getNumElements() * width;
}

/// Why `op`, which has device code, is cheaper on the host, or "": when it
/// continues a host chain (`onHost` says which values are host results)
/// and its host time beats a launch plus the copies the device would need.
std::string hostIsCheaper(Operation *op, const llvm::DenseSet<Value> &onHost) {
  // Over symbolic sizes the costs have no sizes: the device, as for any op
  // that does not continue a host chain.
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 || touchesSymbolicSizes(op))
    return "";
  bool continuesHostChain = false;
  double copies = 0.0;
  for (Value operand : op->getOperands()) {
    bool literal = llvm::isa_and_nonnull<ConstantOp, WeightOp>(operand.getDefiningOp());
    bool hostResult = onHost.contains(operand);
    if (!literal && !hostResult && !llvm::isa<BlockArgument>(operand))
      return ""; // a device op's result: never between two device ops
    continuesHostChain |= hostResult;
    if (!literal) // a copy in on the device
      copies += kCopyLatencySeconds + bytesOf(operand.getType()) / kCopyBytesPerSecond;
  }
  if (!continuesHostChain)
    return "";
  // The result crosses once either way: to the host users when computed on
  // the device, to the device users when computed on the host.
  Value result = op->getResult(0);
  double resultCopy = kCopyLatencySeconds + bytesOf(result.getType()) / kCopyBytesPerSecond;
  auto hostUser = [](Operation *user) {
    return llvm::isa<func::ReturnOp>(user) || !whyNoDeviceCode(user).empty();
  };
  if (llvm::any_of(result.getUsers(), hostUser))
    copies += resultCopy;
  double device = kLaunchSeconds + copies;
  // The host touches every element it reads or writes; a matmul or a
  // convolution does its multiply-adds.
  double host = static_cast<double>(estimateEvaluationCost(op)) *
                (llvm::isa<MatMulOp, Conv2dOp>(op) ? kHostSecondsPerMultiplyAdd
                                                   : kHostSecondsPerElement);
  if (!llvm::all_of(result.getUsers(), hostUser))
    host += resultCopy;
  if (host >= device)
    return "";
  char text[160];
  std::snprintf(text, sizeof(text),
                "it continues a host chain and the cost model puts it there (%.1f us on the "
                "host, %.1f us on the device with its copies)",
                host * 1e6, device * 1e6);
  return text;
}

struct KilnPlacePass : public ::mlir::kiln::impl::KilnPlaceBase<KilnPlacePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    transfers.clear();
    argumentTransfers.clear();
    if (func.isExternal())
      return;
    auto parsed = parseDevice(device);
    if (!parsed || parsed->first != DeviceKind::CUDA) {
      func.emitError("kiln-place: device must be cuda:N, got '") << device << "'";
      return signalPassFailure();
    }
    deviceKind = parsed->first;
    ordinal = parsed->second;
    for (const std::string &name : hostOps)
      if (!RegisteredOperationName::lookup("kiln." + name, &getContext())) {
        func.emitError("kiln-place: host-ops names '") << name << "', which is not a kiln op";
        return signalPassFailure();
      }

    std::set<std::pair<const void *, std::string>> warned;
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    bool refused = false; // with --no-host-fallback: every host op reported
    llvm::DenseSet<Value> onHost; // results of ops placed on the host
    for (Operation *op : ops) {
      if (llvm::isa<func::ReturnOp>(op)) {
        // The signature keeps its devices (the host, as the frontends
        // write it): each result is copied to where the function says.
        for (OpOperand &operand : op->getOpOperands()) {
          auto declared = getEncoding(func.getResultTypes()[operand.getOperandNumber()]);
          if (declared)
            operand.set(on(operand.get(), declared.getDeviceKind(),
                           declared.getDeviceOrdinal(), op));
        }
        continue;
      }
      if (llvm::isa<ConstantOp, WeightOp, TransferOp>(op))
        continue;
      // Other dialects' ops (a call) read host values.
      std::string why = llvm::isa_and_nonnull<KilnDialect>(op->getDialect())
                            ? whyNoDeviceCode(op)
                            : "it is not a kiln op";
      if (why.empty() && llvm::is_contained(hostOps, op->getName().stripDialect().str()))
        why = "--host-ops keeps it there";
      if (why.empty() && !noHostFallback)
        why = hostIsCheaper(op, onHost);
      if (!why.empty() && noHostFallback) {
        op->emitError("'") << op->getName().getStringRef()
                           << "' would run on the host, which --no-host-fallback refuses: " << why;
        refused = true;
        continue;
      }
      if (!why.empty()) {
        for (OpOperand &operand : op->getOpOperands())
          operand.set(on(operand.get(), DeviceKind::CPU, 0, op));
        for (Value result : op->getResults())
          onHost.insert(result);
        // Once per model location and reason: a node the importer made
        // of several ops is one note.
        if (warn && warned.insert({op->getLoc().getAsOpaquePointer(), why}).second)
          op->emitWarning("runs on the host: ") << why << "; its operands and results are "
                                                   "copied between host and device";
        continue;
      }
      for (OpOperand &operand : op->getOpOperands())
        operand.set(on(operand.get(), deviceKind, ordinal, op));
      for (OpResult result : op->getResults())
        result.setType(retyped(result.getType(), deviceKind, ordinal));
    }
    if (refused)
      return signalPassFailure();
    // Constants and weights that only device ops read move there (their
    // transfers fold away); the rest stay. (Collected first: the loop
    // erases transfers, which may be in `ops`.)
    SmallVector<Operation *> literals;
    for (Operation *op : ops)
      if (llvm::isa<ConstantOp, WeightOp>(op))
        literals.push_back(op);
    for (Operation *op : literals) {
      Value value = op->getResult(0);
      bool deviceOnly = !value.use_empty() && llvm::all_of(value.getUsers(), [&](Operation *u) {
        auto transfer = llvm::dyn_cast<TransferOp>(u);
        auto encoding = transfer ? getEncoding(transfer.getType()) : TensorEncodingAttr();
        return encoding && encoding.getDeviceKind() == deviceKind &&
               encoding.getDeviceOrdinal() == ordinal;
      });
      if (!deviceOnly)
        continue;
      value.setType(retyped(value.getType(), deviceKind, ordinal));
      for (Operation *u : llvm::make_early_inc_range(value.getUsers())) {
        u->getResult(0).replaceAllUsesWith(value);
        u->erase();
      }
    }
  }

  RankedTensorType retyped(Type type, DeviceKind kind, int64_t number) {
    auto tensor = llvm::cast<RankedTensorType>(type);
    return RankedTensorType::get(tensor.getShape(), tensor.getElementType(),
                                 getEncoding(tensor).withDevice(kind, number));
  }

  /// `value` on the given device: itself, or one transfer of it placed
  /// right after its definition (shared by every user).
  Value on(Value value, DeviceKind kind, int64_t number, Operation *user) {
    auto encoding = getEncoding(value.getType());
    if (!encoding || (encoding.getDeviceKind() == kind && encoding.getDeviceOrdinal() == number))
      return value;
    auto key = std::make_pair(value.getAsOpaquePointer(), static_cast<int>(kind));
    if (Value done = transfers.lookup(key))
      return done;
    OpBuilder builder(user->getContext());
    auto argument = llvm::dyn_cast<BlockArgument>(value);
    if (Operation *def = value.getDefiningOp()) {
      builder.setInsertionPointAfter(def);
    } else {
      // The arguments' copies come first, in argument order.
      auto before = argumentTransfers.lower_bound(argument.getArgNumber());
      if (before != argumentTransfers.begin())
        builder.setInsertionPointAfter(std::prev(before)->second);
      else
        builder.setInsertionPointToStart(argument.getOwner());
    }
    std::string to = kind == DeviceKind::CPU ? "cpu" : "cuda:" + std::to_string(number);
    Value moved = builder.create<TransferOp>(value.getLoc(), value, builder.getStringAttr(to));
    if (argument)
      argumentTransfers[argument.getArgNumber()] = moved.getDefiningOp();
    transfers[key] = moved;
    return moved;
  }

  DeviceKind deviceKind = DeviceKind::CUDA;
  int64_t ordinal = 0;
  llvm::DenseMap<std::pair<const void *, int>, Value> transfers;
  std::map<unsigned, Operation *> argumentTransfers; ///< copies of arguments
};

} // namespace
