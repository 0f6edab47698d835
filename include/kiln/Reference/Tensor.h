//===- Tensor.h - tensors of the reference evaluator ------------*- C++ -*-===//
//
// The reference evaluator computes kiln ops on the CPU, plainly and exactly
// as specified. It is shared by constant folding (compiler) and the CPU
// reference backend (runtime), so it depends on neither MLIR nor LLVM.
//
// Values are held wide: floating-point dtypes as double, rounded to their
// dtype after every op; integer dtypes (and i1) as int64_t, wrapped to their
// width after every op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_TENSOR_H
#define KILN_REFERENCE_TENSOR_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace ref {

/// Element types. Appended kinds keep their numbers: the executable format
/// stores them.
enum class DType : uint8_t { F32, F16, BF16, F64, I64, I32, I8, I1, U8, U16, U32, U64, I16 };

bool isFloat(DType dtype);
bool isUnsigned(DType dtype);
/// Width of one element in memory, in bytes (i1 is stored as one byte).
int64_t byteWidth(DType dtype);

/// The most elements a tensor may hold: every reader, the loader and the IR
/// refuse more.
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// True when no dimension is negative and the product of the nonzero ones
/// is at most kMaxElements, so that no partial product of the dimensions
/// (a stride, an outer extent) can overflow, whatever a zero dimension hides.
template <typename Dims> bool withinElementLimit(const Dims &shape) {
  int64_t extent = 1;
  for (int64_t d : shape)
    if (d < 0 || (d > 0 && (__builtin_mul_overflow(extent, d, &extent) || extent > kMaxElements)))
      return false;
  return true;
}
/// The name used in the IR and in .kg files: "f32", "i1", ...
const char *dtypeName(DType dtype);

using Shape = std::vector<int64_t>;

int64_t numElements(const Shape &shape);
/// Row-major strides of `shape`, in elements.
std::vector<int64_t> rowMajorStrides(const Shape &shape);
std::string shapeToString(const Shape &shape);
/// NumPy broadcast of two shapes (assumed compatible: the IR verified them).
Shape broadcastShapes(const Shape &a, const Shape &b);

/// IEEE binary16 and bfloat16 conversions, round to nearest even.
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
float bfloat16ToFloat(uint16_t bits);

/// Rounds a double to the nearest value representable in a float dtype.
double roundToFloat(DType dtype, double value);
/// Wraps an integer to an integer dtype (two's complement); i1 is != 0.
int64_t wrapToInt(DType dtype, int64_t value);

struct Tensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<double> f;  ///< Elements of floating-point tensors.
  std::vector<int64_t> i; ///< Elements of integer and i1 tensors.

  /// A zero-filled tensor.
  static Tensor zeros(DType dtype, Shape shape);

  bool isFloat() const { return ref::isFloat(dtype); }
  int64_t numElements() const { return ref::numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }

  /// Element k, converted.
  double getDouble(int64_t k) const {
    return isFloat() ? f[k] : static_cast<double>(i[k]);
  }
  int64_t getInt(int64_t k) const {
    return isFloat() ? static_cast<int64_t>(f[k]) : i[k];
  }
  /// Stores into element k, rounding or wrapping to the dtype.
  void setDouble(int64_t k, double value);
  void setInt(int64_t k, int64_t value);
  /// Copies element `from` of `src` (same dtype class) into element k.
  void copyElement(int64_t k, const Tensor &src, int64_t from) {
    if (isFloat())
      f[k] = src.f[from];
    else
      i[k] = src.i[from];
  }
};

/// Reads a tensor of `shape` stored in memory with the given dimension order
/// (empty: row-major) as little-endian `dtype` elements.
Tensor decodeTensor(DType dtype, const Shape &shape,
                    const std::vector<int64_t> &dimOrder, const uint8_t *data);
/// For each logical element (row-major), its element offset in memory laid
/// out in `dimOrder` (the memory order of the logical dimensions, outermost
/// first); empty for row-major (the identity).
std::vector<int64_t> physicalOffsets(const Shape &shape, const std::vector<int64_t> &dimOrder);
/// Writes `tensor` to memory in the given dimension order.
void encodeTensor(const Tensor &tensor, const std::vector<int64_t> &dimOrder,
                  uint8_t *data);

/// Walks every index of a shape in row-major order.
class IndexIterator {
public:
  explicit IndexIterator(const Shape &shape)
      : shape_(shape), index_(shape.size(), 0),
        done_(ref::numElements(shape) == 0) {}
  bool done() const { return done_; }
  const std::vector<int64_t> &index() const { return index_; }
  void next();

private:
  Shape shape_;
  std::vector<int64_t> index_;
  bool done_;
};

/// The linear index into a tensor of `shape` that NumPy broadcasting maps
/// output index `index` (of a possibly higher rank) to.
int64_t broadcastOffset(const Shape &shape,
                        const std::vector<int64_t> &strides,
                        const std::vector<int64_t> &index);

/// Elements a slice takes from `start` towards `end` (exclusive) by
/// `step` (not 0), for bounds already within the dimension: ceil(|end -
/// start| / |step|), without overflow for any step (INT64_MIN included).
inline int64_t sliceExtent(int64_t start, int64_t end, int64_t step) {
  if (step > 0)
    return end > start ? (end - start - 1) / step + 1 : 0;
  uint64_t stride = 0 - static_cast<uint64_t>(step);
  return start > end ? static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / stride) + 1
                     : 0;
}

/// Extent of a window sweep (convolution or pooling) along one dimension,
/// with ONNX/PyTorch's ceil-mode rule. Also used by the IR's shape inference.
inline int64_t windowOutputSize(int64_t input, int64_t padBefore,
                                int64_t padAfter, int64_t window,
                                int64_t stride, int64_t dilation,
                                bool ceilMode) {
  // Sizes come from files too (a hostile executable's attributes): any
  // overflow or a non-positive stride gives no windows rather than UB.
  int64_t reach, padded, span;
  if (stride < 1 || window < 1 || dilation < 1 ||
      __builtin_mul_overflow(dilation, window - 1, &reach) ||
      __builtin_add_overflow(input, padBefore, &padded) ||
      __builtin_add_overflow(padded, padAfter, &padded) ||
      __builtin_sub_overflow(padded, reach, &span) || span - 1 < 0)
    return 0;
  span -= 1;
  int64_t out = (ceilMode ? span / stride + (span % stride != 0) : span / stride) + 1;
  // The last window must start inside the input or the leading padding.
  int64_t lastStart;
  if (ceilMode && (__builtin_mul_overflow(out - 1, stride, &lastStart) ||
                   lastStart >= input + padBefore))
    --out;
  return out;
}

} // namespace ref
} // namespace kiln

#endif // KILN_REFERENCE_TENSOR_H
