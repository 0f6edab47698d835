#!/usr/bin/env bash
# check_bundle_libraries.sh DIR: every ELF file in a gpu-check bundle
# resolves each library it needs inside DIR/lib or the base C/C++ runtime
# (the loader, libc, libm, libdl, libpthread, librt, libstdc++, libgcc_s),
# which a bare GPU machine has. Prints one line per binary; exits 1 on any
# other dependency or a missing one.
set -euo pipefail
dir="$(cd "$1" && pwd)"
base='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so)'
bad=0 binaries=0
while IFS= read -r -d '' file; do
  head -c4 "$file" | grep -q $'\x7fELF' || continue
  binaries=$((binaries + 1))
  while read -r line; do
    soname="$(awk '{print $1}' <<<"$line")"
    path="$(awk '$2 == "=>" {print $3}' <<<"$line")"
    if [[ "$line" == *"not found"* ]]; then
      echo "${file#$dir/}: $soname not found"; bad=1
    elif [[ "$soname" =~ $base ]] || [[ "$path" == "$dir/lib/"* ]]; then
      :
    elif [ -z "$path" ] && [[ "$soname" == /* ]]; then
      [[ "$(basename "$soname")" =~ $base ]] || { echo "${file#$dir/}: needs $soname"; bad=1; }
    else
      echo "${file#$dir/}: $soname resolves outside the bundle, to ${path:-?}"; bad=1
    fi
  done < <(LD_LIBRARY_PATH="$dir/lib" ldd "$file" 2>&1 | sed 's/^[[:space:]]*//' |
           grep -v "statically linked\|not a dynamic executable")
done < <(find "$dir" -type f -print0)
echo "$binaries ELF files, every dependency inside the bundle or the base C/C++ runtime"
exit $bad
