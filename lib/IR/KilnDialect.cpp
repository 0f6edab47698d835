//===- KilnDialect.cpp - kiln dialect and its attributes ------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/SizeCode.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kiln;

#include "kiln/IR/KilnDialect.cpp.inc"

#include "kiln/IR/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/IR/KilnAttrs.cpp.inc"

void KilnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/IR/KilnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/IR/KilnOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder,
                                            Attribute value, Type type,
                                            Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || !isKilnTensorType(type))
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

LogicalResult KilnDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != kSizeSymbolsAttrName)
    return success();
  // Symbols read at run time read the function's arguments.
  Block *body = op->getNumRegions() && !op->getRegion(0).empty()
                    ? &op->getRegion(0).front()
                    : nullptr;
  size_t numInputs = body ? body->getNumArguments() : 0;
  if (failed(verifySizeSymbolsAttr(attr.getValue(), numInputs,
                                   [&] { return op->emitOpError(); })))
    return failure();
  for (const SizeSymbol &symbol : getSizeSymbols(op)) {
    LogicalResult reads = success();
    ::kiln::ref::forEachSizeInstruction(
        symbol.code.data(), symbol.code.size(),
        [&](::kiln::ref::SizeOp code, const int64_t *operands) {
          bool scaled = code == ::kiln::ref::SizeOp::ScaledElement;
          if ((code != ::kiln::ref::SizeOp::InputElement && !scaled) || failed(reads))
            return;
          int64_t input = operands[0], element = operands[1];
          auto type = llvm::dyn_cast<RankedTensorType>(body->getArgument(input).getType());
          Type e = type ? type.getElementType() : Type();
          bool readable = scaled ? e && (e.isF32() || e.isF64())
                                 : e && (e.isSignlessInteger(64) || e.isSignlessInteger(32) ||
                                         e.isSignlessInteger(1));
          if (!readable || !type.hasStaticShape() || element >= type.getNumElements())
            reads = op->emitOpError() << "size symbol '" << symbol.name << "' reads element "
                                      << element << " of argument #" << input
                                      << ", which is not a static "
                                      << (scaled ? "f32 or f64" : "i64, i32 or i1")
                                      << " tensor that long";
        });
    if (failed(reads))
      return failure();
  }
  // Every symbolic size inside names a listed symbol.
  unsigned count = llvm::cast<ArrayAttr>(attr.getValue()).size();
  llvm::BitVector used(count);
  WalkResult walk = op->walk([&](Operation *inner) {
    SmallVector<Type> types(inner->getOperandTypes());
    llvm::append_range(types, inner->getResultTypes());
    for (Region &region : inner->getRegions())
      for (Block &block : region)
        llvm::append_range(types, block.getArgumentTypes());
    for (Type type : types) {
      TensorEncodingAttr enc = getEncoding(type);
      if (!enc)
        continue;
      for (AffineExpr size : enc.getSizes()) {
        bool unknown = false;
        size.walk([&](AffineExpr e) {
          if (auto s = llvm::dyn_cast<AffineSymbolExpr>(e)) {
            unknown |= s.getPosition() >= count;
            if (!unknown)
              used.set(s.getPosition());
          }
        });
        if (unknown) {
          inner->emitOpError() << "symbolic size " << sizeString(size)
                               << " names a symbol the model does not list in '"
                               << kSizeSymbolsAttrName << "' (" << count
                               << " symbols)";
          return WalkResult::interrupt();
        }
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // Each `bound` symbol is a length one kiln.take_prefix binds, within
  // the entries it keeps a prefix of.
  SmallVector<SizeSymbol> symbols = getSizeSymbols(op);
  SmallVector<Operation *> binders(symbols.size());
  bool malformedBinder = false;
  walk = op->walk([&](TakePrefixOp prefix) {
    // (A malformed op is its own error, reported when it is verified,
    // which comes after this function attribute's.)
    AffineMapAttr lengthAttr = prefix.getLengthAttr();
    auto symbol = lengthAttr && lengthAttr.getValue().getNumResults() == 1
                      ? llvm::dyn_cast<AffineSymbolExpr>(lengthAttr.getValue().getResult(0))
                      : nullptr;
    auto input = llvm::dyn_cast<RankedTensorType>(prefix.getInput().getType());
    int64_t axis = prefix.getAxisAttr() ? prefix.getAxisAttr().getInt() : -1;
    if (!symbol || !input || axis < 0 || axis >= input.getRank() || input.isDynamicDim(axis)) {
      malformedBinder = true;
      return WalkResult::advance();
    }
    unsigned k = symbol.getPosition();
    if (k >= symbols.size() || !symbols[k].bound) {
      prefix.emitOpError("binds size symbol s")
          << k << ", which '" << kSizeSymbolsAttrName << "' must list as `bound`";
      return WalkResult::interrupt();
    }
    if (binders[k]) {
      prefix.emitOpError("binds '") << symbols[k].name << "', which another op binds too";
      return WalkResult::interrupt();
    }
    binders[k] = prefix;
    if (symbols[k].max > input.getDimSize(axis)) {
      prefix.emitOpError("binds '") << symbols[k].name << "' up to " << symbols[k].max
                                    << ", past the " << input.getDimSize(axis)
                                    << " entries it keeps a prefix of";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // A `bound` symbol something is sized by needs its binder (unless a
  // malformed one is, which its own verification reports).
  for (auto [k, symbol] : llvm::enumerate(symbols))
    if (symbol.bound && !binders[k] && used.test(k) && !malformedBinder)
      return op->emitOpError("sizes values by '")
             << symbol.name << "' (s" << k << "), which no kiln.take_prefix binds";
  return success();
}

//===----------------------------------------------------------------------===//
// TensorEncodingAttr
//===----------------------------------------------------------------------===//

std::string TensorEncodingAttr::getDeviceString() const {
  if (getDeviceKind() == DeviceKind::CPU)
    return "cpu";
  return "cuda:" + std::to_string(getDeviceOrdinal());
}

std::string TensorEncodingAttr::getLayoutString() const {
  ArrayRef<int64_t> order = getDimOrder();
  if (order.empty())
    return "row_major";
  if (order == ArrayRef<int64_t>{0, 2, 3, 1})
    return "nhwc";
  std::string text = "perm[";
  for (size_t i = 0; i < order.size(); ++i)
    text += (i ? ", " : "") + std::to_string(order[i]);
  return text + "]";
}

TensorEncodingAttr TensorEncodingAttr::withDevice(DeviceKind kind,
                                                  int64_t ordinal) const {
  return TensorEncodingAttr::get(getContext(), getDimOrder(), kind, ordinal,
                                 getSizes());
}

TensorEncodingAttr
TensorEncodingAttr::withSizes(ArrayRef<AffineExpr> sizes) const {
  return TensorEncodingAttr::get(getContext(), getDimOrder(), getDeviceKind(),
                                 getDeviceOrdinal(), sizes);
}

LogicalResult
TensorEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           ArrayRef<int64_t> dimOrder, DeviceKind deviceKind,
                           int64_t deviceOrdinal, ArrayRef<AffineExpr> sizes) {
  if (deviceOrdinal < 0 ||
      (deviceKind == DeviceKind::CPU && deviceOrdinal != 0))
    return emitError() << "invalid device ordinal " << deviceOrdinal;
  if (!isValidDimOrder(dimOrder, dimOrder.size()))
    return emitError() << "layout must be a permutation of its dimensions";
  for (AffineExpr size : sizes)
    if (failed(verifySymbolicSize(size, emitError)))
      return failure();
  return success();
}

LogicalResult TensorEncodingAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (!getDimOrder().empty() &&
      getDimOrder().size() != static_cast<size_t>(shape.size()))
    return emitError() << "layout " << getLayoutString() << " has "
                       << getDimOrder().size() << " dimensions but the tensor has rank "
                       << shape.size();
  int64_t dynamic = llvm::count_if(shape, ShapedType::isDynamic);
  if (dynamic != static_cast<int64_t>(getSizes().size()))
    return emitError() << "the tensor has " << dynamic
                       << " dynamic dimensions but its encoding gives "
                       << getSizes().size() << " symbolic sizes";
  if (!withinElementLimit(shape))
    return emitError() << "a kiln tensor holds at most 2^40 elements";
  return success();
}

Attribute TensorEncodingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *context = parser.getContext();
  SmallVector<int64_t> order;
  StringRef layout;
  if (parser.parseLess() || parser.parseKeyword(&layout))
    return {};
  if (layout == "nhwc") {
    order = {0, 2, 3, 1};
  } else if (layout == "perm") {
    if (parser.parseLSquare())
      return {};
    auto parseOne = [&]() -> ParseResult {
      return parser.parseInteger(order.emplace_back());
    };
    if (parser.parseCommaSeparatedList(parseOne) || parser.parseRSquare())
      return {};
    bool identity = true;
    for (size_t i = 0; i < order.size(); ++i)
      identity &= order[i] == static_cast<int64_t>(i);
    if (identity && isValidDimOrder(order, order.size()))
      order.clear();
  } else if (layout != "row_major" && layout != "nchw") {
    parser.emitError(parser.getCurrentLocation(),
                     "unknown layout '")
        << layout << "' (expected row_major, nchw, nhwc or perm[...])";
    return {};
  }

  StringRef device;
  if (parser.parseComma() || parser.parseKeyword(&device))
    return {};
  // Symbolic sizes come after the device: `, [s0, s1 * 12]`.
  auto parseSizes = [&](SmallVectorImpl<AffineExpr> &sizes) -> ParseResult {
    SmallVector<std::pair<std::string, AffineExpr>> names;
    for (unsigned k = 0; k < kMaxSizeSymbols; ++k)
      names.emplace_back("s" + std::to_string(k),
                         getAffineSymbolExpr(k, context));
    SmallVector<std::pair<StringRef, AffineExpr>> symbols(names.begin(),
                                                          names.end());
    return parser.parseCommaSeparatedList(
        AsmParser::Delimiter::Square, [&]() -> ParseResult {
          return parser.parseAffineExpr(symbols, sizes.emplace_back());
        });
  };
  DeviceKind kind;
  int64_t ordinal = 0;
  if (device == "cpu") {
    kind = DeviceKind::CPU;
  } else if (device == "cuda") {
    kind = DeviceKind::CUDA;
    if (parser.parseColon() || parser.parseInteger(ordinal))
      return {};
  } else {
    parser.emitError(parser.getCurrentLocation(), "unknown device '")
        << device << "' (expected cpu or cuda:N)";
    return {};
  }
  SmallVector<AffineExpr> sizes;
  if (succeeded(parser.parseOptionalComma()) && parseSizes(sizes))
    return {};
  if (parser.parseGreater())
    return {};
  return TensorEncodingAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); }, context, order,
      kind, ordinal, sizes);
}

void TensorEncodingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getLayoutString() << ", " << getDeviceString();
  if (!getSizes().empty()) {
    printer << ", [";
    llvm::interleaveComma(getSizes(), printer,
                          [&](AffineExpr size) { printer << size; });
    printer << "]";
  }
  printer << ">";
}
