//===- KgOps.h - the op calls of the .kg language ---------------*- C++ -*-===//
//
// The table that maps a .kg call such as `conv2d(x, w, strides=[2, 2])` to a
// kiln op: its arity, the attributes it accepts, and how their .kg values
// (negative axes, short padding lists, defaults) become the op's attributes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_KG_KGOPS_H
#define KILN_FRONTEND_KG_KGOPS_H

#include "kiln/Reference/Tensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SMLoc.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace frontend {

/// An attribute value as written in a call, before it is checked.
struct KgAttrValue {
  enum Kind { Int, Float, Bool, IntList, Word, String } kind = Int;
  int64_t intValue = 0;
  double floatValue = 0.0;
  bool boolValue = false;
  std::vector<int64_t> list;
  std::string text; ///< Word (f16, nhwc, cuda:0, perm[0, 2, 1]) or String
  llvm::SMLoc loc;
};

/// Why `value`, written as a literal, is not an element of `dtype` ("" if
/// it is): past an integer type's range or past 2^53 (where doubles stop
/// being exact), or past a float type's largest finite value.
std::string literalFitProblem(double value, ::kiln::ref::DType dtype);

/// One call being turned into an op. The builder functions read attributes
/// through the typed accessors, which report errors at the attribute.
class KgCall {
public:
  KgCall(mlir::OpBuilder &builder, mlir::Location loc,
         std::function<mlir::Location(llvm::SMLoc)> toLoc,
         llvm::SmallVector<mlir::Value> operands,
         llvm::StringMap<KgAttrValue> attrs)
      : builder(builder), loc(loc), toLoc(std::move(toLoc)),
        operands(std::move(operands)), attrs(std::move(attrs)) {}

  mlir::OpBuilder &builder;
  mlir::Location loc;
  std::function<mlir::Location(llvm::SMLoc)> toLoc;
  llvm::SmallVector<mlir::Value> operands;
  llvm::StringMap<KgAttrValue> attrs;
  llvm::SmallVector<mlir::NamedAttribute> built;
  bool failed = false;

  int64_t rank(unsigned operand = 0) const;
  /// Each adds `name` to the op's attributes (under `opName` if given).
  void addInt(llvm::StringRef name, std::optional<int64_t> defaultValue);
  void addFloat(llvm::StringRef name, std::optional<double> defaultValue);
  /// Refuses attribute `name` (if given) when operand 0's element type
  /// cannot hold it (a pad value of 2.5 for i32, 1000 for i8).
  void checkElementValue(llvm::StringRef name);
  void addBool(llvm::StringRef name, std::optional<bool> defaultValue);
  void addInts(llvm::StringRef name,
               std::optional<std::vector<int64_t>> defaultValue);
  /// An axis of operand 0, negative counting from the end.
  void addAxis(llvm::StringRef name, std::optional<int64_t> defaultValue);
  /// A list of axes of operand 0, normalised and sorted; default all.
  void addAxes(llvm::StringRef name);
  /// 1, 2 or 4 values -> [top, left, bottom, right].
  void addPadding(llvm::StringRef name);
  void addType(llvm::StringRef name);
  void addDevice(llvm::StringRef name);
  void addLayout(llvm::StringRef name, llvm::StringRef opName);

  /// Reports an error at the call (or at an attribute) and marks failure.
  void error(const llvm::Twine &message, llvm::SMLoc at = {});
  const KgAttrValue *find(llvm::StringRef name, bool required);
};

struct KgOpSpec {
  unsigned minOperands;
  unsigned maxOperands; ///< ~0u: variadic
  std::vector<const char *> attrNames;
  /// Creates the op; returns null after reporting an error.
  std::function<mlir::Operation *(KgCall &)> build;
};

/// The spec of a .kg call name, or null if there is no such op.
const KgOpSpec *lookupKgOp(llvm::StringRef name);

/// All call names, for "did you mean" and the documentation test.
std::vector<llvm::StringRef> getKgOpNames();

} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_KG_KGOPS_H
