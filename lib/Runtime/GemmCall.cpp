//===- GemmCall.cpp - checking and host execution of cuBLASLt calls -------===//

#include "kiln/Runtime/GemmCall.h"

#include "HostGemm.h"
#include "LibraryElements.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace kiln {
namespace rt {

int64_t GemmCall::extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  if (rows == 0 || cols == 0 || batch == 0)
    return 0;
  return (batch - 1) * stride + (cols - 1) * ld + rows;
}

namespace {

bool isGemmType(ref::DType t) {
  return t == ref::DType::F32 || t == ref::DType::F16 || t == ref::DType::BF16;
}

/// Every dimension, leading dimension and stride fits the int cuBLASLt and
/// BLAS take, so the extent arithmetic below cannot overflow either.
bool inRange(int64_t v) { return v >= 0 && v < (int64_t(1) << 31); }

/// Round to TF32 as the Tensor Cores see it (10 mantissa bits, nearest even;
/// the same rounding the cuda-emu wmma emulation uses).
float roundToTf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) != 0x7f800000u)
    bits = (bits + 0x0fffu + ((bits >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

/// One batch's matrix (rows x cols, column-major with leading dimension ld)
/// as a dense f32 column-major copy.
std::vector<float> gather(ref::DType type, const uint8_t *base, int64_t start, int64_t rows,
                          int64_t cols, int64_t ld, bool tf32) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      float v = loadElement(type, base, start + j * ld + i);
      out[j * rows + i] = tf32 ? roundToTf32(v) : v;
    }
  return out;
}

} // namespace

std::string checkGemmCall(const GemmCall &g, const std::vector<ref::DType> &inputTypes,
                          const std::vector<int64_t> &inputElements, ref::DType outputType,
                          int64_t outputElements, uint64_t arenaBytes) {
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch, g.strideA, g.strideB, g.strideC})
    if (!inRange(v))
      return "has a negative or oversized dimension, leading dimension or stride";
  if (g.batch < 1)
    return "has no batches";
  if (!isGemmType(g.typeA) || g.typeA != g.typeB || !isGemmType(g.typeC))
    return "has element types cuBLASLt is not called with here";
  if (g.tf32 && g.typeA != ref::DType::F32)
    return "asks for TF32 on inputs that are not f32";
  if (static_cast<uint8_t>(g.epilogue) > static_cast<uint8_t>(GemmEpilogue::BiasRelu))
    return "has an unknown epilogue";
  bool wantsBias = g.epilogue == GemmEpilogue::Bias || g.epilogue == GemmEpilogue::BiasRelu;
  if (wantsBias != (g.bias >= 0))
    return "has a bias epilogue without a bias, or a bias without the epilogue";
  if ((g.beta != 0.0f) != (g.c >= 0))
    return "has beta without C, or C without beta";
  int64_t rowsA = g.transA ? g.k : g.m, colsA = g.transA ? g.m : g.k;
  int64_t rowsB = g.transB ? g.n : g.k, colsB = g.transB ? g.k : g.n;
  if (g.lda < std::max<int64_t>(1, rowsA) || g.ldb < std::max<int64_t>(1, rowsB) ||
      g.ldc < std::max<int64_t>(1, g.m))
    return "has a leading dimension smaller than its matrix's rows";
  struct Operand {
    const char *name;
    int32_t input;
    ref::DType type;
    int64_t need;
  };
  Operand operands[] = {
      {"A", g.a, g.typeA, GemmCall::extent(rowsA, colsA, g.lda, g.batch, g.strideA)},
      {"B", g.b, g.typeB, GemmCall::extent(rowsB, colsB, g.ldb, g.batch, g.strideB)},
      {"C", g.c, g.typeC, GemmCall::extent(g.m, g.n, g.ldc, g.batch, g.strideC)},
      {"bias", g.bias, g.typeC, g.m},
  };
  for (const Operand &o : operands) {
    bool optional = o.name[0] == 'C' || o.name[0] == 'b';
    if (o.input < 0 && optional)
      continue;
    if (o.input < 0 || static_cast<size_t>(o.input) >= inputTypes.size())
      return std::string("takes ") + o.name + " from a step input it does not have";
    if (inputTypes[o.input] != o.type)
      return std::string("reads ") + o.name + " with another element type than its input's";
    if (inputElements[o.input] < o.need)
      return std::string("reads ") + std::to_string(o.need) + " elements of " + o.name +
             ", whose input has " + std::to_string(inputElements[o.input]);
  }
  if (outputType != g.typeC)
    return "writes D with another element type than the step's output";
  if (outputElements < GemmCall::extent(g.m, g.n, g.ldc, g.batch, g.strideC))
    return "writes past the end of the step's output";
  if (g.batch > 1 && g.strideC < g.m * g.n)
    return "writes batches of D over each other";
  if (g.workspaceBytes > arenaBytes || g.workspaceOffset > arenaBytes - g.workspaceBytes)
    return "has a workspace outside the arena";
  return "";
}

void runGemmOnHost(const GemmCall &g, const uint8_t *a, const uint8_t *b, const uint8_t *c,
                   const uint8_t *bias, uint8_t *d) {
  int64_t rowsA = g.transA ? g.k : g.m, colsA = g.transA ? g.m : g.k;
  int64_t rowsB = g.transB ? g.n : g.k, colsB = g.transB ? g.k : g.n;
  std::vector<float> acc(static_cast<size_t>(g.m * g.n));
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    std::vector<float> matA = gather(g.typeA, a, batch * g.strideA, rowsA, colsA, g.lda, g.tf32);
    std::vector<float> matB = gather(g.typeB, b, batch * g.strideB, rowsB, colsB, g.ldb, g.tf32);
    std::fill(acc.begin(), acc.end(), 0.0f);
    // Column-major D = op(A) op(B) is row-major D^T = op(B)^T op(A)^T.
    if (g.m > 0 && g.n > 0 && g.k > 0)
      hostSgemm(g.transB, g.transA, g.n, g.m, g.k, g.alpha, matB.data(),
                std::max<int64_t>(1, rowsB), matA.data(), std::max<int64_t>(1, rowsA), 0.0f,
                acc.data(), std::max<int64_t>(1, g.m));
    int64_t startC = batch * g.strideC;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        float v = acc[j * g.m + i];
        if (c)
          v += g.beta * loadElement(g.typeC, c, startC + j * g.ldc + i);
        if (bias)
          v += loadElement(g.typeC, bias, i);
        if (g.epilogue == GemmEpilogue::Relu || g.epilogue == GemmEpilogue::BiasRelu)
          v = std::max(v, 0.0f);
        storeElement(g.typeC, d, startC + j * g.ldc + i, v);
      }
  }
}

} // namespace rt
} // namespace kiln
