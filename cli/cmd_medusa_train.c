/* cmd_medusa_train.c — `specula medusa-train`: trains Medusa heads by
 * self-distillation against a frozen target (reference/medusa_train.h),
 * writes them with the base checkpoint's sha256, reloads the file through
 * the same loader `generate` uses, and prints every head's held-out
 * agreement with the target's greedy continuation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "medusa_train.h"
#include "philox.h"
#include "tokenizer.h"

typedef struct {
    const char *model_dir, *corpus_text, *corpus_ids, *out, *tree_out, *manifest;
    int random_prompts, n_heads, n_layers, shared, eval_sequences, log_every;
    dtype_t dtype;
    medusa_data_opts data;
    medusa_train_opts train;
} train_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula medusa-train [options] --out FILE\n"
            "Trains Medusa heads on the target's own continuations of corpus prompts (self-distillation:\n"
            "the target is frozen, only the heads learn), writes them with the sha256 of the target's\n"
            "checkpoint, and reports every head's held-out top-1 agreement with the target's greedy tokens.\n"
            "  --model DIR          target (default %s)\n"
            "  --corpus FILE        corpus text, encoded with MODEL/tokenizer.json. Held-out prompts come from\n"
            "                       its last 10%% (cut at the first blank line after 90%% of the bytes, each\n"
            "                       part encoded on its own: the validation split of tools/train/corpus.py),\n"
            "                       training prompts from the rest\n"
            "  --corpus-ids FILE    the corpus as token ids instead (spaces, commas or newlines); the last\n"
            "                       10%% of the ids are held out\n"
            "  --random-prompts     prompts of uniformly random tokens instead (random test models)\n"
            "  --out FILE           the heads file to write (e.g. MODEL-medusa/medusa_heads.safetensors)\n"
            "  --heads N            heads (default 4); head i guesses the token i+2 after its hidden state\n"
            "  --layers N           ResBlocks per head (default 1)\n"
            "  --shared-lm-head     project through the target's lm_head (frozen) instead of own\n"
            "                       projections initialised from it (default: own)\n"
            "  --sequences N        training prompts (default 400)\n"
            "  --eval-sequences N   held-out prompts (default 50)\n"
            "  --prompt-len N       tokens per prompt (default 32)\n"
            "  --gen-len N          tokens the target continues each prompt with (default 96)\n"
            "  --temperature T      continuations sampled at T (default 0: greedy); held-out ones are greedy\n"
            "  --steps N            Adam steps (default 2000)\n"
            "  --batch N            examples per step (default 32)\n"
            "  --lr F               peak step size (default 1e-3; warm-up, then cosine to a tenth)\n"
            "  --warmup N           warm-up steps (default 100)\n"
            "  --decay F            loss weight of head i is F^i (default 0.8)\n"
            "  --seed N             prompts, sampled tokens and example order (default 1)\n"
            "  --dtype f32|bf16     storage of the heads (default bf16; the figures are measured after rounding)\n"
            "  --tree-out FILE      write the tree suggested by the held-out ranks (63 nodes) as JSON\n"
            "  --manifest FILE      write what was trained, from what, and how well (sha256 of the heads file,\n"
            "                       base and corpus; the command; per-head figures), one fact per line\n"
            "  --log-every N        progress every N steps (default 100; 0 = quiet)\n",
            default_model_dir());
}

static int parse(int argc, char **argv, train_args *a) {
    memset(a, 0, sizeof *a);
    a->n_heads = 4, a->n_layers = 1, a->eval_sequences = 50, a->log_every = 100;
    a->dtype = DTYPE_BF16;
    a->data = (medusa_data_opts){.n_sequences = 400, .prompt_len = 32, .gen_len = 96, .temperature = 0, .seed = 1};
    a->train = medusa_train_defaults();
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
#define VALUE()                                                                                                        \
    if (!(v = arg_value(argc, argv, &i))) return 2
#define INT(field, lo, hi)                                                                                             \
    do {                                                                                                               \
        VALUE();                                                                                                       \
        if (arg_int(f, v, lo, hi, &(field))) return 2;                                                                 \
    } while (0)
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--model")) {
            VALUE();
            a->model_dir = v;
        } else if (!strcmp(f, "--corpus")) {
            VALUE();
            a->corpus_text = v;
        } else if (!strcmp(f, "--corpus-ids")) {
            VALUE();
            a->corpus_ids = v;
        } else if (!strcmp(f, "--random-prompts")) {
            a->random_prompts = 1;
        } else if (!strcmp(f, "--out")) {
            VALUE();
            a->out = v;
        } else if (!strcmp(f, "--tree-out")) {
            VALUE();
            a->tree_out = v;
        } else if (!strcmp(f, "--manifest")) {
            VALUE();
            a->manifest = v;
        } else if (!strcmp(f, "--heads")) {
            INT(a->n_heads, 1, MEDUSA_MAX_HEADS);
        } else if (!strcmp(f, "--layers")) {
            INT(a->n_layers, 1, MEDUSA_MAX_LAYERS);
        } else if (!strcmp(f, "--shared-lm-head")) {
            a->shared = 1;
        } else if (!strcmp(f, "--sequences")) {
            INT(a->data.n_sequences, 1, 1 << 24);
        } else if (!strcmp(f, "--eval-sequences")) {
            INT(a->eval_sequences, 1, 1 << 24);
        } else if (!strcmp(f, "--prompt-len")) {
            INT(a->data.prompt_len, 1, 1 << 16);
        } else if (!strcmp(f, "--gen-len")) {
            INT(a->data.gen_len, 2, 1 << 16);
        } else if (!strcmp(f, "--temperature")) {
            VALUE();
            if (arg_float(f, v, 0, 100, &a->data.temperature)) return 2;
        } else if (!strcmp(f, "--steps")) {
            INT(a->train.steps, 1, 1 << 30);
        } else if (!strcmp(f, "--batch")) {
            INT(a->train.batch, 1, 1 << 20);
        } else if (!strcmp(f, "--lr")) {
            VALUE();
            if (arg_float(f, v, 1e-9, 10, &a->train.lr)) return 2;
        } else if (!strcmp(f, "--warmup")) {
            INT(a->train.warmup, 0, 1 << 30);
        } else if (!strcmp(f, "--decay")) {
            VALUE();
            if (arg_float(f, v, 0, 1, &a->train.decay)) return 2;
        } else if (!strcmp(f, "--seed")) {
            VALUE();
            if (arg_u64(f, v, &a->data.seed)) return 2;
            a->train.seed = a->data.seed;
        } else if (!strcmp(f, "--dtype")) {
            VALUE();
            if (!strcmp(v, "f32"))
                a->dtype = DTYPE_F32;
            else if (!strcmp(v, "bf16"))
                a->dtype = DTYPE_BF16;
            else {
                fprintf(stderr, "specula medusa-train: --dtype '%s': expected f32 or bf16\n", v);
                return 2;
            }
        } else if (!strcmp(f, "--log-every")) {
            INT(a->log_every, 0, 1 << 30);
        } else {
            fprintf(stderr, "specula medusa-train: unknown option '%s'\n", f);
            return 2;
        }
#undef INT
#undef VALUE
    }
    if (!a->out) {
        fprintf(stderr, "specula medusa-train: give the heads file to write with --out\n");
        return 2;
    }
    if (!!a->corpus_text + !!a->corpus_ids + a->random_prompts != 1) {
        fprintf(stderr, "specula medusa-train: give exactly one prompt source: --corpus FILE, --corpus-ids FILE or "
                        "--random-prompts\n");
        return 2;
    }
    if (a->data.gen_len <= a->n_heads) {
        fprintf(stderr,
                "specula medusa-train: --gen-len %d must exceed --heads %d (each example needs a label per head)\n",
                a->data.gen_len, a->n_heads);
        return 2;
    }
    if (a->train.warmup >= a->train.steps) a->train.warmup = a->train.steps / 10;
    a->train.log_every = a->log_every;
    return 0;
}

/* Token ids separated by whitespace or commas, into a malloc'd array. */
static int read_ids(const char *path, int V, int **ids, int *n) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "specula medusa-train: %s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    int cap = 4096, count = 0, c;
    int *out = malloc((size_t)cap * sizeof *out);
    long v;
    for (;;) {
        while ((c = fgetc(f)) != EOF && (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r')) {
        }
        if (c == EOF) break;
        ungetc(c, f);
        if (fscanf(f, "%ld", &v) != 1 || v < 0 || v >= V) {
            fprintf(stderr, "specula medusa-train: %s: entry %d is not a token id in [0, %d)\n", path, count, V);
            free(out);
            fclose(f);
            return -1;
        }
        if (count == cap) out = sp_xrealloc(out, (size_t)(cap *= 2), sizeof *out, "corpus ids");
        out[count++] = (int)v;
    }
    fclose(f);
    *ids = out;
    *n = count;
    return 0;
}

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return 0;
    *slash = '\0';
    for (char *p = buf + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "specula medusa-train: cannot create %s: %s\n", buf, strerror(errno));
            return -1;
        }
        if (!(*p = c)) return 0;
    }
}

