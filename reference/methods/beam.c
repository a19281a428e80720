/* beam.c — beam search over a target (see beam.h for the exact semantics
 * and where they come from). Readable first: candidates are sorted with
 * qsort; a step hands the target every live beam's pending token as a
 * one-node tree, in one verify pass. */
#include "beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

beam_options beam_defaults(void) {
    beam_options o;
    memset(&o, 0, sizeof o);
    o.num_beams = 4;
    o.length_penalty = 1.0f;
    o.early_stopping = BEAM_EARLY_HEURISTIC;
    o.num_return = 1;
    o.max_new_tokens = 32;
    o.stop_at_eos = 1;
    return o;
}

#define BEAM_MAX_BEAMS 65536

int beam_validate(const beam_options *o, sp_error *err) {
    if (o->num_beams < 1 || o->num_beams > BEAM_MAX_BEAMS)
        return sp_fail(err, "beam search: the number of beams must be in [1, %d], got %d", BEAM_MAX_BEAMS,
                       o->num_beams);
    if (o->num_return < 1 || o->num_return > o->num_beams)
        return sp_fail(err, "beam search: the number of returned hypotheses must be in [1, %d] (the beams), got %d",
                       o->num_beams, o->num_return);
    if (o->max_new_tokens < 1)
        return sp_fail(err, "beam search: max_new_tokens must be at least 1, got %d", o->max_new_tokens);
    if (!isfinite(o->length_penalty)) return sp_fail(err, "beam search: the length penalty must be a finite number");
    if (o->early_stopping != BEAM_EARLY_TRUE && o->early_stopping != BEAM_EARLY_HEURISTIC &&
        o->early_stopping != BEAM_EARLY_NEVER)
        return sp_fail(err, "beam search: unknown early-stopping mode %d", (int)o->early_stopping);
    return 0;
}

static const char *const early_names[] = {"true", "heuristic", "never"};

const char *beam_early_stopping_name(beam_early_stopping e) { return (unsigned)e < 3 ? early_names[e] : "?"; }

int beam_early_stopping_parse(const char *text, beam_early_stopping *out) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(text, early_names[i])) {
            *out = (beam_early_stopping)i;
            return 0;
        }
    return -1;
}

double beam_length_normalised(double sum_logprobs, double length, double length_penalty) {
    return sum_logprobs / pow(length, length_penalty);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* out[V] = log_softmax(logits) in double. A NaN logit counts as −inf; a row
 * with +inf entries shares the mass among them; a row with nothing above
 * −inf gives −inf everywhere (no continuation of that beam can win). */
static void log_softmax(const float *logits, double *out, int V) {
    double mx = -INFINITY;
    for (int v = 0; v < V; v++)
        if (logits[v] > mx) mx = logits[v]; /* NaN compares false */
    if (mx == -INFINITY || mx == INFINITY) {
        int n_inf = 0;
        for (int v = 0; v < V; v++) n_inf += mx == INFINITY && logits[v] == INFINITY;
        for (int v = 0; v < V; v++) out[v] = n_inf && logits[v] == INFINITY ? -log((double)n_inf) : -INFINITY;
        return;
    }
    double sum = 0;
    for (int v = 0; v < V; v++)
        if (logits[v] > -INFINITY) sum += exp((double)logits[v] - mx);
    const double lse = mx + log(sum);
    for (int v = 0; v < V; v++) out[v] = logits[v] > -INFINITY ? (double)logits[v] - lse : -INFINITY;
}

/* Best score first; on a tie the better-ranked parent, then the lower token
 * id (torch.topk leaves ties unspecified; this order is ours). */
static int candidate_cmp(const void *pa, const void *pb) {
    const beam_candidate *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->parent != b->parent) return a->parent < b->parent ? -1 : 1;
    return (a->token > b->token) - (a->token < b->token);
}

/* ---- begin / free ----------------------------------------------------------- */

static int check_prompt(const decode_target *t, const int *prompt, int n_prompt, sp_error *err) {
    const int V = t->cfg->vocab_size;
    if (n_prompt < 1) return sp_fail(err, "beam search: the prompt needs at least one token");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return sp_fail(err, "beam search: prompt token %d at position %d is outside the vocabulary [0, %d)",
                           prompt[i], i, V);
    return 0;
}

