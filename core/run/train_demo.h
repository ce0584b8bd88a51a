// SPDX-License-Identifier: MIT
#pragma once
// The demo model: a small Llama that nnscope trains itself on repeated random word runs, so that an
// induction head forms (layer 1 attends from the second occurrence of a token to the token that followed
// its first occurrence). `nnscope train-demo` runs trainDemoModel(); the folder it wrote with the default
// seed is committed as resources/demo-model and opened when nnscope starts with no model (app/defaultmodel.cpp,
// docs/DEMO.md).
#include "core/model/model.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// The architecture of the demo model (LlamaForCausalLM; written to config.json). The recipe was tuned for these
/// defaults only.
struct DemoModelShape {
    int64_t numLayers = 2;
    int64_t hiddenSize = 64;
    int64_t numHeads = 4;
    int64_t headDim = 16;
    int64_t intermediateSize = 128;
    double ropeTheta = 10000.0;
    double rmsNormEps = 1e-5;
    int64_t maxPositionEmbeddings = 256;
};

/// One progress report of the trainer.
struct DemoTrainProgress {
    int step = 0;             ///< optimizer steps done (1 .. steps)
    int steps = 0;            ///< steps asked for
    double loss = 0;          ///< mean training loss (nats per token) over the steps since the previous report
    double copyLoss = 0;      ///< the same, on the tokens only induction predicts (a repeated run's second occurrence)
    double learningRate = 0;  ///< learning rate of the last step
    double elapsedSeconds = 0;
};

/// Figures of the induction circuit on held-out repeated sequences (see evaluateInduction).
struct InductionEval {
    uint64_t seed = 0;     ///< the seed of the held-out rows
    int sequences = 0;     ///< how many held-out rows were measured
    int minRunLength = 0;  ///< run lengths drawn (each row: BOS, random words, a run, the same run, random words)
    int maxRunLength = 0;
    int rowLength = 0;     ///< tokens per row
    /// Mean next-token cross-entropy (nats) predicting run tokens 2..L of the first occurrence, and of the second.
    /// The run's first token is left out on both: nothing in the context predicts it.
    double firstHalfLoss = 0;
    double secondHalfLoss = 0;
    /// scores[layer][head]: mean attention probability from each token of the second occurrence to the token
    /// that followed the same token's first occurrence (1 = a perfect induction head).
    std::vector<std::vector<double>> scores;
    /// scores[layer][head] of the previous-token pattern: mean attention from each position (after BOS) to the
    /// position just before it.
    std::vector<std::vector<double>> previousTokenScores;
};

/// How to measure the induction circuit.
struct InductionEvalOptions {
    uint64_t seed = 20240607;  ///< seeds the held-out rows (keep it apart from the training seed)
    int sequences = 64;
    int minRunLength = 6;   ///< each row's run length is drawn from [minRunLength, maxRunLength]
    int maxRunLength = 20;
    int maxPrefix = 10;     ///< rows are 1 + 2 * maxRunLength + maxPrefix tokens; the runs start at a random place
    /// Words are drawn from ids [firstId, endId); endId <= 0 means vocab_size. BOS/EOS ids are skipped.
    int64_t firstId = 0;
    int64_t endId = 0;
};

/// Measures in-context copying on `model` with nnscope::trace: `sequences` held-out rows [BOS, p random ids, a run
/// of L distinct random ids, the same run, random ids to fill] (L and p drawn per row, so no fixed offset finds
/// the answer; filler never repeats a run id), keeping `logits` [batch, seq, vocab_size] and every layer's
/// `attention_probabilities` [batch, num_heads, query, key]. Throws nnscope::Error when the model has no BOS id
/// (tokenizer or config.json), the id range holds fewer than 2 * maxRunLength ids, the options are out of range,
/// or on a trace error.
InductionEval evaluateInduction(const Model& model, const InductionEvalOptions& options = {});

/// What the trainer does.
struct DemoTrainOptions {
    std::string outDir;          ///< the checkpoint folder to write (created; an older demo folder there is replaced)
    uint64_t seed = 1234;        ///< seeds the initial weights (torch::manual_seed) and the data (std::mt19937_64)
    int steps = 1500;            ///< optimizer steps
    int threads = 1;             ///< libtorch intra-op threads during training (0: every core); restored afterwards
    int batchSize = 32;
    int seqLen = 64;             ///< tokens per training row, BOS included
    double learningRate = 3e-3;  ///< peak AdamW learning rate (linear warm-up, held to half-way, cosine to a tenth)
    int reportEvery = 100;       ///< steps between progress reports (the last step is always reported)
    bool evaluate = true;        ///< load the written folder with Model::load and measure it (result.eval)
    bool writeReadme = true;     ///< write README.md (how the folder was made, its figures) into the folder
    /// The command line recorded in README.md (e.g. "nnscope train-demo --out DIR --seed 1234").
    std::string commandLine;
    DemoModelShape shape;
    std::function<void(const DemoTrainProgress&)> progress;  ///< called every reportEvery steps (may be empty)
};

