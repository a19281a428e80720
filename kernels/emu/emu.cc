/* emu.cc — the fiber scheduler behind emu.h: one ucontext fiber per CUDA thread of the running block, switched only
 * at barriers and warp collectives, in an order drawn anew at each (EMU_RULE_ORDER), with deadlock detection (a
 * barrier some live thread never reaches would hang a GPU) and the other rules of emu.h. Annotated for
 * AddressSanitizer's fiber support so ASan stays exact. */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

/* Switching fibers is the emulator's inner loop: on x86-64 a few
 * instructions that save the callee-saved registers and swap stacks;
 * elsewhere ucontext (correct, but each switch is a system call). */
#if defined(__x86_64__)
#define EMU_FAST_SWITCH 1
extern "C" void emu_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
        ".globl emu_switch\n"
        ".type emu_switch,@function\n"
        "emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size emu_switch, .-emu_switch\n");
#else
#define EMU_FAST_SWITCH 0
#endif

#define EMU_MAX_THREADS 1024
#define EMU_WARPS (EMU_MAX_THREADS / 32)
#define EMU_STACK (256 * 1024)

enum { F_READY, F_WAIT_BLOCK, F_WAIT_WARP, F_DONE };

/* Small, so that the scheduler's walk over a block's threads stays in cache (the ucontext of the portable switch,
 * near a kilobyte, lives apart in contexts[]). */
typedef struct {
    void *sp; /* saved stack pointer (fast switch) */
    uint3 tid;
    int lane, warp, state;
    unsigned wait_gen;
    void *fake_stack;
} emu_fiber;

uint3 emu_block_idx;
dim3 emu_block_dim, emu_grid_dim;

static emu_fiber fibers[EMU_MAX_THREADS];
#if !EMU_FAST_SWITCH
static ucontext_t contexts[EMU_MAX_THREADS];
#endif
static char *stacks[EMU_MAX_THREADS];
static emu_fiber *cur;
#if EMU_FAST_SWITCH
static void *sched_sp;
#else
static ucontext_t sched_ctx;
#endif
#if EMU_ASAN
static const void *sched_stack_bottom;
static size_t sched_stack_size;
#endif
static int n_threads, n_live;
static int bar_count;
static unsigned bar_gen;
static int warp_live[EMU_WARPS], warp_count[EMU_WARPS];
static unsigned warp_gen[EMU_WARPS];
static uint64_t warp_slot[EMU_WARPS][32];
static unsigned char *dyn_smem;
static size_t dyn_smem_cap;
static emu_body_fn body_fn;
static void *body_arg;
static cudaError_t last_error;

static unsigned rules = EMU_RULES_ALL;
static uint64_t order_seed = 1;
static int sm_count = 4;
static unsigned short order[EMU_MAX_THREADS]; /* the running block's threads in this round's order */
static uint64_t order_state;
static const void *bar_site;    /* where the threads now waiting at the block's barrier called it */
static const char *block_fault; /* a rule the running block broke (NULL none): its launch fails */

unsigned emu_set_rules(unsigned r) {
    const unsigned old = rules;
    rules = r & EMU_RULES_ALL;
    return old;
}
uint64_t emu_set_order_seed(uint64_t seed) {
    const uint64_t old = order_seed;
    order_seed = seed;
    return old;
}
int emu_set_sm_count(int n) {
    const int old = sm_count;
    if (n >= 1) sm_count = n;
    return old;
}

/* The kernels that asked for more dynamic shared memory (cudaFuncSetAttribute), and how much. */
#define EMU_MAX_OPTIN 64
static struct {
    const void *kernel;
    size_t smem;
} optin[EMU_MAX_OPTIN];
static int n_optin;

cudaError_t emu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > EMU_MAX_SMEM)
        return last_error = cudaErrorInvalidValue;
    int i = 0;
    while (i < n_optin && optin[i].kernel != kernel) i++;
    if (i == n_optin) {
        if (n_optin == EMU_MAX_OPTIN) return last_error = cudaErrorMemoryAllocation;
        n_optin++;
    }
    optin[i].kernel = kernel, optin[i].smem = (size_t)value;
    return cudaSuccess;
}

