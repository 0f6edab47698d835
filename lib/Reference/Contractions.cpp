//===- Contractions.cpp - reference matmul, convolution and pooling -------===//

#include "kiln/Reference/Kernels.h"

#include "Parallel.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln {
namespace ref {

Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs) {
  int64_t ra = lhs.rank(), rb = rhs.rank();
  int64_t m = lhs.shape[ra - (transposeLhs ? 1 : 2)];
  int64_t k = lhs.shape[ra - (transposeLhs ? 2 : 1)];
  int64_t n = rhs.shape[rb - (transposeRhs ? 2 : 1)];
  Shape batchA(lhs.shape.begin(), lhs.shape.end() - 2);
  Shape batchB(rhs.shape.begin(), rhs.shape.end() - 2);
  Shape batch = broadcastShapes(batchA, batchB);
  Shape shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  Tensor out = Tensor::zeros(lhs.dtype, shape);
  std::vector<int64_t> sa = rowMajorStrides(batchA), sb = rowMajorStrides(batchB);
  // Strides of the two matrix dimensions, honouring the transpose flags.
  int64_t aRow = transposeLhs ? 1 : k, aCol = transposeLhs ? m : 1;
  int64_t bRow = transposeRhs ? 1 : n, bCol = transposeRhs ? k : 1;
  int64_t b = 0;
  for (IndexIterator it(batch); !it.done(); it.next(), ++b) {
    const int64_t aBase = broadcastOffset(batchA, sa, it.index()) * m * k;
    const int64_t bBase = broadcastOffset(batchB, sb, it.index()) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t o = (b * m + i) * n + j;
        if (lhs.isFloat()) {
          double acc = 0.0;
          for (int64_t p = 0; p < k; ++p)
            acc += lhs.f[aBase + i * aRow + p * aCol] *
                   rhs.f[bBase + p * bRow + j * bCol];
          out.setDouble(o, acc);
        } else {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<uint64_t>(lhs.i[aBase + i * aRow + p * aCol]) *
                   static_cast<uint64_t>(rhs.i[bBase + p * bRow + j * bCol]);
          out.setInt(o, static_cast<int64_t>(acc));
        }
      }
  }
  return out;
}

Tensor conv2d(const Tensor &x, const Tensor &filter, const Tensor *bias,
              const Conv2dParams &p) {
  int64_t batch = x.shape[0], inC = x.shape[1], inH = x.shape[2], inW = x.shape[3];
  int64_t outC = filter.shape[0], groupC = filter.shape[1];
  int64_t kh = filter.shape[2], kw = filter.shape[3];
  int64_t outH = windowOutputSize(inH, p.padding[0], p.padding[2], kh,
                                  p.strides[0], p.dilations[0], false);
  int64_t outW = windowOutputSize(inW, p.padding[1], p.padding[3], kw,
                                  p.strides[1], p.dilations[1], false);
  int64_t outPerGroup = outC / p.groups;
  Tensor out = Tensor::zeros(x.dtype, {batch, outC, outH, outW});
  for (int64_t nb = 0; nb < batch; ++nb)
    for (int64_t oc = 0; oc < outC; ++oc) {
      int64_t g = oc / outPerGroup;
      for (int64_t oh = 0; oh < outH; ++oh)
        for (int64_t ow = 0; ow < outW; ++ow) {
          double acc = bias ? bias->getDouble(oc) : 0.0;
          for (int64_t c = 0; c < groupC; ++c) {
            int64_t ic = g * groupC + c;
            for (int64_t r = 0; r < kh; ++r) {
              int64_t ih = oh * p.strides[0] - p.padding[0] + r * p.dilations[0];
              if (ih < 0 || ih >= inH)
                continue;
              for (int64_t s = 0; s < kw; ++s) {
                int64_t iw = ow * p.strides[1] - p.padding[1] + s * p.dilations[1];
                if (iw < 0 || iw >= inW)
                  continue;
                acc += x.getDouble(((nb * inC + ic) * inH + ih) * inW + iw) *
                       filter.getDouble(((oc * groupC + c) * kh + r) * kw + s);
              }
            }
          }
          out.setDouble(((nb * outC + oc) * outH + oh) * outW + ow, acc);
        }
    }
  return out;
}

