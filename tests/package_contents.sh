#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctest's package_contents: makes the Debian package from the build folder (cpack -G DEB, packaging/CPackConfig.cmake)
# and checks it:
#   - its name, and that the packaged program's --version is the package's version;
#   - its file list (dpkg-deb -c): the program, every file of resources/demo-model, the menu entry, the icon and the
#     man page, one program in usr/bin and nothing outside usr/;
#   - Depends: every library the program links (readelf NEEDED) belongs to a Debian package that Depends names, and
#     no -dev package is named; libopenblas0-openmp is named and libopenblas0-pthread is not;
#   - the menu entry is valid (desktop-file-validate, where installed) and the man page is made from --help;
#   - the program unpacked from the package (dpkg-deb -x) finds the demo model unpacked beside it: `nnscope --version`
#     must name <root>/usr/share/nnscope/demo-model, not the source tree's copy (which a program run from a build tree
#     falls back on); it traces that model, and the window opens it (gui --screenshot, offscreen).
# Usage: package_contents.sh CPACK BUILD_DIR SOURCE_DIR. Exit status 77 (ctest: skipped) when dpkg-deb is missing.
set -euo pipefail
cpack=$1 build=$2 src=$3

if ! command -v dpkg-deb >/dev/null 2>&1 || ! command -v dpkg-shlibdeps >/dev/null 2>&1; then
  echo "package_contents: skipped: dpkg-deb or dpkg-shlibdeps is not installed (not a Debian system with dpkg-dev)."
  exit 77
