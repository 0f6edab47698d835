# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".kg", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "unit",
                   "Inputs", "README.md"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.substitutions.append(("%examples", os.path.join(config.kiln_src_root, "examples")))
config.substitutions.append(("%scripts", os.path.join(config.kiln_src_root, "scripts")))
config.substitutions.append(("%kiln_obj_root", config.kiln_obj_root))
# NumPy comes from Debian's python3-numpy, installed for /usr/bin/python3.
config.substitutions.append(("%python", "/usr/bin/python3"))

# Tests that compile kernels with NVRTC say `REQUIRES: nvrtc`.
if config.kiln_have_cuda_toolkit:
    config.available_features.add("nvrtc")

# A sanitizer build (scripts/test --sanitize): its tools carry the ASan and
# UBSan runtimes that kernels built with --emu-sanitize call into.
if "address" in config.kiln_sanitize:
    config.available_features.add("asan")

# clang on PATH: kilnc --emu-sanitize builds kernels with it.
import shutil, subprocess
if shutil.which("clang++-19") or shutil.which("clang++"):
    config.available_features.add("host-clang")

# nvcc (on PATH, or the toolkit's): tests that also compile the generated
# kernels with it, not only with NVRTC, say `REQUIRES: nvcc` and run %nvcc.
nvcc = shutil.which("nvcc") or shutil.which("nvcc", path="/usr/local/cuda/bin")
if nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))

# A machine with an NVIDIA driver and GPU: tests that show what happens
# without one say `UNSUPPORTED: gpu`.
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0:
    config.available_features.add("gpu")

# The fake CUDA runtime (test/fake-cuda): tests of the runtime's CUDA device
# on a machine without a GPU say `REQUIRES: fake-cuda` and point
# KILN_CUDA_LIBRARY_PATH at %fake_cuda.
fake_cuda = os.path.join(config.kiln_obj_root, "test", "fake-cuda")
if os.path.exists(os.path.join(fake_cuda, "libcudart.so.13")):
    config.available_features.add("fake-cuda")
    config.substitutions.append(("%fake_cuda", fake_cuda))

# JAX (jax[cpu]) in the tests' own virtual environment, which scripts/test
# makes (build/test-venv): the independent framework gradients and training
# steps are checked against (`REQUIRES: jax`, `%jax_python`). Never a kiln
# dependency.
jax_python = os.path.join(config.kiln_obj_root, "test-venv", "bin", "python")
if os.path.exists(jax_python) and subprocess.run(
        [jax_python, "-c", "import jax"], capture_output=True).returncode == 0:
    config.available_features.add("jax")
    config.substitutions.append(("%jax_python", jax_python))

# script(1): runs a command on a pseudo-terminal (kilnc elides literals on
# a terminal).
if shutil.which("script"):
    config.available_features.add("script")

# A private mount namespace (unshare -m): tests that hide this machine's
# libraries from what they run (test/tools/gpu-bundle.test).
if shutil.which("unshare") and subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"],
        capture_output=True).returncode == 0:
    config.available_features.add("mount-namespace")

# Compiled kernels are cached inside the build tree, not in ~/.cache.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.kiln_obj_root, "test", "kernel-cache")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [
    os.path.join(config.kiln_tools_dir, "kilnc"),
    os.path.join(config.kiln_tools_dir, "kiln-opt"),
    os.path.join(config.kiln_tools_dir, "kiln-run"),
    config.llvm_tools_dir,
]
llvm_config.add_tool_substitutions(["kilnc", "kiln-opt", "kiln-run"], tool_dirs)
