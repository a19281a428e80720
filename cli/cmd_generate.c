/* cmd_generate.c — `specula generate`: one generation with any method, on
 * the embedded models by default, with the run's accounting as text or
 * JSON. Text in and out through the tokenizer.json beside the model, or
 * token ids with --tokens / --ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "beam.h"
#include "commands.h"
#include "generate_args.h"
#include "method_cli.h"
#include "tokenizer.h"

#include <utf8proc.h>

/* Output goes through one printer so streamed and final output agree. */
typedef struct {
    const tokenizer *tok; /* NULL: print ids */
} printer;

static void print_tokens(const printer *pr, const int *tokens, int n, const char *sep) {
    for (int i = 0; i < n; i++) {
        size_t len;
        const unsigned char *bytes = pr->tok ? tokenizer_token_bytes(pr->tok, tokens[i], &len) : NULL;
        if (bytes)
            fwrite(bytes, 1, len, stdout);
        else
            printf("%s%d", i ? " " : "", tokens[i]);
    }
    fputs(sep, stdout);
}

static void print_burst(const int *tokens, int n, void *user) {
    print_tokens(user, tokens, n, ((const printer *)user)->tok ? "" : " | ");
    fflush(stdout);
}

/* A JSON string of the decoded bytes; a byte that is not part of valid
 * UTF-8 (a token can end inside a character) becomes U+FFFD, as Python's
 * errors="replace" does, so the output is always valid JSON. */
static void print_json_string(const unsigned char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t len = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (len < 1) {
            fputs("\\ufffd", stdout);
            i++;
        } else {
            if (cp == '"' || cp == '\\')
                printf("\\%c", (char)cp);
            else if (cp < 0x20)
                printf("\\u%04x", (unsigned)cp);
            else
                fwrite(s + i, 1, (size_t)len, stdout);
            i += (size_t)len;
        }
    }
    putchar('"');
}

/* The prompt's ids: --tokens, or --prompt (or the default text) through the tokenizer. */
static int prompt_ids(const generate_args *a, const tokenizer *tok, int V, const char *dir, int **ids, int *n) {
    if (a->tokens_text) return arg_tokens("--tokens", a->tokens_text, V, ids, n) ? 2 : 0;
    if (!tok) {
        fprintf(stderr, "specula generate: %s has no tokenizer.json: give the prompt as --tokens IDS\n", dir);
        return 2;
    }
    const char *text = a->prompt_text ? a->prompt_text : DEFAULT_PROMPT;
    sp_error err;
    if (tokenizer_encode(tok, text, strlen(text), ids, n, &err)) {
        fprintf(stderr, "specula generate: --prompt: %s\n", err.msg);
        return 2;
    }
    if (*n == 0) {
        fprintf(stderr, "specula generate: the prompt encodes to no tokens\n");
        free(*ids);
        return 2;
    }
    for (int i = 0; i < *n; i++)
        if ((*ids)[i] >= V) {
            fprintf(stderr, "specula generate: token %d of the prompt is outside the model's vocabulary (%d)\n",
                    (*ids)[i], V);
            free(*ids);
            return 2;
        }
    return 0;
}

/* beam_print_json's hook: the decoded text of each hypothesis. */
static void beam_text_field(FILE *f, const beam_hypothesis *h, void *user) {
    char *text;
    size_t len;
    sp_error err;
    if (tokenizer_decode(user, h->tokens, h->n, &text, &len, &err)) return;
    fflush(f);
    printf(", \"text\": ");
    print_json_string((const unsigned char *)text, len);
    free(text);
}

/* --method beam: the n-best list, as text through the tokenizer when there
 * is one, then the ids, the accounting and the beam figures. */
