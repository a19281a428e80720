/* outputs.c — see outputs.h. */
#include "outputs.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "safetensors.h"

/* The same file, whatever the names: one device and inode. */
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* An input the output would replace, or NULL. */
static const char *input_of(const char *out, const char *model_dir, const char *const *inputs, int n_inputs) {
    for (int i = 0; i < n_inputs; i++)
        if (same_file(out, inputs[i])) return inputs[i];
    if (!model_dir) return NULL;
    static char path[4200];
    const char *own[] = {"config.json", "tokenizer.json", "model.safetensors.index.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", model_dir, own[i]);
        if (same_file(out, path)) return path;
    }
    st_set st; /* the weights: model.safetensors, or every shard the index names */
    sp_error err;
    if (st_open(&st, model_dir, &err)) return NULL; /* the loader said why, before */
    const char *hit = NULL;
    for (int i = 0; i < st.n_files && !hit; i++)
        if (same_file(out, st.paths[i])) {
            snprintf(path, sizeof path, "%s", st.paths[i]);
            hit = path;
        }
    st_close(&st);
    return hit;
}

int outputs_check(const char *command, const char *const *outs, int n_outs, const char *model_dir,
                  const char *const *inputs, int n_inputs) {
    for (int i = 0; i < n_outs; i++) {
        if (!outs[i]) continue;
        const char *input = input_of(outs[i], model_dir, inputs, n_inputs);
        if (input) {
            const int alias = strcmp(input, outs[i]) != 0; /* the same file under another name: say which */
            fprintf(stderr,
                    "specula %s: %s is one of this run's inputs%s%s%s: writing it would replace it; give the "
                    "output another name\n",
                    command, outs[i], alias ? " (the same file as " : "", alias ? input : "", alias ? ")" : "");
            return -1;
        }
        atomic_file probe;
        sp_error err;
        if (atomic_open(&probe, outs[i], &err)) {
            fprintf(stderr, "specula %s: %s\n", command, err.msg);
            return -1;
        }
        atomic_abort(&probe);
    }
    return 0;
}
