#!/bin/sh
# SPDX-License-Identifier: MIT
# The cmake that the sentencepiece-sys crate's build script runs (the cmake crate takes it from $CMAKE; set by
# CMakeLists.txt). By default that build script configures SentencePiece with its shared libraries and builds the
# "install" target: the library twice (shared and static), the trainer library twice and six command-line tools.
# nnscope links only the static library (the build script also looks for it in build/src), so this builds just that
# target, without the shared copies or TCMalloc: half of the crate's C++ compile (134 s of a cold build on 2 cores, now 65 s).
real=${NNSCOPE_REAL_CMAKE:-cmake}
if [ "${1:-}" = "--build" ]; then
  prev=
  for arg do
    shift
    if [ "$prev" = "--target" ] && [ "$arg" = "install" ]; then
      set -- "$@" sentencepiece-static
    else
      set -- "$@" "$arg"
    fi
    prev=$arg
  done
  exec "$real" "$@"
fi
case " $* " in
  *" --version "* | *" -E "* | *" -P "*) exec "$real" "$@" ;;
esac
exec "$real" "$@" -DSPM_ENABLE_SHARED=OFF -DSPM_ENABLE_TCMALLOC=OFF
