/* plugin_method.c — a proposer from a shared library as a method of the registry: --method plugin:PATH[:ARGS]
 * loads PATH, checks its interface version (specula.h) and puts it behind the proposer contract, the host's
 * services (q rows, children, draws at the run's own sites, the processed distribution) over the round's tree. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "registry.h"
#include "specula.h"

/* Trees up to this many nodes a draft of depth: chains, and some room for a plug-in's trees. */
#define PLUGIN_NODES_PER_DEPTH 8
#define PLUGIN_MAX_NODES 64

int plugin_spec_set(method_spec *s, const char *flag, const char *text, sp_error *err) {
    const char *colon = strchr(text, ':');
    const size_t path_len = colon ? (size_t)(colon - text) : strlen(text);
    if (path_len == 0) return sp_fail(err, "%s plugin:PATH[:ARGS]: the path is empty", flag);
    if (path_len >= sizeof s->plugin_path) return sp_fail(err, "%s plugin:PATH: the path is too long", flag);
    if (colon && strlen(colon + 1) >= sizeof s->plugin_args)
        return sp_fail(err, "%s plugin:PATH:ARGS: the arguments are longer than %zu bytes", flag,
                       sizeof s->plugin_args - 1);
    memcpy(s->plugin_path, text, path_len);
    s->plugin_path[path_len] = 0;
    snprintf(s->plugin_args, sizeof s->plugin_args, "%s", colon ? colon + 1 : "");
    s->method = &plugin_method;
    return 0;
}

typedef struct {
    void *library;
    const specula_proposer *api;
    void *self;
    int V, k;
    char path[METHOD_PLUGIN_MAX_PATH];
} plugin_impl;

/* The round as the host services see it: the tree being built and the call that asked for it. */
typedef struct {
    token_tree *tree;
    const propose_call *call;
    int V;
    const char *bad;                           /* the first misuse of a service, reported after the call */
    unsigned char asked[PLUGIN_MAX_NODES + 1]; /* 1: node i's q row was handed out (so it was written) */
} host_round;

static float *host_q_row(specula_round *r, int node) {
    host_round *h = r->host;
    if (node < 0 || node >= h->tree->n) {
        if (!h->bad) h->bad = "asked for the q row of a node that does not exist";
        return NULL;
    }
    h->asked[node] = 1;
    return tree_q(h->tree, node);
}

static int host_add(specula_round *r, int parent, int token) {
    host_round *h = r->host;
    if (parent < 0 || parent >= h->tree->n || token < 0 || token >= h->V) {
        if (!h->bad) h->bad = "added a child under a node that does not exist, or a token outside the vocabulary";
        return -1;
    }
    if (h->tree->depth[parent] + 1 > r->max_depth) return -1; /* past the round's depth: refused */
    return tree_add(h->tree, parent, token);
}

static int host_draw(const specula_round *r, const float *q, int depth, int child) {
    const host_round *h = r->host;
    const propose_call *c = h->call;
    const rng_site site = {c->seed, RNG_DRAFT, accept_draw_index(c->round, c->root_position + depth, child)};
    return sampler_sample(q, h->V, site);
}

static void host_probs(const specula_round *r, const float *logits, float *q) {
    const host_round *h = r->host;
    sampler_probs(h->call->sampling, logits, q, h->V);
}

/* Every node with children reports a distribution that gives each of them a chance: the exact rule divides by
 * q of the drafted token. */
static int check_tree(const plugin_impl *s, const host_round *h, sp_error *err) {
    const token_tree *t = h->tree;
    for (int u = 1; u < t->n; u++) {
        if (!h->asked[t->parent[u]])
            return sp_fail(err, "plug-in %s: node %d has children but its q row was never filled", s->api->name,
                           t->parent[u]);
        const float *q = tree_q_const(t, t->parent[u]);
        if (!(q[t->token[u]] > 0))
            return sp_fail(err, "plug-in %s: node %d carries token %d, which its parent's q row gives no chance",
                           s->api->name, u, t->token[u]);
    }
    for (int u = 0; u < t->n; u++) {
        int has_child = 0;
        for (int v = u + 1; v < t->n && !has_child; v++) has_child = t->parent[v] == u;
        if (!has_child) continue;
        const float *q = tree_q_const(t, u);
        double sum = 0;
        for (int x = 0; x < s->V; x++) {
            if (!(q[x] >= 0) || !isfinite(q[x]))
                return sp_fail(err, "plug-in %s: the q row of node %d has a negative or non-finite entry", s->api->name,
                               u);
            sum += q[x];
        }
        if (fabs(sum - 1) > 1e-3)
            return sp_fail(err, "plug-in %s: the q row of node %d sums to %g, not 1", s->api->name, u, sum);
    }
    return 0;
}

static int plugin_method_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    plugin_impl *s = self->impl;
    host_round h = {tree, call, s->V, NULL, {0}};
    const int max_depth = s->k < call->max_depth ? s->k : call->max_depth; /* --k, or the token budget's */
    specula_round round = {tree->token[0], call->root_position, max_depth, call->round, &h};
    const specula_host host = {host_q_row, host_add, host_draw, host_probs};
    char msg[256] = "";
    self->steps++;
    if (s->api->propose(s->self, &round, &host, msg, sizeof msg))
        return sp_fail(err, "plug-in %s: %s", s->api->name, msg[0] ? msg : "propose failed");
    if (h.bad) return sp_fail(err, "plug-in %s: %s", s->api->name, h.bad);
    return check_tree(s, &h, err);
}

