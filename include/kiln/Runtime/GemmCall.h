//===- GemmCall.h - one cuBLASLt matmul, as the executable stores it -*- C++ -*-===//
//
// A step the compiler gave to cuBLASLt carries this descriptor instead of a
// kernel. It is written in cuBLASLt's own column-major terms, so the CUDA
// device passes it through unchanged, and cuda-emu runs the very same
// descriptor on the host (runGemmOnHost): an error in the compiler's
// translation from row-major graph ops shows on a machine without a GPU.
//
//   D[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * C[b] + bias)
//
// D is m x n (column-major, leading dimension ldc, like C); op(A) is m x k,
// op(B) is k x n; bias has m elements, one per row of D; the epilogue's
// ReLU follows the bias. Batches step through each matrix by its stride
// (0: every batch reads the same matrix).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GEMMCALL_H
#define KILN_RUNTIME_GEMMCALL_H

#include "kiln/Reference/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

/// The cuBLASLt epilogues kiln uses (cublasLtEpilogue_t DEFAULT, RELU, BIAS,
/// RELU_BIAS). cuBLASLt's GELU epilogues are the tanh approximation and
/// kiln.gelu is the exact erf form, so they are not used.
enum class GemmEpilogue : uint8_t { None, Relu, Bias, BiasRelu };

inline const char *gemmEpilogueName(GemmEpilogue epilogue) {
  switch (epilogue) {
  case GemmEpilogue::None:
    return "none";
  case GemmEpilogue::Relu:
    return "relu";
  case GemmEpilogue::Bias:
    return "bias";
  case GemmEpilogue::BiasRelu:
    return "bias_relu";
  }
  return "?";
}

struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0; ///< elements
  ref::DType typeA = ref::DType::F32, typeB = ref::DType::F32;
  ref::DType typeC = ref::DType::F32; ///< C, D and bias
  /// f32 inputs rounded to TF32 on Tensor Cores (CUBLAS_COMPUTE_32F_FAST_TF32,
  /// only with --precision=tf32); otherwise CUBLAS_COMPUTE_32F.
  bool tf32 = false;
  GemmEpilogue epilogue = GemmEpilogue::None;
  float alpha = 1.0f, beta = 0.0f;
  /// Step inputs (by position) holding A, B, C and the bias; -1 for none.
  /// D is the step's only output.
  int32_t a = -1, b = -1, c = -1, bias = -1;
  /// Workspace for the algorithm: bytes at an arena offset (the plan
  /// reserves one per stream).
  uint64_t workspaceBytes = 0, workspaceOffset = 0;
  /// Exclude algorithms whose results may differ between runs (split-K
  /// reductions with atomics).
  bool deterministic = false;

  /// Elements of a matrix with `rows` x `cols` (column-major, leading
  /// dimension `ld`) over `batch` batches `stride` apart: the extent a
  /// buffer must have.
  static int64_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride);
};

/// The call's sizes, in the order an executable numbers them when one is
/// symbolic (ExecutableFormat.fbs, SymbolicField: its value per run), and
/// the name the compiler's descriptor gives each.
constexpr const char *kGemmSizeFields[] = {"m",   "n",     "k",        "lda",      "ldb",
                                           "ldc", "batch", "stride_a", "stride_b", "stride_c"};
constexpr unsigned kNumGemmSizeFields = 10;
inline int64_t &gemmSizeField(GemmCall &call, unsigned field) {
  int64_t *fields[kNumGemmSizeFields] = {&call.m,   &call.n,     &call.k,       &call.lda,
                                         &call.ldb, &call.ldc,   &call.batch,   &call.strideA,
                                         &call.strideB, &call.strideC};
  return *fields[field];
}

/// Why `call` cannot run on these buffers (a step's input and output types
/// and the arena size), or "" when every access stays inside them.
std::string checkGemmCall(const GemmCall &call, const std::vector<ref::DType> &inputTypes,
                          const std::vector<int64_t> &inputElements, ref::DType outputType,
                          int64_t outputElements, uint64_t arenaBytes);

/// Runs `call` on host memory with cuBLASLt's semantics (f32 accumulation;
/// TF32 rounding of the inputs when `call.tf32`). `c` and `bias` may be null
/// when the call has none.
void runGemmOnHost(const GemmCall &call, const uint8_t *a, const uint8_t *b, const uint8_t *c,
                   const uint8_t *bias, uint8_t *d);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_GEMMCALL_H
