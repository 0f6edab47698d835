#!/usr/bin/env python3
"""Writes causal self-attention as PyTorch exports it: the mask a constant
initializer, triu(full(-inf), 1), added to the scaled scores. f16 (Tensor
Core FlashAttention) and f32 (CUDA cores), 160 tokens: query blocks end
mid-tile, and each block skips the key tiles past its last query.

  causal_attention.py OUT.onnx
"""
import sys

import numpy as np
from onnx import TensorProto as T, helper, numpy_helper, save


def attention(prefix, dtype, np_dtype, tokens, heads, depth, nodes, inputs, outputs, inits):
    shape = [1, heads, tokens, depth]
    for name in ("q", "k", "v"):
        inputs.append(helper.make_tensor_value_info(prefix + name, dtype, shape))
    mask = np.triu(np.full((tokens, tokens), -np.inf, np_dtype), 1)
    inits.append(numpy_helper.from_array(mask, prefix + "mask"))
    inits.append(numpy_helper.from_array(np.array(1 / np.sqrt(depth), np_dtype), prefix + "scale"))
    nodes += [
        helper.make_node("Transpose", [prefix + "k"], [prefix + "kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", [prefix + "q", prefix + "kt"], [prefix + "s"]),
        helper.make_node("Mul", [prefix + "s", prefix + "scale"], [prefix + "ss"]),
        helper.make_node("Add", [prefix + "ss", prefix + "mask"], [prefix + "sm"]),
        helper.make_node("Softmax", [prefix + "sm"], [prefix + "p"], axis=-1),
        helper.make_node("MatMul", [prefix + "p", prefix + "v"], [prefix + "out"]),
    ]
    outputs.append(helper.make_tensor_value_info(prefix + "out", dtype, shape))


def main():
    nodes, inputs, outputs, inits = [], [], [], []
    attention("h", T.FLOAT16, np.float16, 160, 2, 64, nodes, inputs, outputs, inits)
    attention("f", T.FLOAT, np.float32, 100, 2, 32, nodes, inputs, outputs, inits)
    graph = helper.make_graph(nodes, "causal_attention", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    save(model, sys.argv[1])


if __name__ == "__main__":
    main()
