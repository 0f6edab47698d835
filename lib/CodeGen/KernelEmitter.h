//===- KernelEmitter.h - what every kernel emitter shares -------*- C++ -*-===//

#ifndef KILN_LIB_CODEGEN_KERNELEMITTER_H
#define KILN_LIB_CODEGEN_KERNELEMITTER_H

#include "ElementEmitter.h"

#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/SymbolicSizes.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

namespace mlir {
namespace kiln {

/// A problem size of a tiled kernel (a GEMM's M, N, K or batch count,
/// attention's query and key counts): a literal in the text where it is
/// static, else a variable the kernel computes from its size parameters
/// once (declaration()). Choices made once for every size (tile shapes,
/// 32-bit indices, bounds checks) use its largest value over the symbols'
/// ranges and the largest constant known to divide it.
class KernelSize {
public:
  KernelSize() = default;
  /// `bounds`: the least and the most the size may be (sizeBounds); `name`
  /// is the kernel variable holding a symbolic size.
  KernelSize(AffineExpr expr, std::pair<int64_t, int64_t> bounds, std::string name)
      : expr(expr), least(bounds.first), most(bounds.second), name(std::move(name)) {}

  bool isStatic() const { return llvm::isa<AffineConstantExpr>(expr); }
  /// The size's bounds over the symbols' ranges: itself when static.
  int64_t smallest() const { return least; }
  int64_t largest() const { return most; }
  /// Whether `d` divides the size at every value it may take.
  bool dividesBy(int64_t d) const {
    return expr.getLargestKnownDivisor() % d == 0;
  }
  /// The size in the text: "4096" + `suffix` ("" or "LL"), or the variable.
  std::string text(const std::string &suffix = "") const {
    return isStatic() ? std::to_string(most) + suffix : name;
  }
  /// The variable's declaration ("" when static), of C type `type`.
  std::string declaration(const std::string &type) const {
    return isStatic() ? std::string()
                      : "const " + type + " " + name + " = (" + type + ")" + sizeText(expr) + ";";
  }
  /// "4096" or "s0 * 128", for comments and reports.
  std::string describe() const { return sizeString(expr); }
  AffineExpr getExpr() const { return expr; }

private:
  AffineExpr expr;
  int64_t least = 0, most = 0;
  std::string name;
};

/// The kernel's variables for its symbolic `sizes` (none when static), of
/// the index type `I`, and its batch count's, long long; each line
/// indented by two spaces.
inline void declareSizes(std::ostream &os, std::initializer_list<const KernelSize *> sizes,
                         const std::string &I, const KernelSize &batches) {
  for (const KernelSize *size : sizes)
    if (!size->isStatic())
      os << "  " << size->declaration(I) << "\n";
  if (!batches.isStatic())
    os << "  " << batches.declaration("long long") << "\n";
}

/// The base of the emitters: the step being compiled, the kernel being
/// filled in (its `reason` is set by the first failure), and the element
/// expressions.
class KernelEmitter {
protected:
  KernelEmitter(exec::StepOp step, GeneratedKernel &kernel)
      : step(step), kernel(kernel), elements(step, kernel.reason) {}

  void fail(const std::string &why) {
    if (kernel.reason.empty())
      kernel.reason = why;
  }

  /// Bounds on `size` over the size symbols' ranges (interval
  /// arithmetic: never narrower than the truth), for the choices a kernel
  /// over symbolic sizes makes once for every size; std::nullopt (with a
  /// reason) when it has none. A constant is its own range.
  std::optional<std::pair<int64_t, int64_t>> sizeBounds(AffineExpr size) {
    auto bounds = sizeRange(size, getSizeSymbols(step->getParentOfType<func::FuncOp>()));
    if (!bounds)
      fail("the size " + sizeString(size) + " has no bounds over the symbols' ranges");
    return bounds;
  }

  /// A problem size of the kernel (KernelSize), held in variable `name`
  /// where symbolic; std::nullopt (with a reason) when it has no bounds.
  std::optional<KernelSize> problemSize(AffineExpr size, const std::string &name) {
    auto bounds = sizeBounds(size);
    if (!bounds)
      return std::nullopt;
    return KernelSize(size, *bounds, name);
  }

