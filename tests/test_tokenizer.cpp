// SPDX-License-Identifier: MIT
// Tokenizer tests: the ids of nnscope::Tokenizer equal those of the Python reference libraries
// (tests/fixtures/tokenizer/goldens.json, written by tests/fixtures/make_tokenizer_goldens.py) for the
// SentencePiece stories260K tokenizer and the Llama 3 tokenizer.json in NNSCOPE_SHARED_MODELS_DIR, and those of
// transformers' AutoTokenizer (tests/fixtures/tokenizer/families.json, written by make_family_tokenizers.py) for the
// GPT-2, Qwen2 and Gemma tokenizer folders of tests/fixtures/tokenizer/ and variants of them built here;
// decoding, BOS/EOS, labels, how the JSON files decide special tokens, and the errors for broken folders.
#include "core/model/error.h"
#include "core/io/tokenizer.h"

#include <QByteArrayList>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include "testsuite.h"

#include <QtTest>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

using nnscope::Tokenizer;

namespace {

const QString kModels = QStringLiteral(NNSCOPE_SHARED_MODELS_DIR);
const QString kGoldens = QStringLiteral(NNSCOPE_TOKENIZER_GOLDENS);
const QString kFamilyFolders = QStringLiteral(NNSCOPE_FIXTURES_DIR "/tokenizer");
const QString kFamilyGoldens = kFamilyFolders + "/families.json";

/// The tokenizers read from the shared model folder (goldens.json); every other name is a family fixture.
bool isShared(const QString& folder) {
    return folder == "stories260K-llama" || folder == "llama3-tokenizer";
}

/// The JSON object in `path`; an empty object (and a test failure message in `error`) when it cannot be read.
QJsonObject readJsonObject(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = path + ": " + f.errorString();
        return {};
    }
    QJsonParseError parseError;
    const auto doc = QJsonDocument::fromJson(f.readAll(), &parseError);
    if (!doc.isObject())
        *error = path + ": " + parseError.errorString();
    return doc.object();
}

QStringList stringsOf(const QJsonArray& array) {
    QStringList out;
    for (const auto& v : array)
        out << v.toString();
    return out;
}

/// "1 403 407" for readable QCOMPARE failures.
QString idsText(const std::vector<int64_t>& ids) {
    QStringList parts;
    for (int64_t id : ids)
        parts << QString::number(id);
    return parts.join(' ');
}

QString idsText(const QJsonArray& ids) {
    QStringList parts;
    for (const auto& id : ids)
        parts << QString::number(id.toInteger());
    return parts.join(' ');
}

std::vector<int64_t> idsFrom(const QString& text) {
    std::vector<int64_t> out;
    for (const auto& part : text.split(' ', Qt::SkipEmptyParts))
        out.push_back(part.toLongLong());
    return out;
}

/// The message of the nnscope::Error that `f` throws; a note saying what happened instead otherwise.
QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const nnscope::Error& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return "UNEXPECTED exception type (not nnscope::Error): " + QString::fromStdString(e.what());
    } catch (...) {
        return "UNEXPECTED non-standard exception";
    }
    return "NO exception was thrown";
}

/// Writes `content` to `dir/name`.
void writeFile(const QString& dir, const QString& name, const QByteArray& content) {
    QFile f(dir + '/' + name);
    QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(f.errorString()));
    QCOMPARE(f.write(content), content.size());
}

bool isValidUtf8(const QByteArray& bytes) {
    QStringDecoder decoder(QStringDecoder::Utf8);
    (void)decoder.decode(bytes);
    return !decoder.hasError();
}

/// A tiny word-level tokenizer.json: <s>=0, </s>=1, <unk>=2, hello=3, world=4, "."=5. `postProcessor` is the
/// JSON of its post_processor.
QByteArray tinyTokenizerJson(const QByteArray& postProcessor) {
    return R"({"version":"1.0","truncation":null,"padding":null,
 "added_tokens":[
  {"id":0,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
  {"id":1,"content":"</s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
 "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":)" +
           postProcessor + R"(,"decoder":null,
 "model":{"type":"WordLevel","vocab":{"<s>":0,"</s>":1,"<unk>":2,"hello":3,"world":4,".":5},"unk_token":"<unk>"}})";
}

/// A post_processor that prepends <s>, as Llama 2/3's official tokenizer.json files do.
const QByteArray kBosTemplate = R"({"type":"TemplateProcessing",
 "single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
 "pair":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],
 "special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]}}})";

}  // namespace

/// Skips the test (or data row) when `folder` is a shared tokenizer and the shared model folder lacks it.
#define SKIP_WITHOUT_SHARED(folder)                                              \
    do {                                                                          \
        if (isShared(folder) && !sharedMissing_.isEmpty())                        \
            QSKIP(qPrintable(sharedMissing_));                                    \
    } while (false)

class TokenizerTest : public QObject {
    Q_OBJECT

private:
    QJsonArray goldens_;                                         // one object per shared tokenizer
    QJsonArray families_;                                        // families.json: the fixtures, then the variants
    QString sharedMissing_;                                      // why the shared tokenizers cannot be tested, if so
    QTemporaryDir variantDir_;                                   // the variants' folders
    std::map<QString, std::unique_ptr<Tokenizer>> tokenizers_;  // by folder name

