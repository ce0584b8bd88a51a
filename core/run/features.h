// SPDX-License-Identifier: MIT
#pragma once
// A sparse dictionary attached to a loaded model: its sites as nnscope values, checked against the model, and its
// features, reconstruction and error on a trace.
#include "core/io/dictionary.h"
#include "core/io/transcoderset.h"
#include "core/model/model.h"
#include "core/run/edit.h"
#include "core/run/trace.h"

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace nnscope {

/// The nnscope value a dictionary's site names, for `model`. TransformerLens hooks map by their meaning in the family:
/// blocks.i.hook_resid_pre / hook_resid_mid / hook_resid_post are layer_input / layer_mid / layer_output;
/// hook_attn_out and hook_mlp_out what the stream receives (attention_output and mlp_output, or on Gemma 2/3 and OLMo 2
/// the branch norm's output: post_feedforward_layernorm.output); attn.hook_z is attention_premix (heads side by side);
/// mlp.hook_pre, mlp.hook_post are the activation's input and mlp_neurons; hook_mlp_in and mlp.hook_in are mlp_input,
/// mlp.hook_out mlp_output; ln2.hook_normalized and ln1.hook_normalized the pre-MLP and pre-attention norms' output
/// before their gain (layers.i.post_attention_layernorm.normalized, Gemma's pre_feedforward_layernorm.normalized). HF module paths ("model.layers.3.mlp", Gemma Scope 2, sparsify) read the module's output
/// (or input, by the dictionary's convention). `out`: the transcoder's output site. Throws nnscope::Error naming the
/// dictionary's config and the site: a hook nnscope does not map, a block the model lacks, a value the family lacks.
ValueKey dictionarySite(const Model& model, const Dictionary& dictionary, bool out = false);

/// How many values per position the site gives (hidden_size for the stream, num_heads × head_dim for
/// attention_premix, intermediate_size for the neurons).
int64_t siteWidth(const Model& model, const ValueKey& site);

/// A dictionary attached to one model: the dictionary and its sites, checked. Throws nnscope::Error (from
/// dictionarySite) or when the widths differ, with both sizes in the message.
struct AttachedDictionary {
    std::shared_ptr<const Dictionary> dictionary;
    ValueKey site;     ///< where it reads
    ValueKey siteOut;  ///< where its reconstruction stands (the site itself for an SAE)

    static AttachedDictionary attach(const Model& model, std::shared_ptr<const Dictionary> dictionary);
    /// The values a trace must save to run it (the site, and the output site of a transcoder).
    std::vector<ValueKey> neededValues() const;
};

/// A dictionary's run on one prompt of a trace, at the prompt's own positions (BOS included).
struct FeatureRun {
    torch::Tensor input;           ///< float32 [length, d_in]: the site's value as the dictionary reads it
    torch::Tensor features;        ///< float32 [length, d_sae]
    torch::Tensor reconstruction;  ///< float32 [length, d_out]
    torch::Tensor target;          ///< float32 [length, d_out]: what the reconstruction stands for (the output site's value)
    torch::Tensor error;           ///< target - reconstruction
    /// Reconstruction quality over the prompt's positions after the first (the BOS, an outlier every dictionary's own
    /// evaluation leaves out; all positions when the prompt has one): mean squared error per value, explained
    /// variance 1 - Σ‖target - reconstruction‖² / Σ‖target - mean(target)‖² (SAELens' evals; NaN where the target does
    /// not vary, as over a single position), mean L0.
    double mse = 0, explainedVariance = 0, meanL0 = 0;
};

/// Runs `attached` on prompt `row` of `result` (a trace that saved attached.neededValues()). Throws nnscope::Error when
/// a needed value was not saved.
FeatureRun runDictionary(const Model& model, const TraceResult& result, const AttachedDictionary& attached, int64_t row);

/// A circuit-tracer cross-layer transcoder attached to one model: layer l reads sites[l] and its reconstruction stands
/// for sitesOut[l] (the config's feature_input_hook / feature_output_hook at block l). Throws nnscope::Error when the
/// layer counts differ, a hook is not one nnscope maps, or a site's width is not d_model (both sizes in the message).
struct AttachedCrossLayerTranscoder {
    std::shared_ptr<const CrossLayerTranscoder> transcoder;
    std::vector<ValueKey> sites, sitesOut;  ///< one per layer

    static AttachedCrossLayerTranscoder attach(const Model& model, std::shared_ptr<const CrossLayerTranscoder> transcoder);
    /// Every layer's site and output site: what a trace must save to run it.
    std::vector<ValueKey> neededValues() const;
};

/// Runs a cross-layer transcoder on prompt `row` of `result` (a trace that saved attached.neededValues()): entry l has
/// layer l's input [length, d_model], its features [length, d_transcoder], the reconstruction of layer l's output site
/// [length, d_model] (from the features of layers 0..l: CrossLayerTranscoder::reconstruct), the target, the error and
/// the quality numbers, as runDictionary gives them. Throws nnscope::Error when a needed value was not saved.
std::vector<FeatureRun> runCrossLayerTranscoder(const Model& model, const TraceResult& result, const AttachedCrossLayerTranscoder& attached,
                                                int64_t row);
/// The names the attached dictionaries take in value paths, one per dictionary, in order: each folder's name
/// ("sae-layers.0"); where two share it, each with as many of its parent folders as tell them apart
/// ("run1/layers.12" and "run2/layers.12"; a Gemma Scope "width_16k/average_l0_71").
std::vector<std::string> dictionaryPathNames(const std::vector<AttachedDictionary>& attached);

/// The value path of one of a dictionary's values: SITE[NAME].features, SITE[NAME].reconstruction or SITE[NAME].error,
/// where SITE is the value path it reads ("layers.0.layer_output[sae-layers.0].features"). The brackets keep a name
/// with dots readable and let two dictionaries on one site stand side by side.
std::string dictionaryValuePath(const std::string& site, const std::string& name, DictionaryValue::Kind kind);

/// What `attached` (named `name` in value paths) records of itself in an export: folder, format, architecture, sites,
/// sizes and its weights files (their sha256 left "" for the export to compute).
std::shared_ptr<DictionarySource> dictionarySource(const Model& model, const AttachedDictionary& attached, const std::string& name);

/// Every value path of the attached dictionaries (three per dictionary, in order: features, reconstruction, error).
std::vector<std::string> dictionaryValuePaths(const Model& model, const std::vector<AttachedDictionary>& attached);

/// What `--save` patterns select among the model's values and the attached dictionaries' values.
struct SaveSelection {
    std::vector<ValueKey> values;               ///< the model's values, in the order matched, each once
    std::vector<std::string> dictionaryValues;  ///< the dictionaries' value paths, in the order matched, each once
    /// What the trace must save to give them: `values`, then each needed dictionary's sites (AttachedDictionary::
    /// neededValues) not among them. Drop the extra ones after the trace (keepOnly) to save only what was asked.
    std::vector<ValueKey> traced;
};
/// Matches each pattern (`all`, a value path, or a path with `*` wildcards, core/run/trace.h matchValues) against the
/// model's values and the dictionaries' (`all` selects every one of both). Throws nnscope::Error when a pattern matches
/// nothing; a pattern of the form SITE[NAME]... that names no attached dictionary says so and lists the attached ones.
SaveSelection matchSaveValues(const Model& model, const std::vector<AttachedDictionary>& attached, const std::vector<std::string>& patterns);

/// Computes the dictionary values named by `paths` (dictionaryValuePaths of `attached`) on the whole batch of `result`
/// at once: x = the site's value as float32 [batch, seq, d_in] (a site's trailing axes flattened, as runDictionary
/// does), features = encode(x) [batch, seq, d_sae], reconstruction = decode(features, x) [batch, seq, d_out], error =
/// target - reconstruction, the target being the output site's value (x itself for an SAE). Every position is a row
/// of its own (no format's encoder mixes positions), so a prompt's positions hold what runDictionary gives it alone.
/// Throws nnscope::Error when a path is not one of `attached`, or a site it needs was not saved.
std::vector<DictionaryValue> dictionaryValues(const Model& model, const TraceResult& result, const std::vector<AttachedDictionary>& attached,
                                              const std::vector<std::string>& paths);

/// Keeps in `result` only the values of `keys`, in their order (drops what a trace saved only for the dictionaries).
void keepOnly(TraceResult& result, const std::vector<ValueKey>& keys);

/// Fills run.mse, run.explainedVariance and run.meanL0 (FeatureRun's formulas) from its features, target and error
/// ([length, ...] each); without a target or an error (a trace file that saved only the features) mse and
/// explainedVariance are NaN.
void measureQuality(FeatureRun& run);

/// A feature and its activation.
struct FeatureActivation {
    int64_t feature;
    double activation;
};
/// The `k` largest activations of `features` [d_sae] that are above zero, largest first.
std::vector<FeatureActivation> topFeatures(const torch::Tensor& features, int k);

/// Feature edits of a sparse dictionary, applied during the pass (Intervention).
///
/// An SAE (one site, reading and writing x [batch, seq, d_in]): at every position x is encoded, the named features of
/// f = encode(x) [batch, seq, d_sae] are changed (set, scaled or moved) into f', and x becomes
/// x + decode(f', x) - decode(f, x): the dictionary's error term x - decode(f, x) stays and only the edited features
/// change (Templeton et al. 2024's clamping, with the error kept as SAELens' use_error_term keeps it). With `splice`
/// the value becomes decode(f', x) itself: the reconstruction, the error term dropped.
///
/// A transcoder (reads site x_in [batch, seq, d_in], predicts siteOut y [batch, seq, d_out], e.g. mlp_input to
/// mlp_output): when the pass computes x_in, f = encode(x_in) and f' are made and x_in is left as it is; when the same
/// pass then computes y (later in the same block), y becomes y + decode(f', x_in) - decode(f, x_in), so the transcoder's
/// error term y - decode(f, x_in) stays and only the edited features' share of y changes (a skip connection's
/// x_in · W_skip cancels out); with `splice`, y becomes decode(f', x_in) (the transcoder replaces the MLP, error
/// dropped). This is what a hook on the MLP's output computing the same difference with SAELens' own encode/decode does
/// (tests/fixtures/make_feature_edits.py). Each pass (a whole prompt, or a generation step's new positions) pairs its
/// own x_in with its own y.
///
/// A change may name prompt positions (Change::positions, `feature DIR:F@P,... OP VALUE`): each row's position p counted
/// from its prompt's first token (negative from the prompt's last), as edits count them (PassPositions); the feature is
/// changed there only and every other position keeps its value exactly (circuit-tracer's interventions on one node at
/// its own position).
class FeatureIntervention : public Intervention {
public:
    struct Change {
        int64_t feature;
        Edit::Op op;   ///< Set (clamp), Mul (scale), Add / Sub (move by a multiple of the decoder row)
        double value;
        /// Prompt positions (negative from the prompt's last token) where the change applies; empty: every position.
        std::vector<int64_t> positions = {};
    };
    explicit FeatureIntervention(AttachedDictionary attached);
    /// Throws nnscope::Error when `feature` is outside [0, d_sae).
    void change(Change c);
    void setSplice(bool splice) { splice_ = splice; }
    const AttachedDictionary& attached() const { return attached_; }

    /// The site, and a transcoder's output site.
    bool touches(Value v, int layer) const override;
    /// Throws nnscope::Error when a transcoder's output site comes without its input site before it in the pass, or
    /// their batch and position axes differ (both shapes named).
    void apply(Value v, int layer, torch::Tensor& t) const override;
    void begin(const PassPositions& positions) const override {
        pending_ = torch::Tensor();
        pass_ = positions;
    }

private:
    /// f' from f [batch, seq, d_sae]: the changes applied in order, each at its positions of this pass (f itself when
    /// there are none).
    torch::Tensor edited(const torch::Tensor& f) const;
    /// Where change `c` applies in this pass: bool [batch, seq]. Throws nnscope::Error when none of its positions lies
    /// in any row.
    torch::Tensor positionMask(const Change& c, int64_t batch, int64_t seq) const;

    AttachedDictionary attached_;
    std::vector<Change> changes_;
    bool splice_ = false;
    /// A transcoder's change of its output site, [batch, seq, d_out] float32, made at its input site and used once at its
    /// output site in the same pass (splice: the whole new value).
    mutable torch::Tensor pending_;
    mutable PassPositions pass_;  ///< where each row's prompt sits in the current pass (begin)
};

/// Parses `feature DIR:F[@P,...] OP VALUE` or `splice DIR` (addIntervention's syntax, core/run/edit.h) for `model`: reads the
/// dictionary in DIR (relative to `baseDir`) and attaches it. Throws nnscope::Error naming the text and the problem.
std::unique_ptr<FeatureIntervention> parseFeatureIntervention(const Model& model, const std::string& text, const std::string& baseDir);

}  // namespace nnscope
