/* commands.h — the subcommands of the `specula` binary. Each takes the
 * arguments after its name and returns the process exit status:
 * 0 success, 1 failure of the work itself, 2 bad usage. */
#ifndef SPECULA_CLI_COMMANDS_H
#define SPECULA_CLI_COMMANDS_H

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} cli_command;

/* The table, terminated by a NULL name (cli/main.c). */
extern const cli_command cli_commands[];

#endif