  exec::StepOp step;
  GeneratedKernel &kernel;
  ElementEmitter elements;
};

/// Whether every value fits a 32-bit int: then a kernel may compute those
/// indices in int, which takes half the registers of long long (and keeps
/// ptxas from spilling where 64-bit index arithmetic would).
inline bool fitsInt32(std::initializer_list<int64_t> values) {
  return llvm::all_of(values, [](int64_t v) { return v >= 0 && v <= INT32_MAX; });
}

/// The launch bounds of a kernel that keeps tiles in registers (matmul,
/// convolution, attention). With only the block size, ptxas picks its own
/// occupancy target and spills a few bytes to meet it where the PTX needs a
/// few registers more (nvcc's PTX of these kernels does, NVRTC's of the same
/// source happens not to). A minimum of resident blocks that leaves each
/// thread kRegisterBudget of an SM's 64K registers (sm_70 to sm_90) sets
/// the target instead, above what these kernels need.
inline std::string tiledLaunchBounds(unsigned threads) {
  constexpr unsigned kRegisterBudget = 96, kRegistersPerSM = 65536;
  unsigned minBlocks = std::max(1u, kRegistersPerSM / (threads * kRegisterBudget));
  return "__launch_bounds__(" + std::to_string(threads) + ", " + std::to_string(minBlocks) + ")";
}

/// Grid-stride kernels launch at most this many blocks; more iterations
/// loop.
constexpr int64_t kGridStrideBlocks = 4096;

/// The grid of a grid-stride kernel over `iterations` with `threads` per
/// block: one iteration per thread, at most kGridStrideBlocks blocks.
inline unsigned gridStrideBlocks(int64_t iterations, unsigned threads) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(kGridStrideBlocks, (iterations + threads - 1) / threads)));
}

/// A grid over a symbolic number of work items, `perBlock` a block, as size
/// code (include/kiln/Reference/SizeCode.h) evaluated per run: at least 1
/// block, at most `maxBlocks` (the kernel loops over the rest).
inline std::vector<int64_t> gridCode(AffineExpr items, int64_t perBlock, int64_t maxBlocks) {
  using ::kiln::ref::SizeOp;
  SmallVector<int64_t> code;
  appendSizeCode(items, code);
  for (auto [op, constant] : {std::pair(SizeOp::CeilDiv, perBlock),
                              std::pair(SizeOp::Max, int64_t(1)), std::pair(SizeOp::Min, maxBlocks)})
    if (op != SizeOp::CeilDiv || constant != 1)
      code.append({static_cast<int64_t>(SizeOp::Constant), constant, static_cast<int64_t>(op)});
  return {code.begin(), code.end()};
}

/// A count in a kernel's text (tiles, blocks of work): a literal where it
/// is static, else an expression over the kernel's size variables; of C
/// type long long.
struct CountText {
  std::optional<int64_t> value;
  std::string expr;
  std::string text() const { return value ? std::to_string(*value) + "LL" : expr; }
};

/// ceil(size / piece): how many pieces of `piece` cover `size`.
inline CountText piecesOf(const KernelSize &size, int64_t piece) {
  if (size.isStatic())
    return {(size.largest() + piece - 1) / piece, ""};
  if (piece == 1)
    return {std::nullopt, "(long long)" + size.text()};
  return {std::nullopt, "(((long long)" + size.text() + " + " + std::to_string(piece - 1) +
                            ") / " + std::to_string(piece) + ")"};
}

inline CountText operator*(const CountText &a, const CountText &b) {
  if (a.value && b.value)
    return {*a.value * *b.value, ""};
  if (a.value == 1 || b.value == 1)
    return a.value == 1 ? b : a;
  return {std::nullopt, "(" + a.text() + " * " + b.text() + ")"};
}

/// Tiled and row kernels launch at most this many blocks (the kernel loops
/// over the rest).
constexpr int64_t kMaxBlocks = 65535;

/// The launch of `items` work items, `perBlock` a block, at most
/// `maxBlocks` blocks: a block count where `items` is static, else size
/// code evaluated per run (gridCode).
inline void setGrid(GeneratedKernel &kernel, AffineExpr items, int64_t perBlock,
                    int64_t maxBlocks = kMaxBlocks) {
  if (auto constant = llvm::dyn_cast<AffineConstantExpr>(items)) {
    kernel.gridBlocks = static_cast<unsigned>(
        std::clamp<int64_t>((constant.getValue() + perBlock - 1) / perBlock, 1, maxBlocks));
    return;
  }
  kernel.gridCode = gridCode(items, perBlock, maxBlocks);
}

/// The kernel's arithmetic per launch: `largest` (over symbolic sizes, at
/// the largest), and where `flops` is symbolic, it as size code, evaluated
/// per run for the profile.
inline void setFlops(GeneratedKernel &kernel, AffineExpr flops, double largest) {
  kernel.flops = largest;
  if (llvm::isa<AffineConstantExpr>(flops))
    return;
  SmallVector<int64_t> code;
  appendSizeCode(flops, code);
  kernel.flopsCode.assign(code.begin(), code.end());
}

