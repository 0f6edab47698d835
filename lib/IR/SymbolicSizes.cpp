//===- SymbolicSizes.cpp - symbolic sizes of dynamic dimensions -----------===//

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Reference/SizeCode.h"

#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace mlir;
using namespace mlir::kiln;

LogicalResult mlir::kiln::verifySymbolicSize(AffineExpr size,
                                             function_ref<InFlightDiagnostic()> emitError) {
  if (llvm::isa<AffineConstantExpr>(size))
    return emitError() << "symbolic size " << sizeString(size)
                       << " is a constant; write it as a static dimension";
  bool bad = false;
  size.walk([&](AffineExpr e) {
    if (auto s = llvm::dyn_cast<AffineSymbolExpr>(e))
      bad |= s.getPosition() >= kMaxSizeSymbols;
    bad |= llvm::isa<AffineDimExpr>(e);
  });
  if (bad)
    return emitError() << "symbolic size " << sizeString(size)
                       << " may use only the size symbols s0..s"
                       << kMaxSizeSymbols - 1 << " and constants";
  return success();
}

bool mlir::kiln::hasSymbolicSizes(Type type) {
  TensorEncodingAttr enc = getEncoding(type);
  return enc && !enc.getSizes().empty();
}

bool mlir::kiln::isStaticButBatch(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && getEncoding(tensor) &&
         (tensor.getRank() >= 2 || tensor.hasStaticShape()) &&
         llvm::all_of(llvm::enumerate(tensor.getShape()), [](auto d) {
           return d.index() == 0 || !ShapedType::isDynamic(d.value());
         });
}

SmallVector<AffineExpr> mlir::kiln::getDimSizes(RankedTensorType type) {
  ArrayRef<AffineExpr> symbolic;
  if (TensorEncodingAttr enc = getEncoding(type))
    symbolic = enc.getSizes();
  SmallVector<AffineExpr> sizes;
  size_t next = 0;
  for (int64_t d : type.getShape()) {
    if (ShapedType::isDynamic(d) && next < symbolic.size())
      sizes.push_back(symbolic[next++]);
    else
      sizes.push_back(getAffineConstantExpr(d, type.getContext()));
  }
  return sizes;
}

RankedTensorType mlir::kiln::getKilnTensorType(ArrayRef<AffineExpr> sizes,
                                               Type elementType,
                                               ArrayRef<int64_t> dimOrder,
                                               TensorEncodingAttr encoding) {
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> symbolic;
  for (AffineExpr size : sizes) {
    if (auto c = llvm::dyn_cast<AffineConstantExpr>(size)) {
      shape.push_back(c.getValue());
    } else {
      shape.push_back(ShapedType::kDynamic);
      symbolic.push_back(size);
    }
  }
  auto enc = TensorEncodingAttr::get(encoding.getContext(), dimOrder,
                                     encoding.getDeviceKind(),
                                     encoding.getDeviceOrdinal(), symbolic);
  return RankedTensorType::get(shape, elementType, enc);
}

static bool isOne(AffineExpr e) {
  auto c = llvm::dyn_cast<AffineConstantExpr>(e);
  return c && c.getValue() == 1;
}

std::optional<SmallVector<AffineExpr>>
mlir::kiln::broadcastSizes(ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<AffineExpr> out;
  MLIRContext *context = !a.empty() ? a.front().getContext()
                         : !b.empty() ? b.front().getContext()
                                      : nullptr;
  for (size_t i = 0; i < rank; ++i) {
    AffineExpr da = i < rank - a.size() ? getAffineConstantExpr(1, context)
                                        : a[i - (rank - a.size())];
    AffineExpr db = i < rank - b.size() ? getAffineConstantExpr(1, context)
                                        : b[i - (rank - b.size())];
    if (da != db && !isOne(da) && !isOne(db))
      return std::nullopt;
    out.push_back(isOne(da) ? db : da);
  }
  return out;
}

std::string mlir::kiln::sizeString(AffineExpr size) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << size;
  return s;
}

std::string mlir::kiln::sizesString(ArrayRef<AffineExpr> sizes) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i)
      os << "x";
    bool compound = !llvm::isa<AffineConstantExpr, AffineSymbolExpr>(sizes[i]);
    os << (compound ? "(" : "") << sizes[i] << (compound ? ")" : "");
  }
  os << "]";
  return s;
}

