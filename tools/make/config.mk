# config.mk — the toolchain and what this machine has: compilers, warnings, the Debian packages the
# project links, OpenMP, nvcc and the CUDA libraries. Every other part reads these names.

DEBIAN_PACKAGES := gcc make pkg-config check libsubunit-dev libjansson-dev libpcre2-dev libgsl-dev \
                   libutf8proc-dev libssl-dev gnuplot-nox python3-jsonschema
PKGS := jansson libpcre2-8 gsl libutf8proc libcrypto
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

WERROR ?= -Werror
WARN := -Wall -Wextra $(WERROR) -Wshadow -Wvla -Wno-unused-parameter
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -MMD -MP $(LAYER_INC) $(PKG_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# The CPU engine threads its work with OpenMP when the compiler has it; without it the pragmas are ignored
# and every product runs on one thread.
OPENMP := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
LDLIBS = $(PKG_LIBS) -lm $(OPENMP)

NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CXX_EMU ?= g++
