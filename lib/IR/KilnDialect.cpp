//===- KilnDialect.cpp - kiln dialect and its attributes ------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/IR/DialectImplementation.h"
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
  return TensorEncodingAttr::get(getContext(), getDimOrder(), kind, ordinal);
}

LogicalResult
TensorEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           ArrayRef<int64_t> dimOrder, DeviceKind deviceKind,
                           int64_t deviceOrdinal) {
  if (deviceOrdinal < 0 ||
      (deviceKind == DeviceKind::CPU && deviceOrdinal != 0))
    return emitError() << "invalid device ordinal " << deviceOrdinal;
  if (!isValidDimOrder(dimOrder, dimOrder.size()))
    return emitError() << "layout must be a permutation of its dimensions";
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
  for (int64_t d : shape)
    if (ShapedType::isDynamic(d))
      return emitError() << "kiln tensors have static shapes";
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
  if (parser.parseGreater())
    return {};
  return TensorEncodingAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); }, context, order,
      kind, ordinal);
}

void TensorEncodingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getLayoutString() << ", " << getDeviceString() << ">";
}