namespace {

enum class PoolKind { Max, Avg };

/// Pooling over element accessors (`load(k)` as a double, `store(k, v)`
/// rounding), shared by the double-tensor evaluator and the f32 path.
template <typename Load, typename Store>
void pool2dPlanes(PoolKind kind, Load load, Store store, int64_t planes, int64_t inH,
                  int64_t inW, int64_t outH, int64_t outW, const Pool2dParams &p) {
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t oh = 0; oh < outH; ++oh)
      for (int64_t ow = 0; ow < outW; ++ow) {
        int64_t h0 = oh * p.strides[0] - p.padding[0];
        int64_t w0 = ow * p.strides[1] - p.padding[1];
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        // Taps inside the input, and inside the padded input (ceil mode may
        // overhang even the padding: those taps count for neither).
        int64_t count = 0, paddedCount = 0;
        for (int64_t r = 0; r < p.kernel[0]; ++r) {
          int64_t ih = h0 + r * p.dilations[0];
          if (ih >= inH + p.padding[2])
            break;
          for (int64_t s = 0; s < p.kernel[1]; ++s) {
            int64_t iw = w0 + s * p.dilations[1];
            if (iw >= inW + p.padding[3])
              break;
            ++paddedCount;
            if (ih < 0 || ih >= inH || iw < 0 || iw >= inW)
              continue;
            double v = load((plane * inH + ih) * inW + iw);
            best = (std::isnan(v) || v > best) ? v : best;
            sum += v;
            ++count;
          }
        }
        double result;
        if (kind == PoolKind::Max)
          result = best;
        else
          result = sum / static_cast<double>(p.countIncludePad ? std::max<int64_t>(paddedCount, 1)
                                                               : std::max<int64_t>(count, 1));
        store((plane * outH + oh) * outW + ow, result);
      }
}

int64_t pooledSize(int64_t in, int axis, const Pool2dParams &p) {
  return windowOutputSize(in, p.padding[axis], p.padding[axis + 2], p.kernel[axis],
                          p.strides[axis], p.dilations[axis], p.ceilMode);
}

Tensor pool2d(PoolKind kind, const Tensor &x, const Pool2dParams &p) {
  int64_t batch = x.shape[0], channels = x.shape[1], inH = x.shape[2], inW = x.shape[3];
  int64_t outH = pooledSize(inH, 0, p), outW = pooledSize(inW, 1, p);
  Tensor out = Tensor::zeros(x.dtype, {batch, channels, outH, outW});
  pool2dPlanes(
      kind, [&](int64_t k) { return x.getDouble(k); },
      [&](int64_t k, double v) { out.setDouble(k, v); }, batch * channels, inH, inW, outH, outW,
      p);
  return out;
}

} // namespace

Tensor maxPool2d(const Tensor &x, const Pool2dParams &params) {
  return pool2d(PoolKind::Max, x, params);
}

Tensor avgPool2d(const Tensor &x, const Pool2dParams &params) {
  return pool2d(PoolKind::Avg, x, params);
}

