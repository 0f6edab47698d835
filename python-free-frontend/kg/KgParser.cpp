//===- KgParser.cpp - .kg text to kiln Graph IR ---------------------------===//
//
// A recursive-descent parser over KgLexer's tokens. It builds one func.func
// whose arguments are the model's inputs, with weights, constants and ops in
// the body and the outputs returned. The first error stops parsing; it is
// reported through MLIR's diagnostic engine at a file:line:col location.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/KgParser.h"

#include "KgLexer.h"
#include "KgOps.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/ReferenceConversion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
namespace ref = ::kiln::ref;

namespace kiln {
namespace frontend {
namespace {

/// Largest tensor a type may describe (the IR's limit).
constexpr int64_t kMaxElements = mlir::kiln::kMaxTensorElements;
/// Largest initializer that is materialised element by element at compile
/// time (random values and literal lists); splats and files have no limit
/// beyond kMaxElements and the file's size.
constexpr int64_t kMaxGeneratedElements = int64_t(1) << 26;
/// ... and all of them together: many weights each under the limit would
/// otherwise add up to an out-of-memory kill (2^27 f64 values are 1 GiB).
constexpr int64_t kMaxGeneratedTotal = int64_t(1) << 27;

/// An expression's value: a tensor, or a bare number that takes its dtype
/// and device from the tensor it meets.
struct ExprValue {
  Value tensor;
  double number = 0.0;
  bool isInteger = false;
  llvm::SMLoc loc;
  bool isNumber() const { return !tensor; }
};

class KgParser {
public:
  KgParser(llvm::SourceMgr &sourceMgr, MLIRContext *context)
      : sourceMgr(sourceMgr), context(context), builder(context),
        lexer(sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer()) {
    filename = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
                   ->getBufferIdentifier()
                   .str();
    consume();
  }

  OwningOpRef<ModuleOp> parse();

private:
  // Tokens and errors.
  void consume() { token = lexer.next(); }
  Location toLoc(llvm::SMLoc loc);
  Location locOf(const Token &t) { return toLoc(llvm::SMLoc::getFromPointer(t.begin)); }
  LogicalResult error(const Token &at, const llvm::Twine &message);
  LogicalResult error(llvm::SMLoc at, const llvm::Twine &message);
  LogicalResult expect(Token::Kind kind, llvm::StringRef what);
  std::string describe(const Token &t);

  // Statements.
  LogicalResult parseStatement();
  LogicalResult parseInput();
  LogicalResult parseWeight(bool isConstant);
  LogicalResult parseOutput();
  LogicalResult parseAssignment();
  LogicalResult defineName(const Token &name, Value value);

  // Types and literals.
  FailureOr<RankedTensorType> parseTensorType();
  FailureOr<Type> parseDType();
  FailureOr<DenseElementsAttr> parseInitializer(RankedTensorType type);
  FailureOr<ref::Tensor> parseLiteralList(RankedTensorType type);
  LogicalResult parseListLevel(ref::Tensor &t, size_t level, int64_t &count);
  LogicalResult parseRandom(RankedTensorType type);
  LogicalResult generateRandomWeights();
  FailureOr<DenseElementsAttr> parseFileData(RankedTensorType type);
  FailureOr<double> parseSignedNumber(bool &isInteger);
  FailureOr<double> parseElementValue(ref::DType dtype);
  LogicalResult checkFits(double value, ref::DType dtype, llvm::SMLoc at);

  // Expressions.
  FailureOr<ExprValue> parseExpr(int minPrecedence = 0);
  FailureOr<ExprValue> parseUnary();
  FailureOr<ExprValue> parsePrimary();
  FailureOr<ExprValue> parseCall(const Token &name);
  FailureOr<KgAttrValue> parseAttrValue();
  FailureOr<Value> materialize(const ExprValue &value, Value like);
  FailureOr<ExprValue> buildBinary(const Token &op, ExprValue lhs, ExprValue rhs);

  llvm::SourceMgr &sourceMgr;
  MLIRContext *context;
  OpBuilder builder;
  KgLexer lexer;
  Token token;
  std::string filename;

