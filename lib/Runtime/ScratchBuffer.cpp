//===- ScratchBuffer.cpp - each thread's free f32 arrays ------------------===//

#include "ScratchBuffer.h"

#include "kiln/Runtime/LibraryAlignment.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <utility>

namespace kiln {
namespace rt {

namespace {

/// Free arrays kept per thread, by size, up to kKeptBytes in all (beyond
/// that they are freed: a model whose sizes keep changing does not hoard).
constexpr size_t kKeptBytes = size_t(1) << 30;

struct FreeArrays {
  std::multimap<size_t, float *> bySize;
  size_t bytes = 0;
  ~FreeArrays() {
    for (auto &[size, data] : bySize)
      std::free(data);
  }
};

FreeArrays &freeArrays() {
  thread_local FreeArrays arrays;
  return arrays;
}

} // namespace

ScratchBuffer::ScratchBuffer(size_t size, bool zeroed) : size_(size) {
  if (size == 0)
    return;
  if (size > (SIZE_MAX - kLibraryAlignment) / sizeof(float))
    throw std::bad_alloc();
  FreeArrays &free = freeArrays();
  auto it = free.bySize.find(size);
  if (it != free.bySize.end()) {
    data_ = it->second;
    free.bytes -= size * sizeof(float);
    free.bySize.erase(it);
  } else {
    // Aligned as the arena's buffers are, for the library calls.
    size_t bytes = (size * sizeof(float) + kLibraryAlignment - 1) / kLibraryAlignment *
                   kLibraryAlignment;
    data_ = static_cast<float *>(std::aligned_alloc(kLibraryAlignment, bytes));
    if (!data_)
      throw std::bad_alloc();
  }
  if (zeroed)
    std::memset(data_, 0, size * sizeof(float));
}

ScratchBuffer::~ScratchBuffer() {
  if (!data_)
    return;
  FreeArrays &free = freeArrays();
  if (free.bytes + size_ * sizeof(float) > kKeptBytes) {
    std::free(data_);
    return;
  }
  free.bytes += size_ * sizeof(float);
  free.bySize.emplace(size_, data_);
}

} // namespace rt
} // namespace kiln
