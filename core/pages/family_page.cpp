// SPDX-License-Identifier: MIT
//
// The family page (core/pages/family_page.h). The page is first built as a list of blocks (headings, paragraphs, chips,
// code, tables, check lists), then rendered as Markdown or HTML, so the two exports cannot drift apart: same
// sections, same order, same words.
#include "core/pages/family_page.h"

#include "core/model/block.h"

#include "core/model/error.h"
#include "core/pages/support.h"
#include "core/run/trace.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

namespace nnscope {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// The page as data

struct Cell {
    std::string text;
    bool code = false;     ///< shown as code (names, layouts)
    bool warning = false;  ///< prefixed with ⚠︎ (a value only some loads have)
    std::string hint;      ///< a tooltip (HTML title) explaining the warning
};

Cell textCell(std::string text) { return Cell{std::move(text), false, false, {}}; }
Cell codeCell(std::string text) { return Cell{std::move(text), true, false, {}}; }

struct Block {
    enum Kind { Title, Section, Subsection, Kicker, Paragraph, Meta, Chips, Code, Table, Strip, Steps, Identity, Checks } kind;
    std::string text;                      ///< heading / paragraph / code text, the code block's language in `lang`
    std::string lang;
    std::vector<std::string> items;        ///< chips, strip parts, steps
    std::vector<std::string> itemNotes;    ///< strip: the value under each part
    std::vector<std::string> header;       ///< table header
    std::vector<std::vector<Cell>> rows;   ///< table rows
    std::vector<const CheckResult*> checks;
    std::vector<std::string> missing;      ///< check ids a note names without a result
};

const char* kEagerHint =
    "transformers computes this value only under attn_implementation=\"eager\" (the default sdpa and flash-attention loads never "
    "form the attention interior); nnscope always runs the eager attention, so it has the value on every load";

/// A config.json value as the seeds print it (Python's spelling: True, False, None, 1e-05).
std::string pyValue(const nlohmann::json& v) {
    if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
    if (v.is_null()) return "None";
    if (v.is_number_float()) return pythonFloat(v.get<double>());
    if (v.is_number()) return v.dump();
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
        std::string s;
        for (const auto& e : v) s += (s.empty() ? "" : ", ") + pyValue(e);
        return s;
    }
    return v.dump();
}

const char* kBlockInOrder = "The block, in order";

