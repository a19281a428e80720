/* audit_exec.h — an audit arm drawn by an external program: the adapter for any engine that is not specula's
 * (tools/audit/ has ones for transformers and OpenAI-compatible servers). */
#ifndef SPECULA_CLI_AUDIT_EXEC_H
#define SPECULA_CLI_AUDIT_EXEC_H

#include <stdint.h>

#include "audit_samples.h"
#include "sampler.h"

/* Runs the program through /bin/sh as
 *   CMD --arm on|off|control --n N --length L --temperature T --top-k K
 *       --top-p P --min-p P --seed S --prompt-ids ID,ID,...
 * It must print N lines of L token ids (audit_samples.h), sample i drawn with seed S + i; its stderr passes
 * through. A program that exits with a non-zero status or prints fewer lines is an error, never a short
 * sample. */
int audit_exec_draw(const char *cmd, const char *arm, int n, const sampler_params *sp, uint64_t seed_base,
                    const int *prompt, int n_prompt, int V, audit_samples *out, sp_error *err);

#endif
