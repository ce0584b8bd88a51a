// SPDX-License-Identifier: MIT
// One binary: the explorer window (no sub-command, or `gui`) and the command-line tool.
#include "cli.h"

#include "core/io/tempfiles.h"
#include "core/io/tokenizer_backends.h"
#include "core/model/allocator.h"
#include "core/run/openblas.h"

#include <QCoreApplication>

#include <algorithm>
#include <string>
#include <vector>

#include <cstdio>
#include <cstring>

#ifdef NNSCOPE_WITH_GUI
namespace nnscope {
int runGui(int& argc, char** argv);
}
#endif

namespace {
/// Qt decodes the arguments as UTF-8 and turns each byte that is not UTF-8 into U+FFFD, so a prompt given in another
/// encoding (Latin-1 from an old terminal or file) would be tokenized as replacement characters without a word: say so.
void warnArgumentsNotUtf8(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const size_t bad = nnscope::tokenizer_detail::firstInvalidUtf8(arg);
        if (bad == std::string::npos) continue;
        std::string what = "argument " + std::to_string(i);
        if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos)
            what = "the value of " + arg.substr(0, std::min<size_t>(arg.find('='), 40));
        else if (i > 1 && std::strncmp(argv[i - 1], "--", 2) == 0 && std::strlen(argv[i - 1]) < 40)
            what = std::string("the value of ") + argv[i - 1];
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(arg[bad]));
        std::fprintf(stderr,
                     "nnscope: warning: %s is not valid UTF-8 (byte %s at offset %zu); each invalid byte is read as U+FFFD, "
                     "the replacement character, so its tokens are not those of the bytes given.\n",
                     what.c_str(), byte, bad);
    }
}
}  // namespace

int main(int argc, char** argv) {
    nnscope::restartWithOpenBlasCoreType(argv);  // OpenBLAS's generic kernels on CPUs newer than it: restart with the right ones
    nnscope::useHugePageCpuAllocator();  // before any thread: large tensors on 2 MiB pages (core/model/allocator.h)
    nnscope::installTempFileCleanupOnSignals();  // Ctrl-C or SIGTERM while --out is written leaves no partial file
    warnArgumentsNotUtf8(argc, argv);
    const bool cli = argc > 1 && nnscope::isCliCommand(QString::fromLocal8Bit(argv[1]));
    const bool help = argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
                                   std::strcmp(argv[1], "--version") == 0);
    if (argc > 1 && !cli && argv[1][0] != '-' && std::strcmp(argv[1], "gui") != 0) {
        std::fprintf(stderr, "nnscope: unknown command '%s' (see nnscope --help).\n", argv[1]);
        return 2;
    }
    if (cli || help) {
        // A command's --help begins "Usage: nnscope trace [options]": Qt names the program by the first argument.
        std::string program = cli ? std::string("nnscope ") + argv[1] : std::string(argv[0]);
        std::vector<char*> args(argv, argv + argc);
        args[0] = program.data();
        int count = argc;
        QCoreApplication app(count, args.data());
        QCoreApplication::setOrganizationName("nnscope");
        QCoreApplication::setApplicationName("nnscope");
        QCoreApplication::setApplicationVersion("0.1.0");
        return nnscope::runCli(QCoreApplication::arguments());
    }
#ifdef NNSCOPE_WITH_GUI
    return nnscope::runGui(argc, argv);
#else
    std::fprintf(stderr, "nnscope: this build has no window (NNSCOPE_BUILD_GUI=OFF); use a sub-command, see nnscope --help.\n");
    return 2;
#endif
}