  std::string modelName;
  Block *body = nullptr;
  llvm::StringMap<Value> names;
  int nesting = 0; ///< expression depth, bounded by kMaxNesting
  int64_t generated = 0; ///< elements generated so far, bounded by kMaxGeneratedTotal
  /// random(...) initializers are generated after the whole file has
  /// parsed: a file with an error fails at once, whatever it declared
  /// before it. Each weight holds a zero splat until then.
  struct PendingRandom {
    RankedTensorType type;
    uint64_t seed;
    double scale;
    Operation *op = nullptr; ///< the weight or constant, once built
  };
  std::vector<PendingRandom> pendingRandom;
  llvm::StringMap<llvm::SMLoc> definedAt;
  SmallVector<std::string> inputNames;
  SmallVector<Value> outputs;
  SmallVector<std::string> outputNames;
};

Location KgParser::toLoc(llvm::SMLoc loc) {
  auto [line, column] = sourceMgr.getLineAndColumn(loc, sourceMgr.getMainFileID());
  return FileLineColLoc::get(context, filename, line, column);
}

LogicalResult KgParser::error(llvm::SMLoc at, const llvm::Twine &message) {
  mlir::emitError(toLoc(at)) << message;
  return failure();
}

LogicalResult KgParser::error(const Token &at, const llvm::Twine &message) {
  if (at.is(Token::Error))
    return error(llvm::SMLoc::getFromPointer(at.begin), at.text);
  return error(llvm::SMLoc::getFromPointer(at.begin), message);
}

std::string KgParser::describe(const Token &t) {
  if (t.is(Token::Eof))
    return "end of file";
  if (t.is(Token::String))
    return "string \"" + t.text + "\"";
  return "'" + t.text + "'";
}

LogicalResult KgParser::expect(Token::Kind kind, llvm::StringRef what) {
  if (!token.is(kind))
    return error(token, "expected " + what + ", found " + describe(token));
  consume();
  return success();
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> KgParser::parse() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(toLoc(llvm::SMLoc::getFromPointer(token.begin)));
  modelName = llvm::sys::path::stem(filename).str();
  if (token.isKeyword("model")) {
    consume();
    if (!token.is(Token::Identifier)) {
      (void)error(token, "expected a model name after 'model', found " + describe(token));
      return nullptr;
    }
    modelName = token.text;
    consume();
  }
  // Block arguments are added as inputs are declared; the function type is
  // set once the outputs are known.
  auto func = func::FuncOp::create(module->getLoc(), modelName,
                                   builder.getFunctionType({}, {}));
  module->push_back(func);
  body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  while (!token.is(Token::Eof))
    if (failed(parseStatement()))
      return nullptr;

  if (outputs.empty()) {
    (void)error(token, "the model has no 'output' statement");
    return nullptr;
  }
  builder.create<func::ReturnOp>(module->getLoc(), outputs);
  SmallVector<Type> inputTypes(body->getArgumentTypes());
  SmallVector<Type> outputTypes;
  for (Value v : outputs)
    outputTypes.push_back(v.getType());
  func.setFunctionType(builder.getFunctionType(inputTypes, outputTypes));
  for (auto [i, name] : llvm::enumerate(inputNames))
    func.setArgAttr(i, "kiln.name", builder.getStringAttr(name));
  for (auto [i, name] : llvm::enumerate(outputNames))
    func.setResultAttr(i, "kiln.name", builder.getStringAttr(name));
  if (failed(mlir::verify(*module)) || failed(generateRandomWeights()))
    return nullptr;
  return module;
}

LogicalResult KgParser::parseStatement() {
  if (token.isKeyword("input"))
    return parseInput();
  if (token.isKeyword("weight"))
    return parseWeight(/*isConstant=*/false);
  if (token.isKeyword("const"))
    return parseWeight(/*isConstant=*/true);
  if (token.isKeyword("output"))
    return parseOutput();
  if (token.isKeyword("model"))
    return error(token, "'model' must be the first statement");
  if (token.is(Token::Identifier))
    return parseAssignment();
  return error(token, "expected a statement (input, weight, const, output or "
                      "NAME = expression), found " + describe(token));
}

LogicalResult KgParser::defineName(const Token &name, Value value) {
  static const char *keywords[] = {"input", "weight", "const", "output", "model"};
  for (const char *k : keywords)
    if (name.text == k)
      return error(name, "'" + name.text + "' is a keyword and cannot name a value");
  if (lookupKgOp(name.text))
    return error(name, "'" + name.text + "' is an op name and cannot name a value");
  auto [it, inserted] = names.try_emplace(name.text, value);
  if (!inserted) {
    auto [line, col] = sourceMgr.getLineAndColumn(definedAt[name.text]);
    return error(name, "'" + name.text + "' is already defined at line " +
                           llvm::Twine(line) + ":" + llvm::Twine(col));
  }
  definedAt[name.text] = llvm::SMLoc::getFromPointer(name.begin);
  return success();
}

LogicalResult KgParser::parseInput() {
  consume(); // input
  Token name = token;
  if (failed(expect(Token::Identifier, "an input name")) ||
      failed(expect(Token::Colon, "':' before the input type")))
    return failure();
  FailureOr<RankedTensorType> type = parseTensorType();
  if (failed(type))
    return failure();
  Value arg = body->addArgument(*type, locOf(name));
  inputNames.push_back(name.text);
  return defineName(name, arg);
}

LogicalResult KgParser::parseWeight(bool isConstant) {
  consume(); // weight / const
  Token name = token;
  if (failed(expect(Token::Identifier, isConstant ? "a constant name" : "a weight name")) ||
      failed(expect(Token::Colon, "':' before the type")))
    return failure();
  FailureOr<RankedTensorType> type = parseTensorType();
  if (failed(type) || failed(expect(Token::Equal, "'=' and an initializer")))
    return failure();
  size_t pendingBefore = pendingRandom.size();
  FailureOr<DenseElementsAttr> value = parseInitializer(*type);
  if (failed(value))
    return failure();
  Value result;
  if (isConstant)
    result = builder.create<ConstantOp>(locOf(name), *type, *value);
  else
    result = builder.create<WeightOp>(locOf(name), *type,
                                      builder.getStringAttr(name.text), *value);
  if (pendingRandom.size() > pendingBefore)
    pendingRandom.back().op = result.getDefiningOp();
  return defineName(name, result);
}

LogicalResult KgParser::parseOutput() {
  consume(); // output
  while (true) {
    Token name = token;
    if (failed(expect(Token::Identifier, "an output name")))
      return failure();
    auto it = names.find(name.text);
    if (it == names.end())
      return error(name, "output '" + name.text + "' is not defined");
    outputs.push_back(it->second);
    outputNames.push_back(name.text);
    if (!token.is(Token::Comma))
      return success();
    consume();
  }
}

LogicalResult KgParser::parseAssignment() {
  Token name = token;
  consume();
  if (!token.is(Token::Equal)) {
    if (token.is(Token::LParen))
      return error(name, "a call must be assigned to a name: NAME = " + name.text + "(...)");
    return error(token, "expected '=' after '" + name.text + "', found " + describe(token));
  }
  consume();
  FailureOr<ExprValue> value = parseExpr();
  if (failed(value))
    return failure();
  if (value->isNumber())
    return error(value->loc, "a bare number has no dtype; declare it with "
                             "'const NAME: TYPE = VALUE'");
  return defineName(name, value->tensor);
}

//===----------------------------------------------------------------------===//
// Types and literals
//===----------------------------------------------------------------------===//

FailureOr<Type> KgParser::parseDType() {
  if (token.is(Token::Identifier)) {
    if (Type type = parseDTypeName(context, token.text)) {
      consume();
      return type;
    }
  }
  return error(token, "expected a dtype (f32, f16, bf16, f64, i64, i32, i16, i8, i1, u64, u32, u16, u8), found " +
                          describe(token));
}

FailureOr<RankedTensorType> KgParser::parseTensorType() {
  Token start = token;
  FailureOr<Type> element = parseDType();
  if (failed(element) || failed(expect(Token::LSquare, "'[' and a shape")))
    return failure();
  SmallVector<int64_t> shape;
  int64_t elements = 1;
  while (!token.is(Token::RSquare)) {
    if (!token.is(Token::Integer))
      return error(token, "expected a dimension size, found " + describe(token));
    int64_t d;
    if (llvm::StringRef(token.text).getAsInteger(10, d) || d < 0 || d > kMaxElements)
      return error(token, "dimension size " + token.text + " is out of range");
    shape.push_back(d);
    if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxElements)
      return error(start, "tensor has too many elements (at most 2^40)");
    consume();
    if (token.is(Token::Comma))
      consume();
    else if (!token.is(Token::RSquare))
      return error(token, "expected ',' or ']' in the shape, found " + describe(token));
  }
  if (!withinElementLimit(shape)) // a zero dimension hides the rest
    return error(start, "tensor has too many elements (at most 2^40)");
  consume(); // ]

