// SPDX-License-Identifier: MIT
// One binary: the explorer window (no sub-command, or `gui`) and the command-line tool.
#include "cli.h"

#include "core/io/tempfiles.h"
#include "core/run/openblas.h"

#include <QCoreApplication>

#include <string>
#include <vector>

#include <cstdio>
#include <cstring>

#ifdef NNSCOPE_WITH_GUI
namespace nnscope {
int runGui(int& argc, char** argv);
}
#endif

int main(int argc, char** argv) {
    nnscope::restartWithOpenBlasCoreType(argv);  // OpenBLAS's generic kernels on CPUs newer than it: restart with the right ones
    nnscope::installTempFileCleanupOnSignals();  // Ctrl-C or SIGTERM while --out is written leaves no partial file
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
