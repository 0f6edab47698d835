//===- KgLexer.h - tokens of the .kg language -------------------*- C++ -*-===//

#ifndef KILN_FRONTEND_KG_KGLEXER_H
#define KILN_FRONTEND_KG_KGLEXER_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace kiln {
namespace frontend {

struct Token {
  enum Kind {
    Eof,
    Error,      ///< text holds the message
    Identifier, ///< letters, digits, '_' and '.', not starting with a digit
    Integer,
    Float,
    String,     ///< text holds the unquoted, unescaped contents
    LParen, RParen, LSquare, RSquare, Comma, Equal, Colon, At,
    Plus, Minus, Star, Slash,
  };
  Kind kind = Eof;
  std::string text;
  const char *begin = nullptr; ///< position in the buffer, for locations

  bool is(Kind k) const { return kind == k; }
  bool isKeyword(llvm::StringRef word) const {
    return kind == Identifier && text == word;
  }
};

/// Splits a .kg buffer into tokens; '#' starts a comment to end of line.
class KgLexer {
public:
  explicit KgLexer(llvm::StringRef buffer)
      : current_(buffer.begin()), end_(buffer.end()) {}
  Token next();

private:
  Token make(Token::Kind kind, const char *begin, std::string text = "");
  const char *current_;
  const char *end_;
};

} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_KG_KGLEXER_H