  // Optional layout, then optional @device.
  SmallVector<int64_t> order;
  if (token.isKeyword("row_major") || token.isKeyword("nchw") ||
      token.isKeyword("nhwc") || token.isKeyword("perm")) {
    Token layoutToken = token;
    std::string text = token.text;
    consume();
    if (text == "perm") {
      if (!token.is(Token::LSquare))
        return error(token, "expected '[' after perm");
      text += "[";
      consume();
      while (!token.is(Token::RSquare)) {
        if (!token.is(Token::Integer))
          return error(token, "expected a dimension in perm[...], found " + describe(token));
        text += token.text + ",";
        consume();
        if (token.is(Token::Comma))
          consume();
        else if (!token.is(Token::RSquare))
          return error(token, "expected ',' or ']' in perm[...]");
      }
      consume();
      text += "]";
    }
    std::string message;
    auto parsed = parseLayout(text, shape.size(), message);
    if (!parsed)
      return error(layoutToken, message);
    order = *parsed;
  }
  DeviceKind kind = DeviceKind::CPU;
  int64_t ordinal = 0;
  if (token.is(Token::At)) {
    consume();
    Token deviceToken = token;
    std::string text = token.text;
    if (!token.is(Token::Identifier))
      return error(token, "expected a device (cpu or cuda:N) after '@'");
    consume();
    if (text == "cuda") {
      if (failed(expect(Token::Colon, "':' and a device number after cuda")))
        return failure();
      if (!token.is(Token::Integer))
        return error(token, "expected a device number after 'cuda:'");
      text += ":" + token.text;
      consume();
    }
    auto device = parseDevice(text);
    if (!device)
      return error(deviceToken, "unknown device '" + text + "' (expected cpu or cuda:N)");
    kind = device->first;
    ordinal = device->second;
  }
  return RankedTensorType::get(shape, *element,
                               TensorEncodingAttr::get(context, order, kind, ordinal));
}

FailureOr<double> KgParser::parseSignedNumber(bool &isInteger) {
  bool negative = false;
  if (token.is(Token::Minus)) {
    negative = true;
    consume();
  }
  if (!token.is(Token::Integer) && !token.is(Token::Float))
    return error(token, "expected a number, found " + describe(token));
  isInteger = token.is(Token::Integer);
  double value = std::strtod(token.text.c_str(), nullptr);
  consume();
  return negative ? -value : value;
}

/// Numbers are held as doubles: an integer or boolean element must be one
/// its type holds, and exact (below 2^53 in magnitude).
LogicalResult KgParser::checkFits(double value, ref::DType dtype, llvm::SMLoc at) {
  std::string problem = literalFitProblem(value, dtype);
  if (!problem.empty())
    return error(at, problem);
  return success();
}

/// One element of a weight initializer: `true`, `false` or a signed number;
/// a fractional value is an error for an integer or boolean tensor.
FailureOr<double> KgParser::parseElementValue(ref::DType dtype) {
  if (token.isKeyword("true") || token.isKeyword("false")) {
    double value = token.isKeyword("true");
    consume();
    return value;
  }
  Token numberToken = token;
  bool isInteger = true;
  FailureOr<double> value = parseSignedNumber(isInteger);
  if (failed(value))
    return failure();
  if (!isInteger && !ref::isFloat(dtype))
    return error(numberToken, "expected an integer for a " +
                                  std::string(ref::dtypeName(dtype)) + " tensor");
  if (failed(checkFits(*value, dtype, llvm::SMLoc::getFromPointer(numberToken.begin))))
    return failure();
  return value;
}

FailureOr<DenseElementsAttr> KgParser::parseInitializer(RankedTensorType type) {
  std::optional<ref::DType> dtype = toReferenceDType(type.getElementType());
  FailureOr<ref::Tensor> tensor = failure();
  if ((token.isKeyword("random") || token.is(Token::LSquare)) &&
      type.getNumElements() > kMaxGeneratedElements)
    return error(token, "initializer too large to generate (" +
                            llvm::Twine(type.getNumElements()) + " elements, at most " +
                            llvm::Twine(kMaxGeneratedElements) +
                            "); read it with file(...)");
  if (token.isKeyword("random") || token.is(Token::LSquare)) {
    generated += type.getNumElements();
    if (generated > kMaxGeneratedTotal)
      return error(token, "initializers generated at compile time exceed " +
                              llvm::Twine(kMaxGeneratedTotal) +
                              " elements in all; read large weights with file(...)");
  }
  if (token.isKeyword("random")) {
    if (failed(parseRandom(type)))
      return failure();
    ref::Tensor zero = ref::Tensor::zeros(*dtype, {});
    DenseElementsAttr element = toElementsAttr(zero, RankedTensorType::get({}, type.getElementType()));
    return DenseElementsAttr::get(stripEncoding(type), element.getSplatValue<Attribute>());
  } else if (token.isKeyword("file")) {
    return parseFileData(type);
  } else if (token.is(Token::LSquare)) {
    tensor = parseLiteralList(type);
  } else if (token.isKeyword("true") || token.isKeyword("false") ||
             token.is(Token::Minus) || token.is(Token::Integer) ||
             token.is(Token::Float)) {
    // A splat: one value, stored once whatever the tensor's size.
    FailureOr<double> value = parseElementValue(*dtype);
    if (failed(value))
      return failure();
    ref::Tensor scalar = ref::Tensor::zeros(*dtype, {});
    scalar.setDouble(0, *value);
    DenseElementsAttr element =
        toElementsAttr(scalar, RankedTensorType::get({}, type.getElementType()));
    return DenseElementsAttr::get(stripEncoding(type),
                                  element.getSplatValue<Attribute>());
  } else {
    return error(token, "expected an initializer (a number, [list], random(...) "
                        "or file(...)), found " + describe(token));
  }
  if (failed(tensor))
    return failure();
  return toElementsAttr(*tensor, type);
}

FailureOr<ref::Tensor> KgParser::parseLiteralList(RankedTensorType type) {
  ref::DType dtype = *toReferenceDType(type.getElementType());
  ref::Tensor t = ref::Tensor::zeros(dtype, ref::Shape(type.getShape()));
  int64_t count = 0;
  if (failed(parseListLevel(t, 0, count)))
    return failure();
  return t;
}

/// One bracketed list at dimension `level` of `t`'s shape: a list per index
/// of that dimension, down to the last dimension's values; or, at the top,
/// every value flat in row-major order. Values go to `t` from `count` on.
LogicalResult KgParser::parseListLevel(ref::Tensor &t, size_t level, int64_t &count) {
  Token open = token;
  consume(); // [
  const ref::Shape &shape = t.shape;
  std::string typeText = ref::shapeToString(shape);
  auto dimension = [&] { return "dimension " + std::to_string(level) + " of " + typeText; };
  // A ',' or the closing ']' after an item.
  auto separator = [&]() -> LogicalResult {
    if (token.is(Token::Comma))
      consume();
    else if (!token.is(Token::RSquare))
      return error(token, "expected ',' or ']' in the list, found " + describe(token));
    return success();
  };
  if (token.is(Token::LSquare)) {
    if (level + 1 >= shape.size())
      return error(token, "the list nests deeper than the type " + typeText + " has dimensions");
    int64_t items = 0;
    while (token.is(Token::LSquare)) {
      if (items == shape[level])
        return error(token, "too many lists: " + dimension() + " holds " +
                                llvm::Twine(shape[level]));
      if (failed(parseListLevel(t, level + 1, count)) || failed(separator()))
        return failure();
      ++items;
    }
    if (!token.is(Token::RSquare))
      return error(token, "expected '[' or ']' in the list, found " + describe(token));
    if (items != shape[level])
      return error(open, "the list has " + llvm::Twine(items) +
                             (items == 1 ? " list but " : " lists but ") + dimension() + " holds " +
                             llvm::Twine(shape[level]));
    consume(); // ]
    return success();
  }
  // Values: at the top all of them (flat), else the last dimension's.
  bool flat = level == 0;
  if (!flat && level + 1 != shape.size())
    return error(token, "expected '[': " + dimension() + " holds lists, found " + describe(token));
  int64_t expected = flat ? t.numElements() : shape[level];
  std::string holder = flat ? "the type " + typeText : dimension();
  int64_t values = 0;
  while (!token.is(Token::RSquare)) {
    Token numberToken = token;
    FailureOr<double> value = parseElementValue(t.dtype);
    if (failed(value))
      return failure();
    if (values == expected)
      return error(numberToken, "too many values: " + holder + " holds " + llvm::Twine(expected));
    t.setDouble(count++, *value);
    ++values;
    if (failed(separator()))
      return failure();
  }
  if (values != expected)
    return error(open, "the list has " + llvm::Twine(values) +
                           (values == 1 ? " value but " : " values but ") + holder + " holds " +
                           llvm::Twine(expected));
  consume(); // ]
  return success();
}

LogicalResult KgParser::parseRandom(RankedTensorType type) {
  consume(); // random
  if (failed(expect(Token::LParen, "'(' after random")))
    return failure();
  uint64_t seed = 0;
  double scale = 1.0;
  Token scaleToken = token; // where a bad (or default) scale is reported
  llvm::StringSet<> seen;
  while (!token.is(Token::RParen)) {
    Token key = token;
    if (failed(expect(Token::Identifier, "seed= or scale=")))
      return failure();
    if (!seen.insert(key.text).second)
      return error(key, "'" + key.text + "' is given twice");
    if (failed(expect(Token::Equal, "'='")))
      return failure();
    bool isInteger;
    Token valueToken = token;
    FailureOr<double> value = parseSignedNumber(isInteger);
    if (failed(value))
      return failure();
    if (key.text == "seed") {
      // Read from the digits, not the double: every seed up to 2^64 - 1
      // is distinct.
      if (!valueToken.is(Token::Integer) ||
          llvm::StringRef(valueToken.text).getAsInteger(10, seed))
        return error(valueToken, "seed must be an integer from 0 to 2^64 - 1");
    } else if (key.text == "scale") {
      if (*value <= 0)
        return error(valueToken, "scale must be positive");
      scale = *value;
      scaleToken = valueToken;
    } else {
      return error(key, "unknown argument '" + key.text + "' of random (expected seed, scale)");
    }
    if (token.is(Token::Comma))
      consume();
    else if (!token.is(Token::RParen))
      return error(token, "expected ',' or ')', found " + describe(token));
  }
  // Integer weights take floor(value) for values in [-scale, scale): the
  // type must hold them all, the default scale of 1 included.
  ref::DType dtype = *toReferenceDType(type.getElementType());
  if (!ref::isFloat(dtype)) {
    if (dtype == ref::DType::I1 || ref::isUnsigned(dtype))
      return error(scaleToken, std::string("random values are signed; a ") +
                                   ref::dtypeName(dtype) +
                                   " weight cannot hold them (use a list or file(...))");
    int bits = 8 * static_cast<int>(ref::byteWidth(dtype));
    if (scale > std::ldexp(1.0, bits - 1))
      return error(scaleToken, "scale must be at most 2^" + llvm::Twine(bits - 1) + " for " +
                                   ref::dtypeName(dtype) + " weights");
  }
  consume(); // )
  pendingRandom.push_back({type, seed, scale});
  return success();
}

LogicalResult KgParser::generateRandomWeights() {
  for (const PendingRandom &p : pendingRandom) {
    RankedTensorType type = p.type;
    uint64_t seed = p.seed;
    double scale = p.scale;
    // SplitMix64: a fixed generator, so the same file gives the same weights.
    ref::DType dtype = *toReferenceDType(type.getElementType());
    ref::Tensor t = ref::Tensor::zeros(dtype, ref::Shape(type.getShape()));
    uint64_t state = seed;
    for (int64_t k = 0; k < t.numElements(); ++k) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      double unit = static_cast<double>(z >> 11) * 0x1.0p-53; // [0, 1)
      double value = (2.0 * unit - 1.0) * scale;               // [-scale, scale)
      if (t.isFloat())
        t.setDouble(k, value);
      else
        t.setInt(k, static_cast<int64_t>(std::floor(value)));
    }
    DenseElementsAttr values = toElementsAttr(t, type);
    if (auto weight = llvm::dyn_cast<WeightOp>(p.op))
      weight.setValueAttr(values);
    else
      llvm::cast<ConstantOp>(p.op).setValueAttr(values);
  }
  pendingRandom.clear();
  return success();
}

FailureOr<DenseElementsAttr> KgParser::parseFileData(RankedTensorType type) {
  Token fileToken = token;
  consume(); // file
  if (failed(expect(Token::LParen, "'(' after file")))
    return failure();
  Token pathToken = token;
  if (failed(expect(Token::String, "a quoted file path")))
    return failure();
  int64_t offset = 0;
  if (token.is(Token::Comma)) {
    consume();
    if (!token.isKeyword("offset"))
      return error(token, "expected offset=N, found " + describe(token));
    consume();
    if (failed(expect(Token::Equal, "'='")))
      return failure();
    if (!token.is(Token::Integer) ||
        llvm::StringRef(token.text).getAsInteger(10, offset) || offset < 0)
      return error(token, "offset must be a non-negative integer");
    consume();
  }
  if (failed(expect(Token::RParen, "')'")))
    return failure();

  // Relative paths are relative to the model file.
  llvm::SmallString<256> path(pathToken.text);
  if (llvm::sys::path::is_relative(path)) {
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(filename));
    llvm::sys::path::append(dir, path);
    path = dir;
  }
  // A device or a FIFO would be read to its end: /dev/zero never ends.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) && !llvm::sys::fs::is_regular_file(status) &&
      !llvm::sys::fs::is_directory(status))
    return error(pathToken, "weight file '" + path.str() + "' is not a regular file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error(pathToken, "cannot read weight file '" + path.str() +
                                "': " + buffer.getError().message());
  ref::DType dtype = *toReferenceDType(type.getElementType());
  int64_t bytes = type.getNumElements() * ref::byteWidth(dtype);
  int64_t size = (*buffer)->getBufferSize();
  if (offset > size || size - offset < bytes)
    return error(fileToken, "weight file '" + path.str() + "' has " +
                                llvm::Twine(size) + " bytes; " + llvm::Twine(bytes) +
                                " bytes are needed at offset " + llvm::Twine(offset));
  const char *data = (*buffer)->getBufferStart() + offset;
  RankedTensorType plain = stripEncoding(type);
  if (dtype == ref::DType::I1) { // one byte per element in the file
    SmallVector<bool> values;
    for (int64_t k = 0; k < bytes; ++k)
      values.push_back(data[k] != 0);
    return DenseElementsAttr::get(plain, ArrayRef<bool>(values));
  }
  // Little-endian raw data, the layout of MLIR's dense storage on this host.
  return DenseElementsAttr::getFromRawBuffer(plain, ArrayRef<char>(data, bytes));
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

