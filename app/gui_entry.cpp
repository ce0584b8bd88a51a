// SPDX-License-Identifier: MIT
// `nnscope [gui] [--model DIR | --open-trace FILE] [--prompt TEXT]... [--screenshot FILE.png] [--dtype D]`: the explorer window.
// The options are checked before any window opens; a bad combination is an error on stderr with status 2.
#include "mainwindow.h"

#include "cli.h"
#include "defaultmodel.h"
#include "guardedapplication.h"

#include <QDir>

#include "core/model/error.h"
#include "core/model/model.h"
#include "widgets/views/familyview.h"
#include "widgets/panels/palette.h"
#include "widgets/views/patchingview.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QLabel>
#include <QStyle>
#include <QTimer>

#include <cstdio>
#include <functional>
#include <iostream>

namespace nnscope {

namespace {

QtMessageHandler previousHandler = nullptr;

/// QCustomPlot replots the plots of tabs that were never shown, whose paint buffers are 0 x 0: Qt then says
/// "QPainter::begin: Paint device returned engine == 0" and QCustomPlot "paint buffer returned inactive painter",
/// harmless (the plot is drawn again at its size when shown) but a dozen lines on every `gui --screenshot`. Those two
/// are dropped, and the offscreen platform's "This plugin does not support propagateSizeHints()" (a screenshot's
/// window has no window manager to tell); every other message goes to Qt's handler.
void quietZeroSizePlots(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (message.startsWith(QLatin1String("QPainter::begin: Paint device returned engine == 0")) ||
        message.contains(QLatin1String("paint buffer returned inactive painter")) ||
        message == QLatin1String("This plugin does not support propagateSizeHints()"))
        return;
    if (previousHandler) previousHandler(type, context, message);
}

int usageError(const QString& message) {
    std::cerr << "nnscope gui: " << message.toStdString() << "\nRun `nnscope gui --help` for the options." << std::endl;
    return 2;
}

bool hasDisplay() { return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"); }

}  // namespace

int runGui(int& argc, char** argv) {
    // The options are read before the QApplication exists, so that --help and a refused combination need no display.
    QStringList args;
    for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
    if (args.size() > 1 && args[1] == "gui") args.removeAt(1);
    // Qt's own options (-style Fusion, -platform offscreen, -reverse, ...) stay in argv for QApplication and are not
    // ours to refuse; they are taken out of what our parser sees.
    static const QStringList qtValued = {"style", "stylesheet", "platform", "platformpluginpath", "platformtheme", "plugin",
                                         "qwindowgeometry", "qwindowicon", "qwindowtitle", "display", "geometry", "session"};
    static const QStringList qtFlags = {"reverse", "widgetcount", "nograb", "dograb", "sync"};
    bool qtStyle = false;  // -style NAME given: --color-scheme keeps that style and sets only the palette
    for (int i = 1; i < args.size();) {
        QString name = args[i];
        if (!name.startsWith('-')) {
            ++i;
            continue;
        }
        while (name.startsWith('-')) name.remove(0, 1);
        const bool inlineValue = name.contains('=');
        name = name.section('=', 0, 0);
        if (qtValued.contains(name)) {
            qtStyle |= name == "style";
            args.removeAt(i);
            if (!inlineValue && i < args.size()) args.removeAt(i);
        } else if (qtFlags.contains(name)) {
            args.removeAt(i);
        } else {
            ++i;
        }
    }
    QCommandLineParser p;
    p.setApplicationDescription(QApplication::translate("gui", "nnscope: the explorer window. Open a checkpoint, trace prompts, "
                                                                 "read attention, neurons and the logit lens."));
    p.addHelpOption();
    p.addVersionOption();
    const QCommandLineOption model("model", QApplication::translate("gui", "Checkpoint folder to open."), "DIR");
    const QCommandLineOption prompt("prompt", QApplication::translate("gui", "Prompt to trace once the model is open (repeat for a batch)."), "TEXT");
    const QCommandLineOption shot("screenshot", QApplication::translate("gui", "Run the trace, show the attention view, save a PNG of the whole window and exit."), "FILE.png");
    const QCommandLineOption dtype("dtype", QApplication::translate("gui", "Compute dtype: auto (the checkpoint's own where this CPU computes it natively, else float32), float32 or bfloat16."), "D");
    const QCommandLineOption device("device", QApplication::translate("gui", "Where the model computes: cpu (default: the saved choice), cuda or cuda:N (a CUDA build: docs/DEVELOPING.md)."), "D");
    const QCommandLineOption view("view", viewHelp(), "NAME");
    const QCommandLineOption pin("pin", QApplication::translate("gui", "Value path to pin once the model is open (repeatable)."), "PATH");
    const QCommandLineOption dictionary("dictionary", QApplication::translate("gui", "A sparse dictionary's folder (SAE or transcoder) to attach once the model is open (repeatable; File > Open Dictionary)."), "DIR");
    const QCommandLineOption edit("edit", QApplication::translate("gui", "An edit applied by the traces, e.g. 'layers.1.self_attn.attention_queries[:, 1] *= 2' (repeatable)."), "EDIT");
    const QCommandLineOption skip("skip", QApplication::translate("gui", "Skip block N: its output is its input (repeatable)."), "N");
    const QCommandLineOption steer("steer", QApplication::translate("gui", "Steering 'LAYERS:FACTOR:FILE.npy[:POSITIONS]' (repeatable)."), "SPEC");
    const QCommandLineOption clean("clean", QApplication::translate("gui", "Activation patching at start: the clean prompt (with --corrupted and --answer)."), "TEXT");
    const QCommandLineOption corrupted("corrupted", QApplication::translate("gui", "Activation patching: the corrupted prompt, as many tokens as --clean."), "TEXT");
    const QCommandLineOption answer("answer", QApplication::translate("gui", "Activation patching: the answer token (text of one token, or #ID)."), "TOKEN");
    const QCommandLineOption wrong("wrong", QApplication::translate("gui", "Activation patching: the wrong token (metric: logit difference)."), "TOKEN");
    const QCommandLineOption site("site", QApplication::translate("gui", "Activation patching: layer_output (default), attention_output, mlp_output, head:H or heads (every head)."), "SITE", "layer_output");
    const QCommandLineOption openTrace("open-trace", QApplication::translate("gui", "A trace file to browse instead of a checkpoint: a .safetensors written by `nnscope trace --out` or the window's exports, or any whose tensors are named by value paths (File > Open Trace)."), "FILE");
    const QCommandLineOption scheme("color-scheme", QApplication::translate("gui", "The window's colours: dark or light (the Fusion style with a dark or light palette, unless -style names another style); without it, the desktop's."), "SCHEME");
    const QCommandLineOption openGraph("open-graph", QApplication::translate("gui", "An attribution graph JSON to show in the Circuit view (circuit-tracer's or Neuronpedia's; File > Open Graph); needs no model."), "FILE");
    p.addOptions({model, prompt, shot, dtype, device, view, pin, dictionary, edit, skip, steer, clean, corrupted, answer, wrong, site, openTrace, openGraph, scheme});
    if (!p.parse(args)) return usageError(p.errorText());
    if (p.isSet("help") || p.isSet("help-all") || p.isSet("version")) {
        QCoreApplication core(argc, argv);  // helpText() names the program from the application's arguments
        QCoreApplication::setApplicationVersion(version());
        std::string text = p.isSet("version") && !p.isSet("help") && !p.isSet("help-all") ? "nnscope " + std::string(version()) + "\n"
                                                                                         : p.helpText().toStdString();
        if (p.isSet("help-all"))
            text += "\nQt's own options are accepted too, e.g. -style NAME, -platform NAME, -reverse, -qwindowtitle TEXT\n"
                    "(https://doc.qt.io/qt-6/qapplication.html#QApplication).\n";
        std::cout << text;
        return 0;
    }
    if (!p.positionalArguments().isEmpty())
        return usageError(QString("unexpected argument '%1' (options start with --).").arg(p.positionalArguments().front()));

    StartOptions options;
    options.model = p.value(model);
    options.traceFile = p.value(openTrace);
    if (p.isSet(openTrace)) {
        if (p.isSet(model) || p.isSet(prompt) || p.isSet(edit) || p.isSet(skip) || p.isSet(steer) || p.isSet(clean) ||
            p.isSet(corrupted) || p.isSet(answer))
            return usageError("--open-trace browses a trace file, which runs nothing: it takes no --model, --prompt, --edit, "
                              "--skip, --steer or patching options (--view, --pin and --screenshot apply).");
        options.openDefault = false;
    }
    options.graphFile = p.value(openGraph);
    if (p.isSet(openGraph) && !p.isSet(model)) {
        options.openDefault = false;  // the graph alone: no demo model behind it
        if (p.value(view).isEmpty()) options.view = "circuit";
    }
    options.prompts = p.values(prompt);
    if (!p.value(view).isEmpty() || options.view.isEmpty()) options.view = p.value(view);
    options.pins = p.values(pin);
    options.dictionaries = p.values(dictionary);
    options.interventions = interventionLines(p.values(edit), p.values(skip), p.values(steer));
    const bool patching = p.isSet(clean) || p.isSet(corrupted) || p.isSet(answer);
    if (patching) {
        if (!p.isSet(clean) || !p.isSet(corrupted) || !p.isSet(answer))
            return usageError("activation patching needs --clean, --corrupted and --answer together.");
        PatchRequest r;
        try {
            r.site = parsePatchSite(p.value(site).toStdString(), &r.head);
        } catch (const Error& e) {
            return usageError(QString::fromStdString(e.what()));
        }
        r.clean = p.value(clean);
        r.corrupted = p.value(corrupted);
        r.answer = p.value(answer);
        r.wrong = p.value(wrong);
        options.patch = r;
        if (options.view.isEmpty()) options.view = "patching";
    }
    if (p.isSet(dtype)) {
        try {
            parseDtypeRequest(p.value(dtype).toStdString());
            options.dtype = p.value(dtype);
        } catch (const Error& e) {
            return usageError(QString::fromStdString(e.what()));
        }
    }
    if (p.isSet(device)) {
        torch::Device where = torch::kCPU;
        try {
            where = parseDevice(p.value(device).toStdString());
        } catch (const Error& e) {
            return usageError(QString::fromStdString(e.what()));
        }
        // A GPU this build or machine lacks: said before any window opens, as the commands say it (status 1).
        if (const std::string why = deviceUnavailableReason(where, deviceSupport()); !why.empty()) {
            std::cerr << "nnscope: " << why << std::endl;
            return 1;
        }
        options.device = QString::fromStdString(deviceName(where));
    }
    const QString colorScheme = p.value(scheme);
    if (p.isSet(scheme) && colorScheme != "dark" && colorScheme != "light")
        return usageError(QString("--color-scheme must be dark or light, not '%1'.").arg(colorScheme));
    const QStringList views = viewNames();
    if (!options.view.isEmpty() && !views.contains(options.view))
        return usageError(QString("--view must be one of %1, not '%2'.").arg(views.join(", "), options.view));
    const QString screenshotPath = p.value(shot);
    const bool screenshot = p.isSet(shot);
    if (screenshot) {
        if (!screenshotPath.endsWith(".png", Qt::CaseInsensitive))
            return usageError(QString("--screenshot writes a PNG: the file name must end in .png (got '%1').").arg(screenshotPath));
        if (options.prompts.isEmpty() && !options.model.isEmpty() && !isDemoModelDir(options.model) && !patching &&
            options.traceFile.isEmpty() && options.graphFile.isEmpty())
            return usageError("--screenshot needs --prompt TEXT: it shows the trace of that prompt (only the demo model has a prompt of its own).");
        options.useSettings = false;
        options.openDefault = false;
        if (options.view.isEmpty()) options.view = "attention";
        // A screenshot needs no screen: without a display (a CI job, a docs build) draw offscreen.
        if (!hasDisplay() && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    }

    if (!hasDisplay() && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        std::cerr << "nnscope gui: there is no display (DISPLAY and WAYLAND_DISPLAY are not set). Start it in a desktop "
                     "session, or headless with QT_QPA_PLATFORM=offscreen (with --screenshot FILE.png to save what it "
                     "shows); the command-line tool works anywhere (nnscope --help)."
                  << std::endl;
        return 2;
    }
    previousHandler = qInstallMessageHandler(quietZeroSizePlots);
    GuardedApplication app(argc, argv);  // no exception leaves a slot: the window says it and goes on
    QApplication::setOrganizationName("nnscope");
    QApplication::setApplicationName("nnscope");
    QApplication::setApplicationVersion(version());
    QApplication::setApplicationDisplayName("nnscope");
    QApplication::setDesktopFileName("nnscope");  // the menu entry (packaging/nnscope.desktop) the window belongs to
    if (!colorScheme.isEmpty()) {  // Qt 6.4 has no colour-scheme switch of its own: Fusion draws with the palette it is given
        if (!qtStyle) QApplication::setStyle("Fusion");
        QApplication::setPalette(colorScheme == "dark" ? darkPalette() : QApplication::style()->standardPalette());
    }
    const bool graphOnly = !options.graphFile.isEmpty() && options.model.isEmpty() && options.traceFile.isEmpty();
    if (screenshot && options.model.isEmpty() && options.traceFile.isEmpty() && !graphOnly) options.model = demoModelDir();  // traced on demoPrompt() without --prompt
    if (screenshot && options.model.isEmpty() && options.traceFile.isEmpty() && !graphOnly)
        return usageError("--screenshot needs --model DIR (and there is no demo model to fall back on).");

    MainWindow window(options);
    window.show();
    // The screenshot's handlers live as long as the event loop: the connections below call them after this block ends
    // (AddressSanitizer found them called out of scope when they were locals of the block).
    std::function<void(const QString&)> fail = [&](const QString& why) {
        std::cerr << "nnscope gui: " << why.toStdString() << std::endl;
        QApplication::exit(1);
    };
    std::function<void()> shoot = [&] {
        QTimer::singleShot(400, &window, [&] {  // let the views lay out and draw once
            const QString error = window.saveScreenshot(screenshotPath);
            if (!error.isEmpty()) return fail(error);
            std::cout << screenshotPath.toStdString() << std::endl;
            QApplication::exit(0);
        });
    };
    if (screenshot) {
        QObject::connect(&window, &MainWindow::modelFailed, &window, [&](const QString&, const QString& message) { fail(message); });
        QObject::connect(&window, &MainWindow::startOptionRefused, &window, [&](const QString& message) { fail(message); });
        if (graphOnly) {  // a graph alone: it was read when the window was made
            if (!window.errorText().isEmpty()) {
                const QString error = window.errorText();
                QTimer::singleShot(0, &window, [&, error] { fail(error); });
            } else {
                window.showView(options.view);
                shoot();
            }
        } else if (!options.traceFile.isEmpty()) {  // a trace file: shoot when it is open
            QObject::connect(&window, &MainWindow::traceFileFailed, &window, [&](const QString&, const QString& message) { fail(message); });
            QObject::connect(&window, &MainWindow::traceFileOpened, &window, [&] {
                window.showView(options.view);
                if (window.viewJobsRunning())  // the logit lens (or a view's analysis) is computed once its view is shown: wait for it
                    QObject::connect(&window, &MainWindow::viewJobsDone, &window, shoot, Qt::SingleShotConnection);
                else
                    shoot();
            });
        } else if (patching && options.prompts.isEmpty()) {  // a patching run and no trace: shoot when the grid is there
            QObject::connect(&window, &MainWindow::patchEnded, &window, [&] {
                if (!window.patchingView()->result()) return fail(window.patchingView()->statusLabel()->text());
                shoot();
            });
        } else {
            QObject::connect(&window, &MainWindow::traceEnded, &window, [&] {
                if (!window.snapshot()) return fail(window.errorText().isEmpty() ? QString("the trace did not finish.") : window.errorText());
                window.showView(options.view);  // the family page starts its checks when shown: wait for them
                if (options.view == "family" && !window.familyView()->checks())
                    QObject::connect(&window, &MainWindow::checksEnded, &window, shoot, Qt::SingleShotConnection);
                else if (window.viewJobsRunning())  // the logit lens, the Flow graph, ... are computed once their view is shown: wait
                    QObject::connect(&window, &MainWindow::viewJobsDone, &window, shoot, Qt::SingleShotConnection);
                else
                    shoot();
            });
        }
        QTimer::singleShot(10 * 60 * 1000, &window, [&] { fail("gave up after 10 minutes without a finished trace."); });
    }
    return app.exec();
}

}  // namespace nnscope
