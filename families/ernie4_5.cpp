// SPDX-License-Identifier: MIT
//
// ERNIE 4.5 dense (Ernie4_5ForCausalLM).
//
// Llama's tree and Llama's block. Two differences: the rotary embedding turns adjacent pairs (2i, 2i+1) and is
// computed in float32 (transformers' "glm rope style ... full precision"), and every projection's bias follows one
// config key, use_bias. The query heads together may be wider than the stream (0.3B: q_proj 1024 -> 2048).
#include "families/families.h"

namespace nnscope {

Family ernie4_5Family() {
    Family f = llamaFamily();
    f.modelType = "ernie4_5";
    f.architectures = {"Ernie4_5ForCausalLM"};
    f.title = "ERNIE 4.5";
    f.classPrefix = "Ernie4_5";
    f.summary = "Llama's pre-norm block whose rotary embedding turns adjacent pairs of dimensions, with a head_dim of its "
                "own, so the query heads together may be wider than the residual stream (2048 against 1024 in "
                "ERNIE-4.5-0.3B).";
    f.quirks = {"Interleaved rotary", "Grouped-query attention"};
    f.description =
        "ERNIE 4.5 dense (Ernie4_5ForCausalLM).\n\nLlama's tree and Llama's block: model.{embed_tokens, layers[i].{input_layernorm, "
        "self_attn, post_attention_layernorm, mlp}, norm} and lm_head, the residual added in the block, attention through the "
        "shared eager forward.";
    f.mlpFormulas = {};  // the page writes no MLP line (the seed's block, in order)
    f.notes = {
        {"The block, in order",
         "Llama's pre-norm block and Llama's names. Nothing norms a sublayer's output, so attention_output is o_proj's output, "
         "mlp_output the MLP's, and layers[i].input + attention_output + mlp_output == layer_output is the plain sum. One config "
         "key, use_bias, gives every projection a bias or none (false on the released checkpoints).",
         {"contribution_identity", "projection_biases"}},
        {"The heads are wider than the stream",
         "0.3B has hidden_size 1024 and 16 query heads of head_dim 128, so q_proj maps 1024 to 2048 and o_proj 2048 back to 1024. "
         "The 16 query heads share 2 key/value heads, 8 to each: an edit to key head 0 at attention_keys reaches query heads 0 "
         "to 7. The attention interior needs attn_implementation=\"eager\" in transformers; nnscope always runs it.",
         {"gqa_scores", "pattern_softmax"}},
        {"Rotary turns adjacent pairs",
         "The rotary embedding rotates dimensions (2i, 2i + 1) of each query and key head together, at frequency "
         "rope_theta ** (−2i / head_dim) (rope_theta 500000 on the released checkpoints), in float32; Llama's turns i with "
         "i + head_dim/2. The served queries and keys keep the projection's order: at position 0 attention_queries is q_proj's "
         "output split into heads, and at position 1 dimensions 0 and 1 are that pair turned by one radian. A probe or a patch "
         "that splits a head into a rotating half and its partner, as a rotate-half layout would, pairs the wrong dimensions here.",
         {"rotation_position1"}},
        {"The readout",
         "logits is lm_head's output, with no cap or scale, and project_on_vocab on the last block's layer_output equals the "
         "logits. On 0.3B lm_head is embed_tokens' matrix (tie_word_embeddings).",
         {"lens_equals_logits", "tied_head"}},
        {"Tokenizer", "The tokenizer prepends <s>.", {"bos_prepended"}},
        {"What loads as this family",
         "The dense ERNIE 4.5 checkpoints (Ernie4_5ForCausalLM, e.g. 0.3B) load as ernie4_5; the mixture-of-experts ones are "
         "another architecture (ernie4_5_moe).",
         {"loads_as"}},
    };
    f.rotary = RotaryStyle::AdjacentPairs;
    f.rotaryInFloat32 = true;
    f.configDefaults.update({{"vocab_size", 103424}, {"hidden_size", 1024}, {"intermediate_size", 3072},
                             {"num_hidden_layers", 18}, {"num_attention_heads", 16}, {"num_key_value_heads", 2},
                             {"hidden_act", "silu"}, {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5},
                             {"pad_token_id", 0}, {"bos_token_id", 1}, {"eos_token_id", 2}, {"tie_word_embeddings", true},
                             {"rope_theta", 500000.0}, {"use_bias", false}, {"head_dim", 128}});
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        cfg::readCommon(j, file, fam.epsKey, c);
        c.attentionBias = c.oProjBias = c.mlpBias = cfg::getBool(j, "use_bias", false, file);  // one key for every projection
        cfg::wholeHeadRotary(c.rope, file);
        cfg::checkPadTokenId(c, file);
    };
    return f;
}

}  // namespace nnscope
