"""Small models whose GPU kernels take sizes as arguments in the corner
cases: a row reduction over a static number of rows of a symbolic length,
a softmax whose rows may be short or long (two size classes), a softmax
over a symbolic number of rows, a mean and a maximum over a symbolic
middle axis, a grouped
convolution over a symbolic batch whose output pixels are no multiple of
its tiles, a plain matmul over symbolic rows, and max pooling over a
symbolic batch. And the GEMM and attention kernels over symbolic sizes:
f16 GEMMs on the Tensor Core pipeline over symbolic rows (B plain and
transposed, with a bias and ReLU), batched f32 and f16 matmuls whose batch,
M, N and K are all symbolic, attention over a symbolic batch and sequence
length (f16 on Tensor Cores; f32 with a padding mask), and cross-attention
whose key count has its own symbol, which may be 0.

    symbolic_kernels.py OUT_DIR
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def save(path, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "main_graph", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def f32(name, shape):
    return helper.make_tensor_value_info(name, T.FLOAT, shape)


def value(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def weight(name, shape, dtype=np.float16):
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(dtype), name)


out = sys.argv[1]
rng = np.random.default_rng(3)
# 4 rows of n: the rows are static, the row length symbolic.
save(f"{out}/rowsum.onnx",
     [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0),
      helper.make_node("Relu", ["y"], ["z"])],
     [f32("x", [4, "n"])], [f32("z", [4])],
     [numpy_helper.from_array(np.array([1], np.int64), "axes")])
# A softmax over rows of 1..2048 elements: a warp per row up to 1024, a
# block per row beyond, chosen per run.
save(f"{out}/softmax.onnx", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
     [f32("x", [4, "n"])], [f32("y", [4, "n"])])
# A softmax over n rows of 8.
save(f"{out}/rows_softmax.onnx", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
     [f32("x", ["n", 8])], [f32("y", ["n", 8])])
# The mean (keeping the axis) and the maximum over the middle axis of
# [2, n, 4]: a loop of symbolic extent per output element.
save(f"{out}/middle_reductions.onnx",
     [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
      helper.make_node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)],
     [f32("x", [2, "n", 4])], [f32("m", [2, 1, 4]), f32("y", [2, 4])])
# Two groups of 3 output channels over 4 input channels, 9x9 images into
# 7x7: n * 49 output pixels, tiles of 64 partly filled.
save(f"{out}/grouped_conv.onnx",
     [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=2),
      helper.make_node("Relu", ["c"], ["y"])],
     [f32("x", ["n", 4, 9, 9])], [f32("y", ["n", 6, 7, 7])],
     [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (6, 2, 3, 3)).astype(np.float32), "w"),
      numpy_helper.from_array(rng.uniform(-0.5, 0.5, (6,)).astype(np.float32), "b")])
# A plain matmul over n rows.
save(f"{out}/rows_matmul.onnx",
     [helper.make_node("MatMul", ["x", "w"], ["y"])],
     [f32("x", ["n", 8])], [f32("y", ["n", 4])],
     [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (8, 4)).astype(np.float32), "w")])
# Max pooling 3x3/2 over a symbolic batch: the pooling kernel's planes
# (n * 2) per run.
save(f"{out}/pool.onnx",
     [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                       pads=[1, 1, 1, 1])],
     [f32("x", ["n", 2, 9, 16])], [f32("y", ["n", 2, 5, 8])])

# Matmuls and attention over symbolic sizes (cuda-emu-symbolic-gemms.test).
rng = np.random.default_rng(11)
H = T.FLOAT16

# relu(x w + b) over n rows: K = 40 and N = 72 are whole 16-byte rows, so
# the pipelined mma.sync kernel runs with M's bounds checked per run.
save(f"{out}/gemm_f16.onnx",
     [helper.make_node("MatMul", ["x", "w"], ["p"]),
      helper.make_node("Add", ["p", "b"], ["q"]),
      helper.make_node("Relu", ["q"], ["y"])],
     [value("x", H, ["n", 40])], [value("y", H, ["n", 72])],
     [weight("w", (40, 72)), weight("b", (72,))])

# Gemm with B transposed (a linear layer as PyTorch exports it).
save(f"{out}/gemm_f16_tb.onnx",
     [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
     [value("x", H, ["n", 48])], [value("y", H, ["n", 24])],
     [weight("w", (24, 48)), weight("b", (24,))])


def batched(dtype):
    # s = relu(a b) over [n, m, m], then s c: the batch, M and N of the
    # first and the batch, M and K of the second are symbolic.
    return ([helper.make_node("MatMul", ["a", "b"], ["p"]),
             helper.make_node("Relu", ["p"], ["s"]),
             helper.make_node("MatMul", ["s", "c"], ["y"])],
            [value("a", dtype, ["n", "m", 24]), value("b", dtype, ["n", 24, "m"]),
             value("c", dtype, ["n", "m", 8])],
            [value("y", dtype, ["n", "m", 8])])


save(f"{out}/batched_f32.onnx", *batched(T.FLOAT))
save(f"{out}/batched_f16.onnx", *batched(H))


def attention(dtype, masked):
    # softmax(q k^T / 8 [+ mask]) v over [batch, 2 heads, seq, 64]; the mask
    # is a padding mask [batch, 1, 1, seq] broadcast over heads and queries.
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["qk"]),
             helper.make_node("Div", ["qk", "scale"], ["scores"])]
    inputs = [value(name, dtype, ["batch", 2, "seq", 64]) for name in ("q", "k", "v")]
    np_type = np.float16 if dtype == H else np.float32
    inits = [numpy_helper.from_array(np.array(8.0, np_type), "scale")]
    if masked:
        nodes.append(helper.make_node("Add", ["scores", "mask"], ["masked"]))
        inputs.append(value("mask", dtype, ["batch", 1, 1, "seq"]))
    nodes += [helper.make_node("Softmax", ["masked" if masked else "scores"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    return nodes, inputs, [value("y", dtype, ["batch", 2, "seq", 64])], inits


save(f"{out}/attention_f16.onnx", *attention(H, False))
save(f"{out}/attention_f32_mask.onnx", *attention(T.FLOAT, True))


def cross_attention(dtype):
    # softmax(q k^T) v with sq queries over sk keys (k and v as [batch, 2,
    # sk, 64], k transposed in the product).
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["scores"]),
             helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    inputs = [value("q", dtype, ["batch", 2, "sq", 64]), value("k", dtype, ["batch", 2, "sk", 64]),
              value("v", dtype, ["batch", 2, "sk", 64])]
    return nodes, inputs, [value("y", dtype, ["batch", 2, "sq", 64])]


save(f"{out}/cross_f16.onnx", *cross_attention(H))
save(f"{out}/cross_f32.onnx", *cross_attention(T.FLOAT))