fi
fail() { echo "package_contents: FAIL: $*" >&2; exit 1; }
# CPack's DEB generator runs `file` to find the programs whose libraries dpkg-shlibdeps reads.
command -v file >/dev/null 2>&1 || fail "the file utility is not installed (packaging/install-deps.sh installs it): cpack cannot compute Depends"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- the package ------------------------------------------------------------------------------------------------------
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB failed"; }
shopt -s nullglob
debs=("$tmp"/pkg/*.deb)
[ ${#debs[@]} -eq 1 ] || { cat "$tmp/cpack.log" >&2; fail "cpack made ${#debs[@]} .deb files, not one"; }
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
depends=$(dpkg-deb -f "$deb" Depends)
echo "package_contents: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"
echo "package_contents: Depends: $depends"
[ "$(basename "$deb")" = "nnscope_${version}_${arch}.deb" ] || fail "$(basename "$deb") is not named nnscope_${version}_${arch}.deb"

# --- the file list ----------------------------------------------------------------------------------------------------
dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/contents"  # ./usr/bin/nnscope (no names with spaces here)
expect() { grep -qxF "./$1" "$tmp/contents" || fail "$1 is not in the package"; }
expect usr/bin/nnscope
demo_files=0
while IFS= read -r f; do  # every file, its sparse autoencoder's folder too
  expect "usr/share/nnscope/demo-model/${f#"$src"/resources/demo-model/}"
  demo_files=$((demo_files + 1))
done < <(find "$src/resources/demo-model" -type f | sort)
[ $demo_files -gt 0 ] || fail "no demo model files in $src/resources/demo-model"
# the guides Help > Documentation (F1) opens, with their screenshots
expect usr/share/doc/nnscope/README.md
for f in "$src"/docs/*.md "$src"/docs/screenshots/*.png; do expect "usr/share/doc/nnscope/${f#"$src"/docs/}"; done
expect usr/share/applications/nnscope.desktop
expect usr/share/icons/hicolor/scalable/apps/nnscope.svg
expect usr/share/man/man1/nnscope.1.gz
programs=$(grep -E '^\./usr/bin/.*[^/]$' "$tmp/contents" || true)
[ "$programs" = "./usr/bin/nnscope" ] || fail "usr/bin holds $(echo $programs), not nnscope alone"
outside=$(grep -vE '^\./(usr(/.*)?)?$' "$tmp/contents" || true)
[ -z "$outside" ] || fail "paths outside usr/: $(echo $outside)"

# --- unpacked: the program, its Depends, its demo model, its man page and menu entry ---------------------------------
root="$tmp/root"
dpkg-deb -x "$deb" "$root"
program="$root/usr/bin/nnscope"
[ "$("$program" --version | head -n1)" = "nnscope $version" ] ||
  fail "the packaged program says '$("$program" --version | head -n1)', the package's version is $version"

case ", $depends," in *-dev[\ ,]* | *-dev\)*) fail "Depends names a -dev package: $depends" ;; esac
# One thread pool: OpenBLAS's OpenMP build (libgomp's pool, libtorch's), never the pthreads build beside it (#29).
case ", $depends," in *", libopenblas0-openmp,"* | *", libopenblas0-openmp "*) ;;
  *) fail "Depends does not name libopenblas0-openmp (OpenBLAS on libtorch's OpenMP thread pool): $depends" ;; esac
case "$depends" in *libopenblas0-pthread*) fail "Depends names libopenblas0-pthread (a second thread pool): $depends" ;; esac
ldd "$program" >"$tmp/ldd" || fail "ldd $program failed"
for soname in $(readelf -d "$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  # ldd's line for it: "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)", or "/lib64/ld-linux-x86-64.so.2 (0x...)".
  path=$(awk -v s="$soname" '$1 == s && $2 == "=>" {print $3; exit} $1 ~ "/" s "$" {print $1; exit}' "$tmp/ldd")
  [ -n "$path" ] && [ "$path" != "not" ] || fail "the program links $soname, which ldd does not find"
  owner=""
  for candidate in "$path" "/usr$path" "$(readlink -f "$path")"; do  # dpkg knows a merged-/usr file by one of them
    owner=$(dpkg-query -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$owner" ] && break
    owner=""
  done
  [ -n "$owner" ] || fail "the program links $soname ($path), which no installed Debian package provides"
  case ", $depends," in *", $owner "* | *", $owner,"* | *"| $owner "* | *"| $owner,"*) ;;
    *) fail "the program links $soname (package $owner), but Depends does not name $owner: $depends" ;;
  esac
done

# The demo model: found beside the unpacked program (not the source tree's copy, which a program whose own folder has
# none falls back on), traced, and opened by the window when it is given no model.
expected_demo=$(readlink -f "$root/usr/share/nnscope/demo-model")
found_demo=$("$program" --version | sed -n 's/^Demo model: //p')
[ "$found_demo" = "$expected_demo" ] ||
  fail "the unpacked program finds the demo model at '$found_demo', not at the unpacked $expected_demo"
if ! "$program" trace --model "$found_demo" --prompt "tom and lily went to the park" --top-k 3 --json \
     >"$tmp/trace.json" 2>"$tmp/trace.err"; then
  cat "$tmp/trace.err" >&2
  fail "nnscope trace on the unpacked demo model failed"
fi
grep -q '"top_k"' "$tmp/trace.json" || fail "nnscope trace printed no top_k tokens: $(cat "$tmp/trace.json")"
mkdir -m 700 "$tmp/runtime"
if ! "$program" gui --help >/dev/null 2>&1; then
  echo "package_contents: this build has no window (NNSCOPE_BUILD_GUI=OFF): gui --screenshot is not tried."
elif ! QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp/runtime" \
     "$program" gui --screenshot "$tmp/window.png" >"$tmp/gui.out" 2>"$tmp/gui.err"; then
  tail -n 20 "$tmp/gui.err" >&2
  fail "nnscope gui --screenshot (the demo model, offscreen) failed"
elif [ ! -s "$tmp/window.png" ]; then
  fail "nnscope gui --screenshot wrote no image"
fi

gzip -dc "$root/usr/share/man/man1/nnscope.1.gz" | sed 's/\\-/-/g' >"$tmp/nnscope.1" || fail "nnscope.1.gz is not gzip"
grep -q '^\.TH NNSCOPE "1"' "$tmp/nnscope.1" || fail "nnscope.1 has no .TH NNSCOPE \"1\" header"
# Every sub-command the program's --help lists is in the man page (read with roff's \- as -).
commands=$("$program" --help | sed -n 's/^  nnscope \([a-z][a-z-]*\) .*/\1/p' | sort -u)
[ -n "$commands" ] || fail "nnscope --help lists no sub-commands"
for command in $commands; do
  grep -q "nnscope $command" "$tmp/nnscope.1" || fail "the man page does not list 'nnscope $command' (nnscope --help does)"
done

if command -v desktop-file-validate >/dev/null 2>&1; then
  desktop-file-validate "$root/usr/share/applications/nnscope.desktop" || fail "nnscope.desktop is not valid"
else
  echo "package_contents: desktop-file-validate is not installed (desktop-file-utils): the menu entry is not validated."
fi
grep -qx 'Exec=nnscope gui' "$root/usr/share/applications/nnscope.desktop" || fail "nnscope.desktop does not run nnscope gui"
grep -qx 'Icon=nnscope' "$root/usr/share/applications/nnscope.desktop" || fail "nnscope.desktop does not name the icon nnscope"
echo "package_contents: ok"
