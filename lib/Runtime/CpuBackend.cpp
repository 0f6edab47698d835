//===- CpuBackend.cpp - run a step on the CPU -----------------------------===//
//
// The reference path decodes the step's inputs from memory (any dtype and
// layout), evaluates its ops with the shared reference kernels and encodes
// the results. Single-precision row-major matmuls take the OpenBLAS path.
//
//===----------------------------------------------------------------------===//

#include "Program.h"

#include "kiln/Reference/Ops.h"

#include <cblas.h>

namespace kiln {
namespace rt {

namespace {

bool isRowMajorF32(const TensorSpec &t) {
  return t.dtype == ref::DType::F32 && t.dimOrder.empty();
}

/// C = A x B with OpenBLAS, for f32 row-major operands whose batch
/// dimensions are equal or where B has none (a weight).
bool tryMatmulF32(const StepDesc &step, const Program &program,
                  const std::vector<const uint8_t *> &inputs,
                  const std::vector<uint8_t *> &outputs) {
  if (step.ops.size() != 1 || step.ops[0].name != "kiln.matmul" || step.yields.size() != 1 ||
      step.yields[0] != step.inputs.size())
    return false;
  const OpDesc &op = step.ops[0];
  const TensorSpec &a = program.values[step.inputs[op.operands[0]]].type;
  const TensorSpec &b = program.values[step.inputs[op.operands[1]]].type;
  const TensorSpec &c = program.values[step.outputs[0]].type;
  if (!isRowMajorF32(a) || !isRowMajorF32(b) || !isRowMajorF32(c))
    return false;
  auto flag = [&](const char *name) {
    auto it = op.attrs.find(name);
    return it != op.attrs.end() && it->second.i != 0;
  };
  bool ta = flag("transpose_a"), tb = flag("transpose_b");
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = a.shape[ra - (ta ? 1 : 2)], k = a.shape[ra - (ta ? 2 : 1)];
  int64_t n = b.shape[rb - (tb ? 2 : 1)];
  int64_t batchA = ref::numElements(ref::Shape(a.shape.begin(), a.shape.end() - 2));
  int64_t batchB = ref::numElements(ref::Shape(b.shape.begin(), b.shape.end() - 2));
  int64_t batchC = ref::numElements(ref::Shape(c.shape.begin(), c.shape.end() - 2));
  bool sameBatch = ref::Shape(a.shape.begin(), a.shape.end() - 2) ==
                   ref::Shape(b.shape.begin(), b.shape.end() - 2);
  if (!(sameBatch || (rb == 2 && batchA == batchC)) || batchC == 0 || m == 0 || n == 0)
    return false;
  const float *pa = reinterpret_cast<const float *>(inputs[op.operands[0]]);
  const float *pb = reinterpret_cast<const float *>(inputs[op.operands[1]]);
  float *pc = reinterpret_cast<float *>(outputs[0]);
  for (int64_t i = 0; i < batchC; ++i)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                m, n, k, 1.0f, pa + (batchA > 1 ? i * m * k : 0), ta ? m : k,
                pb + (batchB > 1 ? i * k * n : 0), tb ? k : n, 0.0f, pc + i * m * n, n);
  return true;
}

} // namespace

Status runStepOnCpu(const Program &program, const StepDesc &step,
                    const std::vector<const uint8_t *> &inputs,
                    const std::vector<uint8_t *> &outputs) {
  if (tryMatmulF32(step, program, inputs, outputs))
    return Status::ok();
  std::vector<ref::Tensor> local;
  local.reserve(step.inputs.size() + step.ops.size());
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const TensorSpec &t = program.values[step.inputs[k]].type;
    local.push_back(ref::decodeTensor(t.dtype, t.shape, t.dimOrder, inputs[k]));
  }
  for (const OpDesc &op : step.ops) {
    std::vector<const ref::Tensor *> operands;
    for (uint32_t x : op.operands)
      operands.push_back(&local[x]);
    std::optional<ref::Tensor> result = ref::evaluate(op.name, op.attrs, operands);
    if (!result)
      return Status::error("the CPU backend cannot run " + op.name);
    local.push_back(std::move(*result));
  }
  for (size_t k = 0; k < step.outputs.size(); ++k)
    ref::encodeTensor(local[step.yields[k]], program.values[step.outputs[k]].type.dimOrder,
                      outputs[k]);
  return Status::ok();
}

} // namespace rt
} // namespace kiln
