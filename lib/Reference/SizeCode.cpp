//===- SizeCode.cpp - postfix code of symbolic sizes ----------------------===//

#include "kiln/Reference/SizeCode.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace ref {

namespace {

/// Operands that follow the instruction in the code, and values it pops.
bool shapeOf(int64_t op, int &inline_, int &pops) {
  switch (static_cast<SizeOp>(op)) {
  case SizeOp::Constant:
  case SizeOp::Symbol: inline_ = 1; pops = 0; return true;
  case SizeOp::InputElement:
  case SizeOp::ValueElement: inline_ = 2; pops = 0; return true;
  case SizeOp::ScaledElement: inline_ = 3; pops = 0; return true;
  case SizeOp::Select: inline_ = 0; pops = 3; return true;
  case SizeOp::Add:
  case SizeOp::Mul:
  case SizeOp::FloorDiv:
  case SizeOp::CeilDiv:
  case SizeOp::Mod:
  case SizeOp::Min:
  case SizeOp::Max:
  case SizeOp::Eq:
  case SizeOp::Lt: inline_ = 0; pops = 2; return true;
  }
  return false;
}

} // namespace

std::string checkSizeCode(const int64_t *code, size_t size, size_t numSymbols,
                          size_t numInputs, size_t numValues) {
  if (size == 0 || size > kMaxSizeCode)
    return "a symbolic size is malformed";
  size_t depth = 0;
  for (size_t pc = 0; pc < size; ++pc) {
    int inline_ = 0, pops = 0;
    if (!shapeOf(code[pc], inline_, pops) || size - pc - 1 < static_cast<size_t>(inline_) ||
        depth < static_cast<size_t>(pops))
      return "a symbolic size is malformed";
    auto op = static_cast<SizeOp>(code[pc]);
    if (op == SizeOp::Symbol &&
        (code[pc + 1] < 0 || static_cast<uint64_t>(code[pc + 1]) >= numSymbols))
      return "a symbolic size names symbol #" + std::to_string(code[pc + 1]) + " of " +
             std::to_string(numSymbols);
    if ((op == SizeOp::InputElement || op == SizeOp::ScaledElement) &&
        (code[pc + 1] < 0 || static_cast<uint64_t>(code[pc + 1]) >= numInputs || code[pc + 2] < 0))
      return numInputs ? "a symbolic size reads input #" + std::to_string(code[pc + 1]) +
                             " element " + std::to_string(code[pc + 2]) + " of " +
                             std::to_string(numInputs) + " inputs"
                       : "a symbolic size reads an input where only size symbols may appear";
    if (op == SizeOp::ValueElement &&
        (code[pc + 1] < 0 || static_cast<uint64_t>(code[pc + 1]) >= numValues || code[pc + 2] < 0))
      return numValues ? "a symbolic size reads value #" + std::to_string(code[pc + 1]) +
                             " element " + std::to_string(code[pc + 2]) + " of " +
                             std::to_string(numValues) + " values"
                       : "a symbolic size reads a computed value where only size symbols and "
                         "inputs may appear";
    depth = depth - pops + 1;
    pc += inline_;
  }
  return depth == 1 ? "" : "a symbolic size is malformed";
}

void forEachSizeInstruction(const int64_t *code, size_t size,
                            const std::function<void(SizeOp op, const int64_t *operands)> &visit) {
  for (size_t pc = 0; pc < size; ++pc) {
    int inline_ = 0, pops = 0;
    if (!shapeOf(code[pc], inline_, pops) || size - pc - 1 < static_cast<size_t>(inline_))
      return; // malformed: checkSizeCode says why
    visit(static_cast<SizeOp>(code[pc]), code + pc + 1);
    pc += inline_;
  }
}