static int plugin_method_commit(proposer *self, const int *path, const float *hidden, int len, int next_token,
                                sp_error *err) {
    plugin_impl *s = self->impl;
    (void)hidden;
    char msg[256] = "";
    if (s->api->commit(s->self, path, len, next_token, msg, sizeof msg))
        return sp_fail(err, "plug-in %s: %s", s->api->name, msg[0] ? msg : "commit failed");
    return 0;
}

static void plugin_method_release(proposer *self) {
    plugin_impl *s = self->impl;
    if (s->self) s->api->destroy(s->self);
    dlclose(s->library);
    free(s);
    self->impl = NULL;
}

/* The library's proposer, or a message: it loads, exports specula_plugin, and speaks this host's version. */
static const specula_proposer *load(void **library, const char *path, sp_error *err) {
    if (!(*library = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return sp_fail(err, "--method plugin:%s: cannot load it: %s", path, dlerror()), NULL;
    const specula_proposer *(*entry)(void) = NULL;
    *(void **)&entry = dlsym(*library, SPECULA_PLUGIN_SYMBOL); /* (a data pointer to a function: as POSIX says) */
    const specula_proposer *api = entry ? entry() : NULL;
    const char *why = !entry                           ? "it exports no " SPECULA_PLUGIN_SYMBOL "()"
                      : !api                           ? SPECULA_PLUGIN_SYMBOL "() returned NULL"
                      : api->abi != SPECULA_PLUGIN_ABI ? "it was built for another version of specula.h"
                      : !api->create || !api->propose || !api->commit || !api->destroy || !api->name
                          ? "its proposer lacks a name or a function"
                          : NULL;
    if (why) {
        if (api && api->abi != SPECULA_PLUGIN_ABI)
            sp_fail(err, "--method plugin:%s: %s (its interface version %u, this host's %d)", path, why, api->abi,
                    SPECULA_PLUGIN_ABI);
        else
            sp_fail(err, "--method plugin:%s: %s", path, why);
        dlclose(*library);
        return NULL;
    }
    return api;
}

/* The proposer's name as the accounting keeps it: a run's output outlives the library the name lives in, so names
 * are copied here, each once, for the life of the process. */
#define PLUGIN_NAMES 16
static const char *kept_name(const char *name) {
    static char names[PLUGIN_NAMES][32];
    static int n;
    for (int i = 0; i < n; i++)
        if (!strncmp(names[i], name, sizeof names[i] - 1)) return names[i];
    if (n == PLUGIN_NAMES) return "plugin";
    snprintf(names[n], sizeof names[n], "%s", name);
    return names[n++];
}

static int plugin_method_build(proposer *p, method_spec *s, const method_parts *parts, sp_error *err) {
    void *library;
    const specula_proposer *api = load(&library, s->plugin_path, err);
    if (!api) return -1;
    const int V = parts->target->cfg->vocab_size;
    int nodes = s->k * PLUGIN_NODES_PER_DEPTH;
    if (nodes > PLUGIN_MAX_NODES) nodes = PLUGIN_MAX_NODES;
    if (nodes > parts->target->max_tree_nodes - 1) nodes = parts->target->max_tree_nodes - 1;
    const specula_config config = {SPECULA_PLUGIN_ABI, V, s->k, nodes, s->plugin_args};
    char msg[256] = "";
    void *self = api->create(&config, msg, sizeof msg);
    if (!self) { /* the message first: the name lives in the library */
        sp_fail(err, "plug-in %s (%s): %s", api->name, s->plugin_path, msg[0] ? msg : "create failed");
        dlclose(library);
        return -1;
    }
    plugin_impl *impl = sp_xcalloc(1, sizeof *impl, "plug-in proposer");
    *impl = (plugin_impl){library, api, self, V, s->k, ""};
    snprintf(impl->path, sizeof impl->path, "%s", s->plugin_path);
    memset(p, 0, sizeof *p);
    p->name = kept_name(api->name);
    p->depth = s->k;
    p->tree_capacity = nodes;
    p->kind = api->children == SPECULA_CHILDREN_WITHOUT_REPLACEMENT ? CHILDREN_NO_REPLACEMENT : CHILDREN_IID;
    p->bytes_per_step = 0; /* what a plug-in reads is its own business: the accounting counts the target's */
    p->propose = plugin_method_propose;
    p->commit = plugin_method_commit;
    p->release = plugin_method_release;
    p->impl = impl;
    return 0;
}

/* The library is loaded and checked once when the flags are read, so that a command refuses a plug-in that will
 * not load before it loads any model. */
static int plugin_method_finish(method_spec *s, int strict, sp_error *err) {
    (void)strict;
    void *library;
    if (!load(&library, s->plugin_path, err)) return -1;
    dlclose(library);
    return 0;
}

static void plugin_method_label(const method_spec *s, char *buf, size_t size) {
    const char *base = strrchr(s->plugin_path, '/');
    snprintf(buf, size, "plugin %s k=%d%s%s", base ? base + 1 : s->plugin_path, s->k,
             s->plugin_args[0] ? ", args " : "", s->plugin_args);
}

const method_desc plugin_method = {
    .name = "plugin",
    .summary = "a proposer from a shared library (specula.h): --method plugin:PATH[:ARGS]",
    .traits = METHOD_PROPOSES | METHOD_CHAIN | METHOD_MAY_IDLE | METHOD_PLUGIN | METHOD_SAMPLED_DRAFTS,
    .build = plugin_method_build,
    .finish = plugin_method_finish,
    .label = plugin_method_label,
};
