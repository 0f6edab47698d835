//===- AttentionKernelEmitter.cpp - softmax(q k^T) v as one kernel --------===//
//
// FlashAttention-2: a block per tile of query rows (grid-stride over batch
// x query tiles) streams the keys and values through shared memory a tile
// at a time, with an online softmax in f32 (a running row maximum and sum
// rescale what has been accumulated), so the score matrix never exists and
// any number of keys works. The region's ops between the scores and the
// softmax (scale, additive or boolean masks, any broadcast) are applied to
// each score as it is produced; keys past the end count as masked.
//
// f16/bf16 with head dimensions that are multiples of 16 (up to 128): 4
// warps of 32 query rows (two row fragments; head dimensions up to 64,
// more than 64 queries, scores that load no mask) or 16, Q fragments held
// in registers, K/V tiles through
// a two-stage cp.async pipeline, S = Q K^T and O += P V by ldmatrix and
// mma.sync m16n8k16 with f32 accumulation (P goes from the S accumulators
// to A fragments in registers). Anything else (f32, odd shapes) runs the
// same tiling on CUDA cores: a warp per query row at a time, a lane per key
// of the tile, and the lanes sharing the output columns.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "kiln/CodeGen/AttentionLimits.h"
#include "kiln/CodeGen/DevicePrelude.h"
#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Runtime/DeviceLimits.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr unsigned kThreads = 128; // 4 warps
constexpr int64_t kStaticShared = ::kiln::rt::kDefaultSharedBytes;
/// log2(e) as a CUDA float literal: exp(x) = exp2(x log2(e)).
constexpr const char *kLog2e = "1.44269504f";


class AttentionEmitter : public KernelEmitter {
public:
  AttentionEmitter(exec::StepOp step, GeneratedKernel &kernel, const CodeGenOptions &options)
      : KernelEmitter(step, kernel), options(options) {}

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
    // The batch and the query and key counts may be symbolic (the kernel
    // takes them, and chooses its tiles for the largest); the head
    // dimensions size its tiles and registers, so they are static.
    int64_t depth = qType.getDimSize(scoresMm.getTransposeA() ? qType.getRank() - 2 : qType.getRank() - 1);
    int64_t dv = oType.getDimSize(rank - 1);
    if (ShapedType::isDynamic(depth) || ShapedType::isDynamic(dv))
      return fail("the head dimensions are known only at run time");
    SmallVector<AffineExpr> sDims = getDimSizes(sType);
    auto batchDims = llvm::ArrayRef(sDims).drop_back(2);
    std::optional<KernelSize> queries = problemSize(sDims[rank - 2], "queryCount"),
                              keys = problemSize(sDims[rank - 1], "keyCount"),
                              batches = problemSize(productOf(batchDims, step.getContext()),
                                                    "batchCount");
    if (!queries || !keys || !batches)
      return;
    if (batches->largest() * queries->largest() == 0 || keys->largest() == 0)
      return fail("the attention is empty");

    std::vector<std::string> params = kernelParameters(step, elements, kernel);
    if (!kernel.reason.empty())
      return;

    std::vector<std::string> batchLines;
    std::vector<std::string> batchIndex =
        ElementEmitter::decompose(batchDims, "batch", "b", batchLines);
    Problem p;
    p.queries = *queries;
    p.keys = *keys;
    p.depth = depth;
    p.dv = dv;
    p.batches = *batches;
    p.ta = scoresMm.getTransposeA();
    p.tb = scoresMm.getTransposeB();
    p.tv = contextMm.getTransposeB();
    p.qType = qType;
    p.kType = kType;
    p.vType = vType;
    p.oType = oType;
    p.qName = "in" + std::to_string(q.getArgNumber());
    p.kName = "in" + std::to_string(k.getArgNumber());
    p.vName = "in" + std::to_string(v.getArgNumber());
    p.batchLines = batchLines;
    p.qStart = ElementEmitter::batchOffset(qType, batchIndex);
    p.kStart = ElementEmitter::batchOffset(kType, batchIndex);
    p.vStart = ElementEmitter::batchOffset(vType, batchIndex);
    // Indices within a batch's q, k and v are 32-bit where all of them fit.
    const int64_t mostQueries = queries->largest(), mostKeys = keys->largest();
    p.narrow = fitsInt32({mostQueries * depth, mostKeys * depth, mostKeys * dv, mostQueries * dv,
                          mostQueries + 64, mostKeys + 64, dv + kThreads});

    // The scale and mask, applied to each score as it is computed.
    std::vector<std::string> scoreIndex = batchIndex;
    scoreIndex.push_back("qi");
    scoreIndex.push_back("kj");
    elements.seed(scoresMm.getResult(), scoreIndex, "dot");
    BlockArgument zeroCausalMask;
    p.causal = queries->isStatic() && keys->isStatic() &&
               isCausalMask(softmax.getInput(), mostQueries, mostKeys, zeroCausalMask);
    if (zeroCausalMask) // 0 or -inf by the indices alone: no loads
      elements.seed(zeroCausalMask, ElementEmitter::broadcastIndex(zeroCausalMask, scoreIndex),
                    "(kj > qi ? -__int_as_float(0x7f800000) : 0.0f)");
    p.score = elements.valueAt(softmax.getInput(), scoreIndex);
    p.scoreLines = elements.takeLines();
    if (!kernel.reason.empty())
      return;
    setFlops(kernel, batches->getExpr() * queries->getExpr() * keys->getExpr() * (2 * (depth + dv)),
             2.0 * batches->largest() * mostQueries * mostKeys * (depth + dv));

