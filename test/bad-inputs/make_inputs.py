#!/usr/bin/env python3
"""Writes the catalogue's binary bad inputs into a folder (catalogue.tsv
names them): malformed or hostile ONNX models, executables, .npy and .pb
tensors, and .kg texts too large or too odd to check in."""

import os
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, kilnc = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)


def path(name):
    return os.path.join(out, name)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def model(nodes, inputs, outputs, inits=(), opset=17, check=False):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


f32 = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

# --- ONNX models ---------------------------------------------------------
good = model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [2, 3])], [f32("y", [2, 3])])
write("good.onnx", good)
write("empty.onnx", b"")
write("not-protobuf.onnx", b"\xff\xff\xff\xff this is not a protobuf \x00\x01")
write("truncated.onnx", good[: len(good) // 2])
write("unknown-op.onnx", model([helper.make_node("FrobnicateTensor", ["x"], ["y"])],
                               [f32("x", [2, 3])], [f32("y", [2, 3])]))
write("undefined-input.onnx", model([helper.make_node("Add", ["x", "ghost"], ["y"])],
                                    [f32("x", [2, 3])], [f32("y", [2, 3])]))
write("cycle.onnx", model([helper.make_node("Add", ["x", "z"], ["y"]),
                           helper.make_node("Relu", ["y"], ["z"])],
                          [f32("x", [2, 3])], [f32("z", [2, 3])]))
# Two inputs sharing the dim_param "batch": one symbol, one range.
write("shared-batch.onnx", model([helper.make_node("Add", ["x", "m"], ["y"])],
                                 [f32("x", ["batch", 3]), f32("m", ["batch", 3])],
                                 [f32("y", ["batch", 3])]))
write("negative-dim.onnx", model([helper.make_node("Relu", ["x"], ["y"])],
                                 [f32("x", [2, -3])], [f32("y", [2, 3])]))
write("huge-dims.onnx", model([helper.make_node("Relu", ["x"], ["y"])],
                              [f32("x", [1 << 40, 1 << 40])], [f32("y", [1, 1])]))
write("type-mismatch.onnx", model(
    [helper.make_node("Add", ["x", "i"], ["y"])],
    [f32("x", [2, 3]), helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3])],
    [f32("y", [2, 3])]))
short = TensorProto()
short.name, short.data_type = "w", TensorProto.FLOAT
short.dims.extend([4, 4])
short.raw_data = b"\x00" * 12  # 3 floats for 16
write("short-initializer.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])],
                                      [f32("x", [4, 4])], [f32("y", [4, 4])], [short]))
# A node that names no outputs (a fuzzer finding: converters name their
# results after the outputs).
write("node-without-outputs.onnx",
      model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Reshape", ["y", "s"], [])],
            [f32("x", [4, 4]), helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
            [f32("y", [4, 4])]))
external = TensorProto()
external.name, external.data_type = "w", TensorProto.FLOAT
external.dims.extend([4])
external.data_location = TensorProto.EXTERNAL
external.external_data.add(key="location", value="missing-weights.bin")
write("external-data.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])],
                                  [f32("x", [4])], [f32("y", [4])], [external]))
write("duplicate-output.onnx", model([helper.make_node("Relu", ["x"], ["y"]),
                                      helper.make_node("Neg", ["x"], ["y"])],
                                     [f32("x", [2])], [f32("y", [2])]))
write("future-opset.onnx", model([helper.make_node("Relu", ["x"], ["y"])],
                                 [f32("x", [2])], [f32("y", [2])], opset=99))
write("no-outputs.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [2])], []))
# Expand to 2^21 x 2^21: more than the 2^40 elements a tensor may hold.
write("huge-expand.onnx", model([helper.make_node("Expand", ["x", "shape"], ["y"])],
                                [f32("x", [1, 1])], [f32("y", [2097152, 2097152])],
                                [numpy_helper.from_array(np.array([2097152, 2097152], np.int64), "shape")]))
# ONNX's Gradient (ai.onnx.preview.training) without y, of a value no node
# defines, and of an integer value.
def gradient(name, y_attr, xs, input_type=TensorProto.FLOAT):
    attrs = {"xs": xs} if y_attr is None else {"xs": xs, "y": y_attr}
    nodes = [helper.make_node("Add", ["a", "b"], ["c"]),
             helper.make_node("Gradient", xs, ["d_" + x for x in xs],
                              domain="ai.onnx.preview.training", **attrs)]
    g = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("a", input_type, []),
                                         helper.make_tensor_value_info("b", input_type, [])],
                          [helper.make_tensor_value_info("d_" + xs[0], input_type, [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("ai.onnx.preview.training", 1)])
    m.ir_version = 8
    write(name, m.SerializeToString())


def training_model(nodes, inputs, outputs):
    g = helper.make_graph(nodes, "bad", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("ai.onnx.preview.training", 1)])
    m.ir_version = 8
    return m.SerializeToString()


