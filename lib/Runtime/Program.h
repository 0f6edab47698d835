//===- Program.h - a validated executable in memory -------------*- C++ -*-===//
//
// The loader turns the FlatBuffers payload into these plain structures after
// checking every index, size and offset, so the scheduler and the kernels
// never touch unchecked data.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_PROGRAM_H
#define KILN_LIB_RUNTIME_PROGRAM_H

#include "kiln/Runtime/Runtime.h"

#include "kiln/Reference/Ops.h"
#include "kiln/Runtime/ConvCall.h"
#include "kiln/Runtime/GemmCall.h"

#include <optional>

namespace kiln {
namespace rt {

enum class ValueKind : uint8_t { Input, Weight, Buffer };

struct ValueDesc {
  ValueKind kind;
  uint64_t index; ///< input index, weight index or arena offset
  TensorSpec type;
};

struct OpDesc {
  std::string name; ///< "kiln.matmul"
  ref::OpAttrs attrs;
  std::vector<uint32_t> operands; ///< step-local value indices
  std::vector<TensorSpec> results;
  std::string location;

};

/// Whether values of `t` are f32 elements in row-major order: what the CPU
/// kernels, the host GEMM and the f32 loops take.
inline bool isRowMajorF32(const TensorSpec &t) {
  return t.dtype == ref::DType::F32 && t.dimOrder.empty();
}

/// Whether compiled CPU kernels read values of `dtype`: f32, and the
/// integers and booleans their casts and comparisons take (not u64, which
/// the reference holds as int64).
inline bool isCpuKernelReadable(ref::DType dtype) {
  switch (dtype) {
  case ref::DType::F32: case ref::DType::I1: case ref::DType::I8: case ref::DType::U8:
  case ref::DType::I16: case ref::DType::U16: case ref::DType::I32: case ref::DType::U32:
  case ref::DType::I64:
    return true;
  default:
    return false;
  }
}

/// A run of a step's ops computed by native CPU code (the executable's
/// "elf-rel" device code): ops [firstOp, firstOp + opCount).
struct CpuKernelDesc {
  std::string symbol;
  uint32_t firstOp = 0, opCount = 0;
  std::vector<uint32_t> reads, writes; ///< step-local values, row-major (writes f32)
  int64_t elements = 0;                ///< of each written value
  int64_t row = 1; ///< ranges start and end at multiples of this (a reduction's rows)
  /// Counts the code reads at run time, passed after the read pointers.
  std::vector<int64_t> counts;
};

struct StepDesc {
  std::string name;
  std::string kind; ///< fusion region kind, empty for one unfused op
  uint32_t stream = 0;
  int64_t event = -1;
  std::vector<uint32_t> waits;
  std::vector<uint32_t> inputs;  ///< value indices
  std::vector<uint32_t> outputs; ///< value indices (buffers)
  std::vector<OpDesc> ops;
  std::vector<uint32_t> yields;  ///< step-local value index per output
  /// The generated kernel computing the step on a device ("" for none),
  /// its launch, and which step inputs it takes (then every output).
  std::string kernel;
  uint32_t grid = 0, block = 0;
  uint32_t dynamicShared = 0; ///< bytes per block
  std::vector<uint32_t> kernelInputs;
  /// A kernel over symbolic sizes: the sizes it takes after its buffers
  /// (`long long` parameters), evaluated for the program's symbol values,
  /// and their codes as the file has them (what cuda-emu compares with the
  /// kernel's record).
  std::vector<int64_t> kernelSizes;
  std::vector<std::vector<int64_t>> kernelSizeCodes;
  /// The cuBLASLt call computing the step on a GPU (then there is no
  /// kernel); validated against the step's buffers and the arena.
  std::optional<GemmCall> gemm;
  /// The cuDNN convolution computing the step on a GPU, likewise.
  std::optional<ConvCall> conv;
  /// Runs of ops computed by native CPU code, in op order.
  std::vector<CpuKernelDesc> cpuKernels;
};

struct DeviceCodeDesc {
  std::string target; ///< "sm_90", "cuda-emu"
  std::string format; ///< "ptx", "cubin", "elf-so"
  const uint8_t *data = nullptr; ///< in the mapped file
  uint64_t size = 0;
};

struct WeightDesc {
  std::string name;
  const uint8_t *data = nullptr; ///< in the mapped file
  uint64_t size = 0;
};

struct Program {
  std::string name;
  std::vector<uint32_t> inputValues, outputValues;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<ValueDesc> values;
  std::vector<WeightDesc> weights;
  uint64_t arenaBytes = 0;
  uint32_t numStreams = 1;
  uint32_t numEvents = 0;
  std::vector<StepDesc> steps;
  std::vector<DeviceCodeDesc> deviceCode;
  /// Host library calls must give the same bits on any thread count
  /// (kilnc --deterministic for --target=cpu).
  bool deterministic = false;
  /// The size symbols' values the program is built for (empty for a static
  /// executable).
  std::vector<int64_t> symbolValues;
};

/// Whether `step` only moves one value from one device to another (a
/// kiln.transfer): on the GPU a copy, on the host devices a memcpy.
bool isTransferStep(const StepDesc &step);

/// Why buffer `value` of `from` cannot be copied into `to` (two
/// specialisations of one executable, across a length read mid-run), or
/// empty: the value's bytes, `bytes`, agree.
std::string whyNotCopyable(const Program &to, const Program &from, uint32_t value,
                           uint64_t &bytes);

/// Why element `element` of `program`'s value `value` is no i64 a length
/// can read, or empty.
std::string whyNotI64Element(const Program &program, uint32_t value, int64_t element);

/// How a step computes on a GPU, as errors, timings and traces name it:
/// "copy", "cuBLASLt", "cuDNN", "kernel" or "host".
const char *stepCategory(const StepDesc &step);

/// How every run-time error about a step begins: "step #3 'name' (fused
/// matmul_epilogue, kernel fused_3, ops at model.kg:4:9, model.kg:5:3)".
/// The model locations travel in the executable with each op.
std::string stepLabel(size_t index, const StepDesc &step);

/// The model locations of a step's ops, each once, in op order.
std::vector<std::string> opLocations(const StepDesc &step);

/// The largest power of two dividing `p`, at most kLibraryAlignment (256):
/// the alignment a buffer at `p` can promise a library (cuBLASLt and cuDNN
/// assume 256 unless told).
uint32_t pointerAlignment(const void *p);

/// How the CPU computes a step: with its compiled kernels, the host GEMM
/// and the f32 loops (Fast), or every op by the double-precision reference
/// evaluator (Reference, --device=reference: the answer tests compare to).
enum class CpuMode { Fast, Reference };

using CpuKernelFn = void (*)(const void *const *, float *const *, int64_t, int64_t);

class HostConvCache;

/// What a step's CPU runs keep from one run to the next.
struct CpuStepResources {
  /// The step's compiled runs (CpuCode.h), one per step.cpuKernels; without
  /// them the runs' ops are computed one by one.
  const std::vector<CpuKernelFn> *kernels = nullptr;
  /// Its convolutions' oneDNN primitives (HostConv.h); without, each call
  /// makes its own.
  HostConvCache *convolutions = nullptr;
  /// Run the stand-in instead of each kernel (SessionOptions::cpuKernelStandIns).
  bool kernelStandIns = false;
};

/// Runs one step of `program` on the CPU: reads its inputs, computes its ops,
/// writes its outputs.
Status runStepOnCpu(const Program &program, const StepDesc &step,
                    const std::vector<const uint8_t *> &inputs,
                    const std::vector<uint8_t *> &outputs, CpuMode mode = CpuMode::Fast,
                    const CpuStepResources &resources = {});

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_PROGRAM_H
