/* cmd_logits.c — `specula logits MODEL --tokens …`: run the reference
 * forward over a token sequence and print or dump the logits of every
 * position (and of the MTP module), so other implementations can be
 * compared with it (tools/peer/ does exactly that). The model is reached
 * through the decoding layer's interfaces: a prefill of the target, steps
 * of the MTP module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "model.h"
#include "reference_target.h"
#include "sampler.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula logits [MODEL] --tokens IDS [--out FILE] [--mtp-out FILE] [--mtp-chain-from P]\n"
            "Runs the reference forward one position at a time over IDS (e.g. 3,1,4,1,5).\n"
            "Without --out, prints per position the token, the argmax, its logit and a hash.\n"
            "  --out FILE           write the logits as float32 little-endian [T, V], row-major\n"
            "  --mtp-out FILE       also run the MTP module: row t (t = 0..T-2) is MTP(hidden_t, token_t+1)\n"
            "                       at position t, with the MTP KV cache accumulating over t: [T-1, V]\n"
            "  --mtp-chain-from P   rows t > P feed the MTP's own previous output hidden state instead of\n"
            "                       the trunk's, as a chained draft does\n"
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

static int write_rows(const char *path, const float *rows, size_t n_floats) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(rows, sizeof(float), n_floats, f) != n_floats || fclose(f) != 0) {
        fprintf(stderr, "specula logits: cannot write %s\n", path);
        if (f) fclose(f);
        return -1;
    }
    return 0;
}

/* Row t = MTP(hidden_t, token_t+1) at position t, the module's KV cache
 * accumulating; rows after chain_from (≥ 0) read the module's own previous
 * output hidden state, as a chained draft does. Written to path. */
static int mtp_rows(model *m, const int *ids, int T, const float *hidden, int chain_from, const char *path) {
    const int V = m->cfg.vocab_size, D = m->cfg.hidden_size;
    stepper mtp;
    sp_error err;
    if (reference_mtp_stepper_build(&mtp, m, &err)) {
        fprintf(stderr, "specula logits: %s\n", err.msg);
        return -1;
    }
    float *rows = sp_xcalloc((size_t)(T > 1 ? T - 1 : 1) * V, sizeof(float), "MTP logits");
    float *h = sp_xcalloc((size_t)D, sizeof(float), "MTP hidden");
    int rc = 0;
    for (int t = 0; t + 1 < T && !rc; t++) {
        /* a chained step reads the MTP's own previous output (already in h) */
        if (chain_from < 0 || t <= chain_from) memcpy(h, hidden + (size_t)t * D, (size_t)D * sizeof(float));
        if ((rc = mtp.step(&mtp, &ids[t + 1], h, 1, rows + (size_t)t * V, h, &err)))
            fprintf(stderr, "specula logits: %s\n", err.msg);
    }
    if (!rc) rc = write_rows(path, rows, (size_t)(T - 1) * V);
    mtp.release(&mtp);
    free(rows);
    free(h);
    return rc;
}

int cmd_logits(int argc, char **argv) {
    const char *dir = NULL, *tokens_text = NULL, *out = NULL, *mtp_out = NULL;
    int chain_from = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
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
        } else if (a[0] == '-' || dir) {
            fprintf(stderr, "specula logits: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!tokens_text) {
        fprintf(stderr, "specula logits: --tokens is required\n");
        usage(stderr);
        return 2;
    }
    if (!dir) dir = default_model_dir();
    model m;
    sp_error err;
    if (model_load(&m, dir, &err)) {
        fprintf(stderr, "specula logits: %s\n", err.msg);
        return 1;
    }
    int *ids, T, rc = 0;
    const int V = m.cfg.vocab_size, D = m.cfg.hidden_size;
    if (arg_tokens("--tokens", tokens_text, V, &ids, &T)) {
        model_free(&m);
        return 2;
    }
    if (mtp_out && !m.w.has_mtp) {
        fprintf(stderr, "specula logits: --mtp-out: %s has no MTP module (mtp.* tensors)\n", dir);
        free(ids);
        model_free(&m);
        return 1;
    }
    float *logits = sp_xcalloc((size_t)T * V, sizeof(float), "logits");
    float *hidden = sp_xcalloc((size_t)T * D, sizeof(float), "hidden states");
    decode_target target;
    reference_target_build(&target, &m);
    const int seq = target.seq_open(&target, &err);
    if (seq < 0 || target.prefill(&target, seq, ids, T, logits, hidden, &err)) {
        fprintf(stderr, "specula logits: %s\n", err.msg);
        rc = -1;
    }
    if (seq >= 0) target.seq_close(&target, seq);
    target.release(&target);

    if (rc) {
    } else if (out) {
        rc = write_rows(out, logits, (size_t)T * V);
    } else {
        for (int t = 0; t < T; t++) {
            const float *row = logits + (size_t)t * V;
            int best = sampler_argmax(row, V);
            printf("pos %3d  token %6d  argmax %6d  logit %+.6f  hash %016llx\n", t, ids[t], best, row[best],
                   hash_floats(row, V));
        }
    }
    if (!rc && mtp_out) rc = mtp_rows(&m, ids, T, hidden, chain_from, mtp_out);
    free(logits);
    free(hidden);
    free(ids);
    model_free(&m);
    return rc ? 1 : 0;
}