/// What the trainer did.
struct DemoTrainResult {
    std::string outDir;
    double trainSeconds = 0;   ///< wall time of the optimizer steps
    double totalSeconds = 0;   ///< including writing and evaluating
    double finalLoss = 0;      ///< mean training loss of the last report interval
    double finalCopyLoss = 0;  ///< mean training loss of the last interval on the repeated runs' predictable tokens
    int64_t parameters = 0;    ///< trainable parameters
    int threads = 1;           ///< threads used
    std::optional<InductionEval> eval;  ///< the figures of the written folder, when options.evaluate
};

/// Trains the demo model and writes a HuggingFace checkpoint folder to options.outDir: config.json
/// (LlamaForCausalLM, float32), model.safetensors (HF tensor names; lm_head is tied to embed_tokens, so absent),
/// tokenizer.json (a word-level vocabulary the `tokenizers` library loads; lowercased, split on whitespace and
/// punctuation, BOS prepended), tokenizer_config.json and README.md. Everything is written into a temporary sibling
/// folder that is renamed into place at the end, so a failed run leaves nothing half-written at outDir.
///
/// Training rows (int64 [batchSize, seqLen]) are BOS, then segments: 0-3 random words, a run of random words, the
/// same run again (runs of 20-32 words for the first quarter of the steps, then also runs of 2-24 words with up to 6
/// random words between the occurrences); the loss is next-token cross-entropy with the tokens that nothing in the
/// context predicts weighted 0.05. From random weights the default model forms the induction circuit (a previous-token
/// head in layer 0, induction heads in layer 1) after about 300 steps.
/// For a given seed, thread count and libtorch build the weights are bit-for-bit the same on every run
/// (threads = 1, the default, makes them independent of the machine's core count). Reseeds libtorch's global
/// generator (torch::manual_seed) and sets its thread count for the duration (restored on return).
/// Throws nnscope::Error when outDir is empty, exists and holds files other than a demo folder's, cannot be
/// written, or when an option is out of range.
DemoTrainResult trainDemoModel(const DemoTrainOptions& options);