size_t emu_func_smem_limit(const void *kernel) {
    for (int i = 0; i < n_optin; i++)
        if (optin[i].kernel == kernel && optin[i].smem > EMU_SMEM_DEFAULT) return optin[i].smem;
    return EMU_SMEM_DEFAULT;
}

/* The sections of the kernels with launch bounds, one per bound (emu.h's __launch_bounds__), as the linker marks
 * them; a bound no kernel has leaves its symbols null. */
#define EMU_BOUND_SECTION(n)                                                                                           \
    extern "C" char __start_emu_bounds_##n[] __attribute__((weak));                                                    \
    extern "C" char __stop_emu_bounds_##n[] __attribute__((weak));
EMU_BOUND_SECTION(32)
EMU_BOUND_SECTION(64)
EMU_BOUND_SECTION(96)
EMU_BOUND_SECTION(128)
EMU_BOUND_SECTION(192)
EMU_BOUND_SECTION(256)
EMU_BOUND_SECTION(384)
EMU_BOUND_SECTION(512)
EMU_BOUND_SECTION(768)
EMU_BOUND_SECTION(1024)
#define EMU_BOUND(n)                                                                                                   \
    { n, __start_emu_bounds_##n, __stop_emu_bounds_##n }
static const struct {
    unsigned long threads;
    const char *start, *stop;
} emu_bounds[] = {EMU_BOUND(32),  EMU_BOUND(64),  EMU_BOUND(96),  EMU_BOUND(128), EMU_BOUND(192),
                  EMU_BOUND(256), EMU_BOUND(384), EMU_BOUND(512), EMU_BOUND(768), EMU_BOUND(1024)};

/* The launch bound of a kernel, or 0 for one without (or with a bound not listed above: held to 256 threads). */
static unsigned long launch_bound(const void *kernel) {
    const char *k = (const char *)kernel;
    for (size_t i = 0; i < sizeof emu_bounds / sizeof emu_bounds[0]; i++)
        if (emu_bounds[i].start && k >= emu_bounds[i].start && k < emu_bounds[i].stop) return emu_bounds[i].threads;
    return 0;
}

cudaError_t emu_kernel_check(const void *kernel, dim3 block, size_t smem) {
    if (!kernel) return cudaSuccess;
    if ((rules & EMU_RULE_SMEM_OPTIN) && smem > emu_func_smem_limit(kernel)) {
        fprintf(stderr,
                "emu: a launch asks for %zu B of dynamic shared memory, past the %zu B its kernel may take: over 48 KB "
                "needs cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first\n",
                smem, emu_func_smem_limit(kernel));
        return last_error = cudaErrorInvalidValue;
    }
    const unsigned long threads = (unsigned long)block.x * block.y * block.z, bound = launch_bound(kernel);
    if ((rules & EMU_RULE_BOUNDS) && threads > (bound ? bound : 256)) {
        if (bound)
            fprintf(stderr,
                    "emu: a block of %lu threads for a kernel whose __launch_bounds__ are %lu: ptxas fitted its "
                    "registers to %lu threads\n",
                    threads, bound, bound);
        else
            fprintf(stderr,
                    "emu: a block of %lu threads for a kernel without __launch_bounds__: ptxas may give it up to 255 "
                    "registers a thread, more than an SM holds for so many; declare __launch_bounds__(%lu) or more\n",
                    threads, threads);
        return last_error = cudaErrorLaunchOutOfResources;
    }
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure:
        return "unspecified launch failure (emulator: a barrier deadlock or a broken rule, said above)";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
        return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorGraphExecUpdateFailure:
        return "the graph update was not performed because it included changes which violated constraints specific to "
               "instantiated graph update";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaGetDevice(int *dev) {
    *dev = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev) {
    (void)dev;
    *value = attr == cudaDevAttrMultiProcessorCount ? sm_count : EMU_MAX_SMEM;
    return cudaSuccess;
}

cudaError_t emu_occupancy(int *blocks, int threads, size_t smem) {
    *blocks = 0;
    if (threads < 1 || threads > EMU_MAX_THREADS || smem > EMU_MAX_SMEM) return cudaErrorInvalidValue;
    int n = 2048 / threads;
    if (n > 32) n = 32;
    int by_regs = 65536 / (64 * threads);
    if (n > by_regs) n = by_regs;
    int by_smem = (int)((228 * 1024) / (smem + 1024));
    if (n > by_smem) n = by_smem;
    *blocks = n;
    return cudaSuccess;
}

const uint3 &emu_thread_idx(void) { return cur->tid; }
int emu_lane(void) { return cur->lane; }
void *emu_dyn_smem(void) { return dyn_smem; }

/* splitmix64: the next word of the running block's order stream */
static uint64_t order_next(void) {
    uint64_t z = (order_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The order the block's threads run in until each reaches its next barrier or collective: by index, or, under
 * EMU_RULE_ORDER, a fresh shuffle every round. */
static void order_round(void) {
    for (int i = 0; i < n_threads; i++) order[i] = (unsigned short)i;
    if (!(rules & EMU_RULE_ORDER)) return;
    for (int i = n_threads - 1; i > 0; i--) {
        const int j = (int)(order_next() % (uint64_t)(i + 1));
        const unsigned short t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

static int runnable(const emu_fiber *f) {
    switch (f->state) {
    case F_READY: return 1;
    case F_WAIT_BLOCK: return bar_gen != f->wait_gen;
    case F_WAIT_WARP: return warp_gen[f->warp] != f->wait_gen;
    default: return 0;
    }
}

/* Where the running round stands: the place in order[] of the thread now running. */
static int round_pos;
/* Set by the scheduler as it switches into a round's first thread: under ASan, that thread learns the scheduler's
 * stack from the switch. */
static int from_scheduler;

/* The next thread after place k of this round's order that may run, or -1 when the round is over. */
static int next_runnable(int k) {
    for (k++; k < n_threads; k++)
        if (runnable(&fibers[order[k]])) return k;
    return -1;
}

/* Leaves the running thread (self, or NULL when it has ended and will never resume) for the next thread of the
 * round that may run, or for the scheduler when the round is over. One switch, thread to thread: going through the
 * scheduler at every barrier and collective took two, and switching is most of what the emulator costs. The
 * threads run in the order the scheduler's own walk would give them. */
static void leave_thread(emu_fiber *self) {
    const int k = next_runnable(round_pos);
    emu_fiber *next = k >= 0 ? &fibers[order[k]] : NULL;
    if (next) {
        round_pos = k;
        next->state = F_READY;
        cur = next;
#if EMU_FAST_SWITCH
        /* the thread two places on in the order most likely runs after the next: its saved registers and frame,
         * on a stack untouched since its last turn, start on their way to the cache now (the switch into a thread
         * stalled on that load; measured: the emulator a third faster with it) */
        if (k + 2 < n_threads) {
            const char *sp = (const char *)fibers[order[k + 2]].sp;
            __builtin_prefetch(sp), __builtin_prefetch(sp + 64), __builtin_prefetch(sp + 128);
        }
#endif
    }
    from_scheduler = 0;
#if EMU_ASAN
    __sanitizer_start_switch_fiber(self ? &self->fake_stack : NULL, next ? stacks[next - fibers] : sched_stack_bottom,
                                   next ? EMU_STACK : sched_stack_size);
#endif
#if EMU_FAST_SWITCH
    void *dead;
    emu_switch(self ? &self->sp : &dead, next ? next->sp : sched_sp);
#else
    static ucontext_t dead;
    swapcontext(self ? &contexts[self - fibers] : &dead, next ? &contexts[next - fibers] : &sched_ctx);
#endif
}

/* On a thread's own stack again, switched to by the scheduler or another thread. */
static void thread_resumed(emu_fiber *self) {
#if EMU_ASAN
    const void *from_bottom;
    size_t from_size;
    __sanitizer_finish_switch_fiber(self->fake_stack, &from_bottom, &from_size);
    if (from_scheduler) sched_stack_bottom = from_bottom, sched_stack_size = from_size;
#endif
    cur = self;
}

/* The running thread waits at a barrier or collective: the others run until it may go on. */
static void wait_for_others(void) {
    emu_fiber *self = cur;
    leave_thread(self);
    thread_resumed(self);
}

static void block_arrive(const void *site) {
    /* a barrier is one place in the code: threads meeting from two places would each wait at their own on a GPU */
    if (bar_count == 0)
        bar_site = site;
    else if (site != bar_site && (rules & EMU_RULE_BARRIER))
        block_fault = "threads met at __syncthreads called from different places (a barrier in divergent code)";
    if (++bar_count == n_live) {
        bar_count = 0;
        bar_gen++;
        return;
    }
    cur->state = F_WAIT_BLOCK;
    cur->wait_gen = bar_gen;
    wait_for_others();
}

static void warp_arrive(void) {
    int w = cur->warp;
    if (++warp_count[w] == warp_live[w]) {
        warp_count[w] = 0;
        warp_gen[w]++;
        return;
    }
    cur->state = F_WAIT_WARP;
    cur->wait_gen = warp_gen[w];
    wait_for_others();
}

/* Never inlined: its return address is the caller's place in the code (EMU_RULE_BARRIER). */
__attribute__((noinline)) void __syncthreads(void) { block_arrive(__builtin_return_address(0)); }
void __syncwarp(unsigned mask) {
    (void)mask;
    warp_arrive();
}

uint64_t emu_warp_exchange(uint64_t mine, int src, unsigned mask) {
    int w = cur->warp;
    warp_slot[w][cur->lane] = mine;
    warp_arrive();
    int base = w * 32;
    uint64_t got = (src >= 0 && src < 32 && base + src < n_threads && fibers[base + src].state != F_DONE)
                       ? warp_slot[w][src]
                       : mine;
    /* a lane outside the mask takes no part in the shuffle: what it holds is undefined */
    if ((rules & EMU_RULE_MASK) && src >= 0 && src < 32 && !((mask >> src) & 1u)) got = ~(uint64_t)0;
    warp_arrive(); /* nobody overwrites a slot before every lane has read */
    return got;
}

unsigned __ballot_sync(unsigned mask, int pred) {
    int w = cur->warp;
    warp_slot[w][cur->lane] = pred ? 1u : 0u;
    warp_arrive();
    unsigned bits = 0;
    for (int l = 0; l < 32 && w * 32 + l < n_threads; l++)
        if (fibers[w * 32 + l].state != F_DONE && warp_slot[w][l]) bits |= 1u << l;
    warp_arrive();
    return (rules & EMU_RULE_MASK) ? bits & mask : bits;
}

unsigned emu_match_any(uint64_t value) {
    int w = cur->warp;
    warp_slot[w][cur->lane] = value;
    warp_arrive();
    unsigned bits = 0;
    for (int l = 0; l < 32 && w * 32 + l < n_threads; l++)
        if (fibers[w * 32 + l].state != F_DONE && warp_slot[w][l] == value) bits |= 1u << l;
    warp_arrive();
    return bits;
}

static float bf16_lo(uint32_t r) { return __uint_as_float(r << 16); }
static float bf16_hi(uint32_t r) { return __uint_as_float(r & 0xffff0000u); }

void emu_mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
    /* Gather every lane's fragments, rebuild A[16,16] and B[16,8], and let
     * each lane compute its own four outputs. */
    static uint32_t frag_a[EMU_WARPS][32][4], frag_b[EMU_WARPS][32][2];
    int lane = cur->lane;
    uint32_t(*fa)[4] = frag_a[cur->warp];
    uint32_t(*fb)[2] = frag_b[cur->warp];
    for (int i = 0; i < 4; i++) fa[lane][i] = a[i];
    fb[lane][0] = b[0], fb[lane][1] = b[1];
    warp_arrive();
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        int g = l / 4, t = l % 4;
        A[g][2 * t] = bf16_lo(fa[l][0]), A[g][2 * t + 1] = bf16_hi(fa[l][0]);
        A[g + 8][2 * t] = bf16_lo(fa[l][1]), A[g + 8][2 * t + 1] = bf16_hi(fa[l][1]);
        A[g][2 * t + 8] = bf16_lo(fa[l][2]), A[g][2 * t + 9] = bf16_hi(fa[l][2]);
        A[g + 8][2 * t + 8] = bf16_lo(fa[l][3]), A[g + 8][2 * t + 9] = bf16_hi(fa[l][3]);
        B[2 * t][g] = bf16_lo(fb[l][0]), B[2 * t + 1][g] = bf16_hi(fb[l][0]);
        B[2 * t + 8][g] = bf16_lo(fb[l][1]), B[2 * t + 9][g] = bf16_hi(fb[l][1]);
    }
    warp_arrive();
    int g = lane / 4, t = lane % 4;
    int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; i++) {
        float acc = c[i];
        for (int k = 0; k < 16; k++) acc += A[rows[i]][k] * B[k][cols[i]];
        d[i] = acc;
    }
}

static void fiber_exit_bookkeeping(emu_fiber *f) {
    f->state = F_DONE;
    n_live--;
    warp_live[f->warp]--;
    /* the ones still waiting may now be complete */
    if (bar_count > 0 && bar_count == n_live) {
        bar_count = 0;
        bar_gen++;
    }
    if (warp_count[f->warp] > 0 && warp_count[f->warp] == warp_live[f->warp]) {
        warp_count[f->warp] = 0;
        warp_gen[f->warp]++;
    }
}

static void fiber_main(void) {
    thread_resumed(cur);
    body_fn(body_arg);
    fiber_exit_bookkeeping(cur);
    leave_thread(NULL);
    abort(); /* never resumed */
}

/* How far below the top of its mapping a thread's stack starts. The mappings lie EMU_STACK apart, so their tops
 * would all fall in the same cache sets, and every switch would miss: staggered by a kilobyte a thread (and a line
 * every 64 threads) the hot ends of a block's stacks spread over the sets of a 64 KB span. */
static size_t stack_stagger(int i) { return (size_t)(i % 64) * 1024 + (size_t)(i / 64 % 16) * 64; }

static int run_block(void) {
    for (int i = 0; i < n_threads; i++) {
        emu_fiber *f = &fibers[i];
        if (!stacks[i]) {
            void *s = mmap(NULL, EMU_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (s == MAP_FAILED) {
                fprintf(stderr, "emu: cannot map a fiber stack\n");
                abort();
            }
            stacks[i] = (char *)s;
        }
#if EMU_ASAN
        /* a reused stack still carries the last fiber's redzones */
        __asan_unpoison_memory_region(stacks[i], EMU_STACK);
#endif
#if EMU_FAST_SWITCH
        /* a stack that emu_switch "returns" into fiber_main from: six
         * callee-saved registers, the entry address, an unused return slot */
        void **top = (void **)(stacks[i] + EMU_STACK - stack_stagger(i));
        top[-1] = NULL;
        top[-2] = (void *)fiber_main;
        for (int r = 3; r <= 8; r++) top[-r] = NULL;
        f->sp = (void *)&top[-8];
#else
        ucontext_t *ctx = &contexts[i];
        getcontext(ctx);
        ctx->uc_stack.ss_sp = stacks[i];
        ctx->uc_stack.ss_size = EMU_STACK;
        ctx->uc_link = &sched_ctx;
        makecontext(ctx, fiber_main, 0);
#endif
        unsigned bx = emu_block_dim.x, by = emu_block_dim.y;
        f->tid = uint3{(unsigned)i % bx, (unsigned)i / bx % by, (unsigned)i / (bx * by)};
        f->lane = i % 32;
        f->warp = i / 32;
        f->state = F_READY;
        f->fake_stack = NULL;
    }
    n_live = n_threads;
    bar_count = 0;
    for (int w = 0; w < EMU_WARPS; w++) {
        warp_count[w] = 0;
        warp_live[w] = 0;
    }
    for (int i = 0; i < n_threads; i++) warp_live[i / 32]++;
    /* Rounds: the threads in a fresh order, each running to its next barrier or collective where it may; the
     * threads pass the turn among themselves (leave_thread), and the last of the round hands it back here. */
    while (n_live > 0) {
        order_round();
        const int k = next_runnable(-1);
        if (k < 0) return -1; /* live threads, none of which may go on: a barrier some thread never reaches */
        const int i = order[k];
        round_pos = k;
        fibers[i].state = F_READY;
        cur = &fibers[i];
        from_scheduler = 1;
        void *fake = NULL;
#if EMU_ASAN
        __sanitizer_start_switch_fiber(&fake, stacks[i], EMU_STACK);
#endif
#if EMU_FAST_SWITCH
        emu_switch(&sched_sp, fibers[i].sp);
#else
        swapcontext(&sched_ctx, &contexts[i]);
#endif
#if EMU_ASAN
        __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
        (void)fake;
    }
    return 0;
}

cudaError_t emu_config_check(dim3 grid, dim3 block, size_t smem) {
    unsigned long threads = (unsigned long)block.x * block.y * block.z;
    if (threads == 0 || threads > EMU_MAX_THREADS || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.y > 65535 || grid.z > 65535 || smem > EMU_MAX_SMEM)
        return last_error = cudaErrorInvalidConfiguration;
    return cudaSuccess;
}

#if EMU_SHARED_POISONED
/* The linker's bounds of the section every static __shared__ variable lies in (emu.h); absent in a program that
 * has none. */
extern "C" char __start_emu_shared[] __attribute__((weak));
extern "C" char __stop_emu_shared[] __attribute__((weak));
#endif

/* Static shared memory as a GPU hands it to a block: whatever was there (EMU_RULE_SHARED). */
static void poison_static_shared(void) {
#if EMU_SHARED_POISONED
    char *start = __start_emu_shared, *stop = __stop_emu_shared;
    if ((rules & EMU_RULE_SHARED) && start && stop > start) memset(start, 0xff, (size_t)(stop - start));
#endif
}

cudaError_t emu_run(dim3 grid, dim3 block, size_t smem, emu_body_fn fn, void *arg) {
    if (emu_config_check(grid, block, smem) != cudaSuccess) return cudaErrorInvalidConfiguration;
    unsigned long threads = (unsigned long)block.x * block.y * block.z;
    if (smem > dyn_smem_cap) {
        free(dyn_smem);
        dyn_smem = (unsigned char *)malloc(smem);
        dyn_smem_cap = smem;
    }
    body_fn = fn;
    body_arg = arg;
    n_threads = (int)threads;
    emu_block_dim = block;
    emu_grid_dim = grid;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                emu_block_idx = uint3{x, y, z};
                /* shared memory starts as garbage on a GPU: make reads of
                 * unwritten words show up as NaN */
                if (smem) memset(dyn_smem, 0xff, smem);
                poison_static_shared();
                order_state = order_seed ^ (0xd1b54a32d192ed03ull * (((uint64_t)z * grid.y + y) * grid.x + x + 1));
                block_fault = NULL;
                if (run_block() != 0) {
                    fprintf(stderr, "emu: barrier deadlock in block (%u,%u,%u) of grid (%u,%u,%u)\n", x, y, z, grid.x,
                            grid.y, grid.z);
                    return last_error = cudaErrorLaunchFailure;
                }
                if (block_fault) {
                    fprintf(stderr, "emu: block (%u,%u,%u) of grid (%u,%u,%u): %s\n", x, y, z, grid.x, grid.y, grid.z,
                            block_fault);
                    return last_error = cudaErrorLaunchFailure;
                }
            }
    return cudaSuccess;
}
