/* bench_batch.h — what the files of `specula bench --batch` share: the
 * speculative run of B sequences on one engine (bench_batch_mtp.c). */
#ifndef SPECULA_CLI_BENCH_BATCH_H
#define SPECULA_CLI_BENCH_BATCH_H

#include "bench.h"
#include "engine_target.h"

/* B sequences (prompts of prompt_tokens ids, sequence j's j + 1, j + 2, ...) decoded `rounds` rounds with the
 * method of spec (MTP; e's checkpoint has the module) on target t over e: each round every sequence proposes,
 * then one verify pass over all (one_pass) or one a sequence, then each accepts, commits and realigns. *tps: the
 * tokens committed per second, summed over the sequences; *tokens_per_round: committed per round, summed. */
int bench_batch_mtp_run(engine *e, decode_target *t, const method_spec *spec, int B, int rounds, int prompt_tokens,
                        int one_pass, double *tps, double *tokens_per_round, sp_error *err);

#endif
