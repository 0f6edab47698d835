//===- Parallel.cpp - the f32 paths' threads, for callers outside ---------===//

#include "Parallel.h"

#include "kiln/Reference/Kernels.h"

namespace kiln {
namespace ref {

void parallelRanges(int64_t n, int64_t costPerItem,
                    const std::function<void(int64_t, int64_t)> &body) {
  parallelFor(n, costPerItem, body);
}

} // namespace ref
} // namespace kiln
