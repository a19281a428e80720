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
#include "decode.h"
#include "medusa_cli.h"
#include "mtp.h"
#include "speculative.h"
#include "tokenizer.h"

#include <utf8proc.h>

#define DEFAULT_PROMPT "ROMEO:\n"
#define DEFAULT_PROMPT_ESCAPED "ROMEO:\\n"

typedef enum { M_GREEDY, M_SAMPLE, M_BEAM, M_SPEC, M_MEDUSA, M_MTP, M_COUNT } method_id;
static const char *const method_names[M_COUNT] = {"greedy", "sample", "beam", "spec", "medusa", "mtp"};

typedef struct {
    const char *model_dir, *draft_dir, *tokens_text, *prompt_text;
    method_id method;
    int k, json, stream, mtp_sample, temperature_given, print_ids, k_given;
    decode_options opt;
    beam_options beam;
    const char *beam_flag;    /* a beam-only flag that was given, for the error when the method is not beam */
    const char *nonbeam_flag; /* a flag that beam search has no use for, for the error when it is */
    medusa_cli medusa;
} generate_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula generate [options]\n"
            "Generates tokens with one decoding method and reports the run's accounting.\n"
            "  --model DIR          target model (default %s)\n"
            "  --prompt TEXT        prompt text, encoded with MODEL/tokenizer.json (default \"%s\")\n"
            "  --tokens IDS         prompt as token ids instead, e.g. 1,5,9\n"
            "  --ids                print token ids instead of text\n"
            "  --method NAME        greedy | sample | beam | spec | medusa | mtp   (default sample)\n"
            "  --draft DIR          draft model for --method spec (default %s-draft)\n"
            "  --k N                tokens proposed per round (spec, mtp; default 4)\n"
            "  --mtp-sample         MTP drafts sampled from its distribution (default: argmax drafts)\n"
            "  --beams N            beam width (beam; default 4)\n"
            "  --length-penalty X   beam: score = sum log p / generated_length^X (default 1)\n"
            "  --early-stopping M   beam: true | heuristic | never (default heuristic, Hugging Face's False)\n"
            "  --num-return N       beam: hypotheses returned, best first, N <= beams (default 1)\n"
            "  --temperature T      default 1 (greedy: 0); the same processing applies to p and q;\n"
            "                       beam search scores raw log-probabilities and takes none of these\n"
            "  --top-k K, --top-p P, --min-p P   cuts of the processed distribution\n"
            "  --seed N             seed of every random draw (default 1)\n"
            "  --max-tokens N       tokens to generate (default 32)\n"
            "  --no-eos             keep going past the end-of-sequence token\n"
            "  --stream             print each burst of committed tokens as it is committed\n"
            "  --json               print the tokens and the accounting as one JSON object\n",
            default_model_dir(), DEFAULT_PROMPT_ESCAPED, default_model_dir());
    medusa_cli_usage(f);
}

/* The combinations beam search refuses (parse has read every flag). */
static int beam_check(generate_args *a) {
    if (a->nonbeam_flag) {
        const char *f = a->nonbeam_flag,
                   *why = !strcmp(f, "--seed") ? "it draws nothing at random"
                          : !strcmp(f, "--k")  ? "it proposes no draft tokens"
                          : !strcmp(f, "--stream")
                              ? "its result is known only when the search stops"
                              : "it scores raw log-probabilities (temperature and cuts apply only to sampling)";
        fprintf(stderr, "specula generate: %s does not apply to --method beam: %s\n", f, why);
        return -1;
    }
    if (a->beam.num_return > a->beam.num_beams) {
        fprintf(stderr, "specula generate: --num-return %d exceeds --beams %d\n", a->beam.num_return,
                a->beam.num_beams);
        return -1;
    }
    a->beam.max_new_tokens = a->opt.max_tokens;
    a->beam.stop_at_eos = a->opt.stop_at_eos;
    return 0;
}

