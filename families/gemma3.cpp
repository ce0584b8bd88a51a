// SPDX-License-Identifier: MIT
//
// Gemma 3, multimodal (Gemma3ForConditionalGeneration, model_type gemma3).
//
// The wrapper of Gemma 3's text model (families/gemma2.cpp, gemma3_text) and a SigLIP vision tower: model.{vision_tower,
// multi_modal_projector, language_model} and lm_head. nnscope runs the language model on text prompts: its config is
// config.json's text_config (Gemma3TextConfig's defaults for the keys it leaves out), its tensors sit under
// model.language_model. (saved as language_model.model.*, which is read the same), and the vision tower and the
// projector stay unread in the mapped files. Two things differ from
// the text checkpoint: the wrapper's own tie_word_embeddings (true by default) ties lm_head, and the wrapper applies no
// final_logit_softcapping (Gemma3ForConditionalGeneration.forward returns lm_head's output).
#include "families/families.h"
#include "core/io/jsonfile.h"
#include "core/model/error.h"

namespace nnscope {

namespace {

/// Gemma3Config: text_config (a dict, or absent or null: Gemma3TextConfig's defaults) read as Gemma 3's text config;
/// the top-level tie_word_embeddings and dtype.
void readGemma3Wrapper(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
    nlohmann::json text = nlohmann::json::object();
    if (j.contains("text_config") && !j["text_config"].is_null()) {
        if (!j["text_config"].is_object())
            throw Error(file + ": key \"text_config\" is " + jsonExcerpt(j["text_config"]) +
                        ": a Gemma 3 multimodal config keeps its language model's keys in a text_config object.");
        text = j["text_config"];
    }
    const Family textFamily = gemma3Family();
    nlohmann::json merged = textFamily.configDefaults;
    for (auto it = text.begin(); it != text.end(); ++it) merged[it.key()] = *it;
    // transformers ties lm_head by the wrapper's own key (PreTrainedModel.get_expanded_tied_weights_keys reads
    // config.tie_word_embeddings of Gemma3Config); text_config's is not read.
    const bool tie = cfg::getBool(j, "tie_word_embeddings", true, file);
    merged["tie_word_embeddings"] = tie;
    textFamily.readConfig(merged, file + " (text_config)", fam, c);
    c.finalLogitSoftcap.reset();  // the wrapper's forward: logits = lm_head(hidden_states), no cap
    c.dtype = cfg::getString(j, "dtype", cfg::getString(j, "torch_dtype", c.dtype, file), file);
}

}  // namespace

Family gemma3MultimodalFamily() {
    Family f = gemma3Family();
    f.modelType = "gemma3";
    f.architectures = {"Gemma3ForConditionalGeneration"};
    f.title = "Gemma 3 (multimodal, text tower)";
    f.classPrefix = "Gemma3";
    f.summary = "Gemma 3's language model inside the image-text wrapper, run on text prompts: the vision tower and the "
                "projector are skipped.";
    f.quirks = {"Vision tower skipped", "Sandwich norms", "Query/key norms", "Local and global rotary", "Sliding-window attention"};
    f.description =
        "Gemma 3 (Gemma3ForConditionalGeneration).\n\nmodel.{vision_tower, multi_modal_projector, language_model.{embed_tokens, "
        "layers[i], norm}} and lm_head. The language model is Gemma 3's text model (config.json's text_config); nnscope "
        "runs it on text prompts and reads none of the vision tower's or the projector's tensors.";
    f.basePrefix = "model.language_model.";
    // save_pretrained (transformers 5.23, and the hub's files) writes the original layout; 4.52 to 4.57 wrote the names
    // as the modules hold them: both load.
    f.savedPrefixes = {{"language_model.model.", "model.language_model."}, {"language_model.lm_head.", "lm_head."},
                       {"vision_tower.", "model.vision_tower."}, {"multi_modal_projector.", "model.multi_modal_projector."}};
    f.skippedTensorPrefixes = {"model.vision_tower.", "model.multi_modal_projector."};
    f.skippedNote = "vision tower skipped: text prompts only";
    f.notes.insert(f.notes.begin(),
                   {"Vision tower skipped: text prompts only",
                    "nnscope runs the language model (model.language_model) on text prompts. The SigLIP vision tower "
                    "(model.vision_tower) and the projector (model.multi_modal_projector) stay unread in the mapped files, so "
                    "no prompt can carry an image: an image token id is embedded as any other token, where transformers "
                    "would put the projected image there.",
                    {"loads_as"}});
    for (FamilyNote& n : f.notes) {
        if (n.title == "The readout")
            n.text = "logits is lm_head's output: Gemma3ForConditionalGeneration applies no final_logit_softcapping, even where "
                     "text_config sets one (Gemma3ForCausalLM would), and the scores are never capped (Gemma3Attention "
                     "drops attn_logit_softcapping). lm_head is tied to embed_tokens by the top-level "
                     "tie_word_embeddings (true by default); text_config's is not read.";
        if (n.title == "What loads as this family")
            n.text = "Gemma3ForConditionalGeneration checkpoints (model_type gemma3) load as gemma3, the language model from "
                     "text_config; text-only Gemma3ForCausalLM checkpoints are gemma3_text.";
    }
    // Gemma3Config's own keys (text_config's defaults are gemma3_text's, merged under text_config).
    f.configDefaults = {{"tie_word_embeddings", true}, {"mm_tokens_per_image", 256}, {"boi_token_index", 255999},
                        {"eoi_token_index", 256000}, {"image_token_index", 262144}};
    f.readConfig = readGemma3Wrapper;
    return f;
}

}  // namespace nnscope
