/* outputs.h — what a command checks about the files it will write before it does any work: that none of them is
 * one of the run's inputs (medusa-train --out MODEL/model.safetensors replaced the base checkpoint, then failed to
 * load it), and that each can be created (a temporary made and removed beside it), so that a long run is not
 * lost at its end to a folder it cannot write. */
#ifndef SPECULA_CLI_OUTPUTS_H
#define SPECULA_CLI_OUTPUTS_H

/* outs[n_outs] (NULL entries skipped) against the model's files in model_dir (config.json, tokenizer.json, the
 * safetensors file or the index and its shards) and inputs[n_inputs] (NULL entries skipped): 0 when all is well,
 * else one line on stderr, "specula COMMAND: ...", and -1. */
int outputs_check(const char *command, const char *const *outs, int n_outs, const char *model_dir,
                  const char *const *inputs, int n_inputs);

#endif
