//===- SymbolicSizes.h - symbolic sizes of dynamic dimensions ---*- C++ -*-===//
//
// A dynamic dimension of a kiln tensor (`?`) has a symbolic size: an affine
// expression over the model's size symbols s0, s1, ... (sums, products,
// floor and ceil division by constants), as exporters' Shape -> Gather ->
// Concat -> Reshape chains produce. Static dimensions are constant
// expressions, so one vector of AffineExpr describes any shape and shape
// rules are written once for both.
//
// The symbols themselves (name, MIN..MAX range, OPT point) live in the model
// function's `kiln.symbols` attribute.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_SYMBOLICSIZES_H
#define KILN_IR_SYMBOLICSIZES_H

#include "kiln/IR/KilnAttrs.h"
#include "kiln/Reference/SizeCode.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir {
namespace kiln {

/// The most size symbols one model may have (s0 .. s255).
constexpr unsigned kMaxSizeSymbols = ::kiln::ref::kMaxSizeSymbols;

/// The name of the function attribute listing the size symbols.
constexpr const char *kSizeSymbolsAttrName = "kiln.symbols";

/// One size symbol: a named dimension valid over [min, max], tuned for opt;
/// or, with `code`, a value read at run time (computed from integer model
/// inputs' elements and earlier symbols: a Reshape's shape, Tile's
/// repeats) and refused outside [min, max]; or, `bound`, a length that
/// follows computed data (NonZero of a computed tensor), read at run time
/// from the count operand of the one kiln.take_prefix naming it.
struct SizeSymbol {
  std::string name;
  int64_t min = 1, max = 1, opt = 1;
  /// Postfix code (include/kiln/Reference/SizeCode.h); empty for a
  /// dimension, whose size the run's input shapes give.
  SmallVector<int64_t> code;
  bool bound = false;
  bool isComputed() const { return !code.empty() || bound; }
};

/// The widest range of a value read at run time (a size symbol's code):
/// products of two such values stay within int64.
constexpr int64_t kRunTimeValueBound = int64_t(1) << 31;

/// Appends the postfix code of `size` (include/kiln/Reference/SizeCode.h).
void appendSizeCode(AffineExpr size, SmallVectorImpl<int64_t> &code);

/// True when `type` has a size that uses a symbol read at run time.
bool usesComputedSymbols(Type type, ArrayRef<SizeSymbol> symbols);
/// The same for any type of `op` or of an op inside it.
bool usesComputedSymbols(Operation *op, ArrayRef<SizeSymbol> symbols);

/// Checks that `size` is a symbolic size: built from symbols s0..s255 and
/// constants only (no dimension identifiers) and not itself a constant.
LogicalResult verifySymbolicSize(AffineExpr size,
                                 function_ref<InFlightDiagnostic()> emitError);

/// True for a kiln tensor type with at least one dynamic dimension.
bool hasSymbolicSizes(Type type);

/// True for a kiln tensor type whose dimensions are static but for the
/// first (a batch), which may be symbolic: what the CPU's convolution
/// passes take (oneDNN primitives are made per size at run time).
bool isStaticButBatch(Type type);

/// The size of every dimension of a kiln tensor: constants for static
/// dimensions, the encoding's expressions for dynamic ones.
SmallVector<AffineExpr> getDimSizes(RankedTensorType type);

/// The kiln tensor type with these sizes (constant ones static, the rest
/// dynamic with their expressions), element type, and `encoding`'s device;
/// `dimOrder` is the layout (empty: row-major).
RankedTensorType getKilnTensorType(ArrayRef<AffineExpr> sizes, Type elementType,
                                   ArrayRef<int64_t> dimOrder,
                                   TensorEncodingAttr encoding);

/// NumPy broadcast of two symbolic shapes: equal sizes, or a constant 1
/// against anything. std::nullopt when sizes differ otherwise (two
/// different symbolic sizes could be broadcast only if one were 1 at run
/// time, which kiln does not assume).
std::optional<SmallVector<AffineExpr>> broadcastSizes(ArrayRef<AffineExpr> a,
                                                      ArrayRef<AffineExpr> b);

/// One size as written in the IR: "s0 * 12".
std::string sizeString(AffineExpr size);

/// The affine map `()[s0, ...] -> (sizes...)` of a symbolic reshape,
/// broadcast or slice end (as many symbols as the highest one named).
AffineMap getSizesMap(ArrayRef<AffineExpr> sizes, MLIRContext *context);

/// "[s0x128x768]": sizes as in error messages.
std::string sizesString(ArrayRef<AffineExpr> sizes);

/// The product of `sizes` (the element count).
AffineExpr productOf(ArrayRef<AffineExpr> sizes, MLIRContext *context);

/// Whether `a` and `b` are the same size for every value of the symbols
/// (equal as polynomials; sizes with divisions only when identical).
bool equalSizes(AffineExpr a, AffineExpr b);

/// `a / b` when `b` divides `a` for every value of the symbols: both are
/// sums of monomials (a constant times symbols) and each monomial of `a` is
/// a multiple of the single monomial `b`. std::nullopt otherwise.
std::optional<AffineExpr> exactQuotient(AffineExpr a, AffineExpr b);

/// The value of `size` for the given symbol values; std::nullopt if it
/// names a symbol past `symbols` or overflows.
std::optional<int64_t> evaluateSize(AffineExpr size, ArrayRef<int64_t> symbols);

/// Bounds on `size` over the symbols' ranges, by interval arithmetic
/// (exact for the sizes shape rules make; never narrower than the truth);
/// std::nullopt if it names an unknown symbol, divides by anything but a
/// positive constant, or overflows.
std::optional<std::pair<int64_t, int64_t>>
sizeRange(AffineExpr size, ArrayRef<SizeSymbol> symbols);

/// The most elements `type` can hold over the symbols' ranges (its elements
/// when static); std::nullopt if a size has no bounds (sizeRange) or may
/// be negative.
std::optional<int64_t> maxElements(RankedTensorType type, ArrayRef<SizeSymbol> symbols);

/// The bytes a tensor of `type` occupies (an i1 element takes a byte); of a
/// symbolic size, at the largest values of `symbols` (0 for one sized by
/// values read at run time, or past 2^63 bytes).
int64_t tensorBytes(Type type, ArrayRef<SizeSymbol> symbols = {});

/// Whether `op` or anything inside it has an operand or result of symbolic size.
bool touchesSymbolicSizes(Operation *op);

/// Reads the `kiln.symbols` attribute of `op` (a model function); an empty
/// list when it has none.
SmallVector<SizeSymbol> getSizeSymbols(Operation *op);
/// The attribute value describing `symbols`.
Attribute buildSizeSymbolsAttr(MLIRContext *context, ArrayRef<SizeSymbol> symbols);
/// Checks a `kiln.symbols` attribute: a list of {name, min, max, opt} with
/// distinct names and 0 <= min <= opt <= max, or {name, min, max, opt,
/// code} for a value read at run time, its code reading earlier symbols
/// and the elements of the function's `numInputs` arguments, or {name,
/// min, max, opt, bound} for a length bound by a kiln.take_prefix.
LogicalResult verifySizeSymbolsAttr(Attribute attr, size_t numInputs,
                                    function_ref<InFlightDiagnostic()> emitError);

} // namespace kiln
} // namespace mlir

#endif // KILN_IR_SYMBOLICSIZES_H
