/* team.h — how the CPU backend's work is split across threads. A piece of
 * work is a function each of T threads calls with its index; cpu_team_run
 * returns when all have returned. Outside a held team each call is an
 * OpenMP parallel region of its own, whose start and end cost about 1 µs
 * on a 2-core VM (docs/performance.md): a decode step of the embedded model
 * runs some 25 of them in about 150 µs. cpu_team_hold keeps the threads of
 * one region for the whole of a pass instead; the calls inside it hand
 * their work to the waiting threads through two shared counters, a few
 * hundred nanoseconds. */
#ifndef SPECULA_CPU_TEAM_H
#define SPECULA_CPU_TEAM_H

/* Thread t of T (0 ≤ t < T) does its share of the work described by ctx. */
typedef void cpu_team_work(void *ctx, int t, int T);

/* work on T threads (on the caller alone, entering no OpenMP region, when T ≤ 1 or OpenMP is absent; on at
 * most the held team's threads inside cpu_team_hold). T is the count the work is split for: work sees the
 * count that actually runs it. Returns when every share is done. */
void cpu_team_run(int T, cpu_team_work *work, void *ctx);

/* body(ctx) on the calling thread while T − 1 more threads wait for its cpu_team_run calls (spinning: the
 * held team is meant for a pass, microseconds to milliseconds; past some 30 µs, or at once where the threads
 * outnumber the processors, a waiting thread yields). Only the
 * calling thread may call cpu_team_run inside body. T ≤ 1, or a hold inside a hold: body runs as it is. */
void cpu_team_hold(int T, void (*body)(void *), void *ctx);

#endif
