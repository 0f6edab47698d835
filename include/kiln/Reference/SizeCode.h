//===- SizeCode.h - postfix code of symbolic sizes --------------*- C++ -*-===//
//
// A symbolic size (a dynamic dimension's size, a symbolic attribute entry,
// a size symbol computed at run time) is written as postfix code over a
// stack of int64 values. The compiler writes it, the loader evaluates it per
// run's sizes; both check it with the same functions, so the language has
// one definition (docs/executable-format.md lists the codes).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_SIZECODE_H
#define KILN_REFERENCE_SIZECODE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {
namespace ref {

/// The instructions. Constant, Symbol and InputElement take operands that
/// follow them in the code; the others pop their operands (the last on top)
/// and push the result.
enum class SizeOp : int64_t {
  Constant = 0,     ///< c: push c
  Symbol = 1,       ///< k: push size symbol k's value
  Add = 2,
  Mul = 3,
  FloorDiv = 4,     ///< by a positive divisor
  CeilDiv = 5,      ///< by a positive divisor
  Mod = 6,          ///< by a positive divisor, in [0, divisor)
  Min = 7,
  Max = 8,
  Eq = 9,           ///< 1 if equal, else 0
  Lt = 10,          ///< 1 if less, else 0
  Select = 11,       ///< c a b: a if c != 0, else b
  InputElement = 12, ///< k j: element j of model input k (an integer tensor)
  ScaledElement = 13, ///< k j m: floor(element j of floating-point input k * m)
  /// k j: element j of program value k (an integer tensor a step computes:
  /// a data-dependent length, known once that step has run)
  ValueElement = 14
};

/// The longest code a size may have.
constexpr size_t kMaxSizeCode = 4096;

/// The most size symbols a model (and an executable) may have: dimensions,
/// and the values and sizes read at run time, which take a few per node.
constexpr size_t kMaxSizeSymbols = 256;

/// Empty if `code` is well formed: every instruction known, each operand
/// present, symbols below `numSymbols`, inputs below `numInputs` (no input
/// reads at all when it is 0), program values below `numValues` (likewise),
/// and exactly one value left.
std::string checkSizeCode(const int64_t *code, size_t size, size_t numSymbols,
                          size_t numInputs, size_t numValues = 0);

/// Calls `visit` with each instruction of `code` (checked by
/// checkSizeCode) and a pointer to the operands that follow it.
void forEachSizeInstruction(const int64_t *code, size_t size,
                            const std::function<void(SizeOp op, const int64_t *operands)> &visit);

/// Reads element `element` of input `input`; returns false with `error`
/// set when it cannot.
using InputElementReader =
    std::function<bool(int64_t input, int64_t element, int64_t &value, std::string &error)>;

/// Reads element `element` of floating-point input `input`.
using FloatElementReader =
    std::function<bool(int64_t input, int64_t element, double &value, std::string &error)>;

/// Evaluates `code` for the symbols' values, reading input elements with
/// `readInput` and `readFloat` and program values' elements with
/// `readValue` (null: the code may not read any). Returns an error message
/// (malformed code, overflow, a division by a non-positive divisor, an
/// element that cannot be read) or empty.
std::string evaluateSizeCode(const int64_t *code, size_t size, const std::vector<int64_t> &symbols,
                             const InputElementReader *readInput, int64_t &value,
                             const FloatElementReader *readFloat = nullptr,
                             const InputElementReader *readValue = nullptr);

/// `code` as text: "batch", "seq + 1", "max(n, 1)", "shape[0]" for an input
/// element (by `inputNames`), "value #7[0]" for a program value's; "?" when
/// malformed.
std::string sizeCodeText(const int64_t *code, size_t size,
                         const std::vector<std::string> &symbolNames,
                         const std::vector<std::string> &inputNames);

} // namespace ref
} // namespace kiln

#endif // KILN_REFERENCE_SIZECODE_H