namespace {
/// Deeper expressions are refused: the parser recurses per level, and a
/// hostile file must not overflow its stack.
constexpr int kMaxNesting = 256;

struct NestingGuard {
  explicit NestingGuard(int &depth) : depth(depth) { ++depth; }
  ~NestingGuard() { --depth; }
  int &depth;
};

int precedenceOf(const Token &t) {
  if (t.is(Token::Plus) || t.is(Token::Minus))
    return 1;
  if (t.is(Token::Star) || t.is(Token::Slash))
    return 2;
  return -1;
}
} // namespace

FailureOr<ExprValue> KgParser::parseExpr(int minPrecedence) {
  NestingGuard guard(nesting);
  if (nesting > kMaxNesting)
    return error(token, "expression nested more than " + llvm::Twine(kMaxNesting) +
                            " levels deep");
  FailureOr<ExprValue> lhs = parseUnary();
  if (failed(lhs))
    return failure();
  // Precedence climbing: + - bind looser than * /, all left-associative.
  while (precedenceOf(token) >= std::max(minPrecedence, 1)) {
    Token op = token;
    int precedence = precedenceOf(op);
    consume();
    FailureOr<ExprValue> rhs = parseExpr(precedence + 1);
    if (failed(rhs))
      return failure();
    lhs = buildBinary(op, *lhs, *rhs);
    if (failed(lhs))
      return failure();
  }
  return lhs;
}

