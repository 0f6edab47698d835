//===- ReductionKernelEmitter.cpp - row-wise reductions as one kernel -----===//
//
// Regions whose reduction runs over the trailing dimensions: softmax,
// log_softmax and layer_norm over the last axes, reduce_sum/mean/max/min/
// prod over trailing axes, and global_avg_pool. Rows of up to 1024
// elements get a warp each (8 rows per block, reductions by shuffles, the
// block's row results stored together); longer rows get a block each (warp
// shuffles, then a 32-float shared scratch). Softmax and layer norm keep
// each thread's elements of the row in registers between their passes, so
// the input is read once (rows of up to 32 elements per thread; longer ones
// recompute the elementwise prologue from the inputs in each pass). Softmax
// subtracts the row maximum and layer norm makes a second pass for the
// variance, so both are numerically stable. The epilogue runs on the
// result before the store.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/IR/KilnTypes.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kThreads = 256;
/// Rows up to this long get a warp each.
constexpr int64_t kWarpRowLimit = 1024;
/// A thread keeps at most this many elements of a row in registers.
constexpr int64_t kMaxCached = 32;
/// Rows of a block staging its short rows in shared memory (4 a warp).
constexpr int64_t kStagedRows = 32;
/// Shared memory for inputs that are one row for every row.
constexpr int64_t kRowVectorBytes = 16 * 1024;


/// `pattern` with every X replaced by `x`.
std::string substitute(std::string pattern, const std::string &x) {
  for (size_t at = pattern.find('X'); at != std::string::npos; at = pattern.find('X', at + x.size()))
    pattern.replace(at, 1, x);
  return pattern;
}

class ReductionEmitter : public KernelEmitter {
public:
  /// `rowLimit`: the longest row this kernel serves, when shorter than the
  /// symbols' ranges allow (a size class); 0 for every row.
  ReductionEmitter(exec::StepOp step, GeneratedKernel &kernel, int64_t rowLimit = 0)
      : KernelEmitter(step, kernel), rowLimit(rowLimit) {}

  /// The bounds of the row's length, from the symbols' ranges (after emit).
  std::optional<std::pair<int64_t, int64_t>> rowLengths;
  AffineExpr rowLength;

  void emit() {
    Block &body = step.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (isAnchor(&op)) {
        if (anchor)
          return fail("the region holds two reductions");
        anchor = &op;
      } else if (!elements.supported(&op)) {
        return;
      }
    }
    if (!anchor)
      return fail("the region holds no reduction");
    auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
    if (yield.getValues().size() != 1)
      return fail("the region has several outputs");
    Value output = yield.getValues().front();

    auto inType = llvm::cast<RankedTensorType>(anchor->getOperand(0).getType());
    Type inElement = inType.getElementType();
    if (!inElement.isF32() && !inElement.isF16() && !inElement.isBF16())
      return fail("reductions are generated for f32, f16 and bf16 (computed in f32)");
    shape = getDimSizes(inType);
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t first = firstReducedDim(rank);
    if (first < 0)
      return;
    // Rows and columns may be symbolic (the kernel takes the sizes): its
    // shape is then chosen once for the longest row of the symbols' ranges.
    MLIRContext *context = step.getContext();
    AffineExpr rowSize = productOf(llvm::ArrayRef(shape).take_front(first), context);
    AffineExpr colSize = productOf(llvm::ArrayRef(shape).drop_front(first), context);
    auto rowBounds = sizeBounds(rowSize), colBounds = sizeBounds(colSize);
    if (!rowBounds || !colBounds)
      return;
    // (Each at most 2^40 elements, as every size is: no overflow below.)
    rowLengths = colBounds;
    rowLength = colSize;
    const int64_t mostRows = rowBounds->second;
    const int64_t colsBound =
        rowLimit > 0 ? std::min(rowLimit, colBounds->second) : colBounds->second;
    if (mostRows == 0 || colsBound == 0)
      return fail("the tensor is empty");
    if (colBounds->first <= 0)
      return fail("a row may be empty (its size's range starts at 0)");
    if (mostRows > (int64_t(1) << 40) || colsBound > (int64_t(1) << 40))
      return fail("a size may exceed 2^40");
    const std::string rows = sizeText(rowSize), cols = sizeText(colSize);

