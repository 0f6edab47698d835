//===- Kernels.h - reference implementations of kiln ops --------*- C++ -*-===//
//
// One function per op family. Arguments are assumed to have passed the IR's
// verifier (shapes, axes and attributes are consistent); the functions never
// read out of bounds for such arguments. Integer division by zero yields 0
// rather than trapping.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_KERNELS_H
#define KILN_REFERENCE_KERNELS_H

#include "kiln/Reference/Tensor.h"

#include <functional>
#include <optional>
#include <string>

namespace kiln {
namespace ref {

enum class UnaryKind {
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu, Erf, Not,
  Floor, Ceil, Round, Sign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh,
  Acosh, Atanh
};
Tensor unary(UnaryKind kind, const Tensor &x);

enum class BinaryKind {
  Add, Sub, Mul, Div, Pow, Max, Min, And, Or, Eq, Ne, Lt, Le, Gt, Ge,
  Mod,  ///< remainder with the sign of the divisor (Python's %)
  FMod, ///< remainder with the sign of the dividend (C's fmod)
};
/// NumPy-broadcasting binary op; comparisons produce i1.
Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);

/// The kinds behind op names ("kiln.tanh"), for callers with their own
/// storage; none for other names.
std::optional<UnaryKind> unaryKindOf(const std::string &opName);
std::optional<BinaryKind> binaryKindOf(const std::string &opName);

/// body(begin, end) over consecutive ranges covering [0, n), on the f32
/// paths' OpenMP threads when the work (n x costPerItem) is worth waking
/// them, else inline: for the CPU backend's compiled kernels.
void parallelRanges(int64_t n, int64_t costPerItem,
                    const std::function<void(int64_t, int64_t)> &body);

/// f32 fast paths for the CPU backend: bit-identical to unary() and
/// binary() on f32 tensors (each element computed in double and rounded to
/// f32, as those round every result), without decoding to double tensors.
void unaryF32(UnaryKind kind, const float *x, int64_t n, float *out);
/// Arithmetic kinds only (no comparisons), with operands of equal shapes or
/// one repeating along the leading dimensions of the other (a bias, a
/// scalar); false for anything else.
bool binaryF32(BinaryKind kind, const Shape &lhsShape, const float *lhs, const Shape &rhsShape,
               const float *rhs, float *out);
Tensor select(const Tensor &cond, const Tensor &lhs, const Tensor &rhs);
Tensor cast(const Tensor &x, DType to);

Tensor reshape(const Tensor &x, const Shape &shape);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);
Tensor broadcastTo(const Tensor &x, const Shape &shape);
Tensor slice(const Tensor &x, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &ends,
             const std::vector<int64_t> &steps);
Tensor concat(const std::vector<const Tensor *> &inputs, int64_t axis);
Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value);
/// ONNX Gather; negative indices count from the end, out-of-range indices
/// produce zeros.
Tensor gather(const Tensor &data, const Tensor &indices, int64_t axis);
/// ONNX GatherElements; negative indices count from the end, out-of-range
/// indices produce zeros.
Tensor gatherElements(const Tensor &data, const Tensor &indices, int64_t axis);
/// ONNX ScatterElements; `reduction` is "none", "add" or "mul".
Tensor scatterElements(const Tensor &data, const Tensor &indices, const Tensor &updates,
                       int64_t axis, const std::string &reduction);
/// Stable argsort along `axis` (i64 indices).
Tensor argsort(const Tensor &x, int64_t axis, bool descending);

/// ONNX's NonMaxSuppression at its upper bound: [B * C * N, 3] rows of
/// (batch, class, box) kept, then rows of -1 (kiln.non_max_suppression).
Tensor nonMaxSuppression(const Tensor &boxes, const Tensor &scores, int64_t maxOutput,
                         double iouThreshold, double scoreThreshold, bool centerPointBox);

enum class ReduceKind { Sum, Mean, Max, Min, Prod };
Tensor reduce(ReduceKind kind, const Tensor &x,
              const std::vector<int64_t> &axes, bool keepdims);
Tensor argmax(const Tensor &x, int64_t axis, bool keepdims);
/// reduce's f32 twin for consecutive axes (the memory layout is the same
/// with and without keepdims): bit-identical, on the f32 loops' threads;
/// false for other axes.
bool reduceF32(ReduceKind kind, const float *x, const Shape &shape, std::vector<int64_t> axes,
               float *out);
Tensor softmax(const Tensor &x, int64_t axis, bool logSoftmax);
Tensor batchNorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                 const Tensor &mean, const Tensor &variance, double epsilon);
Tensor layerNorm(const Tensor &x, const Tensor &scale, const Tensor *bias,
                 int64_t axis, double epsilon);

Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs);

