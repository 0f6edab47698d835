//===- Reductions.cpp - reference reductions, softmax and norms -----------===//

#include "kiln/Reference/Kernels.h"

#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln {
namespace ref {

namespace {

/// The output shape of reducing `axes` (with or without kept unit dims).
Shape reducedShape(const Shape &shape, const std::vector<bool> &reduced,
                   bool keepdims) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d])
      out.push_back(shape[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

/// Linear index into the keepdims-shaped output for an input index.
int64_t reducedOffset(const Shape &shape, const std::vector<bool> &reduced,
                      const std::vector<int64_t> &index) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    offset = offset * (reduced[d] ? 1 : shape[d]) + (reduced[d] ? 0 : index[d]);
  return offset;
}

/// Splits `shape` around `axis` into outer x extent x inner.
void splitAround(const Shape &shape, int64_t axis, int64_t &outer,
                 int64_t &extent, int64_t &inner) {
  outer = inner = 1;
  extent = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

/// The accumulator's start and one float element folded into it, in double:
/// shared by reduce and reduceF32, so both compute the same bits.
double reduceInit(ReduceKind kind) {
  if (kind == ReduceKind::Prod)
    return 1.0;
  if (kind == ReduceKind::Max)
    return -std::numeric_limits<double>::infinity();
  if (kind == ReduceKind::Min)
    return std::numeric_limits<double>::infinity();
  return 0.0;
}

void accumulate(ReduceKind kind, double &acc, double v) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean: acc += v; break;
  case ReduceKind::Prod: acc *= v; break;
  case ReduceKind::Max: acc = (std::isnan(v) || v > acc) ? v : acc; break;
  case ReduceKind::Min: acc = (std::isnan(v) || v < acc) ? v : acc; break;
  }
  if (std::isnan(acc) && (kind == ReduceKind::Max || kind == ReduceKind::Min))
    acc = NAN; // NaN is sticky
}

} // namespace

bool reduceF32(ReduceKind kind, const float *x, const Shape &shape,
               std::vector<int64_t> axes, float *out) {
  // Consecutive axes reduce as one extent between outer and inner rows;
  // each output element folds its inputs in the order reduce visits them.
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || axes.front() < 0 || axes.back() >= static_cast<int64_t>(shape.size()) ||
      axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size()) ||
      std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return false;
  int64_t outer = 1, extent = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < axes.front() ? outer : d <= axes.back() ? extent : inner) *= shape[d];
  parallelFor(outer, extent * inner, [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(inner));
    for (int64_t o = begin; o < end; ++o) {
      std::fill(acc.begin(), acc.end(), reduceInit(kind));
      for (int64_t e = 0; e < extent; ++e) {
        const float *row = x + (o * extent + e) * inner;
        for (int64_t in = 0; in < inner; ++in)
          accumulate(kind, acc[in], row[in]);
      }
      for (int64_t in = 0; in < inner; ++in)
        out[o * inner + in] =
            static_cast<float>(kind == ReduceKind::Mean ? acc[in] / extent : acc[in]);
    }
  });
  return true;
}

Tensor reduce(ReduceKind kind, const Tensor &x, const std::vector<int64_t> &axes,
              bool keepdims) {
  std::vector<bool> reduced(x.shape.size(), false);
  int64_t count = 1;
  for (int64_t a : axes) {
    reduced[a] = true;
    count *= x.shape[a];
  }
  Shape outShape = reducedShape(x.shape, reduced, keepdims);
  int64_t outCount = numElements(outShape);
  // Accumulate wide: double for floats, int64 for integers.
  std::vector<double> accF(outCount, reduceInit(kind));
  std::vector<int64_t> accI(outCount, kind == ReduceKind::Prod ? 1 : 0);
  std::vector<bool> seen(outCount, false);
  int64_t k = 0;
  for (IndexIterator it(x.shape); !it.done(); it.next(), ++k) {
    int64_t o = reducedOffset(x.shape, reduced, it.index());
    if (x.isFloat()) {
      accumulate(kind, accF[o], x.f[k]);
    } else {
      int64_t v = x.i[k];
      int64_t &acc = accI[o];
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean:
        acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
        break;
      case ReduceKind::Prod:
        acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
        break;
      case ReduceKind::Max: acc = seen[o] ? std::max(acc, v) : v; break;
      case ReduceKind::Min: acc = seen[o] ? std::min(acc, v) : v; break;
      }
      seen[o] = true;
    }
  }
  Tensor out = Tensor::zeros(x.dtype, outShape);
  for (int64_t o = 0; o < outCount; ++o) {
    if (x.isFloat())
      out.setDouble(o, kind == ReduceKind::Mean ? accF[o] / count : accF[o]);
    else
      out.setInt(o, kind == ReduceKind::Mean && count ? accI[o] / count : accI[o]);
  }
  return out;
}

Tensor argmax(const Tensor &x, int64_t axis, bool keepdims) {
  int64_t outer, extent, inner;
  splitAround(x.shape, axis, outer, extent, inner);
  std::vector<bool> reduced(x.shape.size(), false);
  reduced[axis] = true;
  Tensor out = Tensor::zeros(DType::I64, reducedShape(x.shape, reduced, keepdims));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      for (int64_t e = 1; e < extent; ++e) {
        int64_t cur = (o * extent + e) * inner + in;
        int64_t top = (o * extent + best) * inner + in;
        if (x.isFloat() ? (x.f[cur] > x.f[top] ||
                           (std::isnan(x.f[cur]) && !std::isnan(x.f[top])))
                        : x.i[cur] > x.i[top])
          best = e;
      }
      out.i[o * inner + in] = best;
    }
  }
  return out;
}

