/* main.c — `specula COMMAND [options]`: dispatch to the subcommands listed
 * in the table below. Every subcommand answers --help. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

int cmd_info(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_medusa_train(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_gate(int argc, char **argv);

const cli_command cli_commands[] = {
    {"generate", "generate text with greedy, sampled, beam, speculative, Medusa or MTP decoding", cmd_generate},
    {"bench", "median decode tokens/s and weight-read bandwidth, per method", cmd_bench},
    {"plot", "plots of tokens per pass against acceptance, measured and modelled (gnuplot)", cmd_plot},
    {"info", "config summary, parameters, bytes per token, KV and state sizes", cmd_info},
    {"logits", "print or dump the reference logits of a token sequence (and the MTP's)", cmd_logits},
    {"medusa-train", "train Medusa heads by self-distillation against a frozen target", cmd_medusa_train},
    {"verify", "test statistically that every method emits the target's distribution", cmd_verify},
    {"audit", "test statistically that an engine with speculation on samples the target's law", cmd_audit},
    {"gate", "correctness before speed: a configuration's frozen canaries, law and acceptance, PASS/FAIL", cmd_gate},
    {NULL, NULL, NULL},
};

static void usage(FILE *f) {
    fprintf(f, "usage: specula COMMAND [options]\n"
               "Decoding methods that get more than one token out of each pass of a\n"
               "qwen3_5 model, in a readable reference and an optimized engine.\n\ncommands:\n");
    for (const cli_command *c = cli_commands; c->name; c++) fprintf(f, "  %-13s %s\n", c->name, c->summary);
    fprintf(f, "\n`specula COMMAND --help` describes each command's options.\n");
}

/* The command's output is what a script reads: a write that failed (a full disk, a closed pipe's reader gone
 * is SIGPIPE's) must not end in exit 0. stdout is buffered, so the failure may show only now, at the flush. */
static int close_stdout(const char *command, int status) {
    errno = 0;
    const int failed = ferror(stdout) | (fclose(stdout) != 0);
    if (!failed) return status;
    fprintf(stderr, "specula %s: cannot write the output: %s\n", command, errno ? strerror(errno) : "a write failed");
    return status == EXIT_DONE ? EXIT_RUN_FAILED : status;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const cli_command *c = cli_commands; c->name; c++)
        if (!strcmp(argv[1], c->name)) return close_stdout(c->name, c->run(argc - 1, argv + 1));
    /* one line, as for every bad input; the list is one command away */
    fprintf(stderr, "specula: unknown command '%s'; `specula --help` lists the commands\n", argv[1]);
    return 2;
}