/// A tile of a row-major matrix staged in shared memory by cp.async, 16
/// bytes a lane (the Tensor Core GEMM's and attention's loads).
struct TileCopy {
  std::string dst;    ///< the shared tile: rows of cols + kTilePad elements
  std::string src;    ///< the matrix's first element
  std::string r0, c0; ///< where the tile starts in the matrix
  int64_t rows, cols; ///< cols a multiple of 8; rows a multiple of 8 when cols is 32
  /// The matrix's rows, columns and row length, as text in the kernel's
  /// index type (KernelSize::text).
  std::string limitR, limitC, ld;
  std::string elem;   ///< the element's C type (2 bytes)
  std::string index;  ///< "int" or "long long", as the kernel's indices
  unsigned threads;   ///< the block's
  /// The tile never passes the matrix's ends (its starts are multiples of
  /// rows and cols that divide the matrix): no bounds checks.
  bool whole = false;
};

/// Rows of a staged tile are padded by this many elements (16 bytes), so
/// that ldmatrix's 8 rows fall on disjoint banks.
constexpr int64_t kTilePad = 8;

/// The loop copying `c` (zeros past the matrix's ends), each line indented
/// by `indent`. With 4 chunks a row, a quarter-warp's 8 lanes take rows r
/// and r + 4, whose padded rows fall on disjoint banks; wider rows put a
/// quarter-warp on 128 consecutive bytes of one row.
inline void emitTileCopy(std::ostream &os, const TileCopy &c, const std::string &indent) {
  int64_t chunks = c.cols / 8;
  os << indent << "for (int e = threadIdx.x; e < " << c.rows * chunks << "; e += " << c.threads
     << ") {\n";
  if (chunks == 4)
    os << indent << "  const int l = e % 32, r = e / 32 * 8 + l / 4 % 2 * 4 + l / 8, ch = l % 4;\n";
  else
    os << indent << "  const int r = e / " << chunks << ", ch = e % " << chunks << ";\n";
  os << indent << "  const " << c.index << " gr = " << c.r0 << " + r, gc = " << c.c0
     << " + ch * 8;\n"
     << indent << "  " << c.elem << " *d = " << c.dst << " + r * " << c.cols + kTilePad
     << " + ch * 8;\n"
     << indent;
  if (c.whole) {
    os << "  kiln_cp_async_16(d, " << c.src << " + gr * " << c.ld << " + gc);\n";
  } else {
    os << "  if (gr < " << c.limitR << " && gc < " << c.limitC << ")\n"
       << indent << "    kiln_cp_async_16(d, " << c.src << " + gr * " << c.ld << " + gc);\n"
       << indent << "  else\n"
       << indent << "    kiln_store_vec(d, make_uint4(0, 0, 0, 0));\n";
  }
  os << indent << "}\n";
}

/// The ldmatrix (into `unsigned r[4]`) of the mma.sync B fragments of two
/// neighbouring n8 blocks, rows k .. k + 15 and columns n .. n + 15 of B,
/// from a shared tile with rows of `ld` elements: stored [n][k] (a
/// transposed B, attention's K as [key][d] and V as [c][key]) it is a plain
/// ldmatrix, stored [k][n] a .trans one. r[0..1] hold the block at n, r[2..3]
/// the one at n + 8. `k` and `n` are expressions.
inline std::string ldmatrixBPair(const std::string &tile, int64_t ld, bool nMajor,
                                 const std::string &k, const std::string &n) {
  std::string row = std::to_string(ld);
  if (nMajor)
    return "kiln_ldmatrix_x4(r, " + tile + " + (" + n + " + lane / 16 * 8 + lane % 8) * " + row +
           " + " + k + " + lane / 8 % 2 * 8);";
  return "kiln_ldmatrix_x4_trans(r, " + tile + " + (" + k + " + lane % 16) * " + row + " + " + n +
         " + lane / 16 * 8);";
}

/// A kernel that failed keeps only its reason: no half-written text.
inline void discardIfFailed(GeneratedKernel &kernel) {
  if (kernel.reason.empty())
    return;
  kernel.name.clear();
  kernel.source.clear();
  kernel.inputArgs.clear();
  kernel.paramTypes.clear();
  kernel.paramBytes.clear();
  kernel.paramDTypes.clear();
  kernel.sizeArgs.clear();
  kernel.gridCode.clear();
  kernel.paramByteCodes.clear();
  kernel.flopsCode.clear();
}

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_CODEGEN_KERNELEMITTER_H
