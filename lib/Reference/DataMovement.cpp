//===- DataMovement.cpp - reference reshape, transpose, slice, ... --------===//

#include "kiln/Reference/Kernels.h"

#include "Parallel.h"

#include <algorithm>
#include <cstring>
#include <cmath>

namespace kiln {
namespace ref {

Tensor reshape(const Tensor &x, const Shape &shape) {
  Tensor out = x;
  out.shape = shape;
  return out;
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  Shape shape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    shape[d] = x.shape[perm[d]];
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> strides = rowMajorStrides(x.shape);
  int64_t k = 0;
  for (IndexIterator it(shape); !it.done(); it.next(), ++k) {
    int64_t from = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      from += it.index()[d] * strides[perm[d]];
    out.copyElement(k, x, from);
  }
  return out;
}

namespace {

Shape slicedShape(const Shape &in, const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &ends, const std::vector<int64_t> &steps) {
  Shape shape(in.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] = sliceExtent(starts[d], ends[d], steps[d]);
  }
  return shape;
}

} // namespace

namespace {

/// out[b][c][r] = x[b][r][c] for `batches` matrices of rows x cols, tile by
/// tile, so that both the reads and the writes run along cache lines (an
/// NCHW <-> NHWC conversion is one such transpose per image).
void transposeMatricesF32(const float *x, int64_t batches, int64_t rows, int64_t cols,
                          float *out) {
  constexpr int64_t kTile = 32;
  int64_t rowTiles = (rows + kTile - 1) / kTile, colTiles = (cols + kTile - 1) / kTile;
  parallelFor(batches * rowTiles * colTiles, kTile * kTile, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t b = t / (rowTiles * colTiles), rt = t / colTiles % rowTiles, ct = t % colTiles;
      const float *in = x + b * rows * cols;
      float *o = out + b * rows * cols;
      int64_t r1 = std::min(rt * kTile + kTile, rows), c1 = std::min(ct * kTile + kTile, cols);
      for (int64_t c = ct * kTile; c < c1; ++c)
        for (int64_t r = rt * kTile; r < r1; ++r)
          o[c * rows + r] = in[r * cols + c];
    }
  });
}

/// The transpose with dimensions that stay adjacent (and those of size 1)
/// merged: `sizes` of the merged input dimensions and the merged perm.
void mergeTransposeDims(const Shape &shape, const std::vector<int64_t> &perm, Shape &sizes,
                        std::vector<int64_t> &merged) {
  // Dimensions of size 1 move nothing: dropped, the others renumbered in
  // input order, so that [N, 1, 1, C] -> [N, C, 1, 1] is a copy.
  std::vector<int64_t> rank(shape.size(), -1);
  int64_t kept = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      rank[d] = kept++;
  std::vector<std::vector<int64_t>> groups; // in output order, of input dimensions
  for (int64_t d : perm) {
    if (rank[d] < 0)
      continue;
    if (!groups.empty() && rank[groups.back().back()] + 1 == rank[d])
      groups.back().push_back(d);
    else
      groups.push_back({d});
  }
  std::vector<size_t> byInput(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    byInput[g] = g;
  std::sort(byInput.begin(), byInput.end(),
            [&](size_t a, size_t b) { return groups[a].front() < groups[b].front(); });
  sizes.assign(groups.size(), 1);
  merged.assign(groups.size(), 0);
  for (size_t k = 0; k < byInput.size(); ++k) {
    for (int64_t d : groups[byInput[k]])
      sizes[k] *= shape[d];
    merged[byInput[k]] = static_cast<int64_t>(k);
  }
}

} // namespace

void transposeF32(const float *x, const Shape &shape, const std::vector<int64_t> &perm,
                  float *out) {
  Shape sizes;
  std::vector<int64_t> merged;
  mergeTransposeDims(shape, perm, sizes, merged);
  if (sizes.size() <= 1 && numElements(shape) > 0) { // the same order
    std::copy(x, x + numElements(shape), out);
    return;
  }
  if (merged == std::vector<int64_t>{1, 0}) {
    transposeMatricesF32(x, 1, sizes[0], sizes[1], out);
    return;
  }
  if (merged == std::vector<int64_t>{0, 2, 1}) {
    transposeMatricesF32(x, sizes[0], sizes[1], sizes[2], out);
    return;
  }
  Shape outShape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    outShape[d] = shape[perm[d]];
  std::vector<int64_t> strides = rowMajorStrides(shape);
  if (outShape.empty() || numElements(outShape) == 0) {
    if (outShape.empty())
      out[0] = x[0];
    return;
  }
  // Rows along the innermost output dimension: one strided read each.
  int64_t inner = outShape.back(), innerStride = strides[perm.back()];
  Shape rows(outShape.begin(), outShape.end() - 1);
  int64_t k = 0;
  for (IndexIterator it(rows); !it.done(); it.next()) {
    int64_t from = 0;
    for (size_t d = 0; d + 1 < perm.size(); ++d)
      from += it.index()[d] * strides[perm[d]];
    for (int64_t j = 0; j < inner; ++j)
      out[k++] = x[from + j * innerStride];
  }
}

