/* medusa_cli.c — the Medusa options of `specula generate` (see medusa_cli.h). */
#include "medusa_cli.h"

#include <string.h>

#include "args.h"

static const char *const rule_names[] = {"exact", "exact-norepl", "typical", "greedy"};
enum { R_EXACT, R_EXACT_NOREPL, R_TYPICAL, R_GREEDY, R_COUNT };

void medusa_cli_init(medusa_cli *m) {
    memset(m, 0, sizeof *m);
    m->rule = -1;
}

void medusa_cli_usage(FILE *f) {
    fprintf(f, "Medusa (--method medusa):\n"
               "  --medusa FILE        heads file (default MODEL-medusa/medusa_heads.safetensors)\n"
               "  --tree FILE          candidate tree as JSON rank paths, e.g. [[0],[1],[0,0]] (default: built-in,\n"
               "                       63 nodes over 4 heads)\n"
               "  --rule NAME          exact | exact-norepl | typical | greedy (default: greedy at temperature 0,\n"
               "                       else exact-norepl). exact: children drawn i.i.d. from each head's q;\n"
               "                       exact-norepl: drawn without replacement; typical/greedy: top-ranked tokens\n"
               "  --typical-epsilon E  typical rule: p(x) > min(E, D·exp(-H(p))) (default 0.09)\n"
               "  --typical-delta D    (default 0.3)\n"
               "  --medusa-ignore-base accept heads trained against another checkpoint (random test heads only)\n");
}

int medusa_cli_flag(medusa_cli *m, int argc, char **argv, int *i, int *status) {
    const char *f = argv[*i], *v;
    static const char *const flags[] = {"--medusa",          "--tree",          "--rule",
                                        "--typical-epsilon", "--typical-delta", "--medusa-ignore-base"};
    int which = -1;
    for (int k = 0; k < 6; k++)
        if (!strcmp(f, flags[k])) which = k;
    if (which < 0) return 0;
    if (!m->first_flag) m->first_flag = flags[which];
    *status = 0;
    if (which == 5) {
        m->ignore_base = 1;
        return 1;
    }
    if (!(v = arg_value(argc, argv, i))) {
        *status = 2;
        return 1;
    }
    if (which == 0) m->heads_path = v;
    if (which == 1) m->tree_path = v;
    if (which == 2) {
        m->rule = -1;
        for (int r = 0; r < R_COUNT; r++)
            if (!strcmp(v, rule_names[r])) m->rule = r;
        if (m->rule < 0) {
            fprintf(stderr, "specula generate: --rule '%s': expected exact, exact-norepl, typical or greedy\n", v);
            *status = 2;
        }
    }
    if (which == 3 && (m->epsilon_given = 1, arg_float(f, v, 0, 1, &m->epsilon))) *status = 2;
    if (which == 4 && (m->delta_given = 1, arg_float(f, v, 0, 1e6, &m->delta))) *status = 2;
    return 1;
}

int medusa_cli_finish(medusa_cli *m, int method_is_medusa, decode_options *opt) {
    if (!method_is_medusa) {
        if (m->first_flag) {
            fprintf(stderr, "specula generate: %s only applies to --method medusa\n", m->first_flag);
            return 2;
        }
        return 0;
    }
    const float t = opt->sampling.temperature;
    if (m->rule < 0) m->rule = t == 0 ? R_GREEDY : R_EXACT_NOREPL;
    if (m->rule == R_GREEDY && t != 0) {
        fprintf(stderr,
                "specula generate: --rule greedy decodes at temperature 0 (give --temperature 0), or use "
                "--rule exact, exact-norepl or typical to sample at temperature %g\n",
                t);
        return 2;
    }
    if ((m->epsilon_given || m->delta_given) && m->rule != R_TYPICAL) {
        fprintf(stderr, "specula generate: --typical-epsilon and --typical-delta only apply to --rule typical\n");
        return 2;
    }
    opt->rule = m->rule == R_TYPICAL ? RULE_TYPICAL : m->rule == R_GREEDY ? RULE_GREEDY : RULE_EXACT;
    m->kind = m->rule == R_EXACT          ? CHILDREN_IID
              : m->rule == R_EXACT_NOREPL ? CHILDREN_NO_REPLACEMENT
                                          : CHILDREN_TOP_RANKS;
    if (m->epsilon_given) opt->typical_epsilon = m->epsilon;
    if (m->delta_given) opt->typical_delta = m->delta;
    return 0;
}

int medusa_cli_build(medusa_cli *m, proposer *p, const model *target, const char *model_dir, const decode_options *opt,
                     int *depth) {
    sp_error err;
    char path[4200];
    if (m->heads_path) {
        snprintf(path, sizeof path, "%s", m->heads_path);
    } else {
        size_t n = strlen(model_dir);
        while (n > 1 && model_dir[n - 1] == '/') n--;
        snprintf(path, sizeof path, "%.*s-medusa/medusa_heads.safetensors", (int)n, model_dir);
    }
    if (medusa_load(&m->heads, path, target, m->ignore_base, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return 1;
    }
    m->loaded = 1;
    if (m->tree_path) {
        if (medusa_tree_load(&m->tree, m->tree_path, &err)) {
            fprintf(stderr, "specula generate: %s\n", err.msg);
            return 1;
        }
    } else {
        medusa_tree_default(&m->tree, m->heads.n_heads);
    }
    char origin[4300];
    snprintf(origin, sizeof origin, "tree file %s", m->tree_path ? m->tree_path : "(built-in)");
    if (medusa_tree_validate(&m->tree, m->heads.n_heads, target->cfg.vocab_size, origin, &err) ||
        medusa_proposer_build(p, &m->heads, target, &m->tree, m->kind, &opt->sampling, opt->seed, &err)) {
        fprintf(stderr, "specula generate: %s\n", err.msg);
        return 1;
    }
    *depth = m->tree.max_depth;
    return 0;
}

void medusa_cli_release(medusa_cli *m) {
    if (m->loaded) medusa_free(&m->heads);
    m->loaded = 0;
}