AffineMap mlir::kiln::getSizesMap(ArrayRef<AffineExpr> sizes, MLIRContext *context) {
  unsigned symbols = 0;
  for (AffineExpr size : sizes)
    size.walk([&](AffineExpr e) {
      if (auto s = llvm::dyn_cast<AffineSymbolExpr>(e))
        symbols = std::max(symbols, s.getPosition() + 1);
    });
  return AffineMap::get(0, symbols, sizes, context);
}

AffineExpr mlir::kiln::productOf(ArrayRef<AffineExpr> sizes,
                                 MLIRContext *context) {
  AffineExpr product = getAffineConstantExpr(1, context);
  for (AffineExpr size : sizes)
    product = product * size;
  return product;
}

namespace {
/// A sum of monomials: symbol positions (sorted, repeated for powers) to
/// their coefficient.
using Polynomial = std::map<SmallVector<unsigned>, int64_t>;

bool addTerms(const Polynomial &terms, int64_t sign, Polynomial &into) {
  for (const auto &[symbols, coefficient] : terms)
    if (__builtin_add_overflow(into[symbols], sign * coefficient, &into[symbols]))
      return false;
  return true;
}

/// `e` as a polynomial; std::nullopt for divisions, modulo or overflow.
std::optional<Polynomial> toPolynomial(AffineExpr e) {
  if (auto c = llvm::dyn_cast<AffineConstantExpr>(e))
    return Polynomial{{{}, c.getValue()}};
  if (auto s = llvm::dyn_cast<AffineSymbolExpr>(e))
    return Polynomial{{{s.getPosition()}, 1}};
  auto binary = llvm::dyn_cast<AffineBinaryOpExpr>(e);
  if (!binary || (e.getKind() != AffineExprKind::Add && e.getKind() != AffineExprKind::Mul))
    return std::nullopt;
  std::optional<Polynomial> lhs = toPolynomial(binary.getLHS());
  std::optional<Polynomial> rhs = toPolynomial(binary.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  Polynomial out;
  if (e.getKind() == AffineExprKind::Add) {
    if (!addTerms(*lhs, 1, out) || !addTerms(*rhs, 1, out))
      return std::nullopt;
  } else {
    for (const auto &[ls, lc] : *lhs)
      for (const auto &[rs, rc] : *rhs) {
        SmallVector<unsigned> symbols(ls);
        symbols.append(rs.begin(), rs.end());
        llvm::sort(symbols);
        int64_t c;
        if (__builtin_mul_overflow(lc, rc, &c) ||
            __builtin_add_overflow(out[symbols], c, &out[symbols]))
          return std::nullopt;
      }
  }
  for (auto it = out.begin(); it != out.end();)
    it = it->second == 0 ? out.erase(it) : std::next(it);
  return out;
}

AffineExpr fromPolynomial(const Polynomial &p, MLIRContext *context) {
  AffineExpr sum = getAffineConstantExpr(0, context);
  for (const auto &[symbols, coefficient] : p) {
    AffineExpr term = getAffineConstantExpr(coefficient, context);
    for (unsigned s : symbols)
      term = term * getAffineSymbolExpr(s, context);
    sum = sum + term;
  }
  return sum;
}
} // namespace

bool mlir::kiln::equalSizes(AffineExpr a, AffineExpr b) {
  if (a == b)
    return true;
  std::optional<Polynomial> pa = toPolynomial(a), pb = toPolynomial(b);
  return pa && pb && *pa == *pb;
}

std::optional<AffineExpr> mlir::kiln::exactQuotient(AffineExpr a, AffineExpr b) {
  std::optional<Polynomial> pa = toPolynomial(a), pb = toPolynomial(b);
  if (!pa || !pb || pb->size() != 1)
    return std::nullopt;
  const auto &[divisorSymbols, divisor] = *pb->begin();
  if (divisor == 0)
    return std::nullopt;
  Polynomial quotient;
  for (const auto &[symbols, coefficient] : *pa) {
    if (coefficient % divisor != 0)
      return std::nullopt;
    // Remove the divisor's symbols from the monomial (both sorted).
    SmallVector<unsigned> rest;
    size_t j = 0;
    for (unsigned s : symbols) {
      if (j < divisorSymbols.size() && divisorSymbols[j] == s)
        ++j;
      else
        rest.push_back(s);
    }
    if (j != divisorSymbols.size())
      return std::nullopt;
    quotient[rest] += coefficient / divisor;
  }
  return fromPolynomial(quotient, a.getContext());
}

std::optional<int64_t> mlir::kiln::evaluateSize(AffineExpr size,
                                                ArrayRef<int64_t> symbols) {
  if (auto c = llvm::dyn_cast<AffineConstantExpr>(size))
    return c.getValue();
  if (auto s = llvm::dyn_cast<AffineSymbolExpr>(size)) {
    if (s.getPosition() >= symbols.size())
      return std::nullopt;
    return symbols[s.getPosition()];
  }
  auto binary = llvm::dyn_cast<AffineBinaryOpExpr>(size);
  if (!binary)
    return std::nullopt;
  std::optional<int64_t> l = evaluateSize(binary.getLHS(), symbols);
  std::optional<int64_t> r = evaluateSize(binary.getRHS(), symbols);
  if (!l || !r)
    return std::nullopt;
  int64_t out;
  switch (size.getKind()) {
  case AffineExprKind::Add:
    if (__builtin_add_overflow(*l, *r, &out))
      return std::nullopt;
    return out;
  case AffineExprKind::Mul:
    if (__builtin_mul_overflow(*l, *r, &out))
      return std::nullopt;
    return out;
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
  case AffineExprKind::Mod: {
    if (*r <= 0)
      return std::nullopt;
    int64_t q = *l / *r, m = *l % *r;
    if (m < 0) {
      m += *r;
      --q;
    }
    if (size.getKind() == AffineExprKind::Mod)
      return m;
    if (size.getKind() == AffineExprKind::CeilDiv && m != 0)
      ++q;
    return q;
  }
  default:
    return std::nullopt;
  }
}

/// Floor division rounding toward negative infinity.
static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

std::optional<std::pair<int64_t, int64_t>>
mlir::kiln::sizeRange(AffineExpr size, ArrayRef<SizeSymbol> symbols) {
  // Interval arithmetic: exact bounds for sums and products of the
  // symbols' ranges, and for divisions and modulo by positive constants.
  using Range = std::pair<int64_t, int64_t>;
  if (auto c = llvm::dyn_cast<AffineConstantExpr>(size))
    return Range{c.getValue(), c.getValue()};
  if (auto s = llvm::dyn_cast<AffineSymbolExpr>(size)) {
    if (s.getPosition() >= symbols.size())
      return std::nullopt;
    return Range{symbols[s.getPosition()].min, symbols[s.getPosition()].max};
  }
  auto binary = llvm::dyn_cast<AffineBinaryOpExpr>(size);
  if (!binary)
    return std::nullopt;
  std::optional<Range> a = sizeRange(binary.getLHS(), symbols);
  std::optional<Range> b = sizeRange(binary.getRHS(), symbols);
  if (!a || !b)
    return std::nullopt;
  switch (size.getKind()) {
  case AffineExprKind::Add: {
    Range r;
    if (__builtin_add_overflow(a->first, b->first, &r.first) ||
        __builtin_add_overflow(a->second, b->second, &r.second))
      return std::nullopt;
    return r;
  }
  case AffineExprKind::Mul: {
    int64_t p[4];
    if (__builtin_mul_overflow(a->first, b->first, &p[0]) ||
        __builtin_mul_overflow(a->first, b->second, &p[1]) ||
        __builtin_mul_overflow(a->second, b->first, &p[2]) ||
        __builtin_mul_overflow(a->second, b->second, &p[3]))
      return std::nullopt;
    return Range{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
  case AffineExprKind::Mod: {
    // By a positive constant only (what the shape rules make).
    if (b->first != b->second || b->first <= 0)
      return std::nullopt;
    int64_t d = b->first;
    if (size.getKind() == AffineExprKind::Mod)
      return a->second - a->first + 1 >= d || floorDiv(a->first, d) != floorDiv(a->second, d)
                 ? Range{0, d - 1}
                 : Range{a->first - floorDiv(a->first, d) * d, a->second - floorDiv(a->second, d) * d};
    if (size.getKind() == AffineExprKind::FloorDiv)
      return Range{floorDiv(a->first, d), floorDiv(a->second, d)};
    return Range{-floorDiv(-a->first, d), -floorDiv(-a->second, d)};
  }
  default:
    return std::nullopt;
  }
}

int64_t mlir::kiln::tensorBytes(Type type, ArrayRef<SizeSymbol> symbols) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  int64_t bytes = 0;
  if (usesComputedSymbols(type, symbols) ||
      __builtin_mul_overflow(maxElements(tensor, symbols).value_or(0),
                             std::max<int64_t>(1, (tensor.getElementTypeBitWidth() + 7) / 8),
                             &bytes))
    return 0;
  return bytes;
}

std::optional<int64_t> mlir::kiln::maxElements(RankedTensorType type,
                                               ArrayRef<SizeSymbol> symbols) {
  int64_t elements = 1;
  for (AffineExpr size : getDimSizes(type)) {
    std::optional<std::pair<int64_t, int64_t>> range = sizeRange(size, symbols);
    if (!range || range->first < 0 ||
        __builtin_mul_overflow(elements, range->second, &elements))
      return std::nullopt;
  }
  return elements;
}

bool mlir::kiln::touchesSymbolicSizes(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    for (Type t : inner->getOperandTypes())
      found |= hasSymbolicSizes(t);
    for (Type t : inner->getResultTypes())
      found |= hasSymbolicSizes(t);
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

SmallVector<SizeSymbol> mlir::kiln::getSizeSymbols(Operation *op) {
  SmallVector<SizeSymbol> symbols;
  auto list = op ? op->getAttrOfType<ArrayAttr>(kSizeSymbolsAttrName) : ArrayAttr();
  if (!list)
    return symbols;
  for (Attribute entry : list) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(entry);
    if (!dict)
      continue;
    SizeSymbol s;
    if (auto name = dict.getAs<StringAttr>("name"))
      s.name = name.str();
    auto get = [&](StringRef key, int64_t &into) {
      if (auto v = dict.getAs<IntegerAttr>(key))
        into = v.getInt();
    };
    get("min", s.min);
    get("max", s.max);
    get("opt", s.opt);
    if (auto code = dict.getAs<DenseI64ArrayAttr>("code"))
      s.code.assign(code.asArrayRef().begin(), code.asArrayRef().end());
    s.bound = dict.contains("bound");
    symbols.push_back(s);
  }
  return symbols;
}

Attribute mlir::kiln::buildSizeSymbolsAttr(MLIRContext *context,
                                           ArrayRef<SizeSymbol> symbols) {
  Builder b(context);
  SmallVector<Attribute> entries;
  for (const SizeSymbol &s : symbols) {
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("name", b.getStringAttr(s.name)),
        b.getNamedAttr("min", b.getI64IntegerAttr(s.min)),
        b.getNamedAttr("max", b.getI64IntegerAttr(s.max)),
        b.getNamedAttr("opt", b.getI64IntegerAttr(s.opt)),
    };
    if (s.bound)
      fields.push_back(b.getNamedAttr("bound", b.getUnitAttr()));
    else if (s.isComputed())
      fields.push_back(b.getNamedAttr("code", b.getDenseI64ArrayAttr(s.code)));
    entries.push_back(b.getDictionaryAttr(fields));
  }
  return b.getArrayAttr(entries);
}

LogicalResult mlir::kiln::verifySizeSymbolsAttr(
    Attribute attr, size_t numInputs, function_ref<InFlightDiagnostic()> emitError) {
  auto list = llvm::dyn_cast<ArrayAttr>(attr);
  if (!list)
    return emitError() << "'" << kSizeSymbolsAttrName << "' must be a list";
  if (list.size() > kMaxSizeSymbols)
    return emitError() << "at most " << kMaxSizeSymbols << " size symbols";
  SmallVector<std::string> names;
  for (auto [k, entry] : llvm::enumerate(list)) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(entry);
    auto name = dict ? dict.getAs<StringAttr>("name") : StringAttr();
    auto min = dict ? dict.getAs<IntegerAttr>("min") : IntegerAttr();
    auto max = dict ? dict.getAs<IntegerAttr>("max") : IntegerAttr();
    auto opt = dict ? dict.getAs<IntegerAttr>("opt") : IntegerAttr();
    auto code = dict ? dict.getAs<DenseI64ArrayAttr>("code") : DenseI64ArrayAttr();
    auto bound = dict ? dict.getAs<UnitAttr>("bound") : UnitAttr();
    if (!name || !min || !max || !opt || (code && bound) ||
        dict.size() != (code || bound ? 5u : 4u))
      return emitError() << "size symbol s" << k
                         << " must be {name, min, max, opt}, {name, min, max, opt, code} or "
                            "{name, min, max, opt, bound}";
    if (bound) {
      // A length: what a prefix of an upper-bound buffer keeps.
      if (!(0 <= min.getInt() && min.getInt() <= opt.getInt() && opt.getInt() <= max.getInt() &&
            max.getInt() <= kRunTimeValueBound))
        return emitError() << "size symbol s" << k << " ('" << name.getValue()
                           << "') needs 0 <= min <= opt <= max <= 2^31, got " << min.getInt()
                           << ".." << max.getInt() << ":" << opt.getInt();
    } else if (code) {
      // Read at run time: any sign (a Reshape's -1), within the bound.
      std::string problem = ::kiln::ref::checkSizeCode(
          code.asArrayRef().data(), code.size(), k, numInputs);
      if (!problem.empty())
        return emitError() << "size symbol s" << k << " ('" << name.getValue()
                           << "'): " << problem;
      if (!(-kRunTimeValueBound <= min.getInt() && min.getInt() <= opt.getInt() &&
            opt.getInt() <= max.getInt() && max.getInt() <= kRunTimeValueBound))
        return emitError() << "size symbol s" << k << " ('" << name.getValue()
                           << "') needs -2^31 <= min <= opt <= max <= 2^31, got "
                           << min.getInt() << ".." << max.getInt() << ":" << opt.getInt();
    } else if (!(0 <= min.getInt() && min.getInt() <= opt.getInt() &&
                 opt.getInt() <= max.getInt()))
      return emitError() << "size symbol s" << k << " ('" << name.getValue()
                         << "') needs 0 <= min <= opt <= max, got "
                         << min.getInt() << ".." << max.getInt() << ":"
                         << opt.getInt();
    if (llvm::is_contained(names, name.str()))
      return emitError() << "size symbol '" << name.getValue()
                         << "' is named twice";
    names.push_back(name.str());
  }
  return success();
}

