//===- Wmma.h - nvcuda::wmma for cuda-emu -----------------------*- C++ -*-===//
//
// Included by cuda_emu.h: the toolkit's <mma.h> defines nothing for a host
// compiler, so the kernel text's own #include <mma.h> is harmless and this
// supplies nvcuda::wmma instead. Every lane's
// fragment holds the whole 16x16 tile, which is always correct whatever the
// hardware's element-to-lane mapping is; every *_sync call is a warp
// collective, as on the GPU, so all lanes must reach it. A store writes
// only the lane's own share of the tile (elements lane, lane+32, ...), so a
// kernel that reads the tile back without a __syncwarp or __syncthreads
// reads another lane's unwritten (poisoned) elements, as it could on the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDAEMU_WMMA_H
#define KILN_CUDAEMU_WMMA_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {}; ///< f32 storage, 10-bit mantissa in the multiply
} // namespace precision

/// Rounds to TF32 (10 mantissa bits, to nearest even), kept in a float.
inline float __float_to_tf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) != 0x7f800000u) // not inf or NaN
    bits = (bits + 0x0fffu + ((bits >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

namespace detail {
inline float toFloat(float v) { return v; }
#ifdef KILN_EMU_HAVE_CUDA_HEADERS
inline float toFloat(__half v) { return __half2float(v); }
inline float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
#endif
template <typename T> T fromFloat(float v) { return static_cast<T>(v); }
#ifdef KILN_EMU_HAVE_CUDA_HEADERS
template <> inline __half fromFloat<__half>(float v) { return __float2half(v); }
template <> inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
#endif

/// Every lane of the warp reaches the same call (a warp collective).
#define KILN_WMMA_SYNC() __syncwarp()
/// The fragments' copies are the emulation's, not the kernel's accesses: a
/// profile does not trace them lane by lane; each load and store counts as
/// the warp's one tile access instead (traceWmmaTile).
#if defined(__clang__)
#define KILN_WMMA_UNTRACED __attribute__((noinline, no_sanitize("coverage")))
#else
#define KILN_WMMA_UNTRACED
#endif

/// What a fragment's elements are stored as (TF32 fragments hold floats).
template <typename T> struct Storage {
  using type = T;
};
template <> struct Storage<precision::tf32> {
  using type = float;
};

template <typename Use, int M, int N, int K> struct Shape;
template <int M, int N, int K> struct Shape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K> struct Shape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K> struct Shape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
public:
  static constexpr int rows = detail::Shape<Use, M, N, K>::rows;
  static constexpr int cols = detail::Shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  using element_type = typename detail::Storage<T>::type;
  element_type x[num_elements]; ///< row-major, the whole tile
};

template <typename Use, int M, int N, int K, typename T, typename Layout>
KILN_WMMA_UNTRACED void fill_fragment(fragment<Use, M, N, K, T, Layout> &f,
                          typename detail::Storage<T>::type value) {
  for (int e = 0; e < f.num_elements; ++e)
    f.x[e] = value;
}

/// A or B: the layout comes from the fragment type.
template <typename Use, int M, int N, int K, typename T, typename Layout>
KILN_WMMA_UNTRACED void load_matrix_sync(fragment<Use, M, N, K, T, Layout> &f,
                             const typename detail::Storage<T>::type *p, unsigned ldm) {
  KILN_WMMA_SYNC();
  ::kiln::emu::checkWmmaMatrix(p, ldm * sizeof(*p), "load_matrix_sync");
  constexpr bool colMajor = std::is_same<Layout, col_major>::value;
  if (threadIdx.x % 32 == 0) // memory holds the tile's rows, or its columns
    ::kiln::emu::traceWmmaTile(p, ldm * sizeof(*p), colMajor ? f.cols : f.rows,
                               static_cast<int>((colMajor ? f.rows : f.cols) * sizeof(*p)));
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c)
      f.x[r * f.cols + c] = colMajor ? p[c * ldm + r] : p[r * ldm + c];
}

/// The accumulator: the layout is an argument.
template <int M, int N, int K, typename T>
KILN_WMMA_UNTRACED void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p, unsigned ldm,
                             layout_t layout) {
  KILN_WMMA_SYNC();
  ::kiln::emu::checkWmmaMatrix(p, ldm * sizeof(T), "load_matrix_sync");
  if (threadIdx.x % 32 == 0)
    ::kiln::emu::traceWmmaTile(p, ldm * sizeof(T), layout == mem_col_major ? f.cols : f.rows,
                               static_cast<int>((layout == mem_col_major ? f.rows : f.cols) *
                                                sizeof(T)));
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c)
      f.x[r * f.cols + c] = layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c];
}

template <int M, int N, int K, typename T>
KILN_WMMA_UNTRACED void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                              layout_t layout) {
  KILN_WMMA_SYNC();
  ::kiln::emu::checkWmmaMatrix(p, ldm * sizeof(T), "store_matrix_sync");
  const unsigned lane = threadIdx.x % 32;
  if (lane == 0)
    ::kiln::emu::traceWmmaTile(p, ldm * sizeof(T), layout == mem_col_major ? f.cols : f.rows,
                               static_cast<int>((layout == mem_col_major ? f.rows : f.cols) *
                                                sizeof(T)));
  for (int e = static_cast<int>(lane); e < f.num_elements; e += 32) {
    int r = e / f.cols, c = e % f.cols;
    (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[e];
  }
}

/// d = a * b + c, accumulated in float.
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
KILN_WMMA_UNTRACED void mma_sync(fragment<accumulator, M, N, K, TC> &d,
                     const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b,
                     const fragment<accumulator, M, N, K, TC> &c) {
  KILN_WMMA_SYNC();
  ::kiln::emu::countTensorCoreFlops(2ull * M * N * K / 32); // each lane its share
  TC result[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = detail::toFloat(c.x[i * N + j]);
      for (int k = 0; k < K; ++k)
        sum += detail::toFloat(a.x[i * K + k]) * detail::toFloat(b.x[k * N + j]);
      result[i * N + j] = detail::fromFloat<TC>(sum);
    }
  for (int e = 0; e < M * N; ++e)
    d.x[e] = result[e];
}

#undef KILN_WMMA_SYNC
#undef KILN_WMMA_UNTRACED

} // namespace wmma
} // namespace nvcuda

#endif // KILN_CUDAEMU_WMMA_H
