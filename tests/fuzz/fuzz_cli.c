/* fuzz_cli.c — the command line of `specula generate` (cli/generate_args.c, method_cli.c, method_flags.c,
 * parse.c), without running a model. Every answer must be a run, --help or exit status 2 with a message; none
 * may crash. */
#include "fuzz.h"
#include "generate_args.h"
#include "parse.h"

enum { MAX_ARGS = 64 };

/* The input, split at newlines, is the argv; the same words are parsed again as a catalogue entry
 * (method_spec_parse), and --tokens as a list of ids. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size), *argv[MAX_ARGS + 1], *save = NULL;
    int argc = 0;
    argv[argc++] = "generate";
    for (char *w = strtok_r(text, "\n", &save); w && argc < MAX_ARGS; w = strtok_r(NULL, "\n", &save)) argv[argc++] = w;
    argv[argc] = NULL;
    generate_args a;
    const int rc = generate_parse(argc, argv, &a);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2);
    if (rc == 0) {
        char label[256];
        method_spec_label(&a.spec, label, sizeof label);
        int *ids = NULL, n = 0;
        sp_error err;
        if (a.tokens_text && parse_tokens("--tokens", a.tokens_text, 512, &ids, &n, &err) == 0) {
            FUZZ_CHECK(n >= 1);
            for (int i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < 512);
            free(ids);
        }
    }
    /* the catalogue's form: the same words joined by spaces */
    char line[1024] = "";
    for (int i = 1; i < argc && strlen(line) + strlen(argv[i]) + 2 < sizeof line; i++) {
        strcat(line, i > 1 ? " " : "");
        strcat(line, argv[i]);
    }
    method_spec s = method_spec_defaults();
    sp_error err = {{0}};
    if (method_spec_parse(&s, line, &err)) FUZZ_CHECK(err.msg[0] != '\0');
    free(text);
    return 0;
}
