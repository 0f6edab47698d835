"""An ONNX model with outputs 'a/b' (x) and 'a:b' (relu(x)), and an input
file named random.npy: the inputs of kiln-run-file-names.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
graph = helper.make_graph(
    [helper.make_node("Identity", ["x"], ["a/b"]), helper.make_node("Relu", ["x"], ["a:b"])],
    "names", [x],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("a/b", "a:b")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "m.onnx"))
np.save(os.path.join(out, "random.npy"),
        np.array([[-0.5, 0.25, 0.5], [0.125, -0.25, 0.0]], np.float32))
