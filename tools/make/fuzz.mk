# fuzz.mk — the libFuzzer targets (tests/fuzz, docs/reliability.md "Fuzzing").
# Each tests/fuzz/fuzz_NAME.c is one target over the parsers of untrusted input. With clang's libFuzzer it builds
# into $(BUILD)/fuzz/fuzz-NAME (-fsanitize=fuzzer,address,undefined, its own instrumented objects); with the
# normal compiler and its sanitizers, beside tests/fuzz/replay.c, into $(BUILD)/fuzz/replay-NAME, which `make
# test` runs over the seed corpora and past crashes (tests/parts/fuzz.sh) with or without clang.
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_CC ?= clang
# (probed only for the goals that use it: a link with clang on every make would slow the parts that call make)
ifneq ($(filter test test-build test-run fuzz,$(MAKECMDGOALS)),)
FUZZ_OK := $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' | \
                   $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null && echo yes)
endif
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# what the targets reach: the library's parsers (base, decoding, methods) and generate's command line
FUZZ_LIB_SRC := $(call layer_src,base ops decoding methods) cli/args.c cli/generate_args.c cli/method_cli.c optimized/kv_quant.c \
                optimized/cuda/absent.c
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
