/* lookup.h — prompt lookup (n-gram) drafting: a proposer with no model. Text with repeats (code that quotes its
 * input, a summary that copies names) often continues the way an earlier occurrence of its last few tokens did,
 * so each round proposes the tokens that followed the latest earlier occurrence of the context's suffix. */
#ifndef SPECULA_LOOKUP_H
#define SPECULA_LOOKUP_H

#include "proposer.h"

#define LOOKUP_MAX_K 32
#define LOOKUP_MAX_NGRAM 16

/* The drafts of one lookup after the context ctx[0..n): for m = max_ngram
 * down to 1 (m ≤ n − 1), the most recent earlier occurrence of the last m
 * tokens — one that ends at j ≤ n − 2, so not the suffix itself; the first
 * m that has one wins. The drafts are the tokens after it, copied forward:
 * drafts[i] = ctx[j + 1 + i], and where that runs past the end of ctx the
 * copy goes on from the drafts already written (drafts[i] = drafts[j + 1 + i
 * − n]), as an LZ77 copy does, so a repeating pattern yields k drafts.
 * Returns k when some suffix recurs, 0 when none does (or n < 2). */
int lookup_find(const int *ctx, int n, int max_ngram, int k, int *drafts);

/* A lookup proposer for a target of vocabulary V: k drafts a round (when
 * a suffix recurs) from n-grams of at most max_ngram tokens, searched in the
 * prompt and the tokens generated so far. Fails with a clear message when k
 * or max_ngram is out of range. Each draft has a point-mass q (q = 1 at the
 * draft), so the exact rule accepts a draft x with probability
 * min(1, p(x)/1) = p(x) and, on a rejection, draws the correction from
 * norm(max(0, p − q)) = p without x: the output law is the target's whatever
 * the lookup proposes. */
int lookup_proposer_build(proposer *p, int V, int k, int max_ngram, sp_error *err);

#endif
