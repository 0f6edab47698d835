//===- ConvKernelEmitter.cpp - convolution as an implicit GEMM ------------===//
//
// A 2-D convolution (NCHW input, OIHW filter) is the matrix product of the
// im2col view of its input [pixels x (C/groups * KH * KW)] and the filter
// [(C/groups * KH * KW) x O/groups], one product per group. The kernel never
// builds the im2col matrix: the tile loader computes each element's input
// position (zero in the padding) as it stages A in shared memory, pixels
// fastest so that a warp reads consecutive input positions. B (the filter)
// is read 8 taps of 4 channels a warp and stored with the tap's XOR swizzle
// on the channel's group of 4, so neither its stores nor the float4 reads
// of it conflict. 64x64 tiles, 16-deep slices, 4x4 results per thread; the
// results go through shared memory so the conv's bias and the region's
// epilogue (batch norm, activation, residual) run one output element per
// thread, pixels fastest: coalesced reads and stores in NCHW.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "kiln/CodeGen/DevicePrelude.h"
#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/SymbolicSizes.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <numeric>
#include <sstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16;
constexpr unsigned kThreads = 256;
// tileC's rows (a pixel's 64 channels) padded to an odd length: the
// epilogue reads a channel's consecutive pixels from 32 banks.
constexpr int64_t kLdC = kTileN + 1;

/// Input rows a tile stages in shared memory (`rows` a channel, for at
/// most `channels` channels a slice); rows 0 when the tile gathers A from
/// global memory directly.
struct Halo {
  int64_t rows = 0, channels = 0;
};
/// Shared memory the staged rows may take beside the tiles (24.3 KiB).
constexpr int64_t kHaloBytes = 14 * 1024;

class ConvEmitter : public KernelEmitter {
public:
  ConvEmitter(exec::StepOp step, GeneratedKernel &kernel)
      : KernelEmitter(step, kernel) {}