static int parse(int argc, char **argv, generate_args *a) {
    memset(a, 0, sizeof *a);
    a->opt = decode_defaults();
    a->opt.max_tokens = 32;
    a->method = M_SAMPLE;
    a->k = 4;
    a->beam = beam_defaults();
    medusa_cli_init(&a->medusa);
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
#define VALUE()                                                                                                        \
    if (!(v = arg_value(argc, argv, &i))) return 2
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--model")) {
            VALUE();
            a->model_dir = v;
        } else if (!strcmp(f, "--draft")) {
            VALUE();
            a->draft_dir = v;
        } else if (!strcmp(f, "--tokens")) {
            VALUE();
            a->tokens_text = v;
        } else if (!strcmp(f, "--prompt")) {
            VALUE();
            a->prompt_text = v;
        } else if (!strcmp(f, "--ids")) {
            a->print_ids = 1;
        } else if (!strcmp(f, "--method")) {
            VALUE();
            int found = -1;
            for (int m = 0; m < M_COUNT; m++)
                if (!strcmp(v, method_names[m])) found = m;
            if (found < 0) {
                fprintf(stderr, "specula generate: unknown method '%s'\n", v);
                return 2;
            }
            a->method = (method_id)found;
        } else if (!strcmp(f, "--k")) {
            VALUE();
            if (arg_int(f, v, 1, 32, &a->k)) return 2;
            a->nonbeam_flag = f;
            a->k_given = 1;
        } else if (!strcmp(f, "--temperature")) {
            VALUE();
            if (arg_float(f, v, 0, 100, &a->opt.sampling.temperature)) return 2;
            a->temperature_given = 1;
            a->nonbeam_flag = f;
        } else if (!strcmp(f, "--top-k")) {
            VALUE();
            if (arg_int(f, v, 0, 1 << 30, &a->opt.sampling.top_k)) return 2;
            a->nonbeam_flag = f;
        } else if (!strcmp(f, "--top-p")) {
            VALUE();
            if (arg_float(f, v, 1e-6, 1, &a->opt.sampling.top_p)) return 2;
            a->nonbeam_flag = f;
        } else if (!strcmp(f, "--min-p")) {
            VALUE();
            if (arg_float(f, v, 0, 0.999999, &a->opt.sampling.min_p)) return 2;
            a->nonbeam_flag = f;
        } else if (!strcmp(f, "--seed")) {
            VALUE();
            if (arg_u64(f, v, &a->opt.seed)) return 2;
            a->nonbeam_flag = f;
        } else if (!strcmp(f, "--max-tokens")) {
            VALUE();
            if (arg_int(f, v, 1, 1 << 20, &a->opt.max_tokens)) return 2;
        } else if (!strcmp(f, "--no-eos")) {
            a->opt.stop_at_eos = 0;
        } else if (!strcmp(f, "--mtp-sample")) {
            a->mtp_sample = 1;
        } else if (!strcmp(f, "--stream")) {
            a->stream = 1;
            a->nonbeam_flag = f;
        } else if (!strcmp(f, "--beams")) {
            VALUE();
            if (arg_int(f, v, 1, 4096, &a->beam.num_beams)) return 2;
            a->beam_flag = f;
        } else if (!strcmp(f, "--length-penalty")) {
            VALUE();
            if (arg_float(f, v, -100, 100, &a->beam.length_penalty)) return 2;
            a->beam_flag = f;
        } else if (!strcmp(f, "--early-stopping")) {
            VALUE();
            if (beam_early_stopping_parse(v, &a->beam.early_stopping)) {
                fprintf(stderr,
                        "specula: --early-stopping expects true, heuristic or never (Hugging Face's False is "
                        "heuristic), got '%s'\n",
                        v);
                return 2;
            }
            a->beam_flag = f;
        } else if (!strcmp(f, "--num-return")) {
            VALUE();
            if (arg_int(f, v, 1, 4096, &a->beam.num_return)) return 2;
            a->beam_flag = f;
        } else if (!strcmp(f, "--json")) {
            a->json = 1;
        } else if (medusa_cli_flag(&a->medusa, argc, argv, &i, &rc)) {
            if (rc) return rc;
        } else {
            fprintf(stderr, "specula generate: unknown option '%s'\n", f);
            return 2;
        }
