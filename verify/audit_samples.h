/* audit_samples.h — the sample file between an engine adapter and the audit (docs/audit.md): one sample per
 * line, its L token ids in decimal separated by spaces or commas. Blank lines and lines starting with '#' are
 * skipped. Any program that writes such lines is an adapter. */
#ifndef SPECULA_AUDIT_SAMPLES_H
#define SPECULA_AUDIT_SAMPLES_H

#include <stdio.h>

#include "error.h"

typedef struct {
    int n, L;    /* samples, tokens each */
    int *tokens; /* [n, L] */
    int cap;     /* samples allocated */
} audit_samples;

/* An empty set of samples of L tokens (L ≥ 1). */
void audit_samples_init(audit_samples *s, int L);
void audit_samples_free(audit_samples *s);
/* Appends one sample of s->L tokens. */
int audit_samples_add(audit_samples *s, const int *tokens, sp_error *err);

/* Reads every sample line of f (named `what` in messages) into s, which
 * must be initialised with its L; tokens must lie in [0, V). max > 0 stops
 * after max samples (the rest of f is left unread). Reading is strict: a
 * short or long line, a token outside the vocabulary or a stray character
 * is refused with its line number. */
int audit_samples_read(audit_samples *s, FILE *f, const char *what, int V, int max, sp_error *err);
/* Writes s in the format above. */
int audit_samples_write(const audit_samples *s, FILE *f, sp_error *err);

#endif