namespace {

/// Max pooling without dilation, f32: each window clipped to the input
/// once, then its taps in the reference's order (rows, then columns) with
/// its comparison, so a NaN propagates as there and the bits agree; a
/// window wholly in the padding gives -inf, as there.
// Hot loops are multiversioned for AVX-512 and AVX2 (the library itself
// is built for the x86-64 baseline), except under ThreadSanitizer, which
// instruments the ifunc resolver that picks the version, and the resolver
// runs before TSan's runtime is ready.
#if defined(__SANITIZE_THREAD__)
#define KILN_VECTOR_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_VECTOR_CLONES
#endif
#endif
#ifndef KILN_VECTOR_CLONES
#define KILN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

/// The f32 maximum as the reference takes it: NaN wins wherever it is.
#define KILN_MAX_TAKING_NAN(v, best) ((__builtin_isnan(v) || (v) > (best)) ? (v) : (best))

/// out[c] = the maximum of a[c], b[c] (and c3[c], when given) in one pass.
KILN_VECTOR_CLONES void rowsMax2(const float *a, const float *b, int64_t n, float *out) {
  for (int64_t c = 0; c < n; ++c)
    out[c] = KILN_MAX_TAKING_NAN(b[c], a[c]);
}
KILN_VECTOR_CLONES void rowsMax3(const float *a, const float *b, const float *c3, int64_t n,
                                 float *out) {
  for (int64_t c = 0; c < n; ++c) {
    float best = KILN_MAX_TAKING_NAN(b[c], a[c]);
    out[c] = KILN_MAX_TAKING_NAN(c3[c], best);
  }
}

/// columns[c] = max over rows [r0, r1) of in[r][c] (-inf for no rows): a
/// loop over contiguous floats, vectorised for AVX-512 and AVX2 where the CPU
/// has them (raw pointers only: clang's clones cannot call inline library
/// code).
KILN_VECTOR_CLONES void
windowRowsMax(const float *in, int64_t inW, int64_t r0, int64_t r1, float *columns) {
  for (int64_t c = 0; c < inW; ++c)
    columns[c] = -__builtin_inff();
  for (int64_t r = r0; r < r1; ++r) {
    const float *row = in + r * inW;
    for (int64_t c = 0; c < inW; ++c)
      columns[c] = KILN_MAX_TAKING_NAN(row[c], columns[c]);
  }
}

/// out[ow] = max of columns[ow * stride + t - pad] over the taps t of a
/// window of `kernel` columns inside [0, inW) (-inf for none): one strided
/// pass per tap, without bounds checks.
KILN_VECTOR_CLONES void
windowColumnsMax(const float *columns, int64_t inW, int64_t kernel, int64_t stride, int64_t pad,
                 float *out, int64_t outW) {
  for (int64_t ow = 0; ow < outW; ++ow)
    out[ow] = -__builtin_inff();
  for (int64_t t = 0; t < kernel; ++t) {
    // Outputs [first, last) read column ow * stride + t - pad in [0, inW).
    int64_t first = pad - t <= 0 ? 0 : (pad - t + stride - 1) / stride;
    int64_t last = inW - 1 - t + pad < 0 ? 0 : (inW - 1 - t + pad) / stride + 1;
    if (last > outW)
      last = outW;
    const float *tap = columns + t - pad;
    for (int64_t ow = first; ow < last; ++ow)
      out[ow] = KILN_MAX_TAKING_NAN(tap[ow * stride], out[ow]);
  }
}

/// windowColumnsMax for a stride known at compile time (1 or 2, as nearly
/// every network's pooling has): the taps' loads are then contiguous, or
/// pairs the vectoriser deinterleaves with shuffles, where a run-time
/// stride leaves the loop scalar.
#define KILN_WINDOW_COLUMNS_MAX(NAME, STRIDE)                                                  \
  KILN_VECTOR_CLONES void NAME(const float *columns, int64_t inW, int64_t kernel, int64_t pad,  \
                               float *out, int64_t outW) {                                     \
    for (int64_t ow = 0; ow < outW; ++ow)                                                      \
      out[ow] = -__builtin_inff();                                                             \
    for (int64_t t = 0; t < kernel; ++t) {                                                     \
      int64_t first = pad - t <= 0 ? 0 : (pad - t + (STRIDE)-1) / (STRIDE);                    \
      int64_t last = inW - 1 - t + pad < 0 ? 0 : (inW - 1 - t + pad) / (STRIDE) + 1;           \
      if (last > outW)                                                                         \
        last = outW;                                                                           \
      const float *tap = columns + t - pad;                                                    \
      for (int64_t ow = first; ow < last; ++ow)                                                \
        out[ow] = KILN_MAX_TAKING_NAN(tap[ow * (STRIDE)], out[ow]);                            \
    }                                                                                          \
  }
KILN_WINDOW_COLUMNS_MAX(windowColumnsMaxStride1, 1)
KILN_WINDOW_COLUMNS_MAX(windowColumnsMaxStride2, 2)
#undef KILN_WINDOW_COLUMNS_MAX

/// out[k] = max over taps t in [0, KERNEL) of in[STRIDE * k + t - pad] for
/// k in [begin, end): a whole plane's rows in one long loop, when a row of
/// the input is STRIDE rows of output long (out[r * outW + ow] then reads
/// row r's columns); the caller redoes the columns whose windows cross a
/// row's edge. Row by row, a 56-wide row left a scalar tail per tap; with
/// the window's size and stride known, each output is one register's taps.
#define KILN_FLAT_TAPS_MAX(NAME, KERNEL, STRIDE)                                                \
  KILN_VECTOR_CLONES void NAME(const float *in, int64_t pad, int64_t begin, int64_t end,        \
                               float *out) {                                                   \
    for (int64_t k = begin; k < end; ++k) {                                                    \
      const float *window = in + k * (STRIDE) - pad;                                           \
      float best = window[0];                                                                  \
      for (int64_t t = 1; t < (KERNEL); ++t)                                                   \
        best = KILN_MAX_TAKING_NAN(window[t], best);                                           \
      out[k] = best;                                                                           \
    }                                                                                          \
  }
KILN_FLAT_TAPS_MAX(flatTapsMax2x2, 2, 2)
KILN_FLAT_TAPS_MAX(flatTapsMax3x2, 3, 2)
KILN_FLAT_TAPS_MAX(flatTapsMax3x1, 3, 1)
#undef KILN_FLAT_TAPS_MAX

/// One output column of a row's horizontal window maxima, its taps clipped
/// to the row.
float edgeColumnMax(const float *row, int64_t inW, int64_t ow, int64_t stride, int64_t kernel,
                    int64_t pad) {
  float best = -__builtin_inff();
  for (int64_t t = 0; t < kernel; ++t) {
    int64_t c = ow * stride + t - pad;
    if (c >= 0 && c < inW)
      best = KILN_MAX_TAKING_NAN(row[c], best);
  }
  return best;
}

/// One output row of NHWC max pooling: out[ow][c] = the maximum over the
/// window's pixels of in[r][s][c], rows [r0, r1) of the image `in` (inW
/// pixels of `channels` each) and the window's columns clipped to the row;
/// all channels of a pixel at once (contiguous in NHWC). One call per row,
/// so the CPU's version is picked once a row, not once a pixel.
KILN_VECTOR_CLONES void nhwcRowMax(const float *in, int64_t inW, int64_t channels, int64_t r0,
                                   int64_t r1, int64_t kernelW, int64_t strideW, int64_t padW,
                                   int64_t outW, float *out) {
  for (int64_t ow = 0; ow < outW; ++ow) {
    float *best = out + ow * channels;
    for (int64_t c = 0; c < channels; ++c)
      best[c] = -__builtin_inff();
    int64_t w0 = ow * strideW - padW;
    int64_t s0 = w0 < 0 ? 0 : w0, s1 = w0 + kernelW < inW ? w0 + kernelW : inW;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t s = s0; s < s1; ++s) {
        const float *pixel = in + (r * inW + s) * channels;
        for (int64_t c = 0; c < channels; ++c)
          best[c] = KILN_MAX_TAKING_NAN(pixel[c], best[c]);
      }
  }
}