# A Gradient fed another value than the one its zs names (taken at another
# point than the graph computes), and one over a dynamic dimension.
write("gradient-other-point.onnx", training_model(
    [helper.make_node("Mul", ["a", "b"], ["c"]),
     helper.make_node("Gradient", ["a", "b1"], ["d_a"], domain="ai.onnx.preview.training",
                      xs=["a"], zs=["b"], y="c")],
    [f32("a", []), f32("b", []), f32("b1", [])], [f32("d_a", [])]))
write("gradient-dynamic.onnx", training_model(
    [helper.make_node("Mul", ["a", "a"], ["c"]),
     helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
     helper.make_node("Gradient", ["a"], ["d_a"], domain="ai.onnx.preview.training",
                      xs=["a"], y="s")],
    [f32("a", ["n"])], [f32("d_a", ["n"])]))
gradient("gradient-no-y.onnx", None, ["a"])
gradient("gradient-undefined-y.onnx", "ghost", ["a"])
gradient("gradient-integer.onnx", "c", ["a"], TensorProto.INT64)
write("bad-attribute.onnx", model([helper.make_node("Softmax", ["x"], ["y"], axis=7)],
                                  [f32("x", [2, 3])], [f32("y", [2, 3])]))

# --- executables ---------------------------------------------------------
with open(path("tiny.kg"), "w") as f:
    f.write("model tiny\ninput x: f32[2, 3]\nweight w: f32[3, 4] = 0.5\n"
            "y = relu(matmul(x, w))\noutput y\n")
subprocess.run([kilnc, path("tiny.kg"), "-o", path("tiny.kx")], check=True,
               capture_output=True)
kx = open(path("tiny.kx"), "rb").read()
write("empty.kx", b"")
write("truncated.kx", kx[: len(kx) - 100])
write("header-only.kx", kx[:64])
write("bad-magic.kx", b"NOTKILN\x00" + kx[8:])
write("bad-version.kx", kx[:8] + struct.pack("<I", 99) + kx[12:])
write("bad-header-size.kx", kx[:12] + struct.pack("<I", 128) + kx[16:])
write("trailing-bytes.kx", kx + b"\x00" * 16)
flipped = bytearray(kx)
flipped[200] ^= 0x40
write("checksum.kx", bytes(flipped))
write("huge-payload.kx", kx[:16] + struct.pack("<Q", 1 << 62) + kx[24:])

# A cuda-emu executable whose steps launch its kernels otherwise than the
# kernels were generated for: edited through flatc and resealed, as anyone
# can, so the container is valid and only the launch lies.
with open(path("emu.kg"), "w") as f:
    f.write("model emu\ninput x: f32[4, 64]\nweight w: f32[64, 32] = random(seed=1, scale=0.1)\n"
            "y = softmax(relu(matmul(x, w)), axis=-1)\noutput y\n")
subprocess.run([kilnc, path("emu.kg"), "--target=cuda-emu", "-o", path("emu.kx")], check=True,
               capture_output=True)
# The same, built for kiln-run --profile.
subprocess.run([kilnc, path("emu.kg"), "--target=cuda-emu", "--emu-profile", "-o",
                path("emu-profiled.kx")], check=True, capture_output=True)
edit_kx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edit_kx.py")


def edit_each(source, edits):
    """Writes each (name, statement) of `edits` as `source` edited by
    edit_kx.py."""
    for name, statement in edits:
        subprocess.run([sys.executable, edit_kx, path(source), path(name), statement], check=True)


