# tests.mk — the Check runner, its sanitized twin, the round loop's mutants, and `make test`'s two steps.
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
STAT_SRC := $(sort $(wildcard tests/stat/*.c))
GPU_TEST_SRC := $(sort $(wildcard tests/gpu/*.c))
HARNESS_SRC := tests/harness.c tests/fixtures.c tests/tcase_limit.c tests/cpu_watch.c

# Each test file defines `Suite *NAME_suite(void)`; the runner's list of suites is generated from the sources, so
# adding a file is all it takes.
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

# tests/gpu runs build/cuda/gpucheck in a child process (CUDA never starts in the runner, whose tests Check forks).
$(BUILD)/obj/tests/gpu/%.o: ALL_CFLAGS += -DGPUCHECK_BIN='"$(BUILD)/cuda/gpucheck"'

# Mutants of the round loop (tests/mutants/decode.mutants): the loop's source with one planted change each, its
# functions renamed mutant_NAME_*, linked beside the real loop so the canaries of tests/unit/test_decode.c can
# show they reject them.
MUTANTS := $(shell awk -F '\t' '!/^\#/ && NF == 3 {print $$1}' tests/mutants/decode.mutants)
DECODE_FUNCTIONS := decode_run decode_defaults decode_output_free decode_now_s decode_check decode_seq_start accept_rule_name \
                    decode_seq_free decode_seq_live decode_site decode_propose decode_accept decode_commit decode_realign
mutant_rename = $(foreach f,$(DECODE_FUNCTIONS),-D$(f)=mutant_$(1)_$(f))
MUTANT_SRC := reference/decoding/decode.c
$(BUILD)/mutants/decode_%.c: $(MUTANT_SRC) tests/mutants/decode.mutants tests/mutants/mutate.sh
	@mkdir -p $(dir $@)
	tests/mutants/mutate.sh $* $(MUTANT_SRC) tests/mutants/decode.mutants > $@.tmp && mv $@.tmp $@
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

# within: a CPU-time limit for the steps of the shell parts (tests/within.c)
$(BUILD)/tests/within: $(call obj,tests/within.c tests/cpu_watch.c)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^

# The command line built with the sanitizers, with the CUDA backend on the emulator (as specula-emu):
# tests/parts/bad-input-asan.sh runs the bad-input table through it, so that no refusal hides a bad read.
EMU_ENGINE_SAN_OBJ = $(patsubst %,$(BUILD)/emu-asan/%.o,$(ENGINE_CU_SRC) $(CU_SRC) $(EMU_RT_SRC))
SPECULA_SAN_OBJ = $(call sanobj,$(CLI_SRC) $(REF_SRC) $(VERIFY_SRC) $(KERNEL_C_SRC) $(ENGINE_SRC) \
                                $(filter-out tools/genmodel/main.c,$(TOOL_LIB_SRC)))
$(BUILD)/specula-asan: $(SPECULA_SAN_OBJ) $(EMU_ENGINE_SAN_OBJ)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) -lstdc++

TEST_OBJ = $(call obj,tests/runner.c $(HARNESS_SRC) $(UNIT_SRC) $(STAT_SRC) $(GPU_TEST_SRC)) $(MUTANT_OBJ)
$(BUILD)/tests/runner: $(TEST_OBJ) $(EMU_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS) -lstdc++

SAN_OBJ = $(call sanobj,tests/runner.c $(HARNESS_SRC) $(UNIT_SRC) $(REF_SRC) $(VERIFY_SRC) $(KERNEL_C_SRC) \
                        $(ENGINE_SRC) $(filter-out tools/genmodel/main.c,$(TOOL_LIB_SRC)))
$(BUILD)/tests/runner-asan: $(SAN_OBJ) $(MUTANT_SAN_OBJ) $(EMU_SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS) -lstdc++