  void emit() {
    Block &body = step.getBody().front();
    Conv2dOp conv;
    for (Operation &op : body.without_terminator()) {
      if (auto c = llvm::dyn_cast<Conv2dOp>(op)) {
        if (conv)
          return fail("the region holds two convolutions");
        conv = c;
      } else if (!elements.supported(&op)) {
        return;
      }
    }
    if (!conv)
      return fail("the region holds no convolution");
    auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
    if (yield.getValues().size() != 1)
      return fail("the region has several outputs");
    auto input = llvm::dyn_cast<BlockArgument>(conv.getInput());
    auto filter = llvm::dyn_cast<BlockArgument>(conv.getFilter());
    if (!input || !filter)
      return fail("a convolution operand is computed inside the region");
    // A splat operand is a literal in the text, not a pointer parameter.
    for (Value operand : conv->getOperands()) {
      auto arg = llvm::dyn_cast<BlockArgument>(operand);
      if (arg && ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]))
        return fail("a convolution operand is a splat constant");
    }
    auto xType = llvm::cast<RankedTensorType>(input.getType());
    auto wType = llvm::cast<RankedTensorType>(filter.getType());
    auto yType = llvm::cast<RankedTensorType>(conv.getType());
    if (!xType.getElementType().isF32() || !wType.getElementType().isF32())
      return fail("convolution kernels are generated for f32 only");
    if (!getEncoding(xType).isRowMajor() || !getEncoding(yType).isRowMajor())
      return fail("the convolution is not NCHW (implicit GEMM for NHWC is not written)");
    Value output = yield.getValues().front();
    if (getDimSizes(llvm::cast<RankedTensorType>(output.getType())) != getDimSizes(yType))
      return fail("the epilogue changes the result's shape");
    // The batch may be symbolic (the kernel then takes it as an argument);
    // the images and filters are static, as kiln's convolutions are.
    if (!wType.hasStaticShape())
      return fail("the convolution's filter is symbolic");
    for (RankedTensorType type : {xType, yType})
      for (int64_t d = 1; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          return fail("a convolution's dimension other than the batch is symbolic");
    std::vector<std::string> params = kernelParameters(step, elements, kernel);
    if (!kernel.reason.empty())
      return;

    AffineExpr batch = getDimSizes(xType)[0];
    int64_t channels = xType.getDimSize(1),
            height = xType.getDimSize(2), width = xType.getDimSize(3);
    int64_t outChannels = wType.getDimSize(0), kh = wType.getDimSize(2), kw = wType.getDimSize(3);
    int64_t oh = yType.getDimSize(2), ow = yType.getDimSize(3);
    int64_t groups = conv.getGroups();
    int64_t cg = channels / groups, og = outChannels / groups;
    auto strides = conv.getStrides(), padding = conv.getPadding(), dilations = conv.getDilations();
    // The GEMM: M output pixels (symbolic with the batch), N output
    // channels of a group, K taps.
    AffineExpr m = batch * (oh * ow);
    int64_t n = og, k = cg * kh * kw;
    AffineExpr tilesM = m.ceilDiv(kTileM);
    int64_t tilesN = (n + kTileN - 1) / kTileN;
    AffineExpr tiles = tilesM * (groups * tilesN);
    std::optional<std::pair<int64_t, int64_t>> mBounds = sizeBounds(m);
    if (!mBounds)
      return;
    const int64_t mostM = mBounds->second;
    if (mostM == 0 || n == 0 || k == 0)
      return fail("the convolution is empty");
    // A static size as a number, a symbolic one as its C.
    auto size = [&](AffineExpr e, bool narrowType) {
      if (auto c = llvm::dyn_cast<AffineConstantExpr>(e))
        return std::to_string(c.getValue()) + (narrowType ? "" : "LL");
      return sizeText(e);
    };

    // Float inputs with a value per output channel (the bias, a folded
    // batch norm's parameters): the epilogue's warps run along pixels, so
    // each of their requests would read one such value; the tile's 64 are
    // loaded once, coalesced, into shared memory instead.
    std::vector<BlockArgument> channelVectors;
    for (BlockArgument arg : body.getArguments()) {
      auto type = llvm::cast<RankedTensorType>(arg.getType());
      Type element = type.getElementType();
      if (arg != input && arg != filter && !arg.use_empty() && type.getRank() == 1 &&
          type.getDimSize(0) == outChannels &&
          (element.isF32() || element.isF16() || element.isBF16()) && // computed in f32
          !ElementEmitter::splatOf(step.getInputs()[arg.getArgNumber()]))
        channelVectors.push_back(arg);
    }
    auto channelVector = [](BlockArgument arg) {
      return "channels" + std::to_string(arg.getArgNumber());
    };

    // The epilogue at result element (image, channel, y, x); a channel
    // vector's value (as batch norm indexes it) from shared memory.
    std::vector<std::string> resultIndex = {"img", "oc", "py", "px"};
    elements.seed(conv.getResult(), resultIndex, "value");
    for (BlockArgument arg : channelVectors)
      elements.seed(arg, {"oc"}, channelVector(arg) + "[e / " + std::to_string(kTileM) + "]");
    std::string out = elements.valueAt(output, resultIndex);
    std::vector<std::string> epilogue = elements.takeLines();
    if (!kernel.reason.empty())
      return;
    // Only those the epilogue reads at the channel (or the bias) are staged.
    llvm::erase_if(channelVectors, [&](BlockArgument arg) {
      std::string read = channelVector(arg) + "[";
      return arg != conv.getBias() &&
             llvm::none_of(epilogue, [&](const std::string &line) {
               return line.find(read) != std::string::npos;
             }) &&
             out.find(read) == std::string::npos;
    });
    std::string bias;
    if (conv.getBias()) {
      auto b = llvm::dyn_cast<BlockArgument>(conv.getBias());
      if (!b)
        return fail("the convolution's bias is computed inside the region");
      bias = llvm::is_contained(channelVectors, b)
                 ? " + " + channelVector(b) + "[e / " + std::to_string(kTileM) + "]"
                 : " + in" + std::to_string(b.getArgNumber()) + "[oc]";
    }
    auto in = [](BlockArgument arg) { return "in" + std::to_string(arg.getArgNumber()); };
    auto ll = [](int64_t v) { return std::to_string(v) + "LL"; };
    // Pixel, tap, channel and element indices are 32-bit where all of them
    // fit: 64-bit index arithmetic takes twice the registers, enough to make
    // ptxas spill (at the 64 registers it aims for with nvcc's PTX).
    auto mostElements = [&](RankedTensorType t) {
      return maxElements(t, getSizeSymbols(step->getParentOfType<func::FuncOp>()))
          .value_or(INT64_MAX);
    };
    bool narrow = fitsInt32({mostElements(xType), wType.getNumElements(), mostElements(yType),
                             mostM + kTileM, n + kTileN, k + kTileK,
                             oh * strides[0] + kh * dilations[0] + padding[0],
                             ow * strides[1] + kw * dilations[1] + padding[1]});
    std::string I = narrow ? "int" : "long long";
    auto num = [&](int64_t v) { return std::to_string(v) + (narrow ? "" : "LL"); };
    auto narrowed = [&](const std::string &e) { return narrow ? "(int)(" + e + ")" : e; };
    const Halo halo = planHalo(channels, height, width, oh, ow, cg, kh, kw, strides[0],
                               padding[0], dilations[0], strides[1]);

    std::ostringstream os;
    os << kernelPrelude() << ::kiln::codegen::devicePrelude() << "\n// Generated by kiln: "
       << kernel.stepName << "\n";
    if (!kernel.location.empty())
      os << "// from " << kernel.location << "\n";
    os << "// conv2d as an implicit GEMM per group: " << sizeString(m) << " output pixels x " << n
       << " channels over " << k << " taps (" << cg << " channels x " << kh << "x" << kw
       << "); the A tile is gathered from "
       << (halo.rows ? "the input rows the tile's windows read,\n// staged in shared memory once "
                       "a slice (coalesced, each element loaded once, not once a tap)"
                     : "the input")
       << " (zero in the padding), never stored.\n"
       << "extern \"C\" __global__ void " << tiledLaunchBounds(kThreads) << "\n"
       << kernel.name << "(" << llvm::join(params, ",\n    ") << ") {\n"
       << "  KILN_SHARED_ALIGNED(float, tileA, " << kTileK * kTileM << ", 16); // [tap][pixel]\n"
       << "  KILN_SHARED_ALIGNED(float, tileB, " << kTileK * kTileN
       << ", 16); // [tap][channel ^ 4 * (tap % 8)]\n"
       << "  KILN_SHARED(float, tileC, " << kTileM * kLdC << "); // [pixel][channel], results\n";
    for (BlockArgument arg : channelVectors)
      os << "  KILN_SHARED(float, " << channelVector(arg) << ", " << kTileN << "); // in"
         << arg.getArgNumber() << "[channel], the tile's channels\n";
    if (halo.rows)
      os << "  KILN_SHARED(float, halo, " << halo.channels * halo.rows * width
         << "); // [channel of the slice][input row][x]\n";
    os
       << "  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;\n"
       << "  for (long long tile = blockIdx.x; tile < " << size(tiles, false)
       << "; tile += gridDim.x) {\n"
       << "    const " << I << " group = " << narrowed("tile / " + size(tilesM * tilesN, false))
       << ";\n"
       << "    const " << I << " m0 = "
       << narrowed("(tile / " + ll(tilesN) + ") % " + size(tilesM, false)) << " * " << num(kTileM)
       << ", n0 = " << narrowed("tile % " + ll(tilesN)) << " * " << num(kTileN) << ";\n";
    if (halo.rows)
      os << "    // The input rows the tile's windows read, numbered as rows of the batch's\n"
         << "    // images end to end (image * " << height << " + y): [gLo, gLo + gRows).\n"
         << "    const " << I << " last = m0 + " << kTileM - 1 << " < " << size(m, narrow)
         << " ? m0 + " << kTileM - 1 << " : " << size(m, narrow) << " - 1;\n"
         << "    const " << I << " yLo = m0 / " << num(ow) << " % " << num(oh) << " * "
         << num(strides[0]) << " - " << num(padding[0]) << ", yHi = last / " << num(ow) << " % "
         << num(oh) << " * " << num(strides[0]) << " - " << num(padding[0]) << " + "
         << num((kh - 1) * dilations[0] + 1) << ";\n"
         << "    const " << I << " gLo = m0 / " << num(oh * ow) << " * " << num(height)
         << " + (yLo > 0 ? (yLo < " << num(height) << " ? yLo : " << num(height) << ") : 0);\n"
         << "    const int gRows = (int)(last / " << num(oh * ow) << " * " << num(height)
         << " + (yHi < " << num(height) << " ? (yHi > 0 ? yHi : 0) : " << num(height)
         << ") - gLo);\n";
    os << "    float acc[4][4] = {};\n"
       << "    for (" << I << " k0 = 0; k0 < " << num(k) << "; k0 += " << kTileK << ") {\n"
       ;
    if (halo.rows)
      emitHaloLoad(os, halo, I, in(input), channels, height, width, oh, ow, cg, kh, kw, strides,
                   padding, dilations, size(m, narrow), k, num);
    else
      os << "      for (int e = threadIdx.x; e < " << kTileM * kTileK << "; e += " << kThreads
       << ") {\n"
       << "        const " << I << " pixel = m0 + e % " << kTileM << ", tap = k0 + e / " << kTileM
       << ";\n"
       << "        float value = 0.0f;\n"
       << "        if (pixel < " << size(m, narrow) << " && tap < " << num(k) << ") {\n"
       << "          const " << I << " img = pixel / " << num(oh * ow) << ", py = pixel / "
       << num(ow) << " % " << num(oh) << ", px = pixel % " << num(ow) << ";\n"
       << "          const " << I << " c = tap / " << num(kh * kw) << ", r = tap / " << num(kw)
       << " % " << num(kh) << ", s = tap % " << num(kw) << ";\n"
       << "          const " << I << " iy = py * " << num(strides[0]) << " - " << num(padding[0])
       << " + r * " << num(dilations[0]) << ", ix = px * " << num(strides[1]) << " - "
       << num(padding[1]) << " + s * " << num(dilations[1]) << ";\n"
       << "          if (iy >= 0 && iy < " << num(height) << " && ix >= 0 && ix < " << num(width)
       << ")\n"
       << "            value = " << in(input) << "[((img * " << num(channels) << " + group * "
       << num(cg) << " + c) * " << num(height) << " + iy) * " << num(width) << " + ix];\n"
       << "        }\n"
       << "        tileA[e] = value;\n"
       << "      }\n";
    os << "      for (int e = threadIdx.x; e < " << kTileK * kTileN << "; e += " << kThreads
       << ") {\n"
       << "        // A warp: 8 consecutive taps of 4 channels.\n"
       << "        const int t = e % 8 + e / " << 8 * kTileN << " * 8, ch = e / 8 % " << kTileN
       << ";\n"
       << "        const " << I << " tap = k0 + t, channel = n0 + ch;\n"
       << "        tileB[t * " << kTileN << " + (ch ^ t % 8 * 4)] = (tap < " << num(k)
       << " && channel < " << num(n) << ") ? " << in(filter) << "[(group * " << num(og)
       << " + channel) * " << num(k) << " + tap] : 0.0f;\n"
       << "      }\n"
       << "      __syncthreads();\n"
       << "      for (int kk = 0; kk < " << kTileK << "; ++kk) {\n"
       << "        const float4 a4 = kiln_load_vec<float4>(tileA + kk * " << kTileM
       << " + ty * 4);\n"
       << "        const float4 b4 = kiln_load_vec<float4>(tileB + kk * " << kTileN
       << " + (tx * 4 ^ kk % 8 * 4));\n"
       << "        const float av[4] = {a4.x, a4.y, a4.z, a4.w}, bv[4] = {b4.x, b4.y, b4.z, b4.w};\n"
       << "        for (int i = 0; i < 4; ++i)\n"
       << "          for (int j = 0; j < 4; ++j)\n"
       << "            acc[i][j] += av[i] * bv[j];\n"
       << "      }\n"
       << "      __syncthreads();\n"
       << "    }\n"
       << "    for (int i = 0; i < 4; ++i)\n"
       << "      for (int j = 0; j < 4; ++j)\n"
       << "        tileC[(ty * 4 + i) * " << kLdC << " + tx * 4 + j] = acc[i][j];\n";
    for (BlockArgument arg : channelVectors)
      os << "    if (threadIdx.x < " << kTileN << " && n0 + threadIdx.x < " << num(n) << ")\n"
         << "      " << channelVector(arg) << "[threadIdx.x] = "
         << ElementEmitter::load(arg.getType(), in(arg) + "[group * " + num(og) +
                                                    " + n0 + threadIdx.x]")
         << ";\n";
    os << "    __syncthreads();\n"
       << "    for (int e = threadIdx.x; e < " << kTileM * kTileN << "; e += " << kThreads
       << ") {\n"
       << "      {\n"
       << "        const " << I << " pixel = m0 + e % " << kTileM << ", channel = n0 + e / "
       << kTileM << ";\n"
       << "        if (pixel >= " << size(m, narrow) << " || channel >= " << num(n) << ")\n"
       << "          continue;\n"
       << "        const " << I << " img = pixel / " << num(oh * ow) << ", py = pixel / " << num(ow)
       << " % " << num(oh) << ", px = pixel % " << num(ow) << ";\n"
       << "        const " << I << " oc = group * " << num(og) << " + channel;\n"
       << "        const float value = tileC[e % " << kTileM << " * " << kLdC << " + e / "
       << kTileM << "]" << bias << ";\n";
    for (const std::string &line : epilogue)
      os << "        " << line << "\n";
    os << "        out0[((img * " << num(outChannels) << " + oc) * " << num(oh) << " + py) * "
       << num(ow) << " + px] = " << ElementEmitter::store(output.getType(), out) << ";\n"
       << "      }\n"
       << "    }\n"
       << "    __syncthreads(); // the next tile overwrites tileC\n"
       << "  }\n}\n";
    kernel.source = os.str();
    kernel.blockThreads = kThreads;
    setGrid(kernel, tiles, 1);
    kernel.unit = "CUDA cores (implicit GEMM, tile 64x64x16, 4x4 per thread)";
    setFlops(kernel, m * (2 * groups * n * k), 2.0 * static_cast<double>(groups) * mostM * n * k);
  }