#undef VALUE
    }
    if (a->method == M_GREEDY) {
        if (a->temperature_given && a->opt.sampling.temperature != 0) {
            fprintf(stderr, "specula generate: --method greedy decodes at temperature 0; drop --temperature "
                            "or use --method sample\n");
            return 2;
        }
        a->opt.sampling.temperature = 0;
    }
    if (a->draft_dir && a->method != M_SPEC) {
        fprintf(stderr, "specula generate: --draft only applies to --method spec\n");
        return 2;
    }
    if (a->k_given && (a->method == M_GREEDY || a->method == M_SAMPLE || a->method == M_MEDUSA)) {
        fprintf(stderr, "specula generate: --k applies to --method spec and mtp%s\n",
                a->method == M_MEDUSA ? " (Medusa's depth is the tree's: see --tree)" : "");
        return 2;
    }
    if (a->mtp_sample && a->method != M_MTP) {
        fprintf(stderr, "specula generate: --mtp-sample only applies to --method mtp\n");
        return 2;
    }
    if (a->method == M_BEAM && beam_check(a)) return 2;
    if (a->beam_flag && a->method != M_BEAM) {
        fprintf(stderr, "specula generate: %s only applies to --method beam\n", a->beam_flag);
        return 2;
    }
    if ((rc = medusa_cli_finish(&a->medusa, a->method == M_MEDUSA, &a->opt))) return rc;
    if (a->tokens_text && a->prompt_text) {
        fprintf(stderr, "specula generate: give the prompt as --prompt TEXT or as --tokens IDS, not both\n");
        return 2;
    }
    return 0;
}

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
static int run_beam(const generate_args *a, model *target, const printer *pr, const int *prompt, int n_prompt) {
    beam_output out;
    sp_error err;
    if (beam_run(target, prompt, n_prompt, &a->beam, &out, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return 1;
    }
    if (a->json) {
        beam_print_json(&out, &a->beam, prompt, n_prompt, stdout, pr->tok ? beam_text_field : NULL, (void *)pr->tok);
    } else {
        if (pr->tok)
            for (int i = 0; i < out.n_best; i++) {
                printf("#%d ", i + 1);
                print_tokens(pr, prompt, n_prompt, "");
                print_tokens(pr, out.best[i].tokens, out.best[i].n, "\n");
            }
        beam_print(&out, &a->beam, stdout);
    }
    beam_output_free(&out);
    return 0;
}

int cmd_generate(int argc, char **argv) {
    generate_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.model_dir ? a.model_dir : default_model_dir();
    sp_error err;
    model target, draft;
    if (model_load(&target, dir, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return 1;
    }
    tokenizer tok;
    int have_tok = 0;
    if (!a.print_ids || !a.tokens_text) {
        char tok_path[4200];
        snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", dir);
        if (access(tok_path, R_OK) == 0) {
            if (tokenizer_load(&tok, tok_path, &err)) {
                fprintf(stderr, "specula generate: %s\n", err.msg);
                model_free(&target);
                return 1;
            }
            have_tok = 1;
        }
    }
    printer pr = {have_tok && !a.print_ids ? &tok : NULL};
    int *prompt, n_prompt;
    if ((rc = prompt_ids(&a, have_tok ? &tok : NULL, target.cfg.vocab_size, dir, &prompt, &n_prompt))) {
        if (have_tok) tokenizer_free(&tok);
        model_free(&target);
        return rc;
    }
    if (a.method == M_BEAM) {
        int status = run_beam(&a, &target, &pr, prompt, n_prompt);
        free(prompt);
        if (have_tok) tokenizer_free(&tok);
        model_free(&target);
        return status;
    }
    proposer prop, *pp = NULL;
    int have_draft = 0, status = 0;
    char draft_default[4200];
    if (a.method == M_SPEC) {
        snprintf(draft_default, sizeof draft_default, "%s-draft", dir);
        const char *ddir = a.draft_dir ? a.draft_dir : draft_default;
        if (model_load(&draft, ddir, &err) ||
            (have_draft = 1, spec_proposer_build(&prop, &draft, &target, a.k, &a.opt.sampling, a.opt.seed, &err))) {
            fprintf(stderr, "specula generate: %s\n", err.msg);
            status = 1;
            goto done;
        }
        pp = &prop;
    } else if (a.method == M_MEDUSA) {
        if (medusa_cli_build(&a.medusa, &prop, &target, dir, &a.opt, &a.k)) {
            status = 1;
            goto done;
        }
        pp = &prop;
    } else if (a.method == M_MTP) {
        if (mtp_proposer_build(&prop, &target, a.k, a.mtp_sample, &a.opt.sampling, a.opt.seed, &err)) {
            fprintf(stderr, "specula generate: %s\n", err.msg);
            status = 1;
            goto done;
        }
        pp = &prop;
    }
    if (a.stream) {
        a.opt.on_commit = print_burst;
        a.opt.user = &pr;
        print_tokens(&pr, prompt, n_prompt, pr.tok ? "" : " || ");
    }
    decode_output out;
    if (decode_run(&target, pp, method_names[a.method], pp ? a.k : 0, prompt, n_prompt, &a.opt, &out, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        status = 1;
    } else {
        if (a.stream) printf("\n");
        if (a.json) {
            printf("{\"prompt_tokens\": [");
            for (int i = 0; i < n_prompt; i++) printf("%s%d", i ? ", " : "", prompt[i]);
            printf("], \"tokens\": [");
            for (int i = 0; i < out.n; i++) printf("%s%d", i ? ", " : "", out.tokens[i]);
            printf("]");
            char *text;
            size_t len;
            if (have_tok && tokenizer_decode(&tok, out.tokens, out.n, &text, &len, &err) == 0) {
                printf(", \"text\": ");
                print_json_string((const unsigned char *)text, len);
                free(text);
            }
            printf(", \"accounting\": ");
            accounting_print_json(&out.acc, stdout);
            printf("}\n");
        } else {
            if (!a.stream) {
                print_tokens(&pr, prompt, n_prompt, pr.tok ? "" : " || ");
                print_tokens(&pr, out.tokens, out.n, "");
            }
            printf("\n---\n");
            accounting_print(&out.acc, stdout);
        }
        decode_output_free(&out);
    }
    if (pp) pp->release(pp);
done:
    medusa_cli_release(&a.medusa);
    if (have_draft) model_free(&draft);
    free(prompt);
    if (have_tok) tokenizer_free(&tok);
    model_free(&target);
    return status;
}
