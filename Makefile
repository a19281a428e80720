# specula — the one entry point.
#   make            build the CPU parts (and the CUDA objects when nvcc is found)
#   make demo       run the main job on the embedded default model
#   make test       every test: unit and distribution suites, the sanitizer run,
#                   CUDA compilation (GPU suites skip without a device)
#   make fuzz       each libFuzzer target for FUZZ_SECONDS (default 60) seconds (clang; docs/reliability.md)
#   make memcheck   the main commands under valgrind: no error, no definite leak (a few minutes)
#   make deps       install missing Debian packages (as root) or print the command
#   make plots      tokens per pass against α and the cost plots: PNG, SVG, .dat and .gp
#                   in build/plots/ (gnuplot; PLOT_ARGS="--no-measure" skips the generations)
#   make peer       compare the reference with Hugging Face transformers (PyPI)
#   make verify-docs run `specula verify` (default, --backend cpu) and rewrite its tables in
#                   docs/verification.md (a few minutes; VERIFY_DOCS_ALL=1 adds the --all grid)
#   make verify-plants build specula with each bug of tests/mutants/verify.plants planted in a copy of the
#                   source; the default `specula verify` must fail on each (half an hour of CPU; the
#                   table goes into docs/verification.md; PLANT_JOBS=2 runs two at a time)
#   make bench-peers decode/prefill speed beside llama.cpp and transformers (PyPI; long; docs/performance.md)
#   make audit-peers `specula audit` of llama-server and transformers (after bench-peers; long; docs/audit.md)
#   make gpu-check  validate and time the CUDA kernels on a GPU (tools/gpu-session.sh: the whole GPU session)
#   make gpu-carry  the engine for sm_90 and its C libraries, for a GPU machine that cannot build it
#   make format     clang-format every C/CUDA file
#   make gemm-bench time the CPU engine's matrix products against the read bandwidth (build/gemm-bench)
#   make notebooks  compile and run every notebooks-c/ cell, compare with its output block
#                   (make notebooks-update rewrites the blocks and figures)
#   make exercise EX=N [FILE=path | FILE=reference] [SUITE=s [CASE=c]]   check a course exercise
.DEFAULT_GOAL := all
.SUFFIXES:
SHELL := /bin/bash

BUILD ?= build
CC ?= cc
PYTHON ?= python3

DEBIAN_PACKAGES := gcc make pkg-config check libsubunit-dev libjansson-dev libpcre2-dev libgsl-dev \
                   libutf8proc-dev libssl-dev gnuplot-nox
PKGS := jansson libpcre2-8 gsl libutf8proc libcrypto
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

WERROR ?= -Werror
WARN := -Wall -Wextra $(WERROR) -Wshadow -Wvla -Wno-unused-parameter
CFLAGS ?= -O2 -g
# The reference is layered. core (config, loader, tokenizer, sampler, tree,
# acceptance, accounting: shared with the engine) is at the bottom; model (the
# plain-C forward and its state) and decoding (the round loop, beam search,
# proposers, the method factory: backend-neutral) each sit on core alone;
# backend (the reference target and steppers) joins the two; analysis (cost
# models, trainers) sits on decoding, verify (statistics, laws, planted bugs,
# the case catalogue) on everything below it and on the engine (its checks
# run there too). Each layer compiles with the include paths of
# the layers it may use only, so a header included across the rule is a
# compile error (docs/architecture.md).
INC_core := -Ireference/core
INC_model := $(INC_core) -Ireference/model
INC_decoding := $(INC_core) -Ireference/decoding
INC_backend := $(INC_core) -Ireference/model -Ireference/decoding -Ireference/backend
INC_verify := $(INC_backend) -Ioptimized -Ireference/verify
INC_analysis := $(INC_decoding) -Ireference/analysis
INC_all := $(INC_backend) -Ireference/verify -Ireference/analysis
# The engine (optimized/) sits on core and the decoding layer, beside the
# reference's model and backend, which it never sees.
INC_engine := $(INC_decoding) -Ioptimized -Ioptimized/cpu
LAYER_INC = $(INC_all) -Ioptimized -Ikernels -Itools
LAYERS := core model decoding backend verify analysis
$(foreach l,$(LAYERS),$(eval $(BUILD)/obj/reference/$(l)/%.o $(BUILD)/asan/reference/$(l)/%.o: LAYER_INC = $$(INC_$(l))))
$(BUILD)/obj/optimized/%.o $(BUILD)/asan/optimized/%.o: LAYER_INC = $(INC_engine)
# kernels/*.c (the CPU twins, the harness's host side) use core alone, as the .cu files do.
$(BUILD)/obj/kernels/%.o $(BUILD)/asan/kernels/%.o: LAYER_INC = $(INC_core) -Ikernels
$(BUILD)/obj/optimized/%.o $(BUILD)/asan/optimized/%.o: ALL_CFLAGS += $(if $(OPENMP),$(OPENMP),-Wno-unknown-pragmas)
# Each kernel of cpu_gemm is compiled for its own instruction set (x86 only); gemm.c's run-time dispatch is the
# only caller, after checking the CPU.
ifneq ($(filter x86_64% i686% i386%,$(shell $(CC) -dumpmachine)),)
GEMM_ISA_FLAGS_avx2 := -mavx2 -mfma
GEMM_ISA_FLAGS_avx512 := -mavx2 -mfma -mavx512f -mavx512bw -mavx512vl
GEMM_ISA_FLAGS_avx512bf16 := $(GEMM_ISA_FLAGS_avx512) -mavx512bf16
$(foreach i,avx2 avx512 avx512bf16,$(eval $(BUILD)/obj/optimized/cpu/gemm_$(i).o \
    $(BUILD)/asan/optimized/cpu/gemm_$(i).o: ALL_CFLAGS += $$(GEMM_ISA_FLAGS_$(i))))
