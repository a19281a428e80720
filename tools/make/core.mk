# core.mk — the folders as layers, the archives built from them, and the binaries.
#
# A folder may include the headers of the folders it sits on and no others: each compiles with exactly those
# include paths, so a header included against the layers is a compile error (docs/architecture.md draws them).
#   reference/base      config, checkpoint loader, safetensors, tokenizer, Philox, errors    on nothing
#   reference/ops       the numerical definition of every op                                  on nothing
#   reference/decoding  the interfaces, sampler, tree, acceptance, accounting, round loop     on base
#   reference/methods   the proposers, beam search, the method factory                       on decoding, ops
#   reference/model     the plain-C forward and its state                                     on base, ops
#   reference/backend   the reference model behind the interfaces                             on model, methods
#   optimized           the engine, its CPU backend                                           on decoding, ops
#   kernels             the CUDA kernels, their CPU twins, the harness                        on decoding, ops
#   verify              statistics, exact laws, planted bugs, the catalogue, audit           on all of the above
#   tools/analysis      cost models and the Medusa trainer                                    on methods
# cli/, tools/ and tests/ see everything.
INC_base := -Ireference/base
INC_ops := -Ireference/ops
INC_decoding := $(INC_base) -Ireference/decoding
INC_methods := $(INC_decoding) $(INC_ops) -Ireference/methods
INC_model := $(INC_base) $(INC_ops) -Ireference/model
INC_backend := $(INC_methods) -Ireference/model -Ireference/backend
INC_engine := $(INC_decoding) $(INC_ops) -Ioptimized -Ioptimized/cpu
INC_kernels := $(INC_decoding) $(INC_ops) -Ikernels -Ikernels/check -Ikernels/emu
INC_verify := $(INC_backend) -Ioptimized -Iverify
INC_analysis := $(INC_methods) -Itools/analysis
INC_all := $(INC_verify) -Itools/analysis $(INC_kernels) -Itools
REF_LAYERS := base ops decoding methods model backend
LAYER_INC = $(INC_all)
$(foreach l,$(REF_LAYERS),$(eval $(BUILD)/obj/reference/$(l)/%.o $(BUILD)/asan/reference/$(l)/%.o: LAYER_INC = $$(INC_$(l))))
$(BUILD)/obj/optimized/%.o $(BUILD)/asan/optimized/%.o: LAYER_INC = $(INC_engine)
$(BUILD)/obj/kernels/%.o $(BUILD)/asan/kernels/%.o: LAYER_INC = $(INC_kernels)
$(BUILD)/obj/verify/%.o $(BUILD)/asan/verify/%.o: LAYER_INC = $(INC_verify)
$(BUILD)/obj/tools/analysis/%.o $(BUILD)/asan/tools/analysis/%.o: LAYER_INC = $(INC_analysis)

layer_src = $(sort $(wildcard $(addprefix reference/,$(addsuffix /*.c,$(1)))))
REF_SRC := $(call layer_src,$(REF_LAYERS))
VERIFY_SRC := $(sort $(wildcard verify/*.c))
ENGINE_SRC := $(sort $(wildcard optimized/*.c optimized/cpu/*.c))
KERNEL_C_SRC := $(sort $(wildcard kernels/*.c kernels/check/*.c))
TOOL_LIB_SRC := $(sort $(wildcard tools/analysis/*.c tools/genmodel/*.c tools/plots/*.c))
CLI_SRC := $(sort $(wildcard cli/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
sanobj = $(patsubst %.c,$(BUILD)/asan/%.o,$(1))

# Archives, in link order (each uses only those after it):
#   tools   tools/analysis, tools/plots, tools/genmodel and the kernels' C twins and harness
#   verify  verify/ (the only part that needs GSL)
#   engine  optimized/: the engine, its CPU backend and products (OpenMP)
#   ref     reference/model + reference/backend: the plain-C forward behind the interfaces
#   core    reference/base, ops, decoding, methods: what an engine links
lib = $(BUILD)/libspecula-$(1).a
LIB_PARTS := tools verify engine ref core
LIB := $(foreach p,$(LIB_PARTS),$(call lib,$(p)))
LIB_OBJ_core := $(call obj,$(call layer_src,base ops decoding methods))
LIB_OBJ_ref := $(call obj,$(call layer_src,model backend))
LIB_OBJ_verify := $(call obj,$(VERIFY_SRC))
# optimized/cuda/absent.c: backend_cuda_build where no CUDA backend is linked; a binary that links one
# (build/specula-emu, build/specula-cuda, the test runner) names its object first, so this member is never pulled.
LIB_OBJ_engine := $(call obj,$(ENGINE_SRC) optimized/cuda/absent.c)
LIB_OBJ_tools := $(call obj,$(KERNEL_C_SRC) $(filter-out tools/genmodel/main.c,$(TOOL_LIB_SRC)))

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
$(BUILD)/obj/cli/gate_run.o: ALL_CFLAGS += -DSPECULA_GATE_DIR=\"$(CURDIR)/tests/gate\"
$(BUILD)/specula: $(call obj,$(CLI_SRC)) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/genmodel: $(call obj,tools/genmodel/main.c) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