/* The corpus text encoded with the model's tokenizer.json, as the training
 * part then the held-out part (*split ids in the first). The cut is the
 * first blank line after 90 % of the text, and each part is encoded on its
 * own so that no token straddles it — the split the target was validated on. */
static int encode_corpus(const char *path, const char *model_dir, int V, int **ids, int *n, int *split) {
    sp_error err;
    tokenizer tok;
    if (tokenizer_load(&tok, model_dir, &err)) {
        fprintf(stderr, "specula medusa-train: --corpus needs the model's tokenizer: %s\n", err.msg);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    int *part[2] = {NULL, NULL}, count[2] = {0, 0}, rc = -1;
    if (!f) {
        fprintf(stderr, "specula medusa-train: %s: cannot open: %s\n", path, strerror(errno));
        goto done;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = sp_xcalloc((size_t)size + 1, 1, "corpus text");
    size_t len = fread(text, 1, (size_t)size, f);
    fclose(f);
    if (len != (size_t)size) {
        fprintf(stderr, "specula medusa-train: %s: read error\n", path);
        goto done;
    }
    const char *blank = strstr(text + (size_t)((double)len * 0.9), "\n\n");
    if (!blank) {
        fprintf(stderr, "specula medusa-train: %s: no blank line in its last 10%% to cut the held-out part at\n", path);
        goto done;
    }
    const size_t cut = (size_t)(blank - text) + 2;
    if (tokenizer_encode(&tok, text, cut, &part[0], &count[0], &err) ||
        tokenizer_encode(&tok, text + cut, len - cut, &part[1], &count[1], &err)) {
        fprintf(stderr, "specula medusa-train: %s: %s\n", path, err.msg);
        goto done;
    }
    *n = count[0] + count[1];
    *split = count[0];
    *ids = sp_xcalloc((size_t)*n + 1, sizeof(int), "corpus ids");
    memcpy(*ids, part[0], (size_t)count[0] * sizeof(int));
    memcpy(*ids + count[0], part[1], (size_t)count[1] * sizeof(int));
    rc = 0;
    for (int i = 0; i < *n && rc == 0; i++)
        if ((*ids)[i] >= V) {
            fprintf(stderr, "specula medusa-train: the tokenizer gives id %d, outside the model's vocabulary of %d\n",
                    (*ids)[i], V);
            free(*ids);
            rc = -1;
        }
done:
    free(part[0]);
    free(part[1]);
    free(text);
    tokenizer_free(&tok);
    return rc;
}

/* SHA-256 of a whole file as hex[65]; "unknown" when it cannot be read. */
static void file_sha256(const char *path, char *hex) {
    snprintf(hex, 65, "unknown");
    FILE *f = fopen(path, "rb");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (f && ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        unsigned char buf[1 << 16], d[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        size_t n;
        int ok = 1;
        while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) ok = EVP_DigestUpdate(ctx, buf, n);
        if (ok && !ferror(f) && EVP_DigestFinal_ex(ctx, d, &len) && len == 32)
            for (unsigned int i = 0; i < len; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    }
    if (f) fclose(f);
    EVP_MD_CTX_free(ctx);
}

static void per_head(FILE *f, const double *x, int n) {
    for (int i = 0; i < n; i++) fprintf(f, "%s%.4f", i ? " " : "", x[i]);
}

/* The MANIFEST of a heads file, in the key-value lines of the models' own. */
static int write_manifest(const train_args *a, const char *command, const char *base_dir, const char *base_sha,
                          const medusa_heads *h, const medusa_dataset *train, const medusa_dataset *held,
                          const medusa_eval *on_train, const medusa_eval *ev, double gain_default,
                          double gain_suggested, int n_train_tokens, int n_held_tokens, double minutes) {
    char sha[65];
    file_sha256(a->out, sha);
    struct stat st;
    long long bytes = stat(a->out, &st) == 0 ? (long long)st.st_size : -1;
    const char *name = strrchr(a->out, '/') ? strrchr(a->out, '/') + 1 : a->out;
    FILE *f = fopen(a->manifest, "w");
    if (!f) {
        fprintf(stderr, "specula medusa-train: cannot write %s: %s\n", a->manifest, strerror(errno));
        return -1;
    }
    fprintf(f, "medusa.file %s sha256 %s bytes %lld\n", name, sha, bytes);
    size_t bl = strlen(base_dir);
    while (bl > 1 && base_dir[bl - 1] == '/') bl--;
    const char *base_name = base_dir + bl;
    while (base_name > base_dir && base_name[-1] != '/') base_name--;
    fprintf(f, "medusa.base %.*s safetensors sha256 %s (the files concatenated, as recorded in base_sha256)\n",
            (int)(base_dir + bl - base_name), base_name, base_sha);
    fprintf(f, "medusa.heads %d heads, %d ResBlock%s each, %s, %zu parameters, %s\n", h->n_heads, h->n_layers,
            h->n_layers > 1 ? "s" : "", h->own_proj ? "own projections" : "the target's lm_head shared",
            h->arena_floats, a->dtype == DTYPE_BF16 ? "bf16" : "f32");
    fprintf(f, "medusa.command %s\n", command);
    if (a->corpus_text || a->corpus_ids) {
        const char *corpus = a->corpus_text ? a->corpus_text : a->corpus_ids;
        char csha[65];
        file_sha256(corpus, csha);
        const char *base = strrchr(corpus, '/') ? strrchr(corpus, '/') + 1 : corpus;
        fprintf(f, "medusa.corpus %s sha256 %s (%d tokens for training prompts, %d held out)\n", base, csha,
                n_train_tokens, n_held_tokens);
    } else {
        fprintf(f, "medusa.corpus none: random prompts (seed %llu)\n", (unsigned long long)a->data.seed);
    }
    fprintf(f,
            "medusa.data %d continuations of %d + %d tokens (%s): %d examples; held out %d greedy "
            "continuations: %d examples\n",
            a->data.n_sequences, a->data.prompt_len, a->data.gen_len, a->data.temperature == 0 ? "greedy" : "sampled",
            train->n, a->eval_sequences, held->n);
    fprintf(f,
            "medusa.training %d steps x %d examples, Adam lr %g (warm-up %d, cosine to a tenth), head weights "
            "%g^i, seed %llu, %.1f min\n",
            a->train.steps, a->train.batch, a->train.lr, a->train.warmup, a->train.decay,
            (unsigned long long)a->data.seed, minutes);
    fprintf(f, "medusa.train_ce ");
    per_head(f, on_train->loss, h->n_heads);
    fprintf(f, " (per head, first %d training examples)\nmedusa.train_top1 ", on_train->n);
    per_head(f, on_train->top1, h->n_heads);
    fprintf(f, "\nmedusa.heldout_ce ");
    per_head(f, ev->loss, h->n_heads);
    fprintf(f, " (per head: offsets t+2, t+3, ...)\nmedusa.heldout_top1 ");
    per_head(f, ev->top1, h->n_heads);
    fprintf(f, " (agreement with the target's greedy token)\nmedusa.heldout_top%d ", MEDUSA_EVAL_RANKS);
    per_head(f, ev->topk, h->n_heads);
    fprintf(f,
            "\nmedusa.expected_accepted built-in tree %.3f, suggested tree %.3f (tokens per greedy round, "
            "held out)\n",
            gain_default, gain_suggested);
    if (fclose(f) != 0) return -1;
    printf("wrote %s\n", a->manifest);
    return 0;
}

static void print_eval(const medusa_eval *e, const medusa_tree *def, const medusa_tree *suggested) {
    printf("held-out: %d positions of the target's greedy continuations\n", e->n);
    printf("head  offset  CE      top-1   top-%d\n", MEDUSA_EVAL_RANKS);
    for (int i = 0; i < e->n_heads; i++)
        printf("%4d  t+%-5d %-7.3f %-7.3f %.3f\n", i, i + 2, e->loss[i], e->top1[i], e->topk[i]);
    printf("rank frequencies (rows: heads; columns: the target's token at rank 0..%d):\n", MEDUSA_EVAL_RANKS - 1);
    for (int i = 0; i < e->n_heads; i++) {
        printf("  {");
        for (int r = 0; r < MEDUSA_EVAL_RANKS; r++) printf("%s%.4f", r ? ", " : "", e->rank_freq[i][r]);
        printf("},\n");
    }
    printf("expected tokens accepted per greedy round: built-in tree %.3f (%d nodes), suggested tree %.3f (%d nodes)\n",
           medusa_eval_tree_gain(e, def), def->n, medusa_eval_tree_gain(e, suggested), suggested->n);
}

int cmd_medusa_train(int argc, char **argv) {
    train_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.model_dir ? a.model_dir : default_model_dir();
    sp_error err;
    model target;
    if (model_load(&target, dir, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        return 1;
    }
    const int V = target.cfg.vocab_size;
    int *corpus = NULL, n_corpus = 0, split = 0, status = 1;
    medusa_dataset train = {0}, held = {0};
    medusa_heads heads = {0}, loaded = {0};
    medusa_eval ev = {0}, on_train = {0};
    if (a.random_prompts) {
        n_corpus = 1 << 16;
        corpus = sp_xcalloc((size_t)n_corpus, sizeof(int), "random prompts");
        for (int i = 0; i < n_corpus; i++)
            corpus[i] = (int)(philox_uniform(a.data.seed, 0x9e3779b9ull, (uint64_t)i, 0) * V) % V;
    } else if (a.corpus_ids ? read_ids(a.corpus_ids, V, &corpus, &n_corpus)
                            : encode_corpus(a.corpus_text, dir, V, &corpus, &n_corpus, &split)) {
        corpus = NULL;
        goto done;
    }
    if (!a.corpus_text) split = n_corpus - n_corpus / 10; /* the last tenth gives the held-out prompts */
    medusa_data_opts held_opts = a.data;
    held_opts.n_sequences = a.eval_sequences;
    held_opts.temperature = 0; /* agreement is measured against the greedy continuation */
    held_opts.stream = 1;
    printf("target %s: D %d, V %d; %d corpus tokens (%d for training prompts, %d held out)\n", dir,
           target.cfg.hidden_size, V, n_corpus, split, n_corpus - split);
    printf("generating %d training continuations (%d + %d tokens, %s) ...\n", a.data.n_sequences, a.data.prompt_len,
           a.data.gen_len, a.data.temperature == 0 ? "greedy" : "sampled");
    fflush(stdout);
    if (medusa_dataset_generate(&target, corpus, split, a.n_heads, &a.data, &train, stdout, &err) ||
        (printf("generating %d held-out continuations ...\n", a.eval_sequences), fflush(stdout),
         medusa_dataset_generate(&target, corpus + split, n_corpus - split, a.n_heads, &held_opts, &held, stdout,
                                 &err))) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    if (medusa_build(&heads, a.n_heads, a.n_layers, target.cfg.hidden_size, V, !a.shared, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    medusa_share_lm_head(&heads, target.w.lm_head);
    medusa_train_init(&heads, &target);
    printf("training %d heads (%d ResBlock%s, %s) on %d examples: %d steps of %d, lr %g, head weights %g^i\n",
           a.n_heads, a.n_layers, a.n_layers > 1 ? "s" : "", a.shared ? "shared lm_head" : "own projections", train.n,
           a.train.steps, a.train.batch, a.train.lr, a.train.decay);
    fflush(stdout);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (medusa_train(&heads, &train, &a.train, stdout, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double minutes = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / 60;
    /* measure what the file will hold: round to the storage dtype first */
    if (a.dtype == DTYPE_BF16)
        for (size_t k = 0; k < heads.arena_floats; k++) heads.arena[k] = bf16_to_f32(f32_to_bf16(heads.arena[k]));
    medusa_tree def, suggested;
    medusa_tree_default(&def, a.n_heads);
    if (medusa_evaluate(&heads, &held, &ev, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    medusa_dataset first = train; /* the training figures, on a bounded number of examples */
    if (first.n > 10000) first.n = 10000;
    if (medusa_evaluate(&heads, &first, &on_train, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    printf("training examples: top-1 per head");
    for (int i = 0; i < on_train.n_heads; i++) printf(" %.3f", on_train.top1[i]);
    printf(" (first %d)\n", on_train.n);
    medusa_eval_suggest_tree(&ev, 63, &suggested);
    print_eval(&ev, &def, &suggested);

    char sha[65], seed[32], steps[32], top1[256] = "", command[2048] = "specula";
    if (medusa_base_sha256(dir, sha, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    for (int i = 0; i < ev.n_heads; i++)
        snprintf(top1 + strlen(top1), sizeof top1 - strlen(top1), "%s%.4f", i ? " " : "", ev.top1[i]);
    for (int i = 0; i < argc; i++)
        snprintf(command + strlen(command), sizeof command - strlen(command), " %s", argv[i]);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a.data.seed);
    snprintf(steps, sizeof steps, "%d", a.train.steps);
    const char *keys[] = {"specula.trainer", "specula.command", "specula.seed", "specula.steps",
                          "specula.heldout_top1"};
    const char *values[] = {"specula medusa-train (self-distillation)", command, seed, steps, top1};
    if (make_parent_dirs(a.out)) goto done;
    if (medusa_save(&heads, a.out, a.dtype, sha, keys, values, 5, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        goto done;
    }
    /* read it back the way generate does, base check included */
    if (medusa_load(&loaded, a.out, &target, 0, &err)) {
        fprintf(stderr, "specula medusa-train: the written file does not load: %s\n", err.msg);
        goto done;
    }
    printf("wrote %s (%d heads, base sha256 %s)\n", a.out, loaded.n_heads, sha);
    if (a.tree_out) {
        char json[8192];
        medusa_tree_format(&suggested, json, sizeof json);
        FILE *f = fopen(a.tree_out, "w");
        if (!f || fprintf(f, "%s\n", json) < 0 || fclose(f) != 0) {
            fprintf(stderr, "specula medusa-train: cannot write %s\n", a.tree_out);
            goto done;
        }
        printf("wrote the suggested tree to %s\n", a.tree_out);
    }
    if (a.manifest &&
        write_manifest(&a, command, dir, sha, &heads, &train, &held, &on_train, &ev, medusa_eval_tree_gain(&ev, &def),
                       medusa_eval_tree_gain(&ev, &suggested), split, n_corpus - split, minutes))
        goto done;
    status = 0;
done:
    medusa_eval_free(&ev);
    medusa_eval_free(&on_train);
    if (loaded.arena) medusa_free(&loaded);
    if (heads.arena) medusa_free(&heads);
    medusa_dataset_free(&train);
    medusa_dataset_free(&held);
    free(corpus);
    model_free(&target);
    return status;
}
