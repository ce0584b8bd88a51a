# SPDX-License-Identifier: MIT
# What `cmake --install` adds beside the program and the demo model (app/CMakeLists.txt), and the Debian package:
# `cpack -G DEB` in the build folder makes nnscope_<version>_<arch>.deb (docs/DEVELOPING.md, "Debian package").
# Included from the top CMakeLists.txt after every target is defined. Paths follow GNUInstallDirs.

# The desktop menu entry and its icon (the hicolor theme's scalable size: one SVG serves every size).
install(FILES ${CMAKE_CURRENT_LIST_DIR}/nnscope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${CMAKE_SOURCE_DIR}/resources/icons/nnscope.svg
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)

# The man page, nnscope.1.gz, made by help2man from the built program's `nnscope --help` (so it always says what the
# program says). --version-string keeps the machine's OpenBLAS line, which `nnscope --version` also prints, out of it.
find_program(HELP2MAN_EXECUTABLE help2man)
find_program(GZIP_EXECUTABLE gzip)
if(HELP2MAN_EXECUTABLE AND GZIP_EXECUTABLE)
  set(_nnscope_man "${CMAKE_CURRENT_BINARY_DIR}/nnscope.1")
  add_custom_command(
    OUTPUT "${_nnscope_man}.gz"
    COMMAND "${HELP2MAN_EXECUTABLE}" --no-info --section=1 "--version-string=${PROJECT_VERSION}"
            "--name=look inside transformer language models" "--output=${_nnscope_man}" "$<TARGET_FILE:nnscope>"
    COMMAND "${GZIP_EXECUTABLE}" -9 -n -f "${_nnscope_man}"
    DEPENDS nnscope
    COMMENT "Writing the man page nnscope.1.gz from nnscope --help"
    VERBATIM)
  add_custom_target(nnscope_man ALL DEPENDS "${_nnscope_man}.gz")
  install(FILES "${_nnscope_man}.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(WARNING "help2man or gzip was not found: no man page is installed or packaged (packaging/install-deps.sh "
                  "installs help2man); the package_contents test will fail.")
endif()

# --- the Debian package -----------------------------------------------------------------------------------------------
# Depends is computed by dpkg-shlibdeps from the libraries the program links (libtorch, Qt 6, QCustomPlot, the C and
# C++ run-times): nothing is listed by hand. The tokenizer crate is linked statically (core/hf_tokenizers), so cargo and
# Rust's standard library are needed only to build. Qt's xcb and offscreen platform plugins come with libqt6gui6.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nnscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "nnscope maintainers <maintainers@users.noreply.a-seed-67c48aad.example>" CACHE STRING
    "The Maintainer field of the Debian package")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "explorer of the insides of transformer language models")
set(CPACK_PACKAGE_DESCRIPTION [[
nnscope opens a HuggingFace checkpoint folder (config.json, safetensors,
tokenizer), runs the model on libtorch and shows every internal value under
one standard vocabulary: attention patterns, MLP neurons, the logit lens,
interventions and activation patching, in a Qt window and on the command
line. A small demo model with an induction head is included.]])
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # RelWithDebInfo's debug info would make the package ~10 times larger
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # nnscope_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The BLAS libtorch1.13 loads as libblas.so.3 and libopenblas.so.0 (its own Depends accepts any libblas.so.3, the
# reference BLAS included, which multiplies float32 matrices about 28 times slower). nnscope needs OpenBLAS's OpenMP
# build, which shares libgomp's thread pool with libtorch; the pthreads build (libopenblas0-pthread) runs a pool of its
# own beside it and the two fight over the cores (docs/PERFORMANCE.md). A Depends, so apt installs the OpenMP build
# (alone, it is the alternative Debian chooses); where the pthreads one is installed too Debian prefers it, and
# `nnscope --version` says so and names packaging/install-deps.sh, which points both alternatives at the OpenMP build.
# dpkg-shlibdeps computes the rest of Depends; CPack joins the two.
set(CPACK_DEBIAN_PACKAGE_DEPENDS libopenblas0-openmp)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
