/* fuzz_medusa_tree.c — the Medusa tree JSON of --tree
 * (reference/methods/medusa_tree.c): any text is refused with a message or
 * gives a tree whose parents precede their children, and that prints as a
 * list of paths which parses back into the same tree. */
#include "fuzz.h"
#include "medusa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char printed[1 << 16]; /* 255 paths of 16 ranks of ≤ 10 digits, ", " apart: < 50 KiB */
    char *text = fuzz_text(data, size);
    medusa_tree t, back;
    sp_error err = {{0}};
    if (medusa_tree_parse(&t, text, "fuzz tree", &err) == 0) {
        FUZZ_CHECK(t.n >= 1 && t.n <= MEDUSA_MAX_NODES && t.max_depth <= MEDUSA_MAX_HEADS);
        for (int k = 0; k < t.n; k++) {
            FUZZ_CHECK(t.parent[k] < k && t.depth[k] >= 1);
            FUZZ_CHECK(t.parent[k] < 0 ? t.depth[k] == 1 : t.depth[t.parent[k]] == t.depth[k] - 1);
        }
        (void)medusa_tree_validate(&t, MEDUSA_MAX_HEADS, 1 << 20, "fuzz tree", &err);
        medusa_tree_format(&t, printed, sizeof printed);
        FUZZ_CHECK(medusa_tree_parse(&back, printed, "printed tree", &err) == 0);
        FUZZ_CHECK(memcmp(&t, &back, sizeof t) == 0);
    } else {
        FUZZ_CHECK(err.msg[0] != '\0');
    }
    free(text);
    return 0;
}