    Type e = qType.getElementType();
    bool sameHalf = (e.isF16() || e.isBF16()) && kType.getElementType() == e &&
                    vType.getElementType() == e;
    // 16-byte rows for cp.async and ldmatrix; mma's k and n steps.
    bool tensorCores = sameHalf && options.minArch >= 80 && !p.ta && depth % 16 == 0 && dv % 16 == 0 && depth <= 128 &&
                       dv <= 128 && ((p.tb && !p.tv) || keys->dividesBy(8));
    kernel.tensorCoreWork = sameHalf;
    if (tensorCores)
      emitTensorCoreKernel(p, params);
    else
      emitCudaCoreKernel(p, params);
  }

private:
  struct Problem {
    KernelSize queries, keys, batches;
    int64_t depth, dv;
    bool ta, tb, tv, narrow;
    /// Keys after a query are masked with -inf: key tiles past a block's
    /// last query are skipped.
    bool causal = false;
    RankedTensorType qType, kType, vType, oType;
    std::string qName, kName, vName, qStart, kStart, vStart;
    std::vector<std::string> batchLines;
    std::string score;
    std::vector<std::string> scoreLines;
  };

  const CodeGenOptions &options;
  /// A block per tile of `rowsPerBlock` queries of each batch.
  void setQueryTileGrid(const Problem &p, int64_t rowsPerBlock) {
    setGrid(kernel, p.batches.getExpr() * p.queries.getExpr().ceilDiv(rowsPerBlock), 1);
  }

  /// Whether `scores` is `x + mask` for a constant mask, broadcast over the
  /// batch dimensions, that is -inf exactly where the key comes after the
  /// query (what exporters write for causal attention:
  /// triu(full(-inf), 1)) and finite elsewhere; `zeroElsewhere` is the
  /// mask's argument when its finite entries are all 0.
  bool isCausalMask(Value scores, int64_t queries, int64_t keys, BlockArgument &zeroElsewhere) {
    auto add = scores.getDefiningOp<AddOp>();
    if (!add)
      return false;
    for (Value operand : add->getOperands()) {
      auto arg = llvm::dyn_cast<BlockArgument>(operand);
      if (!arg)
        continue;
      Value outer = step.getInputs()[arg.getArgNumber()];
      ElementsAttr value;
      if (auto constant = outer.getDefiningOp<ConstantOp>())
        value = constant.getValue();
      else if (auto weight = outer.getDefiningOp<WeightOp>())
        value = weight.getValue();
      auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(value);
      auto type = llvm::cast<RankedTensorType>(arg.getType());
      if (!dense || dense.isSplat() || !llvm::isa<FloatType>(dense.getElementType()) ||
          type.getRank() < 2 || type.getDimSize(type.getRank() - 2) != queries ||
          type.getDimSize(type.getRank() - 1) != keys ||
          type.getNumElements() != queries * keys)
        continue;
      int64_t k = 0;
      bool causal = true, zeros = true;
      for (const APFloat &v : dense.getValues<APFloat>()) {
        int64_t i = k / keys, j = k % keys;
        ++k;
        bool masked = v.isInfinity() && v.isNegative();
        if (masked != (j > i) || v.isNaN()) {
          causal = false;
          break;
        }
        zeros &= masked || v.isZero();
      }
      if (causal) {
        if (zeros)
          zeroElsewhere = arg;
        return true;
      }
    }
    return false;
  }

  void header(std::ostringstream &os, const Problem &p, const std::string &how) {
    os << "\n// Generated by kiln: " << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    os << "// FlashAttention: " << p.batches.describe() << " x " << p.queries.describe()
       << " queries over " << p.keys.describe() << " keys, depth " << p.depth << " -> " << p.dv << ";\n// " << how << "\n";
  }

  void tileLoop(std::ostringstream &os, const Problem &p, int64_t rowsPerBlock,
                const std::string &I) {
    // Symbolic sizes: variables computed once from the size parameters.
    declareSizes(os, {&p.queries, &p.keys}, I, p.batches);
    CountText qTiles = piecesOf(p.queries, rowsPerBlock);
    os << "  for (long long tile = blockIdx.x; tile < " << (piecesOf(p.batches, 1) * qTiles).text()
       << "; tile += gridDim.x) {\n"
       << "    const long long batch = tile / " << qTiles.text() << ";\n"
       << "    const " << I << " q0 = " << (p.narrow ? "(int)" : "") << "(tile % " << qTiles.text()
       << ") * " << rowsPerBlock << ";\n";
    for (const std::string &line : p.batchLines)
      os << "    " << line << "\n";
    auto pointer = [&](RankedTensorType t, const std::string &name, const std::string &var,
                       const std::string &start) {
      os << "    const " << *elements.storageType(t) << " *" << var << " = " << name << " + "
         << start << ";\n";
    };
    pointer(p.qType, p.qName, "q", p.qStart);
    pointer(p.kType, p.kName, "k", p.kStart);
    pointer(p.vType, p.vName, "v", p.vStart);
  }

  /// The score of query qi and key kj from `dot` (scale and mask applied),
  /// or -inf past either end. An end that the block's `rows` and the key
  /// tile's `keysPerTile` divide cannot be passed: no comparison for it (the
  /// softmax between the Tensor Core products is the kernel's critical path).
  void scoreAt(std::ostringstream &os, const Problem &p, const std::string &indent,
               const std::string &target, const std::string &L, int64_t rows,
               int64_t keysPerTile) {
    std::vector<std::string> bounds;
    if (!p.queries.dividesBy(rows))
      bounds.push_back("qi < " + p.queries.text(L));
    if (!p.keys.dividesBy(keysPerTile))
      bounds.push_back("kj < " + p.keys.text(L));
    os << indent << "float " << target << " = -__int_as_float(0x7f800000);\n"
       << indent
       << (bounds.empty() ? std::string("{ // the tiles divide the queries and keys")
                          : "if (" + llvm::join(bounds, " && ") + ") {")
       << "\n";
    for (const std::string &line : p.scoreLines)
      os << indent << "  " << line << "\n";
    os << indent << "  " << target << " = " << p.score << ";\n" << indent << "}\n";
  }

  /// The output `o` over the row's sum of exponentials: 0 where a run may
  /// have no keys at all (as the reference's empty sum gives), else the
  /// quotient (NaN for a row whose every key is masked, as the reference's).
  static std::string normalized(const Problem &p, const std::string &o, const std::string &sum) {
    if (p.keys.smallest() <= 0) // (a symbolic key count whose range starts at 0)
      return "(" + p.keys.text() + " > 0 ? " + o + " / " + sum + " : 0.0f)";
    return o + " / " + sum;
  }

  /// Whether computing a score reads a kernel input (a mask tensor), not
  /// just the dot product and the indices.
  bool scoresLoad(const Problem &p) const {
    for (uint32_t input : kernel.inputArgs) {
      std::string name = "in" + std::to_string(input);
      if (name == p.qName || name == p.kName || name == p.vName)
        continue;
      for (const std::string &line : p.scoreLines)
        for (size_t at = line.find(name); at != std::string::npos;
             at = line.find(name, at + 1)) {
          char next = at + name.size() < line.size() ? line[at + name.size()] : ' ';
          if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_')
            return true;
        }
    }
    return false;
  }

  /// f16/bf16 on Tensor Cores.
  void emitTensorCoreKernel(const Problem &p, const std::vector<std::string> &params) {
    // Each warp holds `mf` 16-row fragments of queries: every K and V
    // fragment it loads from shared memory serves all of them, so the
    // kernel's shared-memory traffic per FLOP falls by mf. Two for head
    // dimensions up to 64 where the queries fill more than one 64-row block
    // (measured on an H200, 8x12x1024x64 f16: 127 us against 145 us with
    // one), unless each score loads a mask or the lengths are symbolic:
    // the two-fragment kernel's 247-255 registers leave no room for the
    // mask's addresses or the lengths' variables (nvcc spilled 40 bytes for
    // sm_80 over a symbolic sequence length; a symbolic batch alone costs
    // none);
    // --attention-tile 16,N or 32,N decides instead.
    const bool small = p.depth <= 64 && p.dv <= 64;
    const int64_t bc = small ? 64 : 32; // keys per tile
    // Shared tiles, rows padded by 8 elements (16 bytes): K as [key][d] (or
    // [d][key] when k is stored so), V as [key][c] (or [c][key]); Q passes
    // through them first and the output (f32) last.
    const int64_t kRows = p.tb ? bc : p.depth, kCols = p.tb ? p.depth : bc;
    const int64_t vRows = p.tv ? p.dv : bc, vCols = p.tv ? bc : p.dv;
    const int64_t kElems = kRows * (kCols + kTilePad), vElems = vRows * (vCols + kTilePad);
    const int64_t stage = kElems + vElems, sharedElems = 2 * stage;
    const int64_t ldO = p.dv + 8;
    auto fits = [&](int64_t rowsPerBlock) {
      return sharedElems * 2 <= kStaticShared &&
             rowsPerBlock * (p.depth + kTilePad) <= sharedElems &&
             rowsPerBlock * ldO * 4 <= sharedElems * 2;
    };
    const bool twoFragments = p.queries.largest() > 64 && !scoresLoad(p) &&
                              p.queries.isStatic() && p.keys.isStatic();
    unsigned rows = options.attentionRowsPerWarp ? options.attentionRowsPerWarp
                    : twoFragments               ? 32
                                                 : 16;
    // kiln's choice of two fragments falls back to one where the output
    // of 128 rows would not fit the K/V stages (a head dimension below v's).
    if (!options.attentionRowsPerWarp && rows == 32 && !fits(128))
      rows = 16;
    const int64_t mf = small && rows == 32 ? 2 : 1;
    const int64_t rowsPerWarp = 16 * mf;
    const int64_t rowsPerBlock = 4 * rowsPerWarp; // 4 warps
    std::string elem = *elements.storageType(p.qType);
    bool bf16 = p.qType.getElementType().isBF16();
    std::string I = p.narrow ? "int" : "long long", L = p.narrow ? "" : "LL";
    auto num = [&](int64_t v) { return std::to_string(v) + L; };
    if (!fits(rowsPerBlock))
      return emitCudaCoreKernel(p, params);

    std::ostringstream os;
    os << ElementEmitter::includesFor(step) << kernelPrelude() << ::kiln::codegen::devicePrelude();
    header(os, p, "4 warps of " + std::to_string(rowsPerWarp) +
                      " query rows on Tensor Cores (mma.sync m16n8k16, f32\n"
                      "// accumulators), K/V tiles of " + std::to_string(bc) +
                      " keys through a 2-stage cp.async pipeline, online softmax\n"
                      "// in f32; the output is staged in shared memory for coalesced stores.");
    std::string mma = bf16 ? "kiln_mma_m16n8k16_bf16" : "kiln_mma_m16n8k16_f16";
    std::string pack = bf16 ? "kiln_pack_bf16" : "kiln_pack_f16";
    // Two neighbouring n8 B fragments by one ldmatrix (`load`), each
    // multiplied into its accumulator (`left`, `right`) for every row
    // fragment `mi` of the warp (A fragment `a`): S = Q K^T and O += P V.
    auto mmaPair = [&](const std::string &load, const std::string &left,
                       const std::string &right, const std::string &a) {
      os << "          unsigned r[4];\n"
         << "          " << load << "\n"
         << "          const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};\n"
         << "          #pragma unroll // registers, not local memory\n"
         << "          for (int mi = 0; mi < " << mf << "; ++mi) {\n"
         << "            " << mma << "(" << left << ", " << a << ", b0);\n"
         << "            " << mma << "(" << right << ", " << a << ", b1);\n"
         << "          }\n";
    };
    // Two probabilities as one A-fragment register (guarded: a translation
    // unit holds every kernel).
    os << "#ifndef KILN_PACK_" << (bf16 ? "BF16" : "F16") << "\n#define KILN_PACK_"
       << (bf16 ? "BF16" : "F16") << "\n"
       << "__device__ __forceinline__ unsigned " << pack << "(float lo, float hi) {\n"
       << "  const " << (bf16 ? "__nv_bfloat162 h = __floats2bfloat162_rn" : "__half2 h = __floats2half2_rn")
       << "(lo, hi);\n"
       << "  unsigned u;\n  memcpy(&u, &h, 4);\n  return u;\n}\n#endif\n";
    // Registers bounded so that this many blocks fit an SM (--attention-tile).
    const unsigned blocksPerSM = options.attentionBlocksPerSM ? options.attentionBlocksPerSM : 1;
    os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ", " << blocksPerSM
       << ")\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n"
       << "  // Two stages of K [" << kRows << "][" << kCols + kTilePad << "] and V [" << vRows
       << "][" << vCols + kTilePad << "]; Q passes through them\n  // first, the output last.\n"
       << "  KILN_SHARED_ALIGNED(" << elem << ", tiles, " << sharedElems << ", 16);\n"
       << "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n";
    tileLoop(os, p, rowsPerBlock, I);
    // Copies rows [r0, r0 + rows) x columns [c0, c0 + cols) of a row-major
    // matrix (rows of `ld` elements, `limitR` x `limitC`) into a padded
    // shared tile, 16 bytes a lane, zeros past the ends.
    auto copyTile = [&](const std::string &dst, const std::string &src, int64_t rows,
                        int64_t cols, const std::string &r0, const std::string &c0,
                        const std::string &limitR, const std::string &limitC,
                        const std::string &ld) {
      emitTileCopy(os, {dst, src, r0, c0, rows, cols, limitR, limitC, ld, elem, I, kThreads},
                   "      ");
    };
    const std::string Q = p.queries.text(L), Keys = p.keys.text(L), D = num(p.depth),
                      Dv = num(p.dv);
    os << "    // Q's " << rowsPerBlock
       << " rows into registers (A fragments), through shared memory.\n"
       << "    __syncthreads(); // the previous tile is done with the shared tiles\n"
       << "    {\n";
    copyTile("tiles", "q", rowsPerBlock, p.depth, "q0", "0", Q, D, D);
    os << "    }\n"
       << "    kiln_cp_async_commit();\n"
       << "    kiln_cp_async_wait<0>();\n"
       << "    __syncthreads();\n"
       << "    // The warp's rows: " << mf << " fragment(s) of 16 from row0.\n"
       << "    const int row0 = warp * " << rowsPerWarp << ";\n"
       << "    unsigned qf[" << mf << "][" << p.depth / 16 << "][4];\n"
       << "    #pragma unroll // registers, not local memory\n"
       << "    for (int mi = 0; mi < " << mf << "; ++mi)\n"
       << "      for (int t = 0; t < " << p.depth / 16 << "; ++t)\n"
       << "        kiln_ldmatrix_x4(qf[mi][t], tiles + (row0 + mi * 16 + lane % 16) * "
       << p.depth + kTilePad << " + t * 16 + lane / 16 * 8);\n"
       << "    __syncthreads(); // every warp has its Q: the stages may overwrite it\n"
       << "    // K and V tile `t` into stage `s`.\n"
       << "    auto loadKV = [&](int s, " << I << " key0) {\n";
    if (p.tb)
      copyTile("tiles + s * " + std::to_string(stage), "k", bc, p.depth, "key0", "0", Keys, D, D);
    else
      copyTile("tiles + s * " + std::to_string(stage), "k", p.depth, bc, "0", "key0", D, Keys,
               Keys);
    if (p.tv)
      copyTile("tiles + s * " + std::to_string(stage) + " + " + std::to_string(kElems), "v", p.dv,
               bc, "0", "key0", Dv, Keys, Keys);
    else
      copyTile("tiles + s * " + std::to_string(stage) + " + " + std::to_string(kElems), "v", bc,
               p.dv, "key0", "0", Keys, Dv, Dv);
    const std::string keyTiles = p.keys.isStatic()
                                     ? num((p.keys.largest() + bc - 1) / bc)
                                     : "(" + I + ")" + piecesOf(p.keys, bc).text();
    os << "    };\n"
       << "    float o[" << mf << "][" << p.dv / 8 << "][4] = {};\n"
       << "    // Per fragment, the lane's two rows (lane / 4 and lane / 4 + 8).\n"
       << "    float rowMax[" << mf << "][2], rowSum[" << mf << "][2]; // sums: this lane's part\n"
       << "    #pragma unroll // registers, not local memory\n"
       << "    for (int mi = 0; mi < " << mf << "; ++mi)\n"
       << "      for (int h = 0; h < 2; ++h) {\n"
       << "        rowMax[mi][h] = -__int_as_float(0x7f800000);\n"
       << "        rowSum[mi][h] = 0.0f;\n"
       << "      }\n"
       << "    loadKV(0, 0);\n"
       << "    kiln_cp_async_commit();\n"
       << "    // Key tiles to visit" << (p.causal ? ": none past the block's last query (the mask "
                                                      "is causal)" : "") << ".\n"
       << "    const " << I << " keyTiles = "
       << (p.causal ? "(q0 + " + std::to_string(rowsPerBlock - 1) + ") / " +
                          std::to_string(bc) + " + 1 < " + keyTiles + " ? (q0 + " +
                          std::to_string(rowsPerBlock - 1) + ") / " + std::to_string(bc) +
                          " + 1 : " + keyTiles
                    : keyTiles)
       << ";\n"
       << "    for (" << I << " t = 0; t < keyTiles; ++t) {\n"
       << "      kiln_cp_async_wait<0>();\n"
       << "      __syncthreads(); // tile t has landed; stage (t + 1) % 2 is free\n"
       << "      if (t + 1 < keyTiles)\n"
       << "        loadKV((t + 1) % 2, (t + 1) * " << bc << L << ");\n"
       << "      kiln_cp_async_commit();\n"
       << "      const " << elem << " *ks = tiles + t % 2 * " << stage << ", *vs = ks + " << kElems
       << ";\n"
       << "      // S = Q K^T for the warp's rows and the tile's " << bc
       << " keys: each K fragment\n"
       << "      // serves every row fragment.\n"
       << "      float sc[" << mf << "][" << bc / 8 << "][4] = {};\n"
       << "      for (int d = 0; d < " << p.depth / 16 << "; ++d)\n"
       << "        for (int j = 0; j < " << bc / 8 << "; j += 2) {\n";
    // K is S's B operand (k: the depth, n: the keys).
    mmaPair(ldmatrixBPair("ks", kCols + kTilePad, p.tb, "d * 16", "j * 8"), "sc[mi][j]",
            "sc[mi][j + 1]", "qf[mi][d]");
    os << "        }\n"
       << "      // P = exp(S - max) as A fragments (16 keys each).\n"
       << "      unsigned pf[" << mf << "][" << bc / 16 << "][4];\n"
       << "      #pragma unroll // registers, not local memory\n"
       << "      for (int mi = 0; mi < " << mf << "; ++mi) {\n"
       << "        // Scale and mask; the tile's maximum of each of the lane's two rows.\n"
       << "        float tileMax[2] = {-__int_as_float(0x7f800000), -__int_as_float(0x7f800000)};\n"
       << "        for (int j = 0; j < " << bc / 8 << "; ++j)\n"
       << "          for (int e = 0; e < 4; ++e) {\n"
       << "            const " << I << " qi = q0 + row0 + mi * 16 + lane / 4 + e / 2 * 8;\n"
       << "            const " << I << " kj = t * " << bc << L
       << " + j * 8 + lane % 4 * 2 + e % 2;\n"
       << "            const float dot = sc[mi][j][e];\n";
    scoreAt(os, p, "            ", "x", L, rowsPerBlock, bc);
    os << "            sc[mi][j][e] = x;\n"
       << "            tileMax[e / 2] = fmaxf(tileMax[e / 2], x);\n"
       << "          }\n"
       << "        // exp(x - base) as exp2(x log2(e) - base log2(e)): one FFMA and the\n"
       << "        // special-function unit's ex2, where expf costs a range reduction.\n"
       << "        float base[2], scaledBase[2];\n"
       << "        for (int h = 0; h < 2; ++h) {\n"
       << "          // A row's 4 lanes hold its tile; then rescale what came before.\n"
       << "          tileMax[h] = fmaxf(tileMax[h], __shfl_xor_sync(0xffffffffu, tileMax[h], 1));\n"
       << "          tileMax[h] = fmaxf(tileMax[h], __shfl_xor_sync(0xffffffffu, tileMax[h], 2));\n"
       << "          const float newMax = fmaxf(rowMax[mi][h], tileMax[h]);\n"
       << "          // Every key so far masked: exponents against 0 give 0, not NaN.\n"
       << "          base[h] = newMax == -__int_as_float(0x7f800000) ? 0.0f : newMax;\n"
       << "          scaledBase[h] = base[h] * " << kLog2e << ";\n"
       << "          const float rescale = exp2f((rowMax[mi][h] - base[h]) * " << kLog2e << ");\n"
       << "          rowMax[mi][h] = newMax;\n"
       << "          rowSum[mi][h] *= rescale;\n"
       << "          for (int c = 0; c < " << p.dv / 8 << "; ++c) {\n"
       << "            o[mi][c][2 * h] *= rescale;\n"
       << "            o[mi][c][2 * h + 1] *= rescale;\n"
       << "          }\n"
       << "        }\n"
       << "        for (int j = 0; j < " << bc / 8 << "; ++j) {\n"
       << "          float pv[4];\n"
       << "          for (int e = 0; e < 4; ++e) {\n"
       << "            pv[e] = exp2f(fmaf(sc[mi][j][e], " << kLog2e << ", -scaledBase[e / 2]));\n"
       << "            rowSum[mi][e / 2] += pv[e];\n"
       << "          }\n"
       << "          pf[mi][j / 2][j % 2 * 2] = " << pack << "(pv[0], pv[1]);\n"
       << "          pf[mi][j / 2][j % 2 * 2 + 1] = " << pack << "(pv[2], pv[3]);\n"
       << "        }\n"
       << "      }\n"
       << "      // O += P V: each V fragment serves every row fragment.\n"
       << "      for (int kt = 0; kt < " << bc / 16 << "; ++kt)\n"
       << "        for (int c = 0; c < " << p.dv / 8 << "; c += 2) {\n";
    // V is P V's B operand (k: the keys, n: the output columns).
    mmaPair(ldmatrixBPair("vs", vCols + kTilePad, p.tv, "kt * 16", "c * 8"), "o[mi][c]",
            "o[mi][c + 1]", "pf[mi][kt]");
    os << "        }\n"
       << "    }\n"
       << "    kiln_cp_async_wait<0>();\n"
       << "    // Normalise, stage the block's rows in shared memory, store coalesced.\n"
       << "    #pragma unroll // registers, not local memory\n"
       << "    for (int mi = 0; mi < " << mf << "; ++mi)\n"
       << "      for (int h = 0; h < 2; ++h) {\n"
       << "        rowSum[mi][h] += __shfl_xor_sync(0xffffffffu, rowSum[mi][h], 1);\n"
       << "        rowSum[mi][h] += __shfl_xor_sync(0xffffffffu, rowSum[mi][h], 2);\n"
       << "      }\n"
       << "    __syncthreads(); // every warp is done with the last tile\n"
       << "    float *staged = reinterpret_cast<float *>(tiles); // [" << rowsPerBlock << "]["
       << ldO << "]\n"
       << "    #pragma unroll // registers, not local memory\n"
       << "    for (int mi = 0; mi < " << mf << "; ++mi)\n"
       << "      for (int c = 0; c < " << p.dv / 8 << "; ++c)\n"
       << "        for (int h = 0; h < 2; ++h)\n"
       << "          kiln_store_vec(staged + (row0 + mi * 16 + lane / 4 + h * 8) * " << ldO
       << " + c * 8 + lane % 4 * 2,\n"
       << "                         kiln_pair<float>{" << normalized(p, "o[mi][c][2 * h]", "rowSum[mi][h]")
       << ",\n"
       << "                                          "
       << normalized(p, "o[mi][c][2 * h + 1]", "rowSum[mi][h]") << "});\n"
       << "    __syncthreads();\n"
       << "    for (int e = threadIdx.x; e < " << rowsPerBlock * p.dv << "; e += " << kThreads
       << ") {\n"
       << "      const int r = e / " << p.dv << ", c = e % " << p.dv << ";\n"
       << "      if (q0 + r < " << Q << ")\n"
       << "        out0[(batch * " << p.queries.text("LL") << " + q0 + r) * " << p.dv << "LL + c] = "
       << ElementEmitter::store(p.oType, "staged[r * " + std::to_string(ldO) + " + c]") << ";\n"
       << "    }\n"
       << "  }\n}\n";
    kernel.source = os.str();
    kernel.blockThreads = kThreads;
    setQueryTileGrid(p, rowsPerBlock);
    kernel.unit = "Tensor Cores (FlashAttention-2, mma.sync m16n8k16, " +
                  std::to_string(rowsPerBlock) + " queries x " + std::to_string(bc) +
                  " keys per tile)";
  }

  /// Any element type on CUDA cores: blocks of 16 query rows (4 per warp),
  /// K and V tiles of 32 keys in shared memory, a lane per key for the
  /// scores and per output column for the sum.
  void emitCudaCoreKernel(const Problem &p, const std::vector<std::string> &params) {
    constexpr int64_t rowsPerWarp = 4, rowsPerBlock = ::kiln::codegen::kAttentionRowsPerBlock,
                      bc = ::kiln::codegen::kAttentionKeysPerTile;
    std::string I = p.narrow ? "int" : "long long", L = p.narrow ? "" : "LL";
    auto num = [&](int64_t v) { return std::to_string(v) + L; };
    // Q rows [16][depth], K [32][depth + 1] (a lane per key reads a column
    // of it: the padding puts every lane on its own bank), V [32][dv].
    // Each tile's loading loop runs along the dimension its matrix is
    // contiguous in, so the loads coalesce: keys fastest for k stored as
    // [depth][keys] and v as [dv][keys], queries fastest for a transposed q
    // (whose rows are then padded, as k's always are and v's then).
    const int64_t ldQ = p.ta ? p.depth + 1 : p.depth, ldK = p.depth + 1,
                  ldV = p.tv ? p.dv + 1 : p.dv;
    if (!::kiln::codegen::attentionKernelFits(p.depth, p.dv, p.ta, p.tv))
      return fail("attention with depth " + std::to_string(p.depth) + " and " +
                  std::to_string(p.dv) + " output columns needs more shared memory than a "
                  "block has");
    const int64_t colsPerLane = (p.dv + 31) / 32;
    const std::string Q = p.queries.text(L), Keys = p.keys.text(L);
    std::string qElem = ElementEmitter::load(p.qType, p.ta ? "q[d * " + Q + " + gq]"
                                                           : "q[gq * " + num(p.depth) + " + d]");
    std::string kElem = ElementEmitter::load(p.kType, p.tb ? "k[gk * " + num(p.depth) + " + d]"
                                                           : "k[d * " + Keys + " + gk]");
    std::string vElem = ElementEmitter::load(p.vType, p.tv ? "v[c * " + Keys + " + gk]"
                                                           : "v[gk * " + num(p.dv) + " + c]");
    std::ostringstream os;
    os << ElementEmitter::includesFor(step) << kernelPrelude();
    header(os, p, "CUDA cores: 16 query rows per block (4 per warp), K/V tiles of 32 keys in "
                  "shared\n// memory, a lane per key for the scores, online softmax in f32.");
    os << "extern \"C\" __global__ void " << tiledLaunchBounds(kThreads) << "\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n"
       << "  KILN_SHARED(float, qs, " << rowsPerBlock * ldQ << "); // [16][" << ldQ << "]\n"
       << "  KILN_SHARED(float, ks, " << bc * ldK << "); // [32][" << ldK << "]\n"
       << "  KILN_SHARED(float, vs, " << bc * ldV << "); // [32][" << ldV << "]\n"
       << "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n";
    tileLoop(os, p, rowsPerBlock, I);
    os << "    __syncthreads(); // the previous tile is done with qs\n"
       << "    for (int e = threadIdx.x; e < " << rowsPerBlock * p.depth << "; e += " << kThreads
       << ") {\n"
       << (p.ta ? "      const int r = e % 16, d = e / 16;\n"
                : "      const int r = e / " + std::to_string(p.depth) + ", d = e % " +
                      std::to_string(p.depth) + ";\n")
       << "      const " << I << " gq = q0 + r;\n"
       << "      qs[r * " << ldQ << " + d] = gq < " << Q << " ? " << qElem
       << " : 0.0f;\n"
       << "    }\n"
       << "    float o[" << rowsPerWarp << "][" << colsPerLane << "] = {};\n"
       << "    float rowMax[" << rowsPerWarp << "], rowSum[" << rowsPerWarp << "];\n"
       << "    for (int i = 0; i < " << rowsPerWarp << "; ++i) {\n"
       << "      rowMax[i] = -__int_as_float(0x7f800000);\n"
       << "      rowSum[i] = 0.0f;\n"
       << "    }\n"
       << "    // Keys to visit" << (p.causal ? ": none past the block's last query (the mask is "
                                                  "causal)" : "") << ".\n"
       << "    const " << I << " keyEnd = "
       << (p.causal ? "q0 + " + std::to_string(rowsPerBlock) + " < " + Keys + " ? q0 + " +
                          std::to_string(rowsPerBlock) + " : " + Keys
                    : Keys)
       << ";\n"
       << "    for (" << I << " key0 = 0; key0 < keyEnd; key0 += " << bc << ") {\n"
       << "      __syncthreads(); // the previous K/V tile is read\n"
       << "      for (int e = threadIdx.x; e < " << bc * p.depth << "; e += " << kThreads << ") {\n"
       << (p.tb ? "        const int j = e / " + std::to_string(p.depth) + ", d = e % " +
                      std::to_string(p.depth) + ";\n"
                : "        const int j = e % " + std::to_string(bc) + ", d = e / " +
                      std::to_string(bc) + ";\n")
       << "        const " << I << " gk = key0 + j;\n"
       << "        ks[j * " << ldK << " + d] = gk < " << Keys << " ? " << kElem
       << " : 0.0f;\n"
       << "      }\n"
       << "      for (int e = threadIdx.x; e < " << bc * p.dv << "; e += " << kThreads << ") {\n"
       << (p.tv ? "        const int j = e % " + std::to_string(bc) + ", c = e / " +
                      std::to_string(bc) + ";\n"
                : "        const int j = e / " + std::to_string(p.dv) + ", c = e % " +
                      std::to_string(p.dv) + ";\n")
       << "        const " << I << " gk = key0 + j;\n"
       << "        vs[j * " << ldV << " + c] = gk < " << Keys << " ? " << vElem
       << " : 0.0f;\n"
       << "      }\n"
       << "      __syncthreads();\n"
       << "      for (int i = 0; i < " << rowsPerWarp << "; ++i) {\n"
       << "        const int r = warp * " << rowsPerWarp << " + i;\n"
       << "        const " << I << " qi = q0 + r, kj = key0 + lane;\n"
       << "        float dot = 0.0f;\n"
       << "        for (int d = 0; d < " << p.depth << "; ++d)\n"
       << "          dot += qs[r * " << ldQ << " + d] * ks[lane * " << ldK << " + d];\n";
    scoreAt(os, p, "        ", "x", L, rowsPerBlock, bc);
    os << "        float tileMax = x;\n"
       << "        for (int offset = 16; offset > 0; offset /= 2)\n"
       << "          tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, offset));\n"
       << "        const float newMax = fmaxf(rowMax[i], tileMax);\n"
       << "        // Every key so far masked: exponents against 0 give 0, not NaN.\n"
       << "        const float base = newMax == -__int_as_float(0x7f800000) ? 0.0f : newMax;\n"
       << "        const float rescale = expf(rowMax[i] - base), pj = expf(x - base);\n"
       << "        rowMax[i] = newMax;\n"
       << "        float tileSum = pj;\n"
       << "        for (int offset = 16; offset > 0; offset /= 2)\n"
       << "          tileSum += __shfl_xor_sync(0xffffffffu, tileSum, offset);\n"
       << "        rowSum[i] = rowSum[i] * rescale + tileSum;\n"
       << "        for (int u = 0; u < " << colsPerLane << "; ++u)\n"
       << "          o[i][u] *= rescale;\n"
       << "        for (int j = 0; j < " << bc << "; ++j) {\n"
       << "          const float w = __shfl_sync(0xffffffffu, pj, j);\n"
       << "          for (int u = 0; u < " << colsPerLane << "; ++u) {\n"
       << "            const int c = lane + u * 32;\n"
       << "            if (c < " << p.dv << ")\n"
       << "              o[i][u] += w * vs[j * " << ldV << " + c];\n"
       << "          }\n"
       << "        }\n"
       << "      }\n"
       << "    }\n"
       << "    for (int i = 0; i < " << rowsPerWarp << "; ++i) {\n"
       << "      const " << I << " qi = q0 + warp * " << rowsPerWarp << " + i;\n"
       << "      for (int u = 0; u < " << colsPerLane << "; ++u) {\n"
       << "        const int c = lane + u * 32;\n"
       << "        if (qi < " << Q << " && c < " << p.dv << ")\n"
       << "          out0[(batch * " << p.queries.text("LL") << " + qi) * " << p.dv << "LL + c] = "
       << ElementEmitter::store(p.oType, normalized(p, "o[i][u]", "rowSum[i]")) << ";\n"
       << "      }\n"
       << "    }\n"
       << "  }\n}\n";
    kernel.source = os.str();
    kernel.blockThreads = kThreads;
    setQueryTileGrid(p, rowsPerBlock);
    kernel.unit = "CUDA cores (FlashAttention tiling, 16 queries x 32 keys per tile)";
  }
};

} // namespace

void mlir::kiln::emitAttentionKernel(exec::StepOp step, GeneratedKernel &kernel,
                                     const CodeGenOptions &options) {
  AttentionEmitter(step, kernel, options).emit();
  discardIfFailed(kernel);
}