    std::vector<std::string> params = kernelParameters(step, elements, kernel);
    if (!kernel.reason.empty())
      return;

    // Indices: the row's leading dimensions and the column's trailing ones.
    std::vector<std::string> rowLines, colLines;
    std::vector<std::string> rowIndex = ElementEmitter::decompose(
        llvm::ArrayRef(shape).take_front(first), "row", "r", rowLines);
    std::vector<std::string> fullIndex = rowIndex;
    for (const std::string &c : ElementEmitter::decompose(
             llvm::ArrayRef(shape).drop_front(first), "col", "c", colLines))
      fullIndex.push_back(c);

    Value input = anchor->getOperand(0);
    // Float inputs that are one row for every row, loaded once a block into
    // shared memory (chosen below).
    std::vector<BlockArgument> rowVectors;
    // Reads of those inputs at an element come from shared memory (after
    // every takeLines, which forgets seeds).
    auto seedRowVectors = [&] {
      for (BlockArgument arg : rowVectors)
        elements.seed(arg, ElementEmitter::broadcastIndex(arg, fullIndex),
                      "rowVector" + std::to_string(arg.getArgNumber()) + "[col]");
    };
    auto element = [&](std::vector<std::string> &lines) {
      seedRowVectors();
      lines.insert(lines.end(), colLines.begin(), colLines.end());
      std::string x = elements.valueAt(input, fullIndex);
      std::vector<std::string> compute = elements.takeLines();
      lines.insert(lines.end(), compute.begin(), compute.end());
      return x;
    };
    std::string n = llvm::isa<AffineConstantExpr>(colSize)
                        ? cudaLiteral(static_cast<double>(colsBound), false)
                        : "(float)" + cols;
    bool perElement = llvm::isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp>(anchor);
    // Short rows: a warp per row, 8 rows per block, reductions by shuffles
    // alone. Long rows: a block per row. Softmax and layer norm keep the
    // thread's elements of the row in registers (up to kMaxCached each), so
    // they read the input once; longer rows recompute them in each pass.
    const bool warpPerRow = colsBound <= kWarpRowLimit;
    const int64_t threads = warpPerRow ? kThreads
                                       : std::min<int64_t>(kThreads, (colsBound + 31) / 32 * 32);
    const int64_t perRow = warpPerRow ? 32 : threads; // threads sharing a row
    // A softmax over rows shorter than a warp: a warp's lanes would read
    // and write a fraction of a request's sectors (10 floats: 62%). The
    // block's rows (kStagedRows, 4 a warp, so that inputs read once a block
    // weigh little) are staged in shared memory in memory order instead
    // (the prologue computed there, coalesced), each warp reduces its rows
    // from shared memory, and the epilogue and the store run in memory
    // order again.
    const bool staged = warpPerRow && llvm::isa<SoftmaxOp, LogSoftmaxOp>(anchor) &&
                        llvm::isa<AffineConstantExpr>(colSize) && colsBound < 32;
    const int64_t rowsPerBlock = staged ? kStagedRows : warpPerRow ? kThreads / 32 : 1;
    const int64_t slots = (colsBound + perRow - 1) / perRow;
    const bool cached = perElement && slots <= kMaxCached;
    const std::string stagedAt = "stagedRows[local * " + std::to_string(colsBound) + " + col]";
    // Float inputs that are one row for every row (a classifier's bias,
    // layer norm's scale and bias), where a warp reduces each row: every
    // warp would read them again for each of its rows (a short row's few
    // bytes in a request of their own), so the block loads them once into
    // shared memory, up to kRowVectorBytes.
    if (staged || (warpPerRow && perElement && llvm::isa<AffineConstantExpr>(colSize)))
      for (BlockArgument arg : body.getArguments()) {
        auto type = llvm::cast<RankedTensorType>(arg.getType());
        auto dims = type.getShape();
        Type scalar = type.getElementType();
        bool oneRow = (scalar.isF32() || scalar.isF16() || scalar.isBF16()) && // as f32
                      !arg.use_empty() &&
                      !ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]) &&
                      type.hasStaticShape() && type.getNumElements() == colsBound &&
                      static_cast<int64_t>(dims.size()) <= rank && !dims.empty() &&
                      dims.back() == colsBound;
        if (oneRow && static_cast<int64_t>(rowVectors.size() + 1) * colsBound * 4 <= kRowVectorBytes)
          rowVectors.push_back(arg);
      }
    const std::string tid = warpPerRow ? "lane" : "threadIdx.x";
    auto reduce = [&](const std::string &v, const std::string &functor,
                      const std::string &identity) {
      return warpPerRow ? "kiln_warp_reduce(" + v + ", " + functor + ")"
                        : "kiln_block_reduce(" + v + ", scratch, " + functor + ", " + identity +
                              ")";
    };
    std::ostringstream os;
    // The loop over the block's elements in memory order, `row` and `col`
    // each, with the column's index lines unless the body brings its own
    // (its body follows; the caller closes it).
    auto openStagedLoop = [&](bool columnLines) {
      os << "    for (int e = threadIdx.x; e < " << rowsPerBlock * colsBound << "; e += "
         << threads << ") {\n"
         << "      const long long row = base + e / " << colsBound << ", col = e % " << colsBound
         << ";\n"
         << "      if (row >= " << rows << ")\n"
         << "        continue;\n";
      for (const std::string &line : rowLines)
        os << "      " << line << "\n";
      if (columnLines)
        for (const std::string &line : colLines)
          os << "      " << line << "\n";
    };
    // The loop over the thread's elements of the row, `col` each: over the
    // vals[] slots when cached.
    auto openRowLoop = [&](const std::string &indent) {
      if (cached)
        os << indent << "for (int i = 0; i < " << slots << "; ++i) {\n"
           << indent << "  const long long col = " << tid << " + i * " << perRow << ";\n"
           << indent << "  if (col >= " << cols << ")\n"
           << indent << "    continue;\n";
      else
        os << indent << "for (long long col = " << tid << "; col < " << cols << "; col += "
           << perRow << ") {\n";
    };
    // A pass over the thread's elements of the row: the first computes them
    // (into vals[] when cached), later ones read vals[].
    bool computed = false;
    auto pass = [&](const std::string &init, const std::string &accumulate) {
      os << "      float acc = " << init << ";\n";
      if (cached && computed) {
        os << "      for (int i = 0; i < " << slots << "; ++i)\n"
           << "        if (" << tid << " + i * " << perRow << " < " << cols << ")\n"
           << "          acc = " << substitute(accumulate, "vals[i]") << ";\n";
        return;
      }
      std::vector<std::string> lines;
      std::string x = staged ? stagedAt : element(lines);
      openRowLoop("      ");
      for (const std::string &line : lines)
        os << "        " << line << "\n";
      if (cached)
        os << "        vals[i] = " << x << ";\n";
      os << "        acc = " << substitute(accumulate, cached ? "vals[i]" : x) << ";\n      }\n";
      computed = true;
    };
    std::vector<std::string> resultIndex;
    std::string store;

    if (warpPerRow)
      os << "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n";
    else
      os << "  KILN_SHARED(float, scratch, 32);\n";
    if (staged)
      os << "  KILN_SHARED(float, stagedRows, " << rowsPerBlock * colsBound
         << "); // the block's rows, in memory order\n";
    // The row vectors' loads go here once the body shows which it reads (a
    // candidate read at another index than the column stays a global load).
    const std::string rowVectorsHere = "@ROW_VECTORS@\n";
    os << rowVectorsHere;
    if (warpPerRow && !perElement)
      os << "  KILN_SHARED(" << *elements.storageType(output.getType()) << ", rowOut, "
         << rowsPerBlock << "); // the block's row results\n";
    if (warpPerRow)
      os << "  for (long long base = (long long)blockIdx.x * " << rowsPerBlock << "; base < "
         << rows << "; base += (long long)gridDim.x * " << rowsPerBlock << ") {\n";
    if (staged) {
      std::vector<std::string> lines;
      std::string x = element(lines);
      os << "    // The block's rows into shared memory, in memory order (coalesced).\n";
      openStagedLoop(false); // element() brings the column's lines
      for (const std::string &line : lines)
        os << "      " << line << "\n";
      os << "      stagedRows[e] = " << x << ";\n"
         << "    }\n"
         << "    __syncthreads();\n";
    }
    if (staged)
      os << "    for (int local = warp; local < " << rowsPerBlock << "; local += "
         << kThreads / 32 << ") { // the warp's rows\n"
         << "    const long long row = base + local;\n"
         << "    if (row < " << rows << ") {\n";
    else if (warpPerRow)
      os << "    const long long row = base + warp;\n"
         << "    if (row < " << rows << ") {\n";
    else
      os << "  for (long long row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n"
         << "    {\n";
    for (const std::string &line : rowLines)
      os << "    " << line << "\n";
    if (cached)
      os << "    float vals[" << slots << "]; // the thread's elements of the row\n";
    std::string resultExpr;
    if (llvm::isa<SoftmaxOp, LogSoftmaxOp>(anchor)) {
      os << "    // Pass 1: the row maximum, for stability.\n    {\n";
      pass(cudaLiteral(-INFINITY, false), "KilnMax()(acc, X)");
      os << "      rowMax = " << reduce("acc", "KilnMax()", cudaLiteral(-INFINITY, false))
         << ";\n    }\n";
      os << "    // Pass 2: the sum of exponentials.\n    {\n";
      pass("0.0f", "acc + expf(X - rowMax)");
      os << "      rowSum = " << reduce("acc", "KilnSum()", "0.0f") << ";\n    }\n";
      resultExpr = llvm::isa<SoftmaxOp>(anchor) ? "expf(X - rowMax) / rowSum"
                                                : "X - rowMax - logf(rowSum)";
    } else if (auto norm = llvm::dyn_cast<LayerNormOp>(anchor)) {
      os << "    // Pass 1: the mean; pass 2: the variance around it.\n    {\n";
      pass("0.0f", "acc + X");
      os << "      rowMean = " << reduce("acc", "KilnSum()", "0.0f") << " / " << n
         << ";\n    }\n    {\n";
      pass("0.0f", "acc + (X - rowMean) * (X - rowMean)");
      os << "      rowRstd = rsqrtf(" << reduce("acc", "KilnSum()", "0.0f") << " / " << n
         << " + " << cudaLiteral(norm.getEpsilon().convertToDouble(), false) << ");\n    }\n";
      // Scale and bias broadcast against the normalized (trailing) shape.
      std::vector<std::string> trailing(fullIndex.begin() + first, fullIndex.end());
      std::string scale = "__SCALE__", bias = "__BIAS__";
      resultExpr = "(X - rowMean) * rowRstd * " + scale + (norm.getBias() ? " + " + bias : "");
      scaleValue = norm.getScale();
      biasValue = norm.getBias();
      trailingIndex = trailing;
    } else {
      Reduce r = reduceKind();
      os << "    {\n";
      pass(r.identity, r.accumulate);
      os << "      rowResult = " << reduce("acc", r.functor, r.identity) << ";\n    }\n";
      resultExpr = r.mean ? "rowResult / " + n : "rowResult";
    }

    // The result, the epilogue and the store.
    Type resultType = anchor->getResult(0).getType();
    auto resultDims = llvm::cast<RankedTensorType>(resultType).getShape();
    if (perElement) {
      resultIndex = fullIndex;
      seedRowVectors(); // (scale and bias below)
      std::vector<std::string> lines;
      std::string x;
      if (cached) { // the element comes from vals[]
        lines.insert(lines.end(), colLines.begin(), colLines.end());
        x = "vals[i]";
      } else {
        x = element(lines);
      }
      std::string y = substitute(resultExpr, x);
      if (scaleValue) {
        y.replace(y.find("__SCALE__"), 9,
                  elements.valueAt(scaleValue, ElementEmitter::broadcastIndex(scaleValue, padTo(scaleValue))));
        if (biasValue)
          y.replace(y.find("__BIAS__"), 8,
                    elements.valueAt(biasValue, ElementEmitter::broadcastIndex(biasValue, padTo(biasValue))));
        std::vector<std::string> loads = elements.takeLines();
        lines.insert(lines.end(), loads.begin(), loads.end());
      }
      elements.seed(anchor->getResult(0), resultIndex, "y");
      seedRowVectors();
      std::string out = elements.valueAt(output, resultIndex);
      std::vector<std::string> epilogue = elements.takeLines();
      if (staged) {
        // The result back to shared memory; the epilogue and the store in
        // memory order, once every warp has written its row.
        os << "    // Last pass: the result, staged for the store.\n";
        openRowLoop("    ");
        os << "      " << stagedAt << " = " << y << ";\n    }\n    }\n    }\n"
           << "    __syncthreads();\n"
           << "    // The epilogue and the store, in memory order (coalesced).\n";
        openStagedLoop(true);
        os << "      const float y = stagedRows[e];\n";
        for (const std::string &line : epilogue)
          os << "      " << line << "\n";
        os << "      out0[base * " << colsBound << "LL + e] = "
           << ElementEmitter::store(output.getType(), out) << ";\n"
           << "    }\n"
           << "    __syncthreads(); // stagedRows is reused\n";
      } else {
        lines.push_back("const float y = " + y + ";");
        lines.insert(lines.end(), epilogue.begin(), epilogue.end());
        os << "    // Last pass: the result, the epilogue, the store.\n";
        openRowLoop("    ");
        for (const std::string &line : lines)
          os << "      " << line << "\n";
        os << "      out0[row * " << cols << " + col] = "
           << ElementEmitter::store(output.getType(), out) << ";\n    }\n";
        os << "    }\n";
      }
    } else {
      // One value per row: its index in the result keeps reduced dims as 0.
      resultIndex = rowIndex;
      for (size_t d = rowIndex.size(); d < resultDims.size(); ++d)
        resultIndex.push_back("0LL");
      elements.seed(anchor->getResult(0), resultIndex, "y");
      std::string out = elements.valueAt(output, resultIndex);
      std::vector<std::string> epilogue = elements.takeLines();
      os << "    if (" << tid << " == 0) {\n      const float y = " << resultExpr << ";\n";
      for (const std::string &line : epilogue)
        os << "      " << line << "\n";
      if (warpPerRow) // stored with the block's other rows, below
        os << "      rowOut[warp] = " << ElementEmitter::store(output.getType(), out)
           << ";\n    }\n    }\n"
           << "    // The block's row results in one coalesced store.\n"
           << "    __syncthreads();\n"
           << "    if (threadIdx.x < " << rowsPerBlock << " && base + threadIdx.x < " << rows
           << ")\n"
           << "      out0[base + threadIdx.x] = rowOut[threadIdx.x];\n"
           << "    __syncthreads(); // rowOut is reused\n";
      else
        os << "      out0[row] = " << ElementEmitter::store(output.getType(), out)
           << ";\n    }\n    }\n";
    }
    os << "  }\n}\n";
    if (!kernel.reason.empty())
      return;

    kernel.blockThreads = static_cast<unsigned>(threads);
    setGrid(kernel, rowSize, rowsPerBlock);
    kernel.unit = staged       ? "CUDA cores (a warp per row, rows staged in shared memory)"
                  : warpPerRow ? "CUDA cores (a warp per row)"
                               : "CUDA cores (a block per row)";
    setFlops(kernel, rowSize * colSize * (perElement ? 8 : 1),
             static_cast<double>(mostRows) * colsBound * (perElement ? 8 : 1));

    std::ostringstream text;
    text << ElementEmitter::includesFor(step) << blockReduceHelpers() << "\n// Generated by kiln: "
         << kernel.stepName << "\n";
    if (!kernel.location.empty())
      text << "// from " << kernel.location << "\n";
    text << "// " << sizeString(rowSize) << " rows of " << sizeString(colSize) << " elements, "
         << (warpPerRow ? "a warp per row (" + std::to_string(rowsPerBlock) + " per block)"
                        : std::string("a block per row"))
         << "; "
         << (staged ? "the block's rows are staged in shared memory in memory order (the\n// "
                      "prologue, then the epilogue and the store), so every request is coalesced."
             : cached ? "each thread's elements of the row stay in registers, so the input is "
                      "read once."
             : perElement ? "the prologue is recomputed in each pass over the row."
                          : "one pass.")
         << "\n"
         << "extern \"C\" __global__ void __launch_bounds__(" << threads << ")\n"
         << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n";
    std::string code = os.str();
    std::string loads;
    for (BlockArgument arg : rowVectors) {
      std::string name = "rowVector" + std::to_string(arg.getArgNumber());
      if (code.find(name + "[col]") == std::string::npos)
        continue;
      loads += "  KILN_SHARED(float, " + name + ", " + std::to_string(colsBound) + "); // in" +
               std::to_string(arg.getArgNumber()) + ", one row for all: loaded once\n" +
               "  for (int e = threadIdx.x; e < " + std::to_string(colsBound) + "; e += " +
               std::to_string(threads) + ")\n" + "    " + name + "[e] = " +
               ElementEmitter::load(arg.getType(),
                                    "in" + std::to_string(arg.getArgNumber()) + "[e]") +
               ";\n";
    }
    if (!loads.empty())
      loads += "  __syncthreads();\n";
    if (size_t at = code.find(rowVectorsHere); at != std::string::npos)
      code.replace(at, rowVectorsHere.size(), loads);
    // Declare the per-row results the passes assign.
    std::string declared;
    for (const char *name : {"rowMax", "rowSum", "rowMean", "rowRstd", "rowResult"})
      if (code.find(std::string(name) + " =") != std::string::npos)
        declared += std::string(declared.empty() ? "    float " : ", ") + name;
    if (!declared.empty()) {
      // Inside the block of the row: after `if (row < ...) {`, or after the
      // loop's line and the `{` below it.
      size_t at = code.find("\n", code.find(warpPerRow ? "if (row < " : "row += gridDim.x) {"));
      if (!warpPerRow)
        at = code.find("\n", at + 1);
      code.insert(at + 1, declared + ";\n");
    }
    text << code;
    kernel.source = text.str();
  }

