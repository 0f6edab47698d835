//===- PoolKernelEmitter.cpp - 2-D pooling through staged input rows ------===//
//
// max_pool2d and avg_pool2d (NCHW, f32/f16/bf16; the batch may be
// symbolic). By index arithmetic alone (the loop kernel) a warp's
// consecutive outputs read their windows' taps `stride` elements apart, and
// a shifted window straddles one more sector: a 3x3/2 max pool used 48% of
// the sectors it read. Here a block takes a band of output rows of one
// image channel, stages the input rows its windows read in shared memory
// in memory order (consecutive threads on consecutive elements: coalesced),
// each row's columns split by their remainder mod the horizontal stride so
// that a warp's taps read consecutive words (no bank conflicts); then each
// thread pools its outputs from shared memory and stores them in memory
// order. Taps follow the reference: the padding is neither a maximum nor
// counted (unless count_include_pad), and ceil mode's overhang past the
// padding counts for neither.
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

constexpr unsigned kThreads = 256;
/// Outputs a block aims for (4 a thread), and the shared memory its band
/// of input rows may take.
constexpr int64_t kOutputsPerBlock = 4 * kThreads;
constexpr int64_t kBandBytes = 32 * 1024;

class PoolEmitter : public KernelEmitter {
public:
  PoolEmitter(exec::StepOp step, GeneratedKernel &kernel) : KernelEmitter(step, kernel) {}

