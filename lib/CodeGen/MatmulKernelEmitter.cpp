//===- MatmulKernelEmitter.cpp - tiled matmul with a fused epilogue -------===//
//
// Matmul, matmul_epilogue and horizontal regions. Each block computes a
// tile of one batch's result from slices of A and B staged in shared
// memory. f16/bf16 whose rows are whole 16-byte chunks (on sm_80 and newer)
// runs the pipelined Tensor Core kernel (emitMmaKernel): cp.async copies,
// ldmatrix fragments, mma.sync m16n8k16 into f32 registers. Other f16/bf16
// shapes, and f32 with TF32 allowed, use 64x64 tiles of 4 warps of 2x2
// wmma fragments; f32 runs on CUDA cores in 64x64 or 32x32 tiles, 4x4
// results per thread. Every variant passes its results through shared
// memory to the region's epilogue (bias, activation, scaling, residual,
// cast), one element per thread so that its reads and the store coalesce;
// a horizontal region's outputs are column ranges. Tiles are
// bounds-checked, so any M, N and K work.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "kiln/CodeGen/DevicePrelude.h"
#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Runtime/DeviceLimits.h"

#include "llvm/ADT/StringExtras.h"

#include <cassert>
#include <sstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16;
// CUDA-core tiles: 64x64 (16 x 16 threads) or 32x32 (8 x 8 threads), 4x4
// results per thread.
constexpr int64_t kSmallTile = 32;
// Fewer 64x64 tiles than this leaves SMs idle (an H100/H200 has 132).
constexpr int64_t kFillBlocks = 132;
constexpr unsigned kTensorCoreThreads = 128; // 4 warps, 32x32 results each
// Shared tile strides (elements) for wmma: multiples of 8 halves / 4
// floats, padded so rows do not all start on the same bank.
constexpr int64_t kLdA = kTileK + 8, kLdB = kTileN + 8, kLdC = kTileN + 4;
// wmma::load_matrix_sync and store_matrix_sync take a 32-byte aligned
// pointer and an ldm that is a multiple of 16 bytes. The tiles are declared
// __align__(32), and each fragment starts a multiple of 32 bytes into its
// tile: 16 rows down A or C, 8 rows down B (TF32's k step, f32 only), 16
// columns across B or C, 8 columns across A (TF32).
constexpr int64_t kWmmaAlign = 32;
// Fragments are kFragment x kFragment x K: K is kFragment for f16/bf16 and
// kTf32FragmentK for TF32. The emitted text steps by these constants.
constexpr int64_t kFragment = 16, kTf32FragmentK = 8;
static_assert(kLdA % 8 == 0 && kLdB % 8 == 0 && kLdC % 4 == 0,
              "wmma ldm: a multiple of 8 halves / 4 floats");
/// Whether every fragment pointer the kernel forms stays 32-byte aligned
/// for inputs of `bytes` per element and a k step of `fragmentK`: A at
/// (i * kFragment) rows and kk columns, B at kk rows and (j * kFragment)
/// columns, C (f32) at (i * kFragment) rows and (j * kFragment) columns.
constexpr bool fragmentsAligned(int64_t bytes, int64_t fragmentK) {
  return (kFragment * kLdA * bytes) % kWmmaAlign == 0 && (fragmentK * bytes) % kWmmaAlign == 0 &&
         (fragmentK * kLdB * bytes) % kWmmaAlign == 0 &&
         (kFragment * bytes) % kWmmaAlign == 0 && (kFragment * kLdC * 4) % kWmmaAlign == 0 &&
         (kFragment * 4) % kWmmaAlign == 0;
}
static_assert(fragmentsAligned(2, kFragment), "f16/bf16 fragments must stay 32-byte aligned");
static_assert(fragmentsAligned(4, kTf32FragmentK), "TF32 fragments must stay 32-byte aligned");

class MatmulEmitter : public KernelEmitter {
public:
  MatmulEmitter(exec::StepOp step, GeneratedKernel &kernel, const CodeGenOptions &options)
      : KernelEmitter(step, kernel), options(options) {}

