# course.mk — the course's programs: the C notebooks, the exercises' checkers and the plots.
# Notebook cells are complete programs built with the project's own flags against the library; NOTEBOOK_ARGS
# passes runner options (--counts FILE).
NOTEBOOKS := $(sort $(wildcard notebooks-c/[0-9]*.md))
NB_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(INC_all) $(PKG_CFLAGS)
NB_RUN = tools/notebook/run.sh --build $(BUILD) --cc "$(CC)" --cflags "$(NB_CFLAGS)" --libs "$(LIB) $(LDLIBS)"
notebooks: $(LIB)
	@$(NB_RUN) $(NOTEBOOK_ARGS) $(NOTEBOOKS)
notebooks-update: $(LIB)
	@$(NB_RUN) --update $(NOTEBOOK_ARGS) $(NOTEBOOKS)

# An exercise's checker builds the project's suites with the student's FILE (default: the exercise's starter.c;
# FILE=reference checks the reference); SUITE=name runs only that one of its suites, CASE=name only its test
# cases of that name. exercise-deps builds what every checker links, so that checkers can run side by side
# (tests/parts/exercises.sh) without two makes building the same file.
EXERCISE_OBJ = $(call obj,$(HARNESS_SRC) $(UNIT_SRC) $(STAT_SRC))
exercise-deps: $(LIB) $(EXERCISE_OBJ) $(MUTANT_LIB) $(BUILD)/tests/within
exercise: exercise-deps
	@lessons/exercises/check.sh --build $(BUILD) --objdir $(BUILD)/obj --harness "$(call obj,$(HARNESS_SRC))" \
	    --cc "$(CC)" --cflags "$(NB_CFLAGS)" \
	    --check-cflags "$(CHECK_CFLAGS)" --libs "$(MUTANT_LIB) $(LIB) $(CHECK_LIBS) $(LDLIBS)" \
	    $(if $(SUITE),--suite $(SUITE)) $(if $(CASE),--case $(CASE)) $(or $(EX),$(error give EX=N)) $(FILE)

PLOT_ARGS ?=
plots: $(BUILD)/specula
	@command -v gnuplot >/dev/null 2>&1 || { echo "make plots: gnuplot is not installed; \`make deps\` installs it (Debian package gnuplot-nox)" >&2; exit 1; }
	$(BUILD)/specula plot --out $(BUILD)/plots $(PLOT_ARGS)
