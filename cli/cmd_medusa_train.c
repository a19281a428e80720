/* cmd_medusa_train.c — `specula medusa-train`: trains Medusa heads by self-distillation against a frozen target
 * (tools/analysis/medusa_train.h), writes them with the base checkpoint's sha256, reloads the file as `generate`
 * would, and prints each head's held-out agreement with the target's greedy continuation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>

#include "args.h"
#include "atomic_file.h"
#include "commands.h"
#include "medusa_train.h"
#include "method_cli.h"
#include "philox.h"
#include "outputs.h"
#include "engine.h"
#include "engine_target.h"
#include "reference_target.h"
#include "regular_file.h"
#include "tokenizer.h"

typedef struct {
    const char *model_dir, *corpus_text, *corpus_ids, *out, *tree_out, *manifest;
    int random_prompts, n_heads, n_layers, shared, eval_sequences, log_every;
    int on_engine, threads; /* --backend cpu: the continuations and hidden states from the CPU engine */
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
            "  --log-every N        progress every N steps (default 100; 0 = quiet)\n"
            "  --backend NAME       what continues the prompts and gives the hidden states the heads learn from:\n"
            "                       reference (default: float32, the executable specification) | cpu (the CPU\n"
            "                       engine in its default bf16 mode, whose tokens the heads then draft against;\n"
            "                       many times faster on a model of tens of MB)\n"
            "  --threads N          the CPU engine's threads (default 1; --backend cpu)\n",
            default_model_dir());
}

/* The checks that need every option seen: combinations, and what is missing. */
static int check_args(train_args *a) {
    if (a->threads != 1 && !a->on_engine) {
        fprintf(stderr, "specula medusa-train: --threads applies to --backend cpu (the reference runs one thread)\n");
        return 2;
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

static int parse(int argc, char **argv, train_args *a) {
    memset(a, 0, sizeof *a);
    a->n_heads = 4, a->n_layers = 1, a->eval_sequences = 50, a->log_every = 100, a->threads = 1;
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
        } else if (!strcmp(f, "--backend")) {
            VALUE();
            if (!strcmp(v, "cpu") || !strcmp(v, "reference")) {
                a->on_engine = !strcmp(v, "cpu");
            } else {
                fprintf(stderr, "specula medusa-train: --backend '%s': expected reference or cpu\n", v);
                return 2;
            }
        } else if (!strcmp(f, "--threads")) {
            INT(a->threads, 1, 1024);
        } else {
            fprintf(stderr, "specula medusa-train: unknown option '%s'\n", f);
            return 2;
        }
#undef INT
#undef VALUE
    }
    return check_args(a);
}