void sliceF32(const float *x, const Shape &shape, const std::vector<int64_t> &starts,
              const std::vector<int64_t> &ends, const std::vector<int64_t> &steps, float *out) {
  Shape outShape = slicedShape(shape, starts, ends, steps);
  int64_t count = numElements(outShape);
  if (count == 0)
    return;
  if (outShape.empty()) {
    out[0] = x[0];
    return;
  }
  std::vector<int64_t> strides = rowMajorStrides(shape);
  // Row by row along the last axis (a contiguous copy when its step is 1),
  // each row's start from its index in the other axes.
  const size_t last = outShape.size() - 1;
  const int64_t inner = outShape[last], step = steps[last] * strides[last];
  parallelFor(count / inner, inner, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t from = starts[last] * strides[last];
      for (int64_t d = static_cast<int64_t>(last) - 1, rest = row; d >= 0; --d) {
        from += (starts[d] + rest % outShape[d] * steps[d]) * strides[d];
        rest /= outShape[d];
      }
      float *dst = out + row * inner;
      if (step == 1)
        std::copy(x + from, x + from + inner, dst);
      else
        for (int64_t j = 0; j < inner; ++j)
          dst[j] = x[from + j * step];
    }
  });
}

Tensor broadcastTo(const Tensor &x, const Shape &shape) {
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> strides = rowMajorStrides(x.shape);
  int64_t k = 0;
  for (IndexIterator it(shape); !it.done(); it.next(), ++k)
    out.copyElement(k, x, broadcastOffset(x.shape, strides, it.index()));
  return out;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &ends,
             const std::vector<int64_t> &steps) {
  Shape shape = slicedShape(x.shape, starts, ends, steps);
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> strides = rowMajorStrides(x.shape);
  int64_t k = 0;
  for (IndexIterator it(shape); !it.done(); it.next(), ++k) {
    int64_t from = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      from += (starts[d] + it.index()[d] * steps[d]) * strides[d];
    out.copyElement(k, x, from);
  }
  return out;
}

Tensor concat(const std::vector<const Tensor *> &inputs, int64_t axis) {
  Shape shape = inputs.front()->shape;
  shape[axis] = 0;
  for (const Tensor *t : inputs)
    shape[axis] += t->shape[axis];
  Tensor out = Tensor::zeros(inputs.front()->dtype, shape);
  // Copy each input as [outer, its axis extent x inner] row blocks.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t offset = 0;
  for (const Tensor *t : inputs) {
    int64_t block = t->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < block; ++e)
        out.copyElement(o * shape[axis] * inner + offset + e, *t, o * block + e);
    offset += block;
  }
  return out;
}

void concatF32(const std::vector<const float *> &inputs, const std::vector<const Shape *> &shapes,
               int64_t axis, float *out) {
  // As concat: each input a block of [its axis extent x inner] per outer
  // index, copied whole.
  Shape shape = *shapes.front();
  shape[axis] = 0;
  for (const Shape *s : shapes)
    shape[axis] += (*s)[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t row = shape[axis] * inner;
  parallelFor(outer, row, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      int64_t offset = 0;
      for (size_t k = 0; k < inputs.size(); ++k) {
        int64_t block = (*shapes[k])[axis] * inner;
        std::copy(inputs[k] + o * block, inputs[k] + (o + 1) * block, out + o * row + offset);
        offset += block;
      }
    }
  });
}

