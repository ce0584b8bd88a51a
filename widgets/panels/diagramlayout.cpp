// SPDX-License-Identifier: MIT
#include "widgets/panels/diagramlayout.h"

#include "core/model/block.h"
#include "core/pages/support.h"

#include <set>

namespace nnscope {

const DiagramPart* DiagramLayout::part(const QString& id) const {
    for (const auto& p : parts)
        if (p.id == id) return &p;
    return nullptr;
}

const DiagramPart* DiagramLayout::partForValue(Value v) const {
    for (const auto& p : parts)
        if (p.value && *p.value == v) return &p;
    return nullptr;
}

const DiagramPart* DiagramLayout::partForModule(Module m) const {
    for (const auto& p : parts)
        if (p.module && *p.module == m) return &p;
    return nullptr;
}

namespace {

// Diagram units (the widget scales them to its width).
constexpr double kWidth = 460;
constexpr double kFrameLeft = 8, kFrameRight = kWidth - 8;
constexpr double kStreamX = 66;                 // the residual stream's line inside the block
constexpr double kPillWidth = 108;
constexpr double kBranchPillWidth = 150;       // value pills inside the attention and MLP frames
constexpr double kBranchLeft = 128, kBranchRight = kWidth - 16;
constexpr double kBoxHeight = 40, kPillHeight = 22, kGap = 10, kTitleHeight = 24;
constexpr double kStripWidth = 136;

QString q(const std::string& s) { return QString::fromStdString(s); }

class Builder {
public:
    Builder(const Family& f, const ModelConfig& c) : f_(f), c_(c) {
        // Which boxes exist comes from the block description (core/model/block.h); the builder only places them.
        for (const BlockStep& step : forwardSteps(f, c))
            if (step.module) modules_.insert(*step.module);
    }

    DiagramLayout build() {
        strip();
        block();
        out_.size = QSizeF(kWidth, y_ + 8);
        return std::move(out_);
    }

private:
    QRectF add(const QString& id, DiagramPart::Kind kind, const QString& title, const QString& detail,
               std::optional<Value> value, std::optional<Module> module, const QRectF& rect, bool perBlock = true) {
        DiagramPart p;
        p.id = id;
        p.kind = kind;
        p.title = title;
        p.detail = detail;
        p.value = value;
        p.module = module;
        p.rect = rect;
        p.perBlock = perBlock;
        out_.parts.push_back(std::move(p));
        return rect;
    }
    QRectF box(const QString& id, Module m, const QString& detail, std::optional<Value> v, const QRectF& r, bool perBlock = true) {
        return add(id, DiagramPart::ModuleBox, q(f_.moduleLabel(m)), detail, v, m, r, perBlock);
    }
    void arrow(QPolygonF line) { out_.arrows.push_back(std::move(line)); }
    // from the bottom of `a` to the top of `b`, with a dog-leg when they are not aligned
    void down(const QRectF& a, const QRectF& b, double ax = -1, double bx = -1) {
        const double x0 = ax < 0 ? a.center().x() : ax, x1 = bx < 0 ? b.center().x() : bx;
        if (qFuzzyCompare(x0, x1)) {
            arrow(QPolygonF({QPointF(x0, a.bottom()), QPointF(x1, b.top())}));
        } else {
            const double mid = (a.bottom() + b.top()) / 2;
            arrow(QPolygonF({QPointF(x0, a.bottom()), QPointF(x0, mid), QPointF(x1, mid), QPointF(x1, b.top())}));
        }
    }
    QString normKind(NormKind k) const {
        return k == NormKind::RMSNorm ? "RMSNorm" : k == NormKind::LayerNorm ? "LayerNorm" : "RMSNorm · (1 + w)";
    }
    QRectF row(double left, double right, double height = kBoxHeight) const { return QRectF(left, y_, right - left, height); }

