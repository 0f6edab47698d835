"""Benchmark models: .kg text for compile-time scaling, ONNX for runtime.

The .kg generators make models of a chosen size (transformer encoders of L
layers, chains of N elementwise ops) so compile time can be measured as
size grows. The ONNX builders write the runtime benchmark models with the
protobuf API, so kiln's CPU backend and ONNX Runtime run the very same
graph and weights.
"""

import numpy as np

# --------------------------------------------------------------------------
# .kg generators
# --------------------------------------------------------------------------


def transformer_kg(layers, hidden=768, heads=12, seq=128, ffn=3072, splat_weights=False):
    """A post-norm multi-head transformer encoder of `layers` layers.

    With `splat_weights`, weights are constants (`= 0.02`) rather than
    random, which keeps the executable small when only compile time is of
    interest."""
    dh = hidden // heads
    lines = [f"# {layers}-layer transformer encoder, hidden {hidden}, {heads} heads, "
             f"sequence {seq}, FFN {ffn}.", f"model encoder_{layers}",
             f"input x: f32[1, {seq}, {hidden}]"]
    seed = 1

    def weight(name, shape, scale):
        nonlocal seed
        dims = ", ".join(str(d) for d in shape)
        init = "0.02" if splat_weights else f"random(seed={seed}, scale={scale})"
        seed += 1
        lines.append(f"weight {name}: f32[{dims}] = {init}")

    body = []
    h = "x"
    for l in range(layers):
        p = f"l{l}"
        for w in ("wq", "wk", "wv", "wo"):
            weight(f"{p}.{w}", [hidden, hidden], 0.05)
        weight(f"{p}.w1", [hidden, ffn], 0.05)
        weight(f"{p}.b1", [ffn], 0.02)
        weight(f"{p}.w2", [ffn, hidden], 0.02)
        weight(f"{p}.b2", [hidden], 0.02)
        for n in ("ln1", "ln2"):
            lines.append(f"weight {p}.{n}.scale: f32[{hidden}] = 1.0")
            lines.append(f"weight {p}.{n}.bias: f32[{hidden}] = 0.0")

        def heads_of(name, proj):
            body.append(f"{p}_{name} = transpose(reshape(matmul({h}, {p}.{proj}), "
                        f"shape=[1, {seq}, {heads}, {dh}]), perm=[0, 2, 1, 3])")

        heads_of("q", "wq")
        heads_of("k", "wk")
        heads_of("v", "wv")
        scale = 1.0 / np.sqrt(dh)
        body.append(f"{p}_s = softmax(matmul({p}_q, {p}_k, transpose_b=true) * {scale:.6f}, axis=-1)")
        body.append(f"{p}_c = reshape(transpose(matmul({p}_s, {p}_v), perm=[0, 2, 1, 3]), "
                    f"shape=[1, {seq}, {hidden}])")
        body.append(f"{p}_h = layer_norm({h} + matmul({p}_c, {p}.wo), {p}.ln1.scale, "
                    f"{p}.ln1.bias, axis=-1)")
        body.append(f"{p}_m = gelu(matmul({p}_h, {p}.w1) + {p}.b1)")
        body.append(f"{p}_y = layer_norm({p}_h + matmul({p}_m, {p}.w2) + {p}.b2, "
                    f"{p}.ln2.scale, {p}.ln2.bias, axis=-1)")
        h = f"{p}_y"
    return "\n".join(lines + body + [f"output {h}", ""])


