//===- OnnxTensor.cpp - ONNX tensors and data types -----------------------===//

#include "OnnxContext.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstring>

using namespace mlir;

namespace kiln {
namespace frontend {
namespace onnx_import {

Type elementTypeOf(MLIRContext *context, int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT: return Float32Type::get(context);
  case onnx::TensorProto::FLOAT16: return Float16Type::get(context);
  case onnx::TensorProto::BFLOAT16: return BFloat16Type::get(context);
  case onnx::TensorProto::DOUBLE: return Float64Type::get(context);
  case onnx::TensorProto::INT64: return IntegerType::get(context, 64);
  case onnx::TensorProto::INT32: return IntegerType::get(context, 32);
  case onnx::TensorProto::INT8: return IntegerType::get(context, 8);
  case onnx::TensorProto::BOOL: return IntegerType::get(context, 1);
  case onnx::TensorProto::INT16: return IntegerType::get(context, 16);
  case onnx::TensorProto::UINT8: return IntegerType::get(context, 8, IntegerType::Unsigned);
  case onnx::TensorProto::UINT16: return IntegerType::get(context, 16, IntegerType::Unsigned);
  case onnx::TensorProto::UINT32: return IntegerType::get(context, 32, IntegerType::Unsigned);
  case onnx::TensorProto::UINT64: return IntegerType::get(context, 64, IntegerType::Unsigned);
  default: return Type();
  }
}

std::string dataTypeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(dataType));
  return "data type " + std::to_string(dataType);
}

FailureOr<DenseElementsAttr> tensorToAttr(MLIRContext *context, const onnx::TensorProto &t,
                                          std::string &error) {
  Type element = elementTypeOf(context, t.data_type());
  if (!element) {
    error = "tensor '" + t.name() + "' has unsupported type " + dataTypeName(t.data_type());
    return failure();
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "tensor '" + t.name() + "' keeps its data in an external file";
    return failure();
  }
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  // The element limit of every reader (so a zero dimension cannot hide a
  // product of the others that later shape arithmetic overflows), and at
  // most 2^34 values held in memory.
  if (!::kiln::ref::withinElementLimit(shape)) {
    error = "tensor '" + t.name() + "' has an invalid shape";
    return failure();
  }
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d; // bounded by the limit above
  if (count > (int64_t(1) << 34)) {
    error = "tensor '" + t.name() + "' has an invalid shape";
    return failure();
  }
  auto type = RankedTensorType::get(shape, element);
  int64_t width = element.isInteger(1) ? 1 : (element.getIntOrFloatBitWidth() + 7) / 8;
  auto sizeError = [&](int64_t got) {
    error = "tensor '" + t.name() + "' holds " + std::to_string(got) + " values for shape of " +
            std::to_string(count) + " elements";
    return failure();
  };

  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (static_cast<int64_t>(raw.size()) != count * width)
      return sizeError(raw.size() / std::max<int64_t>(width, 1));
    if (element.isInteger(1)) {
      SmallVector<bool> values;
      for (char c : raw)
        values.push_back(c != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(values));
    }
    if (count == 0)
      return DenseElementsAttr::get(type, ArrayRef<Attribute>{});
    return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(raw.data(), raw.size()));
  }

  // Typed fields, by data type. The buffer is sized only once the field
  // is known to hold `count` values: the dims alone may claim terabytes.
  std::vector<char> bytes;
  auto fill = [&](const auto &field, auto convert) -> LogicalResult {
    if (static_cast<int64_t>(field.size()) != count)
      return sizeError(field.size());
    bytes.resize(count * width);
    for (int64_t k = 0; k < count; ++k) {
      auto v = convert(field.Get(k));
      std::memcpy(bytes.data() + k * width, &v, width);
    }
    return success();
  };
  LogicalResult ok = failure();
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    ok = fill(t.float_data(), [](float v) { return v; });
    break;
  case onnx::TensorProto::DOUBLE:
    ok = fill(t.double_data(), [](double v) { return v; });
    break;
  case onnx::TensorProto::INT64:
    ok = fill(t.int64_data(), [](int64_t v) { return v; });
    break;
  case onnx::TensorProto::INT32:
    ok = fill(t.int32_data(), [](int32_t v) { return v; });
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    ok = fill(t.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); });
    break;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    ok = fill(t.int32_data(), [](int32_t v) { return static_cast<int8_t>(v); });
    break;
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    ok = fill(t.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); });
    break;
  case onnx::TensorProto::UINT32:
    ok = fill(t.uint64_data(), [](uint64_t v) { return static_cast<uint32_t>(v); });
    break;
  case onnx::TensorProto::UINT64:
    ok = fill(t.uint64_data(), [](uint64_t v) { return v; });
    break;
  }
  if (failed(ok))
    return failure();
  if (element.isInteger(1)) {
    SmallVector<bool> values;
    for (char c : bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  if (count == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>{});
  return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(bytes.data(), bytes.size()));
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
