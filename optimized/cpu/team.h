/* team.h — how the CPU backend splits work across threads. Outside a held team each cpu_team_run is an OpenMP
 * region of its own. cpu_team_hold keeps one team for a whole pass and hands each piece of work to its waiting
 * threads through two shared counters, which is much cheaper than a region per op (docs/performance.md). */
#ifndef SPECULA_CPU_TEAM_H
#define SPECULA_CPU_TEAM_H

/* Thread t of T (0 ≤ t < T) does its share of the work described by ctx. */
typedef void cpu_team_work(void *ctx, int t, int T);

/* work on T threads (on the caller alone, entering no OpenMP region, when T ≤ 1 or OpenMP is absent; on at
 * most the held team's threads inside cpu_team_hold). T is the count the work is split for: work sees the
 * count that actually runs it. Returns when every share is done. */
void cpu_team_run(int T, cpu_team_work *work, void *ctx);

/* body(ctx) on the calling thread while T − 1 more threads wait for its cpu_team_run calls. A held team is meant
 * for one pass, so a waiting thread spins before it yields (team.c, SPINS_BEFORE_YIELD). Only the calling thread
 * may call cpu_team_run inside body. T ≤ 1, or a hold inside a hold: body runs as it is. */
void cpu_team_hold(int T, void (*body)(void *), void *ctx);

#endif