void mlir::kiln::appendSizeCode(AffineExpr e, SmallVectorImpl<int64_t> &code) {
  using ::kiln::ref::SizeOp;
  auto push = [&](SizeOp op) { code.push_back(static_cast<int64_t>(op)); };
  if (auto c = llvm::dyn_cast<AffineConstantExpr>(e)) {
    push(SizeOp::Constant);
    code.push_back(c.getValue());
    return;
  }
  if (auto s = llvm::dyn_cast<AffineSymbolExpr>(e)) {
    push(SizeOp::Symbol);
    code.push_back(static_cast<int64_t>(s.getPosition()));
    return;
  }
  auto binary = llvm::cast<AffineBinaryOpExpr>(e);
  appendSizeCode(binary.getLHS(), code);
  appendSizeCode(binary.getRHS(), code);
  switch (e.getKind()) {
  case AffineExprKind::Add: push(SizeOp::Add); break;
  case AffineExprKind::Mul: push(SizeOp::Mul); break;
  case AffineExprKind::FloorDiv: push(SizeOp::FloorDiv); break;
  case AffineExprKind::CeilDiv: push(SizeOp::CeilDiv); break;
  case AffineExprKind::Mod: push(SizeOp::Mod); break;
  default: llvm_unreachable("sizes hold no dimension identifiers");
  }
}

bool mlir::kiln::usesComputedSymbols(Type t, ArrayRef<SizeSymbol> symbols) {
  auto type = llvm::dyn_cast<RankedTensorType>(t);
  if (!type || !hasSymbolicSizes(type))
    return false;
  bool found = false;
  for (AffineExpr size : getDimSizes(type))
    size.walk([&](AffineExpr e) {
      if (auto s = llvm::dyn_cast<AffineSymbolExpr>(e))
        found |= s.getPosition() < symbols.size() && symbols[s.getPosition()].isComputed();
    });
  return found;
}

bool mlir::kiln::usesComputedSymbols(Operation *op, ArrayRef<SizeSymbol> symbols) {
  auto computed = [&](Type t) { return usesComputedSymbols(t, symbols); };
  bool found = false;
  op->walk([&](Operation *inner) {
    found |= llvm::any_of(inner->getOperandTypes(), computed) ||
             llvm::any_of(inner->getResultTypes(), computed);
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}