FailureOr<ExprValue> KgParser::parseUnary() {
  NestingGuard guard(nesting);
  if (nesting > kMaxNesting)
    return error(token, "expression nested more than " + llvm::Twine(kMaxNesting) +
                            " levels deep");
  if (token.is(Token::Minus)) {
    Token op = token;
    consume();
    FailureOr<ExprValue> operand = parseUnary();
    if (failed(operand))
      return failure();
    if (operand->isNumber()) {
      operand->number = -operand->number;
      return operand;
    }
    KgCall call(builder, locOf(op), [this](llvm::SMLoc l) { return toLoc(l); },
                {operand->tensor}, {});
    Operation *neg = lookupKgOp("neg")->build(call);
    if (!neg)
      return failure();
    return ExprValue{neg->getResult(0), 0.0, false, llvm::SMLoc::getFromPointer(op.begin)};
  }
  return parsePrimary();
}

FailureOr<ExprValue> KgParser::parsePrimary() {
  Token t = token;
  llvm::SMLoc loc = llvm::SMLoc::getFromPointer(t.begin);
  if (t.is(Token::Integer) || t.is(Token::Float)) {
    consume();
    return ExprValue{Value(), std::strtod(t.text.c_str(), nullptr),
                     t.is(Token::Integer), loc};
  }
  if (t.is(Token::LParen)) {
    consume();
    FailureOr<ExprValue> inner = parseExpr();
    if (failed(inner) || failed(expect(Token::RParen, "')'")))
      return failure();
    return inner;
  }
  if (t.is(Token::Identifier)) {
    consume();
    if (token.is(Token::LParen))
      return parseCall(t);
    auto it = names.find(t.text);
    if (it == names.end()) {
      if (lookupKgOp(t.text))
        return error(t, "'" + t.text + "' is an op: call it as " + t.text + "(...)");
      return error(t, "'" + t.text + "' is not defined");
    }
    return ExprValue{it->second, 0.0, false, loc};
  }
  return error(t, "expected an expression, found " + describe(t));
}

