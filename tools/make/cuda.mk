# cuda.mk — the CUDA side: kernels/*.cu and their harness (build/cuda/gpucheck), the commands with the CUDA
# backend for a GPU (build/specula-cuda) and on the kernels' CPU emulator (build/specula-emu).
#
# kernels/*.cu are the kernels, kernels/check/*.cu the harness that validates them against their CPU twins
# (kernels/twin.c) and times them. The same .cu sources, and the engine's CUDA backend (optimized/cuda), also
# compile with the C++ compiler against the emulator (kernels/emu/) into $(BUILD)/emu: the unit suites run every
# kernel and the whole CUDA host path there, with and without sanitizers, so CI exercises them without a GPU.
CU_SRC := $(sort $(wildcard kernels/*.cu))
CU_CHECK_SRC := $(sort $(wildcard kernels/check/*.cu))
ENGINE_CU_SRC := $(sort $(wildcard optimized/cuda/*.cu))
EMU_RT_SRC := kernels/emu/emu.cc kernels/emu/emu_rt.cc
EMU_PLANT_SRC := kernels/emu/emu_plants.cc # the emulator's own tests: in the test runners only
EMU_ENGINE_OBJ = $(patsubst %,$(BUILD)/emu/%.o,$(ENGINE_CU_SRC) $(CU_SRC) $(EMU_RT_SRC))
EMU_OBJ = $(patsubst %,$(BUILD)/emu/%.o,$(ENGINE_CU_SRC) $(CU_SRC) $(CU_CHECK_SRC) $(EMU_RT_SRC) $(EMU_PLANT_SRC))
EMU_SAN_OBJ = $(patsubst %,$(BUILD)/emu-asan/%.o,$(ENGINE_CU_SRC) $(CU_SRC) $(CU_CHECK_SRC) $(EMU_RT_SRC) \
                $(EMU_PLANT_SRC))
CUDA_INC := $(INC_kernels) -Ioptimized

CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
CUDA_HOME := $(if $(NVCC),$(patsubst %/bin/,%,$(dir $(realpath $(NVCC)))))
CUBLAS_LIBDIR := $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcublas.so $(CUDA_HOME)/targets/*/lib/libcublas.so))))
CUBLAS_DEF := $(if $(CUBLAS_LIBDIR),-DKN_HAVE_CUBLAS)
CUBLAS_LIBS := $(if $(CUBLAS_LIBDIR),-L$(CUBLAS_LIBDIR) -lcublas -Xlinker -rpath=$(CUBLAS_LIBDIR))
NVCC_WERROR := $(if $(WERROR),-Xcompiler -Werror -Werror all-warnings)
NVCC_FLAGS := -O3 -std=c++17 $(CUDA_ARCH) $(CUDA_INC) -Xcompiler -Wall,-Wextra $(NVCC_WERROR)
# cuBLAS is gpucheck's baseline alone (kernels/check/matvec_cublas.cu): the engine's binary must load where the
# device's CUDA install has the runtime and nothing more.
$(BUILD)/cuda/kernels/check/matvec_cublas.o: NVCC_FLAGS += $(CUBLAS_DEF)
GPUCHECK_C_SRC := $(addprefix reference/,ops/ops.c base/dtype.c base/philox.c decoding/sampler.c decoding/accept.c \
                    decoding/tree.c base/error.c base/atomic_file.c base/regular_file.c) optimized/kv_quant.c \
                  $(KERNEL_C_SRC)
GPUCHECK_OBJ = $(patsubst %.cu,$(BUILD)/cuda/%.o,$(CU_SRC) $(CU_CHECK_SRC)) $(call obj,$(GPUCHECK_C_SRC))

# Prerequisites, not a second make: under make -j a sub-make would rebuild the libraries while this one links
# against them.
CUDA_TARGETS := $(if $(and $(strip $(NVCC)),$(strip $(CU_SRC))),$(BUILD)/cuda/gpucheck $(BUILD)/specula-cuda)
cuda: $(CUDA_TARGETS)

$(BUILD)/cuda/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@

$(BUILD)/cuda/gpucheck: $(GPUCHECK_OBJ)
	$(NVCC) $(CUDA_ARCH) -o $@ $^ $(CUBLAS_LIBS) -lm

