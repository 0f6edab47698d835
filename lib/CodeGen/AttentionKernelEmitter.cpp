//===- AttentionKernelEmitter.cpp - softmax(q k^T) v as one kernel --------===//
//
// One block per query row (grid-stride over batch x queries): the row's
// scores against every key are computed into shared memory with the scale
// and the mask applied as they are produced, the softmax is taken over them
// (row maximum first, for stability), and each thread then accumulates
// output columns as the probability-weighted sum of v's rows. The score
// matrix never reaches global memory. Rows are limited to kMaxKeys keys
// (shared memory); a FlashAttention-style kernel that streams keys through
// tiles, and the Tensor Core version, are later work.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kMaxKeys = 4096; // 16 KiB of f32 scores per block
constexpr unsigned kThreads = 128;
constexpr int64_t kMaxBlocks = 65535;


class AttentionEmitter : public KernelEmitter {
public:
  AttentionEmitter(exec::StepOp step, GeneratedKernel &kernel)
      : KernelEmitter(step, kernel) {}

  void emit() {
    Block &body = step.getBody().front();
    SmallVector<MatMulOp> matmuls;
    SoftmaxOp softmax;
    for (Operation &op : body.without_terminator()) {
      if (auto mm = llvm::dyn_cast<MatMulOp>(op))
        matmuls.push_back(mm);
      else if (auto s = llvm::dyn_cast<SoftmaxOp>(op))
        softmax = s;
      else if (!elements.supported(&op))
        return;
    }
    if (matmuls.size() != 2 || !softmax)
      return fail("not the two matmuls and softmax of attention");
    MatMulOp scoresMm = matmuls[0], contextMm = matmuls[1];
    auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
    if (yield.getValues().size() != 1 || yield.getValues().front() != contextMm.getResult())
      return fail("the region's output is not the context matmul");
    auto q = llvm::dyn_cast<BlockArgument>(scoresMm.getLhs());
    auto k = llvm::dyn_cast<BlockArgument>(scoresMm.getRhs());
    auto v = llvm::dyn_cast<BlockArgument>(contextMm.getRhs());
    if (!q || !k || !v || contextMm.getLhs() != softmax.getResult() || contextMm.getTransposeA())
      return fail("q, k and v are not region inputs");
    for (BlockArgument arg : {q, k, v})
      if (ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]))
        return fail("q, k or v is a splat constant");
    auto qType = llvm::cast<RankedTensorType>(q.getType());
    auto kType = llvm::cast<RankedTensorType>(k.getType());
    auto vType = llvm::cast<RankedTensorType>(v.getType());
    auto sType = llvm::cast<RankedTensorType>(scoresMm.getType());
    auto oType = llvm::cast<RankedTensorType>(contextMm.getType());
    for (auto t : {qType, kType, vType})
      if (!t.getElementType().isF32() && !t.getElementType().isF16() &&
          !t.getElementType().isBF16())
        return fail("attention kernels are generated for f32, f16 and bf16 (computed in f32)");
    if (sType.getShape().drop_back(2) != oType.getShape().drop_back(2))
      return fail("the scores and the context differ in batch shape");
    int64_t rank = sType.getRank();
    int64_t queries = sType.getDimSize(rank - 2), keys = sType.getDimSize(rank - 1);
    int64_t depth = qType.getDimSize(scoresMm.getTransposeA() ? qType.getRank() - 2 : qType.getRank() - 1);
    int64_t dv = oType.getDimSize(rank - 1);
    if (keys > kMaxKeys)
      return fail("more than " + std::to_string(kMaxKeys) + " keys per row");
    std::vector<int64_t> batchDims(sType.getShape().begin(), sType.getShape().end() - 2);
    int64_t batches = 1;
    for (int64_t d : batchDims)
      batches *= d;
    int64_t rows = batches * queries;
    if (rows == 0 || keys == 0)
      return fail("the attention is empty");

    std::vector<std::string> params = kernelParameters(step, elements, kernel);
    if (!kernel.reason.empty())
      return;

    std::vector<std::string> batchLines;
    std::vector<std::string> batchIndex =
        ElementEmitter::decompose(batchDims, "batch", "b", batchLines);
    bool ta = scoresMm.getTransposeA(), tb = scoresMm.getTransposeB(),
         tv = contextMm.getTransposeB();
    // Indices within a batch's q, k and v are 32-bit where all of them fit:
    // 64-bit index arithmetic takes twice the registers, enough to make
    // ptxas spill (nvcc's PTX for sm_80).
    bool narrow = fitsInt32({queries * depth, keys * depth, keys * dv, queries, keys + kThreads,
                             dv + kThreads});
    std::string I = narrow ? "int" : "long long", L = narrow ? "" : "LL";
    auto num = [&](int64_t v) { return std::to_string(v) + L; };
    std::string qElem = ElementEmitter::load(qType, ta ? "q[d * " + num(queries) + " + qi]"
                                                       : "q[qi * " + num(depth) + " + d]");
    std::string kElem = ElementEmitter::load(kType, tb ? "k[j * " + num(depth) + " + d]"
                                                       : "k[d * " + num(keys) + " + j]");
    std::string vElem = ElementEmitter::load(vType, tv ? "v[c * " + num(keys) + " + j]"
                                                       : "v[j * " + num(dv) + " + c]");

    // The scale and mask, applied to each score as it is computed.
    std::vector<std::string> scoreIndex = batchIndex;
    scoreIndex.push_back("qi");
    scoreIndex.push_back("j");
    elements.seed(scoresMm.getResult(), scoreIndex, "dot");
    std::string score = elements.valueAt(softmax.getInput(), scoreIndex);
    std::vector<std::string> scoreLines = elements.takeLines();
    if (!kernel.reason.empty())
      return;

    auto in = [](BlockArgument arg) { return "in" + std::to_string(arg.getArgNumber()); };
    std::ostringstream os;
    os << ElementEmitter::includesFor(step) << blockReduceHelpers() << "\n// Generated by kiln: "
       << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    os << "// One block per query row (" << rows << " rows of " << keys << " keys, depth "
       << depth << " -> " << dv << "): scores in shared memory, softmax, weighted sum of v.\n"
       << "extern \"C\" __global__ void " << tiledLaunchBounds(kThreads) << "\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n"
       << "  KILN_SHARED(float, scores, " << keys << ");\n"
       << "  KILN_SHARED(float, scratch, 32);\n"
       << "  for (long long row = blockIdx.x; row < " << rows << "LL; row += gridDim.x) {\n"
       << "    const long long batch = row / " << queries << "LL;\n"
       << "    const " << I << " qi = " << (narrow ? "(int)" : "") << "(row % " << queries
       << "LL);\n";
    for (const std::string &line : batchLines)
      os << "    " << line << "\n";
    os << "    const " << *elements.storageType(qType) << " *q = " << in(q) << " + "
       << ElementEmitter::batchOffset(qType, batchIndex) << ";\n"
       << "    const " << *elements.storageType(kType) << " *k = " << in(k) << " + "
       << ElementEmitter::batchOffset(kType, batchIndex) << ";\n"
       << "    const " << *elements.storageType(vType) << " *v = " << in(v) << " + "
       << ElementEmitter::batchOffset(vType, batchIndex) << ";\n"
       << "    // Scores (scaled and masked) and their maximum.\n"
       << "    float localMax = -__int_as_float(0x7f800000);\n"
       << "    for (" << I << " j = threadIdx.x; j < " << num(keys) << "; j += blockDim.x) {\n"
       << "      float dot = 0.0f;\n"
       << "      for (" << I << " d = 0; d < " << num(depth) << "; ++d)\n"
       << "        dot += " << qElem << " * " << kElem << ";\n";
    for (const std::string &line : scoreLines)
      os << "      " << line << "\n";
    os << "      scores[j] = " << score << ";\n"
       << "      localMax = (scores[j] > localMax || scores[j] != scores[j]) ? scores[j] : localMax;\n"
       << "    }\n"
       << "    const float rowMax = kiln_block_reduce(localMax, scratch, KilnMax(), "
       << cudaLiteral(-INFINITY, false) << ");\n"
       << "    float localSum = 0.0f;\n"
       << "    for (" << I << " j = threadIdx.x; j < " << num(keys) << "; j += blockDim.x) {\n"
       << "      scores[j] = expf(scores[j] - rowMax);\n"
       << "      localSum += scores[j];\n"
       << "    }\n"
       << "    // (The reduction's barriers also publish every thread's scores.)\n"
       << "    const float rowSum = kiln_block_reduce(localSum, scratch, KilnSum(), 0.0f);\n"
       << "    for (" << I << " c = threadIdx.x; c < " << num(dv) << "; c += blockDim.x) {\n"
       << "      float acc = 0.0f;\n"
       << "      for (" << I << " j = 0; j < " << num(keys) << "; ++j)\n"
       << "        acc += scores[j] * " << vElem << ";\n"
       << "      out0[row * " << dv << "LL + c] = "
       << ElementEmitter::store(oType, "acc / rowSum") << ";\n"
       << "    }\n"
       << "    __syncthreads(); // the next row overwrites the scores\n"
       << "  }\n}\n";
    kernel.source = os.str();
    kernel.blockThreads = kThreads;
    kernel.gridBlocks = static_cast<unsigned>(std::min(rows, kMaxBlocks));
    kernel.unit = "CUDA cores (one block per query row)";
  }
};

} // namespace

void mlir::kiln::emitAttentionKernel(exec::StepOp step, GeneratedKernel &kernel) {
  AttentionEmitter(step, kernel).emit();
  discardIfFailed(kernel);
}
