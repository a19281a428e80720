#!/usr/bin/env bash
# gpu-carry.sh BUILD — the body of `make gpu-carry`: BUILD/gpu-carry/ holds the sm_90 binaries a lent GPU session
# runs (specula-cuda, gpucheck) and the C libraries they need that a bare CUDA image lacks (JSON, regex, GSL,
# Unicode, crypto, OpenMP), so tools/gpu-session.sh starts measuring at once instead of building: name
# BUILD/gpu-carry in the device call's carry. The CUDA runtime and cuBLAS (gpucheck's baseline alone) come from
# the GPU machine's own toolkit.
set -eu
build=${1:-build}
carry=$build/gpu-carry
bins="$build/specula-cuda $build/cuda/gpucheck"
# shellcheck disable=SC2086 # the targets are words
make --no-print-directory BUILD="$build" $bins
rm -rf "$carry" && mkdir -p "$carry/lib"
# shellcheck disable=SC2086
cp $bins "$carry/"
# shellcheck disable=SC2086
ldd $bins | awk '/=> \// {print $3}' | sort -u |
    grep -E 'lib(jansson|pcre2-8|gsl|gslcblas|utf8proc|crypto|gomp)\.so' | while read -r lib; do
    cp -L "$lib" "$carry/lib/"
done
# the engine must load where the device's CUDA install has the runtime alone
if ldd "$carry/specula-cuda" | grep -q libcublas; then
    echo "gpu-carry: $carry/specula-cuda links cuBLAS, which only gpucheck may" >&2
    exit 1
fi
echo "gpu-carry: $(du -sh "$carry" | cut -f1) in $carry: specula-cuda, gpucheck, lib/: $(ls "$carry/lib" | tr '\n' ' ')"