void padF32(const float *x, const Shape &shape, const std::vector<int64_t> &low,
            const std::vector<int64_t> &high, double value, float *out) {
  Shape outShape(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    outShape[d] = shape[d] + low[d] + high[d];
  int64_t count = numElements(outShape);
  if (count == 0)
    return;
  float fill = static_cast<float>(value); // as setDouble rounds it
  if (shape.empty()) {
    out[0] = x[0];
    return;
  }
  // Row by row along the last axis: a row of the input, or none (all
  // fill), its elements copied between fills on either side.
  const size_t last = shape.size() - 1;
  const int64_t width = outShape[last];
  const int64_t from = std::clamp<int64_t>(low[last], 0, width);
  const int64_t to = std::clamp<int64_t>(low[last] + shape[last], from, width);
  std::vector<int64_t> strides = rowMajorStrides(shape);
  parallelFor(count / width, width, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float *dst = out + r * width;
      int64_t source = 0, rest = r;
      bool inside = true;
      for (int64_t d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
        int64_t index = rest % outShape[d] - low[d];
        rest /= outShape[d];
        inside = inside && index >= 0 && index < shape[d];
        source += index * strides[d];
      }
      if (!inside) {
        std::fill(dst, dst + width, fill);
        continue;
      }
      std::fill(dst, dst + from, fill);
      std::copy(x + source + (from - low[last]), x + source + (to - low[last]), dst + from);
      std::fill(dst + to, dst + width, fill);
    }
  });
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value) {
  Shape shape(x.shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    shape[d] = x.shape[d] + low[d] + high[d];
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> strides = rowMajorStrides(x.shape);
  int64_t k = 0;
  for (IndexIterator it(shape); !it.done(); it.next(), ++k) {
    int64_t from = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size() && inside; ++d) {
      int64_t src = it.index()[d] - low[d];
      inside = src >= 0 && src < x.shape[d];
      from += src * strides[d];
    }
    if (inside)
      out.copyElement(k, x, from);
    else
      out.setDouble(k, value);
  }
  return out;
}

Tensor gather(const Tensor &data, const Tensor &indices, int64_t axis) {
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  Tensor out = Tensor::zeros(data.dtype, shape);
  int64_t outer = 1, inner = 1, extent = data.shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (size_t d = axis + 1; d < data.shape.size(); ++d)
    inner *= data.shape[d];
  int64_t count = indices.numElements();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      int64_t index = indices.i[j];
      if (index < 0)
        index += extent;
      if (index < 0 || index >= extent)
        continue; // out of range: leave zeros
      for (int64_t e = 0; e < inner; ++e)
        out.copyElement((o * count + j) * inner + e, data,
                        (o * extent + index) * inner + e);
    }
  }
  return out;
}

/// The row-major offset in `data` of the element that the indices element at
/// `position` addresses along `axis`, or -1 when its index is out of range
/// (GatherElements and ScatterElements skip those rather than read or write
/// outside `data`).
static int64_t offsetAlongAxis(const std::vector<int64_t> &position,
                               const std::vector<int64_t> &strides, int64_t axis,
                               int64_t index, int64_t extent) {
  if (index < 0)
    index += extent;
  if (index < 0 || index >= extent)
    return -1;
  int64_t offset = 0;
  for (size_t d = 0; d < strides.size(); ++d)
    offset += (static_cast<int64_t>(d) == axis ? index : position[d]) * strides[d];
  return offset;
}

Tensor gatherElements(const Tensor &data, const Tensor &indices, int64_t axis) {
  Tensor out = Tensor::zeros(data.dtype, indices.shape);
  std::vector<int64_t> strides = rowMajorStrides(data.shape);
  int64_t extent = data.shape[axis];
  int64_t k = 0;
  for (IndexIterator it(indices.shape); !it.done(); it.next(), ++k) {
    int64_t from = offsetAlongAxis(it.index(), strides, axis, indices.i[k], extent);
    if (from < 0)
      continue;
    out.copyElement(k, data, from);
  }
  return out;
}

Tensor scatterElements(const Tensor &data, const Tensor &indices, const Tensor &updates,
                       int64_t axis, const std::string &reduction) {
  Tensor out = data;
  std::vector<int64_t> strides = rowMajorStrides(data.shape);
  int64_t extent = data.shape[axis];
  int64_t k = 0;
  for (IndexIterator it(indices.shape); !it.done(); it.next(), ++k) {
    int64_t to = offsetAlongAxis(it.index(), strides, axis, indices.i[k], extent);
    if (to < 0)
      continue;
    if (reduction == "none") {
      out.copyElement(to, updates, k);
    } else if (out.isFloat()) {
      out.setDouble(to, reduction == "add" ? out.f[to] + updates.f[k] : out.f[to] * updates.f[k]);
    } else {
      uint64_t a = static_cast<uint64_t>(out.i[to]), b = static_cast<uint64_t>(updates.i[k]);
      out.setInt(to, static_cast<int64_t>(reduction == "add" ? a + b : a * b));
    }
  }
  return out;
}