# The commands with the CUDA backend on a GPU (`--backend cuda`): the C objects as every build has them, the
# backend and the kernels from nvcc, linked by the C compiler against the CUDA runtime (libcudart, no cuBLAS).
CUDA_LIBDIR := $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so $(CUDA_HOME)/targets/*/lib/libcudart.so))))
comma := ,
CUDA_RT_LIBS := -L$(CUDA_LIBDIR) -lcudart -Wl$(comma)-rpath$(comma)$(CUDA_LIBDIR)
SPECULA_CUDA_OBJ = $(patsubst %.cu,$(BUILD)/cuda/%.o,$(ENGINE_CU_SRC) $(CU_SRC))
$(BUILD)/specula-cuda: $(call obj,$(CLI_SRC)) $(SPECULA_CUDA_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CUDA_RT_LIBS) -lstdc++

# gpucheck on the emulator: every family on its small shapes, untimed, so that the dry run of tools/gpu-session.sh
# drives the same command line a GPU session does.
EMU_GPUCHECK_OBJ = $(patsubst %,$(BUILD)/emu/%.o,$(CU_SRC) $(CU_CHECK_SRC) $(EMU_RT_SRC) kernels/emu/gpucheck_emu.cc)
$(BUILD)/emu/gpucheck: $(EMU_GPUCHECK_OBJ) $(call obj,$(GPUCHECK_C_SRC))
	$(CXX_EMU) -o $@ $^ -lm

# The same commands with the CUDA backend on the emulator (`--backend cuda` runs there): slow, for proving the
# CUDA host path without a GPU (tests/parts/cuda-emu-cli.sh).
$(BUILD)/specula-emu: $(call obj,$(CLI_SRC)) $(EMU_ENGINE_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lstdc++

EMU_FLAGS = -std=c++17 -DKN_EMU -x c++ $(WARN) -Wno-unknown-pragmas -fno-exceptions -fno-rtti \
            -fno-threadsafe-statics $(CUDA_INC) -MMD -MP

$(BUILD)/emu/%.o: %
	@mkdir -p $(dir $@)
	$(CXX_EMU) $(EMU_FLAGS) -O1 -g -c $< -o $@

$(BUILD)/emu-asan/%.o: %
	@mkdir -p $(dir $@)
	$(CXX_EMU) $(EMU_FLAGS) -O1 -g $(SAN_FLAGS) -fno-sanitize=vptr -c $< -o $@

# Registers × threads against the SM, from ptxas's own counts (tools/ptxas-check.sh, run by tests/parts/ptxas-check.sh
# in `make test`): each CUDA source to PTX (the device side only, as the objects' sm_90 code is compiled), ptxas -v
# on it. The emulator knows no register counts; this is where they are checked.
PTXAS_SRC := $(CU_SRC) $(CU_CHECK_SRC) $(ENGINE_CU_SRC)
PTXAS_OUT = $(if $(NVCC),$(patsubst %.cu,$(BUILD)/ptxas/%.res,$(PTXAS_SRC)))
PTXAS_ARCH := sm_90 # the real architecture of CUDA_ARCH
$(BUILD)/ptxas/%.ptx: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -arch=compute_90 $(CUDA_INC) -MMD -MP -ptx $< -o $@
$(BUILD)/ptxas/%.res: $(BUILD)/ptxas/%.ptx
	$(dir $(realpath $(NVCC)))ptxas -arch=$(strip $(PTXAS_ARCH)) -O3 -v $< -o /dev/null 2>$@.tmp || { cat $@.tmp >&2; exit 1; }
	@mv $@.tmp $@
.PRECIOUS: $(BUILD)/ptxas/%.ptx
ptxas-check: $(PTXAS_OUT)
	@$(if $(NVCC),tools/ptxas-check.sh $(BUILD)/ptxas $(PTXAS_SRC),echo "ptxas-check: no nvcc, nothing to check")

# gpu-check needs only a C compiler and nvcc: it builds its own copy in $(BUILD)/gpu (warnings not fatal: another
# machine's compiler may warn differently) and never runs `deps`. make turns any failure into its own status 2,
# so the script's status (1 a validation failed or a family crashed, 2 no CUDA device, 3 the build failed) is
# printed, kept in $(BUILD)/gpu/gpu-check/exit-status, and is what tools/gpu-check.sh returns.
gpu-check:
	@tools/gpu-check.sh $(BUILD)/gpu; rc=$$?; \
	if [ $$rc -ne 0 ]; then echo "make gpu-check: tools/gpu-check.sh exited with status $$rc (1 a validation failed or a family crashed, 2 no CUDA device, 3 the build failed; also in $(BUILD)/gpu/gpu-check/exit-status)" >&2; fi; \
	exit $$rc

# What a lent GPU session carries when its machine lacks the C libraries (tools/gpu-carry.sh).
gpu-carry:
	@tools/gpu-carry.sh $(BUILD)
