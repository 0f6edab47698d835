//===- KilnOps.td - kiln graph operations ------------------*- tablegen -*-===//
//
// Every op is pure (value semantics) and, except for constants and weights,
// infers its result type from its operands and attributes: a model states
// only its input types.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNOPS_TD
#define KILN_IR_KILNOPS_TD

include "kiln/IR/KilnBase.td"
include "kiln/IR/KilnAttrs.td"
include "kiln/IR/KilnTraits.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, !listconcat([Pure], traits)>;

/// An op whose result type is inferred; printed with the full functional
/// type so every dump shows every operand's and result's type.
class Kiln_InferredOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([InferTypeOpAdaptor], traits)> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Constants and weights
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike]> {
  let summary = "A tensor literal embedded in the graph";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_IotaOp : Kiln_Op<"iota"> {
  let summary = "0, 1, ..., length - 1 (i64)";
  let description = [{
    The indices of a length known only at run time (a Range, a window or a
    OneHot depth given as a model input): `length` maps the size symbols to
    it, and the result is that one dimension. Constant lengths are
    constants.
  }];
  let arguments = (ins AffineMapAttr:$length);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_WeightOp : Kiln_Op<"weight",
    [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A named model parameter";
  let description = [{
    A parameter of the model (an ONNX initializer, a .kg `weight`). Unlike
    `kiln.constant` it keeps its name so that executables, dumps and errors
    can refer to it, and algebraic folds do not look through it.
  }];
  let arguments = (ins StrAttr:$name, ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$name `=` $value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, Type operandType, string desc,
                   list<Trait> traits = []>
    : Kiln_InferredOp<mnemonic, !listconcat([Kiln_ElementwiseFamily], traits)> {
  let summary = desc;
  let arguments = (ins operandType:$input);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_NegOp     : Kiln_UnaryOp<"neg", Kiln_Tensor, "Elementwise negation"> { let hasFolder = 1; }
def Kiln_AbsOp     : Kiln_UnaryOp<"abs", Kiln_Tensor, "Elementwise absolute value">;
def Kiln_ExpOp     : Kiln_UnaryOp<"exp", Kiln_FloatTensor, "Elementwise e^x">;
def Kiln_LogOp     : Kiln_UnaryOp<"log", Kiln_FloatTensor, "Elementwise natural logarithm">;
def Kiln_SqrtOp    : Kiln_UnaryOp<"sqrt", Kiln_FloatTensor, "Elementwise square root">;
def Kiln_RsqrtOp   : Kiln_UnaryOp<"rsqrt", Kiln_FloatTensor, "Elementwise 1/sqrt(x)">;
def Kiln_TanhOp    : Kiln_UnaryOp<"tanh", Kiln_FloatTensor, "Elementwise hyperbolic tangent">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", Kiln_FloatTensor, "Elementwise 1/(1+e^-x)">;
def Kiln_ReluOp    : Kiln_UnaryOp<"relu", Kiln_Tensor, "Elementwise max(x, 0)">;
def Kiln_GeluOp    : Kiln_UnaryOp<"gelu", Kiln_FloatTensor, "Elementwise GELU, exact (erf) form">;
def Kiln_ErfOp     : Kiln_UnaryOp<"erf", Kiln_FloatTensor, "Elementwise error function">;
def Kiln_NotOp     : Kiln_UnaryOp<"not", Kiln_BoolTensor, "Elementwise logical not"> { let hasFolder = 1; }
def Kiln_FloorOp : Kiln_UnaryOp<"floor", Kiln_FloatTensor, "Elementwise round toward negative infinity">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", Kiln_FloatTensor, "Elementwise round toward positive infinity">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", Kiln_FloatTensor, "Elementwise round half to even">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", Kiln_FloatTensor, "Elementwise sine">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", Kiln_FloatTensor, "Elementwise cosine">;
def Kiln_TanOp : Kiln_UnaryOp<"tan", Kiln_FloatTensor, "Elementwise tangent">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", Kiln_FloatTensor, "Elementwise arcsine">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", Kiln_FloatTensor, "Elementwise arccosine">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", Kiln_FloatTensor, "Elementwise arctangent">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", Kiln_FloatTensor, "Elementwise hyperbolic sine">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", Kiln_FloatTensor, "Elementwise hyperbolic cosine">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", Kiln_FloatTensor, "Elementwise inverse hyperbolic sine">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", Kiln_FloatTensor, "Elementwise inverse hyperbolic cosine">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", Kiln_FloatTensor, "Elementwise inverse hyperbolic tangent">;
def Kiln_SignOp : Kiln_UnaryOp<"sign", Kiln_Tensor, "Elementwise -1, 0 or 1 by the sign of x">;

//===----------------------------------------------------------------------===//
// Elementwise binary, NumPy-style broadcasting
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, Type operandType, string desc,
                    list<Trait> traits = []>
    : Kiln_InferredOp<mnemonic, !listconcat([Kiln_ElementwiseFamily], traits)> {
  let summary = desc;
  let description = [{
    Operands broadcast NumPy-style to a common shape; both must have the same
    element type and device. Operands of the result's rank must share one
    layout; lower-rank (broadcast) operands must be row-major.
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_AddOp : Kiln_BinaryOp<"add", Kiln_Tensor, "Elementwise addition", [Commutative]> { let hasFolder = 1; }
def Kiln_SubOp : Kiln_BinaryOp<"sub", Kiln_Tensor, "Elementwise subtraction"> { let hasFolder = 1; }
def Kiln_MulOp : Kiln_BinaryOp<"mul", Kiln_Tensor, "Elementwise multiplication", [Commutative]> { let hasFolder = 1; }
def Kiln_DivOp : Kiln_BinaryOp<"div", Kiln_Tensor, "Elementwise division (integer division truncates)"> { let hasFolder = 1; }
def Kiln_PowOp : Kiln_BinaryOp<"pow", Kiln_FloatTensor, "Elementwise lhs^rhs"> { let hasFolder = 1; }
def Kiln_MaxOp : Kiln_BinaryOp<"max", Kiln_Tensor, "Elementwise maximum", [Commutative]> { let hasFolder = 1; }
def Kiln_MinOp : Kiln_BinaryOp<"min", Kiln_Tensor, "Elementwise minimum", [Commutative]> { let hasFolder = 1; }
def Kiln_AndOp : Kiln_BinaryOp<"and", Kiln_BoolTensor, "Elementwise logical and", [Commutative]> { let hasFolder = 1; }
def Kiln_OrOp  : Kiln_BinaryOp<"or", Kiln_BoolTensor, "Elementwise logical or", [Commutative]> { let hasFolder = 1; }
def Kiln_ModOp : Kiln_BinaryOp<"mod", Kiln_Tensor, "Elementwise remainder: with the sign of the divisor, or of the dividend when fmod is set"> {
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs, DefaultValuedAttr<BoolAttr, "false">:$fmod);
}

class Kiln_CompareOp<string mnemonic, string desc, list<Trait> traits = []>
    : Kiln_BinaryOp<mnemonic, Kiln_Tensor, desc, traits> {
  let results = (outs Kiln_BoolTensor:$result);
}

def Kiln_EqOp : Kiln_CompareOp<"eq", "Elementwise ==, i1 result", [Commutative]>;
def Kiln_NeOp : Kiln_CompareOp<"ne", "Elementwise !=, i1 result", [Commutative]>;
def Kiln_LtOp : Kiln_CompareOp<"lt", "Elementwise <, i1 result">;
def Kiln_LeOp : Kiln_CompareOp<"le", "Elementwise <=, i1 result">;
def Kiln_GtOp : Kiln_CompareOp<"gt", "Elementwise >, i1 result">;
def Kiln_GeOp : Kiln_CompareOp<"ge", "Elementwise >=, i1 result">;

def Kiln_SelectOp : Kiln_InferredOp<"select", [Kiln_ElementwiseFamily]> {
  let summary = "Elementwise cond ? lhs : rhs (ONNX Where), broadcasting";
  let arguments = (ins Kiln_BoolTensor:$cond, Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_CastOp : Kiln_InferredOp<"cast", [Kiln_ElementwiseFamily]> {
  let summary = "Elementwise conversion to another element type";
  let description = [{
    Float to integer truncates toward zero; float to i1 and integer to i1 test
    for non-zero; narrowing float conversions round to nearest even.
  }];
  let arguments = (ins Kiln_Tensor:$input, TypeAttr:$to);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_InferredOp<"reshape", [Kiln_DataMovementFamily]> {
  let summary = "Same elements, new shape (one dimension may be -1)";
  let description = [{
    With dynamic dimensions the target may be symbolic: `sizes` is then an
    affine map `()[s0, ...] -> (size, ...)` giving every target size and
    `shape` is empty. A target of sizes read from input values at run time
    (a Reshape's shape given as a model input) cannot be proved to hold the
    input's elements: `checked_at_run_time` leaves that to each run (the
    loader validates every op at a run's sizes before it runs).
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$shape,
                       OptionalAttr<AffineMapAttr>:$sizes,
                       UnitAttr:$checked_at_run_time);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_TransposeOp : Kiln_InferredOp<"transpose", [Kiln_DataMovementFamily]> {
  let summary = "Permute dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_BroadcastOp : Kiln_InferredOp<"broadcast", [Kiln_DataMovementFamily]> {
  let summary = "Broadcast NumPy-style to a larger shape";
  let description = [{
    As for reshape, a symbolic target is given by `sizes` (an affine map over
    the size symbols) with an empty `shape`.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$shape,
                       OptionalAttr<AffineMapAttr>:$sizes);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_InferredOp<"slice", [Kiln_DataMovementFamily]> {
  let summary = "Strided slice, one (start, end, step) per dimension";
  let description = [{
    For each dimension d the result holds input[start[d] + k*step[d]] for
    every k with start + k*step before end (after, for a negative step).
    Starts and ends are already clamped into range by the frontends. A
    dynamic dimension is sliced forward, to a static end within its least
    size or to 9223372036854775807 (INT64_MAX): the dimension's end,
    whatever its size. `end_sizes`, when present, gives every end as an
    affine map over the size symbols (a static dimension cut to a symbolic
    size, as exporters slice a position table to the sequence length; the
    frontend checks the size stays within the dimension); `ends` then holds
    the constant ones and 0 for the others. Bounds read at run time (ONNX
    Slice's starts, ends, axes or steps given as model inputs, Split's
    sizes): `starts`, `ends` and `steps` are empty, `run_time_bounds` maps
    the size symbols to every start, then every end, then every step
    (already clamped, as above), and `result_sizes` gives the result's
    sizes; the loader validates both against each run's values.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps,
                       OptionalAttr<AffineMapAttr>:$end_sizes,
                       OptionalAttr<AffineMapAttr>:$run_time_bounds,
                       OptionalAttr<AffineMapAttr>:$result_sizes);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_InferredOp<"concat", [Kiln_DataMovementFamily]> {
  let summary = "Concatenate along an axis";
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_PadOp : Kiln_InferredOp<"pad", [Kiln_DataMovementFamily]> {
  let summary = "Constant padding before and after each dimension";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_InferredOp<"gather", [Kiln_DataMovementFamily]> {
  let summary = "Take slices of data along axis at the given indices (ONNX Gather)";
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_GatherElementsOp : Kiln_InferredOp<"gather_elements", [Kiln_DataMovementFamily]> {
  let summary = "Pick data elements along an axis with per-element indices (ONNX GatherElements)";
  let description = [{
    result[i...] = data[i... with coordinate `axis` replaced by
    indices[i...]]. Indices have the data's rank and, outside `axis`, no
    larger extents; the result has the indices' shape.
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_ScatterElementsOp : Kiln_InferredOp<"scatter_elements", [Kiln_WindowFamily]> {
  let summary = "Write updates into a copy of data at per-element indices (ONNX ScatterElements)";
  let description = [{
    result = data, then for every position p of `indices`:
    result[p with coordinate `axis` replaced by indices[p]] (op)= updates[p],
    where the op is assignment, or `add` / `mul` with `reduction`. Later
    positions win on duplicate indices (assignment). Out-of-range indices
    are skipped.
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, Kiln_Tensor:$updates,
                       I64Attr:$axis, DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_ArgSortOp : Kiln_InferredOp<"argsort"> {
  let summary = "Indices (i64) that sort along an axis, stably";
  let description = [{
    Ascending, or descending with `descending`; equal elements keep their
    order (the lower index first), so TopK is a slice of it. NaN sorts after
    every number ascending and before them descending.
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$descending);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_TakePrefixOp : Kiln_InferredOp<"take_prefix"> {
  let summary = "The first `count` entries along an axis: a length that follows data";
  let description = [{
    Outputs whose size follows computed data (NonZero, Compress or Unique
    of a computed tensor) are computed at an upper bound, ordered so that
    the entries kept come first, with their count; this op keeps the first
    `count` entries along `axis`. `length` maps the size symbols to the
    result's size there: one symbol, `bound` in the function's
    `kiln.symbols`, which the runtime binds from `count` (an i64 scalar
    computed by an earlier step) once that step has run, before the steps
    sized by it are specialised (docs/runtime.md); a count outside the
    symbol's range (0..size) is refused naming the symbol.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$count, I64Attr:$axis,
                       AffineMapAttr:$length);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_NonMaxSuppressionOp : Kiln_InferredOp<"non_max_suppression"> {
  let summary = "Greedy non-maximum suppression, per batch and class (ONNX's)";
  let description = [{
    `boxes` [B, N, 4] (corners, or with `center_point_box` centre and
    size), `scores` [B, C, N]; scalars `max_output` (i64: boxes kept per
    batch and class), `iou_threshold` and `score_threshold` (f32). Per
    batch and class, the boxes scoring above the score threshold are taken
    by descending score (ties: the lower index first) and kept unless their
    IoU with a box kept before exceeds the IoU threshold, up to
    `max_output`. The result is the upper bound [B * C * N, 3] of (batch,
    class, box) rows: the kept ones in that order, then rows of -1, so
    that a kiln.take_prefix of the count of rows not -1 gives ONNX's
    output.
  }];
  let arguments = (ins Kiln_Tensor:$boxes, Kiln_Tensor:$scores, Kiln_Tensor:$max_output,
                       Kiln_Tensor:$iou_threshold, Kiln_Tensor:$score_threshold,
                       DefaultValuedAttr<I64Attr, "0">:$center_point_box);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_TransferOp : Kiln_InferredOp<"transfer"> {
  let summary = "Copy a tensor to another device";
  let description = [{
    The only op whose operand and result live on different devices: every
    other op requires all its operands on one device.
  }];
  let arguments = (ins Kiln_Tensor:$input, StrAttr:$to);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_RelayoutOp : Kiln_InferredOp<"relayout", [Kiln_DataMovementFamily]> {
  let summary = "Same logical tensor, another physical dimension order";
  let arguments = (ins Kiln_Tensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dim_order);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Kiln_ReduceOp<string mnemonic, string desc>
    : Kiln_InferredOp<mnemonic, [Kiln_WindowFamily, Kiln_RowReductionFamily]> {
  let summary = desc;
  let description = [{
    Axes read at run time (ONNX's axes given as a model input): `axes` is
    empty, `run_time_axes` maps the size symbols to the axes, `keepdims` is
    true and `result_sizes` gives the result's sizes (1 where an axis is);
    the loader validates both against the run's values before it runs.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdims,
                       OptionalAttr<AffineMapAttr>:$run_time_axes,
                       OptionalAttr<AffineMapAttr>:$result_sizes);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_ReduceSumOp  : Kiln_ReduceOp<"reduce_sum", "Sum over axes">;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "Mean over axes">;
def Kiln_ReduceMaxOp  : Kiln_ReduceOp<"reduce_max", "Maximum over axes">;
def Kiln_ReduceMinOp  : Kiln_ReduceOp<"reduce_min", "Minimum over axes">;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "Product over axes">;

def Kiln_ArgMaxOp : Kiln_InferredOp<"argmax", [Kiln_WindowFamily]> {
  let summary = "Index (i64) of the first maximum along an axis";
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_SoftmaxOp : Kiln_InferredOp<"softmax", [Kiln_WindowFamily, Kiln_RowReductionFamily]> {
  let summary = "exp(x - max) / sum(exp(x - max)) along an axis";
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_LogSoftmaxOp : Kiln_InferredOp<"log_softmax", [Kiln_WindowFamily, Kiln_RowReductionFamily]> {
  let summary = "log(softmax(x)) along an axis, computed stably";
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_BatchNormOp : Kiln_InferredOp<"batch_norm", [Kiln_ElementwiseFamily]> {
  let summary = "Inference batch normalisation over dimension 1";
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_FloatTensor:$bias, Kiln_FloatTensor:$mean,
                       Kiln_FloatTensor:$variance,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_LayerNormOp : Kiln_InferredOp<"layer_norm", [Kiln_RowReductionFamily]> {
  let summary = "Normalise over dimensions [axis, rank), then scale and shift";
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Contractions, convolution, pooling
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_InferredOp<"matmul"> {
  let summary = "Batched matrix product [..., M, K] x [..., K, N]";
  let description = [{
    Leading (batch) dimensions broadcast NumPy-style. `transpose_a` and
    `transpose_b` swap the last two dimensions of the operand first, so a
    transpose feeding a matmul folds into the flag.
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_Conv2dOp : Kiln_InferredOp<"conv2d"> {
  let summary = "2-D convolution, logical NCHW input and OIHW filter";
  let description = [{
    Shapes are logical: input [N, C, H, W], filter [O, C/groups, KH, KW],
    optional bias [O]. The input may be laid out NCHW or NHWC (its type's
    encoding); the result keeps the input's layout. `padding` is
    [top, left, bottom, right].
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$filter,
                       Optional<Kiln_Tensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Kiln_Tensor:$result);
}

class Kiln_Pool2dOp<string mnemonic, string desc>
    : Kiln_InferredOp<mnemonic, [Kiln_WindowFamily]> {
  let summary = desc;
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_MaxPool2dOp : Kiln_Pool2dOp<"max_pool2d", "2-D max pooling, logical NCHW">;
def Kiln_AvgPool2dOp : Kiln_Pool2dOp<"avg_pool2d", "2-D average pooling, logical NCHW">;

def Kiln_GlobalAvgPoolOp : Kiln_InferredOp<"global_avg_pool", [Kiln_WindowFamily, Kiln_RowReductionFamily]> {
  let summary = "Mean over all spatial dimensions, [N, C, ...] -> [N, C, 1, ...]";
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Derivatives
//===----------------------------------------------------------------------===//

def Kiln_GradientOp : Kiln_Op<"gradient"> {
  let summary = "The gradient of a value with respect to others, expanded at compile time";
  let description = [{
    Result i is the gradient of the sum of `of` with respect to `wrt[i]`
    (the vector-Jacobian product with a seed of ones: for a scalar, its
    derivative), through the ops that compute `of`: ONNX's Gradient
    (ai.onnx.preview.training). `kiln-expand-gradients` replaces it by
    those ops' vector-Jacobian products, from kiln-grad's rules, before
    any other pass; no kernel computes it.
  }];
  let arguments = (ins Kiln_FloatTensor:$of, Variadic<Kiln_FloatTensor>:$wrt);
  let results = (outs Variadic<Kiln_FloatTensor>:$grads);
  let hasVerifier = 1;
  let assemblyFormat = "$of `wrt` $wrt attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Fusion regions
//===----------------------------------------------------------------------===//

def Kiln_FusionOp : Kiln_Op<"fusion", [IsolatedFromAbove]> {
  let summary = "Graph ops that one kernel computes";
  let description = [{
    Made by the fusion passes (docs/fusion.md): the body holds the fused
    graph ops unchanged, so dumps stay readable and the CPU backend can run
    the body op by op; `kind` names the kernel that will compute it. The
    block arguments are the inputs; `kiln.yield` returns the values used
    outside. Small splat constants are cloned into the body rather than
    passed in. A region never crosses a device boundary: the body may not
    hold a `kiln.transfer`.

    ```mlir
    %r = kiln.fusion loop (%x, %b) : (!t, !v) -> !t {
    ^bb0(%a: !t, %c: !v):
      %0 = kiln.add %a, %c : (!t, !v) -> !t
      %1 = kiln.relu %0 : (!t) -> !t
      kiln.yield %1 : !t
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, Kiln_FusionKindAttr:$kind);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def Kiln_YieldOp : Kiln_Op<"yield", [Terminator, HasParent<"FusionOp">, ReturnLike]> {
  let summary = "Returns a fusion region's results";
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // KILN_IR_KILNOPS_TD