std::vector<Block> buildPage(const Model& model, const std::vector<CheckResult>& checks) {
    const Family& f = model.family();
    const ModelConfig& c = model.config();
    std::vector<Block> page;
    auto add = [&](Block::Kind k, std::string text = {}) -> Block& {
        page.push_back(Block{k, std::move(text), {}, {}, {}, {}, {}, {}, {}});
        return page.back();
    };
    auto resultsFor = [&](const std::vector<std::string>& ids, Block& b) {
        for (const auto& id : ids) {
            auto it = std::find_if(checks.begin(), checks.end(), [&](const CheckResult& r) { return r.id == id; });
            if (it == checks.end()) b.missing.push_back(id);
            else b.checks.push_back(&*it);
        }
    };
    const std::string folder = std::filesystem::path(model.dir()).filename().string().empty()
                                   ? std::filesystem::path(model.dir()).parent_path().filename().string()
                                   : std::filesystem::path(model.dir()).filename().string();

    // Title and quirk chips
    add(Block::Title, f.title);
    add(Block::Meta, "family " + f.modelType + " · " + c.architectures.front() + " · checkpoint " + folder + " · " + dtypeName(model.dtype()) +
                         " · nnscope " + version());
    add(Block::Paragraph, f.summary);
    add(Block::Chips).items = f.quirks;
    if (checks.empty()) {
        add(Block::Paragraph, "Not checked on this checkpoint yet: each note's check reads \"not run\".");
    } else {
        const CheckSummary s = summarizeChecks(checks);
        std::string line = "Checked on this checkpoint: " + std::to_string(s.passed) + " ✔ passed, " + std::to_string(s.failed) + " ✗ failed";
        if (s.figures) line += ", " + std::to_string(s.figures) + " ℹ measured";
        if (s.skipped) line += ", " + std::to_string(s.skipped) + " – not applicable";
        add(Block::Paragraph, line + ".");
    }

    // The block
    add(Block::Section, "The block");
    add(Block::Kicker, "01 · the residual stream");
    {
        Block& strip = add(Block::Strip);
        strip.items = {f.moduleName(Module::EmbedTokens), f.moduleName(Module::Layers) + " × " + std::to_string(c.numLayers),
                       f.moduleName(Module::Norm), f.moduleName(Module::LmHead), "logits"};
        strip.itemNotes = {"token_embeddings", "i = 0 … " + std::to_string(c.numLayers - 1), "final_norm_output", "lm_head_output", "the output"};
    }
    add(Block::Paragraph, "One block of the stack, in the order it runs (generated from families/" + f.modelType + ".cpp and config.json):");
    add(Block::Steps).items = blockStepLines(f, c);
    {
        Block& id = add(Block::Identity, f.contributionIdentity());
        resultsFor({"contribution_identity"}, id);
        id.missing.clear();  // the identity line shows its check only where a note names it
    }

    // The API
    add(Block::Section, "The API");
    add(Block::Kicker, "02 · support()");
    add(Block::Subsection, "Values, by host");
    add(Block::Paragraph, std::string("⚠︎ marks a value this checkpoint has only under some load: ") + kEagerHint + ".");
    const auto table = supportTable(f);
    for (Host h : {Host::Model, Host::Layer, Host::Attention, Host::Mlp}) {
        Block& t = add(Block::Table);
        t.header = {std::string(hostPath(h)) + " " + hostClass(f, h), "layout", "what it is", "read at"};
        for (const auto& r : table) {
            if (r.host != h) continue;
            Cell name{r.name, true, r.eagerOnly, r.eagerOnly ? kEagerHint : ""};
            t.rows.push_back({name, codeCell(r.layout), textCell(r.description), textCell(r.readAt)});
        }
    }
    add(Block::Subsection, "Printout");
    add(Block::Paragraph, "What print(model) shows on " + folder + ": the native modules, standard names and every standard value with its layout.");
    {
        Block& code = add(Block::Code, printout(model));
        code.lang = "text";
    }
    add(Block::Subsection, "Config");
    {
        Block& t = add(Block::Table);
        t.header = {"key", "value"};
        for (const auto& [k, v] : standardSizes(c)) t.rows.push_back({codeCell("model." + k), textCell(std::to_string(v))});
        static const std::vector<std::string> first = {
            "architectures", "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
            "vocab_size", "max_position_embeddings", "hidden_act", "rms_norm_eps", "layer_norm_eps", "tie_word_embeddings", "dtype", "torch_dtype",
            "attention_bias", "use_bias", "qk_layernorm", "qk_norm", "partial_rotary_factor", "rope_theta", "rope_scaling", "rope_parameters"};
        std::set<std::string> shown;
        auto row = [&](const std::string& k) {
            if (!c.raw.contains(k) || shown.count(k)) return;
            shown.insert(k);
            t.rows.push_back({codeCell(k), textCell(pyValue(c.raw[k]))});
        };
        for (const auto& k : first) row(k);
        for (auto it = c.raw.begin(); it != c.raw.end(); ++it) row(it.key());
    }

    // The Notes
    add(Block::Section, "The Notes");
    add(Block::Kicker, "03 · what to know before you run");
    add(Block::Subsection, kBlockInOrder);
    {
        std::string formulas;
        for (const auto& line : blockFormulas(f, c)) formulas += line + "\n";
        Block& code = add(Block::Code, formulas);
        code.lang = "python";
    }
    for (size_t n = 0; n < f.notes.size(); ++n) {
        const FamilyNote& note = f.notes[n];
        if (!(n == 0 && note.title == kBlockInOrder)) add(Block::Subsection, note.title);  // the first note may continue the formulas
        add(Block::Paragraph, note.text);
        if (!note.checks.empty()) resultsFor(note.checks, add(Block::Checks));
    }

    // From the family module
    add(Block::Section, "From the family module");
    add(Block::Kicker, "04 · families/" + f.modelType + ".cpp");
    std::stringstream desc(f.description);
    std::string para, line;
    while (std::getline(desc, line)) {
        if (line.empty()) {
            if (!para.empty()) add(Block::Paragraph, para);
            para.clear();
        } else {
            para += (para.empty() ? "" : " ") + line;
        }
    }
    if (!para.empty()) add(Block::Paragraph, para);
    return page;
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown

std::string mdEscape(const std::string& s, bool inTable = false) {
    std::string out;
    for (char ch : s) {
        if (ch == '\\' || ch == '*' || ch == '<' || ch == '`' || (inTable && ch == '|')) out += '\\';
        if (ch == '\n' && inTable) {
            out += ' ';
            continue;
        }
        out += ch;
    }
    return out;
}

std::string mdCode(const std::string& s) {
    // a code span whose fence is longer than any run of backticks inside
    size_t run = 0, longest = 0;
    for (char ch : s) {
        run = ch == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    const std::string fence(longest + 1, '`');
    const bool pad = !s.empty() && (s.front() == '`' || s.back() == '`');
    return fence + (pad ? " " : "") + s + (pad ? " " : "") + fence;
}

/// Inline text with `code` spans kept as written (the block steps use them); the rest escaped.
std::string mdInline(const std::string& s) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        const size_t open = s.find('`', i);
        if (open == std::string::npos) {
            out += mdEscape(s.substr(i));
            break;
        }
        const size_t close = s.find('`', open + 1);
        if (close == std::string::npos) {
            out += mdEscape(s.substr(i));
            break;
        }
        out += mdEscape(s.substr(i, open - i)) + s.substr(open, close - open + 1);
        i = close + 1;
    }
    return out;
}

