//===- LoopGrowth.h - growing a region through elementwise producers -*- C++ -*-===//
//
// Shared by loop fusion (from the last op of a tree) and reduction fusion
// (from a reduction's input): both take the elementwise ops that compute a
// value into the kernel that consumes it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_FUSION_LOOPGROWTH_H
#define KILN_LIB_TRANSFORMS_FUSION_LOOPGROWTH_H

#include "FusionUtils.h"

#include <vector>

namespace mlir {
namespace kiln {
namespace fusion {

/// A producer that did not join, and why.
struct Rejection {
  Operation *producer;
  std::string reason;
};

/// Adds to `group` the loop-fusible producers of `from`'s operands (only
/// its first with `firstOperandOnly`), and
/// theirs in turn: a producer whose users are all moved members is moved; a
/// cheap one with other users is duplicated; an expensive one with other
/// users is rejected, as is any whose addition breaks `limits`. Returns the
/// rejections (a producer rejected early may still join later, through
/// another path; callers report those not in the group).
std::vector<Rejection> growProducers(Group &group, Operation *from, const Limits &limits,
                                     bool firstOperandOnly = false);

} // namespace fusion
} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_TRANSFORMS_FUSION_LOOPGROWTH_H
