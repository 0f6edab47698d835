//===- DevicePrelude.h - device functions generated kernels share -*- C++ -*-===//
//
// The warp-level matrix and vector-memory instructions kiln's kernels use
// (cp.async, ldmatrix, mma.sync, 16-byte accesses), as CUDA C++ with inline
// PTX for NVRTC. The text sits in #ifndef KILN_CUDA_EMU: cuda-emu's header
// defines the same names as emulations (include/kiln/CudaEmu/cuda_emu.h),
// so one kernel text serves both.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_DEVICEPRELUDE_H
#define KILN_CODEGEN_DEVICEPRELUDE_H

namespace kiln {
namespace codegen {

/// The prelude's text; a kernel that uses any of its functions starts with it
/// (guarded: a translation unit holds every kernel of a model).
const char *devicePrelude();

} // namespace codegen
} // namespace kiln

#endif // KILN_CODEGEN_DEVICEPRELUDE_H
