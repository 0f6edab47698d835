//===- ScratchBuffer.h - f32 arrays for the values inside a CPU step -*- C++ -*-===//
//
// The values a CPU step computes and drops (a fused GEMM's product before
// its epilogue, a layer norm's input) have the same sizes on every run, so
// each thread keeps the arrays it freed and hands them out again: after
// the first run a step allocates nothing, and so takes no page faults and
// zero-fills nothing. (A fresh std::vector of 1.5 MB costs both, each run.)
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_SCRATCHBUFFER_H
#define KILN_LIB_RUNTIME_SCRATCHBUFFER_H

#include <cstddef>
#include <utility>

namespace kiln {
namespace rt {

/// `size` floats from this thread's free arrays (or new), returned to them
/// when destroyed. The contents are unspecified unless `zeroed`.
class ScratchBuffer {
public:
  ScratchBuffer() = default;
  explicit ScratchBuffer(size_t size, bool zeroed = false);
  ~ScratchBuffer();
  ScratchBuffer(ScratchBuffer &&other) noexcept { swap(other); }
  ScratchBuffer &operator=(ScratchBuffer &&other) noexcept {
    ScratchBuffer(std::move(other)).swap(*this);
    return *this;
  }
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;

  float *data() { return data_; }
  const float *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

private:
  void swap(ScratchBuffer &other) noexcept {
    float *d = data_;
    size_t s = size_;
    data_ = other.data_, size_ = other.size_;
    other.data_ = d, other.size_ = s;
  }
  float *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_SCRATCHBUFFER_H
