/* specula.h — the plug-in interface: a proposer in a shared library that every specula command runs with
 * `--method plugin:PATH[:ARGS]`. Self-contained C99: a plug-in includes this header and links against nothing
 * of specula; the host hands it every service it needs. Worked example: examples/bigram/, docs/extending.md. */
#ifndef SPECULA_PLUGIN_H
#define SPECULA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface. A host loads a plug-in whose `abi` equals its own and refuses any other. */
#define SPECULA_PLUGIN_ABI 1

/* How a proposer chooses the children of a node, which decides the exact rule the host applies. */
typedef enum {
    SPECULA_CHILDREN_IID = 0,            /* drawn independently from the node's q (a chain: one child) */
    SPECULA_CHILDREN_WITHOUT_REPLACEMENT /* drawn from q without replacement */
} specula_children;

/* What a proposer is created with, for one run. */
typedef struct {
    uint32_t abi;     /* SPECULA_PLUGIN_ABI */
    int vocab_size;   /* V: tokens are 0 .. V - 1 */
    int max_depth;    /* --k: the deepest draft a round may hold */
    int max_nodes;    /* nodes a round's tree may hold under its root */
    const char *args; /* ARGS of plugin:PATH:ARGS, "" when none */
} specula_config;

/* One round as the host asks for it. The tree's root is the pending token: the last committed token, which the
 * target has not run yet. Nodes are numbered in the order they are added, the root 0. */
typedef struct {
    int root_token;
    int root_position; /* the root's position in the sequence */
    int max_depth;     /* the deepest draft this round may add: --k, or less near the end of the token budget */
    uint64_t round;    /* the round's number in the run */
    void *host;        /* the host's; a plug-in passes it back untouched */
} specula_round;

/* The host's services, valid during one propose call. */
typedef struct {
    /* The q row of node `node` ([V], to be filled): the distribution its children are drawn from. Every node that
     * gets children must have its row filled before the first child is added. */
    float *(*q_row)(specula_round *r, int node);
    /* Adds a child of `parent` carrying `token`; returns the child's index, or −1 when the tree is full. */
    int (*add)(specula_round *r, int parent, int token);
    /* A draw from q[V] for child `child` (0, 1, …) of a node at depth `depth` − 1, at the run's own random site
     * for it: the token, or −1 when q is all zero. The exact rule holds only for drafts drawn from the q they
     * report; drawing here also makes every run replayable from its seed. */
    int (*draw)(const specula_round *r, const float *q, int depth, int child);
    /* The run's processed distribution (temperature and cuts) of logits[V], into q[V]: for a proposer that scores
     * tokens and wants them processed as the target's are. */
    void (*probs)(const specula_round *r, const float *logits, float *q);
} specula_host;

/* The proposer a plug-in exports. Every call but create gets the pointer create returned. On failure a call returns
 * −1 (create: NULL) with a one-line message in err[errlen]. */
typedef struct {
    uint32_t abi;              /* SPECULA_PLUGIN_ABI */
    const char *name;          /* a short name for labels and tables, e.g. "bigram" */
    specula_children children; /* how its trees' children are chosen */
    void *(*create)(const specula_config *config, char *err, size_t errlen);
    /* Adds this round's drafts under the root (none is a valid answer). */
    int (*propose)(void *self, specula_round *round, const specula_host *host, char *err, size_t errlen);
    /* The target has consumed path[0..len) and next_token follows, not yet consumed. Also called once after the
     * prompt, with the prompt minus its last token. */
    int (*commit)(void *self, const int *path, int len, int next_token, char *err, size_t errlen);
    void (*destroy)(void *self);
} specula_proposer;

/* The one symbol a plug-in exports. */
#define SPECULA_PLUGIN_SYMBOL "specula_plugin"
const specula_proposer *specula_plugin(void);

#ifdef __cplusplus
}
#endif

#endif
