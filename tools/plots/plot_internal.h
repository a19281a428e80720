/* plot_internal.h — what the plot writers share: opening files in the
 * output folder with errors that name them, and the common head of every
 * gnuplot script (output format chosen by the variable fmt). */
#ifndef SPECULA_PLOT_INTERNAL_H
#define SPECULA_PLOT_INTERNAL_H

#include <stdio.h>

#include "atomic_file.h"
#include "plots.h"

/* dir/file opened for writing through a (a temporary renamed into place by
 * plot_close, so an interrupted run leaves the old file), or NULL with a message. */
FILE *plot_open(atomic_file *a, const char *dir, const char *file, sp_error *err);
/* Commits a; −1 with a message naming the file when any write failed. */
int plot_close(atomic_file *a, sp_error *err);

/* The first lines of NAME.gp: what it draws, the data it reads, how to run
 * it, and the terminal for fmt = png (default), svg or dumb. */
void plot_gp_head(FILE *f, const char *name, const char *what, const char *data_files, int width, int height);

/* Colours shared by the plots, so a method looks the same everywhere. */
extern const char *const plot_method_colour[PLOT_METHOD_COUNT];
extern const int plot_method_point[PLOT_METHOD_COUNT];
/* A shade of the method's colour for its rank-th temperature, darkest
 * (coldest) first; cycles after three. */
const char *plot_shade(plot_method method, int rank);

/* One writer per plot (plot_write.c, plot_curves.c, plot_costs.c, plot_batch.c). */
int plot_write_measured(const char *dir, const plot_measurements *m, sp_error *err);
int plot_write_tokens_per_pass(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err);
int plot_write_acceptance(const char *dir, const plot_measurements *m, sp_error *err);
int plot_write_speedup_k(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err);
int plot_write_bytes(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err);
/* (e): the roofline model, and beside it the measured points of m->batch when there are (m may be NULL). */
int plot_write_batch(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err);

#endif
