"""ONNX models written the way PyTorch's and tf2onnx's exporters write them.

    exporter_models.py OUT_DIR

writes into OUT_DIR:
- encoder.onnx: a 2-layer MiniLM-style sentence encoder as torch.onnx.export
  writes a Hugging Face BERT: dynamic batch and sequence; embedding Gathers
  (word, position through a Slice of a position buffer, token type from
  ConstantOfShape); the attention mask through Unsqueeze/Expand/Equal/Where;
  head splits as Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains
  and Transposes; LayerNormalization; exact GELU through Erf; a masked mean
  pooling (Expand, ReduceSum over the sequence axis, Clip, Div).
- encoder_int8.onnx: the same, wider (hidden 256, FFN 1024), with int8
  weight-only quantisation as PyTorch exports it: every weight and the word
  embedding table stored int8 and dequantised by Cast + Mul(scale) in front
  of MatMul and Gather.
- cnn_nhwc.onnx: a small CNN as tf2onnx writes a Keras model: an NHWC input
  with a dynamic batch, Transpose to NCHW, Conv + Relu, MaxPool,
  AveragePool, Transpose back to NHWC, ReduceMean over H and W, MatMul,
  Add, Softmax.

Weights are random (seeded), so the models are the same on every run.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


class Graph:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, array, name=None):
        name = name or f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape, scale=0.05):
        return self.const(self.rng.uniform(-scale, scale, shape).astype(np.float32))

    def op(self, kind, inputs, outputs=1, **attrs):
        self.count += 1
        names = [f"/{kind.lower()}_{self.count}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(kind, inputs, names, name=f"/{kind}_{self.count}",
                                           **attrs))
        return names[0] if outputs == 1 else names

    def dim(self, x, axis):
        """Shape(x)[axis] as a 1-element int64 tensor (Shape -> Gather -> Unsqueeze)."""
        d = self.op("Gather", [self.op("Shape", [x]), self.const(np.array(axis, np.int64))], axis=0)
        return self.op("Unsqueeze", [d, self.const(np.array([0], np.int64))])

    def save(self, path, inputs, outputs, opset=17):
        graph = helper.make_graph(self.nodes, "main_graph", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="pytorch" if "encoder" in path else "tf2onnx")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)


def encoder(path, quantised, layers=2, hidden=64, heads=4, ffn=128, vocab=1000, positions=64):
    g = Graph(7)
    dh = hidden // heads

    def weight(shape, scale=0.05):
        """A float weight, or int8 + per-column scale dequantised by Cast + Mul."""
        if not quantised:
            return g.weight(shape, scale)
        w = g.rng.uniform(-scale, scale, shape).astype(np.float32)
        step = np.abs(w).max(axis=0, keepdims=True) / 127.0
        q = np.clip(np.round(w / step), -127, 127).astype(np.int8)
        cast = g.op("Cast", [g.const(q)], to=T.FLOAT)
        return g.op("Mul", [cast, g.const(step.reshape(shape[1:]).astype(np.float32))])

    def linear(x, n_in, n_out, scale=0.05):
        return g.op("Add", [g.op("MatMul", [x, weight([n_in, n_out], scale)]),
                            g.weight([n_out], 0.02)])

    def layer_norm(x):
        return g.op("LayerNormalization", [x, g.const(np.ones(hidden, np.float32)),
                                           g.const(np.zeros(hidden, np.float32))],
                    axis=-1, epsilon=1e-12)

    # Embeddings.
    words = g.op("Gather", [weight([vocab, hidden], 0.5), "input_ids"], axis=0)
    seq = g.dim("input_ids", 1)
    position_ids = g.op("Slice", [g.const(np.arange(positions, dtype=np.int64)[None, :]),
                                  g.const(np.array([0], np.int64)), seq,
                                  g.const(np.array([1], np.int64))])
    pos = g.op("Gather", [g.weight([positions, hidden], 0.5), position_ids], axis=0)
    token_types = g.op("ConstantOfShape", [g.op("Shape", ["input_ids"])],
                       value=helper.make_tensor("zero", T.INT64, [1], [0]))
    types = g.op("Gather", [g.weight([2, hidden], 0.5), token_types], axis=0)
    h = layer_norm(g.op("Add", [g.op("Add", [words, types]), pos]))

    # The additive attention mask: 0 where attended, the float minimum elsewhere.
    batch = g.dim("input_ids", 0)
    m = g.op("Unsqueeze", ["attention_mask", g.const(np.array([1, 2], np.int64))])
    m = g.op("Expand", [m, g.op("Concat", [batch, g.const(np.array([1], np.int64)), seq, seq],
                                axis=0)])
    masked = g.op("Equal", [m, g.const(np.array(0, np.int64))])
    bias = g.op("Where", [masked, g.const(np.array(np.finfo(np.float32).min, np.float32)),
                          g.const(np.array(0.0, np.float32))])

    def split_heads(x):
        shape = g.op("Concat", [g.dim(x, 0), g.dim(x, 1),
                                g.const(np.array([heads, dh], np.int64))], axis=0)
        return g.op("Reshape", [x, shape])

    for _ in range(layers):
        q = g.op("Transpose", [split_heads(linear(h, hidden, hidden))], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [split_heads(linear(h, hidden, hidden))], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [split_heads(linear(h, hidden, hidden))], perm=[0, 2, 1, 3])
        s = g.op("Div", [g.op("MatMul", [q, k]), g.const(np.array(np.sqrt(dh), np.float32))])
        p = g.op("Softmax", [g.op("Add", [s, bias])], axis=-1)
        c = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        merged = g.op("Concat", [g.dim(c, 0), g.dim(c, 1),
                                 g.const(np.array([hidden], np.int64))], axis=0)
        c = g.op("Reshape", [c, merged])
        h = layer_norm(g.op("Add", [linear(c, hidden, hidden), h]))
        f = linear(h, hidden, ffn)
        erf = g.op("Erf", [g.op("Div", [f, g.const(np.array(1.4142135, np.float32))])])
        f = g.op("Mul", [g.op("Mul", [f, g.op("Add", [erf, g.const(np.array(1.0, np.float32))])]),
                         g.const(np.array(0.5, np.float32))])
        h = layer_norm(g.op("Add", [linear(f, ffn, hidden, 0.02), h]))

    # Masked mean pooling, as sentence-transformers writes it.
    expanded = g.op("Cast", [g.op("Expand", [g.op("Unsqueeze", ["attention_mask",
                                                               g.const(np.array([-1], np.int64))]),
                                             g.op("Shape", [h])])], to=T.FLOAT)
    total = g.op("ReduceSum", [g.op("Mul", [h, expanded]), g.const(np.array([1], np.int64))],
                 keepdims=0)
    count = g.op("Clip", [g.op("ReduceSum", [expanded, g.const(np.array([1], np.int64))],
                               keepdims=0), g.const(np.array(1e-9, np.float32))])
    g.nodes[-1].output[0] = "count"
    pooled = g.op("Div", [total, "count"])
    g.nodes[-1].output[0] = "sentence_embedding"
    # The last hidden state is an output too.
    g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"], name="/Identity"))

    dyn = ["batch_size", "sequence_length"]
    g.save(path,
           [helper.make_tensor_value_info("input_ids", T.INT64, dyn),
            helper.make_tensor_value_info("attention_mask", T.INT64, dyn)],
           [helper.make_tensor_value_info("sentence_embedding", T.FLOAT, ["batch_size", hidden]),
            helper.make_tensor_value_info("last_hidden_state", T.FLOAT, dyn + [hidden])])


def cnn_nhwc(path, size=32, classes=10):
    g = Graph(11)
    x = g.op("Transpose", ["input_1"], perm=[0, 3, 1, 2])
    x = g.op("Relu", [g.op("Conv", [x, g.weight([16, 3, 3, 3], 0.3), g.weight([16], 0.1)],
                           kernel_shape=[3, 3], pads=[1, 1, 1, 1])])
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("Relu", [g.op("Conv", [x, g.weight([32, 16, 3, 3], 0.1), g.weight([32], 0.1)],
                           kernel_shape=[3, 3], pads=[1, 1, 1, 1])])
    x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    x = g.op("ReduceMean", [x], axes=[1, 2], keepdims=0)
    x = g.op("Add", [g.op("MatMul", [x, g.weight([32, classes], 0.3)]), g.weight([classes], 0.1)])
    g.op("Softmax", [x], axis=-1)
    g.nodes[-1].output[0] = "probabilities"
    g.save(path, [helper.make_tensor_value_info("input_1", T.FLOAT, ["unk__6", size, size, 3])],
           [helper.make_tensor_value_info("probabilities", T.FLOAT, ["unk__7", classes])], opset=13)


if __name__ == "__main__":
    out = sys.argv[1]
    encoder(f"{out}/encoder.onnx", quantised=False)
    # Wide enough that the FFN weights (1 MiB dequantised) stay int8 for the
    # GEMM's loads while the attention weights (256 KiB) are folded.
    encoder(f"{out}/encoder_int8.onnx", quantised=True, hidden=256, ffn=1024)
    cnn_nhwc(f"{out}/cnn_nhwc.onnx")
