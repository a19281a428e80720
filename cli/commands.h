/* commands.h — the subcommands of the `specula` binary. Each takes the
 * arguments after its name and returns the process exit status below. */
#ifndef SPECULA_CLI_COMMANDS_H
#define SPECULA_CLI_COMMANDS_H

/* One rule for every command (docs/reliability.md, "Bad inputs"): a
 * script tells "fix what you gave" (2) from "the run went wrong" (1). */
enum {
    EXIT_DONE = 0,       /* the run did what was asked */
    EXIT_RUN_FAILED = 1, /* the inputs were accepted, then the run failed: a write, a check, the machine */
    EXIT_BAD_INPUT = 2,  /* the command line, or a file or folder it names (or the model's own files), is wrong:
                          * nothing was decoded or written */
};

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} cli_command;

/* The table, terminated by a NULL name (cli/main.c). */
extern const cli_command cli_commands[];

#endif