  void emit() {
    Block &body = step.getBody().front();
    MatMulOp matmul;
    for (Operation &op : body.without_terminator()) {
      if (auto mm = llvm::dyn_cast<MatMulOp>(op)) {
        if (matmul)
          return fail("the region holds two matmuls");
        matmul = mm;
      } else if (llvm::isa<SliceOp>(op) &&
                 llvm::all_of(op.getUsers(), [](Operation *u) { return llvm::isa<exec::YieldOp>(u); })) {
        continue; // a horizontal region's outputs: column ranges of the result
      } else if (!elements.supported(&op)) {
        return;
      }
    }
    if (!matmul)
      return fail("the region holds no matmul");
    auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
    auto lhs = llvm::dyn_cast<BlockArgument>(matmul.getLhs());
    auto rhs = llvm::dyn_cast<BlockArgument>(matmul.getRhs());
    // The right operand may be computed in the region (a weight-only
    // quantised weight's dequantisation): then the tile loads compute it.
    Value rhsValue = matmul.getRhs();
    bool rhsPrologue = !rhs;
    if (!lhs || (rhsPrologue && llvm::cast<RankedTensorType>(rhsValue.getType()).getRank() != 2))
      return fail("a matmul operand is computed inside the region");
    // A splat operand is a literal in the text, not a pointer parameter.
    for (BlockArgument arg : {lhs, rhs})
      if (arg && ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]))
        return fail("a matmul operand is a splat constant");
    auto aType = llvm::cast<RankedTensorType>(lhs.getType());
    auto bType = llvm::cast<RankedTensorType>(rhsValue.getType());
    auto cType = llvm::cast<RankedTensorType>(matmul.getType());
    Type elementA = aType.getElementType(), elementB = bType.getElementType();
    // f16/bf16 on Tensor Cores (wmma, f32 accumulation); f32 on CUDA cores,
    // or on TF32 Tensor Cores when --precision=tf32 allows rounding the
    // inputs to a 10-bit mantissa.
    bool tf32 = options.allowTf32 && elementA.isF32() && elementB.isF32();
    bool tensorCores =
        tf32 || (elementA == elementB && (elementA.isF16() || elementA.isBF16()));
    if (!tensorCores && (!elementA.isF32() || !elementB.isF32()))
      return fail("matmul kernels are generated for f32 (CUDA cores) and f16/bf16 (Tensor "
                  "Cores) with equal operand types");
    std::vector<std::string> params = kernelParameters(step, elements, kernel);
    if (!kernel.reason.empty())
      return;

    bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
    int64_t ra = aType.getRank(), rc = cType.getRank();
    // Over symbolic sizes the kernel takes them as parameters; its tiles
    // and index widths are chosen for the largest sizes of the ranges.
    SmallVector<AffineExpr> cDims = getDimSizes(cType), aDims = getDimSizes(aType);
    auto batchDims = llvm::ArrayRef(cDims).drop_back(2);
    std::optional<KernelSize> mSize = problemSize(cDims[rc - 2], "sizeM"),
                              nSize = problemSize(cDims[rc - 1], "sizeN"),
                              kSize = problemSize(aDims[ta ? ra - 2 : ra - 1], "sizeK"),
                              batchSize = problemSize(productOf(batchDims, step.getContext()),
                                                      "batchCount");
    if (!mSize || !nSize || !kSize || !batchSize)
      return;
    const KernelSize &M = *mSize, &N = *nSize, &K = *kSize, &B = *batchSize;
    const int64_t m = M.largest(), n = N.largest(), k = K.largest(), batches = B.largest();
    // The block tile: 64x64 (256 threads) when that gives enough blocks to
    // fill a GPU, else 32x32 (64 threads) for more, smaller blocks. Tensor
    // Core kernels keep 64x64 (4 warps of 2x2 fragments).
    int64_t tileM = kTileM, tileN = kTileN;
    auto tileCount = [&](int64_t tm, int64_t tn) {
      return batches * ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
    };
    if (!tensorCores && tileCount(kTileM, kTileN) < kFillBlocks)
      tileM = tileN = kSmallTile;
    if (tileCount(tileM, tileN) == 0)
      return fail("the result is empty");
    const CountText tilesM = piecesOf(M, tileM), tilesN = piecesOf(N, tileN);
    const CountText tiles = piecesOf(B, 1) * tilesM * tilesN;

    // The batch index of the result, and where each operand's matrix starts
    // (batch dimensions broadcast NumPy-style against the result's).
    std::vector<std::string> batchLines;
    std::vector<std::string> batchIndex =
        ElementEmitter::decompose(batchDims, "batch", "b", batchLines);
    auto matrixStart = [&](RankedTensorType type) {
      return ElementEmitter::batchOffset(type, batchIndex);
    };
    // Indices within the batch's matrices are 32-bit where all of them fit:
    // 64-bit index arithmetic takes twice the registers, enough to make
    // ptxas spill (at the 64 registers it aims for with nvcc's PTX).
    bool narrow = fitsInt32({m * k, k * n, m * n, m + tileM, n + tileN, k + kTileK});
    std::string I = narrow ? "int" : "long long", L = narrow ? "" : "LL";
    auto narrowed = [&](const std::string &e) { return narrow ? "(int)(" + e + ")" : e; };
    std::string aIndex = ta ? "gk * " + M.text(L) + " + gm" : "gm * " + K.text(L) + " + gk";
    std::string bIndex = tb ? "gn * " + K.text(L) + " + gk" : "gk * " + N.text(L) + " + gn";
    std::string aName = "in" + std::to_string(lhs.getArgNumber());
    std::string bName = rhsPrologue ? "" : "in" + std::to_string(rhs.getArgNumber());
    // The prologue: the right operand's element (gk, gn), computed in the
    // B tile load.
    std::string bValue;
    std::vector<std::string> prologue;
    if (rhsPrologue) {
      bValue = elements.valueAt(rhsValue, tb ? std::vector<std::string>{"gn", "gk"}
                                            : std::vector<std::string>{"gk", "gn"});
      prologue = elements.takeLines();
      if (!kernel.reason.empty())
        return;
    }

    // The outputs: the epilogue's result, or column ranges of it (the
    // slices of a horizontal region, one per sibling).
    Value tail;
    std::vector<std::pair<int64_t, int64_t>> columns;
    for (Value v : yield.getValues()) {
      Value whole = v;
      std::pair<int64_t, int64_t> range{0, -1}; // all columns
      if (auto slice = v.getDefiningOp<SliceOp>()) {
        whole = slice.getInput();
        auto dims = llvm::cast<RankedTensorType>(whole.getType()).getShape();
        auto starts = slice.getStarts(), ends = slice.getEnds(), steps = slice.getSteps();
        for (size_t d = 0; d + 1 < dims.size(); ++d)
          if (starts[d] != 0 || ends[d] != dims[d] || steps[d] != 1)
            return fail("an output slices the result along more than its last dimension");
        if (steps.back() != 1)
          return fail("an output slices the result with a stride");
        range = {starts.back(), ends.back()};
      }
      if (tail && whole != tail)
        return fail("the outputs come from different values");
      tail = whole;
      columns.push_back(range);
    }
    if (llvm::cast<RankedTensorType>(tail.getType()).getShape() != cType.getShape())
      return fail("the epilogue changes the result's shape");

    // The epilogue at result element (batch..., row, col).
    std::vector<std::string> resultIndex = batchIndex;
    resultIndex.push_back("row");
    resultIndex.push_back("col");
    setFlops(kernel, B.getExpr() * M.getExpr() * N.getExpr() * K.getExpr() * 2,
             2.0 * static_cast<double>(batches) * m * n * k);
    kernel.tensorCoreWork = tensorCores && !tf32;
    // f16/bf16 with 16-byte rows: the pipelined mma.sync kernel.
    if (tensorCores && !tf32 && options.minArch >= 80 && !ta && !rhsPrologue && K.dividesBy(8) &&
        (tb || N.dividesBy(8))) {
      MmaProblem problem{M, N, K, B, tb, narrow, aName, bName, matrixStart(aType),
                         matrixStart(bType), *elements.storageType(aType), elementA.isBF16()};
      return emitMmaKernel(problem, params, batchLines, matmul.getResult(), tail, resultIndex,
                           columns, yield);
    }
    // CUDA cores: A's tile [k][m] with rows padded by 2 floats (a warp's
    // stores then hit 32 banks), the results staged in tileC with rows
    // padded by 4 (float4 stores from the accumulators, conflict-free).
    const int64_t ldA = tileM + 2, ldC = tensorCores ? kLdC : tileN + 4;
    // A result narrower than a tile (e.g. 10 classes) on CUDA cores: the
    // tile's rows of B and of the result are each one contiguous run in
    // memory, so B is copied and the result stored in memory order
    // (consecutive threads on consecutive elements) instead of tile column
    // by tile column, which left most of each sector unused.
    const bool narrowN = !tensorCores && N.isStatic() && n < tileN;
    const bool narrowB = narrowN && !tb && !rhsPrologue;
    elements.seed(matmul.getResult(), resultIndex,
                  "tileC[r * " + std::to_string(ldC) + " + c]");
    std::string out = elements.valueAt(tail, resultIndex);
    std::vector<std::string> epilogue = elements.takeLines();
    if (!kernel.reason.empty())
      return;

    std::ostringstream os;
    os << kernelPrelude();
    if (!tensorCores) // kiln_load_vec, kiln_store_vec
      os << ::kiln::codegen::devicePrelude();
    os << "\n// Generated by kiln: " << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    std::string elem = tensorCores && !tf32 ? *elements.storageType(aType) : "float";
    // The wmma fragment's element type and depth: 16x16x16 for f16/bf16,
    // 16x16x8 for TF32 (two steps per 16-deep slice).
    std::string fragmentType = tf32 ? "wmma::precision::tf32" : elem;
    int64_t fragmentK = tf32 ? kTf32FragmentK : kFragment;
    unsigned threads =
        tensorCores ? kTensorCoreThreads : static_cast<unsigned>(tileM / 4 * (tileN / 4));
    os << "// C[" << M.describe() << "x" << N.describe() << "] = A" << (ta ? "^T" : "") << " B"
       << (tb ? "^T" : "") << " over K=" << K.describe() << ", " << B.describe()
       << " batch(es): " << tileM << "x" << tileN
       << " tiles per block, 16-deep\n";
    if (rhsPrologue)
      os << "// B is computed as its tiles load (" << describePrologue(rhsValue)
         << "): a weight-only\n// quantised weight stays narrow in memory.\n";
    if (tensorCores)
      os << "// slices of A and B in shared memory; 4 warps, each 2x2 wmma 16x16x16 fragments\n"
         << "// (f32 accumulation)";
    else
      os << "// slices of A and B in shared memory, 4x4 results per thread";
    os << "; the results go through shared\n// memory to the epilogue, one element per thread "
          "(coalesced reads and stores).\n";
    os << "extern \"C\" __global__ void " << tiledLaunchBounds(threads) << "\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n";
    declareSizes(os, {&M, &N, &K}, I, B);
    if (tensorCores)
      os << "  using namespace nvcuda;\n"
         << "  // wmma loads and stores need 32-byte aligned tiles.\n"
         << "  KILN_SHARED_ALIGNED(" << elem << ", tileA, " << tileM * kLdA << ", " << kWmmaAlign
         << "); // [m][k], padded\n"
         << "  KILN_SHARED_ALIGNED(" << elem << ", tileB, " << kTileK * kLdB << ", " << kWmmaAlign
         << "); // [k][n], padded\n"
         << "  KILN_SHARED_ALIGNED(float, tileC, " << tileM * kLdC << ", " << kWmmaAlign
         << "); // the block's results\n"
         << "  const int warp = threadIdx.x / 32, wm = warp / 2 * 32, wn = warp % 2 * 32;\n";
    else
      os << "  KILN_SHARED(float, tileA, " << kTileK * ldA << "); // [k][m], padded\n"
         << "  KILN_SHARED_ALIGNED(float, tileB, " << kTileK * tileN << ", 16); // [k][n]\n"
         << "  KILN_SHARED_ALIGNED(float, tileC, " << tileM * ldC
         << ", 16); // the block's results, padded\n"
         << "  const int tx = threadIdx.x % " << tileN / 4 << ", ty = threadIdx.x / " << tileN / 4
         << ";\n";
    if (narrowB)
      os << "  // B's tile columns past " << n << " are never loaded: zeros, once.\n"
         << "  for (int e = threadIdx.x; e < " << kTileK * tileN << "; e += " << threads << ")\n"
         << "    if (e % " << tileN << " >= " << n << ")\n"
         << "      tileB[e] = 0.0f;\n";
    emitTileIndices(os, tiles, tilesM, tilesN, tileM, tileN, narrowed, I, L);
    for (const std::string &line : batchLines)
      os << "    " << line << "\n";
    std::string zero = tensorCores && !tf32 ? ElementEmitter::store(aType, "0.0f") : "0.0f";
    os << "    const " << elem << " *a = " << aName << " + " << matrixStart(aType) << ";\n";
    if (!rhsPrologue)
      os << "    const " << elem << " *b = " << bName << " + " << matrixStart(bType) << ";\n";
    if (tensorCores)
      os << "    wmma::fragment<wmma::accumulator, " << kFragment << ", " << kFragment << ", " << fragmentK << ", float> acc[2][2];\n"
         << "    for (int i = 0; i < 2; ++i)\n"
         << "      for (int j = 0; j < 2; ++j)\n"
         << "        wmma::fill_fragment(acc[i][j], 0.0f);\n";
    else
      os << "    float acc[4][4] = {};\n";
    os << "    for (" << I << " k0 = 0; k0 < " << K.text(L) << "; k0 += " << kTileK << ") {\n"
       << "      for (int e = threadIdx.x; e < " << tileM * kTileK << "; e += " << threads
       << ") {\n"
       << "        const " << I << " gm = m0 + e / " << kTileK << ", gk = k0 + e % " << kTileK
       << ";\n"
       << "        tileA[" << (tensorCores ? "(e / " + std::to_string(kTileK) + ") * " + std::to_string(kLdA) + " + e % " + std::to_string(kTileK)
                                        : "(e % " + std::to_string(kTileK) + ") * " + std::to_string(ldA) + " + e / " + std::to_string(kTileK))
       << "] = (gm < " << M.text(L) << " && gk < " << K.text(L) << ") ? a[" << aIndex << "] : "
       << zero
       << ";\n"
       << "      }\n";
    if (narrowB) // the slice's rows of B, contiguous: copied in memory order
      os << "      for (int e = threadIdx.x; e < " << kTileK * n << "; e += " << threads
         << ") {\n"
         << "        const " << I << " gk = k0 + e / " << n << ", gn = e % " << n << ";\n";
    else
      os << "      for (int e = threadIdx.x; e < " << kTileK * tileN << "; e += " << threads
         << ") {\n"
         << "        const " << I << " gk = k0 + e / " << tileN << ", gn = n0 + e % " << tileN
         << ";\n";
    std::string tileBAt = tensorCores ? "(e / " + std::to_string(tileN) + ") * " +
                                            std::to_string(kLdB) + " + e % " + std::to_string(tileN)
                          : narrowB ? "(e / " + std::to_string(n) + ") * " +
                                          std::to_string(tileN) + " + e % " + std::to_string(n)
                                    : std::string("e");
    if (rhsPrologue) {
      // Dequantised as loaded: the weight stays narrow in memory.
      os << "        " << elem << " dequantized = " << zero << ";\n"
         << "        if (gk < " << K.text(L) << " && gn < " << N.text(L) << ") {\n";
      for (const std::string &line : prologue)
        os << "          " << line << "\n";
      os << "          dequantized = "
         << (tensorCores && !tf32 ? ElementEmitter::store(bType, bValue) : bValue) << ";\n"
         << "        }\n"
         << "        tileB[" << tileBAt << "] = dequantized;\n";
    } else {
      os << "        tileB[" << tileBAt << "] = (gk < " << K.text(L) << " && gn < " << N.text(L)
         << ") ? b[" << bIndex << "] : " << zero << ";\n";
    }
    os << "      }\n"
       << "      __syncthreads();\n";
    if (tensorCores)
      os << "      for (int kk = 0; kk < " << kTileK << "; kk += " << fragmentK << ")\n"
         << "        for (int i = 0; i < 2; ++i) {\n"
         << "          wmma::fragment<wmma::matrix_a, " << kFragment << ", " << kFragment << ", " << fragmentK << ", " << fragmentType
         << ", wmma::row_major> fa;\n"
         << "          wmma::load_matrix_sync(fa, tileA + (wm + i * " << kFragment << ") * " << kLdA << " + kk, "
         << kLdA << ");\n"
         << (tf32 ? "          for (int t = 0; t < fa.num_elements; ++t)\n"
                    "            fa.x[t] = wmma::__float_to_tf32(fa.x[t]);\n"
                  : "")
         << "          for (int j = 0; j < 2; ++j) {\n"
         << "            wmma::fragment<wmma::matrix_b, " << kFragment << ", " << kFragment << ", " << fragmentK << ", "
         << fragmentType << ", wmma::row_major> fb;\n"
         << "            wmma::load_matrix_sync(fb, tileB + kk * " << kLdB << " + wn + j * " << kFragment << ", "
         << kLdB << ");\n"
         << (tf32 ? "            for (int t = 0; t < fb.num_elements; ++t)\n"
                    "              fb.x[t] = wmma::__float_to_tf32(fb.x[t]);\n"
                  : "")
         << "            wmma::mma_sync(acc[i][j], fa, fb, acc[i][j]);\n"
         << "          }\n"
         << "        }\n";
    else
      os << "      for (int kk = 0; kk < " << kTileK << "; ++kk) {\n"
         << "        float av[4];\n"
         << "        for (int i = 0; i < 4; ++i)\n"
         << "          av[i] = tileA[kk * " << ldA << " + ty * 4 + i];\n"
         << "        const float4 b4 = kiln_load_vec<float4>(tileB + kk * " << tileN
         << " + tx * 4);\n"
         << "        const float bv[4] = {b4.x, b4.y, b4.z, b4.w};\n"
         << "        for (int i = 0; i < 4; ++i)\n"
         << "          for (int j = 0; j < 4; ++j)\n"
         << "            acc[i][j] += av[i] * bv[j];\n"
         << "      }\n";
    os << "      __syncthreads();\n"
       << "    }\n";
    if (tensorCores)
      os << "    for (int i = 0; i < 2; ++i)\n"
         << "      for (int j = 0; j < 2; ++j)\n"
         << "        wmma::store_matrix_sync(tileC + (wm + i * " << kFragment << ") * " << kLdC << " + wn + j * " << kFragment << ", "
         << "acc[i][j], " << kLdC << ", wmma::mem_row_major);\n";
    else
      os << "    for (int i = 0; i < 4; ++i)\n"
         << "      kiln_store_vec(tileC + (ty * 4 + i) * " << ldC
         << " + tx * 4, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));\n";
    // The epilogue walks the tile's results in memory order: whole tile
    // rows, or for a narrow result only its n columns.
    const int64_t epilogueCols = narrowN ? n : tileN;
    os << "    __syncthreads();\n"
       << "    for (int e = threadIdx.x; e < " << tileM * epilogueCols << "; e += " << threads
       << ") {\n"
       << "      const int r = e / " << epilogueCols << ", c = e % " << epilogueCols << ";\n"
       << "      {\n"
       << "        const " << I << " row = m0 + r, col = n0 + c;\n"
       << "        if (row >= " << M.text(L) << " || col >= " << N.text(L) << ")\n"
       << "          continue;\n";
    for (const std::string &line : epilogue)
      os << "        " << line << "\n";
    writeOutputs(os, "        ", out, columns, yield, M, N, L);
    os << "      }\n"
       << "    }\n    __syncthreads(); // the next tile overwrites tileC\n"
       << "  }\n}\n";
    kernel.source = ElementEmitter::includesFor(step) +
                    (tensorCores ? std::string("#include <mma.h>\n") : std::string()) + os.str();
    kernel.blockThreads = threads;
    setTileGrid(B, M, N, tileM, tileN);
    kernel.unit = tf32          ? "Tensor Cores (wmma 16x16x8 TF32, f32 accumulate, tile 64x64x16)"
                  : tensorCores ? "Tensor Cores (wmma 16x16x16, f32 accumulate, tile 64x64x16)"
                              : "CUDA cores (tile " + std::to_string(tileM) + "x" +
                                    std::to_string(tileN) + "x16, 4x4 per thread)";
  }