endif
# The DeltaNet step's row loops, attention's lanes and the activations are left to the vectoriser (deltanet.c,
# attention.c, activations.c: one clone per instruction set on x86-64).
$(BUILD)/obj/optimized/cpu/deltanet.o $(BUILD)/obj/optimized/cpu/attention.o $(BUILD)/obj/optimized/cpu/activations.o: \
    ALL_CFLAGS += -O3
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -MMD -MP $(LAYER_INC) $(PKG_CFLAGS)
# The CPU engine (optimized/cpu) threads its products with OpenMP when the compiler has it; without it the
# pragmas are ignored and every product runs on one thread.
OPENMP := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
LDLIBS = $(PKG_LIBS) -lm $(OPENMP)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })

REF_SRC := $(sort $(wildcard reference/*/*.c))
TOOL_LIB_SRC := $(sort $(wildcard tools/genmodel/*.c tools/plots/*.c))
CLI_SRC := $(sort $(wildcard cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
STAT_SRC := $(sort $(wildcard tests/stat/*.c))
GPU_TEST_SRC := $(sort $(wildcard tests/gpu/*.c))
HARNESS_SRC := tests/harness.c tests/fixtures.c
CU_SRC := $(sort $(wildcard kernels/*.cu))
CU_CHECK_SRC := $(sort $(wildcard kernels/check/*.cu))
KERNEL_C_SRC := $(sort $(wildcard kernels/*.c))
# The engine's CUDA backend (host code calling the kernels), for a GPU and for the emulator alike.
ENGINE_CU_SRC := $(sort $(wildcard optimized/cuda/*.cu))
# The emulator: the fiber scheduler (emu.cc) and the runtime around it (emu_rt.cc: memory, streams, graphs).
EMU_RT_SRC := kernels/emu.cc kernels/emu_rt.cc
EMU_KERNEL_OBJ = $(patsubst %,$(BUILD)/emu/%.o,$(CU_SRC) $(EMU_RT_SRC))
EMU_ENGINE_OBJ = $(patsubst %,$(BUILD)/emu/%.o,$(ENGINE_CU_SRC)) $(EMU_KERNEL_OBJ)
EMU_OBJ = $(patsubst %,$(BUILD)/emu/%.o,$(ENGINE_CU_SRC) $(CU_SRC) $(CU_CHECK_SRC) $(EMU_RT_SRC))
EMU_SAN_OBJ = $(patsubst %,$(BUILD)/emu-asan/%.o,$(ENGINE_CU_SRC) $(CU_SRC) $(CU_CHECK_SRC) $(EMU_RT_SRC))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
sanobj = $(patsubst %.c,$(BUILD)/asan/%.o,$(1))

# Archives, in link order (each uses only those after it):
#   tools     tools/plots, tools/genmodel and the kernels' C twins
#   analysis  reference/analysis
#   verify    reference/verify (the only part that needs GSL)
#   engine    optimized/: the engine, its CPU backend and products (on core and decoding alone; OpenMP)
#   ref       reference/model + reference/backend: the plain-C forward behind the interfaces
#   core      reference/core + reference/decoding: what an engine links
lib = $(BUILD)/libspecula-$(1).a
LIB_PARTS := tools analysis verify engine ref core
LIB := $(foreach p,$(LIB_PARTS),$(call lib,$(p)))
ref_src = $(sort $(wildcard $(addprefix reference/,$(addsuffix /*.c,$(1)))))
LIB_OBJ_core := $(call obj,$(call ref_src,core decoding))
LIB_OBJ_ref := $(call obj,$(call ref_src,model backend))
LIB_OBJ_verify := $(call obj,$(call ref_src,verify))
LIB_OBJ_analysis := $(call obj,$(call ref_src,analysis))
ENGINE_SRC := $(sort $(wildcard optimized/*.c optimized/cpu/*.c))
# optimized/cuda/absent.c: backend_cuda_build where no CUDA backend is linked; a binary that links one
# (build/specula-emu, build/specula-cuda, the test runner) names its object first, so this member is never pulled.
LIB_OBJ_engine := $(call obj,$(ENGINE_SRC) optimized/cuda/absent.c)
LIB_OBJ_tools := $(call obj,$(KERNEL_C_SRC) $(filter-out tools/genmodel/main.c,$(TOOL_LIB_SRC)))

.PHONY: all demo test test-build test-run memcheck deps peer bench-peers audit-peers gpu-check format clean cuda info-tools plots notebooks \
        notebooks-update exercise exercise-deps gemm-bench gpu-carry verify-docs verify-plants fuzz
all: $(BUILD)/specula $(BUILD)/genmodel cuda
	@echo "built: $(BUILD)/specula $(BUILD)/genmodel$(if $(NVCC), (CUDA objects with $(NVCC)), (no nvcc: CUDA skipped))$(if $(OPENMP),, (no OpenMP: the CPU engine runs on one thread))"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O1 $(SAN_FLAGS) -c $< -o $@

# the objects named in explicit rules, so make keeps them between builds
$(foreach p,$(LIB_PARTS),$(eval $(call lib,$(p)): $(LIB_OBJ_$(p))))
$(BUILD)/libspecula-%.a:
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/cli/args.o: ALL_CFLAGS += -DSPECULA_MODELS_DIR=\"$(CURDIR)/models\"
$(BUILD)/specula: $(call obj,$(CLI_SRC)) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The same commands with the CUDA backend on the kernels' CPU emulator (`--backend cuda` runs there): slow, for
# proving the CUDA host path without a GPU (tests/parts/cuda-emu-cli.sh).
$(BUILD)/specula-emu: $(call obj,$(CLI_SRC)) $(EMU_ENGINE_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lstdc++

$(BUILD)/genmodel: $(call obj,tools/genmodel/main.c) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- tests -----------------------------------------------------------------
# Each test file defines `Suite *NAME_suite(void)`; the runner's list of suites
# is generated from the sources, so adding a file is all it takes.
$(BUILD)/gen/suites.h: $(UNIT_SRC) $(STAT_SRC) $(GPU_TEST_SRC) tests/list-suites.sh
	@mkdir -p $(dir $@)
	tests/list-suites.sh unit $(UNIT_SRC) > $@.tmp
	tests/list-suites.sh stat $(STAT_SRC) >> $@.tmp
	tests/list-suites.sh gpu $(GPU_TEST_SRC) >> $@.tmp
	mv $@.tmp $@

$(BUILD)/obj/tests/runner.o $(BUILD)/asan/tests/runner.o: $(BUILD)/gen/suites.h
$(BUILD)/obj/tests/runner.o: ALL_CFLAGS += -I$(BUILD)/gen $(CHECK_CFLAGS)
$(BUILD)/asan/tests/runner.o: ALL_CFLAGS += -I$(BUILD)/gen $(CHECK_CFLAGS) -DRUNNER_UNIT_ONLY
$(BUILD)/obj/tests/%.o $(BUILD)/asan/tests/%.o: ALL_CFLAGS += $(CHECK_CFLAGS) -Itests

# tests/gpu runs build/cuda/gpucheck in a child process (CUDA never starts in
# the runner, whose tests Check forks).
$(BUILD)/obj/tests/gpu/%.o: ALL_CFLAGS += -DGPUCHECK_BIN='"$(BUILD)/cuda/gpucheck"'

# Mutants of the round loop (tests/mutants/decode.mutants): decode.c and
# decode_batch.c (the loop's body) as one file with one planted change each,
# its functions renamed mutant_NAME_*, linked beside the
# real loop so the canaries of tests/unit/test_decode.c can show they reject them.
MUTANTS := $(shell awk -F '\t' '!/^\#/ && NF == 3 {print $$1}' tests/mutants/decode.mutants)
mutant_rename = $(foreach f,decode_run decode_batch_run decode_defaults decode_output_free,-D$(f)=mutant_$(1)_$(f))
MUTANT_SRC := reference/decoding/decode.c reference/decoding/decode_batch.c
$(BUILD)/mutants/decode_%.c: $(MUTANT_SRC) tests/mutants/decode.mutants tests/mutants/mutate.sh
	@mkdir -p $(dir $@)
	cat $(MUTANT_SRC) > $@.src
	tests/mutants/mutate.sh $* $@.src tests/mutants/decode.mutants > $@.tmp && mv $@.tmp $@ && rm $@.src
$(BUILD)/obj/mutants/decode_%.o: $(BUILD)/mutants/decode_%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(call mutant_rename,$*) -c $< -o $@
$(BUILD)/asan/mutants/decode_%.o: $(BUILD)/mutants/decode_%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O1 $(SAN_FLAGS) $(call mutant_rename,$*) -c $< -o $@
$(BUILD)/obj/mutants/%.o $(BUILD)/asan/mutants/%.o: LAYER_INC = $(INC_decoding)
.PRECIOUS: $(BUILD)/mutants/decode_%.c
MUTANT_OBJ = $(patsubst %,$(BUILD)/obj/mutants/decode_%.o,$(MUTANTS))
MUTANT_LIB := $(BUILD)/libspecula-mutants.a
$(MUTANT_LIB): $(MUTANT_OBJ)
	rm -f $@ && ar rcs $@ $^
MUTANT_SAN_OBJ = $(patsubst %,$(BUILD)/asan/mutants/decode_%.o,$(MUTANTS))

TEST_OBJ = $(call obj,tests/runner.c $(HARNESS_SRC) $(UNIT_SRC) $(STAT_SRC) $(GPU_TEST_SRC)) $(MUTANT_OBJ)
$(BUILD)/tests/runner: $(TEST_OBJ) $(EMU_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS) -lstdc++

SAN_OBJ = $(call sanobj,tests/runner.c $(HARNESS_SRC) $(UNIT_SRC) $(REF_SRC) $(KERNEL_C_SRC) $(ENGINE_SRC) \
                       $(filter-out tools/genmodel/main.c,$(TOOL_LIB_SRC)))
$(BUILD)/tests/runner-asan: $(SAN_OBJ) $(MUTANT_SAN_OBJ) $(EMU_SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS) -lstdc++

# ---- fuzzing (tests/fuzz, docs/reliability.md "Fuzzing") ----------------------------------------------------------
# Each tests/fuzz/fuzz_NAME.c is one libFuzzer target over the parsers of untrusted input. With clang's libFuzzer
# it builds into $(BUILD)/fuzz/fuzz-NAME (-fsanitize=fuzzer,address,undefined, its own instrumented objects);
# with the normal compiler and its sanitizers, beside tests/fuzz/replay.c, into $(BUILD)/fuzz/replay-NAME,
# which `make test` runs over the seed corpora and past crashes (tests/parts/fuzz.sh) with or without clang.
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_CC ?= clang
# (probed only for the goals that use it: a link with clang on every make would slow the parts that call make)
ifneq ($(filter test test-build test-run fuzz,$(MAKECMDGOALS)),)
FUZZ_OK := $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' | \
                   $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null && echo yes)
endif
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# what the targets reach: core and decoding (the library's parsers), and generate's command line
FUZZ_LIB_SRC := $(call ref_src,core decoding) cli/args.c cli/generate_args.c cli/method_cli.c optimized/cuda/absent.c
FUZZ_REPLAY := $(patsubst %,$(BUILD)/fuzz/replay-%,$(FUZZ_TARGETS))
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz-%,$(FUZZ_TARGETS))
fuzzobj = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))
$(BUILD)/asan/tests/fuzz/%.o $(BUILD)/fuzz/obj/tests/fuzz/%.o: \
    ALL_CFLAGS += -Icli -DFUZZ_TOKENIZER_JSON='"$(CURDIR)/models/tiny-shakespeare/tokenizer.json"'

$(BUILD)/fuzz/replay-%: $(call sanobj,tests/fuzz/replay.c $(FUZZ_LIB_SRC)) $(BUILD)/asan/tests/fuzz/fuzz_%.o
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lm

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(ALL_CFLAGS) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/fuzz-%: $(call fuzzobj,$(FUZZ_LIB_SRC)) $(BUILD)/fuzz/obj/tests/fuzz/fuzz_%.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lm
.PRECIOUS: $(BUILD)/fuzz/obj/%.o $(BUILD)/asan/%.o

# make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS="config cli"]: each target for N seconds, one after the other; new
# inputs gather in $(BUILD)/fuzz/corpus/NAME, crashes in $(BUILD)/fuzz/crashes/NAME.
fuzz:
ifeq ($(FUZZ_OK),yes)
	@$(MAKE) --no-print-directory $(patsubst %,$(BUILD)/fuzz/fuzz-%,$(FUZZ_TARGETS))
	@tests/fuzz/run.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)
else
	@echo "make fuzz: $(FUZZ_CC) with libFuzzer (-fsanitize=fuzzer) not found; install clang (Debian package clang)" >&2
	@exit 1
endif

# ---- CPU engine benchmark (not part of `make test`: it times, it asserts nothing) -------------------------------
$(BUILD)/obj/tools/cpubench/%.o: ALL_CFLAGS += $(if $(OPENMP),$(OPENMP),-Wno-unknown-pragmas)
$(BUILD)/gemm-bench: $(call obj,tools/cpubench/gemm_bench.c) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
gemm-bench: $(BUILD)/gemm-bench

# ---- CUDA ------------------------------------------------------------------
# kernels/*.cu are the kernels, kernels/check/*.cu the harness that validates
# them against their CPU twins (kernels/twin.c) and times them; together with
# the C sources below they link into $(BUILD)/cuda/gpucheck. The same .cu
# sources also compile with the C++ compiler against the CPU emulator
# (kernels/emu.h) into $(BUILD)/emu: the unit suites run every kernel there on
# small shapes, with and without sanitizers, so CI exercises them without a GPU.
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
CUDA_HOME := $(if $(NVCC),$(patsubst %/bin/,%,$(dir $(realpath $(NVCC)))))
CUBLAS_LIBDIR := $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcublas.so $(CUDA_HOME)/targets/*/lib/libcublas.so))))
CUBLAS_DEF := $(if $(CUBLAS_LIBDIR),-DKN_HAVE_CUBLAS)
CUBLAS_LIBS := $(if $(CUBLAS_LIBDIR),-L$(CUBLAS_LIBDIR) -lcublas -Xlinker -rpath=$(CUBLAS_LIBDIR))
NVCC_WERROR := $(if $(WERROR),-Xcompiler -Werror -Werror all-warnings)
NVCC_FLAGS := -O3 -std=c++17 $(CUDA_ARCH) -Ireference/core -Ikernels -Ikernels/check -Ioptimized $(CUBLAS_DEF) -Xcompiler -Wall,-Wextra $(NVCC_WERROR)
GPUCHECK_C_SRC := $(addprefix reference/core/,ops.c dtype.c philox.c sampler.c accept.c tree.c error.c atomic_file.c) $(KERNEL_C_SRC)
GPUCHECK_OBJ = $(patsubst %.cu,$(BUILD)/cuda/%.o,$(CU_SRC) $(CU_CHECK_SRC)) $(call obj,$(GPUCHECK_C_SRC))