    /// The folder of the tokenizer `name`: a shared one, a family fixture, or a variant (written on first use).
    QString folderOf(const QString& name) {
        if (isShared(name))
            return kModels + '/' + name;
        for (const auto& f : families_) {
            const QJsonObject o = f.toObject();
            if (o.value("name").toString() != name)
                continue;
            if (!o.contains("base"))
                return kFamilyFolders + '/' + name;
            const QString dir = variantDir_.path() + '/' + name;
            if (!QFile::exists(dir))
                writeVariant(o, dir);
            return dir;
        }
        return kFamilyFolders + "/no-such-fixture-" + name;
    }

    /// Writes the folder of a variant as make_family_tokenizers.py does: its base folder's files with the keys of
    /// "tokenizer_json" and "tokenizer_config" replaced, and "config" as config.json when given.
    static void writeVariant(const QJsonObject& variant, const QString& dir) {
        QVERIFY(QDir().mkpath(dir));
        const QString base = kFamilyFolders + '/' + variant.value("base").toString();
        QString error;
        for (const auto& [file, key] : {std::pair<QString, QString>{"tokenizer.json", "tokenizer_json"},
                                        std::pair<QString, QString>{"tokenizer_config.json", "tokenizer_config"}}) {
            QJsonObject content = readJsonObject(base + '/' + file, &error);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            const QJsonObject replaced = variant.value(key).toObject();
            for (auto it = replaced.begin(); it != replaced.end(); ++it)
                content.insert(it.key(), it.value());
            writeFile(dir, file, QJsonDocument(content).toJson(QJsonDocument::Compact));
        }
        if (QFile::exists(base + "/special_tokens_map.json"))
            QVERIFY(QFile::copy(base + "/special_tokens_map.json", dir + "/special_tokens_map.json"));
        if (variant.contains("config"))
            writeFile(dir, "config.json", QJsonDocument(variant.value("config").toObject()).toJson());
    }

    /// The tokenizer `name` (see folderOf), loaded once.
    const Tokenizer* tokenizer(const QString& name) {
        auto& slot = tokenizers_[name];
        if (!slot)
            slot = Tokenizer::load(folderOf(name).toStdString());
        return slot.get();
    }

