/* stepper.h — the proposer's model (a draft model or the target's MTP module) as the draft and MTP proposers
 * see it: one sequence, run a few positions at a time, with marks to return to after a rejection. The reference
 * and the engine both implement it. */
#ifndef SPECULA_STEPPER_H
#define SPECULA_STEPPER_H

#include "error.h"

#define STEPPER_MAX_MARKS 40 /* k + 2 for the longest chain a proposer drafts (k ≤ 32) */

typedef struct stepper stepper;
struct stepper {
    const char *name;      /* "draft model", "MTP module" */
    const char *path;      /* its checkpoint directory, for messages */
    int V, D;              /* vocabulary and hidden size */
    int reads_hidden;      /* 1: every position reads h[D] (the MTP module) */
    double bytes_per_step; /* weight bytes one step reads, at the stored dtype */

    /* Consumes tokens[0..n) (n ≥ 1) at the next positions, with h[n, D] when reads_hidden (the target's hidden
     * states, or the module's own output when chained). Writes the logits [V] and output hidden state [D] of the
     * last position when not NULL. */
    int (*step)(stepper *s, const int *tokens, const float *h, int n, float *logits, float *hidden, sp_error *err);
    int (*position)(const stepper *s);
    /* mark remembers the current state; rewind returns to it, dropping every position consumed since (what a
     * rejected draft needs). An engine keeps marks as state slots, so a rewind copies nothing. */
    void (*mark)(stepper *s, int mark);   /* mark < STEPPER_MAX_MARKS */
    void (*rewind)(stepper *s, int mark); /* a mark set since the last reset */
    void (*reset)(stepper *s);            /* position 0, every mark forgotten */
    void (*release)(stepper *s);
    void *impl;
};

#endif