std::string mdCheck(const CheckResult& r) {
    std::string s = "- " + std::string(checkMark(r)) + " " + mdCode(r.id) + ": " + mdEscape(r.figure) + "  \n";
    s += "  *" + mdEscape(r.title) + "*";
    if (!r.detail.empty()) s += ". " + mdEscape(r.detail);
    return s + "\n";
}

std::string renderMarkdown(const std::vector<Block>& page) {
    std::ostringstream o;
    for (const Block& b : page) {
        switch (b.kind) {
            case Block::Title: o << "# " << mdEscape(b.text) << "\n\n"; break;
            case Block::Section: o << "## " << mdEscape(b.text) << "\n\n"; break;
            case Block::Subsection: o << "### " << mdEscape(b.text) << "\n\n"; break;
            case Block::Kicker: o << "*" << mdEscape(b.text) << "*\n\n"; break;
            case Block::Meta: o << mdEscape(b.text) << "\n\n"; break;
            case Block::Paragraph: o << mdEscape(b.text) << "\n\n"; break;
            case Block::Chips: {
                std::string s;
                for (const auto& chip : b.items) s += (s.empty() ? "" : " · ") + mdCode(chip);
                o << "Quirks: " << s << "\n\n";
                break;
            }
            case Block::Code: o << "```" << b.lang << "\n" << b.text << (b.text.empty() || b.text.back() == '\n' ? "" : "\n") << "```\n\n"; break;
            case Block::Strip: {
                for (size_t i = 0; i < b.items.size(); ++i)
                    o << (i ? " → " : "") << mdCode(b.items[i]) << " (" << mdEscape(b.itemNotes[i]) << ")";
                o << "\n\n";
                break;
            }
            case Block::Steps: {
                for (size_t i = 0; i < b.items.size(); ++i) o << i + 1 << ". " << mdInline(b.items[i]) << "\n";
                o << "\n";
                break;
            }
            case Block::Identity: {
                o << "identity " << mdCode(b.text);
                for (const CheckResult* r : b.checks) o << " " << checkMark(*r) << " " << mdEscape(r->figure);
                o << "\n\n";
                break;
            }
            case Block::Table: {
                o << "|";
                for (const auto& h : b.header) o << " " << mdEscape(h, true) << " |";
                o << "\n|";
                for (size_t i = 0; i < b.header.size(); ++i) o << "---|";
                o << "\n";
                for (const auto& row : b.rows) {
                    o << "|";
                    for (const Cell& cell : row)
                        o << " " << (cell.warning ? "⚠︎ " : "") << (cell.code ? mdCode(cell.text) : mdEscape(cell.text, true)) << " |";
                    o << "\n";
                }
                o << "\n";
                break;
            }
            case Block::Checks: {
                for (const CheckResult* r : b.checks) o << mdCheck(*r);
                for (const auto& id : b.missing) o << "- – " << mdCode(id) << ": not run\n";
                o << "\n";
                break;
            }
        }
    }
    return o.str();
}

// ---------------------------------------------------------------------------------------------------------------
// HTML

std::string h(const std::string& s) {
    std::string out;
    for (char ch : s) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += ch;
        }
    }
    return out;
}

/// Escaped text with `code` spans turned into <code>.
std::string hInline(const std::string& s) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        const size_t open = s.find('`', i);
        const size_t close = open == std::string::npos ? std::string::npos : s.find('`', open + 1);
        if (close == std::string::npos) {
            out += h(s.substr(i));
            break;
        }
        out += h(s.substr(i, open - i)) + "<code>" + h(s.substr(open + 1, close - open - 1)) + "</code>";
        i = close + 1;
    }
    return out;
}