namespace {

// The normalisations are written once over element accessors (`load(k)`
// gives element k as a double, `store(k, v)` rounds and writes it), so the
// double-tensor evaluator and the CPU backend's f32 path compute the same
// bits.

template <typename Load, typename Store>
void softmaxRows(Load x, Store out, int64_t outer, int64_t extent, int64_t inner,
                 bool logSoftmax) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t e) { return (o * extent + e) * inner + in; };
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t e = 0; e < extent; ++e)
        maxValue = std::max(maxValue, x(at(e)));
      double sum = 0.0;
      for (int64_t e = 0; e < extent; ++e)
        sum += std::exp(x(at(e)) - maxValue);
      for (int64_t e = 0; e < extent; ++e) {
        double shifted = x(at(e)) - maxValue;
        out(at(e), logSoftmax ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
}

template <typename Load, typename Param, typename Store>
void batchNormChannels(Load x, Param scale, Param bias, Param mean, Param variance,
                       double epsilon, Store out, int64_t outer, int64_t channels, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      double a = scale(c) / std::sqrt(variance(c) + epsilon);
      double b = bias(c) - mean(c) * a;
      for (int64_t in = 0; in < inner; ++in) {
        int64_t k = (o * channels + c) * inner + in;
        out(k, x(k) * a + b);
      }
    }
}

template <typename Load, typename Param, typename Store>
void layerNormRows(Load x, Param scale, Param bias, bool hasBias, double epsilon, Store out,
                   int64_t outer, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    auto row = [&](int64_t k) { return x(o * inner + k); };
    double mean = 0.0;
    for (int64_t k = 0; k < inner; ++k)
      mean += row(k);
    mean /= inner;
    double var = 0.0;
    for (int64_t k = 0; k < inner; ++k)
      var += (row(k) - mean) * (row(k) - mean);
    var /= inner;
    double invStd = 1.0 / std::sqrt(var + epsilon);
    for (int64_t k = 0; k < inner; ++k)
      out(o * inner + k, (row(k) - mean) * invStd * scale(k) + (hasBias ? bias(k) : 0.0));
  }
}

auto tensorLoad(const Tensor &t) {
  return [&t](int64_t k) { return t.f[k]; };
}
auto tensorStore(Tensor &t) {
  return [&t](int64_t k, double v) { t.setDouble(k, v); };
}
auto f32Load(const float *p) {
  return [p](int64_t k) { return static_cast<double>(p[k]); };
}
auto f32Store(float *p) {
  return [p](int64_t k, double v) { p[k] = static_cast<float>(v); };
}

int64_t product(const Shape &shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= shape[d];
  return p;
}

} // namespace

Tensor softmax(const Tensor &x, int64_t axis, bool logSoftmax) {
  int64_t outer, extent, inner;
  splitAround(x.shape, axis, outer, extent, inner);
  Tensor out = Tensor::zeros(x.dtype, x.shape);
  softmaxRows(tensorLoad(x), tensorStore(out), outer, extent, inner, logSoftmax);
  return out;
}

void softmaxF32(const float *x, const Shape &shape, int64_t axis, bool logSoftmax, float *out) {
  int64_t outer, extent, inner;
  splitAround(shape, axis, outer, extent, inner);
  // Each outer index owns a contiguous block of extent x inner elements.
  int64_t block = extent * inner;
  parallelFor(outer, block, [&](int64_t begin, int64_t end) {
    softmaxRows(f32Load(x + begin * block), f32Store(out + begin * block), end - begin, extent,
                inner, logSoftmax);
  });
}

Tensor batchNorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                 const Tensor &mean, const Tensor &variance, double epsilon) {
  int64_t outer, channels, inner;
  splitAround(x.shape, 1, outer, channels, inner);
  Tensor out = Tensor::zeros(x.dtype, x.shape);
  batchNormChannels(tensorLoad(x), tensorLoad(scale), tensorLoad(bias), tensorLoad(mean),
                    tensorLoad(variance), epsilon, tensorStore(out), outer, channels, inner);
  return out;
}

void batchNormF32(const float *x, const Shape &shape, const float *scale, const float *bias,
                  const float *mean, const float *variance, double epsilon, float *out) {
  int64_t outer, channels, inner;
  splitAround(shape, 1, outer, channels, inner);
  // Split over (batch, channel) planes: plane q is batch q / channels,
  // channel q % channels, its inner elements contiguous.
  parallelFor(outer * channels, inner, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      int64_t c = q % channels;
      batchNormChannels(f32Load(x + q * inner), f32Load(scale + c), f32Load(bias + c),
                        f32Load(mean + c), f32Load(variance + c), epsilon,
                        f32Store(out + q * inner), 1, 1, inner);
    }
  });
}

Tensor layerNorm(const Tensor &x, const Tensor &scale, const Tensor *bias,
                 int64_t axis, double epsilon) {
  Tensor out = Tensor::zeros(x.dtype, x.shape);
  layerNormRows(tensorLoad(x), tensorLoad(scale), tensorLoad(bias ? *bias : scale),
                bias != nullptr, epsilon, tensorStore(out), product(x.shape, 0, axis),
                product(x.shape, axis, x.shape.size()));
  return out;
}

void layerNormF32(const float *x, const Shape &shape, const float *scale, const float *bias,
                  int64_t axis, double epsilon, float *out) {
  int64_t outer = product(shape, 0, axis), inner = product(shape, axis, shape.size());
  parallelFor(outer, inner, [&](int64_t begin, int64_t end) {
    layerNormRows(f32Load(x + begin * inner), f32Load(scale), f32Load(bias ? bias : scale),
                  bias != nullptr, epsilon, f32Store(out + begin * inner), end - begin, inner);
  });
}

} // namespace ref
} // namespace kiln
