/* team.c — cpu_team_run and cpu_team_hold (team.h): OpenMP regions for the
 * threads, two C11 atomic counters for the handoffs of a held team. */
#include "team.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

/* A held team: the work of the current handoff, which the waiting threads read after seeing `generation` move
 * (release/acquire on it orders the fields before it), and the count of threads done with it. */
typedef struct {
    int threads; /* the team's size */
    cpu_team_work *work;
    void *ctx;
    int work_threads; /* the threads the current work is split for: ≤ threads */
    int stop;
    unsigned spins; /* a wait's checks before it yields */
    atomic_uint generation;
    atomic_int done;
} held_team;

/* The team the calling thread holds, if any (the host calls the backend from one thread). */
static _Thread_local held_team *held;

/* A wait checks its counter up to this many times, a pause apart, then yields before each further check: a thread
 * that yields sooner may give its core away between two handoffs on a busy machine. With more threads than
 * processors a spinning thread takes the time of the one it waits for, so there every wait yields at once
 * (docs/performance.md). */
#define SPINS_BEFORE_YIELD 2000

static inline void wait_a_little(unsigned *spins, unsigned budget) {
    if (*spins < budget) {
        ++*spins;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

static void handoff(held_team *h, int T, cpu_team_work *work, void *ctx) {
    h->work = work;
    h->ctx = ctx;
    h->work_threads = T < h->threads ? T : h->threads;
    atomic_store_explicit(&h->done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->generation, 1, memory_order_release);
    work(ctx, 0, h->work_threads);
    unsigned spins = 0;
    while (atomic_load_explicit(&h->done, memory_order_acquire) < h->threads - 1) wait_a_little(&spins, h->spins);
}

void cpu_team_run(int T, cpu_team_work *work, void *ctx) {
    if (T > 1 && held) {
        handoff(held, T, work, ctx);
        return;
    }
#ifdef _OPENMP
    if (T > 1) {
#pragma omp parallel num_threads(T)
        work(ctx, omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    work(ctx, 0, 1); /* one thread's work: no handoff, no region */
}

/* A waiting thread of a held team: each new generation, its share of the work (if the work is split for that
 * many threads), then counted done; until the holder stops the team. */
static void wait_for_work(held_team *h, int t) {
    unsigned seen = 0;
    for (;;) {
        unsigned g, spins = 0;
        while ((g = atomic_load_explicit(&h->generation, memory_order_acquire)) == seen)
            wait_a_little(&spins, h->spins);
        seen = g;
        if (h->stop) return;
        if (t < h->work_threads) h->work(h->ctx, t, h->work_threads);
        atomic_fetch_add_explicit(&h->done, 1, memory_order_release);
    }
}

void cpu_team_hold(int T, void (*body)(void *), void *ctx) {
#ifdef _OPENMP
    if (T > 1 && !held) {
        held_team h = {.threads = T};
        atomic_init(&h.generation, 0);
        atomic_init(&h.done, 0);
#pragma omp parallel num_threads(T)
        {
            const int t = omp_get_thread_num();
            if (t == 0) {
                h.threads = omp_get_num_threads(); /* fewer than T when OpenMP gives fewer */
                h.spins = h.threads > omp_get_num_procs() ? 0 : SPINS_BEFORE_YIELD;
                held = h.threads > 1 ? &h : NULL;
            }
#pragma omp barrier
            if (t == 0) {
                body(ctx);
                held = NULL;
                if (h.threads > 1) {
                    h.stop = 1;
                    atomic_fetch_add_explicit(&h.generation, 1, memory_order_release);
                }
            } else {
                wait_for_work(&h, t);
            }
        }
        return;
    }
#endif
    (void)T;
    body(ctx);
}
