# specula — the one entry point.
#   make            build the CPU parts (and the CUDA objects when nvcc is found)
#   make demo       run the main job on the embedded default model
#   make test       every test: unit and distribution suites, the sanitizer run,
#                   CUDA compilation (GPU suites skip without a device)
#   make deps       install missing Debian packages (as root) or print the command
#   make plots      tokens per pass against α and the cost plots: PNG, SVG, .dat and .gp
#                   in build/plots/ (gnuplot; PLOT_ARGS="--no-measure" skips the generations)
#   make notebooks  compile and run every notebooks-c/ cell, compare with its output block
#                   (make notebooks-update rewrites the blocks and figures)
#   make exercise EX=N [FILE=path | FILE=reference] [SUITE=s [CASE=c]]   check a course exercise
#   make fuzz       each libFuzzer target for FUZZ_SECONDS (default 60) seconds (clang; docs/reliability.md)
#   make memcheck   the main commands under valgrind: no error, no definite leak (a few minutes)
#   make peer       compare the reference with Hugging Face transformers (PyPI)
#   make bench-peers decode/prefill speed beside llama.cpp and transformers (PyPI; long; docs/performance.md)
#   make audit-peers `specula audit` of llama-server and transformers (after bench-peers; long; docs/audit.md)
#   make verify-docs run `specula verify` and rewrite its tables in docs/verification.md (a few minutes;
#                   VERIFY_DOCS_ALL=1 adds the --all grid)
#   make verify-plants build specula with each bug of tests/mutants/verify.plants planted in a copy of the
#                   source; the default `specula verify` must fail on each (half an hour of CPU; PLANT_JOBS=2)
#   make gpu-check  validate and time the CUDA kernels on a GPU (tools/gpu-session.sh: the whole GPU session)
#   make ptxas-check registers × threads of every CUDA kernel against the SM, by ptxas -v (nvcc; also in make test)
#   make gpu-carry  the engine for sm_90 and its C libraries, for a GPU machine that cannot build it
#   make gemm-bench time the CPU engine's matrix products against the read bandwidth (build/gemm-bench)
#   make bench-course every method on the course model (models/course), k = 1 … 4, medians with their range
#                   (tools/bench-course.sh: RUNS, TOKENS, THREADS; a few minutes)
#   make install PREFIX=DIR   the plug-in header, the library's headers and archives, specula.pc (examples/bigram)
#   make format     clang-format every C/CUDA file
.DEFAULT_GOAL := all
.SUFFIXES:
SHELL := /bin/bash
BUILD ?= build
CC ?= cc
PYTHON ?= python3

include tools/make/config.mk # the toolchain, the packages, what the machine has
include tools/make/core.mk   # the folders as layers, the archives, build/specula and build/genmodel
include tools/make/engine.mk # the CPU engine's flags, gemm-bench
include tools/make/cuda.mk   # the kernels, gpucheck, build/specula-cuda, the emulator, gpu-check
include tools/make/tests.mk  # the test runner, its sanitized twin, the round loop's mutants
include tools/make/fuzz.mk   # the libFuzzer targets and their replays
include tools/make/course.mk # notebooks, exercises, plots
include tools/make/peers.mk  # peer comparisons and the verification tables, outside make test
include tools/make/install.mk # make install PREFIX=DIR: the headers, archives and specula.pc

.PHONY: all demo test test-build test-run memcheck deps peer bench-peers audit-peers gpu-check ptxas-check format clean cuda install \
        plots notebooks notebooks-update exercise exercise-deps gemm-bench bench-course gpu-carry verify-docs verify-plants fuzz
all: $(BUILD)/specula $(BUILD)/genmodel cuda
	@echo "built: $(BUILD)/specula $(BUILD)/genmodel$(if $(NVCC), (CUDA objects with $(NVCC)), (no nvcc: CUDA skipped))$(if $(OPENMP),, (no OpenMP: the CPU engine runs on one thread))"

demo: deps
	@$(MAKE) --no-print-directory all
	@tools/demo.sh $(BUILD)

bench-course: deps
	@$(MAKE) --no-print-directory $(BUILD)/specula
	@tools/bench-course.sh $(BUILD)

# The build runs on every core (on a clean clone it is a good part of the time make test takes); then
# tests/run.sh runs the suites side by side.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) test-build
	@$(MAKE) --no-print-directory test-run

# Everything the suites and parts run (every part above is read by now), built before any of them starts, so
# that the parts that call make (notebooks, exercises) find it up to date.
test-build: $(BUILD)/tests/runner $(BUILD)/tests/runner-asan $(BUILD)/tests/within $(BUILD)/specula $(BUILD)/specula-emu $(BUILD)/emu/gpucheck $(BUILD)/specula-asan $(BUILD)/genmodel \
            cuda $(PTXAS_OUT) exercise-deps $(FUZZ_REPLAY) $(if $(FUZZ_OK),$(FUZZ_BINS))
test-run: test-build
	+@tests/run.sh $(BUILD) # + : the parts call make (notebooks, exercises) under this make's jobserver

# Not part of `make test`: valgrind makes it a few minutes long (tools/memcheck.sh).
memcheck: $(BUILD)/specula $(BUILD)/genmodel
	@tools/deps.sh valgrind
	@tools/memcheck.sh $(BUILD)

deps:
	@tools/deps.sh $(DEBIAN_PACKAGES)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