static int run_beam(const generate_args *a, decode_target *t, const printer *pr, const int *prompt, int n_prompt) {
    beam_output out;
    sp_error err;
    if (beam_run(t, prompt, n_prompt, &a->spec.beam, &out, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return EXIT_RUN_FAILED;
    }
    if (a->json) {
        beam_print_json(&out, &a->spec.beam, prompt, n_prompt, stdout, pr->tok ? beam_text_field : NULL,
                        (void *)pr->tok);
    } else {
        if (pr->tok)
            for (int i = 0; i < out.n_best; i++) {
                printf("#%d ", i + 1);
                print_tokens(pr, prompt, n_prompt, "");
                print_tokens(pr, out.best[i].tokens, out.best[i].n, "\n");
            }
        beam_print(&out, &a->spec.beam, stdout);
    }
    beam_output_free(&out);
    return 0;
}

static void print_json(const decode_output *out, const int *prompt, int n_prompt, const tokenizer *tok) {
    printf("{\"prompt_tokens\": [");
    for (int i = 0; i < n_prompt; i++) printf("%s%d", i ? ", " : "", prompt[i]);
    printf("], \"tokens\": [");
    for (int i = 0; i < out->n; i++) printf("%s%d", i ? ", " : "", out->tokens[i]);
    printf("]");
    char *text;
    size_t len;
    sp_error err;
    if (tok && tokenizer_decode(tok, out->tokens, out->n, &text, &len, &err) == 0) {
        printf(", \"text\": ");
        print_json_string((const unsigned char *)text, len);
        free(text);
    }
    printf(", \"accounting\": ");
    accounting_print_json(&out->acc, stdout);
    printf("}\n");
}

/* Every method but beam: built by the factory, run by the round loop. */
static int run_method(generate_args *a, const method_parts *parts, const printer *pr, const tokenizer *tok,
                      const int *prompt, int n_prompt) {
    method_built m;
    sp_error err;
    if (method_build(&m, &a->spec, parts, &err)) { /* a tree file, heads, a draft or an MTP module that will not do */
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    if (a->stream) {
        m.options.on_commit = print_burst;
        m.options.user = (void *)pr;
        print_tokens(pr, prompt, n_prompt, pr->tok ? "" : " || ");
    }
    decode_output out;
    int status = 0;
    if (decode_batch_one(parts->target, m.proposer, prompt, n_prompt, &m.options, &out, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        status = EXIT_RUN_FAILED;
    } else {
        if (a->stream) printf("\n");
        if (a->json) {
            print_json(&out, prompt, n_prompt, tok);
        } else {
            if (!a->stream) {
                print_tokens(pr, prompt, n_prompt, pr->tok ? "" : " || ");
                print_tokens(pr, out.tokens, out.n, "");
            }
            printf("\n---\n");
            accounting_print(&out.acc, stdout);
        }
        decode_output_free(&out);
    }
    method_release(&m);
    return status;
}

/* The tokenizer beside the model, when there is one and it is needed. 1
 * loaded, 0 none, -1 a broken one (printed). */
static int load_tokenizer(const generate_args *a, const char *dir, tokenizer *tok) {
    if (a->print_ids && a->tokens_text) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (access(path, R_OK) != 0) return 0;
    sp_error err;
    if (tokenizer_load(tok, path, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return -1;
    }
    return 1;
}

int cmd_generate(int argc, char **argv) {
    generate_args a;
    int rc = generate_parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.models.model_dir ? a.models.model_dir : default_model_dir();
    loaded_models lm;
    if (models_load(&lm, &a.models, method_has(&a.spec, METHOD_DRAFT_MODEL) ? COMPANION_NEEDED : COMPANION_NO,
                    method_has(&a.spec, METHOD_HEADS) ? COMPANION_NEEDED : COMPANION_NO, "generate"))
        return EXIT_BAD_INPUT;
    tokenizer tok;
    const int have_tok = load_tokenizer(&a, dir, &tok);
    if (have_tok < 0) {
        models_release(&lm);
        return EXIT_BAD_INPUT;
    }
    printer pr = {have_tok && !a.print_ids ? &tok : NULL};
    const model_config *c = models_config(&lm);
    int *prompt, n_prompt;
    int status = prompt_ids(&a, have_tok ? &tok : NULL, c->vocab_size, dir, &prompt, &n_prompt);
    if (status == 0) {
        status = context_check(c, NULL, n_prompt, "--max-tokens", a.spec.max_tokens, "generate");
        if (status == 0)
            status = method_has(&a.spec, METHOD_BEAM_SEARCH)
                         ? run_beam(&a, lm.parts.target, &pr, prompt, n_prompt)
                         : run_method(&a, &lm.parts, &pr, have_tok ? &tok : NULL, prompt, n_prompt);
        free(prompt);
    }
    if (have_tok) tokenizer_free(&tok);
    models_release(&lm);
    return status;
}
