// SPDX-License-Identifier: MIT
#pragma once
// The block description: one ordered table of a family's forward pass — for each step, the module it runs (or the host
// module itself), the values read there, and whether each is read at the module's input or output. It is built from the
// family's description (families/<model_type>.cpp) and the resolved config, never written per family. From it come the
// support table's "read at" places (Family::readAt), the native spellings that name a standard value
// ("layers.3.input_layernorm.output" is attention_norm_output), the family page's block steps and the printout's set of
// modules; tests check that the forward pass (core/model/model.cpp, hand-written) taps the values in the table's order.
#include "core/model/config.h"
#include "core/model/family.h"

#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// Where a step's value is read on its module: the module's input, its output, or inside the host's forward (the
/// eager attention interior, which has no module of its own).
enum class ReadSide { Input, Output, Inside };

/// One value read at one step.
struct StepValue {
    Value value;
    ReadSide side = ReadSide::Output;
    /// The value is the module's input or output tensor as it is, so `<module>.<side>` names it. False for
    /// attention_premix, which is o_proj's input [batch, seq, num_heads * head_dim] viewed per head.
    bool sameTensor = true;
    /// Another place where a value already read at an earlier step can be read (self_attn's input is
    /// input_layernorm's output): named and shown, but the forward pass does not tap it again.
    bool repeat = false;
};

/// One step of the forward pass: the child module read (or none: the host module itself) and the values read there,
/// in the order the pass computes them. A step may read no value (position embeddings, dropouts): it still names a
/// module of the tree.
struct BlockStep {
    Host host = Host::Layer;       ///< whose forward runs the step: the model's root, the block, its attention or its MLP
    std::optional<Module> module;  ///< the child module; none when the values are the host's own input, output or interior
    std::vector<StepValue> values;
};

/// Every name of module `m` in `family`, the standard one first: "o_proj/dense" gives {"o_proj", "dense"}, and a rename
/// (Persimmon's final_layernorm, shown as norm) gives {"norm", "final_layernorm"}; empty when the family has no such module.
std::vector<std::string> moduleNames(const Family& family, Module m);

/// The forward pass of `family` with `config`, in order: the root's steps before the blocks, one block's steps (every
/// block runs the same steps), the root's steps after. Steps and values the config switches off are absent (q_norm
/// without qk norms, o_proj's bias does not matter here). Each standard value appears exactly once without `repeat`;
/// each native value the checkpoint has (Family::hasValue) once.
std::vector<BlockStep> forwardSteps(const Family& family, const ModelConfig& config);
/// The steps block `layer` runs: forwardSteps(family, config) without the dense MLP's steps on a block whose MLP has
/// experts, and without the mixture's on one whose MLP is dense (a family without experts: every block's, the same).
std::vector<BlockStep> forwardSteps(const Family& family, const ModelConfig& config, int layer);
/// Whether `m` is one of a mixture of experts' modules (router, experts, shared expert and their parts).
bool isMixtureModule(Module m);
/// The same from the family's own switches alone (q/k norms as family.qkNorm), for what does not depend on a checkpoint
/// (the support table of a family).
std::vector<BlockStep> forwardSteps(const Family& family);

/// The "read at" text of a value at its step: "the module's own output", "the child module o_proj's input", or for the
/// attention interior where nnterp reads it inside the forward.
std::string readAtText(const Family& family, const BlockStep& step, const StepValue& value);

/// A native spelling of a standard value: `suffix` after "layers.<i>." (block hosts) or at the root, e.g.
/// "input_layernorm.output", "mlp.down_proj.input", "self_attn.output"; one per name of the module ("o_proj/dense").
struct ValueSpelling {
    bool root = false;
    std::string suffix;
    Value value;
};
/// Every native spelling of a standard value read at a module's input or output as the very tensor (not the interior,
/// not attention_premix, not the root's own input and output). Where several values are read at one place (OLMo 2's
/// mlp input is layer_mid, mlp_norm_output and mlp_input) the spelling names the last, the most specific.
std::vector<ValueSpelling> valueSpellings(const Family& family, const ModelConfig& config);

/// The feature a module shows in the block's description ("RMSNorm", "fused · [q | k | v]", "biased", "gelu_new"),
/// empty where there is none.
std::string moduleDetail(const Family& family, const ModelConfig& config, Module module);

/// "The block, in order" as formulas, generated from the block table for this config and written with the checkpoint's
/// own module names, as the seeds write them: "h   = x + self_attn(input_layernorm(x))", "out = h + mlp(...)" (Gemma's
/// and OLMo 2's branch norms around the branches, GPT-2's learned positions first, GPT-NeoX's parallel residual as one
/// line, Persimmon's eval-mode dropout), then the family's own MLP formulas (Family::mlpFormulas).
std::vector<std::string> blockFormulas(const Family& family, const ModelConfig& config);

/// The family page's block steps: one line per step of a block, in order, e.g. "`input_layernorm` (RMSNorm) →
/// `attention_norm_output`" (markdown code spans).
std::vector<std::string> blockStepLines(const Family& family, const ModelConfig& config);

}  // namespace nnscope
