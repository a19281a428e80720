/* target_stepper.c — a target as a draft model's stepper (see target_stepper.h). */
#include "target_stepper.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    decode_target *t;
    int seq;
    int marks[STEPPER_MAX_MARKS]; /* forked sequences, −1 where no mark is set */
    float *logits, *hidden;       /* [rows, V], [rows, D]: a step's rows, the last one returned */
    int rows;
} ts_impl;

static int ts_step(stepper *st, const int *tokens, const float *h, int n, float *logits, float *hidden, sp_error *err) {
    ts_impl *s = st->impl;
    (void)h;
    if (n < 1) return sp_fail(err, "%s step: no tokens", st->name);
    if (n > s->rows) {
        s->rows = n;
        s->logits = sp_xrealloc(s->logits, (size_t)n * st->V, sizeof(float), "draft step logits");
        s->hidden = sp_xrealloc(s->hidden, (size_t)n * st->D, sizeof(float), "draft step hidden states");
    }
    if (s->t->prefill(s->t, s->seq, tokens, n, logits ? s->logits : NULL, hidden ? s->hidden : NULL, err)) return -1;
    if (logits) memcpy(logits, s->logits + (size_t)(n - 1) * st->V, (size_t)st->V * sizeof(float));
    if (hidden) memcpy(hidden, s->hidden + (size_t)(n - 1) * st->D, (size_t)st->D * sizeof(float));
    return 0;
}

static int ts_position(const stepper *st) {
    const ts_impl *s = st->impl;
    return s->t->position(s->t, s->seq);
}

static void ts_mark(stepper *st, int mark) {
    ts_impl *s = st->impl;
    if (s->marks[mark] >= 0) s->t->seq_close(s->t, s->marks[mark]);
    s->marks[mark] = s->t->seq_fork(s->t, s->seq, NULL);
}

static void ts_rewind(stepper *st, int mark) {
    ts_impl *s = st->impl;
    s->t->seq_close(s->t, s->seq);
    s->seq = s->t->seq_fork(s->t, s->marks[mark], NULL);
}

static void close_all(ts_impl *s) {
    for (int i = 0; i < STEPPER_MAX_MARKS; i++)
        if (s->marks[i] >= 0) s->t->seq_close(s->t, s->marks[i]), s->marks[i] = -1;
    if (s->seq >= 0) s->t->seq_close(s->t, s->seq);
    s->seq = -1;
}

static void ts_reset(stepper *st) {
    ts_impl *s = st->impl;
    close_all(s);
    s->seq = s->t->seq_open(s->t, NULL);
}

static void ts_release(stepper *st) {
    ts_impl *s = st->impl;
    close_all(s);
    free(s->logits);
    free(s->hidden);
    free(s);
    st->impl = NULL;
}

int target_stepper_build(stepper *st, decode_target *t, sp_error *err) {
    ts_impl *s = sp_xcalloc(1, sizeof *s, "draft stepper");
    s->t = t;
    for (int i = 0; i < STEPPER_MAX_MARKS; i++) s->marks[i] = -1;
    if ((s->seq = t->seq_open(t, err)) < 0) {
        free(s);
        return -1;
    }
    memset(st, 0, sizeof *st);
    st->name = "draft model";
    st->path = t->path;
    st->V = t->cfg->vocab_size;
    st->D = t->cfg->hidden_size;
    st->reads_hidden = 0;
    st->bytes_per_step = t->weight_bytes_per_pass;
    st->step = ts_step;
    st->position = ts_position;
    st->mark = ts_mark;
    st->rewind = ts_rewind;
    st->reset = ts_reset;
    st->release = ts_release;
    st->impl = s;
    return 0;
}
