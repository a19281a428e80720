/* cmd_logits.c — `specula logits MODEL --tokens …`: the logits of every position of a token sequence (and of the
 * MTP module), printed or dumped, so that other implementations can be compared with it (tools/peer/ does this
 * with the reference, the default backend here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "args.h"
#include "commands.h"
#include "method_cli.h"
#include "outputs.h"
#include "sampler.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula logits [MODEL] --tokens IDS [--out FILE] [--mtp-out FILE] [--mtp-chain-from P]\n"
            "Runs the forward over IDS (e.g. 3,1,4,1,5): the reference's one position at a time, or the\n"
            "engine's in passes of many positions.\n"
            "Without --out, prints per position the token, the argmax, its logit and a hash.\n"
            "  --out FILE           write the logits as float32 little-endian [T, V], row-major\n"
            "  --mtp-out FILE       also run the MTP module: row t (t = 0..T-2) is MTP(hidden_t, token_t+1)\n"
            "                       at position t, with the MTP KV cache accumulating over t: [T-1, V]\n"
            "  --mtp-chain-from P   rows t > P feed the MTP's own previous output hidden state instead of\n"
            "                       the trunk's, as a chained draft does\n"
            "  --backend NAME       reference (default) | cpu, with --threads N and --dtype bf16|f32\n"
            "MODEL defaults to %s.\n",
            default_model_dir());
}

/* FNV-1a over the bytes of n floats: a short fingerprint to compare runs at a glance. */
static unsigned long long hash_floats(const float *x, int n) {
    unsigned long long h = 1469598103934665603ULL;
    const unsigned char *p = (const unsigned char *)x;
    for (size_t i = 0; i < (size_t)n * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* The output files are opened before any work, so that a path that cannot
 * be written is refused as bad input with nothing computed; each is written
 * whole or not at all (a failed or killed run leaves an older file as it was). */
static int open_output(atomic_file *a, const char *path) {
    sp_error err;
    if (!path) return 0;
    if (atomic_open(a, path, &err)) {
        fprintf(stderr, "specula logits: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int write_rows(atomic_file *a, const float *rows, size_t n_floats) {
    sp_error err;
    fwrite(rows, sizeof(float), n_floats, a->f); /* a short write sets ferror, which the commit checks */
    if (atomic_commit(a, &err)) {
        fprintf(stderr, "specula logits: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Row t = MTP(hidden_t, token_t+1) at position t, the module's KV cache
 * accumulating; rows after chain_from (≥ 0) read the module's own previous
 * output hidden state, as a chained draft does. Written to out. */
static int mtp_rows(stepper *mtp, const int *ids, int T, const float *hidden, int chain_from, atomic_file *out) {
    const int V = mtp->V, D = mtp->D;
    sp_error err;
    float *rows = sp_xcalloc((size_t)(T > 1 ? T - 1 : 1) * V, sizeof(float), "MTP logits");
    float *h = sp_xcalloc((size_t)D, sizeof(float), "MTP hidden");
    int rc = 0;
    for (int t = 0; t + 1 < T && !rc; t++) {
        /* a chained step reads the MTP's own previous output (already in h) */
        if (chain_from < 0 || t <= chain_from) memcpy(h, hidden + (size_t)t * D, (size_t)D * sizeof(float));
        if ((rc = mtp->step(mtp, &ids[t + 1], h, 1, rows + (size_t)t * V, h, &err)))
            fprintf(stderr, "specula logits: %s\n", err.msg);
    }
    if (!rc) rc = write_rows(out, rows, (size_t)(T - 1) * V);
    free(rows);
    free(h);
    return rc;
}

/* The logits and hidden states of ids[T] in one prefill, written to out or printed. */
static int trunk_rows(decode_target *t, const int *ids, int T, float *logits, float *hidden, atomic_file *out) {
    sp_error err;
    const int V = t->cfg->vocab_size;
    const int seq = t->seq_open(t, &err);
    const int rc = seq < 0 || t->prefill(t, seq, ids, T, logits, hidden, &err);
    if (seq >= 0) t->seq_close(t, seq);
    if (rc) {
        fprintf(stderr, "specula logits: %s\n", err.msg);
        return -1;
    }
    if (out) return write_rows(out, logits, (size_t)T * V);
    for (int i = 0; i < T; i++) {
        const float *row = logits + (size_t)i * V;
        int best = sampler_argmax(row, V);
        printf("pos %3d  token %6d  argmax %6d  logit %+.6f  hash %016llx\n", i, ids[i], best, row[best],
               hash_floats(row, V));
    }
    return 0;
}

int cmd_logits(int argc, char **argv) {
    const char *tokens_text = NULL, *out = NULL, *mtp_out = NULL;
    model_flags mf = model_flags_defaults(BACKEND_REFERENCE);
    int chain_from = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--tokens")) {
            if (!(tokens_text = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--out")) {
            if (!(out = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--mtp-out")) {
            if (!(mtp_out = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--mtp-chain-from")) {
            const char *v = arg_value(argc, argv, &i);
            if (!v || arg_int(a, v, 0, 1 << 30, &chain_from)) return 2;
        } else if ((rc = backend_flags_read(&mf, argc, argv, &i)) != 0) {
            if (rc < 0) return 2;
        } else if (a[0] == '-' || mf.model_dir) {
            fprintf(stderr, "specula logits: unexpected argument '%s' (`specula logits --help` for the options)\n", a);
            return 2;
        } else {
            mf.model_dir = a;
        }
    }
    if (!tokens_text) {
        fprintf(stderr, "specula logits: --tokens is required (`specula logits --help` for the options)\n");
        return 2;
    }
    if (chain_from >= 0 && !mtp_out) {
        fprintf(stderr, "specula logits: --mtp-chain-from only applies with --mtp-out\n");
        return 2;
    }
    if (model_flags_backend_check(&mf, "logits")) return 2;
    const char *dir = mf.model_dir ? mf.model_dir : default_model_dir();
    loaded_models lm;
    if (models_load(&lm, &mf, COMPANION_NO, COMPANION_NO, "logits")) return EXIT_BAD_INPUT;
    const model_config *c = models_config(&lm);
    int *ids, T;
    if (arg_tokens("--tokens", tokens_text, c->vocab_size, &ids, &T)) {
        models_release(&lm);
        return EXIT_BAD_INPUT;
    }
    if (context_check(c, "--tokens:", T, NULL, 0, "logits")) {
        free(ids);
        models_release(&lm);
        return EXIT_BAD_INPUT;
    }
    if (mtp_out && !lm.parts.mtp) {
        fprintf(stderr, "specula logits: --mtp-out: %s has no MTP module (mtp.* tensors)\n", dir);
        free(ids);
        models_release(&lm);
        return EXIT_BAD_INPUT;
    }
    atomic_file out_file = {0}, mtp_file = {0};
    const char *outs[] = {out, mtp_out};
    if (outputs_check("logits", outs, 2, dir, NULL, 0) || open_output(&out_file, out) ||
        open_output(&mtp_file, mtp_out)) {
        atomic_abort(&out_file);
        free(ids);
        models_release(&lm);
        return EXIT_BAD_INPUT;
    }
    float *logits = sp_xcalloc((size_t)T * c->vocab_size, sizeof(float), "logits");
    float *hidden = sp_xcalloc((size_t)T * c->hidden_size, sizeof(float), "hidden states");
    int rc = trunk_rows(lm.parts.target, ids, T, logits, hidden, out ? &out_file : NULL);
    if (!rc && mtp_out) rc = mtp_rows(lm.parts.mtp, ids, T, hidden, chain_from, &mtp_file);
    atomic_abort(&out_file); /* after a commit these are released already; after a failure, the temporaries go */
    atomic_abort(&mtp_file);
    free(logits);
    free(hidden);
    free(ids);
    models_release(&lm);
    return rc ? EXIT_RUN_FAILED : EXIT_DONE;
}