so = "code('cuda-emu', 'elf-so')['data']"
edit_each("emu.kx", [
        ("emu-block.kx", "step('kiln_matmul_1')['block'] = 512"),  # past its tiles
        ("emu-grid.kx", "step('kiln_matmul_1')['grid'] = 4000000000"),
        ("emu-shared.kx", "step('kiln_matmul_1')['dynamic_shared'] = 4096"),
        ("emu-shared-huge.kx", "step('kiln_matmul_1')['dynamic_shared'] = 300000"),
        ("emu-few-params.kx", "step('kiln_matmul_1')['kernel_inputs'] = [0]"),
        ("emu-swapped-params.kx", "step('kiln_matmul_1')['kernel_inputs'] = [1, 0]"),
        ("emu-other-kernel.kx", "step('kiln_matmul_1')['kernel'] = 'kiln_reduction_2'"),
        # The kernel library itself: cut short, and its first segment
        # (program header at 64, p_filesz 32 bytes in) grown past its end
        # (dlopen maps a file of the blob's size).
        ("emu-truncated-library.kx", f"del {so}[4096:]"),
        ("emu-segment-past-end.kx", f"{so}[96:104] = list((1 << 40).to_bytes(8, 'little'))")])
# Kernels alike in launch and buffers: a step given another step's kernel,
# and a subtraction given its operands the other way round.
with open(path("emu-pair.kg"), "w") as f:
    f.write("model emu_pair\ninput x: f32[4, 64]\ninput z: f32[4, 64]\na = relu(x)\n"
            "b = sigmoid(z)\nc = x - z\noutput a\noutput b\noutput c\n")
subprocess.run([kilnc, path("emu-pair.kg"), "--target=cuda-emu", "-o", path("emu-pair.kx")],
               check=True, capture_output=True)
edit_each("emu-pair.kx", [
        ("emu-other-step.kx", "step('kiln_sigmoid_4')['kernel'] = 'kiln_relu_2'"),
        ("emu-swapped-operands.kx", "step('kiln_sub_6')['kernel_inputs'] = [1, 0]")])

# An executable over a range of sizes (x: [1..4, 3]) and hostile edits of
# its symbolic sizes and size symbols.
write("dyn.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", ["batch", 3])],
                        [f32("y", ["batch", 3])]))
subprocess.run([kilnc, path("dyn.onnx"), "--input-shape", "x=1..4x3", "-o", path("dyn.kx")],
               check=True, capture_output=True)
size_code = "exe['values'][0]['type']['sizes'][0]['code']"
kernel = "exe['steps'][0]['cpu_kernels'][0]"
edit_each("dyn.kx", [
        ("dyn-unknown-symbol.kx", f"{size_code}[:] = [1, 5]"),
        ("dyn-divide-by-zero.kx", f"{size_code}[:] = [1, 0, 0, 0, 4]"),
        ("dyn-malformed-size.kx", f"{size_code}[:] = [1, 0, 2]"),
        ("dyn-overflowing-size.kx", f"{size_code}[:] = [1, 0, 0, {1 << 62}, 3]"),
        ("dyn-missing-size.kx", "del exe['values'][0]['type']['sizes']"),
        ("dyn-empty-range.kx", "exe['symbols'][0]['min'] = 5"),
        ("dyn-range-past-arena.kx", "exe['symbols'][0]['max'] = 100000"),
        ("dyn-duplicate-symbol.kx", "exe['symbols'].append(dict(exe['symbols'][0]))"),
        ("dyn-long-symbol-name.kx", "exe['symbols'][0]['name'] = 'b' * 300"),
        ("dyn-input-plus-one.kx", f"{size_code}[:] = [1, 0, 0, 1, 2]"),
        # The CPU kernel's counts: unpaired, not dividing its read, a
        # symbolic row no count gives, a symbolic count in a static file.
        ("dyn-unpaired-counts.kx", f"{kernel}['count_reads'] = [0]"),
        ("dyn-count-not-dividing.kx",
         f"{kernel}['count_reads'] = [0]; {kernel}['count_divisors'] = [7]"),
        ("dyn-row-without-count.kx", f"{kernel}['row_size'] = {{'code': [0, 3]}}")])

