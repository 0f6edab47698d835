//===- AttentionLimits.h - what kiln's attention kernel fits -----*- C++ -*-===//
//
// Header-only, so that attention fusion (which must not form a region no
// kernel computes on a GPU) and the attention kernel's emitter share one
// definition.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_ATTENTIONLIMITS_H
#define KILN_CODEGEN_ATTENTIONLIMITS_H

#include "kiln/Runtime/DeviceLimits.h"

#include <cstdint>

namespace kiln {
namespace codegen {

/// Query rows and keys a tile of the attention kernel on CUDA cores, the
/// kernel every attention region falls back to.
constexpr int64_t kAttentionRowsPerBlock = 16, kAttentionKeysPerTile = 32;

/// The shared memory, in bytes, of that kernel for head dimensions `depth`
/// (q and k) and `dv` (v), q or v stored transposed (`ta`, `tv`): the
/// block's query rows, a K tile and a V tile in f32, K's rows (and a
/// transposed q's or v's) padded by one float against bank conflicts.
constexpr int64_t attentionCudaCoreSharedBytes(int64_t depth, int64_t dv, bool ta, bool tv) {
  return 4 * (kAttentionRowsPerBlock * (ta ? depth + 1 : depth) +
              kAttentionKeysPerTile * (depth + 1) + kAttentionKeysPerTile * (tv ? dv + 1 : dv));
}

/// Whether kiln's attention kernel fits those head dimensions (the Tensor
/// Core kernel, where it does not fit, falls back to the CUDA-core one).
constexpr bool attentionKernelFits(int64_t depth, int64_t dv, bool ta, bool tv) {
  return attentionCudaCoreSharedBytes(depth, dv, ta, tv) <= ::kiln::rt::kDefaultSharedBytes;
}

} // namespace codegen
} // namespace kiln

#endif // KILN_CODEGEN_ATTENTIONLIMITS_H