#undef KILN_MAX_TAKING_NAN

void maxPoolPlanesF32(const float *x, float *out, int64_t planes, int64_t inH, int64_t inW,
                      int64_t outH, int64_t outW, const Pool2dParams &p) {
  // Separably: each output row's window rows reduced column by column, then
  // each output's window columns of that. The maximum is the same in any
  // order, and NaN wins wherever it is, so the result is the reference's.
  int64_t stride = p.strides[1], kernel = p.kernel[1], pad = p.padding[1];
  using FlatTaps = void (*)(const float *, int64_t, int64_t, int64_t, float *);
  FlatTaps flatTaps = kernel == 2 && stride == 2   ? flatTapsMax2x2
                      : kernel == 3 && stride == 2 ? flatTapsMax3x2
                      : kernel == 3 && stride == 1 ? flatTapsMax3x1
                                                   : nullptr;
  if (flatTaps && inW == stride * outW && pad < kernel) {
    // Columns first, all rows of a plane at once, then rows (contiguous).
    std::unique_ptr<float[]> across(new float[static_cast<size_t>(inH * outW)]);
    int64_t total = inH * outW;
    int64_t begin = std::min((pad + stride - 1) / stride, total);
    // The last k whose window ends inside the plane: stride * k + kernel - 1
    // - pad <= inH * inW - 1.
    int64_t span = inH * inW - kernel + pad;
    int64_t end = span < 0 ? begin : std::max(begin, std::min(total, span / stride + 1));
    int64_t left = (pad + stride - 1) / stride; // columns reading left of the row
    // The first column reading right of the row (none reads past it when
    // the last window ends inside; division rounds toward zero: clamp).
    int64_t lastInside = inW - kernel + pad;
    int64_t right = lastInside < 0 ? 0 : lastInside / stride + 1;
    for (int64_t plane = 0; plane < planes; ++plane) {
      const float *in = x + plane * inH * inW;
      float *dst = out + plane * outH * outW;
      flatTaps(in, pad, begin, end, across.get());
      for (int64_t r = 0; r < inH; ++r)
        for (int64_t ow = 0; ow < outW; ow = (ow + 1 == left && right > left) ? right : ow + 1)
          if (ow < left || ow >= right)
            across[r * outW + ow] = edgeColumnMax(in + r * inW, inW, ow, stride, kernel, pad);
      for (int64_t oh = 0; oh < outH; ++oh) {
        int64_t h0 = oh * p.strides[0] - p.padding[0];
        int64_t r0 = std::max<int64_t>(h0, 0), r1 = std::min(h0 + p.kernel[0], inH);
        const float *rows = across.get() + r0 * outW;
        if (r1 - r0 == 2)
          rowsMax2(rows, rows + outW, outW, dst + oh * outW);
        else if (r1 - r0 == 3)
          rowsMax3(rows, rows + outW, rows + 2 * outW, outW, dst + oh * outW);
        else
          windowRowsMax(across.get(), outW, r0, r1, dst + oh * outW);
      }
    }
    return;
  }
  std::vector<float> columns(static_cast<size_t>(inW));
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float *in = x + plane * inH * inW;
    float *dst = out + plane * outH * outW;
    for (int64_t oh = 0; oh < outH; ++oh) {
      int64_t h0 = oh * p.strides[0] - p.padding[0];
      int64_t r0 = std::max<int64_t>(h0, 0), r1 = std::min(h0 + p.kernel[0], inH);
      windowRowsMax(in, inW, r0, r1, columns.data());
      if (p.strides[1] == 1)
        windowColumnsMaxStride1(columns.data(), inW, p.kernel[1], p.padding[1], dst + oh * outW, outW);
      else if (p.strides[1] == 2)
        windowColumnsMaxStride2(columns.data(), inW, p.kernel[1], p.padding[1], dst + oh * outW, outW);
      else
        windowColumnsMax(columns.data(), inW, p.kernel[1], p.strides[1], p.padding[1],
                         dst + oh * outW, outW);
    }
  }
}

} // namespace

