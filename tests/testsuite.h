// SPDX-License-Identifier: MIT
// The engine's Qt Test suites live in one program (nnscope_tests), so libtorch is linked once; ctest still lists
// each suite on its own (`nnscope_tests test_engine`). A suite registers itself with NNSCOPE_TEST_SUITE instead
// of QTEST_MAIN.
#pragma once
#include <QtTest>

#include <map>
#include <string>

namespace nnscope::test {

/// Runs one suite with Qt Test's own arguments (argv[0] is the program, then -o, function names, ...).
using SuiteMain = int (*)(int argc, char** argv);

/// Every registered suite by its ctest name ("test_engine").
inline std::map<std::string, SuiteMain>& suites() {
    static std::map<std::string, SuiteMain> all;
    return all;
}

struct RegisterSuite {
    RegisterSuite(const char* name, SuiteMain run) { suites()[name] = run; }
};

}  // namespace nnscope::test

/// Registers the QObject test class `Class` as suite `name` (testmain.cpp runs it by that name).
#define NNSCOPE_TEST_SUITE(Class, name)                                                     \
    static int nnscopeRunSuite_##Class(int argc, char** argv) {                            \
        Class suite;                                                                        \
        return QTest::qExec(&suite, argc, argv);                                           \
    }                                                                                       \
    static const nnscope::test::RegisterSuite nnscopeSuite_##Class(name, nnscopeRunSuite_##Class);
