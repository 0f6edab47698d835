"""ONNX models whose output lengths follow computed data (NonZero and
Compress of values the model computes), with inputs and NumPy's expected
outputs for data that keep none, some and all of the entries.

    data_dependent_lengths.py OUT_DIR

writes OUT_DIR/masks.onnx and, per case, OUT_DIR/masks-CASE/ holding the
input x.npy and OUT_DIR/masks-CASE/expected/ the outputs.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper

OUT = sys.argv[1]
rng = np.random.default_rng(11)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


# As exporters write masks: a comparison, NonZero, the selected values
# gathered and summed; rows kept by a computed condition (Compress); and the
# indices of a 2-D mask, transposed and used in arithmetic after.
nodes = [
    helper.make_node("Greater", ["x", "threshold"], ["mask"]),
    helper.make_node("NonZero", ["mask"], ["indices"]),
    helper.make_node("Transpose", ["indices"], ["pairs"], perm=[1, 0]),
    helper.make_node("Cast", ["pairs"], ["pairs_f"], to=T.FLOAT),
    helper.make_node("ReduceSum", ["pairs_f", "one"], ["pair_sums"], keepdims=0),
    helper.make_node("Reshape", ["x", "flat"], ["x_flat"]),
    helper.make_node("Greater", ["x_flat", "threshold"], ["mask_flat"]),
    helper.make_node("NonZero", ["mask_flat"], ["positions_2d"]),
    helper.make_node("Squeeze", ["positions_2d", "zero"], ["positions"]),
    helper.make_node("Gather", ["x_flat", "positions"], ["selected"], axis=0),
    helper.make_node("ReduceSum", ["selected"], ["sum"], keepdims=0),
    helper.make_node("Add", ["sum", "one_f"], ["total"]),  # nonzero when none is selected
    helper.make_node("ReduceMax", ["x"], ["row_max"], axes=[1], keepdims=0),
    helper.make_node("Greater", ["row_max", "row_threshold"], ["keep"]),
    helper.make_node("Compress", ["x", "keep"], ["rows"], axis=0),
    helper.make_node("Relu", ["rows"], ["rows_relu"]),
]
initializers = [
    helper.make_tensor("threshold", T.FLOAT, [], [0.5]),
    helper.make_tensor("row_threshold", T.FLOAT, [], [0.9]),
    helper.make_tensor("one", T.INT64, [1], [1]),
    helper.make_tensor("one_f", T.FLOAT, [], [1.0]),
    helper.make_tensor("flat", T.INT64, [1], [-1]),
    helper.make_tensor("zero", T.INT64, [1], [0]),
]
graph = helper.make_graph(
    nodes, "masks", [vi("x", T.FLOAT, [5, 6])],
    [vi("indices", T.INT64, [2, "n"]), vi("pair_sums", T.FLOAT, ["n"]),
     vi("selected", T.FLOAT, ["m"]), vi("total", T.FLOAT, []),
     vi("rows_relu", T.FLOAT, ["r", 6])],
    initializers)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(OUT, "masks.onnx"))


def case(label, x):
    d = os.path.join(OUT, f"masks-{label}")
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    np.save(os.path.join(d, "x.npy"), x)
    indices = np.array(np.nonzero(x > 0.5), np.int64)
    flat = x.reshape(-1)
    selected = flat[flat > 0.5]
    expected = {
        "indices": indices,
        "pair_sums": indices.T.astype(np.float32).sum(axis=1),
        "selected": selected,
        "total": np.array(selected.sum(dtype=np.float32) + 1, np.float32),
        "rows_relu": np.maximum(x[x.max(axis=1) > 0.9], 0),
    }
    for k, v in expected.items():
        np.save(os.path.join(d, "expected", k + ".npy"), v)


case("some", rng.random((5, 6), dtype=np.float32))
case("others", rng.random((5, 6), dtype=np.float32))
case("none", rng.random((5, 6), dtype=np.float32) * 0.4)  # nothing above 0.5
case("all", 0.95 + rng.random((5, 6), dtype=np.float32) * 0.04)  # everything kept


# Unique of computed values (Floor(3 x) of random x: repeats), sorted and in
# order of first occurrence, of the elements and of rows along axis 0.
unique_nodes = [
    helper.make_node("Mul", ["u", "three"], ["scaled"]),
    helper.make_node("Floor", ["scaled"], ["levels"]),
    helper.make_node("Unique", ["levels"], ["y", "first", "inverse", "counts"], sorted=1),
    helper.make_node("Unique", ["levels"], ["y_seen", "first_seen", "inverse_seen", "counts_seen"],
                     sorted=0),
    helper.make_node("Unique", ["levels"], ["rows", "rows_first", "rows_inverse", "rows_counts"],
                     axis=0, sorted=1),
    helper.make_node("Unique", ["levels"], ["cols", "cols_first", "cols_inverse", "cols_counts"],
                     axis=-1, sorted=0),
    # Of a constant: its count folds to a literal.
    helper.make_node("Unique", ["table"], ["table_y", "", "", "table_counts"]),
]
unique_graph = helper.make_graph(
    unique_nodes, "unique", [vi("u", T.FLOAT, [8, 2])],
    [vi(n, T.FLOAT if n in ("y", "y_seen", "rows", "cols", "table_y") else T.INT64, None)
     for n in ["y", "first", "inverse", "counts", "y_seen", "first_seen", "inverse_seen",
               "counts_seen", "rows", "rows_first", "rows_inverse", "rows_counts", "cols",
               "cols_first", "cols_inverse", "cols_counts", "table_y", "table_counts"]],
    [helper.make_tensor("three", T.FLOAT, [], [3.0]),
     helper.make_tensor("table", T.FLOAT, [7], [3, 1, 3, 2, 1, 3, 5])])
# Every output's shape: its rank, the sizes left unnamed.
ranks = {"rows": 2, "cols": 2}
for out in unique_graph.output:
    for _ in range(ranks.get(out.name, 1)):
        out.type.tensor_type.shape.dim.add()
onnx.save(helper.make_model(unique_graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(OUT, "unique.onnx"))


def by_first_occurrence(values, first, inverse, counts):
    """np.unique's sorted results reordered as ONNX's sorted=0 gives them."""
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return values[order], first[order], rank[inverse], counts[order]


def unique_case(label, u):
    d = os.path.join(OUT, f"unique-{label}")
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    np.save(os.path.join(d, "u.npy"), u)
    levels = np.floor(u * 3).astype(np.float32)
    flat = levels.reshape(-1)
    y, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                          return_counts=True)
    seen = by_first_occurrence(y, first, inverse, counts)
    rows, rows_first, rows_inverse, rows_counts = np.unique(
        levels, axis=0, return_index=True, return_inverse=True, return_counts=True)
    cols, cols_first, cols_inverse, cols_counts = np.unique(
        levels, axis=1, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(cols_first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    table_y, table_counts = np.unique(np.float32([3, 1, 3, 2, 1, 3, 5]), return_counts=True)
    expected = {"y": y, "first": first, "inverse": inverse, "counts": counts,
                "y_seen": seen[0], "first_seen": seen[1], "inverse_seen": seen[2],
                "counts_seen": seen[3], "rows": rows, "rows_first": rows_first,
                "rows_inverse": rows_inverse.reshape(-1), "rows_counts": rows_counts,
                "cols": np.ascontiguousarray(cols[:, order]), "cols_first": cols_first[order],
                "cols_inverse": rank[cols_inverse.reshape(-1)], "cols_counts": cols_counts[order],
                "table_y": table_y, "table_counts": table_counts}
    for k, v in expected.items():
        v = v.astype(np.float32) if k in ("y", "y_seen", "rows", "cols", "table_y") \
            else v.astype(np.int64)
        np.save(os.path.join(d, "expected", k + ".npy"), v)


unique_case("repeats", rng.random((8, 2), dtype=np.float32) + 0.01)
unique_case("two-levels", rng.choice(np.float32([0.1, 0.5]), (8, 2)))


# NonMaxSuppression of computed scores (a sigmoid of logits), thresholds as
# initializers, as a detector's exported head writes it.
nms_graph = helper.make_graph(
    [helper.make_node("Sigmoid", ["logits"], ["scores"]),
     helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "min_score"],
                      ["selected"])],
    "nms", [vi("boxes", T.FLOAT, [2, 16, 4]), vi("logits", T.FLOAT, [2, 3, 16])],
    [vi("selected", T.INT64, ["k", 3])],
    [helper.make_tensor("max_out", T.INT64, [1], [5]),
     helper.make_tensor("iou", T.FLOAT, [1], [0.4]),
     helper.make_tensor("min_score", T.FLOAT, [1], [0.3])])
onnx.save(helper.make_model(nms_graph, opset_imports=[helper.make_opsetid("", 11)]),
          os.path.join(OUT, "nms.onnx"))


def greedy_nms(boxes, scores, max_out, iou_threshold, score_threshold):
    """ONNX's NonMaxSuppression (corner boxes), one box at a time."""
    def extent(b):
        return min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])

    def iou(p, q):
        h = min(p[2], q[2]) - max(p[0], q[0])
        w = min(p[3], q[3]) - max(p[1], q[1])
        if h <= 0 or w <= 0:
            return 0.0
        inter = h * w
        union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
        return inter / union if union > 0 else 0.0

    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            order = [i for i in np.argsort(-s, kind="stable") if s[i] > score_threshold]
            kept = []
            for i in order:
                if len(kept) >= max_out:
                    break
                box = extent(boxes[b, i].astype(np.float64))
                if all(iou(box, extent(boxes[b, j].astype(np.float64))) <= iou_threshold
                       for j in kept):
                    kept.append(i)
                    selected.append([b, c, i])
    return np.array(selected, np.int64).reshape(-1, 3)


def nms_case(label, spread, jitter):
    d = os.path.join(OUT, f"nms-{label}")
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    corners = rng.random((2, 16, 2), dtype=np.float32) * spread
    sizes = 0.5 + rng.random((2, 16, 2), dtype=np.float32) * jitter
    boxes = np.concatenate([corners, corners + sizes], axis=2).astype(np.float32)
    logits = rng.standard_normal((2, 3, 16)).astype(np.float32)
    np.save(os.path.join(d, "boxes.npy"), boxes)
    np.save(os.path.join(d, "logits.npy"), logits)
    scores = (1 / (1 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
    np.save(os.path.join(d, "expected", "selected.npy"),
            greedy_nms(boxes, scores, 5, np.float32(0.4), np.float32(0.3)))


nms_case("crowded", 0.25, 0.1)  # boxes alike and near: suppression
nms_case("spread", 8.0, 1.0)   # little overlap: the count limit
