#!/usr/bin/env bash
# gpu-carry.sh BUILD — the body of `make gpu-carry`: build/gpu-carry/ holds
# specula-cuda (sm_90) and the C libraries it needs that a bare CUDA image
# lacks (JSON, regex, GSL, Unicode, crypto, OpenMP), for a lent GPU session
# whose machine cannot install them: name build/gpu-carry in the device
# call's carry, and tools/gpu-session.sh uses it when it cannot build there.
# The CUDA runtime and cuBLAS come from the GPU machine's own toolkit.
set -eu
build=${1:-build}
carry=$build/gpu-carry
make --no-print-directory "$build/specula-cuda"
rm -rf "$carry" && mkdir -p "$carry/lib"
cp "$build/specula-cuda" "$carry/"
ldd "$build/specula-cuda" | awk '/=> \// {print $3}' |
    grep -E 'lib(jansson|pcre2-8|gsl|gslcblas|utf8proc|crypto|gomp)\.so' | while read -r lib; do
    cp -L "$lib" "$carry/lib/"
done
echo "gpu-carry: $(du -sh "$carry" | cut -f1) in $carry: $(ls "$carry/lib" | tr '\n' ' ')"