  /// False when the step is not a pooling this kernel is for (the loop
  /// kernel handles it).
  bool emit() {
    Block &body = step.getBody().front();
    auto ops = body.without_terminator();
    if (step.getKind() || std::distance(ops.begin(), ops.end()) != 1 ||
        step.getResults().size() != 1)
      return false;
    Operation *pool = &*ops.begin();
    if (!llvm::isa<MaxPool2dOp, AvgPool2dOp>(pool) ||
        !llvm::isa<BlockArgument>(pool->getOperand(0)))
      return false;
    auto inType = llvm::cast<RankedTensorType>(pool->getOperand(0).getType());
    auto outType = llvm::cast<RankedTensorType>(pool->getResult(0).getType());
    Type element = inType.getElementType();
    if (!(element.isF32() || element.isF16() || element.isBF16()) ||
        !getEncoding(inType).isRowMajor() || !getEncoding(outType).isRowMajor() ||
        !getEncoding(step.getResult(0).getType()).isRowMajor())
      return false;
    for (RankedTensorType type : {inType, outType})
      for (int64_t d = 1; d < 4; ++d)
        if (type.isDynamicDim(d))
          return false;
    auto attr = [&](StringRef name) {
      return pool->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef();
    };
    ArrayRef<int64_t> window = attr("kernel"), strides = attr("strides"),
                      padding = attr("padding"), dilations = attr("dilations");
    const int64_t channels = inType.getDimSize(1), height = inType.getDimSize(2),
                  width = inType.getDimSize(3);
    const int64_t outH = outType.getDimSize(2), outW = outType.getDimSize(3);
    const int64_t sh = strides[0], sw = strides[1];
    // Rows whose starts are 32-byte aligned in memory (input and output)
    // go a warp a row, so that no warp's shared-memory accesses wrap from
    // one row to the next (where its banks would collide); other rows go in
    // memory order across rows, which keeps the global side coalesced.
    auto bytesOf = [](RankedTensorType t) { return t.getElementType().getIntOrFloatBitWidth() / 8; };
    const bool rowWarps = width * bytesOf(inType) % 32 == 0 && outW * bytesOf(outType) % 32 == 0;
    // A band of `rows` output rows reads `bandRows` input rows, `pitch`
    // words apart; each row's columns by remainder mod sw, `phase` words
    // apart, padded so that a warp's 32 consecutive columns, about 32 / sw
    // of each remainder, fall in distinct banks as they are stored.
    int64_t phase = (width + sw - 1) / sw;
    if (sw > 1 && sw < 32)
      while (phase % 32 != (32 + sw - 1) / sw)
        ++phase;
    int64_t pitch = sw * phase;
    // Across rows, a warp's consecutive outputs continue on the next
    // output row sh input rows down: padded so that they continue on the
    // next banks, where that is possible.
    if (!rowWarps)
      for (int64_t p = pitch; p < pitch + 32; ++p)
        if (sh * p % 32 == outW % 32) {
          pitch = p;
          break;
        }
    auto bandRowsFor = [&](int64_t rows) { return (rows - 1) * sh + (window[0] - 1) * dilations[0] + 1; };
    int64_t rows = std::clamp<int64_t>(kOutputsPerBlock / std::max<int64_t>(outW, 1), 1, outH);
    while (rows > 1 && bandRowsFor(rows) * pitch * 4 > kBandBytes)
      --rows;
    const int64_t bandRows = bandRowsFor(rows);
    if (bandRows * pitch * 4 > kBandBytes || outH == 0 || outW == 0)
      return false; // rows too wide to stage: the loop kernel
    // The image channels, a symbolic count with a symbolic batch.
    std::optional<KernelSize> planeCount =
        problemSize(getDimSizes(inType)[0] * channels, "planes");
    if (!planeCount) {
      kernel.reason.clear(); // the loop kernel says why
      return false;
    }
    const KernelSize &planes = *planeCount;
    std::vector<std::string> params = kernelParameters(step, elements, kernel);
    if (!kernel.reason.empty())
      return true;

    const bool isMax = llvm::isa<MaxPool2dOp>(pool);
    const bool includePad = pool->getAttrOfType<BoolAttr>("count_include_pad").getValue();
    const int64_t bands = (outH + rows - 1) / rows;
    const std::string in = "in" + std::to_string(llvm::cast<BlockArgument>(pool->getOperand(0))
                                                     .getArgNumber());
    auto n = [](int64_t v) { return std::to_string(v); };
    // Where input column `x` sits in its staged row.
    auto column = [&](const std::string &x) {
      return sw == 1 ? x : x + " % " + n(sw) + " * " + n(phase) + " + " + x + " / " + n(sw);
    };
    std::ostringstream os;
    os << ElementEmitter::includesFor(step) << kernelPrelude() << "\n// Generated by kiln: "
       << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    os << "// " << (isMax ? "max" : "average") << " pooling " << window[0] << "x" << window[1]
       << ", stride " << sh << "x" << sw << ", of " << planes.describe() << " planes of " << height
       << "x" << width << " into " << outH << "x" << outW << ": a block per band of " << rows
       << " output rows,\n// its " << bandRows
       << " input rows staged in shared memory (coalesced), each row's columns by\n"
       << "// remainder mod " << sw << " (a warp's taps on consecutive words); the outputs "
       << "stored in memory order.\n"
       << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ")\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n";
    declareSizes(os, {}, "int", planes);
    if (rowWarps)
      os << "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n";
    os << "  KILN_SHARED(float, band, " << bandRows * pitch << "); // [" << bandRows << "]["
       << sw << " x " << phase << "]\n"
       << "  for (long long tile = blockIdx.x; tile < "
       << (planes.isStatic() ? n(planes.largest() * bands) + "LL"
                             : "planes * " + n(bands) + "LL")
       << "; tile += gridDim.x) {\n"
       << "    const long long plane = tile / " << bands << "LL;\n"
       << "    const int oh0 = (int)(tile % " << bands << "LL) * " << rows << ";\n"
       << "    // The band's input rows [iy0, iy0 + " << bandRows << ") that exist.\n"
       << "    const int iy0 = oh0 * " << sh << " - " << padding[0] << ";\n"
       << "    const int first = iy0 > 0 ? iy0 : 0, last = iy0 + " << bandRows << " < " << height
       << " ? iy0 + " << bandRows << " : " << height << ";\n"
       << "    const auto *rowsIn = " << in << " + plane * " << height * width << "LL + (long long)first * "
       << width << ";\n"
       << (rowWarps ? "    for (int y = first + warp; y < last; y += " + n(kThreads / 32) +
                          ") // a warp a row: its columns' banks never wrap\n"
                          "      for (int x = lane; x < " + n(width) + "; x += 32) {\n"
                          "        const int e = (y - first) * " + n(width) + " + x;\n"
                    : "    for (int e = threadIdx.x; e < (last - first) * " + n(width) +
                          "; e += " + n(kThreads) + ") {\n"
                          "      const int y = first + e / " + n(width) + ", x = e % " +
                          n(width) + ";\n")
       << "      band[(y - iy0) * " << pitch << " + " << column("x")
       << "] = " << ElementEmitter::load(inType, "rowsIn[e]") << ";\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << (rowWarps ? "    for (int r = warp; r < " + n(rows) + " && oh0 + r < " + n(outH) +
                          "; r += " + n(kThreads / 32) + ")\n"
                          "      for (int ow = lane; ow < " + n(outW) + "; ow += 32) {\n"
                          "      const int oh = oh0 + r;\n"
                    : "    for (int e = threadIdx.x; e < " + n(rows * outW) + "; e += " +
                          n(kThreads) + ") {\n"
                          "      const int oh = oh0 + e / " + n(outW) + ", ow = e % " +
                          n(outW) + ";\n"
                          "      if (oh >= " + n(outH) + ")\n"
                          "        break;\n");
    if (isMax)
      os << "      float best = -" << cudaLiteral(INFINITY, false) << ";\n";
    else
      os << "      float sum = 0.0f;\n      int taps = 0;\n";
    os << "      for (int kr = 0; kr < " << window[0] << "; ++kr) {\n"
       << "        const int iy = oh * " << sh << " - " << padding[0] << " + kr * " << dilations[0]
       << ";\n"
       << "        if (iy >= " << height + padding[2] << ") // ceil mode's overhang\n"
       << "          break;\n"
       << "        for (int ks = 0; ks < " << window[1] << "; ++ks) {\n"
       << "          const int ix = ow * " << sw << " - " << padding[1] << " + ks * "
       << dilations[1] << ";\n"
       << "          if (ix >= " << width + padding[3] << ")\n"
       << "            break;\n";
    if (includePad && !isMax)
      os << "          ++taps;\n";
    os << "          if (iy < 0 || iy >= " << height << " || ix < 0 || ix >= " << width << ")\n"
       << "            continue;\n"
       << "          const float x = band[(iy - iy0) * " << pitch << " + " << column("ix") << "];\n";
    if (isMax)
      os << "          best = (x > best || x != x) ? x : best; // NaN wins\n";
    else
      os << "          sum += x;\n" << (includePad ? "" : "          ++taps;\n");
    os << "        }\n"
       << "      }\n"
       << "      out0[(plane * " << outH << "LL + oh) * " << outW << " + ow] = "
       << ElementEmitter::store(outType, isMax ? "best" : "sum / (float)(taps > 0 ? taps : 1)")
       << ";\n"
       << "    }\n"
       << "    __syncthreads(); // the next band overwrites band\n"
       << "  }\n}\n";
    kernel.source = os.str();
    kernel.blockThreads = kThreads;
    setGrid(kernel, planes.getExpr() * bands, 1); // a block a band of a plane
    kernel.unit = "CUDA cores (bands of " + n(rows) + " output rows, input rows staged)";
    const int64_t tapsAPlane = outH * outW * window[0] * window[1];
    setFlops(kernel, planes.getExpr() * tapsAPlane,
             static_cast<double>(planes.largest()) * tapsAPlane);
    return true;
  }
};

} // namespace

bool mlir::kiln::emitPoolKernel(exec::StepOp step, GeneratedKernel &kernel) {
  if (!PoolEmitter(step, kernel).emit())
    return false;
  discardIfFailed(kernel);
  return true;
}