# Prerequisites, not a second make: under make -j a sub-make would rebuild
# the libraries while this one links against them.
CUDA_TARGETS := $(if $(and $(strip $(NVCC)),$(strip $(CU_SRC))),$(BUILD)/cuda/gpucheck $(BUILD)/specula-cuda)
cuda: $(CUDA_TARGETS)

$(BUILD)/cuda/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@

$(BUILD)/cuda/gpucheck: $(GPUCHECK_OBJ)
	$(NVCC) $(CUDA_ARCH) -o $@ $^ $(CUBLAS_LIBS) -lm

# The commands with the CUDA backend on a GPU (`--backend cuda`): the C objects as every build has them, the
# backend and the kernels from nvcc, linked by the C compiler against the CUDA runtime.
CUDA_LIBDIR := $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so $(CUDA_HOME)/targets/*/lib/libcudart.so))))
comma := ,
CUDA_RT_LIBS := -L$(CUDA_LIBDIR) -lcudart -Wl$(comma)-rpath$(comma)$(CUDA_LIBDIR) \
                $(if $(CUBLAS_LIBDIR),-L$(CUBLAS_LIBDIR) -lcublas -Wl$(comma)-rpath$(comma)$(CUBLAS_LIBDIR))
SPECULA_CUDA_OBJ = $(patsubst %.cu,$(BUILD)/cuda/%.o,$(ENGINE_CU_SRC) $(CU_SRC))
$(BUILD)/specula-cuda: $(call obj,$(CLI_SRC)) $(SPECULA_CUDA_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CUDA_RT_LIBS) -lstdc++

CXX_EMU ?= g++
EMU_FLAGS = -std=c++17 -DKN_EMU -x c++ $(WARN) -Wno-unknown-pragmas -fno-exceptions -fno-rtti \
            -fno-threadsafe-statics -Ireference/core -Ikernels -Ikernels/check -Ioptimized -MMD -MP

$(BUILD)/emu/%.o: %
	@mkdir -p $(dir $@)
	$(CXX_EMU) $(EMU_FLAGS) -O1 -g -c $< -o $@

$(BUILD)/emu-asan/%.o: %
	@mkdir -p $(dir $@)
	$(CXX_EMU) $(EMU_FLAGS) -O1 -g $(SAN_FLAGS) -fno-sanitize=vptr -c $< -o $@

# ---- course: notebooks and exercises ----------------------------------------
# Notebook cells are complete programs built with the project's own flags
# against the library; NOTEBOOK_ARGS passes runner options (--counts FILE).
NOTEBOOKS := $(sort $(wildcard notebooks-c/[0-9]*.md))
NB_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(INC_all) -Ioptimized -Itools $(PKG_CFLAGS)
NB_RUN = tools/notebook/run.sh --build $(BUILD) --cc "$(CC)" --cflags "$(NB_CFLAGS)" --libs "$(LIB) $(LDLIBS)"
notebooks: $(LIB)
	@$(NB_RUN) $(NOTEBOOK_ARGS) $(NOTEBOOKS)
notebooks-update: $(LIB)
	@$(NB_RUN) --update $(NOTEBOOK_ARGS) $(NOTEBOOKS)

# An exercise's checker builds the project's suites with the student's FILE
# (default: the exercise's starter.c; FILE=reference checks the reference);
# SUITE=name runs only that one of its suites, CASE=name only its test cases of that name.
# exercise-deps builds what every checker links, so that checkers can run side by side
# (tests/parts/exercises.sh) without two makes building the same file.
EXERCISE_OBJ = $(call obj,$(HARNESS_SRC) $(UNIT_SRC) $(STAT_SRC))
exercise-deps: $(LIB) $(EXERCISE_OBJ) $(MUTANT_LIB)
exercise: exercise-deps
	@lessons/exercises/check.sh --build $(BUILD) --objdir $(BUILD)/obj --cc "$(CC)" --cflags "$(NB_CFLAGS)" \
	    --check-cflags "$(CHECK_CFLAGS)" --libs "$(MUTANT_LIB) $(LIB) $(CHECK_LIBS) $(LDLIBS)" \
	    $(if $(SUITE),--suite $(SUITE)) $(if $(CASE),--case $(CASE)) $(or $(EX),$(error give EX=N)) $(FILE)

# ---- entry points -----------------------------------------------------------
deps:
	@tools/deps.sh $(DEBIAN_PACKAGES)

# The build runs on every core (on a clean clone it is a good part of the
# time make test takes); then tests/run.sh runs the suites side by side.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) test-build
	@$(MAKE) --no-print-directory test-run

# Everything the suites and parts run, built before any of them starts, so
# that the parts that call make (notebooks, exercises) find it up to date.
test-build: $(BUILD)/tests/runner $(BUILD)/tests/runner-asan $(BUILD)/specula $(BUILD)/specula-emu $(BUILD)/genmodel \
            cuda exercise-deps $(FUZZ_REPLAY) $(if $(FUZZ_OK),$(FUZZ_BINS))
test-run: test-build
	+@tests/run.sh $(BUILD) # + : the parts call make (notebooks, exercises) under this make's jobserver

# Not part of `make test`: valgrind makes it a few minutes long (tools/memcheck.sh).
memcheck: $(BUILD)/specula $(BUILD)/genmodel
	@tools/deps.sh valgrind
	@tools/memcheck.sh $(BUILD)

demo: deps
	@$(MAKE) --no-print-directory all
	@tools/demo.sh $(BUILD)

PLOT_ARGS ?=
plots: $(BUILD)/specula
	@command -v gnuplot >/dev/null 2>&1 || { echo "make plots: gnuplot is not installed; \`make deps\` installs it (Debian package gnuplot-nox)" >&2; exit 1; }
	$(BUILD)/specula plot --out $(BUILD)/plots $(PLOT_ARGS)

# gpu-check needs only a C compiler and nvcc: it builds its own copy in
# $(BUILD)/gpu (warnings not fatal: another machine's compiler may warn
# differently) and never runs `deps`. make turns any failure into its own
# status 2, so the script's status (1 a validation failed or a family
# crashed, 2 no CUDA device, 3 the build failed) is printed, kept in
# $(BUILD)/gpu/gpu-check/exit-status, and is what tools/gpu-check.sh returns.
gpu-check:
	@tools/gpu-check.sh $(BUILD)/gpu; rc=$$?; \
	if [ $$rc -ne 0 ]; then echo "make gpu-check: tools/gpu-check.sh exited with status $$rc (1 a validation failed or a family crashed, 2 no CUDA device, 3 the build failed; also in $(BUILD)/gpu/gpu-check/exit-status)" >&2; fi; \
	exit $$rc

# What a lent GPU session carries when its machine lacks the C libraries (tools/gpu-carry.sh).
gpu-carry:
	@tools/gpu-carry.sh $(BUILD)

peer: all
	@tools/peer/run.sh $(BUILD) $(PYTHON)

# The tables of docs/verification.md that `specula verify` prints: its plan
# (checked by tests/parts/verify-docs.sh) and its measured runs, dated, with
# the machine and the times (tools/verify-docs.sh).
verify-docs: $(BUILD)/specula
	@tools/verify-docs.sh $(BUILD) docs/verification.md

# Bugs planted in copies of the source (tests/mutants/verify.plants) that the
# default `specula verify` must catch; the table goes into docs/verification.md.
PLANT_JOBS ?= 1
verify-plants: $(BUILD)/specula
	@tools/verify-plants.sh -j $(PLANT_JOBS) $(BUILD) docs/verification.md

# The peer benchmark (never part of `make test`): the reference (and, once it
# exists, the CPU engine) beside llama.cpp and transformers on the same
# checkpoints, with the machine's read bandwidth measured in the same run.
# Everything it installs, builds and writes stays under $(BUILD)/peers.
# BENCH_PEERS_ARGS passes options to tools/peer/bench_peers.py (--help).
# readbw is built for the machine it measures (-O3 -march=native, as llama.cpp's
# GGML_NATIVE build is): at -O2 without wide vectors its sum, not memory, was the limit.
$(BUILD)/readbw: tools/cpubench/readbw.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -O3 -march=native -pthread -o $@ $<

BENCH_PEERS_ARGS ?=
bench-peers: all $(BUILD)/readbw
	@tools/peer/bench_peers.sh $(BUILD) $(PYTHON) $(BENCH_PEERS_ARGS)

# `specula audit` of llama-server (our draft model, MTP) over loopback and of
# transformers, on what bench-peers prepared (docs/audit.md). Long.
AUDIT_PEERS_ARGS ?=
audit-peers: all
	@tools/audit/audit_peers.sh $(BUILD) $(AUDIT_PEERS_ARGS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