static void allocate(beam_search *bs, int b, int V) {
    bs->live = sp_xcalloc((size_t)b, sizeof *bs->live, "live beams");
    bs->next_live = sp_xcalloc((size_t)b, sizeof *bs->next_live, "live beams");
    bs->finished = sp_xcalloc((size_t)b, sizeof *bs->finished, "finished hypotheses");
    bs->cand = sp_xcalloc((size_t)b * V, sizeof *bs->cand, "beam candidates");
    bs->trees = sp_xcalloc((size_t)b, sizeof *bs->trees, "beam trees");
    bs->jobs = sp_xcalloc((size_t)b, sizeof *bs->jobs, "beam verify jobs");
    bs->logits = sp_xcalloc((size_t)b * V, sizeof(float), "beam logits");
    bs->logprobs = sp_xcalloc((size_t)b * V, sizeof(double), "beam log-probabilities");
    bs->scratch = sp_xcalloc((size_t)2 * b, sizeof(int), "beam parent scratch");
    bs->tokens_cap = bs->opt.max_new_tokens < 64 ? bs->opt.max_new_tokens : 64;
    for (int i = 0; i < b; i++) {
        tree_build(&bs->trees[i], V, 1);
        bs->live[i].tokens = sp_xcalloc((size_t)bs->tokens_cap, sizeof(int), "beam tokens");
        bs->next_live[i].tokens = sp_xcalloc((size_t)bs->tokens_cap, sizeof(int), "beam tokens");
        bs->live[i].seq = bs->next_live[i].seq = -1;
    }
}

int beam_begin(beam_search *bs, decode_target *t, const int *prompt, int n_prompt, const beam_options *o,
               sp_error *err) {
    memset(bs, 0, sizeof *bs);
    const model_config *cfg = t->cfg;
    if (beam_validate(o, err) || check_prompt(t, prompt, n_prompt, err)) return -1;
    const int b = o->num_beams;
    bs->target = t;
    bs->opt = *o;
    const int n_eos = o->stop_at_eos ? cfg->num_eos : 0;
    bs->K = (1 + n_eos > 2 ? 1 + n_eos : 2) * b;
    bs->last_prompt_token = prompt[n_prompt - 1];
    allocate(bs, b, cfg->vocab_size);
    accounting_init(&bs->acc, "beam", 0, t->weight_bytes_per_pass, 0);
    target_memory mem;
    t->memory(t, NULL, 0, &mem);
    bs->block_copies_at_begin = mem.kv_block_copies;
    bs->stats.kv_block_bytes = mem.kv_block_bytes;
    bs->stats.deltanet_bytes_per_beam = mem.seq_state_bytes;
    bs->t_start = now_s();

    /* the prompt but its last token; the first step feeds that one */
    const int seq = t->seq_open(t, err);
    if (seq < 0 || t->prefill(t, seq, prompt, n_prompt - 1, NULL, NULL, err)) {
        if (seq >= 0) t->seq_close(t, seq);
        beam_free(bs);
        return -1;
    }
    bs->live[0].sum_logprobs = 0;
    bs->live[0].seq = seq;
    bs->n_live = 1;
    return 0;
}

/* Gives every live sequence back to the target. */
static void close_live(beam_search *bs) {
    for (int i = 0; i < bs->n_live; i++)
        if (bs->live[i].seq >= 0) bs->target->seq_close(bs->target, bs->live[i].seq);
    bs->n_live = 0;
}

void beam_free(beam_search *bs) {
    const int b = bs->opt.num_beams;
    if (bs->live) close_live(bs);
    if (bs->live)
        for (int i = 0; i < b; i++) {
            free(bs->live[i].tokens);
            free(bs->next_live[i].tokens);
            tree_free(&bs->trees[i]);
        }
    if (bs->finished)
        for (int i = 0; i < bs->n_finished; i++) free(bs->finished[i].tokens);
    free(bs->live);
    free(bs->next_live);
    free(bs->finished);
    free(bs->cand);
    free(bs->trees);
    free(bs->jobs);
    free(bs->logits);
    free(bs->logprobs);
    free(bs->scratch);
    memset(bs, 0, sizeof *bs);
}

/* ---- one step --------------------------------------------------------------- */

/* The KV figures after a pass: blocks held, what private caches would hold,
 * blocks copied on write. */
static void record_memory(beam_search *bs) {
    int *seqs = bs->scratch;
    for (int i = 0; i < bs->n_live; i++) seqs[i] = bs->live[i].seq;
    target_memory mem;
    bs->target->memory(bs->target, seqs, bs->n_live, &mem);
    bs->stats.kv_block_copies = mem.kv_block_copies - bs->block_copies_at_begin;
    if (mem.kv_blocks_in_use > bs->stats.kv_blocks_peak) bs->stats.kv_blocks_peak = mem.kv_blocks_in_use;
    if (mem.kv_blocks_listed > bs->stats.kv_blocks_unshared_peak)
        bs->stats.kv_blocks_unshared_peak = mem.kv_blocks_listed;
}