def chain_kg(ops, width=256):
    """`ops` elementwise ops in one dependent chain (alternating kinds so no
    folder or CSE can shorten it)."""
    lines = [f"# A chain of {ops} elementwise ops.", f"model chain_{ops}",
             f"input x: f32[4, {width}]", "weight b: f32[" + str(width) + "] = 0.5"]
    kinds = ["tanh({v})", "{v} * 1.001", "{v} + b", "sigmoid({v})", "{v} - 0.25", "abs({v})"]
    v = "x"
    for i in range(ops):
        lines.append(f"v{i} = " + kinds[i % len(kinds)].format(v=v))
        v = f"v{i}"
    lines += [f"output {v}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# ONNX builders
# --------------------------------------------------------------------------


def _onnx():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    return onnx, TensorProto, helper, numpy_helper


def _save(graph, path, opset=17):
    onnx, _, helper, _ = _onnx()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="kiln-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


class _Builder:
    """Small helper: named initializers and nodes."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inits, self.nodes, self.count = [], [], 0
        _, self.T, self.helper, self.nh = _onnx()

    def weight(self, shape, scale=0.05, value=None):
        name = f"w{len(self.inits)}"
        data = (np.full(shape, value, np.float32) if value is not None else
                (self.rng.uniform(-scale, scale, shape)).astype(np.float32))
        self.inits.append(self.nh.from_array(data, name))
        return name

    def ints(self, values):
        name = f"i{len(self.inits)}"
        self.inits.append(self.nh.from_array(np.array(values, np.int64), name))
        return name

    def op(self, kind, inputs, **attrs):
        self.count += 1
        out = f"t{self.count}"
        self.nodes.append(self.helper.make_node(kind, inputs, [out], **attrs))
        return out

    def graph(self, name, inputs, output, out_shape):
        h, T = self.helper, self.T
        ins = [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs]
        self.nodes[-1].output[0] = "y"
        outs = [h.make_tensor_value_info("y", T.FLOAT, out_shape)]
        return h.make_graph(self.nodes, name, ins, outs, self.inits)


def gemm_onnx(path, m=128, k=768, n=3072):
    """relu(x W + b): a BERT-base FFN's first projection."""
    b = _Builder(1)
    y = b.op("MatMul", ["x", b.weight([k, n])])
    y = b.op("Add", [y, b.weight([n], 0.1)])
    b.op("Relu", [y])
    _save(b.graph("gemm", [("x", [m, k])], "y", [m, n]), path)


def mlp_onnx(path):
    """The mlp example: 784 -> 128 (ReLU) -> 10, softmax; batch 8."""
    b = _Builder(2)
    y = b.op("Relu", [b.op("Add", [b.op("MatMul", ["x", b.weight([784, 128])]), b.weight([128], 0.01)])])
    y = b.op("Add", [b.op("MatMul", [y, b.weight([128, 10], 0.1)]), b.weight([10], 0.0, 0.0)])
    b.op("Softmax", [y], axis=-1)
    _save(b.graph("mlp", [("x", [8, 784])], "y", [8, 10]), path)


def resnet_stage_onnx(path, channels=64, size=56, blocks=2):
    """A ResNet stage at 56x56x64: `blocks` basic blocks of conv-BN-ReLU,
    conv-BN, residual add, ReLU."""
    b = _Builder(3)

    def conv_bn(x):
        y = b.op("Conv", [x, b.weight([channels, channels, 3, 3], 0.05)], pads=[1, 1, 1, 1])
        return b.op("BatchNormalization", [y, b.weight([channels], value=1.0),
                                           b.weight([channels], 0.1), b.weight([channels], 0.1),
                                           b.weight([channels], value=1.0)], epsilon=1e-5)

    x = "x"
    for _ in range(blocks):
        y = b.op("Relu", [conv_bn(x)])
        x = b.op("Relu", [b.op("Add", [conv_bn(y), x])])
    _save(b.graph("resnet_stage", [("x", [1, channels, size, size])], "y",
                  [1, channels, size, size]), path)


def pool_onnx(path):
    """Max pooling 3x3 stride 2 (a ResNet stem) on [1, 64, 112, 112]."""
    b = _Builder(4)
    b.op("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    _save(b.graph("pool", [("x", [1, 64, 112, 112])], "y", [1, 64, 56, 56]), path)


def bert_layer_onnx(path, hidden=768, heads=12, seq=128, ffn=3072):
    """One BERT-base encoder layer (post-norm, exact GELU), sequence 128."""
    b = _Builder(5)
    dh = hidden // heads

    def layer_norm(x):
        return b.op("LayerNormalization", [x, b.weight([hidden], value=1.0),
                                           b.weight([hidden], value=0.0)], axis=-1, epsilon=1e-5)

    widths = {}  # inputs narrower or wider than `hidden`

    def proj(x, n, scale=0.05):
        y = b.op("MatMul", [x, b.weight([widths.get(x, hidden), n], scale)])
        return b.op("Add", [y, b.weight([n], 0.02)])

    def split_heads(t):
        t = b.op("Reshape", [t, b.ints([1, seq, heads, dh])])
        return b.op("Transpose", [t], perm=[0, 2, 1, 3])

    q = split_heads(proj("x", hidden))
    k = split_heads(proj("x", hidden))
    v = split_heads(proj("x", hidden))
    s = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    s = b.op("Mul", [s, b.weight([1], value=1.0 / np.sqrt(dh))])
    p = b.op("Softmax", [s], axis=-1)
    c = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    c = b.op("Reshape", [c, b.ints([1, seq, hidden])])
    h = layer_norm(b.op("Add", ["x", proj(c, hidden)]))
    m = proj(h, ffn)
    widths[m] = ffn
    # Exact GELU: 0.5 m (1 + erf(m / sqrt 2)).
    g = b.op("Mul", [b.op("Mul", [m, b.weight([1], value=0.5)]),
                     b.op("Add", [b.op("Erf", [b.op("Div", [m, b.weight([1], value=np.sqrt(2.0))])]),
                                  b.weight([1], value=1.0)])])
    widths[g] = ffn
    o = proj(g, hidden, 0.02)
    layer_norm(b.op("Add", [h, o]))
    _save(b.graph("bert_layer", [("x", [1, seq, hidden])], "y", [1, seq, hidden]), path)


# --------------------------------------------------------------------------
# Real-model-shaped ONNX files, as exporters write them
# --------------------------------------------------------------------------


def _exporter_models():
    """test/e2e/Inputs/exporter_models.py: the exporter-pattern models the
    end-to-end tests build, reused here at benchmark sizes."""
    import os
    import sys
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "test", "e2e", "Inputs")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import exporter_models
    return exporter_models


def minilm_encoder_onnx(path, int8=False):
    """exporter_models.encoder at MiniLM's size (2 layers, 384 wide, 12
    heads, FFN 1536, vocab 30522): input_ids and attention_mask with dynamic
    batch and sequence, the mask through Unsqueeze/Expand/Equal/Where, head
    splits by Shape/Gather/Concat chains, Erf GELU, LayerNormalization,
    masked mean pooling; with int8, weights and the word table int8 and
    dequantised by Cast + Mul."""
    _exporter_models().encoder(path, quantised=int8, layers=2, hidden=384, heads=12, ffn=1536,
                               vocab=30522, positions=512)


def _sequence(seq):
    return ["--input-shape", f"input_ids=1x{seq}", "--input-shape", f"attention_mask=1x{seq}"]


def bert_encoder_inputs(seq, vocab=30522):
    rng = np.random.default_rng(7)
    mask = np.ones((1, seq), np.int64)
    mask[0, seq - seq // 4:] = 0  # padding: the last quarter
    return {"input_ids": rng.integers(0, vocab, (1, seq)).astype(np.int64),
            "attention_mask": mask}


def small_cnn_onnx(path, batch=8):
    """A CIFAR-sized CNN: three conv-BN-ReLU blocks (32, 64, 128 channels),
    the first two max-pooled, global average pooling, a 10-way Gemm."""
    b = _Builder(7)
    x, channels = "x", 3
    for width, pool in ((32, True), (64, True), (128, False)):
        y = b.op("Conv", [x, b.weight([width, channels, 3, 3], 0.1), b.weight([width], 0.05)],
                 pads=[1, 1, 1, 1])
        y = b.op("BatchNormalization", [y, b.weight([width], value=1.0), b.weight([width], 0.1),
                                        b.weight([width], 0.1), b.weight([width], value=1.0)])
        x = b.op("Relu", [y])
        if pool:
            x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        channels = width
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    b.op("Gemm", [x, b.weight([10, channels], 0.1), b.weight([10], 0.01)], transB=1)
    _save(b.graph("small_cnn", [("x", [batch, 3, 32, 32])], "y", [batch, 10]), path)


def resnet50_nhwc_onnx(path, batch=1):
    """ResNet-50 v1.5 at 224x224 as tf2onnx writes a Keras model: an NHWC
    input transposed to NCHW, then the stem (7x7/2 conv, 3x3/2 max pool),
    bottleneck blocks [3, 4, 6, 3] with BN after every conv and projection
    shortcuts, global average pooling and a 1000-way Gemm."""
    b = _Builder(8)

    def conv_bn(x, cin, cout, k, stride=1, relu=True):
        y = b.op("Conv", [x, b.weight([cout, cin, k, k], float(np.sqrt(2.0 / (cin * k * k))))],
                 strides=[stride, stride], pads=[k // 2] * 4)
        y = b.op("BatchNormalization", [y, b.weight([cout], value=1.0), b.weight([cout], 0.05),
                                        b.weight([cout], 0.05), b.weight([cout], value=1.0)])
        return b.op("Relu", [y]) if relu else y

    x = b.op("Transpose", ["x"], perm=[0, 3, 1, 2])
    x = conv_bn(x, 3, 64, 7, 2)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            y = conv_bn(x, cin, width, 1)
            y = conv_bn(y, width, width, 3, stride)
            y = conv_bn(y, width, width * 4, 1, relu=False)
            shortcut = conv_bn(x, cin, width * 4, 1, stride, relu=False) if block == 0 else x
            x = b.op("Relu", [b.op("Add", [y, shortcut])])
            cin = width * 4
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    b.op("Gemm", [x, b.weight([1000, cin], 0.02), b.weight([1000], 0.01)], transB=1)
    _save(b.graph("resnet50", [("x", [batch, 224, 224, 3])], "y", [batch, 1000]), path)


def encoder_inputs(batch, seq, vocab=30522, seed=7):
    """Token ids and an attention mask of [batch, seq], the last quarter of
    each row padding."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 4:] = 0
    return {"input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64),
            "attention_mask": mask}


# Models over ranges of input sizes: name -> (writer with dynamic
# dimensions, kilnc range flags, static flags at the OPT point, inputs at
# OPT, inputs at the other sizes checked against ONNX Runtime).
DYNAMIC_MODELS = {
    "minilm_encoder 1..8x1..128": (
        minilm_encoder_onnx, ["--input-shape", "input_ids=1..8:1x1..128:128"], _sequence(128),
        lambda: encoder_inputs(1, 128), [lambda: encoder_inputs(1, 16), lambda: encoder_inputs(3, 77),
                                         lambda: encoder_inputs(8, 128)]),
    "small_cnn 1..16": (
        lambda p: small_cnn_onnx(p, batch="N"), ["--input-shape", "x=1..16:8x3x32x32"],
        ["--input-shape", "x=8x3x32x32"], lambda: _uniform_input("x", [8, 3, 32, 32]),
        [lambda: _uniform_input("x", [1, 3, 32, 32]), lambda: _uniform_input("x", [5, 3, 32, 32]),
         lambda: _uniform_input("x", [16, 3, 32, 32])]),
    "resnet50_nhwc 1..4": (
        lambda p: resnet50_nhwc_onnx(p, batch="N"), ["--input-shape", "x=1..4:1x224x224x3"],
        ["--input-shape", "x=1x224x224x3"], lambda: _uniform_input("x", [1, 224, 224, 3]),
        [lambda: _uniform_input("x", [3, 224, 224, 3])]),
}


def _uniform_input(name, shape, seed=1):
    return {name: np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)}


# Models with inputs of their own: name -> (writer, inputs, kilnc flags),
# run by scripts/bench's runtime section beside RUNTIME_MODELS.
REAL_MODELS = {
    "minilm_encoder_seq16": (minilm_encoder_onnx, lambda: bert_encoder_inputs(16), _sequence(16)),
    "minilm_encoder_seq128": (minilm_encoder_onnx, lambda: bert_encoder_inputs(128), _sequence(128)),
    "minilm_encoder_seq128_int8": (lambda p: minilm_encoder_onnx(p, int8=True),
                                   lambda: bert_encoder_inputs(128), _sequence(128)),
    "small_cnn": (small_cnn_onnx, lambda: _uniform_input("x", [8, 3, 32, 32]), []),
    "resnet50_nhwc_224": (resnet50_nhwc_onnx, lambda: _uniform_input("x", [1, 224, 224, 3]), []),
}


RUNTIME_MODELS = {
    "gemm_128x768x3072": gemm_onnx,
    "mlp": mlp_onnx,
    "maxpool_112": pool_onnx,
    "resnet_stage_56x56x64": resnet_stage_onnx,
    "bert_base_layer": bert_layer_onnx,
}
