#!/usr/bin/env bash
# hide_build_libraries.sh COMMAND...: runs COMMAND in a private mount
# namespace where the libraries a kiln build uses and a bare GPU machine
# lacks (LLVM and MLIR, oneDNN and OpenMP, OpenBLAS and gfortran, protobuf,
# ONNX, FlatBuffers)
# and the CUDA libraries of this machine read as empty files: what runs
# must bring its own (test/tools/gpu-bundle.test).
set -euo pipefail
if [ "${KILN_LIBRARIES_HIDDEN:-}" != 1 ]; then
  exec unshare --mount --propagation private env KILN_LIBRARIES_HIDDEN=1 "$0" "$@"
fi
hidden=0
while IFS= read -r -d '' file; do
  mount --bind /dev/null "$file"
  hidden=$((hidden + 1))
done < <(find /usr/lib /usr/local/lib /usr/local/cuda/ /usr/lib/llvm-19/lib -xtype f \
           \( -name 'libMLIR*.so*' -o -name 'libLLVM*.so*' -o -name 'libopenblas*.so*' \
              -o -name 'libdnnl*.so*' -o -name 'libgomp*.so*' \
              -o -name 'libblas.so*' -o -name 'libgfortran.so*' -o -name 'libquadmath.so*' \
              -o -name 'libprotobuf*.so*' -o -name 'libonnx*.so*' -o -name 'libflatbuffers*.so*' \
              -o -name 'libcudart.so*' -o -name 'libcublas*.so*' -o -name 'libcudnn*.so*' \
              -o -name 'libnvrtc*.so*' \) -print0 2>/dev/null | xargs -0 -r realpath -z | sort -zu)
echo "hidden: $hidden library files" >&2
exec "$@"