private:
  /// Whether a tile stages the input rows its windows read: windows wider
  /// than one tap (each input element is then read by several taps: from
  /// global memory once a tap, each warp's request shifted off the
  /// sectors; staged, once a slice and coalesced) with a horizontal stride
  /// of 1 (a wider one would read the staged rows with bank conflicts), and
  /// rows that fit kHaloBytes. The rows a tile needs are found over every
  /// tile start the images' size allows.
  static Halo planHalo(int64_t channels, int64_t height, int64_t width, int64_t oh, int64_t ow,
                       int64_t cg, int64_t kh, int64_t kw, int64_t sh, int64_t ph, int64_t dh,
                       int64_t sw) {
    const int64_t taps = kh * kw, pixels = oh * ow;
    if (taps == 1 || sw != 1 || pixels == 0)
      return {};
    Halo halo;
    for (int64_t k0 = 0; k0 < cg * taps; k0 += kTileK)
      halo.channels = std::max(halo.channels,
                               std::min(cg - 1, (k0 + kTileK - 1) / taps) - k0 / taps + 1);
    // Tile starts repeat their place in the images every period tiles.
    const int64_t period = pixels / std::gcd(kTileM, pixels);
    if (period > (1 << 16))
      return {};
    for (int64_t t = 0; t < period; ++t) {
      int64_t first = t * kTileM, last = first + kTileM - 1;
      int64_t yLo = first / ow % oh * sh - ph, yHi = last / ow % oh * sh - ph + (kh - 1) * dh + 1;
      // (A first row whose window lies wholly in the bottom padding reads
      // nothing of its image: the rows start at the next image's.)
      int64_t gLo = first / pixels * height + std::clamp<int64_t>(yLo, 0, height);
      int64_t gHi = last / pixels * height + std::clamp<int64_t>(yHi, 0, height);
      halo.rows = std::max(halo.rows, gHi - gLo);
    }
    if (halo.channels * halo.rows * width * 4 > kHaloBytes)
      return {};
    return halo;
  }

  /// The A tile of slice k0 from staged rows: the slice's channels' rows
  /// [gLo, gLo + gRows) into `halo` in memory order, then each element of
  /// the tile from there.
  template <typename Num>
  void emitHaloLoad(std::ostringstream &os, const Halo &halo, const std::string &I,
                    const std::string &in, int64_t channels, int64_t height, int64_t width,
                    int64_t oh, int64_t ow, int64_t cg, int64_t kh, int64_t kw,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                    ArrayRef<int64_t> dilations, const std::string &m, int64_t k, Num num) {
    const int64_t taps = kh * kw;
    os << "      // The slice's channels [cA, cA + channels): their rows, coalesced.\n"
       << "      const " << I << " cA = k0 / " << num(taps) << ";\n"
       << "      const int channels = (int)((k0 + " << kTileK - 1 << " < " << num(k)
       << " ? (k0 + " << kTileK - 1 << ") / " << num(taps) << " : " << num(cg - 1)
       << ") - cA + 1);\n"
       << "      for (int e = threadIdx.x; e < channels * gRows * " << width << "; e += "
       << kThreads << ") {\n"
       << "        const int cl = e / (gRows * " << width << "), v = e / " << width
       << " % gRows, x = e % " << width << ";\n"
       << "        const " << I << " g = gLo + v, img = g / " << num(height) << ", y = g % "
       << num(height) << ";\n"
       << "        halo[(cl * " << halo.rows << " + v) * " << width << " + x] = " << in
       << "[((img * " << num(channels) << " + group * " << num(cg) << " + cA + cl) * "
       << num(height) << " + y) * " << num(width) << " + x];\n"
       << "      }\n"
       << "      __syncthreads();\n"
       << "      for (int e = threadIdx.x; e < " << kTileM * kTileK << "; e += " << kThreads
       << ") {\n"
       << "        const " << I << " pixel = m0 + e % " << kTileM << ", tap = k0 + e / " << kTileM
       << ";\n"
       << "        float value = 0.0f;\n"
       << "        if (pixel < " << m << " && tap < " << num(k) << ") {\n"
       << "          const " << I << " img = pixel / " << num(oh * ow) << ", py = pixel / "
       << num(ow) << " % " << num(oh) << ", px = pixel % " << num(ow) << ";\n"
       << "          const " << I << " c = tap / " << num(taps) << ", r = tap / " << num(kw)
       << " % " << num(kh) << ", s = tap % " << num(kw) << ";\n"
       << "          const " << I << " iy = py * " << num(strides[0]) << " - " << num(padding[0])
       << " + r * " << num(dilations[0]) << ", ix = px - " << num(padding[1]) << " + s * "
       << num(dilations[1]) << ";\n"
       << "          if (iy >= 0 && iy < " << num(height) << " && ix >= 0 && ix < " << num(width)
       << ")\n"
       << "            value = halo[((c - cA) * " << halo.rows << " + img * " << num(height)
       << " + iy - gLo) * " << width << " + ix];\n"
       << "        }\n"
       << "        tileA[e] = value;\n"
       << "      }\n";
  }
};

} // namespace

void mlir::kiln::emitConvKernel(exec::StepOp step, GeneratedKernel &kernel) {
  ConvEmitter(step, kernel).emit();
  discardIfFailed(kernel);
}