private:
  struct Reduce {
    std::string identity, accumulate, functor;
    bool mean = false;
  };

  static bool isAnchor(Operation *op) { return isRowReductionOp(op); }

  Reduce reduceKind() {
    std::string inf = cudaLiteral(INFINITY, false);
    if (llvm::isa<ReduceMaxOp>(anchor))
      return {"-" + inf, "KilnMax()(acc, X)", "KilnMax()"};
    if (llvm::isa<ReduceMinOp>(anchor))
      return {inf, "KilnMin()(acc, X)", "KilnMin()"};
    if (llvm::isa<ReduceProdOp>(anchor))
      return {"1.0f", "acc * X", "KilnProd()"};
    bool mean = llvm::isa<ReduceMeanOp, GlobalAvgPoolOp>(anchor);
    return {"0.0f", "acc + X", "KilnSum()", mean};
  }

  /// The first reduced dimension, when the reduction covers exactly the
  /// trailing dimensions from there; -1 (with a reason) otherwise.
  int64_t firstReducedDim(int64_t rank) {
    auto trailingAxes = [&](llvm::ArrayRef<int64_t> axes) -> int64_t {
      if (axes.empty()) {
        fail("the reduction has no axes (a copy in the reference)");
        return -1;
      }
      for (size_t k = 0; k < axes.size(); ++k)
        if (axes[k] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(k)) {
          fail("the reduced axes are not the trailing dimensions");
          return -1;
        }
      return axes.front();
    };
    if (auto s = llvm::dyn_cast<SoftmaxOp>(anchor))
      return static_cast<int64_t>(s.getAxis()) == rank - 1 ? rank - 1 : (fail("softmax is not over the last axis"), -1);
    if (auto s = llvm::dyn_cast<LogSoftmaxOp>(anchor))
      return static_cast<int64_t>(s.getAxis()) == rank - 1 ? rank - 1
                                     : (fail("log_softmax is not over the last axis"), -1);
    if (auto n = llvm::dyn_cast<LayerNormOp>(anchor))
      return static_cast<int64_t>(n.getAxis());
    if (llvm::isa<GlobalAvgPoolOp>(anchor))
      return 2;
    auto axes = anchor->getAttrOfType<DenseI64ArrayAttr>("axes");
    if (!axes)
      return fail("the reduction has no axes attribute"), -1;
    std::vector<int64_t> sorted(axes.asArrayRef().begin(), axes.asArrayRef().end());
    std::sort(sorted.begin(), sorted.end());
    return trailingAxes(sorted);
  }

  /// The trailing index, right-aligned to `value`'s rank (for scale/bias).
  std::vector<std::string> padTo(Value value) {
    auto dims = llvm::cast<RankedTensorType>(value.getType()).getShape();
    std::vector<std::string> index = trailingIndex;
    while (index.size() < dims.size())
      index.insert(index.begin(), "0LL");
    if (index.size() > dims.size())
      index.erase(index.begin(), index.begin() + (index.size() - dims.size()));
    return index;
  }

  Operation *anchor = nullptr;
  int64_t rowLimit = 0;
  SmallVector<AffineExpr> shape;
  Value scaleValue, biasValue;
  std::vector<std::string> trailingIndex;
};

} // namespace