/* Feeds every live beam its pending token (one batched pass of the target)
 * and fills logprobs[i, V]. */
static int batched_pass(beam_search *bs) {
    decode_target *t = bs->target;
    const int V = t->cfg->vocab_size;
    for (int i = 0; i < bs->n_live; i++) {
        const beam_live *L = &bs->live[i];
        tree_reset(&bs->trees[i], bs->t ? L->tokens[bs->t - 1] : bs->last_prompt_token, CHILDREN_IID);
        bs->jobs[i] = (target_job){L->seq, &bs->trees[i], bs->logits + (size_t)i * V, NULL};
    }
    if (t->verify(t, bs->jobs, bs->n_live, NULL, &bs->err)) return -1;
    for (int i = 0; i < bs->n_live; i++) {
        if (t->commit(t, bs->live[i].seq, 0, &bs->err)) return -1;
        log_softmax(bs->logits + (size_t)i * V, bs->logprobs + (size_t)i * V, V);
    }
    bs->stats.beam_forwards += bs->n_live;
    if (bs->n_live > bs->stats.peak_live_beams) bs->stats.peak_live_beams = bs->n_live;
    record_memory(bs);
    bs->acc.target_passes++;
    return 0;
}

static int candidate_stops(const beam_search *bs, const beam_candidate *c) {
    return bs->t + 1 == bs->opt.max_new_tokens || (bs->opt.stop_at_eos && config_is_eos(bs->target->cfg, c->token));
}

/* Inserts the finished hypothesis (parent's tokens + c->token) into the
 * best-first list of at most b, after every entry with an equal or better
 * score, so the hypotheses already there win ties. */
static void add_finished(beam_search *bs, const beam_candidate *c) {
    const int b = bs->opt.num_beams, n = bs->t + 1;
    const double score = beam_length_normalised(c->score, n, bs->opt.length_penalty);
    if (bs->n_finished == b && !(score > bs->finished[b - 1].score)) return;
    int at = bs->n_finished;
    while (at > 0 && !(bs->finished[at - 1].score >= score)) at--;
    if (bs->n_finished == b) free(bs->finished[--bs->n_finished].tokens);
    memmove(bs->finished + at + 1, bs->finished + at, (size_t)(bs->n_finished - at) * sizeof *bs->finished);
    bs->n_finished++;
    beam_hypothesis *h = &bs->finished[at];
    h->tokens = sp_xcalloc((size_t)n, sizeof(int), "finished hypothesis");
    memcpy(h->tokens, bs->live[c->parent].tokens, (size_t)bs->t * sizeof(int));
    h->tokens[bs->t] = c->token;
    h->n = n;
    h->sum_logprobs = c->score;
    h->score = score;
    h->ended_by_eos = bs->opt.stop_at_eos && config_is_eos(bs->target->cfg, c->token);
}

/* Gives every new live beam a sequence: the first child of a parent takes
 * the parent's sequence over as it is (no copy), every further child forks
 * it (KV blocks shared, DeltaNet state copied). A parent without children
 * closes its sequence and gives its KV blocks back. parent[j] is the index
 * in live[] of next_live[j]'s parent. */
static int assign_sequences(beam_search *bs, const int *parent, int n_next) {
    decode_target *t = bs->target;
    int *claimed = bs->scratch + bs->opt.num_beams; /* [n_live] 0: unclaimed, 1: taken over, 2: no child */
    for (int i = 0; i < bs->n_live; i++) claimed[i] = 2;
    for (int j = 0; j < n_next; j++) claimed[parent[j]] = 0;
    for (int i = 0; i < bs->n_live; i++)
        if (claimed[i] == 2) t->seq_close(t, bs->live[i].seq);
    for (int j = 0; j < n_next; j++) {
        const int src = bs->live[parent[j]].seq;
        if (!claimed[parent[j]]) {
            claimed[parent[j]] = 1;
            bs->next_live[j].seq = src;
        } else if ((bs->next_live[j].seq = t->seq_fork(t, src, &bs->err)) < 0) {
            /* give back what is held: the sequences assigned so far, and the
             * parents whose first child was not reached */
            for (int i = 0; i < j; i++) t->seq_close(t, bs->next_live[i].seq);
            for (int i = 0; i < bs->n_live; i++)
                if (!claimed[i]) t->seq_close(t, bs->live[i].seq);
            bs->n_live = 0;
            return -1;
        } else {
            bs->stats.deltanet_copies++;
        }
    }
    return 0;
}

