"""Small models whose GPU kernels take sizes as arguments in the corner
cases: a row reduction over a static number of rows of a symbolic length,
a softmax whose rows may be short or long (two size classes), a softmax
over a symbolic number of rows, a mean and a maximum over a symbolic
middle axis, a grouped
convolution over a symbolic batch whose output pixels are no multiple of
its tiles, a plain matmul over symbolic rows, and max pooling over a
symbolic batch.

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