std::string evaluateSizeCode(const int64_t *code, size_t size, const std::vector<int64_t> &symbols,
                             const InputElementReader *readInput, int64_t &value,
                             const FloatElementReader *readFloat,
                             const InputElementReader *readValue) {
  std::string problem =
      checkSizeCode(code, size, symbols.size(), readInput ? static_cast<size_t>(-1) : 0,
                    readValue ? static_cast<size_t>(-1) : 0);
  if (!problem.empty())
    return problem;
  std::vector<int64_t> stack;
  for (size_t pc = 0; pc < size; ++pc) {
    auto op = static_cast<SizeOp>(code[pc]);
    if (op == SizeOp::Constant || op == SizeOp::Symbol) {
      int64_t arg = code[++pc];
      stack.push_back(op == SizeOp::Constant ? arg : symbols[arg]);
      continue;
    }
    if (op == SizeOp::InputElement || op == SizeOp::ValueElement) {
      int64_t source = code[++pc], element = code[++pc], v = 0;
      std::string error;
      if (!(*(op == SizeOp::InputElement ? readInput : readValue))(source, element, v, error))
        return error;
      stack.push_back(v);
      continue;
    }
    if (op == SizeOp::ScaledElement) {
      int64_t input = code[++pc], element = code[++pc], multiplier = code[++pc];
      double v = 0;
      std::string error;
      if (!readFloat)
        return "a symbolic size reads a floating-point input it cannot here";
      if (!(*readFloat)(input, element, v, error))
        return error;
      // As ONNX sizes a Resize by its scales: floor(scale * size).
      double scaled = std::floor(v * static_cast<double>(multiplier));
      if (!(std::fabs(scaled) <= 0x1p62))
        return "a symbolic size scales to " + std::to_string(scaled) + ", not a size";
      stack.push_back(static_cast<int64_t>(scaled));
      continue;
    }
    int64_t b = stack.back();
    stack.pop_back();
    if (op == SizeOp::Select) {
      int64_t a = stack.back();
      stack.pop_back();
      stack.back() = stack.back() != 0 ? a : b;
      continue;
    }
    int64_t a = stack.back(), r = 0;
    bool overflow = false;
    switch (op) {
    case SizeOp::Add: overflow = __builtin_add_overflow(a, b, &r); break;
    case SizeOp::Mul: overflow = __builtin_mul_overflow(a, b, &r); break;
    case SizeOp::Min: r = std::min(a, b); break;
    case SizeOp::Max: r = std::max(a, b); break;
    case SizeOp::Eq: r = a == b; break;
    case SizeOp::Lt: r = a < b; break;
    default: {
      if (b <= 0)
        return "a symbolic size divides by " + std::to_string(b);
      // Truncated division, then floored: no step can overflow.
      int64_t q = a / b, m = a % b;
      if (m < 0) {
        m += b;
        --q;
      }
      r = op == SizeOp::Mod ? m : (op == SizeOp::CeilDiv && m != 0) ? q + 1 : q;
    }
    }
    if (overflow)
      return "a symbolic size overflows";
    stack.back() = r;
  }
  value = stack.back();
  return "";
}

std::string sizeCodeText(const int64_t *code, size_t size,
                         const std::vector<std::string> &symbolNames,
                         const std::vector<std::string> &inputNames) {
  if (!checkSizeCode(code, size, symbolNames.size(), inputNames.size(), static_cast<size_t>(-1))
           .empty())
    return "?";
  std::vector<std::string> texts;
  for (size_t pc = 0; pc < size; ++pc) {
    auto op = static_cast<SizeOp>(code[pc]);
    if (op == SizeOp::Constant) {
      texts.push_back(std::to_string(code[++pc]));
      continue;
    }
    if (op == SizeOp::Symbol) {
      texts.push_back(symbolNames[code[++pc]]);
      continue;
    }
    if (op == SizeOp::InputElement) {
      int64_t input = code[++pc], element = code[++pc];
      texts.push_back(inputNames[input] + "[" + std::to_string(element) + "]");
      continue;
    }
    if (op == SizeOp::ValueElement) {
      int64_t value = code[++pc], element = code[++pc];
      texts.push_back("value #" + std::to_string(value) + "[" + std::to_string(element) + "]");
      continue;
    }
    if (op == SizeOp::ScaledElement) {
      int64_t input = code[++pc], element = code[++pc], multiplier = code[++pc];
      texts.push_back("floor(" + inputNames[input] + "[" + std::to_string(element) + "] * " +
                      std::to_string(multiplier) + ")");
      continue;
    }
    std::string rhs = texts.back();
    texts.pop_back();
    if (op == SizeOp::Select) {
      std::string mid = texts.back();
      texts.pop_back();
      texts.back() = "select(" + texts.back() + ", " + mid + ", " + rhs + ")";
      continue;
    }
    std::string &lhs = texts.back();
    if (op == SizeOp::Min || op == SizeOp::Max) {
      lhs = (op == SizeOp::Min ? "min(" : "max(") + lhs + ", " + rhs + ")";
      continue;
    }
    static const char *infix[] = {"", "", " + ", " * ", " floordiv ", " ceildiv ", " mod ",
                                  "", "", " == ", " < "};
    lhs = "(" + lhs + infix[static_cast<int64_t>(op)] + rhs + ")";
  }
  std::string text = texts.back();
  // The outermost parentheses add nothing.
  if (text.size() > 1 && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    bool wraps = true;
    for (size_t k = 0; k + 1 < text.size() && wraps; ++k) {
      depth += text[k] == '(' ? 1 : text[k] == ')' ? -1 : 0;
      wraps = depth > 0;
    }
    if (wraps)
      text = text.substr(1, text.size() - 2);
  }
  return text;
}

} // namespace ref
} // namespace kiln
