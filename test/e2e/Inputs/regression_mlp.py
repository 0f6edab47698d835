"""The MLP regressor the gradient and training tests share: x [N, 4] ->
matmul w1, bias b1, ReLU -> matmul w2 -> mean squared error against t."""

from onnx import helper


def regression_mlp_nodes():
    return [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["y"]),
        helper.make_node("Sub", ["y", "t"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)]