/// How to train the demo's sparse autoencoder (trainDemoDictionary).
struct DemoDictionaryOptions {
    std::string modelDir;  ///< the demo model's folder (read)
    std::string outDir;    ///< the SAELens folder to write (cfg.json + sae_weights.safetensors)
    int layer = 0;         ///< the site: layers.<layer>.layer_output (blocks.<layer>.hook_resid_post)
    int64_t width = 256;   ///< features
    int64_t k = 8;         ///< TopK's k
    int steps = 1500;
    int rows = 16;         ///< rows of the demo's training data per step (kGeneralMix), seqLen tokens each
    int seqLen = 64;
    double learningRate = 2e-3;
    uint64_t seed = 42;
    int threads = 1;       ///< as trainDemoModel: 1 makes the weights independent of the machine's core count
};
/// What trainDemoDictionary measured on held-out rows of the same data: fraction of variance explained, mean L0, and
/// the features that never fired there.
struct DemoDictionaryResult {
    std::string outDir;
    double explainedVariance = 0;
    double meanL0 = 0;
    int64_t deadFeatures = 0;
    double seconds = 0;
};
/// Trains a TopK sparse autoencoder (Gao et al. 2024: pre = (x - b_dec) W_enc + b_enc, the k largest relu'd, x̂ = f W_dec
/// + b_dec, mean squared error, decoder rows kept at unit norm, Adam) on the demo model's residual stream after block
/// `layer`, over the demo's own training data (random word runs that repeat; BOS positions left out), and writes it as
/// a SAELens v6 folder (architecture topk, site blocks.<layer>.hook_resid_post) that nnscope and sae-lens both read.
/// Reproducible for a seed and thread count. Throws nnscope::Error when the model cannot be read, is not the demo model
/// (its tokenizer's vocabulary is not demoVocabulary(): the training data are ids of that vocabulary) or the folder
/// cannot be written.
DemoDictionaryResult trainDemoDictionary(const DemoDictionaryOptions& options);
/// Refuses a checkpoint whose tokenizer is not the demo's (demoVocabulary()): the demo's dictionaries train on the demo's
/// own data, random runs of its vocabulary's ids, which are no text of another model's (they trained anyway, labelled
/// as the demo's). `command` names the caller in the message. Throws nnscope::Error naming the folder, the first token
/// that differs (or the vocabulary sizes) and what to use instead; trainDemoDictionary and trainDemoTranscoders call it.
void requireDemoVocabulary(const std::string& modelDir, const std::string& command);
/// How to train the demo's transcoders (trainDemoTranscoders).
struct DemoTranscoderOptions {
    std::string modelDir;  ///< the demo model's folder (read)
    std::string outDir;    ///< the circuit-tracer transcoder set to write (config.yaml + layer_<i>.safetensors)
    int64_t width = 256;   ///< features per layer
    int steps = 2000;
    int rows = 16;         ///< rows of the demo's training data per step (kGeneralMix), seqLen tokens each
    int seqLen = 64;
    double learningRate = 2e-3;
    /// The sparsity penalty's weight. In standardised units (x̃ = x / rms(x), ỹ = (y - mean y) / std(y), per channel) the
    /// loss is Σ_layers [ mean (ŷ - ỹ)² + l1 · mean_tokens Σ_f f · ‖W̃_dec,f‖ ].
    double l1 = 0.03;
    uint64_t seed = 42;
    int threads = 1;       ///< as trainDemoModel: 1 makes the weights independent of the machine's core count
};
/// What trainDemoTranscoders measured on held-out rows, per layer (entry i = layer i).
struct DemoTranscoderResult {
    std::string outDir;
    std::vector<double> explainedVariance;  ///< of mlp_output by the reconstruction: 1 - Σ‖ŷ - y‖² / Σ‖y - ȳ‖²
    std::vector<double> meanL0;             ///< active features per token
    std::vector<int64_t> deadFeatures;      ///< features that never fired on the held-out rows
    double seconds = 0;
};
/// Trains one ReLU transcoder per block of the demo model (Dunefsky et al. 2024, "Transcoders find interpretable LLM
/// feature circuits"; the per-layer transcoders of Ameisen et al. 2025): block l's features read mlp_input (the
/// pre-MLP norm's output, TransformerLens' blocks.l.mlp.hook_in) and reconstruct mlp_output (blocks.l.mlp.hook_out):
/// f = relu(x · W_encᵀ + b_enc), ŷ = f · W_dec + b_dec, trained in standardised units (DemoTranscoderOptions::l1) on the
/// squared error plus an L1 penalty on f weighted by each decoder row's norm (Anthropic's "Towards Monosemanticity"
/// recipe), Adam, over
/// the demo's own training data (random word runs that repeat; BOS positions left out). Writes a circuit-tracer
/// transcoder set (config.yaml with model_kind transcoder_set, feature_input_hook mlp.hook_in, feature_output_hook
/// mlp.hook_out; layer_<i>.safetensors with W_enc [width, hidden], W_dec [width, hidden], b_enc [width], b_dec [hidden],
/// float32) that nnscope (loadTranscoderSet) and circuit-tracer read. Reproducible for a seed and thread count. Throws
/// nnscope::Error when the model cannot be read or is not the demo model (as trainDemoDictionary), the options are out
/// of range or the folder cannot be written.
DemoTranscoderResult trainDemoTranscoders(const DemoTranscoderOptions& options);
/// The folder name of the demo's transcoder set inside the demo model's folder (resources/demo-model/<name>).
constexpr const char* kDemoTranscoderFolder = "transcoders";

/// The folder name of the demo's sparse autoencoder inside the demo model's folder (resources/demo-model/<name>).
constexpr const char* kDemoDictionaryFolder = "sae-layers.0";

/// `rows` rows of the demo's own training data (the general mix trainDemoDictionary trains on: random word runs that
/// repeat) as text, one row per string: the words joined by single spaces, the BOS left out (the demo's tokenizer adds it
/// back, and splits the text into exactly the row's ids). Reproducible for a seed. The demo SAE's dashboard is made from
/// it (docs/FEATURES.md#dashboards-a-features-top-contexts-in-your-own-text). Throws nnscope::Error when rows < 1 or seqLen < 2.
std::vector<std::string> demoTrainingText(int rows, int seqLen = 64, uint64_t seed = 7);

/// The demo folder's vocabulary, in id order: <unk>, <s>, </s>, <pad>, then the words and punctuation marks.
const std::vector<std::string>& demoVocabulary();
/// The id of the first ordinary (non-special) token of demoVocabulary().
constexpr int64_t kDemoFirstWordId = 4;

}  // namespace nnscope