# The same range for cuda-emu (its relu kernel takes the batch as an
# argument, its grid computed per run) and hostile edits of the kernel's
# symbolic launch; and a symbolic grid in a file of static shapes.
subprocess.run([kilnc, path("dyn.onnx"), "--input-shape", "x=1..4x3", "--target=cuda-emu", "-o",
                path("dyn-emu.kx")], check=True, capture_output=True)
relu = "step('kiln_relu_1')"
edit_each("dyn-emu.kx", [
        ("dyn-emu-no-blocks.kx", f"{relu}['grid_size'] = {{'code': [1, 0, 0, 0, 3]}}"),
        ("dyn-emu-grid-and-size.kx", f"{relu}['grid'] = 5"),
        ("dyn-emu-other-size.kx", f"{relu}['kernel_sizes'] = [{{'code': [0, 7]}}]"),
        ("dyn-emu-no-sizes.kx", f"del {relu}['kernel_sizes']"),
        ("dyn-emu-bad-size.kx", f"{relu}['kernel_sizes'] = [{{'code': [1, 9]}}]")])
# A matmul over the range: a cuBLASLt call whose rows (n) are filled in per
# run; edits naming a size the call lacks, and rows past its buffers.
write("dynmm.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])], [f32("x", ["batch", 8])],
                          [f32("y", ["batch", 4])],
                          [numpy_helper.from_array(np.ones((8, 4), np.float32), "w")]))
subprocess.run([kilnc, path("dynmm.onnx"), "--input-shape", "x=1..4x8", "--target=cuda-emu",
                "--impl=library", "-o", path("dynmm.kx")], check=True, capture_output=True)
gemm = "[s for s in exe['steps'] if 'gemm' in s][0]['gemm']"
edit_each("dynmm.kx", [
        ("dyn-gemm-no-such-size.kx", f"{gemm}['symbolic'][0]['field'] = 12"),
        ("dyn-gemm-rows-past-buffers.kx", f"{gemm}['symbolic'][0]['size'] = {{'code': [0, 1000]}}")])
# A softmax over rows of 1..2048: a size class of short rows with its own
# kernel; edits of the class.
write("dynsm.onnx", model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                          [f32("x", [4, "n"])], [f32("y", [4, "n"])]))
subprocess.run([kilnc, path("dynsm.onnx"), "--input-shape", "x=4x1..2048", "--target=cuda-emu",
                "-o", path("dynsm.kx")], check=True, capture_output=True)
cls = "step('kiln_softmax_1')['kernel_classes'][0]"
edit_each("dynsm.kx", [
        ("dyn-class-unknown-symbol.kx", f"{cls}['when'] = {{'code': [1, 4]}}"),
        ("dyn-class-no-grid.kx", f"del {cls}['grid_size']"),
        ("dyn-class-other-kernel.kx", f"{cls}['kernel'] = 'kiln_softmax_1'")])
edit_each("emu.kx", [("emu-symbolic-grid.kx", "step('kiln_matmul_1')['grid'] = 0; "
                                              "step('kiln_matmul_1')['grid_size'] = {'code': [0, 1]}")])

# An executable reading a Reshape's shape at run time (rt.kx) and hostile
# edits of its size symbols' codes; a buffer placed per run in a file of
# static shapes.
write("rt.onnx", model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                       [f32("x", [2, 3, 4]), helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]))
subprocess.run([kilnc, path("rt.onnx"), "-o", path("rt.kx")], check=True, capture_output=True)
np.save(path("rt-x.npy"), np.ones((2, 3, 4), np.float32))
np.save(path("rt-shape.npy"), np.array([4, 3, 2], np.int64))
np.save(path("rt-two-inferred.npy"), np.array([-1, -1, 2], np.int64))
np.save(path("rt-shape-i8.npy"), np.array([4, 3, 2], np.int8))
edit_each("rt.kx", [
        ("rt-reads-floats.kx", "exe['symbols'][0]['code'] = [12, 0, 0]"),
        ("rt-reads-past-input.kx", "exe['symbols'][0]['code'] = [12, 1, 9]"),
        ("rt-later-symbol.kx", "exe['symbols'][0]['code'] = [1, 3]"),
        ("rt-missing-input.kx", "exe['symbols'][0]['code'] = [12, 5, 0]"),
        ("rt-input-sized-at-run-time.kx",
         "exe['values'][0]['type']['shape'][0] = -1; "
         "exe['values'][0]['type']['sizes'] = [{'code': [1, 4]}]")])
