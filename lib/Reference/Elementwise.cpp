//===- Elementwise.cpp - reference unary, binary, select and cast ---------===//

#include "kiln/Reference/Kernels.h"

#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace kiln {
namespace ref {

namespace {

[[gnu::always_inline]] inline double applyUnary(UnaryKind kind, double x) {
  switch (kind) {
  case UnaryKind::Neg: return -x;
  case UnaryKind::Abs: return std::fabs(x);
  case UnaryKind::Exp: return std::exp(x);
  case UnaryKind::Log: return std::log(x);
  case UnaryKind::Sqrt: return std::sqrt(x);
  case UnaryKind::Rsqrt: return 1.0 / std::sqrt(x);
  case UnaryKind::Tanh: return std::tanh(x);
  case UnaryKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case UnaryKind::Relu: return x > 0.0 ? x : (std::isnan(x) ? x : 0.0);
  case UnaryKind::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case UnaryKind::Erf: return std::erf(x);
  case UnaryKind::Not: return x == 0.0;
  case UnaryKind::Floor: return std::floor(x);
  case UnaryKind::Ceil: return std::ceil(x);
  case UnaryKind::Round: return std::nearbyint(x); // the default mode: half to even
  case UnaryKind::Sign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : x); // keeps NaN and -0
  case UnaryKind::Sin: return std::sin(x);
  case UnaryKind::Cos: return std::cos(x);
  case UnaryKind::Tan: return std::tan(x);
  case UnaryKind::Asin: return std::asin(x);
  case UnaryKind::Acos: return std::acos(x);
  case UnaryKind::Atan: return std::atan(x);
  case UnaryKind::Sinh: return std::sinh(x);
  case UnaryKind::Cosh: return std::cosh(x);
  case UnaryKind::Asinh: return std::asinh(x);
  case UnaryKind::Acosh: return std::acosh(x);
  case UnaryKind::Atanh: return std::atanh(x);
  }
  return x;
}

int64_t applyUnaryInt(UnaryKind kind, int64_t x) {
  switch (kind) {
  case UnaryKind::Neg: return static_cast<int64_t>(0ull - static_cast<uint64_t>(x));
  case UnaryKind::Abs: return x < 0 ? static_cast<int64_t>(0ull - static_cast<uint64_t>(x)) : x;
  case UnaryKind::Relu: return x > 0 ? x : 0;
  case UnaryKind::Not: return x == 0;
  case UnaryKind::Sign: return x > 0 ? 1 : (x < 0 ? -1 : 0);
  default: return x; // float-only kinds are rejected by the verifier
  }
}

/// Comparisons and logical ops, shared by the float and integer paths.
template <typename T>
std::optional<int64_t> applyPredicate(BinaryKind kind, T a, T b) {
  switch (kind) {
  case BinaryKind::And: return (a != T(0)) && (b != T(0));
  case BinaryKind::Or: return (a != T(0)) || (b != T(0));
  case BinaryKind::Eq: return a == b;
  case BinaryKind::Ne: return a != b;
  case BinaryKind::Lt: return a < b;
  case BinaryKind::Le: return a <= b;
  case BinaryKind::Gt: return a > b;
  case BinaryKind::Ge: return a >= b;
  default: return std::nullopt;
  }
}

bool isComparison(BinaryKind kind) {
  return kind == BinaryKind::Eq || kind == BinaryKind::Ne ||
         kind == BinaryKind::Lt || kind == BinaryKind::Le ||
         kind == BinaryKind::Gt || kind == BinaryKind::Ge;
}

[[gnu::always_inline]] inline double applyBinary(BinaryKind kind, double a, double b) {
  switch (kind) {
  case BinaryKind::Add: return a + b;
  case BinaryKind::Sub: return a - b;
  case BinaryKind::Mul: return a * b;
  case BinaryKind::Div: return a / b;
  case BinaryKind::Pow: return std::pow(a, b);
  // NaN propagates through max and min, as in ONNX and NumPy.
  case BinaryKind::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case BinaryKind::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case BinaryKind::FMod: return std::fmod(a, b);
  case BinaryKind::Mod: {
    double r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  default: return static_cast<double>(*applyPredicate(kind, a, b));
  }
}

int64_t applyBinaryInt(BinaryKind kind, int64_t a, int64_t b) {
  // Arithmetic wraps (computed unsigned), like the hardware.
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (kind) {
  case BinaryKind::Add: return static_cast<int64_t>(ua + ub);
  case BinaryKind::Sub: return static_cast<int64_t>(ua - ub);
  case BinaryKind::Mul: return static_cast<int64_t>(ua * ub);
  case BinaryKind::Div:
    if (b == 0)
      return 0;
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      return a;
    return a / b; // truncates toward zero
  case BinaryKind::Pow: {
    if (b < 0)
      return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
    uint64_t result = 1, base = ua;
    for (int64_t e = b; e > 0; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return static_cast<int64_t>(result);
  }
  case BinaryKind::Max: return std::max(a, b);
  case BinaryKind::Min: return std::min(a, b);
  case BinaryKind::Mod:
  case BinaryKind::FMod: {
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1))
      return 0;
    int64_t r = a % b; // C++: the sign of the dividend
    return kind == BinaryKind::Mod && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
  }
  default: return *applyPredicate(kind, a, b);
  }
}


} // namespace