    // The model's root as the seeds' strip: embed_tokens -> layers x N -> norm -> lm_head -> logits, in two rows.
    void strip() {
        const double gap = (kWidth - 16 - 3 * kStripWidth) / 2;
        auto col = [&](int i) { return 8 + i * (kStripWidth + gap); };
        y_ = 8;
        QString embedDetail = "Embedding";
        if (f_.positions == PositionKind::Learned) embedDetail += " + wpe";
        if (c_.embedScale != 1.0) embedDetail += " · ×√hidden";
        const QRectF embed = box("embed_tokens", Module::EmbedTokens, embedDetail, Value::TokenEmbeddings,
                                 row(col(0), col(0) + kStripWidth), false);
        const QRectF layers = add("layers", DiagramPart::ModuleBox, q(f_.moduleLabel(Module::Layers)),
                                  QString("× %1 · layers[i] below").arg(c_.numLayers), std::nullopt,
                                  Module::Layers, row(col(1), col(1) + kStripWidth), false);
        const QRectF norm = box("norm", Module::Norm, normKind(f_.norm), Value::FinalNormOutput, row(col(2), col(2) + kStripWidth), false);
        arrow(QPolygonF({QPointF(embed.right(), embed.center().y()), QPointF(layers.left(), layers.center().y())}));
        arrow(QPolygonF({QPointF(layers.right(), layers.center().y()), QPointF(norm.left(), norm.center().y())}));
        y_ += kBoxHeight + kGap + 4;
        const QRectF head = box("lm_head", Module::LmHead, c_.tieWordEmbeddings ? "tied to embed_tokens" : "Linear",
                                Value::LmHeadOutput, row(col(2), col(2) + kStripWidth), false);
        const QRectF logits = add("logits", DiagramPart::Stream, "logits", "the output", Value::Logits,
                                  std::nullopt, row(col(1), col(1) + kStripWidth), false);
        down(norm, head);
        arrow(QPolygonF({QPointF(head.left(), head.center().y()), QPointF(logits.right(), logits.center().y())}));
        layersBox_ = layers;
        y_ += kBoxHeight + 2 * kGap;
    }

    void block() {
        const double frameTop = y_;
        out_.blockTitle = q(hostClass(f_, Host::Layer));
        out_.attentionTitle = q(hostClass(f_, Host::Attention));
        out_.mlpTitle = q(hostClass(f_, Host::Mlp));
        y_ += kTitleHeight + 4;
        const QRectF input = add("layer_input", DiagramPart::Stream, "layer_input", "layers[i].input", Value::LayerInput,
                                 std::nullopt, row(kStreamX - kPillWidth / 2, kStreamX + kPillWidth / 2, kPillHeight));
        y_ += kPillHeight + kGap;
        const QRectF mid = attention();
        const QRectF output = mlp();
        out_.stream = QPolygonF({QPointF(kStreamX, input.bottom()), QPointF(kStreamX, mid.top())});
        out_.stream << QPointF(kStreamX, mid.bottom()) << QPointF(kStreamX, output.top());
        out_.blockFrame = QRectF(kFrameLeft, frameTop, kFrameRight - kFrameLeft, y_ - frameTop);
        y_ += kGap;
    }

    // The stream branches right into a norm; returns the norm's rect.
    QRectF branchNorm(const QString& id, Module m, Value v, bool present = true) {
        // A family without this pre-norm (OLMo 2) still has the value: the stream itself enters the branch.
        const QRectF r = present ? box(id, m, normKind(f_.norm), v, row(kBranchLeft, kBranchRight))
                                 : add(id, DiagramPart::Operation, "no pre-norm", "the stream itself", v, std::nullopt,
                                       row(kBranchLeft, kBranchRight));
        arrow(QPolygonF({QPointF(kStreamX, r.center().y()), QPointF(r.left(), r.center().y())}));
        y_ += kBoxHeight + kGap;
        return r;
    }

    // A norm of a branch's output before the residual add (Gemma, OLMo 2): what the stream receives, not a standard value.
    QRectF postNorm(const QString& id, Module m, const QRectF& from, double left, double right) {
        const QRectF r = add(id, DiagramPart::Operation, q(f_.moduleLabel(m)), normKind(f_.norm) + " · on the output", std::nullopt, m,
                             row(left, right));
        down(from, r);
        y_ += kBoxHeight + kGap;
        return r;
    }

    QRectF residualAdd(const QString& id, Value v, const QRectF& from) {
        const QRectF r = add(id, DiagramPart::Add, id, "residual add", v, std::nullopt,
                             row(kStreamX - kPillWidth / 2, kStreamX + kPillWidth / 2, kPillHeight + 4));
        arrow(QPolygonF({QPointF(from.center().x(), from.bottom()), QPointF(from.center().x(), r.center().y()),
                         QPointF(r.right(), r.center().y())}));
        y_ += kPillHeight + 4 + kGap;
        return r;
    }

