/* generate_args.c — the flags of `specula generate` (see generate_args.h):
 * its own, the method's and the models', and the checks of their mix. */
#include "generate_args.h"

#include <stdio.h>
#include <string.h>

#include "args.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula generate [options]\n"
            "Generates tokens with one decoding method and reports the run's accounting.\n"
            "  --prompt TEXT        prompt text, encoded with MODEL/tokenizer.json (default \"%s\")\n"
            "  --tokens IDS         prompt as token ids instead, e.g. 1,5,9\n"
            "  --ids                print token ids instead of text\n"
            "  --stream             print each burst of committed tokens as it is committed\n"
            "  --json               print the tokens and the accounting as one JSON object\n"
            "The model (on the fastest backend present — the CUDA engine where a GPU is, else the CPU\n"
            "engine — unless --backend says otherwise):\n",
            DEFAULT_PROMPT_ESCAPED);
    model_flags_usage(f);
    fprintf(f, "The method (the same flags as bench, plot and the verify catalogue):\n");
    method_spec_usage(f, 0, 0, NULL);
}

/* A generate-only flag: 1 consumed, 0 not one, -1 a missing value. */
static int own_flag(generate_args *a, int argc, char **argv, int *i) {
    const char *f = argv[*i];
    if (!strcmp(f, "--ids")) return a->print_ids = 1;
    if (!strcmp(f, "--json")) return a->json = 1;
    if (!strcmp(f, "--stream")) return a->stream = 1;
    const char **slot = !strcmp(f, "--tokens") ? &a->tokens_text : !strcmp(f, "--prompt") ? &a->prompt_text : NULL;
    if (!slot) return 0;
    return (*slot = arg_value(argc, argv, i)) ? 1 : -1;
}

int generate_parse(int argc, char **argv, generate_args *a) {
    memset(a, 0, sizeof *a);
    a->spec = method_spec_defaults();
    a->models = model_flags_defaults(backend_cuda_on_device() ? BACKEND_CUDA : BACKEND_CPU); /* the fastest present */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 1;
        }
        int rc = own_flag(a, argc, argv, &i);
        if (!rc) rc = method_cli_flag(&a->spec, &a->models, argc, argv, &i, "generate");
        if (rc < 0) return 2;
        if (!rc) {
            fprintf(stderr, "specula generate: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (a->stream && method_has(&a->spec, METHOD_BEAM_SEARCH)) {
        fprintf(stderr, "specula generate: --stream does not apply to --method beam: its result is known only when "
                        "the search stops\n");
        return 2;
    }
    sp_error err;
    if (method_spec_finish(&a->spec, 1, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return 2;
    }
    if (model_flags_check(&a->models, &a->spec, "generate")) return 2;
    if (a->tokens_text && a->prompt_text) {
        fprintf(stderr, "specula generate: give the prompt as --prompt TEXT or as --tokens IDS, not both\n");
        return 2;
    }
    return 0;
}