std::string slug(const std::string& s) {
    std::string out;
    for (char ch : s) {
        if (std::isalnum(static_cast<unsigned char>(ch))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

const char* kCss = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1.5rem;
       color: #1d2330; line-height: 1.5; background: #fff; }
h1 { font-size: 2rem; margin-bottom: 0.2rem; }
h2 { border-bottom: 1px solid #d8dce6; padding-bottom: 0.2rem; margin-top: 2.5rem; }
h3 { margin-top: 1.6rem; }
.meta { color: #5b6478; font-size: 0.9rem; }
.kicker { color: #7a4fd6; font-size: 0.8rem; letter-spacing: 0.08em; text-transform: uppercase; margin-top: -0.6rem; }
.chips span { display: inline-block; background: #eef0fb; color: #33307a; border-radius: 1rem; padding: 0.1rem 0.7rem; margin: 0 0.3rem 0.3rem 0;
              font-size: 0.85rem; }
.strip { display: flex; flex-wrap: wrap; align-items: center; gap: 0.4rem; }
.strip .part { border: 1px solid #c9cfdc; border-radius: 0.4rem; padding: 0.3rem 0.6rem; text-align: center; background: #f8f9fc; }
.strip .part small { display: block; color: #5b6478; }
.strip .arrow { color: #8a93a6; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 0.85rem; }
pre { background: #f5f6fa; border: 1px solid #e1e4ec; border-radius: 0.4rem; padding: 0.8rem; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: 0.6rem 0 1.2rem; font-size: 0.9rem; }
th, td { border: 1px solid #e1e4ec; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f0f2f7; }
td.warn { white-space: nowrap; }
.warn-mark { color: #b26b00; cursor: help; }
ul.checks { list-style: none; padding-left: 0; }
ul.checks li { margin: 0.3rem 0; padding: 0.4rem 0.6rem; border-left: 4px solid #c9cfdc; background: #fafbfd; }
ul.checks li.pass { border-left-color: #2e9d57; }
ul.checks li.fail { border-left-color: #d23b3b; background: #fff6f6; }
ul.checks li.figure { border-left-color: #3d7bd9; }
.mark { font-weight: bold; margin-right: 0.3rem; }
li.pass .mark { color: #2e9d57; } li.fail .mark { color: #d23b3b; } li.figure .mark { color: #3d7bd9; }
.check-title { color: #5b6478; font-size: 0.85rem; display: block; }
.identity code { background: #f5f6fa; padding: 0.1rem 0.3rem; }
)";

// The same page on a dark background (the colours of the window's dark palette, widgets/panels/palette.cpp).
const char* kDarkCss = R"(
body { color: #dfe3ec; background: #1e2129; }
h2 { border-bottom: 1px solid #3a4050; }
.meta, .strip .part small, .check-title { color: #9aa3b5; }
.kicker { color: #a98bf0; }
.chips span { background: #2e3350; color: #c9c6ff; }
.strip .part { border: 1px solid #444b5c; background: #262a34; }
.strip .arrow { color: #7a8296; }
pre { background: #262a34; border: 1px solid #3a4050; }
th, td { border: 1px solid #3a4050; }
th { background: #2a2f3a; }
.warn-mark { color: #e0a040; }
ul.checks li { border-left: 4px solid #444b5c; background: #242832; }
ul.checks li.pass { border-left-color: #4cc27a; }
ul.checks li.fail { border-left-color: #e05555; background: #3a2226; }
ul.checks li.figure { border-left-color: #6aa0ff; }
li.pass .mark { color: #4cc27a; } li.fail .mark { color: #ff6b6b; } li.figure .mark { color: #6aa0ff; }
.identity code { background: #262a34; }
)";

std::string renderHtml(const std::vector<Block>& page, const std::string& title, PageColours colours) {
    std::ostringstream o;
    o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << h(title) << " · nnscope family page</title>\n<style>"
      << kCss;
    if (colours == PageColours::FollowReader) o << "@media (prefers-color-scheme: dark) {" << kDarkCss << "}\n";
    else if (colours == PageColours::Dark) o << kDarkCss;
    o << "</style>\n</head>\n<body>\n";
    auto checkClass = [](const CheckResult& r) {
        if (r.kind == CheckKind::Figure) return "figure";
        if (r.kind == CheckKind::Skipped) return "skipped";
        return r.passed ? "pass" : "fail";
    };
    for (const Block& b : page) {
        switch (b.kind) {
            case Block::Title: o << "<h1>" << h(b.text) << "</h1>\n"; break;
            case Block::Section: o << "<h2 id=\"" << slug(b.text) << "\">" << h(b.text) << "</h2>\n"; break;
            case Block::Subsection: o << "<h3 id=\"" << slug(b.text) << "\">" << h(b.text) << "</h3>\n"; break;
            case Block::Kicker: o << "<p class=\"kicker\">" << h(b.text) << "</p>\n"; break;
            case Block::Meta: o << "<p class=\"meta\">" << h(b.text) << "</p>\n"; break;
            case Block::Paragraph: o << "<p>" << h(b.text) << "</p>\n"; break;
            case Block::Chips: {
                o << "<p class=\"chips\">";
                for (const auto& chip : b.items) o << "<span>" << h(chip) << "</span> ";  // the space: renderers without inline-block
                o << "</p>\n";
                break;
            }
            case Block::Code: o << "<pre><code>" << h(b.text) << "</code></pre>\n"; break;
            case Block::Strip: {
                o << "<div class=\"strip\">";
                for (size_t i = 0; i < b.items.size(); ++i) {
                    if (i) o << " <span class=\"arrow\">→</span> ";
                    o << "<span class=\"part\"><code>" << h(b.items[i]) << "</code> <small>" << h(b.itemNotes[i]) << "</small></span>";
                }
                o << "</div>\n";
                break;
            }
            case Block::Steps: {
                o << "<ol class=\"steps\">\n";
                for (const auto& s : b.items) o << "<li>" << hInline(s) << "</li>\n";
                o << "</ol>\n";
                break;
            }
            case Block::Identity: {
                o << "<p class=\"identity\">identity <code>" << h(b.text) << "</code>";
                for (const CheckResult* r : b.checks) o << " <span class=\"mark\">" << checkMark(*r) << "</span> " << h(r->figure);
                o << "</p>\n";
                break;
            }
            case Block::Table: {
                o << "<table>\n<thead><tr>";
                for (const auto& hd : b.header) o << "<th>" << h(hd) << "</th>";
                o << "</tr></thead>\n<tbody>\n";
                for (const auto& row : b.rows) {
                    o << "<tr>";
                    for (const Cell& cell : row) {
                        o << "<td" << (cell.warning ? " class=\"warn\"" : "") << ">";
                        if (cell.warning) o << "<span class=\"warn-mark\" title=\"" << h(cell.hint) << "\">⚠︎</span>";
                        o << (cell.code ? "<code>" + h(cell.text) + "</code>" : h(cell.text)) << "</td>";
                    }
                    o << "</tr>\n";
                }
                o << "</tbody>\n</table>\n";
                break;
            }
            case Block::Checks: {
                o << "<ul class=\"checks\">\n";
                for (const CheckResult* r : b.checks) {
                    o << "<li class=\"" << checkClass(*r) << "\"><span class=\"mark\">" << checkMark(*r) << "</span><code>" << h(r->id) << "</code>: "
                      << h(r->figure) << "<span class=\"check-title\">" << h(r->title);
                    if (!r->detail.empty()) o << ". " << h(r->detail);
                    o << "</span></li>\n";
                }
                for (const auto& id : b.missing)
                    o << "<li class=\"skipped\"><span class=\"mark\">–</span><code>" << h(id) << "</code>: not run</li>\n";
                o << "</ul>\n";
                break;
            }
        }
    }
    o << "</body>\n</html>\n";
    return o.str();
}

}  // namespace

PageFormat parsePageFormat(const std::string& name) {
    std::string n;
    for (char ch : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (n == "md" || n == "markdown") return PageFormat::Markdown;
    if (n == "html" || n == "htm") return PageFormat::Html;
    throw Error("unknown page format \"" + name + "\": write md (Markdown) or html.");
}

std::string familyPage(const Model& model, const std::vector<CheckResult>& checks, PageFormat format, PageColours colours) {
    const auto page = buildPage(model, checks);
    return format == PageFormat::Markdown ? renderMarkdown(page) : renderHtml(page, model.family().title, colours);
}

std::vector<std::string> familyPageSections(const Family& family) {
    std::vector<std::string> s = {"The block", "The API", "Values, by host", "Printout", "Config", "The Notes", kBlockInOrder};
    for (size_t n = 0; n < family.notes.size(); ++n)
        if (!(n == 0 && family.notes[n].title == kBlockInOrder)) s.push_back(family.notes[n].title);
    s.push_back("From the family module");
    return s;
}

}  // namespace nnscope
