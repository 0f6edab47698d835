//===- Program.cpp - facts about steps every device shares ----------------===//

#include "Program.h"

#include "kiln/Runtime/LibraryAlignment.h"

#include <algorithm>

namespace kiln {
namespace rt {

std::string whyNotCopyable(const Program &to, const Program &from, uint32_t value,
                           uint64_t &bytes) {
  if (value >= to.values.size() || to.values.size() != from.values.size() ||
      to.values[value].kind != ValueKind::Buffer)
    return "value #" + std::to_string(value) + " cannot be copied between these devices";
  const TensorSpec &here = to.values[value].type, &there = from.values[value].type;
  bytes = static_cast<uint64_t>(here.byteSize());
  if (static_cast<uint64_t>(there.byteSize()) != bytes)
    return "value #" + std::to_string(value) + " (" + here.typeString() +
           ") was computed at another size (" + there.typeString() +
           ") before a length read at run time";
  return "";
}

std::string whyNotI64Element(const Program &program, uint32_t value, int64_t element) {
  const ValueDesc *v = value < program.values.size() ? &program.values[value] : nullptr;
  if (!v || v->kind != ValueKind::Buffer || v->type.dtype != ref::DType::I64 || element < 0 ||
      element >= ref::numElements(v->type.shape))
    return "value #" + std::to_string(value) + " has no i64 element " + std::to_string(element);
  return "";
}

bool isTransferStep(const StepDesc &step) {
  return step.ops.size() == 1 && step.ops[0].name == "kiln.transfer" &&
         step.inputs.size() == 1 && step.outputs.size() == 1;
}

const char *stepCategory(const StepDesc &step) {
  if (isTransferStep(step))
    return "copy";
  if (step.gemm)
    return "cuBLASLt";
  if (step.conv)
    return "cuDNN";
  if (!step.kernel.empty())
    return "kernel";
  return "host";
}

std::vector<std::string> opLocations(const StepDesc &step) {
  std::vector<std::string> where;
  for (const OpDesc &op : step.ops)
    if (!op.location.empty() && std::find(where.begin(), where.end(), op.location) == where.end())
      where.push_back(op.location);
  return where;
}

std::string stepLabel(size_t index, const StepDesc &step) {
  std::string label = "step #" + std::to_string(index) + " '" + step.name + "' (";
  if (!step.kind.empty())
    label += "fused " + step.kind + ", ";
  if (step.gemm)
    label += "cuBLASLt matmul";
  else if (step.conv)
    label += "cuDNN convolution";
  else if (!step.kernel.empty())
    label += "kernel " + step.kernel;
  else if (isTransferStep(step))
    label += "transfer";
  else
    label += "host step";
  // The distinct locations of the ops it fused, the first few of them.
  std::vector<std::string> where = opLocations(step);
  constexpr size_t kShown = 3;
  for (size_t k = 0; k < where.size() && k < kShown; ++k)
    label += (k ? ", " : where.size() > 1 ? ", ops at " : ", at ") + where[k];
  if (where.size() > kShown)
    label += " and " + std::to_string(where.size() - kShown) + " more";
  return label + ")";
}

uint32_t pointerAlignment(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = kLibraryAlignment;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

} // namespace rt
} // namespace kiln