private:
  struct MmaProblem {
    KernelSize m, n, k, batches;
    bool tb, narrow;
    std::string aName, bName, aStart, bStart, elem;
    bool bf16;
  };

  /// The Tensor Core kernel: block tiles of 128x256 (8 warps of 64x64, one
  /// block an SM; sm_90 code only) or 128x128 (8 warps of 64x32, two blocks
  /// an SM; 64 deep for sm_90 code, 32 where sm_8x must run it), whichever
  /// first fills the GPU, else 64x64x32 (4 warps of 32x32).
  /// A and B stream through a multi-stage cp.async pipeline in dynamic
  /// shared memory (enough slices in flight to cover a DRAM round trip: two
  /// stages left an H200 waiting on loads at 0.18 of its Tensor Core rate;
  /// --mma-pipeline overrides the depth, stages, blocks an SM and the
  /// large tile's width) in 16-byte copies, rows padded by 8 elements so
  /// that neither the copies nor ldmatrix conflict; each warp loads
  /// fragments with ldmatrix (at one block an SM, the next 16-deep step's
  /// during this step's mma.sync) and accumulates with mma.sync m16n8k16 in
  /// f32 registers. The epilogue passes the
  /// accumulators through shared memory (one row of warps at a time)
  /// so that it runs one element per thread with consecutive threads on
  /// consecutive columns: its reads (bias, residual) and the stores are
  /// coalesced for any output type.
  void emitMmaKernel(const MmaProblem &p, const std::vector<std::string> &params,
                     const std::vector<std::string> &batchLines, Value product, Value tail,
                     const std::vector<std::string> &resultIndex,
                     const std::vector<std::pair<int64_t, int64_t>> &columns,
                     exec::YieldOp yield) {
    struct Config {
      int64_t bm, bn, bk, warpsM, warpsN, stages, blocksPerSM;
    };
    // Measured on an H200 (f16 4096^3 with a bias and ReLU, docs/gpu-results.md):
    // 128x256 tiles of 64x64 warp tiles, 64-deep slices, 3 stages, one
    // block an SM ran in 403 us with the fragments of the next step loaded
    // during this step's mma.sync and no bounds checks on whole tiles,
    // against 494-522 us for 128x128 tiles and two blocks an SM (warp tiles
    // of 64x32 load 33% more fragments per mma.sync) and 580-650 us for
    // 32-deep slices. Its 153-162 KiB do not fit sm_86/sm_89 (99 KiB), and
    // 32-deep 128x256 tiles (606 us) were no faster than 128x128 tiles with
    // 4 stages (604 us): code that must run there takes the latter. Where
    // wide tiles would not fill the GPU, 128x128 tiles, then 64x64.
    const int64_t sharedLimit = ::kiln::rt::maxSharedBytes(options.minArch);
    const Config wide{128, 256, options.minArch >= 90 ? 64 : 32, 2, 4, 3, 1};
    const Config large = options.minArch >= 90 ? Config{128, 128, 64, 2, 4, 3, 2}
                                               : Config{128, 128, 32, 2, 4, 4, 2};
    const Config small{64, 64, 32, 2, 2, 3, 1};
    auto tileCount = [&](const Config &c) { // at the largest sizes
      return p.batches.largest() * ((p.m.largest() + c.bm - 1) / c.bm) *
             ((p.n.largest() + c.bn - 1) / c.bn);
    };
    // --mma-pipeline's width picks the large tile (a tuning aid).
    std::vector<Config> candidates = {large};
    if (options.minArch >= 90)
      candidates = {wide, large};
    if (options.mmaTileN)
      candidates = {options.mmaTileN == 256 ? wide : large};
    Config cfg = small;
    for (const Config &c : llvm::reverse(candidates))
      if (tileCount(c) >= kFillBlocks)
        cfg = c;
    if (options.mmaStages)
      cfg.stages = options.mmaStages;
    if (options.mmaBlocksPerSM)
      cfg.blocksPerSM = options.mmaBlocksPerSM;
    const int64_t bk = options.mmaSliceK ? options.mmaSliceK : cfg.bk, pad = kTilePad;
    const int64_t steps = bk / 16; // mma.sync k16 steps a slice
    // Fragments of the next step are loaded during this step's mma.sync
    // where registers allow (one block an SM: 255 a thread); bounded for two
    // blocks (128), the second set would spill, and 16 warps an SM hide the
    // loads' latency well enough (494 us against 522 with two sets).
    const int64_t sets = cfg.blocksPerSM == 1 ? 2 : 1;
    // The next slice's first fragments go to set steps % 2, which its
    // step 0 reads as set 0: an even number of steps (K 32 or 64).
    assert((sets == 1 || steps % 2 == 0) && "two fragment sets need an even step count");
    const int64_t warpM = cfg.bm / cfg.warpsM, warpN = cfg.bn / cfg.warpsN;
    const int64_t fragsM = warpM / 16, fragsN = warpN / 8;
    const unsigned threads = static_cast<unsigned>(cfg.warpsM * cfg.warpsN * 32);
    const int64_t ldA = bk + pad;                       // tileA: [m][k]
    const int64_t ldB = p.tb ? bk + pad : cfg.bn + pad; // tileB: [n][k] or [k][n]
    const int64_t stageA = cfg.bm * ldA, stageB = p.tb ? cfg.bn * ldB : bk * ldB;
    // The epilogue's staging tile: half the rows (one row of warps) in f32,
    // rows padded by 8 floats (8-byte accumulator pairs do not conflict).
    const int64_t stageRows = warpM, ldS = cfg.bn + 8;
    // The pipeline's stages, then the epilogue's staging tile in the same
    // memory: the block needs the larger.
    const int64_t pipelineBytes = cfg.stages * (stageA + stageB) * 2;
    const int64_t sharedBytes = std::max(pipelineBytes, stageRows * ldS * 4);
    if (sharedBytes > sharedLimit)
      return fail("the Tensor Core pipeline (" + std::to_string(cfg.stages) + " stages of " +
                  std::to_string(bk) + "-deep slices) needs " + std::to_string(sharedBytes) +
                  " bytes of shared memory, more than a block may have on sm_" +
                  std::to_string(options.minArch));
    const CountText tilesM = piecesOf(p.m, cfg.bm), tilesN = piecesOf(p.n, cfg.bn);
    const CountText tiles = piecesOf(p.batches, 1) * tilesM * tilesN;
    std::string I = p.narrow ? "int" : "long long", L = p.narrow ? "" : "LL";
    auto narrowed = [&](const std::string &e) { return p.narrow ? "(int)(" + e + ")" : e; };
    std::string M = p.m.text(L), N = p.n.text(L), K = p.k.text(L);

    elements.seed(product, resultIndex, "staged[r * " + std::to_string(ldS) + " + c]");
    std::string out = elements.valueAt(tail, resultIndex);
    std::vector<std::string> epilogue = elements.takeLines();
    if (!kernel.reason.empty())
      return;

    std::ostringstream os;
    os << kernelPrelude() << ::kiln::codegen::devicePrelude() << "\n// Generated by kiln: "
       << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    os << "// C[" << p.m.describe() << "x" << p.n.describe() << "] = A B" << (p.tb ? "^T" : "")
       << " over K=" << p.k.describe() << ", " << p.batches.describe() << " batch(es), " << p.elem
       << " on Tensor Cores:\n"
       << "// " << cfg.bm << "x" << cfg.bn << "x" << bk << " block tiles, " << cfg.warpsM << "x"
       << cfg.warpsN << " warps of " << warpM << "x" << warpN << " (" << fragsM << "x" << fragsN
       << " mma.sync m16n8k16, f32 accumulators),\n"
       << "// A and B through a " << cfg.stages
       << "-stage cp.async pipeline; the epilogue runs one element per thread\n"
       << "// on accumulators staged through shared memory, " << stageRows
       << " rows at a time.\n";
    std::string mma = p.bf16 ? "kiln_mma_m16n8k16_bf16" : "kiln_mma_m16n8k16_f16";
    os << "extern \"C\" __global__ void __launch_bounds__(" << threads << ", " << cfg.blocksPerSM
       << ")\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n";
    declareSizes(os, {&p.m, &p.n, &p.k}, I, p.batches);
    os << "  // " << cfg.stages << " stages of A [" << cfg.bm << "][" << ldA << "] and B "
       << (p.tb ? "[" + std::to_string(cfg.bn) + "][" + std::to_string(ldB) + "]"
                : "[" + std::to_string(bk) + "][" + std::to_string(ldB) + "]")
       << "; the epilogue reuses them.\n"
       << "  // One array, so the epilogue's staging tile may span both: " << sharedBytes
       << " bytes\n"
       << "  // of dynamic shared memory.\n"
       << "  KILN_DYNAMIC_SHARED(" << p.elem << ", pipeline);\n"
       << "  " << p.elem << " *const tileA = pipeline, *const tileB = pipeline + "
       << cfg.stages * stageA << ";\n"
       << "  float *const staged = reinterpret_cast<float *>(pipeline); // [" << stageRows
       << "][" << ldS << "], after the main loop\n"
       << "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
       << "  const int wm = warp / " << cfg.warpsN << " * " << warpM << ", wn = warp % "
       << cfg.warpsN << " * " << warpN << ";\n";
    emitTileIndices(os, tiles, tilesM, tilesN, cfg.bm, cfg.bn, narrowed, I, L);
    for (const std::string &line : batchLines)
      os << "    " << line << "\n";
    os << "    const " << p.elem << " *a = " << p.aName << " + " << p.aStart << ";\n"
       << "    const " << p.elem << " *b = " << p.bName << " + " << p.bStart << ";\n";
    // A k-slice into a stage: 16-byte chunks by cp.async, zeros past the
    // matrix (emitTileCopy says how the lanes avoid bank conflicts).
    auto slice = [&](const std::string &tile, int64_t stageElems, const std::string &matrix,
                     const std::string &r0, const std::string &c0, int64_t rows, int64_t cols,
                     const KernelSize &limitR, const KernelSize &limitC, const KernelSize &ld) {
      TileCopy copy{tile + " + stage * " + std::to_string(stageElems),
                    matrix, r0, c0, rows, cols, limitR.text(L), limitC.text(L), ld.text(L),
                    p.elem, I, threads};
      copy.whole = limitR.dividesBy(rows) && limitC.dividesBy(cols);
      emitTileCopy(os, copy, "      ");
    };
    os << "    // Copies k-slice [k0, k0 + " << bk << ") of A and B into stage `stage`.\n"
       << "    auto loadSlice = [&](int stage, " << I << " k0) {\n";
    slice("tileA", stageA, "a", "m0", "k0", cfg.bm, bk, p.m, p.k, p.k);
    if (p.tb)
      slice("tileB", stageB, "b", "n0", "k0", cfg.bn, bk, p.n, p.k, p.k);
    else
      slice("tileB", stageB, "b", "k0", "n0", bk, cfg.bn, p.k, p.n, p.n);
    os << "    };\n"
       << "    float acc[" << fragsM << "][" << fragsN << "][4] = {};\n"
       << "    const " << I << " slices = "
       << (p.k.isStatic() ? std::to_string((p.k.largest() + bk - 1) / bk) + L
                          : piecesOf(p.k, bk).text())
       << ";\n"
       << "    // Fragments of A and B for a 16-deep step"
       << (sets == 2 ? ", in two sets: the next\n    // step's load from shared memory while "
                       "this step's mma.sync run.\n"
                     : ".\n")
       << "    unsigned af[" << sets << "][" << fragsM << "][4], bf[" << sets << "][" << fragsN
       << "][2];\n"
       << "    auto loadFragments = [&](int set, const " << p.elem << " *sa, const " << p.elem
       << " *sb, int kk) {\n"
       << "      #pragma unroll // registers, not local memory\n"
       << "      for (int i = 0; i < " << fragsM << "; ++i)\n"
       << "        kiln_ldmatrix_x4(af[set][i], sa + (wm + i * 16 + lane % 16) * " << ldA
       << " + kk + lane / 16 * 8);\n"
       << "      #pragma unroll\n"
       << "      for (int j = 0; j < " << fragsN << "; j += 2) { // two n8 fragments a load\n"
       << "        unsigned r[4];\n";
    os << "        " << ldmatrixBPair("sb", ldB, p.tb, "kk", "wn + j * 8") << "\n";
    os << "        bf[set][j][0] = r[0];\n"
       << "        bf[set][j][1] = r[1];\n"
       << "        bf[set][j + 1][0] = r[2];\n"
       << "        bf[set][j + 1][1] = r[3];\n"
       << "      }\n"
       << "    };\n"
       << "    // Every stage in flight, then wait for the first.\n"
       << "    for (int s = 0; s < " << cfg.stages << "; ++s) {\n"
       << "      if (s < slices)\n"
       << "        loadSlice(s, s * " << bk << L << ");\n"
       << "      kiln_cp_async_commit();\n"
       << "    }\n"
       << "    kiln_cp_async_wait<" << cfg.stages - 1 << ">();\n"
       << "    __syncthreads();\n";
    if (sets == 2)
      os << "    loadFragments(0, tileA, tileB, 0);\n";
    // After a slice's last fragments are loaded: the next slice has landed
    // for every thread and every warp has read this slice's stage, which
    // takes the slice `stages` ahead.
    std::string refill =
        "kiln_cp_async_wait<" + std::to_string(cfg.stages - 2) + ">();\n" +
        "__syncthreads();\n" + "if (slice + " + std::to_string(cfg.stages) + " < slices)\n" +
        "  loadSlice(slice % " + std::to_string(cfg.stages) + ", (slice + " +
        std::to_string(cfg.stages) + ") * " + std::to_string(bk) + L + ");\n" +
        "kiln_cp_async_commit();\n";
    auto indented = [](const std::string &text, const std::string &indent) {
      std::string out;
      for (llvm::StringRef line : llvm::split(llvm::StringRef(text).rtrim('\n'), '\n'))
        out += indent + line.str() + "\n";
      return out;
    };
    os << "    for (" << I << " slice = 0; slice < slices; ++slice) {\n"
       << "      const " << p.elem << " *sa = tileA + slice % " << cfg.stages << " * " << stageA
       << ";\n"
       << "      const " << p.elem << " *sb = tileB + slice % " << cfg.stages << " * " << stageB
       << ";\n"
       << "      #pragma unroll" << (sets == 2 ? " // the fragment sets by constant index" : "")
       << "\n"
       << "      for (int step = 0; step < " << steps << "; ++step) {\n";
    if (sets == 2)
      os << "        if (step + 1 < " << steps << ") {\n"
         << "          loadFragments((step + 1) % 2, sa, sb, (step + 1) * 16);\n"
         << "        } else { // this slice read: refill its stage, then the next slice's\n"
         << indented(refill, "          ") << "          if (slice + 1 < slices)\n"
         << "            loadFragments((step + 1) % 2, tileA + (slice + 1) % " << cfg.stages
         << " * " << stageA << ", tileB + (slice + 1) % " << cfg.stages << " * " << stageB
         << ", 0);\n"
         << "        }\n";
    else
      os << "        loadFragments(0, sa, sb, step * 16);\n";
    os << "        #pragma unroll\n"
       << "        for (int i = 0; i < " << fragsM << "; ++i)\n"
       << "          #pragma unroll\n"
       << "          for (int j = 0; j < " << fragsN << "; ++j)\n"
       << "            " << mma << "(acc[i][j], af[" << (sets == 2 ? "step % 2" : "0")
       << "][i], bf[" << (sets == 2 ? "step % 2" : "0") << "][j]);\n";
    if (sets == 1)
      os << "        if (step + 1 == " << steps << ") { // this slice read: refill its stage\n"
         << indented(refill, "          ") << "        }\n";
    os << "      }\n"
       << "    }\n"
       << "    kiln_cp_async_wait<0>();\n"
       << "    // The epilogue, one row of warps at a time: accumulators to shared\n"
       << "    // memory, then one element per thread.\n"
       << "    for (int half = 0; half < " << cfg.warpsM << "; ++half) {\n"
       << "      __syncthreads(); // the pipeline (or the previous half) is done with it\n"
       << "      if (wm == half * " << warpM << ")\n"
       << "        for (int i = 0; i < " << fragsM << "; ++i)\n"
       << "          for (int j = 0; j < " << fragsN << "; ++j)\n"
       << "            for (int h = 0; h < 2; ++h) {\n"
       << "              const int r = i * 16 + lane / 4 + h * 8, c = wn + j * 8 + lane % 4 * 2;\n"
       << "              kiln_store_vec(staged + r * " << ldS
       << " + c, kiln_pair<float>{acc[i][j][2 * h], acc[i][j][2 * h + 1]});\n"
       << "            }\n"
       << "      __syncthreads();\n"
       << "      for (int e = threadIdx.x; e < " << stageRows * cfg.bn << "; e += " << threads
       << ") {\n"
       << "        const int r = e / " << cfg.bn << ", c = e % " << cfg.bn << ";\n"
       << "        const " << I << " row = m0 + half * " << warpM << " + r, col = n0 + c;\n"
       << "        if (row >= " << M << " || col >= " << N << ")\n"
       << "          continue;\n";
    for (const std::string &line : epilogue)
      os << "        " << line << "\n";
    writeOutputs(os, "        ", out, columns, yield, p.m, p.n, L);
    os << "      }\n"
       << "    }\n"
       << "    __syncthreads(); // the next tile's pipeline overwrites the staging tile\n"
       << "  }\n}\n";
    kernel.source = ElementEmitter::includesFor(step) + os.str();
    kernel.blockThreads = threads;
    setTileGrid(p.batches, p.m, p.n, cfg.bm, cfg.bn);
    kernel.dynamicSharedBytes = static_cast<unsigned>(sharedBytes);
    kernel.unit = "Tensor Cores (mma.sync m16n8k16, f32 accumulate, tile " +
                  std::to_string(cfg.bm) + "x" + std::to_string(cfg.bn) + "x" +
                  std::to_string(bk) + ", " + std::to_string(cfg.stages) +
                  "-stage cp.async pipeline)";
  }

  /// The store of result `out` at (batch, row, col) of the m x n result:
  /// the whole result, or each output's column range (static sizes only:
  /// horizontal regions are).
  void writeOutputs(std::ostringstream &os, const std::string &indent, const std::string &out,
                    const std::vector<std::pair<int64_t, int64_t>> &columns, exec::YieldOp yield,
                    const KernelSize &m, const KernelSize &n, const std::string &L) {
    bool whole = columns.size() == 1 &&
                 (columns[0].second < 0 ||
                  (n.isStatic() && columns[0] == std::pair(int64_t(0), n.largest())));
    if (whole) {
      std::string matrix = m.isStatic() && n.isStatic()
                               ? std::to_string(m.largest() * n.largest()) + "LL"
                               : "((long long)" + m.text() + " * " + n.text() + ")";
      os << indent << "out0[batch * " << matrix << " + row * " << n.text(L) << " + col] = "
         << ElementEmitter::store(yield.getValues().front().getType(), out) << ";\n";
      return;
    }
    if (!m.isStatic() || !n.isStatic()) // (horizontal regions form over static sizes only)
      return fail("the outputs are column ranges of a result of symbolic size");
    os << indent << "const float result = " << out << ";\n";
    for (auto [k, range] : llvm::enumerate(columns)) {
      auto [first, last] = range.second < 0 ? std::pair(int64_t(0), n.largest()) : range;
      int64_t width = last - first;
      os << indent << "if (col >= " << first << "LL && col < " << last << "LL)\n"
         << indent << "  out" << k << "[batch * " << m.largest() * width << "LL + row * " << width
         << L << " + col - " << first << L << "] = "
         << ElementEmitter::store(yield.getValues()[k].getType(), "result") << ";\n";
    }
  }

  /// The grid-stride loop over the result's tiles, with the tile's batch
  /// and its first row m0 and column n0.
  template <typename Narrowed>
  void emitTileIndices(std::ostringstream &os, const CountText &tiles, const CountText &tilesM,
                       const CountText &tilesN, int64_t tileM, int64_t tileN, Narrowed narrowed,
                       const std::string &I, const std::string &L) {
    os << "  for (long long tile = blockIdx.x; tile < " << tiles.text()
       << "; tile += gridDim.x) {\n"
       << "    const long long batch = tile / " << (tilesM * tilesN).text() << ";\n"
       << "    const " << I << " m0 = "
       << narrowed("(tile / " + tilesN.text() + ") % " + tilesM.text()) << " * " << tileM << L
       << ", n0 = " << narrowed("tile % " + tilesN.text()) << " * " << tileN << L << ";\n";
  }

  /// A block per tile of the batches' m x n results.
  void setTileGrid(const KernelSize &batches, const KernelSize &m, const KernelSize &n,
                   int64_t tileM, int64_t tileN) {
    setGrid(kernel, batches.getExpr() * m.getExpr().ceilDiv(tileM) * n.getExpr().ceilDiv(tileN),
            1);
  }

  /// "cast+mul": the region's ops that compute `value`, in program order.
  std::string describePrologue(Value value) {
    std::vector<std::string> names;
    for (Operation &op : step.getBody().front().without_terminator()) {
      if (&op == value.getDefiningOp()) {
        names.push_back(op.getName().stripDialect().str());
        break;
      }
      names.push_back(op.getName().stripDialect().str());
    }
    return llvm::join(names, "+");
  }

  const CodeGenOptions &options;
};

} // namespace

void mlir::kiln::emitMatmulKernel(exec::StepOp step, GeneratedKernel &kernel,
                                  const CodeGenOptions &options) {
  MatmulEmitter(step, kernel, options).emit();
  discardIfFailed(kernel);
}
