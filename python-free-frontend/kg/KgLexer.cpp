//===- KgLexer.cpp - tokens of the .kg language ---------------------------===//

#include "KgLexer.h"

#include <cctype>

namespace kiln {
namespace frontend {

Token KgLexer::make(Token::Kind kind, const char *begin, std::string text) {
  Token token;
  token.kind = kind;
  token.begin = begin;
  token.text = text.empty() && kind != Token::String
                   ? std::string(begin, current_)
                   : std::move(text);
  return token;
}

Token KgLexer::next() {
  // Skip white space and comments.
  while (current_ != end_) {
    if (std::isspace(static_cast<unsigned char>(*current_))) {
      ++current_;
    } else if (*current_ == '#') {
      while (current_ != end_ && *current_ != '\n')
        ++current_;
    } else {
      break;
    }
  }
  const char *begin = current_;
  if (current_ == end_)
    return make(Token::Eof, begin, "end of file");

  char c = *current_++;
  switch (c) {
  case '(': return make(Token::LParen, begin);
  case ')': return make(Token::RParen, begin);
  case '[': return make(Token::LSquare, begin);
  case ']': return make(Token::RSquare, begin);
  case ',': return make(Token::Comma, begin);
  case '=': return make(Token::Equal, begin);
  case ':': return make(Token::Colon, begin);
  case '@': return make(Token::At, begin);
  case '+': return make(Token::Plus, begin);
  case '-': return make(Token::Minus, begin);
  case '*': return make(Token::Star, begin);
  case '/': return make(Token::Slash, begin);
  case '"': {
    std::string value;
    while (current_ != end_ && *current_ != '"' && *current_ != '\n') {
      if (*current_ == '\\' && current_ + 1 != end_) {
        ++current_;
        char e = *current_++;
        value += e == 'n' ? '\n' : (e == 't' ? '\t' : e);
        continue;
      }
      value += *current_++;
    }
    if (current_ == end_ || *current_ != '"')
      return make(Token::Error, begin, "unterminated string");
    ++current_;
    Token token = make(Token::String, begin, value);
    token.text = value;
    return token;
  }
  default:
    break;
  }

  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    while (current_ != end_ &&
           (std::isalnum(static_cast<unsigned char>(*current_)) ||
            *current_ == '_' || *current_ == '.'))
      ++current_;
    return make(Token::Identifier, begin);
  }

  if (std::isdigit(static_cast<unsigned char>(c)) ||
      (c == '.' && current_ != end_ &&
       std::isdigit(static_cast<unsigned char>(*current_)))) {
    bool isFloat = c == '.';
    auto digits = [&] {
      while (current_ != end_ && std::isdigit(static_cast<unsigned char>(*current_)))
        ++current_;
    };
    digits();
    if (current_ != end_ && *current_ == '.' && !isFloat) {
      isFloat = true;
      ++current_;
      digits();
    }
    if (current_ != end_ && (*current_ == 'e' || *current_ == 'E')) {
      const char *save = current_++;
      if (current_ != end_ && (*current_ == '+' || *current_ == '-'))
        ++current_;
      if (current_ == end_ || !std::isdigit(static_cast<unsigned char>(*current_))) {
        current_ = save; // not an exponent after all
      } else {
        isFloat = true;
        digits();
      }
    }
    if (current_ != end_ && (std::isalpha(static_cast<unsigned char>(*current_)) ||
                             *current_ == '_'))
      return make(Token::Error, begin, "malformed number");
    return make(isFloat ? Token::Float : Token::Integer, begin);
  }

  return make(Token::Error, begin,
              std::string("unexpected character '") + c + "'");
}

} // namespace frontend
} // namespace kiln
