/* check_copy.cu — the ceiling every bandwidth figure is compared with: a
 * large device-to-device copy (cudaMemcpyAsync), counting the bytes read plus
 * the bytes written. The emulator has no such figure. */
#include "gc.cuh"

#define COPY_BYTES ((size_t)1 << 30) /* 1 GiB each way: ~20× the L2 */

void gc_family_copy(gc_ctx *c) {
#ifdef KN_EMU
    (void)c;
#else
    char *src = (char *)gc_dmalloc(COPY_BYTES), *dst = (char *)gc_dmalloc(COPY_BYTES);
    gc_fill_f32(c, (float *)src, COPY_BYTES / 4, -1.0f, 1.0f, 1);
    gc_sync("fill");
    double us = gc_time_us(c, [&](int it) {
        (void)it;
        return cudaMemcpyAsync(dst, src, COPY_BYTES, cudaMemcpyDeviceToDevice, 0);
    });
    double bytes = 2.0 * COPY_BYTES;
    c->res->copy_gbs = bytes / (us * 1e-6) / 1e9;
    /* the copy is its own validation: compare a few words */
    float a[4], b[4];
    gc_d2h(a, src + COPY_BYTES / 2, sizeof a);
    gc_d2h(b, dst + COPY_BYTES / 2, sizeof b);
    double err = (a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3]) ? 0.0 : INFINITY;
    gc_record(c, "copy", "memcpy", "1 GiB d2d", 1, err, 0.0, us, bytes, 0.0, "");
    gc_dfree(src), gc_dfree(dst);
#endif
}