    /// The rows of families.json as (tokenizer name, encode row).
    std::vector<std::pair<QString, QJsonObject>> familyRows() const {
        std::vector<std::pair<QString, QJsonObject>> rows;
        for (const auto& f : families_)
            for (const auto& e : f.toObject().value("encode").toArray())
                rows.emplace_back(f.toObject().value("name").toString(), e.toObject());
        return rows;
    }

private slots:
    void initTestCase() {
        QString error;
        goldens_ = readJsonObject(kGoldens, &error).value("tokenizers").toArray();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(goldens_.size(), 2);
        const QJsonObject families = readJsonObject(kFamilyGoldens, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        families_ = families.value("tokenizers").toArray();
        QCOMPARE(families_.size(), 3);
        for (const auto& v : families.value("variants").toArray())
            families_.append(v);
        QVERIFY(variantDir_.isValid());
        // The shared tokenizers are outside the repository: without them, only their tests are skipped.
        for (const auto& g : goldens_) {
            const QString folder = g.toObject().value("folder").toString();
            const QString file = kModels + '/' + folder + '/' + g.toObject().value("file").toString();
            if (!QFile::exists(file)) {
                sharedMissing_ = "The shared model file " + file + " is missing; set NNSCOPE_SHARED_MODELS.";
                break;
            }
        }
        for (const auto& name : [&] {
                 QStringList names;
                 for (const auto& f : families_)
                     names << f.toObject().value("name").toString();
                 if (sharedMissing_.isEmpty())
                     for (const auto& g : goldens_)
                         names << g.toObject().value("folder").toString();
                 return names;
             }()) {
            const QString loadError = errorOf([&] { tokenizer(name); });
            QVERIFY2(loadError == "NO exception was thrown", qPrintable(name + ": " + loadError));
        }
    }

    // --- the goldens ------------------------------------------------------------------------------------

    void encodeMatchesReference_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("expected");
        for (const auto& g : goldens_) {
            const QString folder = g.toObject().value("folder").toString();
            for (const auto& e : g.toObject().value("encode").toArray()) {
                const auto o = e.toObject();
                QTest::addRow("%s/%s", qPrintable(folder), qPrintable(o.value("name").toString()))
                    << folder << o.value("text").toString().toUtf8() << idsText(o.value("ids").toArray());
            }
        }
    }
    void encodeMatchesReference() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        QFETCH(QByteArray, text);
        QFETCH(QString, expected);
        QCOMPARE(idsText(tokenizer(folder)->encode(text.toStdString(), true)), expected);
    }

    void roundTrip_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("expected");
        for (const auto& g : goldens_) {
            const QString folder = g.toObject().value("folder").toString();
            for (const auto& e : g.toObject().value("encode").toArray()) {
                const auto o = e.toObject();
                QTest::addRow("%s/%s", qPrintable(folder), qPrintable(o.value("name").toString()))
                    << folder << o.value("text").toString().toUtf8() << o.value("roundtrip").toString().toUtf8();
            }
        }
    }
    void roundTrip() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, expected);
        const Tokenizer* tok = tokenizer(folder);
        const auto ids = tok->encode(text.toStdString(), true);
        QCOMPARE(QByteArray::fromStdString(tok->decode(ids, /*skipSpecialTokens=*/true)), expected);
        // Without special tokens, the ids are those with special tokens minus BOS.
        auto plain = tok->encode(text.toStdString(), false);
        if (tok->addsBos())
            plain.insert(plain.begin(), *tok->bosId());
        QCOMPARE(idsText(plain), idsText(ids));
    }

    void decodeMatchesReference_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("ids");
        QTest::addColumn<bool>("skipSpecialTokens");
        QTest::addColumn<QByteArray>("expected");
        for (const auto& g : goldens_) {
            const QString folder = g.toObject().value("folder").toString();
            for (const auto& d : g.toObject().value("decode").toArray()) {
                const auto o = d.toObject();
                const bool skip = o.value("skip_special_tokens").toBool();
                QTest::addRow("%s/%s/%s", qPrintable(folder), qPrintable(o.value("name").toString()),
                              skip ? "skip" : "keep")
                    << folder << idsText(o.value("ids").toArray()) << skip << o.value("text").toString().toUtf8();
            }
        }
    }
    void decodeMatchesReference() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        QFETCH(QString, ids);
        QFETCH(bool, skipSpecialTokens);
        QFETCH(QByteArray, expected);
        QCOMPARE(QByteArray::fromStdString(tokenizer(folder)->decode(idsFrom(ids), skipSpecialTokens)), expected);
    }

    void tokenStringsMatchReference_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<qint64>("id");
        QTest::addColumn<QByteArray>("expected");
        for (const auto& g : goldens_) {
            const QString folder = g.toObject().value("folder").toString();
            for (const auto& t : g.toObject().value("tokens").toArray()) {
                const auto o = t.toObject();
                const qint64 id = o.value("id").toInteger();
                QTest::addRow("%s/%lld", qPrintable(folder), static_cast<long long>(id))
                    << folder << id << o.value("token").toString().toUtf8();
            }
        }
    }
    void tokenStringsMatchReference() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        QFETCH(qint64, id);
        QFETCH(QByteArray, expected);
        QCOMPARE(QByteArray::fromStdString(tokenizer(folder)->tokenString(id)), expected);
    }

    void specialTokens_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<qint64>("vocabSize");
        QTest::addColumn<qint64>("bos");
        QTest::addColumn<qint64>("eos");
        QTest::addColumn<bool>("addsBos");
        QTest::addColumn<QString>("file");
        for (const auto& g : goldens_) {
            const auto o = g.toObject();
            const QString folder = o.value("folder").toString();
            QTest::addRow("%s", qPrintable(folder))
                << folder << qint64(o.value("vocab_size").toInteger()) << qint64(o.value("bos_id").toInteger())
                << qint64(o.value("eos_id").toInteger()) << o.value("adds_bos").toBool() << o.value("file").toString();
        }
    }
    void specialTokens() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        QFETCH(qint64, vocabSize);
        QFETCH(qint64, bos);
        QFETCH(qint64, eos);
        QFETCH(bool, addsBos);
        QFETCH(QString, file);
        const Tokenizer* tok = tokenizer(folder);
        QCOMPARE(tok->vocabSize(), vocabSize);
        QVERIFY(tok->bosId().has_value());
        QVERIFY(tok->eosId().has_value());
        QCOMPARE(*tok->bosId(), bos);
        QCOMPARE(*tok->eosId(), eos);
        QCOMPARE(tok->addsBos(), addsBos);
        QCOMPARE(tok->addsEos(), false);
        QVERIFY(QString::fromStdString(tok->sourceFile()).endsWith('/' + file));
        // An empty text is BOS alone where BOS is added, else nothing (the design's "empty prompt").
        QCOMPARE(idsText(tok->encode("", true)), addsBos ? QString::number(bos) : QString());
        QCOMPARE(idsText(tok->encode("", false)), QString());
    }

    // --- the family tokenizers against transformers' AutoTokenizer (families.json) --------------------------

    void familySpecialTokens_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<qint64>("vocabSize");
        QTest::addColumn<qint64>("bos");  // -1: none
        QTest::addColumn<qint64>("eos");
        QTest::addColumn<bool>("addsBos");
        for (const auto& f : families_) {
            const auto o = f.toObject();
            const QString name = o.value("name").toString();
            QTest::addRow("%s", qPrintable(name))
                << name << qint64(o.value("vocab_size").toInteger()) << qint64(o.value("bos_id").toInteger(-1))
                << qint64(o.value("eos_id").toInteger(-1)) << o.value("adds_bos").toBool();
        }
    }
    void familySpecialTokens() {
        QFETCH(QString, name);
        QFETCH(qint64, vocabSize);
        QFETCH(qint64, bos);
        QFETCH(qint64, eos);
        QFETCH(bool, addsBos);
        const Tokenizer* tok = tokenizer(name);
        QCOMPARE(tok->vocabSize(), vocabSize);
        QCOMPARE(tok->bosId().value_or(-1), bos);
        QCOMPARE(tok->eosId().value_or(-1), eos);
        QCOMPARE(tok->addsBos(), addsBos);
    }

    void familyEncode_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("expected");         // tokenizer(text)["input_ids"]
        QTest::addColumn<QString>("withoutSpecials");  // tokenizer(text, add_special_tokens=False)
        QTest::addColumn<QStringList>("tokens");       // convert_ids_to_tokens(expected)
        for (const auto& [name, o] : familyRows())
            QTest::addRow("%s/%s", qPrintable(name), qPrintable(o.value("name").toString()))
                << name << o.value("text").toString().toUtf8() << idsText(o.value("ids").toArray())
                << idsText(o.value("ids_without_specials").toArray()) << stringsOf(o.value("tokens").toArray());
    }
    void familyEncode() {
        QFETCH(QString, name);
        QFETCH(QByteArray, text);
        QFETCH(QString, expected);
        QFETCH(QString, withoutSpecials);
        QFETCH(QStringList, tokens);
        const Tokenizer* tok = tokenizer(name);
        const auto ids = tok->encode(text.toStdString(), true);
        QCOMPARE(idsText(ids), expected);
        QCOMPARE(idsText(tok->encode(text.toStdString(), false)), withoutSpecials);
        QStringList strings;
        for (int64_t id : ids)
            strings << QString::fromStdString(tok->tokenString(id));
        QCOMPARE(strings, tokens);
    }

    void familyDecode_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("ids");
        QTest::addColumn<QByteArray>("skipped");  // decode(ids, skip_special_tokens=True)
        QTest::addColumn<QByteArray>("kept");     // decode(ids, skip_special_tokens=False)
        for (const auto& [name, o] : familyRows())
            QTest::addRow("%s/%s", qPrintable(name), qPrintable(o.value("name").toString()))
                << name << idsText(o.value("ids").toArray()) << o.value("decoded_skip").toString().toUtf8()
                << o.value("decoded_keep").toString().toUtf8();
    }
    void familyDecode() {
        QFETCH(QString, name);
        QFETCH(QString, ids);
        QFETCH(QByteArray, skipped);
        QFETCH(QByteArray, kept);
        const Tokenizer* tok = tokenizer(name);
        QCOMPARE(QByteArray::fromStdString(tok->decode(idsFrom(ids), true)), skipped);
        QCOMPARE(QByteArray::fromStdString(tok->decode(idsFrom(ids), false)), kept);
    }

    void familyCommandLine_data() {
        // `nnscope tokenize --json` on each folder itself (one process, about a second, per run), for one text each:
        // the family's special tokens in text, or the text on which the variant's rule shows.
        const std::map<QString, QString> textOf{
            {"gpt2", "endoftext_hello"},           {"qwen2", "im_chat"},
            {"gemma", "gemma_turn"},               {"gpt2-add-prefix-space", "english"},
            {"gpt2-digits-llama", "digits_mixed"}, {"gpt2-digits-olmo2", "digits_mixed"},
            {"qwen2-without-nfc", "combining_vs_precomposed"}, {"gemma-add-bos-false", "emoji_zwj"},
            {"qwen2-add-bos-true", "accents"}};
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::addColumn<QString>("withoutSpecials");
        QTest::addColumn<QStringList>("tokens");
        for (const auto& f : families_)
            QVERIFY2(textOf.count(f.toObject().value("name").toString()),
                     qPrintable("No text is chosen for " + f.toObject().value("name").toString()));
        for (const auto& [name, o] : familyRows())
            if (textOf.at(name) == o.value("name").toString())
                QTest::addRow("%s/%s", qPrintable(name), qPrintable(o.value("name").toString()))
                    << name << o.value("text").toString() << idsText(o.value("ids").toArray())
                    << idsText(o.value("ids_without_specials").toArray()) << stringsOf(o.value("tokens").toArray());
    }
    void familyCommandLine() {
        QFETCH(QString, name);
        QFETCH(QString, text);
        QFETCH(QString, expected);
        QFETCH(QString, withoutSpecials);
        QFETCH(QStringList, tokens);
        // --no-special-tokens is run where it changes the ids.
        for (const bool specials : {true, false}) {
            if (!specials && withoutSpecials == expected)
                continue;
            QProcess p;
            QStringList args{"tokenize", "--model", folderOf(name), "--text", text, "--json"};
            if (!specials)
                args << "--no-special-tokens";
            p.start(NNSCOPE_BINARY, args);
            QVERIFY(p.waitForFinished(60000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            QJsonParseError parseError;
            const QJsonObject out = QJsonDocument::fromJson(p.readAllStandardOutput(), &parseError).object();
            QVERIFY2(parseError.error == QJsonParseError::NoError, qPrintable(parseError.errorString()));
            QCOMPARE(idsText(out.value("ids").toArray()), specials ? expected : withoutSpecials);
            if (specials) {
                QCOMPARE(stringsOf(out.value("tokens").toArray()), tokens);
                // and each token as nnscope prints it elsewhere (trace --json), which --target and --answer take back
                const QStringList labels = stringsOf(out.value("labels").toArray());
                QCOMPARE(labels.size(), tokens.size());
                const auto tok = Tokenizer::load(folderOf(name).toStdString());
                const QJsonArray ids = out.value("ids").toArray();
                for (qsizetype i = 0; i < labels.size(); ++i)
                    QCOMPARE(labels[i], QString::fromStdString(tok->tokenLabel(ids[i].toInteger())));
            }
        }
    }

    // --- decoding of special tokens (SentencePiece follows transformers' LlamaTokenizer, legacy=true) -----

    void sentencePieceDecodeKeepsSpecialTokens() {
        SKIP_WITHOUT_SHARED(QStringLiteral("stories260K-llama"));
        const Tokenizer* tok = tokenizer("stories260K-llama");
        auto ids = tok->encode("Lily", true);
        ids.push_back(*tok->eosId());
        QCOMPARE(QByteArray::fromStdString(tok->decode(ids, false)), QByteArray("<s> Lily</s>"));
        QCOMPARE(QByteArray::fromStdString(tok->decode(ids, true)), QByteArray("Lily"));
        QCOMPARE(QByteArray::fromStdString(tok->decode({}, false)), QByteArray());
        QCOMPARE(QByteArray::fromStdString(tok->decode({*tok->bosId()}, false)), QByteArray("<s>"));
    }

    // --- labels -----------------------------------------------------------------------------------------

    void labels_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QByteArray>("text");  // encoded without special tokens; its first token is labelled
        QTest::addColumn<qint64>("id");        // used when text is empty
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("sp/word") << "stories260K-llama" << QByteArray(" Lily") << qint64(-1) << QByteArray("␣Lily");
        QTest::newRow("sp/newline") << "stories260K-llama" << QByteArray() << qint64(13) << QByteArray("\\n");
        QTest::newRow("sp/bos") << "stories260K-llama" << QByteArray() << qint64(1) << QByteArray("<s>");
        QTest::newRow("sp/eos") << "stories260K-llama" << QByteArray() << qint64(2) << QByteArray("</s>");
        QTest::newRow("sp/tab") << "stories260K-llama" << QByteArray() << qint64(12) << QByteArray("\\t");
        QTest::newRow("sp/space_byte") << "stories260K-llama" << QByteArray() << qint64(35) << QByteArray("␣");
        QTest::newRow("sp/high_byte") << "stories260K-llama" << QByteArray() << qint64(229) << QByteArray("<0xE2>");
        QTest::newRow("hf/word") << "llama3-tokenizer" << QByteArray(" the") << qint64(-1) << QByteArray("␣the");
        QTest::newRow("hf/first_word") << "llama3-tokenizer" << QByteArray("Hello") << qint64(-1) << QByteArray("Hello");
        QTest::newRow("hf/newline") << "llama3-tokenizer" << QByteArray() << qint64(198) << QByteArray("\\n");
        QTest::newRow("hf/two_newlines") << "llama3-tokenizer" << QByteArray("\n\n") << qint64(-1) << QByteArray("\\n\\n");
        QTest::newRow("hf/bos") << "llama3-tokenizer" << QByteArray() << qint64(128000) << QByteArray("<|begin_of_text|>");
        QTest::newRow("hf/accent") << "llama3-tokenizer" << QByteArray(" café") << qint64(-1) << QByteArray("␣café");
        QTest::newRow("hf/cjk") << "llama3-tokenizer" << QByteArray("你好") << qint64(-1) << QByteArray("你");
    }
    void labels() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        QFETCH(QByteArray, text);
        QFETCH(qint64, id);
        QFETCH(QByteArray, expected);
        const Tokenizer* tok = tokenizer(folder);
        if (!text.isEmpty()) {
            const auto ids = tok->encode(text.toStdString(), false);
            QVERIFY(!ids.empty());
            id = ids.front();
        }
        QCOMPARE(QByteArray::fromStdString(tok->tokenLabel(id)), expected);
    }

    void labelsOfPartialCharacters() {
        SKIP_WITHOUT_SHARED(QStringLiteral("stories260K-llama"));
        // "🦙" is F0 9F A6 99: byte-level and byte-fallback tokens holding part of it show their bytes.
        const QByteArray expected[] = {"<0xF0><0x9F><0xA6><0x99>", "␣<0xF0><0x9F><0xA6><0x99>"};
        for (const char* folder : {"stories260K-llama", "llama3-tokenizer"}) {
            const Tokenizer* tok = tokenizer(folder);
            for (const std::string text : {"🦙", " 🦙"}) {
                const auto ids = tok->encode(text, false);
                QVERIFY(ids.size() >= 2);
                QByteArray all;
                for (int64_t id : ids)
                    all += QByteArray::fromStdString(tok->tokenLabel(id));
                // SentencePiece's dummy prefix turns "🦙" into "▁" + bytes as well.
                const bool spaced = text[0] == ' ' || QString(folder).startsWith("stories");
                QCOMPARE(all, expected[spaced ? 1 : 0]);
            }
        }
    }

    void everyLabelIsOneLineOfText_data() {
        QTest::addColumn<QString>("folder");
        for (const char* folder : {"stories260K-llama", "llama3-tokenizer", "gpt2", "qwen2", "gemma"})
            QTest::newRow(folder) << folder;
    }
    void everyLabelIsOneLineOfText() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        const Tokenizer* tok = tokenizer(folder);
        for (int64_t id = 0; id < tok->vocabSize(); ++id) {
            const QByteArray label = QByteArray::fromStdString(tok->tokenLabel(id));
            if (label.isEmpty() || label.contains('\n') || label.contains('\r') || label.contains(' ') ||
                !isValidUtf8(label))
                QFAIL(qPrintable(QString("Token %1 (%2) has the label \"%3\".")
                                     .arg(id)
                                     .arg(QString::fromStdString(tok->tokenString(id)), QString::fromUtf8(label))));
        }
    }

    // --- misuse -----------------------------------------------------------------------------------------

    void badIdsAndTextThrow_data() {
        QTest::addColumn<QString>("folder");
        for (const char* folder : {"stories260K-llama", "llama3-tokenizer", "gpt2", "qwen2", "gemma"})
            QTest::newRow(folder) << folder;
    }
    void badIdsAndTextThrow() {
        QFETCH(QString, folder);
        SKIP_WITHOUT_SHARED(folder);
        const Tokenizer* tok = tokenizer(folder);
        const int64_t past = tok->vocabSize();
        QVERIFY(errorOf([&] { tok->decode({-1}, true); }).contains("outside the vocabulary"));
        QVERIFY(errorOf([&] { tok->decodeShowingUnknown({1, -1}, true); }).contains("outside the vocabulary"));
        QVERIFY(errorOf([&] { tok->tokenString(past); }).contains("outside the vocabulary"));
        QVERIFY(errorOf([&] { tok->tokenLabel(-5); }).contains("outside the vocabulary"));
        // An id past the tokenizer's (a padded vocabulary's: the model computes it) is decoded as transformers does, to
        // nothing, and shown with its placeholder where it stands.
        const std::vector<int64_t> ids = tok->encode("Once upon a time", false);
        std::vector<int64_t> withPadded = ids;
        withPadded.insert(withPadded.begin() + 2, past + 7);
        withPadded.push_back(past);
        QCOMPARE(tok->decode(withPadded, false), tok->decode(ids, false));
        QCOMPARE(tok->tokenLabel(past + 7), "<id " + std::to_string(past + 7) + ": not in tokenizer>");
        const std::string head = tok->decode(std::vector<int64_t>(ids.begin(), ids.begin() + 2), false);
        const std::string shown = tok->decodeShowingUnknown(withPadded, false);
        QCOMPARE(shown, head + Tokenizer::unknownIdLabel(past + 7) + tok->decode(ids, false).substr(head.size()) +
                            Tokenizer::unknownIdLabel(past));
        QCOMPARE(tok->decodeShowingUnknown(ids, false), tok->decode(ids, false));
        const QString utf8 = errorOf([&] { tok->encode(std::string("ab\xC3(", 4), true); });
        QVERIFY2(utf8.contains("not valid UTF-8") && utf8.contains("offset 2"), qPrintable(utf8));
        // A NUL byte is text like any other.
        QVERIFY(!tok->encode(std::string("a\0b", 3), false).empty());
    }

    // --- which file says what about BOS/EOS -------------------------------------------------------------

    void specialTokenSettings_data() {
        QTest::addColumn<QByteArray>("postProcessor");
        QTest::addColumn<QByteArray>("tokenizerConfig");  // empty: no such file
        QTest::addColumn<QByteArray>("specialTokensMap");
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<qint64>("bos");  // -1: none
        QTest::addColumn<qint64>("eos");
        QTest::addColumn<bool>("addsBos");
        QTest::addColumn<QString>("helloWorld");  // ids of "hello world"
        QTest::addColumn<QString>("empty");       // ids of ""

        QTest::newRow("no files") << QByteArray("null") << QByteArray() << QByteArray() << QByteArray()
                                  << qint64(-1) << qint64(-1) << false << "3 4" << "";
        // With a tokenizer.json, transformers 5 does not read add_bos_token / add_eos_token (tokenization_utils_base.py
        // drops them): the post_processor alone adds special tokens, here none.
        QTest::newRow("tokenizer_config strings and objects, its add_*_token not read")
            << QByteArray("null")
            << QByteArray(R"({"bos_token":{"content":"<s>","lstrip":false},"eos_token":"</s>",
                              "add_bos_token":true,"add_eos_token":true})")
            << QByteArray() << QByteArray() << qint64(0) << qint64(1) << false << "3 4" << "";
        QTest::newRow("special_tokens_map then config.json list")
            << QByteArray("null") << QByteArray(R"({"bos_token":null})") << QByteArray(R"({"bos_token":"<s>"})")
            << QByteArray(R"({"bos_token_id":4,"eos_token_id":[1,2]})") << qint64(0) << qint64(1) << false << "3 4"
            << "";
        QTest::newRow("config.json only") << QByteArray("null") << QByteArray() << QByteArray()
                                          << QByteArray(R"({"bos_token_id":0,"eos_token_id":1})") << qint64(0)
                                          << qint64(1) << false << "3 4" << "";
        QTest::newRow("unknown token string falls back to config.json")
            << QByteArray("null") << QByteArray(R"({"bos_token":"<bos>"})") << QByteArray()
            << QByteArray(R"({"bos_token_id":1})") << qint64(1) << qint64(-1) << false << "3 4" << "";
        QTest::newRow("post_processor adds BOS") << kBosTemplate << QByteArray(R"({"bos_token":"<s>"})")
                                                 << QByteArray() << QByteArray() << qint64(0) << qint64(-1) << true
                                                 << "0 3 4" << "0";
        QTest::newRow("add_bos_token false leaves the post_processor's BOS")
            << kBosTemplate << QByteArray(R"({"bos_token":"<s>","add_bos_token":false})") << QByteArray()
            << QByteArray() << qint64(0) << qint64(-1) << true << "0 3 4" << "0";
        QTest::newRow("add_bos_token true adds nothing without a post_processor")
            << QByteArray("null") << QByteArray(R"({"bos_token":"<s>","add_bos_token":true})") << QByteArray()
            << QByteArray() << qint64(0) << qint64(-1) << false << "3 4" << "";
    }
    void specialTokenSettings() {
        QFETCH(QByteArray, postProcessor);
        QFETCH(QByteArray, tokenizerConfig);
        QFETCH(QByteArray, specialTokensMap);
        QFETCH(QByteArray, config);
        QFETCH(qint64, bos);
        QFETCH(qint64, eos);
        QFETCH(bool, addsBos);
        QFETCH(QString, helloWorld);
        QFETCH(QString, empty);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeFile(dir.path(), "tokenizer.json", tinyTokenizerJson(postProcessor));
        if (!tokenizerConfig.isEmpty())
            writeFile(dir.path(), "tokenizer_config.json", tokenizerConfig);
        if (!specialTokensMap.isEmpty())
            writeFile(dir.path(), "special_tokens_map.json", specialTokensMap);
        if (!config.isEmpty())
            writeFile(dir.path(), "config.json", config);
        std::unique_ptr<Tokenizer> tok;
        const QString error = errorOf([&] { tok = Tokenizer::load(dir.path().toStdString()); });
        QVERIFY2(tok, qPrintable(error));
        QCOMPARE(tok->bosId().value_or(-1), bos);
        QCOMPARE(tok->eosId().value_or(-1), eos);
        QCOMPARE(tok->addsBos(), addsBos);
        QCOMPARE(tok->vocabSize(), qint64(6));
        QCOMPARE(idsText(tok->encode("hello world", true)), helloWorld);
        QCOMPARE(idsText(tok->encode("", true)), empty);
        QCOMPARE(idsText(tok->encode("hello world", false)), QString("3 4"));
    }

    void sentencePieceDefaultsWithoutConfig() {
        SKIP_WITHOUT_SHARED(QStringLiteral("stories260K-llama"));
        // tokenizer.model alone: LlamaTokenizer's defaults (BOS added, EOS not) and the model's own ids.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString model = kModels + "/stories260K-llama/tokenizer.model";
        QVERIFY(QFile::link(model, dir.path() + "/tokenizer.model"));
        std::unique_ptr<Tokenizer> tok;
        const QString error = errorOf([&] { tok = Tokenizer::load(dir.path().toStdString()); });
        QVERIFY2(tok, qPrintable(error));
        QCOMPARE(tok->bosId().value_or(-1), qint64(1));
        QCOMPARE(tok->eosId().value_or(-1), qint64(2));
        QVERIFY(tok->addsBos());
        QVERIFY(!tok->addsEos());
        QCOMPARE(idsText(tok->encode("", true)), QString("1"));
        // add_eos_token from tokenizer_config.json appends EOS.
        writeFile(dir.path(), "tokenizer_config.json", R"({"add_bos_token":false,"add_eos_token":true})");
        tok = Tokenizer::load(dir.path().toStdString());
        QVERIFY(!tok->addsBos());
        QCOMPARE(idsText(tok->encode("", true)), QString("2"));
        const auto ids = tok->encode("Lily", true);
        QCOMPARE(ids.back(), int64_t(2));
        QVERIFY(ids.front() != 1);
    }

    void cleanUpFollowsTransformers_data() {
        QTest::addColumn<bool>("sentencePiece");     // the stories260K BPE tokenizer.model, else tiny WordLevel
        QTest::addColumn<QByteArray>("tokenizerConfig");
        QTest::addColumn<QByteArray>("expected");    // decode(encode("hello .")) or of "Hello , world ."
        QTest::newRow("word-level, no clean-up") << false << QByteArray("{}") << QByteArray("hello .");
        QTest::newRow("word-level, clean-up") << false << QByteArray(R"({"clean_up_tokenization_spaces":true})")
                                              << QByteArray("hello.");
        QTest::newRow("BPE ignores clean-up") << true << QByteArray(R"({"clean_up_tokenization_spaces":true})")
                                              << QByteArray("Hello , world .");
        QTest::newRow("BPE clean-up forced")
            << true
            << QByteArray(R"({"clean_up_tokenization_spaces":true,
                 "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output":true})")
            << QByteArray("Hello, world.");
    }
    void cleanUpFollowsTransformers() {
        QFETCH(bool, sentencePiece);
        if (sentencePiece)
            SKIP_WITHOUT_SHARED(QStringLiteral("stories260K-llama"));
        QFETCH(QByteArray, tokenizerConfig);
        QFETCH(QByteArray, expected);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        if (sentencePiece)
            QVERIFY(QFile::link(kModels + "/stories260K-llama/tokenizer.model", dir.path() + "/tokenizer.model"));
        else
            writeFile(dir.path(), "tokenizer.json", tinyTokenizerJson("null"));
        writeFile(dir.path(), "tokenizer_config.json", tokenizerConfig);
        std::unique_ptr<Tokenizer> tok;
        const QString error = errorOf([&] { tok = Tokenizer::load(dir.path().toStdString()); });
        QVERIFY2(tok, qPrintable(error));
        const std::string text = sentencePiece ? "Hello , world ." : "hello .";
        QCOMPARE(QByteArray::fromStdString(tok->decode(tok->encode(text, true), true)), expected);
    }

    // --- errors: each names the file (or folder) and what is wrong ----------------------------------------

    void loadErrors_data() {
        QTest::addColumn<QStringList>("names");
        QTest::addColumn<QByteArrayList>("contents");
        QTest::addColumn<QStringList>("mustContain");  // "%1" stands for the folder path

        QTest::newRow("folder without tokenizer")
            << QStringList{"config.json"} << QByteArrayList{"{}"}
            << QStringList{"No tokenizer file was found in %1", "tokenizer.json", "tokenizer.model"};
        QTest::newRow("tokenizer.json not JSON")
            << QStringList{"tokenizer.json"} << QByteArrayList{"{ this is not json"}
            << QStringList{"%1/tokenizer.json", "not a valid HuggingFace tokenizer.json", "line 1"};
        QTest::newRow("tokenizer.json empty") << QStringList{"tokenizer.json"} << QByteArrayList{""}
                                              << QStringList{"%1/tokenizer.json", "not a valid"};
        QTest::newRow("tokenizer.json without a model")
            << QStringList{"tokenizer.json"} << QByteArrayList{R"({"version":"1.0","added_tokens":[]})"}
            << QStringList{"%1/tokenizer.json", "not a valid HuggingFace tokenizer.json"};
        QTest::newRow("tokenizer.json with a bad regex")
            << QStringList{"tokenizer.json"}
            << QByteArrayList{tinyTokenizerJson("null").replace(
                   R"({"type":"Whitespace"})",  // an unclosed group; written without a raw string, which moc misreads
                   "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},"
                   "\"behavior\":\"Isolated\",\"invert\":false}")}
            << QStringList{"%1/tokenizer.json", "not a valid"};
        QTest::newRow("garbage tokenizer.model")
            << QStringList{"tokenizer.model"} << QByteArrayList{"this is not a sentencepiece model\n\x01\x02\xff"}
            << QStringList{"%1/tokenizer.model", "not a valid SentencePiece model"};
        QTest::newRow("empty tokenizer.model") << QStringList{"tokenizer.model"} << QByteArrayList{""}
                                               << QStringList{"%1/tokenizer.model"};
        QTest::newRow("tokenizer.model that SentencePiece rejects")  // one piece "a" and no <unk>
            << QStringList{"tokenizer.model"} << QByteArrayList{QByteArray("\x0A\x03\x0A\x01" "a", 5)}
            << QStringList{"%1/tokenizer.model", "not a valid SentencePiece model"};
        QTest::newRow("tiktoken tokenizer.model")
            << QStringList{"tokenizer.model"} << QByteArrayList{"IQ== 0\nIg== 1\nIw== 2\n"}
            << QStringList{"%1/tokenizer.model", "tiktoken"};
        QTest::newRow("tokenizer_config.json not JSON")
            << QStringList{"tokenizer.json", "tokenizer_config.json"}
            << QByteArrayList{tinyTokenizerJson("null"), "{\"bos_token\": "}
            << QStringList{"%1/tokenizer_config.json", "not valid JSON"};
        QTest::newRow("tokenizer_config.json not an object")
            << QStringList{"tokenizer.json", "tokenizer_config.json"} << QByteArrayList{tinyTokenizerJson("null"), "[1]"}
            << QStringList{"%1/tokenizer_config.json", "JSON object"};
        QTest::newRow("add_bos_token of the wrong type")
            << QStringList{"tokenizer.json", "tokenizer_config.json"}
            << QByteArrayList{tinyTokenizerJson("null"), R"({"add_bos_token":"yes"})"}
            << QStringList{"%1/tokenizer_config.json", "add_bos_token", "true or false"};
        QTest::newRow("bos_token of the wrong type")
            << QStringList{"tokenizer.json", "special_tokens_map.json"}
            << QByteArrayList{tinyTokenizerJson("null"), R"({"bos_token":7})"}
            << QStringList{"%1/special_tokens_map.json", "bos_token"};
        QTest::newRow("config.json not JSON")
            << QStringList{"tokenizer.json", "config.json"} << QByteArrayList{tinyTokenizerJson("null"), "nope"}
            << QStringList{"%1/config.json", "not valid JSON"};
        QTest::newRow("eos_token_id of the wrong type")
            << QStringList{"tokenizer.json", "config.json"}
            << QByteArrayList{tinyTokenizerJson("null"), R"({"eos_token_id":"2"})"}
            << QStringList{"%1/config.json", "eos_token_id"};
    }
    void loadErrors() {
        QFETCH(QStringList, names);
        QFETCH(QByteArrayList, contents);
        QFETCH(QStringList, mustContain);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (int i = 0; i < names.size(); ++i)
            writeFile(dir.path(), names[i], contents[i]);
        const QString message = errorOf([&] { Tokenizer::load(dir.path().toStdString()); });
        for (const QString& part : mustContain)
            QVERIFY2(message.contains(QString(part).replace("%1", dir.path())),
                     qPrintable("\"" + part + "\" not in: " + message));
    }

    void missingFolderThrows() {
        QTemporaryDir dir;
        const QString missing = dir.path() + "/no-such-model";
        const QString message = errorOf([&] { Tokenizer::load(missing.toStdString()); });
        QVERIFY2(message.contains(missing) && message.contains("does not exist"), qPrintable(message));
        const QString file = dir.path() + "/plain-file";
        writeFile(dir.path(), "plain-file", "x");
        const QString notFolder = errorOf([&] { Tokenizer::load(file.toStdString()); });
        QVERIFY2(notFolder.contains(file) && notFolder.contains("not a folder"), qPrintable(notFolder));
    }

    void unreadableTokenizerThrows() {
        // A tokenizer.json that is a folder cannot be read; the message names it.
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir("tokenizer.json"));
        const QString message = errorOf([&] { Tokenizer::load(dir.path().toStdString()); });
        QVERIFY2(message.contains(dir.path() + "/tokenizer.json") && message.contains("could not be read"),
                 qPrintable(message));
    }
};

NNSCOPE_TEST_SUITE(TokenizerTest, "test_tokenizer")
#include "test_tokenizer.moc"