/* Room for t + 1 tokens in every live beam's token list. */
static void grow_tokens(beam_search *bs) {
    if (bs->t + 1 <= bs->tokens_cap) return;
    int cap = 2 * bs->tokens_cap;
    if (cap > bs->opt.max_new_tokens) cap = bs->opt.max_new_tokens;
    for (int i = 0; i < bs->opt.num_beams; i++) {
        bs->live[i].tokens = sp_xrealloc(bs->live[i].tokens, (size_t)cap, sizeof(int), "beam tokens");
        bs->next_live[i].tokens = sp_xrealloc(bs->next_live[i].tokens, (size_t)cap, sizeof(int), "beam tokens");
    }
    bs->tokens_cap = cap;
}

/* HF's stopping rule for one sequence (see beam.h). */
static int search_is_over(const beam_search *bs) {
    const int b = bs->opt.num_beams;
    if (bs->n_live == 0) return 1;
    if (bs->n_finished < b) return 0;
    if (bs->opt.early_stopping == BEAM_EARLY_TRUE) return 1;
    const double lp = bs->opt.length_penalty;
    const double T = bs->opt.early_stopping == BEAM_EARLY_NEVER && lp > 0 ? bs->opt.max_new_tokens : bs->t;
    const double best_possible = beam_length_normalised(bs->live[0].sum_logprobs, T, lp);
    return !(best_possible > bs->finished[b - 1].score);
}

/* A step the target could not complete: the search stops, reporting why. */
static int fail_step(beam_search *bs) {
    bs->failed = bs->done = 1;
    close_live(bs);
    return 0;
}

int beam_step(beam_search *bs) {
    if (bs->done) return 0;
    const int V = bs->target->cfg->vocab_size, b = bs->opt.num_beams;
    if (batched_pass(bs)) return fail_step(bs);
    if (bs->acc.target_passes == 1) bs->acc.ttft_s = now_s() - bs->t_start;

    /* every continuation of every live beam, best first; keep K */
    int n = 0;
    for (int i = 0; i < bs->n_live; i++)
        for (int v = 0; v < V; v++)
            bs->cand[n++] = (beam_candidate){bs->live[i].sum_logprobs + bs->logprobs[(size_t)i * V + v], i, v};
    qsort(bs->cand, (size_t)n, sizeof *bs->cand, candidate_cmp);
    const int kept = n < bs->K ? n : bs->K;

    /* stopping candidates among the first b finish (HF also refuses them
     * when `true` has a full set, but one sequence has stopped by then) */
    for (int j = 0; j < kept && j < b; j++)
        if (candidate_stops(bs, &bs->cand[j])) add_finished(bs, &bs->cand[j]);

    /* the first b candidates that go on are the next live beams */
    grow_tokens(bs);
    int *parent = bs->scratch, n_next = 0;
    for (int j = 0; j < kept && n_next < b; j++) {
        const beam_candidate *c = &bs->cand[j];
        if (candidate_stops(bs, c)) continue;
        beam_live *L = &bs->next_live[n_next];
        memcpy(L->tokens, bs->live[c->parent].tokens, (size_t)bs->t * sizeof(int));
        L->tokens[bs->t] = c->token;
        L->sum_logprobs = c->score;
        parent[n_next++] = c->parent;
    }
    if (assign_sequences(bs, parent, n_next)) return fail_step(bs);
    beam_live *swap = bs->live;
    bs->live = bs->next_live;
    bs->next_live = swap;
    bs->n_live = n_next;
    bs->t++;
    bs->done = search_is_over(bs);
    if (bs->done) close_live(bs); /* nothing will run again: give the KV blocks back */
    return !bs->done;
}

/* ---- results ----------------------------------------------------------------- */

void beam_finish(beam_search *bs, beam_output *out) {
    memset(out, 0, sizeof *out);
    out->n_best = bs->n_finished < bs->opt.num_return ? bs->n_finished : bs->opt.num_return;
    out->best = sp_xcalloc((size_t)(out->n_best ? out->n_best : 1), sizeof *out->best, "beam results");
    for (int i = 0; i < out->n_best; i++) {
        out->best[i] = bs->finished[i];
        out->best[i].tokens = sp_xcalloc((size_t)bs->finished[i].n, sizeof(int), "beam result tokens");
        memcpy(out->best[i].tokens, bs->finished[i].tokens, (size_t)bs->finished[i].n * sizeof(int));
    }
    out->acc = bs->acc;
    out->acc.committed = out->n_best ? out->best[0].n : 0;
    out->acc.decode_s = now_s() - bs->t_start - out->acc.ttft_s;
    out->stats = bs->stats;
}