Tensor unary(UnaryKind kind, const Tensor &x) {
  Tensor out = Tensor::zeros(x.dtype, x.shape);
  int64_t n = x.numElements();
  if (x.isFloat()) {
    for (int64_t k = 0; k < n; ++k)
      out.setDouble(k, applyUnary(kind, x.f[k]));
  } else {
    for (int64_t k = 0; k < n; ++k)
      out.setInt(k, applyUnaryInt(kind, x.i[k]));
  }
  return out;
}

namespace {

// One loop per kind, so the kind's switch is resolved outside the loop.
template <UnaryKind Kind>
void unaryLoop(const float *x, int64_t n, float *out) {
  parallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      out[k] = static_cast<float>(applyUnary(Kind, static_cast<double>(x[k])));
  });
}

template <BinaryKind Kind, int LhsStep, int RhsStep>
void binaryLoop(const float *lhs, const float *rhs, int64_t n, float *out) {
  parallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      out[k] = static_cast<float>(applyBinary(Kind, static_cast<double>(lhs[k * LhsStep]),
                                              static_cast<double>(rhs[k * RhsStep])));
  });
}

/// out[0, n) = lhs op rhs, each operand advancing (step 1) or fixed (step 0).
template <BinaryKind Kind>
void binaryRun(const float *lhs, bool lhsAdvances, const float *rhs, bool rhsAdvances, int64_t n,
               float *out) {
  if (lhsAdvances && rhsAdvances)
    binaryLoop<Kind, 1, 1>(lhs, rhs, n, out);
  else if (lhsAdvances)
    binaryLoop<Kind, 1, 0>(lhs, rhs, n, out);
  else
    binaryLoop<Kind, 0, 1>(lhs, rhs, n, out);
}

void binaryRunF32(BinaryKind kind, const float *lhs, bool lhsAdvances, const float *rhs,
                  bool rhsAdvances, int64_t n, float *out) {
  switch (kind) {
#define KILN_BINARY(K)                                                                         \
  case BinaryKind::K:                                                                          \
    return binaryRun<BinaryKind::K>(lhs, lhsAdvances, rhs, rhsAdvances, n, out);
    KILN_BINARY(Add) KILN_BINARY(Sub) KILN_BINARY(Mul) KILN_BINARY(Div) KILN_BINARY(Pow)
    KILN_BINARY(Max) KILN_BINARY(Min) KILN_BINARY(Mod) KILN_BINARY(FMod)
#undef KILN_BINARY
  default:
    for (int64_t k = 0; k < n; ++k)
      out[k] = static_cast<float>(applyBinary(kind, lhs[lhsAdvances ? k : 0],
                                              rhs[rhsAdvances ? k : 0]));
  }
}

} // namespace

void unaryF32(UnaryKind kind, const float *x, int64_t n, float *out) {
  switch (kind) {
#define KILN_UNARY(K)                                                                          \
  case UnaryKind::K:                                                                           \
    return unaryLoop<UnaryKind::K>(x, n, out);
    KILN_UNARY(Neg) KILN_UNARY(Abs) KILN_UNARY(Exp) KILN_UNARY(Log) KILN_UNARY(Sqrt)
    KILN_UNARY(Rsqrt) KILN_UNARY(Tanh) KILN_UNARY(Sigmoid) KILN_UNARY(Relu) KILN_UNARY(Gelu)
    KILN_UNARY(Erf)
#undef KILN_UNARY
  default:
    for (int64_t k = 0; k < n; ++k)
      out[k] = static_cast<float>(applyUnary(kind, static_cast<double>(x[k])));
  }
}

