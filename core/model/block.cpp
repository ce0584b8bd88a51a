// SPDX-License-Identifier: MIT
#include "core/model/block.h"

#include "core/model/error.h"

#include <cstdio>
#include <map>
#include <set>

namespace nnscope {
namespace {

StepValue in(Value v) { return {v, ReadSide::Input}; }
StepValue out(Value v) { return {v, ReadSide::Output}; }
StepValue inside(Value v) { return {v, ReadSide::Inside}; }
StepValue again(Value v, ReadSide side) {
    StepValue s{v, side};
    s.repeat = true;
    return s;
}

}  // namespace

std::vector<std::string> moduleNames(const Family& f, Module m) {
    auto it = f.modules.find(m);
    if (it == f.modules.end()) return {};
    const ModuleSpec& spec = it->second;
    if (spec.standard.empty()) return {spec.native};
    return {spec.standard, spec.native};
}

namespace {

std::string sideWord(ReadSide s) { return s == ReadSide::Input ? "input" : "output"; }

}  // namespace

std::vector<BlockStep> forwardSteps(const Family& f, const ModelConfig& c) {
    const BlockNorms& bn = f.blockNorms;
    std::vector<BlockStep> s;
    auto step = [&](Host host, std::optional<Module> module, std::vector<StepValue> values) {
        s.push_back(BlockStep{host, module, std::move(values)});
    };
    // The root, before the blocks: the call's own inputs, the embeddings (and GPT-2's learned positions, added to them).
    step(Host::Model, std::nullopt, {in(Value::InputIds), in(Value::AttentionMask), in(Value::InputSize)});
    step(Host::Model, Module::EmbedTokens, {out(Value::TokenEmbeddings)});
    if (f.positions == PositionKind::Learned) step(Host::Model, Module::PositionEmbeddings, {});

    // One block.
    step(Host::Layer, std::nullopt, {in(Value::LayerInput)});
    if (bn.beforeAttention) {
        step(Host::Layer, Module::InputNorm,
             {inside(Value::NativeInputNormScale), inside(Value::NativeInputNormNormalized), out(Value::AttentionNormOutput)});
        step(Host::Layer, Module::SelfAttn, {again(Value::AttentionNormOutput, ReadSide::Input)});
    } else {  // OLMo 2: the stream itself enters the attention
        step(Host::Layer, Module::SelfAttn, {in(Value::AttentionNormOutput)});
    }
    if (c.mla.enabled) {
        // Multi-head latent attention: the query latent (or q_proj), the shared key/value latent with the rotary key part,
        // the split heads after the rotary, then kv_b_proj expands the latent into every head's key and value.
        if (c.mla.qLoraRank > 0) {
            step(Host::Attention, Module::QAProj, {});
            step(Host::Attention, Module::QALayernorm, {out(Value::QLatent)});
            step(Host::Attention, Module::QBProj, {});
        } else {
            step(Host::Attention, Module::QProj, {out(Value::NativeQProjOutput)});
        }
        step(Host::Attention, Module::KvAProjWithMqa, {});
        step(Host::Attention, Module::KvALayernorm, {out(Value::KvLatent)});
        step(Host::Attention, std::nullopt, {inside(Value::QueryNope), inside(Value::QueryRope), inside(Value::KeyRope)});
        step(Host::Attention, Module::KvBProj, {});
    } else if (f.qkv == QkvLayout::Separate) {
        step(Host::Attention, Module::QProj, {out(Value::NativeQProjOutput)});
        step(Host::Attention, Module::KProj, {out(Value::NativeKProjOutput)});
        step(Host::Attention, Module::VProj, {out(Value::NativeVProjOutput)});
    } else {
        step(Host::Attention, Module::QkvProj, {out(Value::NativeQkvProjOutput)});
    }
    if (c.qkNorm) {
        step(Host::Attention, Module::QNorm, {out(Value::NativeQNormOutput)});
        step(Host::Attention, Module::KNorm, {out(Value::NativeKNormOutput)});
    }
    step(Host::Attention, std::nullopt,
         {inside(Value::AttentionQueries), inside(Value::AttentionKeys), inside(Value::AttentionValues),
          inside(Value::AttentionScores), inside(Value::AttentionProbabilities), inside(Value::AttentionHeadOutputs)});
    if (f.hasModule(Module::AttentionDropout)) step(Host::Attention, Module::AttentionDropout, {});
    StepValue premix = in(Value::AttentionPremix);
    premix.sameTensor = false;
    step(Host::Attention, Module::OProj, {premix});
    step(Host::Attention, std::nullopt, {out(Value::AttentionOutput)});
    if (bn.afterAttention)
        step(Host::Layer, Module::AttentionOutputNorm,
             {inside(Value::NativeAttentionOutputNormScale), out(Value::NativeAttentionOutputNormOutput)});
    if (bn.beforeMlp || c.parallelResidual) {
        // Under GPT-NeoX's parallel residual the MLP's norm reads the block's input, so layer_mid is that input.
        step(Host::Layer, Module::PostAttentionNorm,
             {in(Value::LayerMid), inside(Value::NativePostAttentionNormScale), inside(Value::NativePostAttentionNormNormalized),
              out(Value::MlpNormOutput)});
        step(Host::Layer, Module::Mlp, {in(Value::MlpInput)});
    } else {  // OLMo 2: the stream after the attention add is the MLP's input, unnormed
        step(Host::Layer, Module::Mlp, {in(Value::LayerMid), in(Value::MlpNormOutput), in(Value::MlpInput)});
    }
    // A family with experts: the dense MLP's steps where some block is dense, the mixture's where some block has experts
    // (forwardSteps(family, config, layer) keeps one block's own).
    const bool dense = !f.experts || c.anyDenseMlp();
    const bool sparse = f.experts && c.anySparseMlp();
    if (dense) {
        if (f.mlp == MlpKind::GatedFused) {
            step(Host::Mlp, Module::GateUpProj, {out(Value::NativeGateUpProjOutput)});
        } else {
            if (f.mlp == MlpKind::Gated) step(Host::Mlp, Module::GateProj, {out(Value::NativeGateProjOutput)});
            step(Host::Mlp, Module::UpProj, {out(Value::NativeUpProjOutput)});
        }
        step(Host::Mlp, Module::ActFn, {in(Value::NativeActFnInput), out(Value::MlpActivation)});
        step(Host::Mlp, Module::DownProj, {in(Value::MlpNeurons)});
    }
    if (sparse) {
        step(Host::Mlp, Module::Router, {out(Value::RouterLogits), inside(Value::ExpertIndices), inside(Value::ExpertWeights)});
        step(Host::Mlp, Module::Experts, {inside(Value::ExpertOutputs), out(Value::RoutedOutput)});
        if (c.moe.sharedExpertIntermediateSize > 0) {
            if (f.hasModule(Module::SharedExpertGate)) {  // Qwen2-MoE: the output times a sigmoid gate
                step(Host::Mlp, Module::SharedExpert, {});
                step(Host::Mlp, Module::SharedExpertGate, {});
                step(Host::Mlp, std::nullopt, {inside(Value::SharedExpertOutput)});
            } else {  // DeepSeek, GLM: the shared experts' own output
                step(Host::Mlp, Module::SharedExpert, {out(Value::SharedExpertOutput)});
            }
        }
    }
    step(Host::Mlp, std::nullopt, {out(Value::MlpOutput)});
    if (bn.afterMlp)
        step(Host::Layer, Module::MlpOutputNorm, {inside(Value::NativeMlpOutputNormScale), out(Value::NativeMlpOutputNormOutput)});
    if (f.hasModule(Module::LayerDropout)) step(Host::Layer, Module::LayerDropout, {});
    step(Host::Layer, std::nullopt, {out(Value::LayerOutput)});

    // The root, after the blocks.
    step(Host::Model, Module::Norm, {inside(Value::NativeFinalNormScale), out(Value::FinalNormOutput)});
    step(Host::Model, Module::LmHead, {out(Value::LmHeadOutput)});
    step(Host::Model, std::nullopt, {out(Value::Logits), out(Value::NextTokenProbs)});
    return s;
}

std::vector<BlockStep> forwardSteps(const Family& f) {
    ModelConfig c;
    c.qkNorm = f.qkNorm;
    if (f.experts) {  // both kinds of block, and the shared expert where the family has one
        c.numLayers = 2;
        c.moe.layerSparse = {true, false};
        if (f.hasModule(Module::SharedExpert)) c.moe.sharedExpertIntermediateSize = 1;
    }
    if (f.latentAttention) {  // with the query latent (q_lora_rank set)
        c.mla.enabled = true;
        c.mla.qLoraRank = 1;
    }
    return forwardSteps(f, c);
}

bool isMixtureModule(Module m) {
    return m == Module::Router || m == Module::Experts || m == Module::ExpertGateProj || m == Module::ExpertUpProj ||
           m == Module::ExpertDownProj || m == Module::SharedExpert || m == Module::SharedGateProj || m == Module::SharedUpProj ||
           m == Module::SharedDownProj || m == Module::SharedExpertGate;
}

std::vector<BlockStep> forwardSteps(const Family& f, const ModelConfig& c, int layer) {
    std::vector<BlockStep> all = forwardSteps(f, c);
    if (!f.experts || layer < 0) return all;
    const bool sparse = c.sparseMlp(layer);
    std::vector<BlockStep> out;
    for (BlockStep& step : all) {
        if (step.module && step.host == Host::Mlp && isMixtureModule(*step.module) != sparse) continue;
        std::vector<StepValue> kept;
        for (const StepValue& sv : step.values)
            if (step.host == Host::Model || f.hasValueAt(sv.value, c, layer)) kept.push_back(sv);
        if (!step.module && !step.values.empty() && kept.empty()) continue;
        step.values = std::move(kept);
        out.push_back(std::move(step));
    }
    return out;
}

std::string readAtText(const Family& f, const BlockStep& step, const StepValue& v) {
    if (v.side == ReadSide::Inside) {
        const char* where = valueInfo(v.value).inside;
        return where ? std::string("inside the forward: ") + where : "inside the forward";
    }
    if (!step.module) return "the module's own " + sideWord(v.side);
    return "the child module " + f.moduleName(*step.module) + "'s " + sideWord(v.side);
}

std::string Family::readAt(Value v) const {
    for (const BlockStep& step : forwardSteps(*this))
        for (const StepValue& sv : step.values)
            if (sv.value == v && !sv.repeat) return readAtText(*this, step, sv);
    return {};  // a native value this family's switches leave out
}

std::vector<ValueSpelling> valueSpellings(const Family& f, const ModelConfig& c) {
    std::vector<ValueSpelling> out;
    std::map<std::pair<bool, std::string>, size_t> at;  // a place's spelling -> its entry (the last value wins)
    for (const BlockStep& step : forwardSteps(f, c)) {
        if (!step.module && step.host == Host::Model) continue;  // the root's own input and output are not one value
        for (const StepValue& sv : step.values) {
            if (sv.value >= Value::NativeQProjOutput || sv.side == ReadSide::Inside || !sv.sameTensor) continue;
            std::vector<std::string> places;
            if (step.module) {
                for (const std::string& name : moduleNames(f, *step.module))
                    places.push_back(hostPrefix(step.host) + name + "." + sideWord(sv.side));
            } else {
                // the host itself: the block's "input"/"output", the attention's "self_attn.output", the MLP's "mlp.output"
                const std::string host = hostPrefix(step.host);
                places.push_back(host + sideWord(sv.side));
            }
            for (const std::string& p : places) {
                const auto key = std::make_pair(step.host == Host::Model, p);
                auto it = at.find(key);
                if (it == at.end()) {
                    at[key] = out.size();
                    out.push_back({step.host == Host::Model, p, sv.value});
                } else {
                    out[it->second].value = sv.value;
                }
            }
        }
    }
    return out;
}

std::string moduleDetail(const Family& f, const ModelConfig& c, Module m) {
    auto normName = [](NormKind k) {
        return k == NormKind::LayerNorm ? "LayerNorm" : k == NormKind::RMSNorm ? "RMSNorm" : "RMSNorm with (1 + weight)";
    };
    switch (m) {
        case Module::EmbedTokens: return c.embedScale != 1.0 ? "scaled by √hidden_size" : "";
        case Module::PositionEmbeddings: return "learned positions, added to the token embeddings";
        case Module::InputNorm:
        case Module::PostAttentionNorm:
        case Module::Norm: return normName(f.norm);
        case Module::AttentionOutputNorm:
        case Module::MlpOutputNorm: return std::string(normName(f.norm)) + " of the branch's output";
        case Module::QNorm:
        case Module::KNorm:
            return std::string(normName(f.qkNormKind)) +
                   (f.qkNormScope == QkNormScope::WholeProjection ? " over the whole projection" : " per head, one gain for every head");
        case Module::QProj:
        case Module::KProj:
        case Module::VProj: return c.attentionBias ? "biased" : "";
        case Module::QkvProj: {
            std::string d = f.qkv == QkvLayout::FusedPerHead ? "fused, laid out [num_heads, 3, head_dim]" : "fused, [q | k | v]";
            return c.attentionBias ? d + ", biased" : d;
        }
        case Module::OProj: return c.oProjBias ? "biased" : "";
        case Module::GateUpProj: return c.mlpBias ? "fused, [gate | up], biased" : "fused, [gate | up]";
        case Module::GateProj:
        case Module::UpProj:
        case Module::DownProj: return c.mlpBias ? "biased" : "";
        case Module::ActFn: return c.hiddenAct;
        case Module::Router: {
            const MoeConfig& m = c.moe;
            const std::string n = std::to_string(m.numExperts), k = std::to_string(m.topK);
            const std::string groups = " of the best " + std::to_string(m.topkGroup) + " of " + std::to_string(m.numGroups) + " groups";
            char scale[32];
            std::snprintf(scale, sizeof scale, "%g", m.routedScalingFactor);
            if (m.router == RouterKind::SigmoidGroupTopK)
                return "Linear hidden_size → " + n + " experts in float32; sigmoid, + e_score_correction_bias for the choice, the top " + k +
                       (m.numGroups > 1 ? groups + " (a group scored by its two best)" : std::string()) +
                       (m.normTopkProb ? "; the uncorrected scores renormalised" : "; the uncorrected scores") + ", × " + scale;
            if (m.router == RouterKind::SoftmaxGroupGreedy)
                return "Linear hidden_size → " + n + " experts in float32; softmax, the top " + k +
                       (m.groupLimited ? groups + " (a group scored by its best)" : std::string()) + ", × " + scale;
            return "Linear hidden_size → " + n + " experts; softmax, then the top " + k +
                   (m.normTopkProb ? ", renormalised to sum 1" : ", not renormalised");
        }
        case Module::QAProj: return "Linear hidden_size → q_lora_rank " + std::to_string(c.mla.qLoraRank) + (c.attentionBias ? ", biased" : "");
        case Module::QALayernorm:
        case Module::KvALayernorm: return "RMSNorm of the latent";
        case Module::QBProj: return "Linear q_lora_rank → num_heads × qk_head_dim " + std::to_string(c.qkHeadDim());
        case Module::KvAProjWithMqa:
            return "Linear hidden_size → kv_lora_rank " + std::to_string(c.mla.kvLoraRank) + " + qk_rope_head_dim " +
                   std::to_string(c.mla.qkRopeHeadDim) + (c.attentionBias ? ", biased" : "");
        case Module::KvBProj:
            return "Linear kv_lora_rank → num_heads × (qk_nope_head_dim " + std::to_string(c.mla.qkNopeHeadDim) + " + v_head_dim " +
                   std::to_string(c.mla.vHeadDim) + ")";
        case Module::Experts:
            return std::to_string(c.moe.numExperts) + " gated " + c.hiddenAct + " MLPs of " + std::to_string(c.moe.expertIntermediateSize) +
                   " neurons; only the chosen ones run";
        case Module::SharedExpert:
            return "a gated " + c.hiddenAct + " MLP of " + std::to_string(c.moe.sharedExpertIntermediateSize) + " neurons, for every token" +
                   (f.hasModule(Module::SharedExpertGate) ? "" : ", ungated");
        case Module::SharedExpertGate: return "Linear hidden_size → 1, through a sigmoid: the shared expert's weight";
        case Module::AttentionDropout:
        case Module::LayerDropout: return "the identity in eval";
        default: return "";
    }
}

std::vector<std::string> blockFormulas(const Family& f, const ModelConfig& c) {
    std::set<Module> present;
    for (const BlockStep& step : forwardSteps(f, c))
        if (step.module) present.insert(*step.module);
    auto name = [&](Module m) { return f.modules.at(m).native; };
    auto around = [&](Module norm, const std::string& inner) { return present.count(norm) ? name(norm) + "(" + inner + ")" : inner; };
    std::vector<std::string> lines;
    if (present.count(Module::PositionEmbeddings))
        lines.push_back("x0  = " + name(Module::EmbedTokens) + "(ids) + " + name(Module::PositionEmbeddings) + "(positions)");
    const std::string attention = around(Module::AttentionOutputNorm, name(Module::SelfAttn) + "(" + around(Module::InputNorm, "x") + ")");
    auto mlp = [&](const std::string& stream) {
        return around(Module::MlpOutputNorm, name(Module::Mlp) + "(" + around(Module::PostAttentionNorm, stream) + ")");
    };
    if (c.parallelResidual) {
        lines.push_back("out = x + " + attention + " + " + mlp("x") + "   # use_parallel_residual");
    } else {
        lines.push_back("h   = x + " + attention);
        if (present.count(Module::LayerDropout))
            lines.push_back("out = h + " + name(Module::LayerDropout) + "(" + mlp("h") + ")     # " + name(Module::LayerDropout) +
                            " is the identity in eval");
        else
            lines.push_back("out = h + " + mlp("h"));
    }
    lines.insert(lines.end(), f.mlpFormulas.begin(), f.mlpFormulas.end());
    return lines;
}

std::vector<std::string> blockStepLines(const Family& f, const ModelConfig& c) {
    std::vector<std::string> lines;
    auto code = [](const std::string& s) { return "`" + s + "`"; };
    for (const BlockStep& step : forwardSteps(f, c)) {
        if (step.host == Host::Model) continue;
        std::vector<std::string> ins, outs;
        for (const StepValue& sv : step.values) {
            if (sv.repeat) continue;
            const ValueInfo& info = valueInfo(sv.value);
            const std::string name = sv.value >= Value::NativeQProjOutput ? f.moduleName(*step.module) + "." + info.name : info.name;
            (sv.side == ReadSide::Input ? ins : outs).push_back(code(name));
        }
        auto join = [](const std::vector<std::string>& v, const char* sep) {
            std::string s;
            for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
            return s;
        };
        std::string line;
        if (!step.module) {
            if (step.host == Host::Layer)
                line = ins.empty() ? "+ residual → " + join(outs, ", ") : join(ins, ", ") + ": the residual stream entering block i";
            else if (step.host == Host::Mlp && step.values.front().side == ReadSide::Inside)
                line = code(f.moduleName(Module::Mlp)) + "'s forward → " + join(outs, ", ");
            else if (step.values.front().value == Value::QueryNope) {
                line = "heads split: q → `query_nope` (" + std::to_string(c.mla.qkNopeHeadDim) + " dims), rotary (" +
                       (f.rotary == RotaryStyle::AdjacentPairs ? "adjacent pairs, in float32"
                        : c.mla.ropeInterleave             ? "adjacent pairs, the result de-interleaved"
                                                           : "rotate_half") +
                       ", rope_type " + c.rope.type + ") on the last " + std::to_string(c.mla.qkRopeHeadDim) +
                       " → `query_rope`; kv_a_proj_with_mqa's last " + std::to_string(c.mla.qkRopeHeadDim) +
                       " outputs, rotated → `key_rope` (one for every head)";
            } else if (step.values.front().side == ReadSide::Inside) {
                std::string rotary = f.positions == PositionKind::Learned
                                         ? "heads split (no rotary: positions were added to the embeddings)"
                                         : std::string("rotary (") + (f.rotary == RotaryStyle::AdjacentPairs ? "adjacent pairs" : "rotate_half") +
                                               ", " + std::to_string(c.rotaryDim()) + " of " + std::to_string(c.headDim) +
                                               " dims of each head, rope_type " + c.rope.type + ")";
                std::string nope;  // SmolLM3's NoPE blocks: no rotary at all
                for (int64_t i = 0; i < c.numLayers; ++i)
                    if (!c.rotates(i)) nope += (nope.empty() ? "" : ", ") + std::to_string(i);
                if (!nope.empty()) rotary += ", none in the NoPE blocks " + nope;
                std::string scores = c.attnLogitSoftcap ? "softcap(q·kᵀ·scaling) + mask" : "q·kᵀ·scaling + mask";
                if (c.slidingWindow > 0) scores += " (a window of " + std::to_string(c.slidingWindow) + " keys on sliding layers)";
                if (c.mla.enabled)
                    rotary = "q = [query_nope | query_rope], k = [kv_b_proj's key part | key_rope] per head, v = kv_b_proj's value "
                             "part (" + std::to_string(c.mla.vHeadDim) + " dims)";
                line = "attention interior: " + rotary + " → `attention_queries`, `attention_keys` (" + std::to_string(c.numKvHeads) +
                       " kv heads), `attention_values` → " + scores + " → `attention_scores` → softmax → `attention_probabilities` → × values → "
                       "`attention_head_outputs`";
            } else {
                line = code(f.moduleName(step.host == Host::Attention ? Module::SelfAttn : Module::Mlp)) + "'s output → " + join(outs, ", ");
            }
        } else {
            line = code(f.moduleLabel(*step.module));
            const std::string detail = moduleDetail(f, c, *step.module);
            if (!detail.empty()) line += " (" + detail + ")";
            if (!ins.empty()) line = join(ins, ", ") + " → " + line;
            if (!outs.empty()) line += " → " + join(outs, ", ");
        }
        lines.push_back(line);
    }
    return lines;
}

}  // namespace nnscope
