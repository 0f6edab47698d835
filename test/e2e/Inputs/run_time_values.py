"""ONNX models whose shape-like operands arrive as model inputs, with inputs
and NumPy's expected outputs for several values of them.

    run_time_values.py OUT_DIR

writes OUT_DIR/MODEL.onnx and, per case, OUT_DIR/MODEL-CASE/ holding the
inputs (NAME.npy) and OUT_DIR/MODEL-CASE/expected/ the outputs. Cases whose
values the op does not accept have inputs only (the test expects a refusal).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OUT = sys.argv[1]
rng = np.random.default_rng(7)


def model(name, node, inputs, outputs, opset=18):
    graph = helper.make_graph([node], name, inputs, outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
              os.path.join(OUT, name + ".onnx"))


def case(name, label, inputs, expected=None):
    d = os.path.join(OUT, f"{name}-{label}")
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    for k, v in (expected or {}).items():
        np.save(os.path.join(d, "expected", k + ".npy"), v)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


# Reshape: 0 copies a dimension, -1 is inferred.
model("reshape", helper.make_node("Reshape", ["x", "shape"], ["y"]),
      [vi("x", T.FLOAT, [2, 3, 4]), vi("shape", T.INT64, [3])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((2, 3, 4)).astype(np.float32)
for label, shape in [("4x-1x2", [4, -1, 2]), ("0x4x-1", [0, 4, -1]), ("1x1x24", [1, 1, 24])]:
    s = np.array(shape, np.int64)
    target = [x.shape[d] if v == 0 else v for d, v in enumerate(shape)]
    case("reshape", label, {"x": x, "shape": s}, {"y": x.reshape(target)})
case("reshape", "two-inferred", {"x": x, "shape": np.array([-1, -1, 2], np.int64)})
case("reshape", "wrong-count", {"x": x, "shape": np.array([5, 1, 5], np.int64)})

# Expand: bidirectional broadcasting, to a higher rank.
model("expand", helper.make_node("Expand", ["x", "shape"], ["y"]),
      [vi("x", T.FLOAT, [3, 1]), vi("shape", T.INT64, [3])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((3, 1)).astype(np.float32)
for label, shape in [("2x3x4", [2, 3, 4]), ("1x1x1", [1, 1, 1]), ("5x1x6", [5, 1, 6])]:
    s = np.array(shape, np.int64)
    case("expand", label, {"x": x, "shape": s}, {"y": x * np.ones(shape, np.float32)})
case("expand", "incompatible", {"x": x, "shape": np.array([1, 2, 4], np.int64)})

# Tile.
model("tile", helper.make_node("Tile", ["x", "repeats"], ["y"]),
      [vi("x", T.FLOAT, [2, 3]), vi("repeats", T.INT64, [2])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((2, 3)).astype(np.float32)
for label, reps in [("3x2", [3, 2]), ("1x1", [1, 1]), ("0x4", [0, 4])]:
    case("tile", label, {"x": x, "repeats": np.array(reps, np.int64)}, {"y": np.tile(x, reps)})
case("tile", "negative", {"x": x, "repeats": np.array([2, -1], np.int64)})

# ConstantOfShape.
model("fill", helper.make_node("ConstantOfShape", ["shape"], ["y"],
                               value=helper.make_tensor("v", T.FLOAT, [1], [1.5])),
      [vi("shape", T.INT64, [2])], [vi("y", T.FLOAT, None)])
for label, shape in [("3x5", [3, 5]), ("7x1", [7, 1])]:
    case("fill", label, {"shape": np.array(shape, np.int64)}, {"y": np.full(shape, 1.5, np.float32)})

# TopK's k.
model("topk", helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1),
      [vi("x", T.FLOAT, [3, 6]), vi("k", T.INT64, [1])],
      [vi("values", T.FLOAT, None), vi("indices", T.INT64, None)])
x = rng.permutation(18).reshape(3, 6).astype(np.float32)  # distinct: one order
for k in (1, 4, 6):
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    case("topk", f"k{k}", {"x": x, "k": np.array([k], np.int64)},
         {"values": np.take_along_axis(x, order, 1), "indices": order.astype(np.int64)})
case("topk", "k7", {"x": x, "k": np.array([7], np.int64)})

# Trilu's k: no size depends on it; the mask is computed at run time.
model("trilu", helper.make_node("Trilu", ["x", "k"], ["y"], upper=0),
      [vi("x", T.FLOAT, [4, 5]), vi("k", T.INT64, [])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((4, 5)).astype(np.float32)
for k in (-2, 0, 3, 100):
    case("trilu", f"k{k}".replace("-", "m"), {"x": x, "k": np.array(k, np.int64)},
         {"y": np.tril(x, k)})

# Unsqueeze and Squeeze: axes read at run time choose the result's shape.
model("unsqueeze", helper.make_node("Unsqueeze", ["x", "axes"], ["y"]),
      [vi("x", T.FLOAT, [3, 4]), vi("axes", T.INT64, [2])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((3, 4)).astype(np.float32)
for label, axes in [("0-3", [0, 3]), ("m1-1", [-1, 1]), ("2-0", [2, 0])]:
    y = x
    for a in sorted(a + 4 if a < 0 else a for a in axes):
        y = np.expand_dims(y, a)
    case("unsqueeze", label, {"x": x, "axes": np.array(axes, np.int64)}, {"y": y})
case("unsqueeze", "repeated", {"x": x, "axes": np.array([1, 1], np.int64)})
model("squeeze", helper.make_node("Squeeze", ["x", "axes"], ["y"]),
      [vi("x", T.FLOAT, [1, 3, 1, 2]), vi("axes", T.INT64, [1])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((1, 3, 1, 2)).astype(np.float32)
for label, axes in [("0", [0]), ("m2", [-2])]:
    case("squeeze", label, {"x": x, "axes": np.array(axes, np.int64)},
         {"y": np.squeeze(x, tuple(axes))})
case("squeeze", "not-one", {"x": x, "axes": np.array([1], np.int64)})

# ReduceSum's axes read at run time, with and without keepdims.
for keep in (0, 1):
    name = f"reducesum{keep}"
    model(name, helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=keep),
          [vi("x", T.FLOAT, [2, 3, 4]), vi("axes", T.INT64, [2])], [vi("y", T.FLOAT, None)])
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for label, axes in [("0-2", [0, 2]), ("m1-1", [-1, 1])]:
        case(name, label, {"x": x, "axes": np.array(axes, np.int64)},
             {"y": np.sum(x, axis=tuple(axes), keepdims=bool(keep)).astype(np.float32)})
    case(name, "repeated", {"x": x, "axes": np.array([1, -2], np.int64)})

# Reshape with allowzero: a 0 is a size of 0.
model("reshape0", helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1),
      [vi("x", T.FLOAT, [0, 3, 4]), vi("shape", T.INT64, [3])], [vi("y", T.FLOAT, None)], opset=14)
x = np.zeros((0, 3, 4), np.float32)
case("reshape0", "3x4x0", {"x": x, "shape": np.array([3, 4, 0], np.int64)},
     {"y": x.reshape(3, 4, 0)})

# TopK's k, smallest first, along the first axis.
model("topk0", helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=0, largest=0),
      [vi("x", T.FLOAT, [5, 3]), vi("k", T.INT64, [1])],
      [vi("values", T.FLOAT, None), vi("indices", T.INT64, None)])
x = rng.permutation(15).reshape(5, 3).astype(np.float32)
order = np.argsort(x, axis=0, kind="stable")[:2]
case("topk0", "k2", {"x": x, "k": np.array([2], np.int64)},
     {"values": np.take_along_axis(x, order, 0), "indices": order.astype(np.int64)})

# CumSum's axis read at run time (checked in range).
model("cumsum", helper.make_node("CumSum", ["x", "axis"], ["y"]),
      [vi("x", T.FLOAT, [3, 4]), vi("axis", T.INT32, [])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((3, 4)).astype(np.float32)
for axis in (0, 1, -1):
    case("cumsum", f"axis{axis}".replace("-", "m"), {"x": x, "axis": np.array(axis, np.int32)},
         {"y": np.cumsum(x, axis=axis).astype(np.float32)})
case("cumsum", "axis2", {"x": x, "axis": np.array(2, np.int32)})

# ReverseSequence's lengths read at run time (checked within the time axis).
model("reverse", helper.make_node("ReverseSequence", ["x", "lengths"], ["y"], time_axis=0,
                                  batch_axis=1),
      [vi("x", T.FLOAT, [4, 3]), vi("lengths", T.INT64, [3])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((4, 3)).astype(np.float32)
lengths = [4, 1, 2]
y = x.copy()
for b, n in enumerate(lengths):
    y[:n, b] = x[:n, b][::-1]
case("reverse", "4-1-2", {"x": x, "lengths": np.array(lengths, np.int64)}, {"y": y})
case("reverse", "too-long", {"x": x, "lengths": np.array([5, 1, 2], np.int64)})

# Slice with starts, ends, axes and steps read at run time.
model("slice", helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
      [vi("x", T.FLOAT, [5, 6, 4]), vi("starts", T.INT64, [2]), vi("ends", T.INT64, [2]),
       vi("axes", T.INT64, [2]), vi("steps", T.INT64, [2])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((5, 6, 4)).astype(np.float32)


def onnx_slice(x, starts, ends, axes, steps):
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return x[tuple(index)]


for label, (starts, ends, axes, steps) in {
        "forward": ([1, 0], [4, 6], [0, 1], [1, 2]),
        "reverse": ([-1, 3], [-100, 0], [1, -1], [-2, -1]),
        "past-the-ends": ([-1000, 2], [1000, 1000], [2, 0], [3, 1]),
        "empty": ([3, 0], [1, 6], [0, 1], [1, 1]),
        "int64-sentinels": ([0, -(2**63)], [2**63 - 1, 2**63 - 1], [1, 2], [2, 1])}.items():
    arrays = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    inputs = {"x": x, **{k: np.array(v, np.int64) for k, v in arrays.items()}}
    case("slice", label, inputs, {"y": onnx_slice(x, starts, ends, axes, steps)})
bad = {"x": x, "starts": np.array([0, 0], np.int64), "ends": np.array([2, 2], np.int64)}
case("slice", "zero-step", {**bad, "axes": np.array([0, 1], np.int64),
                            "steps": np.array([1, 0], np.int64)})
case("slice", "same-axis", {**bad, "axes": np.array([1, -2], np.int64),
                            "steps": np.array([1, 1], np.int64)})

# Split's sizes read at run time.
model("split", helper.make_node("Split", ["x", "split"], ["a", "b"], axis=1),
      [vi("x", T.FLOAT, [2, 5]), vi("split", T.INT64, [2])],
      [vi("a", T.FLOAT, None), vi("b", T.FLOAT, None)])
x = rng.standard_normal((2, 5)).astype(np.float32)
for sizes in ([1, 4], [5, 0]):
    case("split", "-".join(map(str, sizes)), {"x": x, "split": np.array(sizes, np.int64)},
         {"a": x[:, :sizes[0]], "b": x[:, sizes[0]:]})
case("split", "short", {"x": x, "split": np.array([1, 3], np.int64)})

# Range of integers read at run time, and a float Range to an integer cast
# (as PyTorch exports arange(n, dtype=float)).
model("range", helper.make_node("Range", ["start", "limit", "delta"], ["y"]),
      [vi("start", T.INT32, []), vi("limit", T.INT32, []), vi("delta", T.INT32, [])],
      [vi("y", T.INT32, None)], opset=11)
for s_, l_, d_ in [(2, 11, 3), (10, -3, -4), (5, 5, 1)]:
    case("range", f"{s_}_{l_}_{d_}".replace("-", "m"),
         {"start": np.array(s_, np.int32), "limit": np.array(l_, np.int32),
          "delta": np.array(d_, np.int32)}, {"y": np.arange(s_, l_, d_, dtype=np.int32)})
case("range", "zero-delta", {"start": np.array(0, np.int32), "limit": np.array(3, np.int32),
                             "delta": np.array(0, np.int32)})
graph = helper.make_graph(
    [helper.make_node("Cast", ["n"], ["nf"], to=T.FLOAT),
     helper.make_node("Range", ["zero", "nf", "half"], ["y"])], "arange",
    [vi("n", T.INT64, [])], [vi("y", T.FLOAT, None)],
    [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
     numpy_helper.from_array(np.array(2.0, np.float32), "half")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(OUT, "arange.onnx"))
case("arange", "7", {"n": np.array(7, np.int64)}, {"y": np.arange(0, 7, 2, dtype=np.float32)})

# A window of a size read at run time.
model("hann", helper.make_node("HannWindow", ["n"], ["y"], periodic=0),
      [vi("n", T.INT32, [])], [vi("y", T.FLOAT, None)], opset=17)
for n in (5, 8):
    k = np.arange(n)
    case("hann", str(n), {"n": np.array(n, np.int32)},
         {"y": (0.5 - 0.5 * np.cos(2 * np.pi * k / (n - 1))).astype(np.float32)})

# Resize to sizes, and by scales, read at run time (the test compares with
# static compiles of the same values).
for name, mode, extra in [("resize_sizes", "linear", {}),
                          ("resize_scales", "cubic", {"exclude_outside": 1})]:
    inputs = [vi("x", T.FLOAT, [1, 1, 4, 5]), vi("roi", T.FLOAT, [0])]
    if name == "resize_sizes":
        node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode=mode, **extra)
        inputs.append(vi("sizes", T.INT64, [4]))
    else:
        node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode=mode, **extra)
        inputs.append(vi("scales", T.FLOAT, [4]))
    model(name, node, inputs, [vi("y", T.FLOAT, None)], opset=13)
x = rng.standard_normal((1, 1, 4, 5)).astype(np.float32)
roi = np.zeros(0, np.float32)
for label, sizes in [("7x3", [1, 1, 7, 3]), ("2x9", [1, 1, 2, 9])]:
    case("resize_sizes", label, {"x": x, "roi": roi, "sizes": np.array(sizes, np.int64)})
for label, scales in [("1.5x0.6", [1, 1, 1.5, 0.6]), ("0.5x2", [1, 1, 0.5, 2.0])]:
    case("resize_scales", label, {"x": x, "roi": roi, "scales": np.array(scales, np.float32)})

# OneHot's depth, given as a float as ONNX allows.
model("onehot", helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=0),
      [vi("i", T.INT64, [3]), vi("depth", T.FLOAT, []), vi("values", T.FLOAT, [2])],
      [vi("y", T.FLOAT, None)], opset=11)
indices = np.array([0, -1, 2], np.int64)
for depth in (3, 5):
    hot = np.zeros((depth, 3), np.float32) + 2
    for k, i in enumerate(indices):
        hot[i % depth, k] = 7
    case("onehot", str(depth), {"i": indices, "depth": np.array(depth, np.float32),
                                "values": np.array([2, 7], np.float32)}, {"y": hot})
case("onehot", "zero", {"i": indices, "depth": np.array(0, np.float32),
                        "values": np.array([2, 7], np.float32)})

# Compress with a condition read at run time: as many results as it holds.
model("compress", helper.make_node("Compress", ["x", "keep"], ["y"], axis=1),
      [vi("x", T.FLOAT, [2, 4]), vi("keep", T.BOOL, [3])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((2, 4)).astype(np.float32)
for keep in ([True, False, True], [False, False, False], [True, True, True]):
    case("compress", "".join("1" if k else "0" for k in keep),
         {"x": x, "keep": np.array(keep, np.bool_)},
         {"y": np.compress(keep, x, axis=1)})

# Pad by pads read at run time: constant, edge and reflect.
for mode in ("constant", "edge", "reflect"):
    model(f"pad_{mode}", helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode),
          [vi("x", T.FLOAT, [3, 4]), vi("pads", T.INT64, [4])], [vi("y", T.FLOAT, None)])
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for pads in ([1, 2, 0, 1], [2, 0, 1, 3]):
        width = ((pads[0], pads[2]), (pads[1], pads[3]))
        case(f"pad_{mode}", "-".join(map(str, pads)), {"x": x, "pads": np.array(pads, np.int64)},
             {"y": np.pad(x, width, mode=mode)})
case("pad_reflect", "too-wide", {"x": x, "pads": np.array([0, 4, 0, 0], np.int64)})

# NonZero of a small model input: as many indices as nonzeros.
model("nonzero", helper.make_node("NonZero", ["x"], ["y"]),
      [vi("x", T.INT64, [2, 3])], [vi("y", T.INT64, None)], opset=13)
for label, x in [("three", np.array([[0, 5, 0], [7, 0, -1]], np.int64)),
                 ("none", np.zeros((2, 3), np.int64))]:
    case("nonzero", label, {"x": x}, {"y": np.array(np.nonzero(x), np.int64)})

# Squeeze by an empty axes input: every dimension of size 1, as with none.
model("squeeze_all", helper.make_node("Squeeze", ["x", "axes"], ["y"]),
      [vi("x", T.FLOAT, [1, 3, 1]), vi("axes", T.INT64, [0])], [vi("y", T.FLOAT, None)])
x = rng.standard_normal((1, 3, 1)).astype(np.float32)
case("squeeze_all", "none", {"x": x, "axes": np.zeros(0, np.int64)}, {"y": x.reshape(3)})

# Edge padding of a constant (an initializer) by pads read at run time: the
# cuts of the constant are not evaluated at compile time.
x = rng.standard_normal((2, 3)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("Pad", ["w", "pads"], ["y"], mode="edge")], "pad_of_constant",
    [vi("pads", T.INT64, [4])], [vi("y", T.FLOAT, None)], [numpy_helper.from_array(x, "w")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
          os.path.join(OUT, "pad_of_constant.onnx"))
case("pad_of_constant", "1-0-2-1", {"pads": np.array([1, 0, 2, 1], np.int64)},
     {"y": np.pad(x, ((1, 2), (0, 1)), mode="edge")})
