/* fuzz_safetensors.c — a safetensors file (reference/base/safetensors.c) read from memory and checked as a
 * checkpoint (checkpoint.c, layout.c): any bytes are refused with a message, or give tensors that lie inside the
 * input and can be read and checked for finite values. */
#include "checkpoint.h"
#include "fuzz.h"

/* The config of tests/fuzz/make-seeds.sh's nano checkpoint, so its seeds pass every check and mutations start
 * deep. */
static const char nano_config[] =
    "{\n"
    "  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
    "  \"model_type\": \"qwen3_5\",\n"
    "  \"tie_word_embeddings\": false,\n"
    "  \"text_config\": {\n"
    "    \"model_type\": \"qwen3_5_text\",\n"
    "    \"attention_bias\": false,\n"
    "    \"attn_output_gate\": true,\n"
    "    \"dtype\": \"bfloat16\",\n"
    "    \"eos_token_id\": 7,\n"
    "    \"head_dim\": 8,\n"
    "    \"hidden_act\": \"silu\",\n"
    "    \"hidden_size\": 8,\n"
    "    \"intermediate_size\": 8,\n"
    "    \"layer_types\": [\"linear_attention\", \"full_attention\"],\n"
    "    \"linear_conv_kernel_dim\": 2,\n"
    "    \"linear_key_head_dim\": 4,\n"
    "    \"linear_num_key_heads\": 1,\n"
    "    \"linear_num_value_heads\": 1,\n"
    "    \"linear_value_head_dim\": 4,\n"
    "    \"max_position_embeddings\": 1024,\n"
    "    \"mtp_num_hidden_layers\": 1,\n"
    "    \"num_attention_heads\": 2,\n"
    "    \"num_hidden_layers\": 2,\n"
    "    \"num_key_value_heads\": 1,\n"
    "    \"rms_norm_eps\": 1e-06,\n"
    "    \"rope_parameters\": {\"mrope_interleaved\": true, \"mrope_section\": [1, 0, 0], \"partial_rotary_factor\": "
    "0.25, \"rope_theta\": 10000.0, \"rope_type\": \"default\"},\n"
    "    \"tie_word_embeddings\": false,\n"
    "    \"use_cache\": true,\n"
    "    \"vocab_size\": 8\n"
    "  },\n"
    "  \"vision_config\": {\"model_type\": \"qwen3_5_vision\", \"depth\": 1, \"hidden_size\": 16, "
    "\"intermediate_size\": 32, \"num_heads\": 2, \"patch_size\": 16, \"spatial_merge_size\": 2, "
    "\"temporal_patch_size\": 2, \"out_hidden_size\": 8, \"num_position_embeddings\": 16}\n"
    "}\n";

static float scratch[4096]; /* ample: the largest nano tensor (q_proj) has 32 x 8 elements */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static model_config cfg;
    static int have_cfg;
    sp_error err = {{0}};
    if (!have_cfg) {
        FUZZ_CHECK(config_parse(nano_config, "nano config", &cfg, &err) == 0);
        have_cfg = 1;
    }
    checkpoint ck;
    memset(&ck, 0, sizeof ck);
    if (st_open_buffer(&ck.st, data, size, "fuzz.safetensors", &err)) {
        FUZZ_CHECK(err.msg[0] != '\0');
        return 0;
    }
    const uint8_t *end = data + size;
    for (int i = 0; i < ck.st.n_tensors; i++) {
        const st_tensor *t = &ck.st.tensors[i];
        /* divided, not multiplied: a product that wraps would hide a tensor larger than its bytes */
        FUZZ_CHECK(t->nbytes % (size_t)dtype_size(t->dtype) == 0);
        FUZZ_CHECK(t->nbytes / (size_t)dtype_size(t->dtype) == (size_t)st_numel(t));
        FUZZ_CHECK(t->nbytes == 0 || ((const uint8_t *)t->data >= data && (const uint8_t *)t->data + t->nbytes <= end));
        FUZZ_CHECK(st_find(&ck.st, t->name) != NULL);
    }
    ck.cfg = cfg;
    if (checkpoint_check(&ck, &err) == 0) {
        for (int i = 0; i < ck.n_specs; i++) {
            FUZZ_CHECK(tensor_spec_numel(&ck.specs[i]) <= (int64_t)(sizeof scratch / sizeof *scratch));
            if (checkpoint_check_finite(&ck, i, &err) == 0) FUZZ_CHECK(checkpoint_read_f32(&ck, i, scratch, &err) == 0);
        }
    } else {
        FUZZ_CHECK(err.msg[0] != '\0');
    }
    checkpoint_close(&ck);
    return 0;
}