/* Token ids separated by whitespace or commas, into a malloc'd array. */
static int read_ids(const char *path, int V, int **ids, int *n) {
    sp_error err;
    FILE *f = regular_fopen(path, NULL, &err);
    if (!f) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
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
    FILE *f = regular_fopen(path, NULL, &err);
    char *text = NULL;
    int *part[2] = {NULL, NULL}, count[2] = {0, 0}, rc = -1;
    if (!f) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
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
    atomic_file out;
    sp_error err;
    if (atomic_open(&out, a->manifest, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        return -1;
    }
    FILE *f = out.f; /* a failed fprintf sets ferror, which the commit checks */
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
    if (atomic_commit(&out, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        return -1;
    }
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

/* One training run, start to finish: what each step below reads and leaves. */
typedef struct {
    train_args a;
    const char *dir;
    model target;              /* float32: the heads' shapes, the lm_head they start from, the base checked */
    engine engine;             /* --backend cpu: what generates the datasets */
    int have_engine;
    decode_target target_if; /* the target as the dataset generator runs it */
    int *corpus, n_corpus, split;
    medusa_dataset train, held;
    medusa_heads heads, loaded;
    medusa_eval ev, on_train;
    medusa_tree def, suggested;
    double minutes;
    char sha[65];
} train_run;

/* The corpus: random prompts, token ids, or text through the tokenizer; the
 * last tenth (or the text's own split) gives the held-out prompts. */
static int load_corpus(train_run *r) {
    const int V = r->target.cfg.vocab_size;
    if (r->a.random_prompts) {
        r->n_corpus = 1 << 16;
        r->corpus = sp_xcalloc((size_t)r->n_corpus, sizeof(int), "random prompts");
        for (int i = 0; i < r->n_corpus; i++)
            r->corpus[i] = (int)(philox_uniform(r->a.data.seed, 0x9e3779b9ull, (uint64_t)i, 0) * V) % V;
    } else if (r->a.corpus_ids ? read_ids(r->a.corpus_ids, V, &r->corpus, &r->n_corpus)
                               : encode_corpus(r->a.corpus_text, r->dir, V, &r->corpus, &r->n_corpus, &r->split)) {
        r->corpus = NULL;
        return 1; /* read_ids and encode_corpus say why */
    }
    if (!r->a.corpus_text) r->split = r->n_corpus - r->n_corpus / 10;
    return 0;
}

/* The training and held-out examples: the target's continuations. */
static int make_datasets(train_run *r, sp_error *err) {
    const train_args *a = &r->a;
    medusa_data_opts held_opts = a->data;
    held_opts.n_sequences = a->eval_sequences;
    held_opts.temperature = 0; /* agreement is measured against the greedy continuation */
    held_opts.stream = 1;
    printf("target %s: D %d, V %d; %d corpus tokens (%d for training prompts, %d held out)\n", r->dir,
           r->target.cfg.hidden_size, r->target.cfg.vocab_size, r->n_corpus, r->split, r->n_corpus - r->split);
    printf("generating %d training continuations (%d + %d tokens, %s) ...\n", a->data.n_sequences, a->data.prompt_len,
           a->data.gen_len, a->data.temperature == 0 ? "greedy" : "sampled");
    fflush(stdout);
    if (medusa_dataset_generate(&r->target_if, r->corpus, r->split, a->n_heads, &a->data, &r->train, stdout, err))
        return -1;
    printf("generating %d held-out continuations ...\n", a->eval_sequences);
    fflush(stdout);
    return medusa_dataset_generate(&r->target_if, r->corpus + r->split, r->n_corpus - r->split, a->n_heads, &held_opts,
                                   &r->held, stdout, err);
}

static int train_heads(train_run *r, sp_error *err) {
    const train_args *a = &r->a;
    if (medusa_build(&r->heads, a->n_heads, a->n_layers, r->target.cfg.hidden_size, r->target.cfg.vocab_size,
                     !a->shared, err))
        return -1;
    medusa_share_lm_head(&r->heads, r->target.w.lm_head);
    medusa_train_init(&r->heads, r->target.w.lm_head);
    printf("training %d heads (%d ResBlock%s, %s) on %d examples: %d steps of %d, lr %g, head weights %g^i\n",
           a->n_heads, a->n_layers, a->n_layers > 1 ? "s" : "", a->shared ? "shared lm_head" : "own projections",
           r->train.n, a->train.steps, a->train.batch, a->train.lr, a->train.decay);
    fflush(stdout);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (medusa_train(&r->heads, &r->train, &a->train, stdout, err)) return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->minutes = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / 60;
    return 0;
}

/* Held-out and training agreement of what the file will hold, and the suggested tree. */
static int evaluate(train_run *r, sp_error *err) {
    if (r->a.dtype == DTYPE_BF16) /* measure what the file will hold: round to the storage dtype first */
        for (size_t k = 0; k < r->heads.arena_floats; k++)
            r->heads.arena[k] = bf16_to_f32(f32_to_bf16(r->heads.arena[k]));
    medusa_tree_default(&r->def, r->a.n_heads);
    if (medusa_evaluate(&r->heads, &r->held, &r->ev, err)) return -1;
    medusa_dataset first = r->train; /* the training figures, on a bounded number of examples */
    if (first.n > 10000) first.n = 10000;
    if (medusa_evaluate(&r->heads, &first, &r->on_train, err)) return -1;
    printf("training examples: top-1 per head");
    for (int i = 0; i < r->on_train.n_heads; i++) printf(" %.3f", r->on_train.top1[i]);
    printf(" (first %d)\n", r->on_train.n);
    medusa_eval_suggest_tree(&r->ev, 63, &r->suggested);
    print_eval(&r->ev, &r->def, &r->suggested);
    return 0;
}

/* Writes the heads with their metadata, reads them back the way generate
 * does (base check included), then the tree and the manifest. */
static int save(train_run *r, int argc, char **argv, sp_error *err) {
    const train_args *a = &r->a;
    char seed[32], steps[32], top1[256] = "", command[2048] = "specula";
    if (medusa_base_sha256(r->dir, r->sha, err)) return -1;
    for (int i = 0; i < r->ev.n_heads; i++)
        snprintf(top1 + strlen(top1), sizeof top1 - strlen(top1), "%s%.4f", i ? " " : "", r->ev.top1[i]);
    for (int i = 0; i < argc; i++)
        snprintf(command + strlen(command), sizeof command - strlen(command), " %s", argv[i]);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a->data.seed);
    snprintf(steps, sizeof steps, "%d", a->train.steps);
    const char *keys[] = {"specula.trainer", "specula.command", "specula.seed", "specula.steps",
                          "specula.heldout_top1"};
    const char *values[] = {"specula medusa-train (self-distillation)", command, seed, steps, top1};
    if (make_parent_dirs(a->out)) return 1;
    if (medusa_save(&r->heads, a->out, a->dtype, r->sha, keys, values, 5, err)) return -1;
    const medusa_base base = reference_medusa_base(&r->target);
    if (medusa_load(&r->loaded, a->out, &base, 0, err)) return sp_wrap(err, "the written file does not load: ");
    printf("wrote %s (%d heads, base sha256 %s)\n", a->out, r->loaded.n_heads, r->sha);
    if (a->tree_out) {
        char json[8192];
        medusa_tree_format(&r->suggested, json, sizeof json);
        atomic_file out;
        if (atomic_open(&out, a->tree_out, err)) return -1;
        fprintf(out.f, "%s\n", json); /* a failure sets ferror, which the commit checks */
        if (atomic_commit(&out, err)) return -1;
        printf("wrote the suggested tree to %s\n", a->tree_out);
    }
    if (a->manifest &&
        write_manifest(a, command, r->dir, r->sha, &r->heads, &r->train, &r->held, &r->on_train, &r->ev,
                       medusa_eval_tree_gain(&r->ev, &r->def), medusa_eval_tree_gain(&r->ev, &r->suggested), r->split,
                       r->n_corpus - r->split, r->minutes))
        return 1;
    return 0;
}

static void run_free(train_run *r) {
    medusa_eval_free(&r->ev);
    medusa_eval_free(&r->on_train);
    if (r->loaded.arena) medusa_free(&r->loaded);
    if (r->heads.arena) medusa_free(&r->heads);
    medusa_dataset_free(&r->train);
    medusa_dataset_free(&r->held);
    free(r->corpus);
    if (r->target_if.release) r->target_if.release(&r->target_if);
    if (r->have_engine) engine_close(&r->engine);
    model_free(&r->target);
}

int cmd_medusa_train(int argc, char **argv) {
    static train_run r; /* large: the trees and the buffers' bookkeeping */
    memset(&r, 0, sizeof r);
    int rc = parse(argc, argv, &r.a);
    if (rc) return rc == 1 ? 0 : rc;
    r.dir = r.a.model_dir ? r.a.model_dir : default_model_dir();
    sp_error err;
    if (model_load(&r.target, r.dir, &err)) {
        fprintf(stderr, "specula medusa-train: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    if (context_check(&r.target.cfg, "--prompt-len", r.a.data.prompt_len, "--gen-len", r.a.data.gen_len,
                      "medusa-train")) {
        model_free(&r.target);
        return EXIT_BAD_INPUT;
    }
    /* before the training: an output that is an input, or that cannot be written, would lose the run at its end */
    const char *outs[] = {r.a.out, r.a.tree_out, r.a.manifest}, *inputs[] = {r.a.corpus_text, r.a.corpus_ids};
    if (make_parent_dirs(r.a.out) || outputs_check("medusa-train", outs, 3, r.dir, inputs, 2)) {
        model_free(&r.target);
        return EXIT_BAD_INPUT;
    }
    if (r.a.on_engine) {
        const engine_options o = {.threads = r.a.threads};
        if (engine_open(&r.engine, r.dir, &o, &err)) {
            fprintf(stderr, "specula medusa-train: %s\n", err.msg);
            run_free(&r);
            return EXIT_BAD_INPUT;
        }
        r.have_engine = 1;
        engine_target_build(&r.target_if, &r.engine);
    } else {
        reference_target_build(&r.target_if, &r.target);
    }
    if (load_corpus(&r)) { /* it said why: the corpus file or the tokenizer it needs */
        run_free(&r);
        return EXIT_BAD_INPUT;
    }
    /* each step returns 0, −1 with err set, or 1 after printing its own message */
    if ((rc = make_datasets(&r, &err)) == 0 && (rc = train_heads(&r, &err)) == 0 && (rc = evaluate(&r, &err)) == 0)
        rc = save(&r, argc, argv, &err);
    if (rc < 0) fprintf(stderr, "specula medusa-train: %s\n", err.msg);
    run_free(&r);
    return rc ? EXIT_RUN_FAILED : EXIT_DONE;
}
