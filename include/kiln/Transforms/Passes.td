//===- Passes.td - kiln graph passes -----------------------*- tablegen -*-===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnQuantizedWeights : Pass<"kiln-quantized-weights", "func::FuncOp"> {
  let summary = "Keep weight-only quantised weights quantised where dequantising them at compile time would grow the executable";
  let description = [{
    Exporters write a weight-only quantised weight as `mul(cast(Wq), scale)`:
    an integer weight, converted and scaled by a float constant. Folding that
    stores the weight dequantised, four times the bytes of int8. Instead:
    - A gather (an embedding table) reads the rows it needs and dequantises
      only those: gather(mul(cast(Wq), s), ids) -> mul(cast(gather(Wq, ids)), s)
      when the scale does not vary along the gathered axis.
    - With `in-gemm` (targets whose generated matmul kernels dequantise in
      their tile loads), the right operand of matmuls whose dequantised
      weight is at least `min-bytes` keeps Wq: the cast is marked
      `kiln.dequantize_in_gemm`, which the constant folder leaves alone and
      epilogue fusion moves into the matmul's region.
    Anything else is folded as usual. With `report`, every decision is a
    remark that gives the bytes either way.
  }];
  let options = [
    Option<"inGemm", "in-gemm", "bool", /*default=*/"false",
           "Matmul kernels dequantise their right operand in their tile loads">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1024 * 1024",
           "Smallest dequantised matmul weight kept quantised (smaller ones are folded)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "A remark for each quantised weight: kept, rewritten or folded, and the bytes">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnExpandGradients : Pass<"kiln-expand-gradients", "func::FuncOp"> {
  let summary = "Replace each kiln.gradient op by the vector-Jacobian products it stands for";
  let description = [{
    Each `kiln.gradient` (ONNX's Gradient) becomes the backward graph of
    the ops computing its value, seeded with ones, with respect to its
    operands: kiln-grad's reverse sweep and rules, ordinary kiln ops built
    where the op was (zeros for an operand its value does not depend on).
    An op without a derivative on the way is an error at its location,
    every such op at once. Runs first, before any pass that would meet the
    op.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnGrad : Pass<"kiln-grad", "func::FuncOp"> {
  let summary = "Append the backward graph of a scalar output: its gradient with respect to every trainable weight";
  let description = [{
    Reverse-mode autodiff at compile time. The output named `loss` (a float
    scalar) is differentiated with respect to every float `kiln.weight`
    whose name `trainable` matches (an extended regular expression searched
    for in the name, as grep does: anchor it with ^ and $; all by default): the vector-Jacobian product of each op, from one rule per op
    (lib/Transforms/Autodiff/GradRules.cpp), appended as ordinary kiln ops. The
    function then returns the loss and one output per such weight W, named
    "grad.W", of W's type (zeros where the loss does not depend on W); its
    other outputs are dropped. Ops the loss depends on through a trainable
    weight without a derivative are one error that names each at its
    location. Runs first, so that every later pass treats the backward
    graph as any graph.
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "The name of the scalar output to differentiate">,
    Option<"trainable", "trainable", "std::string", /*default=*/"\".*\"",
           "Which weights are differentiated: a regular expression their names match">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnOptimizer : Pass<"kiln-optimizer", "func::FuncOp"> {
  let summary = "Turn kiln-grad's gradients into one training step: weights and optimizer state become states the runtime keeps";
  let description = [{
    On a function kiln-grad made (the loss, then grad.W per weight), each
    such weight W becomes a state input named W (argument attributes
    `kiln.state`, its initial value, and `kiln.state_output`, the output
    holding its next value), updated by `optimizer`: sgd, momentum (a
    state W.velocity) or adam (states W.m, W.v and adam.step), with
    learning rate `lr` and L2 `weight-decay`. The function returns the loss
    and every state's next value, named as the state; the runtime feeds
    each back for the next step (docs/training.md).
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, momentum or adam">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "Learning rate">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 weight decay, added to each gradient as weight-decay * W">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9", "momentum's coefficient">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's first-moment decay">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's second-moment decay">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8", "Adam's epsilon">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnRematerialize : Pass<"kiln-remat", "func::FuncOp"> {
  let summary = "Choose which forward values the backward pass reads saved and which it recomputes, under a memory budget";
  let description = [{
    On a function kiln-grad differentiated: the forward ops are those the
    output named `loss` depends on, the backward ops the others. Every
    forward value a backward op reads is either saved (kept alive from the
    forward pass) or recomputed just before its first backward reader from
    saved values, inputs and weights. The choice is a minimum cut over the
    forward graph (AOTAutograd's partitioner), each value's bytes its cost,
    with recomputation of the ops worth the most FLOPs per byte banned
    first (matmuls, convolutions, reductions before elementwise ops); each
    plan recomputes once for all readers or once per backward reader,
    whichever peaks lower. Plans are kept in a chain along which the saved
    bytes and the estimated peak of live values both fall (the peak by more
    than 5%); `budget` F takes the first, from "save
    everything the backward reads, recompute nothing" (F = 1), whose saved
    bytes are at most F times those (PyTorch's activation memory budget),
    else the last: a smaller budget never saves more nor peaks higher.
    `report` makes remarks: the plan, and saved bytes per layer.
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "The name of the scalar output kiln-grad differentiated">,
    Option<"budget", "budget", "double", /*default=*/"1.0",
           "At most this fraction of the bytes saved recomputing nothing, 0 to 1">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Remarks: saved and recomputed bytes, FLOPs, peaks, saved bytes per layer">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnConstantFold : Pass<"kiln-constant-fold", "func::FuncOp"> {
  let summary = "Evaluate every op whose operands are all constants or weights";
  let description = [{
    Runs the reference evaluator (the same code as the CPU backend) on every
    kiln op whose operands are all `kiln.constant` or `kiln.weight`, and
    replaces it with a `kiln.constant`, whatever its size: no plan step
    computes from weights alone. A budget bounds the compile: once folding
    would take more than `budget-seconds` by its estimate (about 1e8
    multiply-adds or elements a second; an estimate, not the clock, so the
    same model folds the same ops on any machine), or an op's result would
    pass `budget-bytes` of folded constants in all, the ops left are not
    folded, each with a warning. (The one exception by design: casts marked
    `kiln.dequantize_in_gemm` by kiln-quantized-weights.) With `report`, a
    remark at the function says what was folded, in what time, against the
    budget.
  }];
  let options = [
    Option<"budgetSeconds", "budget-seconds", "double", /*default=*/"60.0",
           "Compile time folding may take, in seconds as estimated from each op's cost">,
    Option<"budgetBytes", "budget-bytes", "int64_t", /*default=*/"int64_t(4) << 30",
           "Bytes of constants folding may create, in all">,
    Option<"report", "report", "bool", /*default=*/"false",
           "A remark with the ops folded, their bytes and the time taken">,
  ];
  let statistics = [
    Statistic<"numFolded", "num-folded", "Ops replaced by constants">,
    Statistic<"numOverBudget", "num-over-budget",
              "Ops left alone because the folding budget was spent">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnDeadCodeElimination : Pass<"kiln-dce", "func::FuncOp"> {
  let summary = "Remove ops and weights whose results are never used";
  let description = [{
    Walks each function body backwards and erases side-effect-free ops whose
    results have no uses, so a chain that only fed a dead value goes in one
    pass. Function arguments (the model's inputs) are part of the signature
    and are kept even when unused.
  }];
  let statistics = [
    Statistic<"numErasedOps", "num-erased-ops", "Dead ops erased">,
    Statistic<"numErasedWeights", "num-erased-weights",
              "Dead constants and weights erased">,
  ];
}

def KilnAssignLayouts : Pass<"kiln-assign-layouts", "func::FuncOp"> {
  let summary = "Give every tensor the layout its implementation reads and writes";
  let description = [{
    kiln's generated kernels and its cuBLASLt calls read and write row-major
    tensors (NCHW for convolutions). This pass makes every value computed
    inside the function row-major, converting only at the boundary: one
    `kiln.relayout` per model input or result whose declared layout differs
    (the signature keeps the layouts the user declared). Weights and
    constants change layout for free (their data is logical; the executable
    stores them in their type's layout), the model's own `kiln.relayout`
    ops between computed values disappear (a relayout is the same logical
    tensor), and every op's result type is inferred again from its now
    row-major operands. A conversion at an input is a loop kernel that reads
    the old layout and writes row-major, and loop fusion may take it into
    the next elementwise kernel.

    One exception: Tensor Core convolutions (f16 or bf16, ungrouped, input
    and output channels multiples of 8, a filter constant of their own),
    which cuDNN computes, run channels last (NHWC input and output, KRSC
    filter), as its fast and fused engines want; the epilogue cuDNN fuses
    after them (one per-channel bias, then ReLU) stays channels last, and
    one conversion back follows. Convolutions reading one value share its
    conversion; one that feeds another such convolution hands it channels
    last.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnFoldBatchNorm : Pass<"kiln-fold-batch-norm", "func::FuncOp"> {
  let summary = "Fold inference batch norm into the convolution before it";
  let description = [{
    `batch_norm(conv2d(x, W, b), scale, beta, mean, variance)` becomes
    `conv2d(x, W * a, (b - mean) * a + beta)` with `a = scale /
    sqrt(variance + epsilon)` per output channel, computed in double and
    rounded once to f32, when the convolution is f32 and row-major, only the
    normalisation reads it, its filter is a constant of its own and the
    bias and the normalisation's parameters are constants. Used on
    `--target=cpu`, where the convolution's oneDNN call then takes the ReLU
    and residual add after it as post-ops. The folded convolution's
    location fuses both ops' locations.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnCpuChannelsLast : Pass<"kiln-cpu-channels-last", "func::FuncOp"> {
  let summary = "Keep f32 convolution chains channels last on the CPU";
  let description = [{
    The CPU runs f32 convolutions as oneDNN primitives, whose fast kernels
    read and write NHWC; on row-major (NCHW) values each call pays a reorder
    of its input and of its output. This pass gives `--target=cpu` chains
    of them in NHWC instead, as ONNX Runtime keeps its NCHWc layout across
    a network: every f32 2-D convolution with a filter constant of its own
    runs channels last (NHWC input and output, a KRSC filter: retyped, as
    its data is logical), and so does every f32 elementwise op (batch norm,
    ReLU, a residual add) and max pooling that reads a channels-last value,
    with its other full-size operands converted to channels last (per-
    channel and scalar operands broadcast in either layout), max pooling
    and global average pooling (its [N, C, 1, 1] result is the same bytes
    in either layout: converting it back is a copy). Any other reader gets
    one `kiln.relayout` back to row-major per value, and so do the
    function's results.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnPlace : Pass<"kiln-place", "func::FuncOp"> {
  let summary = "Put each op on the target device, or on the host where it has no device code or the host is cheaper";
  let description = [{
    Moves every op that kiln has device code for (whyNoDeviceCode in
    kiln/IR/OpClasses.h, the list the kernel emitters consult) onto
    `device`, by giving its results that device. An op without device code
    stays on the host, with a warning naming the op, its location and why.
    One cost model may keep an op with device code on the host too: when it
    continues a host chain (every operand is a model input, a literal or a
    host op's result, and at least one is a host op's), and its host time
    (1 ns an element, 0.1 ns a multiply-add) is less than what the device
    would cost (a launch, 5 us; per copy in or out, 10 us plus its bytes at
    25 GB/s). So a small shape computation after a host op stays there,
    never a single op between two device ops. `host-ops` keeps the named
    ops on the host whatever their device code (to compare one op's kernel
    against the reference). `kiln.transfer` ops are
    inserted wherever a value crosses between the two (one per value and
    direction): model inputs are copied to the device where device ops
    read them, and results back to the host for the function's return, so
    the signature stays on the host. Weights and constants only device ops
    read move to the device. With `no-host-fallback`, the cost model is off
    and an op that would stay on the host is an error instead, reported at
    every such op before the pass fails (the strict mode of TensorRT's
    users: the whole model on the GPU, or a list of what is missing).
  }];
  let options = [
    Option<"device", "device", "std::string", /*default=*/"\"cuda:0\"",
           "The device to place ops on (cuda:N)">,
    Option<"warn", "warn", "bool", /*default=*/"true",
           "Warn about every op that stays on the host">,
    Option<"noHostFallback", "no-host-fallback", "bool", /*default=*/"false",
           "Fail, with an error at every op that would stay on the host (each "
           "with its reason), rather than run it there">,
    ListOption<"hostOps", "host-ops", "std::string",
               "Ops (names without the dialect, e.g. softmax) to keep on the host "
               "whatever their device code: the reference's answer for one op, to "
               "tell a kernel's error from the rest of a model's">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

// Options every fusion pass takes: whether to explain its decisions as
// remarks, and the bounds on a region's size.
class Kiln_FusionPass<string arg, string sum> : Pass<arg, "func::FuncOp"> {
  let summary = sum;
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark for every candidate: fused or not, and why">,
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"32",
           "Most graph ops in one region">,
    Option<"maxInputs", "max-inputs", "int64_t", /*default=*/"12",
           "Most region inputs (kernel parameters)">,
    Option<"maxLive", "max-live", "int64_t", /*default=*/"16",
           "Most intermediate values alive at once in a region: a proxy for the "
           "registers its kernel needs per element">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnFuseAttention : Kiln_FusionPass<"kiln-fuse-attention",
    "Recognize matmul - scale - (mask) - softmax - matmul as one attention region"> {
  let description = [{
    Finds `matmul(softmax(mask(scale(matmul(q, k)))), v)` with the softmax
    over the last axis, where the scale is a multiplication or division by a
    splat constant and the mask an addition or a `select`, both optional,
    and every intermediate has no other user; replaces it by a `kiln.fusion
    attention` region taking q, k, v (and the mask).
  }];
}

def KilnFuseSiblings : Kiln_FusionPass<"kiln-fuse-siblings",
    "Horizontal fusion: sibling matmuls reading one input become one wider matmul"> {
  let description = [{
    Matmuls that read the same left operand with weights of the same dtype
    and contraction size as right operands (e.g. the Q, K and V
    projections) become one `kiln.fusion horizontal` region: one matmul with
    the weights concatenated at compile time, the bias adds that each
    sibling may have (a weight vector) concatenated the same way, and one
    slice per sibling, which a kernel's epilogue stores to separate buffers.
  }];
}

def KilnFuseReductions : Kiln_FusionPass<"kiln-fuse-reductions",
    "Reduction (input) fusion: elementwise producers and consumers into a reduction"> {
  let description = [{
    Each reduction or row-wise normalisation (reduce_*, argmax, softmax,
    log_softmax, layer_norm, global_avg_pool) absorbs the elementwise ops
    that compute its input (a cheap producer that has other users is
    duplicated; an expensive one is not) and the chain of single-user
    elementwise ops that consume its result at the same shape.
  }];
}

def KilnFuseEpilogues : Kiln_FusionPass<"kiln-fuse-epilogues",
    "GEMM and convolution epilogue fusion: bias, activation, scaling, residual, cast"> {
  let description = [{
    Each matmul or conv2d absorbs the chain of elementwise ops that consume
    its result at the result's shape (bias add, activation, scaling,
    residual add, output cast, and for convolutions inference batch
    normalisation), as long as each link has a single user: a matmul whose
    result is needed elsewhere keeps its consumers apart rather than being
    computed twice.
  }];
}

def KilnFuseLoops : Kiln_FusionPass<"kiln-fuse-loops",
    "Loop fusion: trees of elementwise ops, broadcasts and free reshapes"> {
  let description = [{
    Groups the remaining elementwise ops, with the broadcasts and row-major
    reshapes (which move no data), into `kiln.fusion loop` regions: one
    kernel that reads each input once and writes each result once. Grows
    each region from its last op towards its producers; a producer with
    other users joins only when it is cheap to recompute (duplicated), never
    an expensive one.
  }];
}

#endif // KILN_TRANSFORMS_PASSES_TD