FailureOr<KgAttrValue> KgParser::parseAttrValue() {
  KgAttrValue v;
  v.loc = llvm::SMLoc::getFromPointer(token.begin);
  if (token.is(Token::LSquare)) {
    consume();
    v.kind = KgAttrValue::IntList;
    while (!token.is(Token::RSquare)) {
      bool negative = token.is(Token::Minus);
      if (negative)
        consume();
      int64_t value;
      if (!token.is(Token::Integer) ||
          llvm::StringRef(token.text).getAsInteger(10, value))
        return error(token, "expected an integer in the list, found " + describe(token));
      v.list.push_back(negative ? -value : value);
      consume();
      if (token.is(Token::Comma))
        consume();
      else if (!token.is(Token::RSquare))
        return error(token, "expected ',' or ']' in the list, found " + describe(token));
    }
    consume();
    return v;
  }
  if (token.is(Token::Minus) || token.is(Token::Integer) || token.is(Token::Float)) {
    bool negative = token.is(Token::Minus);
    if (negative)
      consume();
    if (token.is(Token::Integer)) {
      v.kind = KgAttrValue::Int;
      int64_t value;
      if (llvm::StringRef(token.text).getAsInteger(10, value))
        return error(token, "integer " + token.text + " is out of range");
      v.intValue = negative ? -value : value;
    } else if (token.is(Token::Float)) {
      v.kind = KgAttrValue::Float;
      v.floatValue = std::strtod(token.text.c_str(), nullptr) * (negative ? -1 : 1);
    } else {
      return error(token, "expected a number after '-'");
    }
    consume();
    return v;
  }
  if (token.is(Token::String)) {
    v.kind = KgAttrValue::String;
    v.text = token.text;
    consume();
    return v;
  }
  if (token.is(Token::Identifier)) {
    if (token.isKeyword("true") || token.isKeyword("false")) {
      v.kind = KgAttrValue::Bool;
      v.boolValue = token.isKeyword("true");
      consume();
      return v;
    }
    v.kind = KgAttrValue::Word;
    v.text = token.text;
    consume();
    if (v.text == "cuda" && token.is(Token::Colon)) { // cuda:N
      consume();
      if (!token.is(Token::Integer))
        return error(token, "expected a device number after 'cuda:'");
      v.text += ":" + token.text;
      consume();
    } else if (v.text == "perm" && token.is(Token::LSquare)) { // perm[...]
      FailureOr<KgAttrValue> list = parseAttrValue();
      if (failed(list))
        return failure();
      v.text += "[";
      for (size_t i = 0; i < list->list.size(); ++i)
        v.text += (i ? "," : "") + std::to_string(list->list[i]);
      v.text += "]";
    }
    return v;
  }
  return error(token, "expected an attribute value, found " + describe(token));
}