# An executable whose output length follows computed data (NonZero of a
# comparison: its length read from a count a step computes) and hostile
# edits of that length's symbol: a value past the file's, one that is not
# an i64 buffer a step computes (the input), an element past the count, a
# negative range, a range the data exceeds.
write("len.onnx", model([helper.make_node("Greater", ["x", "zero"], ["m"]),
                         helper.make_node("NonZero", ["m"], ["y"])],
                        [f32("x", [6])], [helper.make_tensor_value_info("y", TensorProto.INT64,
                                                                       None)],
                        [numpy_helper.from_array(np.zeros((), np.float32), "zero")]))
subprocess.run([kilnc, path("len.onnx"), "-o", path("len.kx")], check=True, capture_output=True)
np.save(path("len-x.npy"), np.array([1, -1, 2, 3, -4, 5], np.float32))
length = "exe['symbols'][0]"
edit_each("len.kx", [
        ("len-no-such-value.kx", f"{length}['code'][1] = 100000"),
        ("len-reads-input.kx", f"{length}['code'][1] = 0"),
        ("len-past-count.kx", f"{length}['code'][2] = 1"),
        ("len-negative-range.kx", f"{length}['min'] = -1"),
        ("len-range-exceeded.kx", f"{length}['max'] = 2; {length}['opt'] = 2")])
# A training step (kilnc --train: its weight a state the session keeps) and
# hostile edits of its state: an input past the file's, an output of
# another type, a state given twice, an initial value of another size.
write("train.onnx", model([helper.make_node("Mul", ["x", "w"], ["y"]),
                           helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)],
                          [f32("x", [4])], [f32("loss", [])],
                          [numpy_helper.from_array(np.ones(4, np.float32), "w")]))
subprocess.run([kilnc, path("train.onnx"), "--train=loss", "-o", path("train.kx")], check=True,
               capture_output=True)
np.save(path("train-x.npy"), np.arange(4, dtype=np.float32))
state = "exe['states'][0]"
edit_each("train.kx", [
        ("state-no-such-input.kx", f"{state}['input'] = 99"),
        ("state-other-type.kx", f"{state}['output'] = 0"),
        ("state-twice.kx", f"exe['states'].append(dict({state}))"),
        ("state-initial-size.kx",
         f"{state}['initial'] = [k for k, w in enumerate(exe['weights']) "
         f"if len(w.get('data', [])) != 16][0]")])
edit_each("tiny.kx", [("placed-static.kx", "[v for v in exe['values'] if v.get('kind') == "
                                           "'Buffer'][0]['index'] = 2**64 - 1")])

# A cuDNN step's kernel may only be its epilogue (bias, ReLU): given other
# inputs, or kept when the epilogue is gone, the loader refuses the step.
with open(path("conv-lib.kg"), "w") as f:
    f.write("model conv_lib\ninput x: f32[1, 2, 5, 5]\n"
            "weight w: f32[3, 2, 3, 3] = random(seed=1, scale=0.3)\n"
            "weight b: f32[3] = random(seed=2, scale=0.2)\ny = relu(conv2d(x, w, b))\noutput y\n")
subprocess.run([kilnc, path("conv-lib.kg"), "--target=cuda-emu", "--impl=library", "-o",
                path("conv-lib.kx")], check=True, capture_output=True)
edit_each("conv-lib.kx", [
        ("conv-epilogue-inputs.kx", "step('kiln_cudnn_epilogue_1')['kernel_inputs'] = [0]"),
        ("conv-epilogue-none.kx", "s = step('kiln_cudnn_epilogue_1'); s['conv']['bias'] = False; "
                                  "s['conv']['relu'] = False; s['conv']['bias_input'] = -1"),
        # A descriptor that says channels last over row-major values: the
        # CPU would read one layout and cuDNN the other.
        ("conv-layout-mismatch.kx", "step('kiln_cudnn_epilogue_1')['conv']['nhwc'] = True")])

# Native CPU code whose records disagree with the step or the object:
# built for x86-64-v2, which every x86-64 machine running the tests has.
with open(path("cpu.kg"), "w") as f:
    f.write("model cpu\ninput x: f32[4, 64]\nweight b: f32[64] = random(seed=1, scale=0.1)\n"
            "y = relu(x * 2.0 + b)\noutput y\n")