namespace {

/// 1 when some value of [begin, end) is NaN or infinite (all exponent bits
/// set), else 0.
KILN_VECTOR_CLONES int anyNonFinite(const float *x, int64_t begin, int64_t end) {
  unsigned found = 0;
  for (int64_t i = begin; i < end; ++i) {
    unsigned bits;
    __builtin_memcpy(&bits, x + i, 4);
    found |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  return static_cast<int>(found);
}

} // namespace

bool allFiniteF32(const float *x, int64_t n) {
  std::atomic<bool> finite{true};
  parallelFor(n, 1, [&](int64_t begin, int64_t end) {
    if (anyNonFinite(x, begin, end))
      finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

void maxPool2dNhwcF32(const float *x, const Shape &nhwc, const Pool2dParams &p, float *out) {
  int64_t n = nhwc[0], inH = nhwc[1], inW = nhwc[2], channels = nhwc[3];
  int64_t outH = pooledSize(inH, 0, p), outW = pooledSize(inW, 1, p);
  // Output rows over the threads.
  parallelFor(n * outH, outW * channels * p.kernel[0] * p.kernel[1], [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t image = row / outH, oh = row % outH;
      int64_t h0 = oh * p.strides[0] - p.padding[0];
      int64_t r0 = std::max<int64_t>(h0, 0), r1 = std::min(h0 + p.kernel[0], inH);
      nhwcRowMax(x + image * inH * inW * channels, inW, channels, r0, r1, p.kernel[1],
                 p.strides[1], p.padding[1], outW, out + row * outW * channels);
    }
  });
}

void pool2dF32(bool max, const float *x, const Shape &shape, const Pool2dParams &p, float *out) {
  int64_t inH = shape[2], inW = shape[3];
  int64_t outH = pooledSize(inH, 0, p), outW = pooledSize(inW, 1, p);
  if (max && p.dilations[0] == 1 && p.dilations[1] == 1) {
    parallelFor(shape[0] * shape[1], outH * outW, [&](int64_t begin, int64_t end) {
      maxPoolPlanesF32(x + begin * inH * inW, out + begin * outH * outW, end - begin, inH, inW,
                       outH, outW, p);
    });
    return;
  }
  // Split over the (batch, channel) planes.
  parallelFor(shape[0] * shape[1], outH * outW, [&](int64_t begin, int64_t end) {
    const float *xs = x + begin * inH * inW;
    float *outs = out + begin * outH * outW;
    pool2dPlanes(
        max ? PoolKind::Max : PoolKind::Avg,
        [xs](int64_t k) { return static_cast<double>(xs[k]); },
        [outs](int64_t k, double v) { outs[k] = static_cast<float>(v); }, end - begin, inH, inW,
        outH, outW, p);
  });
}

void im2colF32(const float *image, int64_t channels, int64_t h, int64_t w, int64_t kh,
               int64_t kw, int64_t outH, int64_t outW, const int64_t strides[2],
               const int64_t padding[2], const int64_t dilations[2], float *columns) {
  const int64_t cols = outH * outW;
  const int64_t sw = strides[1];
  parallelFor(channels * kh * kw, cols, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t ci = row / (kh * kw), r = row / kw % kh, s = row % kw;
      // Output columns j whose input column iw = j * sw - left + s * dil
      // lies in [0, w): [j0, j1), zeros on either side.
      int64_t shift = s * dilations[1] - padding[1];
      int64_t j0 = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
      int64_t j1 = w - 1 - shift < 0 ? 0 : (w - 1 - shift) / sw + 1;
      j0 = std::min(j0, outW);
      j1 = std::max(j0, std::min(j1, outW));
      float *dst = columns + row * cols;
      for (int64_t i = 0; i < outH; ++i, dst += outW) {
        int64_t ih = i * strides[0] - padding[0] + r * dilations[0];
        if (ih < 0 || ih >= h) {
          std::fill(dst, dst + outW, 0.0f);
          continue;
        }
        const float *src = image + (ci * h + ih) * w; // iw = j * sw + shift
        std::fill(dst, dst + j0, 0.0f);
        if (sw == 1)
          std::copy(src + (j0 + shift), src + (j1 + shift), dst + j0);
        else
          for (int64_t j = j0; j < j1; ++j)
            dst[j] = src[j * sw + shift];
        std::fill(dst + j1, dst + outW, 0.0f);
      }
    }
  });
}

namespace {

/// Planes [begin, end) of a global average pooling: each summed in double
/// in order and divided once. The tensor and the f32 paths share it, so
/// they compute the same bits.
template <typename Load, typename Store>
void averagePlanes(Load x, Store out, int64_t begin, int64_t end, int64_t spatial) {
  for (int64_t plane = begin; plane < end; ++plane) {
    double sum = 0.0;
    for (int64_t k = 0; k < spatial; ++k)
      sum += x(plane * spatial + k);
    out(plane, sum / static_cast<double>(spatial));
  }
}

int64_t spatialSize(const Shape &shape) {
  int64_t spatial = 1;
  for (size_t d = 2; d < shape.size(); ++d)
    spatial *= shape[d];
  return spatial;
}

} // namespace

void globalAvgPoolF32(const float *x, const Shape &shape, float *out) {
  int64_t spatial = spatialSize(shape);
  parallelFor(shape[0] * shape[1], spatial, [&](int64_t begin, int64_t end) {
    averagePlanes([x](int64_t k) { return static_cast<double>(x[k]); },
                  [out](int64_t p, double v) { out[p] = static_cast<float>(v); }, begin, end,
                  spatial);
  });
}

void globalAvgPoolNhwcF32(const float *x, int64_t images, int64_t spatial, int64_t channels,
                          float *out) {
  // Per channel, the plane's values summed in order in double and divided
  // once, as averagePlanes does: the same bits.
  parallelFor(images, spatial * channels, [&](int64_t begin, int64_t end) {
    std::vector<double> sums(static_cast<size_t>(channels));
    for (int64_t image = begin; image < end; ++image) {
      std::fill(sums.begin(), sums.end(), 0.0);
      const float *in = x + image * spatial * channels;
      for (int64_t k = 0; k < spatial; ++k)
        for (int64_t c = 0; c < channels; ++c)
          sums[c] += in[k * channels + c];
      for (int64_t c = 0; c < channels; ++c)
        out[image * channels + c] = static_cast<float>(sums[c] / static_cast<double>(spatial));
    }
  });
}

Tensor globalAvgPool(const Tensor &x) {
  int64_t spatial = spatialSize(x.shape);
  Shape shape = x.shape;
  for (size_t d = 2; d < shape.size(); ++d)
    shape[d] = 1;
  Tensor out = Tensor::zeros(x.dtype, shape);
  averagePlanes([&x](int64_t k) { return x.f[k]; },
                [&out](int64_t p, double v) { out.setDouble(p, v); }, 0, shape[0] * shape[1],
                spatial);
  return out;
}

} // namespace ref
} // namespace kiln
