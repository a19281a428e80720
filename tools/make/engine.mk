# engine.mk — the CPU engine's compile flags: OpenMP for optimized/, one instruction set per matrix-product kernel,
# -O3 where the vectoriser does the work; and make gemm-bench, its products timed (it asserts nothing).
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
# The DeltaNet step's row loops, attention's lanes and the activations are left to the vectoriser (one clone per
# instruction set on x86-64).
$(BUILD)/obj/optimized/cpu/deltanet.o $(BUILD)/obj/optimized/cpu/attention.o $(BUILD)/obj/optimized/cpu/activations.o: \
    ALL_CFLAGS += -O3

$(BUILD)/obj/tools/cpubench/%.o: ALL_CFLAGS += $(if $(OPENMP),$(OPENMP),-Wno-unknown-pragmas)
$(BUILD)/gemm-bench: $(call obj,tools/cpubench/gemm_bench.c) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
gemm-bench: $(BUILD)/gemm-bench

# The machine's streaming read bandwidth, built for the machine it measures (-O3 -march=native, as llama.cpp's
# GGML_NATIVE build is): at -O2 without wide vectors its sum, not memory, was the limit.
$(BUILD)/readbw: tools/cpubench/readbw.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -O3 -march=native -pthread -o $@ $<