    QRectF attention() {
        const QRectF norm = branchNorm("input_layernorm", Module::InputNorm, Value::AttentionNormOutput, has(Module::InputNorm));
        const double top = y_;
        y_ += kTitleHeight;
        const double left = kBranchLeft + 8, right = kBranchRight - 8, w = (right - left - 2 * 8) / 3;
        auto col = [&](int i) { return left + i * (w + 8); };
        const QString bias = c_.attentionBias ? "biased" : "";
        QRectF qr, kr, vr, rq, rk, hv;
        if (c_.mla.enabled) {
            // Multi-head latent attention: the query latent (or q_proj) in the first column; the shared key/value latent and
            // the shared rotary key part from kv_a_proj_with_mqa in the other two; kv_b_proj expands the latent per head.
            const MlaConfig& m = c_.mla;
            const bool latentQ = has(Module::QAProj);
            // row 1: q_a_proj (or q_proj) beside kv_a_proj_with_mqa
            qr = latentQ ? box("q_a_proj", Module::QAProj, QString("→ %1").arg(m.qLoraRank), std::nullopt, row(col(0), col(0) + w))
                         : box("q_proj", Module::QProj, "", Value::NativeQProjOutput, row(col(0), col(0) + w));
            const QRectF kva = box("kv_a_proj_with_mqa", Module::KvAProjWithMqa, QString("→ %1 + %2").arg(m.kvLoraRank).arg(m.qkRopeHeadDim),
                                   std::nullopt, row(col(1), col(2) + w));
            down(norm, qr, qr.center().x(), qr.center().x());
            down(norm, kva, kva.center().x(), kva.center().x());
            y_ += kBoxHeight + kGap;
            // row 2: q_a_layernorm, kv_a_layernorm, the shared rotary key part
            if (latentQ) {
                const QRectF qn = box("q_a_layernorm", Module::QALayernorm, "RMSNorm", Value::QLatent, row(col(0), col(0) + w));
                down(qr, qn);
                qr = qn;
            }
            const QRectF kvn = box("kv_a_layernorm", Module::KvALayernorm, "RMSNorm", Value::KvLatent, row(col(1), col(1) + w));
            const QRectF kro = add("key_rope", DiagramPart::Operation, "rotary", "shared key part", Value::KeyRope, std::nullopt, row(col(2), col(2) + w));
            down(kva, kvn, kvn.center().x(), kvn.center().x());
            down(kva, kro, kro.center().x(), kro.center().x());
            y_ += kBoxHeight + kGap;
            // row 3: q_b_proj, kv_b_proj
            if (latentQ) {
                const QRectF qb = box("q_b_proj", Module::QBProj, "per head", std::nullopt, row(col(0), col(0) + w));
                down(qr, qb);
                qr = qb;
            }
            const QRectF kvb = box("kv_b_proj", Module::KvBProj, "key and value per head", std::nullopt, row(col(1), col(1) + w));
            down(kvn, kvb);
            y_ += kBoxHeight + kGap;
            // row 4: the query heads split and their rope part turned
            const QRectF qs = add("query_rope", DiagramPart::Operation, "split · rotary", "query_nope | query_rope", Value::QueryRope,
                                  std::nullopt, row(col(0), col(0) + w));
            down(qr, qs);
            y_ += kBoxHeight + kGap;
            rq = add("rotary_q", DiagramPart::Operation, "queries", "[nope | rope]", Value::AttentionQueries, std::nullopt, row(col(0), col(0) + w));
            rk = add("rotary_k", DiagramPart::Operation, "keys", "[nope | key_rope]", Value::AttentionKeys, std::nullopt, row(col(1), col(1) + w));
            hv = add("values", DiagramPart::Operation, "values", QString("v_head_dim %1").arg(m.vHeadDim), Value::AttentionValues,
                     std::nullopt, row(col(2), col(2) + w));
            down(qs, rq);
            down(kvb, rk, rk.center().x(), rk.center().x());
            down(kro, rk, kro.center().x(), rk.center().x() + w / 4);
            down(kvb, hv, kvb.right() - 4, hv.center().x());
            y_ += kBoxHeight + kGap;
        } else {
        if (has(Module::QkvProj)) {
            const QString layout = f_.qkv == QkvLayout::FusedPerHead ? "fused · [heads, 3, head_dim]" : "fused · [q | k | v]";
            const QRectF r = box("qkv_proj", Module::QkvProj, layout, Value::NativeQkvProjOutput, row(left, right));
            down(norm, r);
            qr = QRectF(col(0), r.top(), w, r.height());
            kr = QRectF(col(1), r.top(), w, r.height());
            vr = QRectF(col(2), r.top(), w, r.height());
        } else {
            qr = box("q_proj", Module::QProj, bias, Value::NativeQProjOutput, row(col(0), col(0) + w));
            kr = box("k_proj", Module::KProj, bias, Value::NativeKProjOutput, row(col(1), col(1) + w));
            vr = box("v_proj", Module::VProj, bias, Value::NativeVProjOutput, row(col(2), col(2) + w));
            for (const QRectF& r : {qr, kr, vr}) down(norm, r, r.center().x(), r.center().x());
        }
        y_ += kBoxHeight + kGap;
        if (has(Module::QNorm)) {
            const QString kind = normKind(f_.qkNormKind) + (f_.qkNormScope == QkNormScope::WholeProjection ? " · whole projection" : " per head");
            const QRectF qn = box("q_norm", Module::QNorm, kind, Value::NativeQNormOutput, row(col(0), col(0) + w));
            const QRectF kn = box("k_norm", Module::KNorm, kind, Value::NativeKNormOutput, row(col(1), col(1) + w));
            down(qr, qn, qn.center().x(), qn.center().x());
            down(kr, kn, kn.center().x(), kn.center().x());
            qr = qn;
            kr = kn;
            y_ += kBoxHeight + kGap;
        }
        QString rotary = f_.rotary == RotaryStyle::RotateHalf ? "rotate_half" : "adjacent pairs";
        if (c_.rope.partialRotaryFactor < 1.0) rotary += QString(" · %1%").arg(qRound(c_.rope.partialRotaryFactor * 100));
        if (c_.rope.type != "default") rotary += " · " + q(c_.rope.type);
        if (c_.ropeLocal) rotary += " · local/global";
        QStringList nope;  // SmolLM3's NoPE blocks pass queries and keys through unturned
        for (int64_t i = 0; i < c_.numLayers; ++i)
            if (!c_.rotates(i)) nope << QString::number(i);
        if (nope.size() > 4) nope = nope.mid(0, 3) << QStringLiteral("…");
        if (!nope.isEmpty()) rotary += " · none on " + nope.join(QStringLiteral(", "));
        const bool learned = f_.positions == PositionKind::Learned;  // GPT-2: no rotary, the heads are only split
        const QString turn = learned ? "split heads" : "rotary";
        if (learned) rotary = "no rotary";
        rq = add("rotary_q", DiagramPart::Operation, turn, rotary, Value::AttentionQueries, std::nullopt, row(col(0), col(0) + w));
        rk = add("rotary_k", DiagramPart::Operation, turn, rotary, Value::AttentionKeys, std::nullopt, row(col(1), col(1) + w));
        hv = add("values", DiagramPart::Operation, "split heads", c_.numKvHeads < c_.numHeads ? "kv heads" : "",
                 Value::AttentionValues, std::nullopt, row(col(2), col(2) + w));
        down(qr, rq, rq.center().x(), rq.center().x());
        down(kr, rk, rk.center().x(), rk.center().x());
        down(vr, hv, hv.center().x(), hv.center().x());
        y_ += kBoxHeight + kGap;
        }
        const QString gqa = c_.numKvHeads < c_.numHeads
                                ? QString("%1 heads over %2 kv heads").arg(c_.numHeads).arg(c_.numKvHeads)
                                : QString("%1 heads").arg(c_.numHeads);
        QString scoreTitle = c_.attnLogitSoftcap ? "softcap(q·kᵀ·s) + mask" : "q·kᵀ/√d + causal mask";
        QString scoreDetail = gqa;
        if (c_.slidingWindow > 0) scoreDetail += QString(" · window %1 on sliding layers").arg(c_.slidingWindow);
        const QRectF scores = add("scores", DiagramPart::Operation, scoreTitle, scoreDetail, Value::AttentionScores,
                                  std::nullopt, row(col(0), col(1) + w));
        down(rq, scores, rq.center().x(), rq.center().x());
        down(rk, scores, rk.center().x(), rk.center().x());
        y_ += kBoxHeight + kGap;
        const QRectF softmax = add("softmax", DiagramPart::Operation, "softmax", "float32", Value::AttentionProbabilities,
                                   std::nullopt, row(col(0), col(1) + w));
        down(scores, softmax);
        y_ += kBoxHeight + kGap;
        const QRectF mix = add("mix", DiagramPart::Operation, "probabilities · values", "per head", Value::AttentionHeadOutputs,
                               std::nullopt, row(left, right));
        down(softmax, mix, softmax.center().x(), softmax.center().x());
        down(hv, mix, hv.center().x(), hv.center().x());
        y_ += kBoxHeight + kGap;
        const QRectF premix = add("premix", DiagramPart::Stream, "attention_premix", "heads side by side", Value::AttentionPremix,
                                  std::nullopt, row((left + right - kBranchPillWidth) / 2, (left + right + kBranchPillWidth) / 2, kPillHeight));
        down(mix, premix);
        y_ += kPillHeight + kGap;
        QRectF o = box("o_proj", Module::OProj, c_.oProjBias ? "biased" : "", Value::AttentionOutput, row(left, right));
        down(premix, o);
        y_ += kBoxHeight + kGap;
        if (has(Module::AttentionOutputNorm)) o = postNorm("attention_output_norm", Module::AttentionOutputNorm, o, left, right);
        out_.attentionFrame = QRectF(kBranchLeft, top, kBranchRight - kBranchLeft, y_ - top - 2);
        y_ += kGap;
        return residualAdd("layer_mid", Value::LayerMid, o);
    }