struct Conv2dParams {
  int64_t strides[2] = {1, 1};
  int64_t padding[4] = {0, 0, 0, 0}; ///< top, left, bottom, right
  int64_t dilations[2] = {1, 1};
  int64_t groups = 1;
};
Tensor conv2d(const Tensor &x, const Tensor &filter, const Tensor *bias,
              const Conv2dParams &params);

struct Pool2dParams {
  int64_t kernel[2] = {1, 1};
  int64_t strides[2] = {1, 1};
  int64_t dilations[2] = {1, 1};
  int64_t padding[4] = {0, 0, 0, 0}; ///< top, left, bottom, right
  bool ceilMode = false;
  bool countIncludePad = false;
};
Tensor maxPool2d(const Tensor &x, const Pool2dParams &params);
Tensor avgPool2d(const Tensor &x, const Pool2dParams &params);

// f32 row-major twins of the kernels above for the CPU backend: the same
// algorithm over float storage (each result computed in double and rounded
// to f32, as the Tensor versions round every result), so both give the
// same bits.
void transposeF32(const float *x, const Shape &shape, const std::vector<int64_t> &perm,
                  float *out);
void sliceF32(const float *x, const Shape &shape, const std::vector<int64_t> &starts,
              const std::vector<int64_t> &ends, const std::vector<int64_t> &steps, float *out);
void concatF32(const std::vector<const float *> &inputs, const std::vector<const Shape *> &shapes,
               int64_t axis, float *out);
void padF32(const float *x, const Shape &shape, const std::vector<int64_t> &low,
            const std::vector<int64_t> &high, double value, float *out);
void softmaxF32(const float *x, const Shape &shape, int64_t axis, bool logSoftmax, float *out);
void batchNormF32(const float *x, const Shape &shape, const float *scale, const float *bias,
                  const float *mean, const float *variance, double epsilon, float *out);
void layerNormF32(const float *x, const Shape &shape, const float *scale, const float *bias,
                  int64_t axis, double epsilon, float *out);
void pool2dF32(bool max, const float *x, const Shape &shape, const Pool2dParams &params,
               float *out);
/// Global average pooling of an f32 [N, C, ...] tensor: each plane summed in
/// double and rounded once, bit-identical to globalAvgPool.
void globalAvgPoolF32(const float *x, const Shape &shape, float *out);
// Channels-last twins, for the CPU's channels-last convolution chains:
/// max pooling of f32 values stored NHWC (`nhwc` their physical shape;
/// dilation 1) into NHWC, bit-identical to maxPool2d;
void maxPool2dNhwcF32(const float *x, const Shape &nhwc, const Pool2dParams &params, float *out);
/// global average pooling of `images` x `spatial` pixels x `channels`
/// (NHWC) into images x channels, bit-identical to globalAvgPool.
void globalAvgPoolNhwcF32(const float *x, int64_t images, int64_t spatial, int64_t channels,
                          float *out);
/// Whether all n values are finite (no NaN, no infinity): a vectorised
/// read-only pass over the host's threads.
bool allFiniteF32(const float *x, int64_t n);
/// gather on a row-major table stored as elements of `elementBytes` bytes
/// (any dtype): rows of `data` along `axis` picked by `indices` (negative
/// ones count from the end; out-of-range ones give zeros, as the reference
/// does), touching only the rows it copies.
void gatherRows(const uint8_t *data, int64_t elementBytes, const Shape &shape,
                const int64_t *indices, int64_t count, int64_t axis, uint8_t *out);
/// n f16 or bf16 elements (little-endian bytes) widened to f32 exactly, and
/// f32 values rounded to f16 or bf16 as encodeTensor rounds them.
void widenToF32(DType dtype, const uint8_t *bytes, int64_t n, float *out);
void narrowFromF32(DType dtype, const float *values, int64_t n, uint8_t *bytes);
/// The column matrix of a 2-D convolution of one image (channels x h x w):
/// row (ci, r, s) of outH x outW holds input (ci, i * stride - pad + r *
/// dilation, ...), 0 past the edges; the CPU backend's GEMM convolution.
void im2colF32(const float *image, int64_t channels, int64_t h, int64_t w, int64_t kh,
               int64_t kw, int64_t outH, int64_t outW, const int64_t strides[2],
               const int64_t padding[2], const int64_t dilations[2], float *columns);
Tensor globalAvgPool(const Tensor &x);

} // namespace ref
} // namespace kiln

#endif // KILN_REFERENCE_KERNELS_H