int beam_run(decode_target *t, const int *prompt, int n_prompt, const beam_options *o, beam_output *out,
             sp_error *err) {
    memset(out, 0, sizeof *out);
    beam_search bs;
    if (beam_begin(&bs, t, prompt, n_prompt, o, err)) return -1;
    while (beam_step(&bs)) {
    }
    if (bs.failed) {
        *err = bs.err;
        beam_free(&bs);
        return -1;
    }
    beam_finish(&bs, out);
    beam_free(&bs);
    return 0;
}

void beam_output_free(beam_output *out) {
    for (int i = 0; i < out->n_best; i++) free(out->best[i].tokens);
    free(out->best);
    memset(out, 0, sizeof *out);
}

void beam_print(const beam_output *out, const beam_options *o, FILE *f) {
    fprintf(f, "beam search: %d beams, length penalty %g, early stopping %s, %d returned\n", o->num_beams,
            o->length_penalty, beam_early_stopping_name(o->early_stopping), out->n_best);
    for (int i = 0; i < out->n_best; i++) {
        const beam_hypothesis *h = &out->best[i];
        fprintf(f, "#%d score %.6f (sum log p %.6f over %d tokens%s):", i + 1, h->score, h->sum_logprobs, h->n,
                h->ended_by_eos ? ", ended by EOS" : "");
        for (int t = 0; t < h->n; t++) fprintf(f, " %d", h->tokens[t]);
        fprintf(f, "\n");
    }
    accounting_print(&out->acc, f);
    const beam_stats *s = &out->stats;
    fprintf(f, "%ld positions evaluated over %ld passes (peak %d live beams)\n", s->beam_forwards,
            out->acc.target_passes, s->peak_live_beams);
    fprintf(f, "KV blocks at the peak: %d shared vs %d unshared (%.4g bytes each), %ld copied on write\n",
            s->kv_blocks_peak, s->kv_blocks_unshared_peak, (double)s->kv_block_bytes, s->kv_block_copies);
    fprintf(f, "DeltaNet state %.4g bytes per beam, copied %ld times\n", (double)s->deltanet_bytes_per_beam,
            s->deltanet_copies);
}

static void print_double(FILE *f, double x) {
    if (isfinite(x))
        fprintf(f, "%.17g", x);
    else
        fprintf(f, "null"); /* JSON has no infinities: a hypothesis of log-probability −inf */
}

void beam_print_json(const beam_output *out, const beam_options *o, const int *prompt, int n_prompt, FILE *f,
                     beam_json_hook hook, void *user) {
    fprintf(f, "{\"prompt_tokens\": [");
    for (int i = 0; i < n_prompt; i++) fprintf(f, "%s%d", i ? ", " : "", prompt[i]);
    fprintf(f, "], \"beams\": %d, \"length_penalty\": %.9g, \"early_stopping\": \"%s\", \"hypotheses\": [",
            o->num_beams, o->length_penalty, beam_early_stopping_name(o->early_stopping));
    for (int i = 0; i < out->n_best; i++) {
        const beam_hypothesis *h = &out->best[i];
        fprintf(f, "%s{\"tokens\": [", i ? ", " : "");
        for (int t = 0; t < h->n; t++) fprintf(f, "%s%d", t ? ", " : "", h->tokens[t]);
        fprintf(f, "], \"score\": ");
        print_double(f, h->score);
        fprintf(f, ", \"sum_logprobs\": ");
        print_double(f, h->sum_logprobs);
        fprintf(f, ", \"length\": %d, \"ended_by_eos\": %s", h->n, h->ended_by_eos ? "true" : "false");
        if (hook) hook(f, h, user);
        fprintf(f, "}");
    }
    fprintf(f, "], \"tokens\": [");
    for (int t = 0; out->n_best && t < out->best[0].n; t++) fprintf(f, "%s%d", t ? ", " : "", out->best[0].tokens[t]);
    fprintf(f, "], \"accounting\": ");
    accounting_print_json(&out->acc, f);
    const beam_stats *s = &out->stats;
    fprintf(f,
            ", \"beam\": {\"positions_evaluated\": %ld, \"peak_live_beams\": %d, \"kv_blocks_peak\": %d, "
            "\"kv_blocks_unshared_peak\": %d, \"kv_block_bytes\": %zu, \"kv_block_copies\": %ld, "
            "\"deltanet_bytes_per_beam\": %zu, \"deltanet_copies\": %ld}}\n",
            s->beam_forwards, s->peak_live_beams, s->kv_blocks_peak, s->kv_blocks_unshared_peak, s->kv_block_bytes,
            s->kv_block_copies, s->deltanet_bytes_per_beam, s->deltanet_copies);
}