    QRectF mlp() {
        const QRectF norm = branchNorm("post_attention_layernorm", Module::PostAttentionNorm, Value::MlpNormOutput, has(Module::PostAttentionNorm));
        const double left = kBranchLeft + 8, right = kBranchRight - 8, half = (right - left - 8) / 2;
        const QRectF input = add("mlp_input", DiagramPart::Stream, "mlp_input", "mlp's input", Value::MlpInput, std::nullopt,
                                 row((left + right - kBranchPillWidth) / 2, (left + right + kBranchPillWidth) / 2, kPillHeight));
        down(norm, input);
        y_ += kPillHeight + kGap;
        const double top = y_;
        y_ += kTitleHeight;
        const QString act = q(c_.hiddenAct);
        const QString bias = c_.mlpBias ? "biased" : "";
        QRectF neurons;
        if (has(Module::Router)) {
            // A mixture of experts (on the blocks that have one; a dense block of the same model keeps the gated MLP, whose
            // values the tables and the value plot show): the router, the experts the router picks, their weighted sum.
            const QString choice = c_.moe.router == RouterKind::SigmoidGroupTopK ? "sigmoid + bias" : "softmax";
            const QString groups = c_.moe.numGroups > 1 && (c_.moe.router == RouterKind::SigmoidGroupTopK || c_.moe.groupLimited)
                                       ? QString(" in %1/%2 groups").arg(c_.moe.topkGroup).arg(c_.moe.numGroups)
                                       : QString();
            const QRectF router = box("router", Module::Router,
                                      QString("%1 · top %2 of %3%4").arg(choice).arg(c_.moe.topK).arg(c_.moe.numExperts).arg(groups),
                                      Value::RouterLogits, row(left, left + half));
            const QRectF experts = box("experts", Module::Experts, "only the chosen run", Value::ExpertOutputs, row(right - half, right));
            down(input, router, -1, router.center().x());
            down(input, experts, -1, experts.center().x());
            y_ += kBoxHeight + kGap;
            if (has(Module::SharedExpert)) {  // the shared expert every token goes through (Qwen2-MoE: behind a sigmoid gate)
                const QRectF shared = box("shared_expert", Module::SharedExpert, "every token", Value::SharedExpertOutput,
                                          row(right - half, right));
                down(experts, shared);
                if (has(Module::SharedExpertGate)) {
                    const QRectF gate = box("shared_expert_gate", Module::SharedExpertGate, "sigmoid", std::nullopt, row(left, left + half));
                    down(router, gate);
                }
                y_ += kBoxHeight + kGap;
            }
            const QString sharedText = has(Module::SharedExpertGate) ? "+ sigmoid-gated shared expert" : "+ shared experts";
            QRectF last = add("routed_output", DiagramPart::Operation, "Σ expert_weights · expert_outputs",
                              c_.moe.sharedExpertIntermediateSize > 0 ? sharedText : "the chosen experts",
                              Value::MlpOutput, std::nullopt, row(left, right));
            down(router, last, -1, router.center().x());
            down(experts, last, -1, experts.center().x());
            y_ += kBoxHeight + kGap;
            out_.mlpFrame = QRectF(kBranchLeft, top, kBranchRight - kBranchLeft, y_ - top - 2);
            y_ += kGap;
            return residualAdd("layer_output", Value::LayerOutput, last);
        }
        if (has(Module::GateProj) || has(Module::GateUpProj)) {
            QRectF gate, up;
            if (has(Module::GateUpProj)) {  // Phi-3: one gate_up_proj cut into halves; no value of its own
                const QRectF fused = add("gate_up_proj", DiagramPart::Operation, q(f_.moduleLabel(Module::GateUpProj)),
                                         "fused · [gate | up]", std::nullopt, Module::GateUpProj, row(left, right));
                down(input, fused);
                gate = QRectF(left, fused.top(), half, fused.height());
                up = QRectF(right - half, fused.top(), half, fused.height());
            } else {
                gate = box("gate_proj", Module::GateProj, bias, Value::NativeGateProjOutput, row(left, left + half));
                up = box("up_proj", Module::UpProj, bias, Value::NativeUpProjOutput, row(right - half, right));
                down(input, gate, -1, gate.center().x());
                down(input, up, -1, up.center().x());
            }
            y_ += kBoxHeight + kGap;
            const QRectF a = box("act_fn", Module::ActFn, act, Value::MlpActivation, row(left, left + half));
            down(gate, a);
            y_ += kBoxHeight + kGap;
            neurons = add("mlp_neurons", DiagramPart::Operation, "act(gate) · up", "gated", Value::MlpNeurons, std::nullopt,
                          row(left, right));
            down(a, neurons, -1, a.center().x());
            down(up, neurons, -1, up.center().x());
            y_ += kBoxHeight + kGap;
        } else {
            const QRectF up = box("up_proj", Module::UpProj, bias, Value::NativeUpProjOutput, row(left, right));
            down(input, up);
            y_ += kBoxHeight + kGap;
            const QRectF a = box("act_fn", Module::ActFn, act + " · no gate", Value::MlpActivation, row(left, right));
            down(up, a);
            y_ += kBoxHeight + kGap;
            neurons = add("mlp_neurons", DiagramPart::Stream, "mlp_neurons", "down_proj's input", Value::MlpNeurons,
                          std::nullopt, row((left + right - kBranchPillWidth) / 2, (left + right + kBranchPillWidth) / 2, kPillHeight));
            down(a, neurons);
            y_ += kPillHeight + kGap;
        }
        QRectF last = box("down_proj", Module::DownProj, bias, Value::MlpOutput, row(left, right));
        down(neurons, last);
        y_ += kBoxHeight + kGap;
        if (has(Module::MlpOutputNorm)) last = postNorm("mlp_output_norm", Module::MlpOutputNorm, last, left, right);
        if (has(Module::LayerDropout)) {
            const QRectF d = add("dropout", DiagramPart::Operation, q(f_.moduleLabel(Module::LayerDropout)), "identity in eval",
                                 std::nullopt, Module::LayerDropout, row(left, right));
            down(last, d);
            last = d;
            y_ += kBoxHeight + kGap;
        }
        out_.mlpFrame = QRectF(kBranchLeft, top, kBranchRight - kBranchLeft, y_ - top - 2);
        y_ += kGap;
        return residualAdd("layer_output", Value::LayerOutput, last);
    }

    bool has(Module m) const { return modules_.count(m) > 0; }

    const Family& f_;
    const ModelConfig& c_;
    std::set<Module> modules_;
    DiagramLayout out_;
    QRectF layersBox_;
    double y_ = 0;
};

}  // namespace

DiagramLayout layoutDiagram(const Family& family, const ModelConfig& config) { return Builder(family, config).build(); }

}  // namespace nnscope