Tensor argsort(const Tensor &x, int64_t axis, bool descending) {
  Tensor out = Tensor::zeros(DType::I64, x.shape);
  int64_t outer = 1, inner = 1, extent = x.shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  std::vector<int64_t> order(extent);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t e) { return x.getDouble((o * extent + e) * inner + in); };
      for (int64_t e = 0; e < extent; ++e)
        order[e] = e;
      // A total order (std::stable_sort needs one): NaN after every number
      // ascending, before them descending, as argmax counts it the largest.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        double x = at(a), y = at(b);
        return descending ? x > y || (std::isnan(x) && !std::isnan(y))
                          : x < y || (std::isnan(y) && !std::isnan(x));
      });
      for (int64_t e = 0; e < extent; ++e)
        out.i[(o * extent + e) * inner + in] = order[e];
    }
  return out;
}

namespace {

/// A box's extent along its two axes, as ONNX reads either format.
struct BoxExtent {
  double yMin, xMin, yMax, xMax;
};

BoxExtent boxExtent(const Tensor &boxes, int64_t at, bool centerPointBox) {
  double a = boxes.getDouble(at), b = boxes.getDouble(at + 1), c = boxes.getDouble(at + 2),
         d = boxes.getDouble(at + 3);
  if (centerPointBox) // x centre, y centre, width, height
    return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  // Any two diagonal corners (y1, x1, y2, x2).
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

/// Whether the boxes' IoU exceeds `threshold` (never for empty boxes).
bool overlapsTooMuch(const BoxExtent &p, const BoxExtent &q, double threshold) {
  double height = std::min(p.yMax, q.yMax) - std::max(p.yMin, q.yMin);
  double width = std::min(p.xMax, q.xMax) - std::max(p.xMin, q.xMin);
  if (height <= 0 || width <= 0)
    return false;
  double areaP = (p.yMax - p.yMin) * (p.xMax - p.xMin), areaQ = (q.yMax - q.yMin) * (q.xMax - q.xMin);
  double intersection = height * width, unionArea = areaP + areaQ - intersection;
  if (areaP <= 0 || areaQ <= 0 || unionArea <= 0)
    return false;
  return intersection / unionArea > threshold;
}

} // namespace

Tensor nonMaxSuppression(const Tensor &boxes, const Tensor &scores, int64_t maxOutput,
                         double iouThreshold, double scoreThreshold, bool centerPointBox) {
  int64_t batches = scores.shape[0], classes = scores.shape[1], n = scores.shape[2];
  Tensor out = Tensor::zeros(DType::I64, {batches * classes * n, 3});
  for (int64_t k = 0; k < out.numElements(); ++k)
    out.i[k] = -1;
  int64_t row = 0;
  std::vector<int64_t> candidates;
  std::vector<BoxExtent> kept;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      auto score = [&](int64_t i) { return scores.getDouble((b * classes + c) * n + i); };
      candidates.clear();
      for (int64_t i = 0; i < n; ++i)
        if (score(i) > scoreThreshold)
          candidates.push_back(i);
      // By descending score, the lower index first among equals.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t i, int64_t j) { return score(i) > score(j); });
      kept.clear();
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= maxOutput)
          break;
        BoxExtent box = boxExtent(boxes, (b * n + i) * 4, centerPointBox);
        if (std::any_of(kept.begin(), kept.end(), [&](const BoxExtent &other) {
              return overlapsTooMuch(box, other, iouThreshold);
            }))
          continue;
        kept.push_back(box);
        out.i[3 * row] = b;
        out.i[3 * row + 1] = c;
        out.i[3 * row + 2] = i;
        ++row;
      }
    }
  return out;
}

void gatherRows(const uint8_t *data, int64_t elementBytes, const Shape &shape,
                const int64_t *indices, int64_t count, int64_t axis, uint8_t *out) {
  int64_t outer = 1, inner = elementBytes, extent = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  parallelFor(outer * count, inner / elementBytes, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t o = row / count, index = indices[row % count];
      if (index < 0)
        index += extent;
      uint8_t *dst = out + row * inner;
      if (index < 0 || index >= extent)
        std::memset(dst, 0, inner); // zero bits: 0 in every dtype
      else
        std::memcpy(dst, data + (o * extent + index) * inner, inner);
    }
  });
}

void widenToF32(DType dtype, const uint8_t *bytes, int64_t n, float *out) {
  bool half = dtype == DType::F16;
  parallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * k, 2);
      out[k] = half ? halfToFloat(v) : bfloat16ToFloat(v);
    }
  });
}

void narrowFromF32(DType dtype, const float *values, int64_t n, uint8_t *bytes) {
  bool half = dtype == DType::F16;
  parallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      uint16_t v = half ? floatToHalf(values[k]) : floatToBFloat16(values[k]);
      std::memcpy(bytes + 2 * k, &v, 2);
    }
  });
}

} // namespace ref
} // namespace kiln
