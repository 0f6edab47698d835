//===- CostModel.h - how long a matmul takes, by implementation -*- C++ -*-===//
//
// The default judge between a cuBLASLt call and kiln's generated kernel for
// a matmul region (until --autotune measures them). A roofline: the larger
// of compute time (FLOPs at a fraction of the unit's peak) and memory time
// (bytes at the GPU's bandwidth), plus a fixed cost per call. The fractions
// say how close each implementation gets to peak; the generated kernels'
// fraction also pays for wave quantization (a partly filled last wave of
// blocks). docs/lowering.md lists the numbers and where they come from.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_COSTMODEL_H
#define KILN_LOWERING_COSTMODEL_H

#include <cstdint>
#include <string>

namespace mlir {
namespace kiln {

/// The GPU a compile targets, by compute capability (its first --arch).
struct GpuSpec {
  std::string name;
  int arch;                 ///< 90 for sm_90
  int sms;                  ///< streaming multiprocessors
  double cudaCoreTflops;    ///< dense f32 FMA on CUDA cores
  double tf32Tflops;        ///< dense TF32 on Tensor Cores
  double halfTflops;        ///< dense f16/bf16 on Tensor Cores, f32 accumulation
  double bandwidthGBs;      ///< device memory
  uint64_t defaultWorkspace; ///< cuBLASLt workspace NVIDIA recommends, bytes
};

/// The spec for `arch`: sm_90 (H100 SXM), sm_80 (A100 SXM), or the newest
/// listed one not newer than `arch`.
const GpuSpec &gpuSpecFor(int arch);

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1; ///< row-major M x K times K x N
  int64_t bytesMoved = 0;  ///< operands read plus result written, once
  bool tensorCores = false; ///< f16/bf16, or f32 with TF32 allowed
  bool tf32 = false;
};

struct GemmEstimate {
  double generatedUs = 0, libraryUs = 0;
};

GemmEstimate estimateGemm(const GpuSpec &gpu, const GemmProblem &problem);

} // namespace kiln
} // namespace mlir

#endif // KILN_LOWERING_COSTMODEL_H
