//===- Passes.td - graph to execution plan -----------------*- tablegen -*-===//

#ifndef KILN_LOWERING_PASSES_TD
#define KILN_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFormSteps : Pass<"kiln-form-steps", "func::FuncOp"> {
  let summary = "Wrap each graph op in an exec.step (graph to execution plan)";
  let description = [{
    Every `kiln.fusion` region becomes one `exec.step` that takes over its
    body (with `kind` naming the region's kind); every other kiln op except
    constants and weights becomes one step whose region holds it. Constants
    and weights stay outside: they are the executable's weight section and
    are step inputs like model inputs. Constants that fusion cloned into a
    region move back out for the same reason.
  }];
  let dependentDialects = ["::mlir::kiln::exec::ExecDialect"];
}

def KilnSelectImplementations : Pass<"kiln-select-impl", "func::FuncOp"> {
  let summary = "Choose a library call (cuBLASLt, cuDNN) or a generated kernel per step";
  let description = [{
    For every step that computes a matmul (one matmul, a matmul_epilogue,
    horizontal or conv_epilogue region, or one conv2d) sets `impl`
    ("cublaslt", "cudnn" or "generated") and `impl_reason`, which says why.
    A matmul step becomes a cuBLASLt call when its epilogue is one cuBLASLt
    has (alpha * A*B + beta * residual + bias, then ReLU) and the cost model
    (docs/lowering.md) expects the call to be faster, or always with
    `impl=library`; the call's descriptor, in cuBLASLt's column-major terms,
    is the step's `gemm` attribute. A convolution step (NCHW, with a
    per-channel bias and ReLU at most) becomes a cuDNN graph the same way
    (`conv` attribute), and always when it is f16/bf16 (kiln generates f32
    convolutions only). Other steps are left alone: the kernel generator
    handles them.

    `precision=tf32` lets f32 calls use CUBLAS_COMPUTE_32F_FAST_TF32;
    `deterministic` marks calls so that the runtime excludes split-K
    reductions; `workspace-limit` caps each call's workspace (the buffer
    plan reserves it, one per stream). With `tuning-cache`, problems that
    `kilnc --autotune` measured are decided by the measurements.
  }];
  let options = [
    Option<"arch", "arch", "int64_t", /*default=*/"90",
           "Compute capability the cost model assumes (90 = sm_90)">,
    Option<"precision", "precision", "std::string", /*default=*/"\"strict\"",
           "strict (f32 stays f32) or tf32 (f32 matmuls may round inputs to TF32)">,
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "Only algorithms whose results are the same on every run">,
    Option<"workspaceLimit", "workspace-limit", "int64_t", /*default=*/"-1",
           "Most bytes of library workspace per call (-1: the GPU's recommended size)">,
    Option<"impl", "impl", "std::string", /*default=*/"\"auto\"",
           "auto (cost model), library (cuBLASLt wherever it can), generated (never)">,
    Option<"tuningCache", "tuning-cache", "std::string", /*default=*/"\"\"",
           "File of measured times (kilnc --autotune): a measured problem is decided by them">,
  ];
}

def KilnAssignStreams : Pass<"kiln-assign-streams", "func::FuncOp"> {
  let summary = "Put independent branches on different streams, with events";
  let description = [{
    Walks the steps in program order. A step continues the stream of a
    producer that is that stream's latest step; otherwise it opens a new
    stream while fewer than `max-streams` exist, else joins its first
    producer's stream (or stream 0). A step waits for the event of each
    producer on another stream unless an earlier wait already covers it
    (tracked with vector clocks), and a producer that is waited for signals
    an event. `max-streams=1` gives a serial plan, which lets buffer
    assignment reuse the most memory.
  }];
  let options = [
    Option<"maxStreams", "max-streams", "int64_t", /*default=*/"4",
           "Most streams to use (1 = serial)">,
  ];
}

def KilnAssignBuffers : Pass<"kiln-assign-buffers", "func::FuncOp"> {
  let summary = "Place step results in one arena, reusing dead buffers";
  let description = [{
    Gives every step result an offset in the function's arena. A buffer can
    be reused by a step only once its producer and all its readers are
    ordered before that step (same stream, or through events): buffers of
    concurrent branches never alias. Function results are live to the end.
    Library calls' workspaces (a step's `gemm` or `conv` descriptor) follow the
    buffers, one per stream sized for its largest call; such steps get
    `workspace_offset`. Sets `exec.arena_bytes` (the peak, workspaces
    included), `exec.workspace_bytes` (the workspaces' share, when there
    are any) and `exec.unshared_bytes` (the sum of all buffers, what no
    reuse would need) on the function. Buffers a cuBLASLt or cuDNN call
    reads or writes, and the workspaces, are 256-byte aligned (as cudaMalloc
    gives them), so the libraries' fastest algorithms apply.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of every buffer, in bytes (library buffers: at least 256)">,
  ];
}

#endif // KILN_LOWERING_PASSES_TD
