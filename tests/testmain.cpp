// SPDX-License-Identifier: MIT
// nnscope_tests SUITE [Qt Test arguments...]: runs one registered suite (tests/testsuite.h); with no suite, runs
// them all in turn; --list prints their names.
#include "testsuite.h"

#include "core/run/openblas.h"

#include <QCoreApplication>

#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
    // As nnscope does: the engine runs on the OpenBLAS kernels for this CPU, and the nnscope processes the suites start
    // inherit OPENBLAS_CORETYPE instead of each restarting once (about 0.5 s apiece; test_errors starts dozens).
    nnscope::restartWithOpenBlasCoreType(argv);
    QCoreApplication app(argc, argv);
    const auto& all = nnscope::test::suites();
    if (argc > 1 && std::strcmp(argv[1], "--list") == 0) {
        for (const auto& [name, run] : all) std::printf("%s\n", name.c_str());
        return 0;
    }
    if (argc > 1 && argv[1][0] != '-') {
        auto it = all.find(argv[1]);
        if (it == all.end()) {
            std::fprintf(stderr, "nnscope_tests: no suite \"%s\" (--list prints them).\n", argv[1]);
            return 2;
        }
        std::vector<char*> args{argv[0]};
        for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
        return it->second(static_cast<int>(args.size()), args.data());
    }
    int failed = 0;
    for (const auto& [name, run] : all) failed += run(argc, argv) != 0;
    return failed ? 1 : 0;
}
