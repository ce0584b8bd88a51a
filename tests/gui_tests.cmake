# SPDX-License-Identifier: MIT
# Writes test_gui's ctest entries from the program itself (run after each link of test_gui): `test_gui -functions`
# lists its Qt Test functions, and each becomes an entry test_gui_<function> that runs that function alone, so a new
# test function is registered by being written, and ctest -j2 spreads them over both cores.
#   cmake -D PROGRAM=path/to/test_gui -D OUT=file.cmake -P gui_tests.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen "${PROGRAM}" -functions
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} -functions failed (${status}): ${errors}")
endif()
string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*\\(\\)" functions "${listing}")
if(NOT functions)
  message(FATAL_ERROR "${PROGRAM} -functions listed no test functions: ${listing}")
endif()
set(text "# Written by tests/gui_tests.cmake from `test_gui -functions`; do not edit.\n")
foreach(function ${functions})
  string(REPLACE "()" "" name "${function}")
  string(APPEND text "add_test([=[test_gui_${name}]=] \"${PROGRAM}\" [=[${name}]=])\n"
                     "set_tests_properties([=[test_gui_${name}]=] PROPERTIES ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 900)\n")
endforeach()
file(WRITE "${OUT}.new" "${text}")
file(RENAME "${OUT}.new" "${OUT}")