FailureOr<ExprValue> KgParser::parseCall(const Token &name) {
  consume(); // (
  const KgOpSpec *spec = lookupKgOp(name.text);
  if (!spec)
    return error(name, "unknown op '" + name.text + "'");
  SmallVector<ExprValue> args;
  llvm::StringMap<KgAttrValue> attrs;
  while (!token.is(Token::RParen)) {
    // NAME = value is an attribute; anything else is an operand.
    if (token.is(Token::Identifier)) {
      KgLexer probe = lexer;
      Token after = probe.next();
      if (after.is(Token::Equal)) {
        Token key = token;
        consume();
        consume(); // =
        bool known = llvm::is_contained(
            llvm::map_range(spec->attrNames, [](const char *s) { return llvm::StringRef(s); }),
            llvm::StringRef(key.text));
        if (!known) {
          std::string allowed;
          for (const char *a : spec->attrNames)
            allowed += std::string(allowed.empty() ? "" : ", ") + a;
          return error(key, "unknown attribute '" + key.text + "' for " + name.text +
                                (allowed.empty() ? " (it takes none)"
                                                 : " (expected one of: " + allowed + ")"));
        }
        if (attrs.count(key.text))
          return error(key, "attribute '" + key.text + "' is given twice");
        FailureOr<KgAttrValue> value = parseAttrValue();
        if (failed(value))
          return failure();
        attrs[key.text] = *value;
        goto next;
      }
    }
    if (!attrs.empty())
      return error(token, "operands must come before attributes");
    {
      FailureOr<ExprValue> arg = parseExpr();
      if (failed(arg))
        return failure();
      args.push_back(*arg);
    }
  next:
    if (token.is(Token::Comma))
      consume();
    else if (!token.is(Token::RParen))
      return error(token, "expected ',' or ')' in the call to " + name.text +
                              ", found " + describe(token));
  }
  consume(); // )

  if (args.size() < spec->minOperands || args.size() > spec->maxOperands) {
    std::string expected =
        spec->maxOperands == ~0u ? "at least " + std::to_string(spec->minOperands)
        : spec->minOperands == spec->maxOperands
            ? std::to_string(spec->minOperands)
            : std::to_string(spec->minOperands) + " to " + std::to_string(spec->maxOperands);
    return error(name, name.text + " takes " + expected + " operand" +
                           (expected == "1" ? "" : "s") + ", got " +
                           llvm::Twine(args.size()));
  }
  // Bare numbers take the dtype and device of the first tensor operand,
  // preferring one that is not boolean: in where(c, x, 0) the 0 is x's.
  Value like;
  for (const ExprValue &a : args) {
    if (a.isNumber())
      continue;
    if (!like)
      like = a.tensor;
    if (!llvm::cast<RankedTensorType>(a.tensor.getType()).getElementType().isInteger(1)) {
      like = a.tensor;
      break;
    }
  }
  SmallVector<Value> operands;
  for (const ExprValue &a : args) {
    FailureOr<Value> v = materialize(a, like);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  KgCall call(builder, locOf(name), [this](llvm::SMLoc l) { return toLoc(l); },
              operands, std::move(attrs));
  Operation *op = spec->build(call);
  if (!op)
    return failure();
  return ExprValue{op->getResult(0), 0.0, false, llvm::SMLoc::getFromPointer(name.begin)};
}

FailureOr<Value> KgParser::materialize(const ExprValue &value, Value like) {
  if (!value.isNumber())
    return value.tensor;
  if (!like)
    return error(value.loc, "a bare number needs a tensor operand to take its "
                            "dtype from; declare it with 'const NAME: TYPE = VALUE'");
  auto likeType = llvm::cast<RankedTensorType>(like.getType());
  std::optional<ref::DType> dtype = toReferenceDType(likeType.getElementType());
  if (!value.isInteger && !ref::isFloat(*dtype))
    return error(value.loc, "a non-integer number cannot be used with a " +
                                std::string(ref::dtypeName(*dtype)) + " tensor");
  if (failed(checkFits(value.number, *dtype, value.loc)))
    return failure();
  // A rank-0, row-major constant on the tensor's device.
  TensorEncodingAttr likeEncoding = getEncoding(likeType);
  auto type = RankedTensorType::get(
      {}, likeType.getElementType(),
      TensorEncodingAttr::get(context, {}, likeEncoding.getDeviceKind(),
                              likeEncoding.getDeviceOrdinal()));
  ref::Tensor scalar = ref::Tensor::zeros(*dtype, {});
  scalar.setDouble(0, value.number);
  return builder.create<ConstantOp>(toLoc(value.loc), type, toElementsAttr(scalar, type))
      .getResult();
}

FailureOr<ExprValue> KgParser::buildBinary(const Token &op, ExprValue lhs, ExprValue rhs) {
  if (lhs.isNumber() && rhs.isNumber()) {
    double a = lhs.number, b = rhs.number, r = 0;
    switch (op.kind) {
    case Token::Plus: r = a + b; break;
    case Token::Minus: r = a - b; break;
    case Token::Star: r = a * b; break;
    default: r = a / b; break;
    }
    bool integer = lhs.isInteger && rhs.isInteger && !op.is(Token::Slash);
    return ExprValue{Value(), r, integer, lhs.loc};
  }
  Value like = lhs.isNumber() ? rhs.tensor : lhs.tensor;
  FailureOr<Value> a = materialize(lhs, like), b = materialize(rhs, like);
  if (failed(a) || failed(b))
    return failure();
  const char *opName = op.is(Token::Plus)    ? "add"
                       : op.is(Token::Minus) ? "sub"
                       : op.is(Token::Star)  ? "mul"
                                             : "div";
  KgCall call(builder, locOf(op), [this](llvm::SMLoc l) { return toLoc(l); },
              {*a, *b}, {});
  Operation *result = lookupKgOp(opName)->build(call);
  if (!result)
    return failure();
  return ExprValue{result->getResult(0), 0.0, false, llvm::SMLoc::getFromPointer(op.begin)};
}

} // namespace

OwningOpRef<ModuleOp> parseKgModel(llvm::SourceMgr &sourceMgr, MLIRContext *context) {
  context->loadDialect<KilnDialect, func::FuncDialect>();
  KgParser parser(sourceMgr, context);
  return parser.parse();
}

OwningOpRef<ModuleOp> parseKgFile(llvm::StringRef path, llvm::SourceMgr &sourceMgr,
                                  MLIRContext *context) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer) {
    mlir::emitError(UnknownLoc::get(context))
        << "cannot read model file '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return parseKgModel(sourceMgr, context);
}

} // namespace frontend
} // namespace kiln