bool binaryF32(BinaryKind kind, const Shape &lhsShape, const float *lhs, const Shape &rhsShape,
               const float *rhs, float *out) {
  if (isComparison(kind) || kind == BinaryKind::And || kind == BinaryKind::Or)
    return false;
  Shape shape = broadcastShapes(lhsShape, rhsShape);
  int64_t n = numElements(shape), na = numElements(lhsShape), nb = numElements(rhsShape);
  auto isSuffix = [&](const Shape &s) {
    return s.size() <= shape.size() && std::equal(s.begin(), s.end(), shape.end() - s.size());
  };
  bool lhsFull = na == n && lhsShape.size() == shape.size();
  bool rhsFull = nb == n && rhsShape.size() == shape.size();
  if (lhsFull && rhsFull) {
    binaryRunF32(kind, lhs, true, rhs, true, n, out);
  } else if (lhsFull && nb == 1) {
    binaryRunF32(kind, lhs, true, rhs, false, n, out);
  } else if (rhsFull && na == 1) {
    binaryRunF32(kind, lhs, false, rhs, true, n, out);
  } else if (lhsFull && nb > 0 && isSuffix(rhsShape)) {
    parallelFor(n / nb, nb, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        binaryRunF32(kind, lhs + row * nb, true, rhs, true, nb, out + row * nb);
    });
  } else if (rhsFull && na > 0 && isSuffix(lhsShape)) {
    parallelFor(n / na, na, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        binaryRunF32(kind, lhs, true, rhs + row * na, true, na, out + row * na);
    });
  } else {
    return false;
  }
  return true;
}

Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs) {
  Shape shape = broadcastShapes(lhs.shape, rhs.shape);
  DType dtype = isComparison(kind) ? DType::I1 : lhs.dtype;
  Tensor out = Tensor::zeros(dtype, shape);
  int64_t n = out.numElements();
  auto apply = [&](int64_t k, int64_t a, int64_t b) {
    if (lhs.isFloat())
      out.setDouble(k, applyBinary(kind, lhs.f[a], rhs.f[b]));
    else
      out.setInt(k, applyBinaryInt(kind, lhs.i[a], rhs.i[b]));
  };
  // Common cases without index arithmetic: equal shapes, and an operand
  // that repeats along the leading dimensions (a bias, a scalar).
  int64_t na = lhs.numElements(), nb = rhs.numElements();
  bool lhsFull = na == n && lhs.shape.size() == shape.size();
  bool rhsFull = nb == n && rhs.shape.size() == shape.size();
  auto isSuffix = [&](const Shape &s) {
    return s.size() <= shape.size() &&
           std::equal(s.begin(), s.end(), shape.end() - s.size());
  };
  if (lhsFull && (rhsFull || (nb > 0 && isSuffix(rhs.shape)))) {
    for (int64_t k = 0; k < n; ++k)
      apply(k, k, k % nb);
    return out;
  }
  if (rhsFull && na > 0 && isSuffix(lhs.shape)) {
    for (int64_t k = 0; k < n; ++k)
      apply(k, k % na, k);
    return out;
  }
  std::vector<int64_t> ls = rowMajorStrides(lhs.shape);
  std::vector<int64_t> rs = rowMajorStrides(rhs.shape);
  int64_t k = 0;
  for (IndexIterator it(shape); !it.done(); it.next(), ++k)
    apply(k, broadcastOffset(lhs.shape, ls, it.index()),
          broadcastOffset(rhs.shape, rs, it.index()));
  return out;
}

Tensor select(const Tensor &cond, const Tensor &lhs, const Tensor &rhs) {
  Shape shape = broadcastShapes(broadcastShapes(cond.shape, lhs.shape), rhs.shape);
  Tensor out = Tensor::zeros(lhs.dtype, shape);
  std::vector<int64_t> cs = rowMajorStrides(cond.shape);
  std::vector<int64_t> ls = rowMajorStrides(lhs.shape);
  std::vector<int64_t> rs = rowMajorStrides(rhs.shape);
  int64_t k = 0;
  for (IndexIterator it(shape); !it.done(); it.next(), ++k) {
    if (cond.i[broadcastOffset(cond.shape, cs, it.index())])
      out.copyElement(k, lhs, broadcastOffset(lhs.shape, ls, it.index()));
    else
      out.copyElement(k, rhs, broadcastOffset(rhs.shape, rs, it.index()));
  }
  return out;
}

Tensor cast(const Tensor &x, DType to) {
  Tensor out = Tensor::zeros(to, x.shape);
  int64_t n = x.numElements();
  for (int64_t k = 0; k < n; ++k) {
    if (x.isFloat())
      out.setDouble(k, x.f[k]);
    else
      out.setInt(k, x.i[k]);
  }
  return out;
}

} // namespace ref
} // namespace kiln
