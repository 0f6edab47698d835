"""Small models whose GPU kernels take sizes as arguments in the corner
cases: a row reduction over a static number of rows of a symbolic length,
and a plain matmul over symbolic rows.

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
# A plain matmul over n rows.
save(f"{out}/rows_matmul.onnx",
     [helper.make_node("MatMul", ["x", "w"], ["y"])],
     [f32("x", ["n", 8])], [f32("y", ["n", 4])],
     [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (8, 4)).astype(np.float32), "w")])