subprocess.run([kilnc, path("cpu.kg"), "--cpu=x86-64-v2", "-o", path("cpu.kx")], check=True,
               capture_output=True)
run = "exe['steps'][0]['cpu_kernels'][0]"
elf = "code('x86-64-v2', 'elf-rel')"
edit_each("cpu.kx", [
        ("cpu-run-past-ops.kx", f"{run}['op_count'] = 9"),
        ("cpu-reads-later.kx", f"{run}['reads'][0] = 5"),
        # The code loads an int64 where the step has f32; a dtype per read.
        ("cpu-read-dtype.kx", f"{run}['read_dtypes'][0] = 'I64'"),
        ("cpu-read-dtypes-count.kx", f"{run}['read_dtypes'] = ['F32']"),
        ("cpu-keeps-output.kx", f"{run}['writes'] = [3]"),
        ("cpu-wrong-elements.kx", f"{run}['elements'] = 4096"),
        ("cpu-uneven-rows.kx", f"{run}['row'] = 7"),  # 256 elements: no whole rows
        ("cpu-unknown-symbol.kx", f"{run}['symbol'] = 'kiln_cpu_7'"),
        ("cpu-unknown-level.kx", f"{elf}['target'] = 'x86-64-v9'"),
        ("cpu-no-code.kx", "exe['device_code'] = []"),
        ("cpu-truncated-object.kx", f"del {elf}['data'][600:]"),
        ("cpu-shared-object.kx", f"{elf}['data'][16] = 3")])  # ET_DYN, not ET_REL

# --- tensors -------------------------------------------------------------
np.save(path("x.npy"), np.random.default_rng(1).uniform(-1, 1, (2, 3)).astype(np.float32))
np.save(path("wrong-shape.npy"), np.ones((3, 2), np.float32))
np.save(path("wrong-dtype.npy"), np.ones((2, 3), np.float64))
np.save(path("complex.npy"), np.ones((2, 3), np.complex64))
npy = open(path("x.npy"), "rb").read()
write("truncated.npy", npy[:-8])
write("bad-magic.npy", b"\x93NUMPX" + npy[6:])
write("bad-header.npy", npy[:10] + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, oops), }".ljust(len(npy) - 10 - 24) + npy[-24:])
write("huge-shape.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) +
      b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }".ljust(117) + b"\n")
t = numpy_helper.from_array(np.ones((2, 3), np.float32), "x")
write("x.pb", t.SerializeToString())
write("wrong-shape.pb", numpy_helper.from_array(np.ones((6,), np.float32), "x").SerializeToString())
write("wrong-dtype.pb", numpy_helper.from_array(np.ones((2, 3), np.int32), "x").SerializeToString())
write("malformed.pb", b"\x0a\xff\xff\xff\xff\x0f garbage")
ext = TensorProto()
ext.name, ext.data_type = "x", TensorProto.FLOAT
ext.dims.extend([2, 3])
ext.data_location = TensorProto.EXTERNAL
write("external.pb", ext.SerializeToString())

# --- .kg texts -------------------------------------------------------------
write("empty.kg", b"")
write("binary.kg", bytes(range(256)) * 4)
write("deep-nesting.kg", b"model deep\ninput x: f32[2]\ny = " + b"relu(" * 100000 + b"x" +
      b")" * 100000 + b"\noutput y\n")
write("huge-dims.kg", b"model big\ninput x: f32[4294967296, 4294967296]\ny = relu(x)\noutput y\n")
# A zero dimension makes 0 elements, but the others still multiply past 2^80.
write("zero-dim-overflow.kg", b"model big\ninput x: f32[0, 1099511627776, 1099511627776]\ny = relu(x)\noutput y\n")
write("overflow-dim.kg", b"model big\ninput x: f32[99999999999999999999]\ny = relu(x)\noutput y\n")
write("negative-dim.kg", b"model neg\ninput x: f32[2, -3]\ny = relu(x)\noutput y\n")
write("nan-literal.kg", b"model nan\ninput x: f32[2]\ny = x * nan\noutput y\n")
write("cycle.kg", b"model cycle\ninput x: f32[2]\na = b + x\nb = a + x\noutput b\n")
