//===- FusionUtils.h - what every fusion pass shares ------------*- C++ -*-===//
//
// The fusion passes decide which ops go together; this file holds what they
// agree on: which ops are elementwise and which are cheap to recompute, the
// legality checks every region must pass (one device, no cycle, bounded
// size), the region builder, and the remarks that explain each decision.
// docs/fusion.md states the rules.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_FUSION_FUSIONUTILS_H
#define KILN_LIB_TRANSFORMS_FUSION_FUSIONUTILS_H

#include "kiln/IR/KilnOps.h"

#include "llvm/ADT/SetVector.h"

#include <string>

namespace mlir {
namespace kiln {
namespace fusion {

/// Bounds on one region, from the pass options.
struct Limits {
  int64_t maxOps = 32;
  int64_t maxInputs = 12;
  int64_t maxLive = 16;
};

/// Elementwise ops (unary, binary, comparisons, select, cast) and inference
/// batch normalisation (a per-channel affine map): each result element
/// depends only on the operand elements at the same (broadcast) index.
bool isElementwise(Operation *op);

/// Ops that move no data: a broadcast (index arithmetic) and a reshape
/// between row-major tensors.
bool isFreeDataMovement(Operation *op);

/// What loop fusion may put in a region: elementwise or free data movement.
inline bool isLoopFusible(Operation *op) {
  return isElementwise(op) || isFreeDataMovement(op);
}

/// Cheap enough to compute again in each consumer's kernel instead of once
/// into memory: arithmetic without transcendental functions, casts,
/// comparisons and free data movement (as XLA's "not expensive").
bool isCheapToDuplicate(Operation *op);

/// Why `op`, which has users outside a region, must not be copied into it
/// (too expensive, or it would take a matmul's or convolution's epilogue
/// away), or "" when it may be.
std::string whyNotDuplicated(Operation *op);

/// Reductions and row-wise normalisations the block-per-row kernel
/// computes: the anchors of reduction regions.
bool isReductionAnchor(Operation *op);

/// A top-level graph op a fusion pass may take: a kiln op in the function
/// body, not a constant, weight or region, and not a transfer or relayout
/// (those move data between devices or layouts).
bool isFusionCandidate(Operation *op);

/// A small splat literal, which a region clones instead of taking as input.
bool isInlinableConstant(Value value);

/// The short name used in remarks: "matmul", "add".
std::string shortName(Operation *op);

/// "file:line" of an op, or "" when it has no file location.
std::string lineOf(Operation *op);

/// A set of ops to become one region. `moved` ops leave the graph; a
/// `duplicated` op is cloned into the region and also stays for its other
/// users.
struct Group {
  llvm::SetVector<Operation *> moved;
  llvm::SetVector<Operation *> duplicated;

  bool contains(Operation *op) const {
    return moved.contains(op) || duplicated.contains(op);
  }
  size_t size() const { return moved.size() + duplicated.size(); }
  /// True when every user of `op`'s results is a moved member.
  bool ownsAllUsers(Operation *op) const;
};

/// Why `group` cannot become one region, or "" when it can: more ops,
/// inputs or live values than `limits` allow, ops on different devices, or a
/// cycle (a value leaves the group and comes back through an outside op).
std::string checkLegality(const Group &group, const Limits &limits);

/// Number of distinct inputs the region for `group` would take.
int64_t countInputs(const Group &group);

/// Replaces the ops of `group` by one `kiln.fusion` region of `kind`,
/// placed where its last op was (moving later-used outside ops after it if
/// needed). The group must have passed checkLegality.
FusionOp formRegion(const Group &group, FusionKind kind);

/// Explains a decision at `op`'s location when the pass reports.
void remark(bool enabled, Operation *op, const llvm::Twine &message);
void remark(bool enabled, Location loc, const llvm::Twine &message);

/// "add, mul, relu" for the ops in a region body, in order.
std::string describeBody(FusionOp region);

} // namespace fusion
} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_TRANSFORMS_FUSION_FUSIONUTILS_H