void mlir::kiln::emitReductionKernel(exec::StepOp step, GeneratedKernel &kernel,
                                     std::vector<GeneratedKernel> &classes) {
  GeneratedKernel base = kernel; // the step's description, before any text
  ReductionEmitter main(step, kernel);
  main.emit();
  discardIfFailed(kernel);
  // A symbolic row length that may be short or long: the main kernel takes
  // a block per row (every length); runs whose rows fit a warp's limit get
  // the warp-per-row kernel instead, chosen per run by their size class.
  if (kernel.name.empty() || !main.rowLengths || main.rowLengths->first > kWarpRowLimit ||
      main.rowLengths->second <= kWarpRowLimit)
    return;
  GeneratedKernel shortRows = base;
  shortRows.name += "_short_rows";
  ReductionEmitter(step, shortRows, kWarpRowLimit).emit();
  discardIfFailed(shortRows);
  if (shortRows.name.empty())
    return;
  using ::kiln::ref::SizeOp;
  SmallVector<int64_t> when;
  appendSizeCode(main.rowLength, when);
  when.append({static_cast<int64_t>(SizeOp::Constant), kWarpRowLimit + 1,
               static_cast<int64_t>(SizeOp::Lt)});
  shortRows.sizeClass.assign(when.begin(), when.end());
  shortRows.sizeClassText = "rows of at most " + std::to_string(kWarpRowLimit) + " elements";
  classes.push_back(std::move(shortRows));
}
