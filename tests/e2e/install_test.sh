#!/usr/bin/env bash
# End-to-end test of installing flashpipe (cmake/install.cmake):
#  1. `cmake --install BUILD --prefix ROOT` into a temp root writes only there,
#     and the installed binary and its img2simg/simg2img/append2simg links
#     work (a sparse round trip through the links);
#  2. every command of `flashpipe --help` (and every subcommand) has a man
#     page that renders without a warning and names every flag of its --help;
#  3. bash completion completes commands and every flag of every command;
#     zsh completion parses, names every flag, and completes in a real zsh;
#  4. the systemd unit passes `systemd-analyze verify` and points at the
#     installed binary and environment file;
#  5. `cpack -G DEB` makes flashpipe and flashpipe-sparse-utils with computed
#     Depends, section utils and /etc/default/flashpipe-serve as a conffile;
#     the extracted packages run; flashpipe is installed into the real system
#     with dpkg -i and removed (dpkg -r leaves only the conffile, dpkg -P
#     nothing), always purged again by the exit trap.
#   FLASHPIPE=build/flashpipe FLASHPIPE_BUILD_DIR=build bash tests/e2e/install_test.sh
set -euo pipefail

FP=$(realpath "${FLASHPIPE:?set FLASHPIPE to the flashpipe binary}")
BUILD=$(realpath "${FLASHPIPE_BUILD_DIR:-$(dirname "$FP")}")
SRC=$(realpath "${FLASHPIPE_SOURCE_DIR:-$(dirname "$0")/../..}")
work=$(mktemp -d /tmp/fp-install-e2e.XXXXXX)
root=$work/root
dpkg_installed=0
cleanup() {
  if ((dpkg_installed)); then dpkg --purge flashpipe >/dev/null 2>&1 || echo "WARNING: dpkg --purge flashpipe failed" >&2; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
cd "$work"

version=$(sed -n 's/^project(flashpipe VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$version" ] || fail "no version in $SRC/CMakeLists.txt"

# The command tree as --help shows it (not --help-json, which the generator
# reads): "write", "serve", ..., and "lp info" for a CLI11 subcommand.
commands() {
  local path
  "$FP" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}' |
    while read -r path; do subcommands "$path"; done
}
subcommands() {
  echo "$1"
  # shellcheck disable=SC2086
  "$FP" $1 --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}' |
    while read -r sub; do subcommands "$1 $sub"; done
}
# Every flag of `flashpipe PATH --help`, one a line (-Q and --queue-depth apart).
flags() {
  # shellcheck disable=SC2086
  "$FP" $1 --help | grep -E '^  -' | awk '{print $1}' | tr ',' '\n' | grep -E '^-'
}
mapfile -t CMDS < <(commands)
[ "${#CMDS[@]}" -ge 8 ] || fail "commands from flashpipe --help: ${CMDS[*]}"
echo "commands: ${CMDS[*]}"

step "cmake --install into a temp root writes there and nowhere else"
cmake --install "$BUILD" --prefix "$root" >install.log
grep -E '^-- (Installing|Up-to-date): ' install.log | sed -E 's/^-- [A-Za-z-]+: //' >installed.txt
[ -s installed.txt ] || fail "nothing installed"
if grep -v "^$root/" installed.txt; then fail "installed outside $root"; fi
for f in bin/flashpipe share/man/man1/flashpipe.1 share/bash-completion/completions/flashpipe \
         share/zsh/site-functions/_flashpipe lib/systemd/system/flashpipe-serve.service \
         etc/default/flashpipe-serve share/doc/flashpipe/README.md \
         share/doc/flashpipe/schema/write-report.schema.json share/flashpipe/labgrid/flashpipe_labgrid.py \
         share/flashpipe/lava/flashpipe.jinja2; do
  [ -f "$root/$f" ] || fail "missing $f"
done
for l in img2simg simg2img append2simg; do
  [ "$(readlink "$root/bin/$l")" = flashpipe ] || fail "bin/$l is not a relative link to flashpipe"
  [ "$(readlink "$root/share/man/man1/$l.1")" = "flashpipe-$l.1" ] || fail "man page $l.1"
done

step "the installed binary and its links run"
[ "$(env -i "$root/bin/flashpipe" --version)" = "flashpipe $version" ] || fail "--version: want flashpipe $version"
python3 - raw.img <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    f.write(os.urandom(1 << 20)); f.write(bytes(3 << 20)); f.write(b"\x5a" * (1 << 20)); f.write(os.urandom(12288))
PY
head -c 8192 /dev/urandom >tail.raw
"$root/bin/img2simg" raw.img s.simg
[ "$(xxd -p -l 4 s.simg)" = 3aff26ed ] || fail "img2simg link did not write a sparse image"
"$root/bin/simg2img" s.simg back.raw
cmp raw.img back.raw || fail "img2simg -> simg2img through the links changed the data"
"$root/bin/append2simg" s.simg tail.raw
"$root/bin/simg2img" s.simg back2.raw
cmp <(cat raw.img tail.raw) back2.raw || fail "append2simg link"
if [ -x /usr/bin/simg2img ] && ! [ /usr/bin/simg2img -ef "$root/bin/flashpipe" ]; then
  /usr/bin/simg2img s.simg aosp.raw && cmp <(cat raw.img tail.raw) aosp.raw || fail "AOSP simg2img reads it differently"
fi

step "a man page for every command, rendering without warnings, naming every flag"
man_dir=$root/share/man/man1
for path in "${CMDS[@]}"; do
  page=$man_dir/flashpipe-${path// /-}.1
  [ -f "$page" ] || fail "no man page for '$path' ($page)"
  while read -r f; do
    grep -qF -- "\\fB${f//-/\\-}\\fR" "$page" || fail "$page: no $f (in flashpipe $path --help)"
  done < <(flags "$path")
done
for page in "$man_dir"/*.1; do
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  [ -z "$warnings" ] || fail "$page: $warnings"
  [ "$(MANWIDTH=100 man -P cat -l "$page" 2>/dev/null | wc -l)" -gt 8 ] || fail "$page renders empty"
done
for name in flashpipe img2simg flashpipe-serve; do
  MANPATH=$root/share/man man -w "$name" | grep -q "^$root/share/man/man1/" || fail "man -w $name"
done
MANPATH=$root/share/man MANWIDTH=100 man -P cat simg2img 2>/dev/null | grep -q "Also run as simg2img" ||
  fail "man simg2img does not show flashpipe's page"

step "bash completion: commands and every flag"
comp=$root/share/bash-completion/completions/flashpipe
# bcomplete WORD...: what bash offers for the last word, space-separated.
cat >complete.sh <<'EOF'
set -u
source "$COMP"
spec=$(complete -p flashpipe) || { echo "flashpipe has no completion"; exit 1; }
fn=$(sed -E 's/.*-F ([^ ]+) .*/\1/' <<<"$spec")
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]:-}"
echo "${COMPREPLY[*]:-}"
EOF
bcomplete() { COMP=$comp PATH=$root/bin:$PATH bash --norc --noprofile complete.sh "$@"; }
[ "$(bcomplete flashpipe wr)" = write ] || fail "flashpipe wr<TAB>: '$(bcomplete flashpipe wr)'"
[ "$(bcomplete flashpipe write --ver)" = "--verify --verify-only" ] || fail "flashpipe write --ver<TAB>"
[ "$(bcomplete flashpipe write -Q '')" = "" ] || fail "-Q takes a number: nothing to offer"
touch bmap-test.bmap
[ "$(bcomplete flashpipe write --bmap bmap-te)" = bmap-test.bmap ] || fail "--bmap completes file names"
[ "$(bcomplete img2simg --c)" = --crc ] || fail "img2simg (the link) --c<TAB>"
for path in "${CMDS[@]}"; do
  # shellcheck disable=SC2086
  offered=" $(bcomplete flashpipe $path -) "
  while read -r f; do
    [[ $offered == *" $f "* ]] || fail "bash: flashpipe $path -<TAB> does not offer $f"
  done < <(flags "$path")
done
# The AOSP img2simg (not a link to flashpipe) keeps its own completion.
if [ -x /usr/bin/img2simg ] && ! [ /usr/bin/img2simg -ef "$FP" ]; then
  COMP=$comp PATH=/usr/bin:/bin bash --norc -c 'source "$COMP"; complete -p img2simg' >/dev/null 2>&1 &&
    fail "flashpipe's completion claimed the AOSP img2simg"
fi

step "zsh completion: parses, names every flag, completes in zsh"
zcomp=$root/share/zsh/site-functions/_flashpipe
command -v zsh >/dev/null || fail "zsh is not installed (scripts/setup.sh installs it)"
zsh -n "$zcomp" || fail "zsh -n $zcomp"
head -1 "$zcomp" | grep -q '^#compdef flashpipe img2simg simg2img append2simg$' || fail "#compdef line"
for path in "${CMDS[@]}"; do
  fn="_flashpipe_cmd_${path// /_}()"
  body=$(awk -v fn="$fn" '$1 == fn {on = 1} on {print} on && /^}/ {exit}' "$zcomp")
  [ -n "$body" ] || fail "zsh: no function for '$path'"
  while read -r f; do
    grep -qE -- "[)'*]${f}[=+[]" <<<"$body" || fail "zsh: flashpipe $path has no $f"
  done < <(flags "$path")
done
# Type into an interactive zsh (zpty) and read back the completed line.
cat >zdrive.zsh <<'EOF'
# zsh zdrive.zsh FPATH_DIR LINE WANT: types LINE and a TAB into an
# interactive zsh and prints what the terminal showed (escapes and CRs
# removed) once it shows WANT, or after 20 s without it. No fixed sleeps:
# how long zsh takes to start and to complete depends on the machine's load.
zmodload zsh/zpty zsh/datetime
setopt extendedglob
out=''
shown() { print -r -- ${${out//$'\r'/}//$'\e'\[[0-9;?]#[A-Za-z]/}; }
# Reads the terminal until what it shows matches the pattern $1 (bounded).
read_until() {
  local chunk end=$((EPOCHREALTIME + 20))
  while [[ "$(shown)" != $~1 ]] && ((EPOCHREALTIME < end)); do
    if zpty -r -t z chunk; then out+=$chunk; else sleep 0.05; fi
  done
}
zpty z "zsh -f -i"
# The marker is printed (not just echoed: the quotes) once compinit is done;
# the prompt after it means the line editor waits for input.
zpty -w z "PS1='%% '; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; setopt nobeep; print ready''-for-tab"
read_until '*ready-for-tab*% *'
out=''
zpty -n -w z "$2"$'\t'
read_until "*${(b)3}*"
shown
zpty -d z
EOF
# zcomplete LINE WANT: what zsh shows after LINE<TAB> (once it shows WANT).
zcomplete() {
  PATH=$root/bin:$PATH timeout 30 zsh -f zdrive.zsh "$(dirname "$zcomp")" "$1" "$2" | tr -d '\r' |
    sed 's/\x1b\[[0-9;?]*[A-Za-z]//g'
}
out=$(zcomplete "flashpipe wr" "flashpipe write ")
grep -q "flashpipe write $" <<<"$out" || fail "zsh: flashpipe wr<TAB>: $(tail -c 200 <<<"$out")"
out=$(zcomplete "flashpipe write --verify-o" "--verify-only")
grep -q -- "--verify-only" <<<"$out" || fail "zsh: flashpipe write --verify-o<TAB>: $(tail -c 200 <<<"$out")"
out=$(zcomplete "img2simg --cr" "img2simg --crc")
grep -q -- "img2simg --crc" <<<"$out" || fail "zsh: img2simg (the link) --cr<TAB>: $(tail -c 200 <<<"$out")"

step "systemd unit"
unit=$root/lib/systemd/system/flashpipe-serve.service
key() { sed -n "s/^$1=//p" "$unit"; }
[ "$(key ExecStart)" = "$root/bin/flashpipe serve \$FLASHPIPE_SERVE_ARGS" ] || fail "ExecStart: $(key ExecStart)"
[ "$(key EnvironmentFile)" = "$root/etc/default/flashpipe-serve" ] || fail "EnvironmentFile: $(key EnvironmentFile)"
[ "$(key RestartPreventExitStatus)" = 2 ] || fail "a usage error must not restart the daemon"
for section in Unit Service Install; do grep -qx "\[$section\]" "$unit" || fail "unit has no [$section]"; done
if command -v systemd-analyze >/dev/null; then
  MANPATH=$root/share/man systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
else
  echo "note: systemd-analyze not installed; unit checked by its keys only"
fi
# The shipped environment file: no arguments, so the service stops at once,
# saying what is missing, until the admin fills it in.
(set -a; . "$root/etc/default/flashpipe-serve"; [ -z "$FLASHPIPE_SERVE_ARGS" ]) || fail "default FLASHPIPE_SERVE_ARGS not empty"
rc=0; timeout 10 "$root/bin/flashpipe" serve >/dev/null 2>serve.err || rc=$?
[ "$rc" -ne 0 ] && grep -q -- "--storage" serve.err || fail "serve without arguments: exit $rc, $(cat serve.err)"
# The commented examples use flags serve has (--usb comes with the USB transport).
serve_flags=" $(flags serve | tr '\n' ' ') "
grep -E '^#FLASHPIPE_SERVE_ARGS=' "$root/etc/default/flashpipe-serve" | grep -oE -- ' --[a-z-]+' | sort -u |
  while read -r f; do
    [[ $serve_flags == *" $f "* ]] && continue
    [ "$f" = --usb ] && { echo "note: --usb not in this build's serve --help"; continue; }
    fail "environment file example uses $f, which serve does not have"
  done

step "Debian packages (cpack -G DEB)"
cpack -G DEB -B "$work/pkg" --config "$BUILD/CPackConfig.cmake" >cpack.log 2>&1 || { cat cpack.log; fail "cpack"; }
deb=$work/pkg/flashpipe_${version}_$(dpkg --print-architecture).deb
links_deb=$work/pkg/flashpipe-sparse-utils_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] && [ -f "$links_deb" ] || fail "packages: $(ls "$work/pkg")"
field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "$deb" Package)" = flashpipe ] && [ "$(field "$deb" Version)" = "$version" ] || fail "name/version"
[ "$(field "$deb" Section)" = utils ] || fail "section"
[ -n "$(field "$deb" Maintainer)" ] && [ -n "$(field "$deb" Description)" ] || fail "maintainer/description"
for dep in libc6 liburing2 libstdc++6 zlib1g libcurl4; do  # libcurl4: declared, it is dlopen'ed (fetch/curl_api.h)
  field "$deb" Depends | grep -q "\b$dep\b" || fail "Depends lacks $dep (shlibdeps): $(field "$deb" Depends)"
done
[ "$(field "$links_deb" Depends)" = "flashpipe (= $version)" ] || fail "sparse-utils Depends"
[ "$(field "$links_deb" Conflicts)" = android-sdk-libsparse-utils ] || fail "sparse-utils Conflicts"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = /etc/default/flashpipe-serve ] || fail "conffiles"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's/^\.//' >contents.txt
dpkg-deb -c "$links_deb" | awk '{print $6}' | sed 's/^\.//' >links_contents.txt
for f in /usr/bin/flashpipe /etc/default/flashpipe-serve /usr/lib/systemd/system/flashpipe-serve.service \
         /usr/share/man/man1/flashpipe-write.1 /usr/share/bash-completion/completions/flashpipe \
         /usr/share/zsh/vendor-completions/_flashpipe; do
  grep -qx "$f" contents.txt || fail "flashpipe package lacks $f"
done
if grep -E '/usr/bin/(img2simg|simg2img|append2simg)$' contents.txt; then fail "links in the main package"; fi
grep -qx /usr/bin/img2simg links_contents.txt || fail "sparse-utils package lacks /usr/bin/img2simg"
mkdir x
dpkg -x "$deb" x && dpkg -x "$links_deb" x
x/usr/bin/img2simg raw.img x.simg && x/usr/bin/simg2img x.simg x.raw && cmp raw.img x.raw || fail "extracted links"
grep -qx 'ExecStart=/usr/bin/flashpipe serve $FLASHPIPE_SERVE_ARGS' x/usr/lib/systemd/system/flashpipe-serve.service ||
  fail "packaged unit: $(grep ExecStart x/usr/lib/systemd/system/flashpipe-serve.service)"
grep -qx 'EnvironmentFile=/etc/default/flashpipe-serve' x/usr/lib/systemd/system/flashpipe-serve.service ||
  fail "packaged unit's EnvironmentFile"

step "dpkg -i, dpkg -r, dpkg -P in the real system"
if [ "$(id -u)" -ne 0 ]; then
  echo "note: not root, real install skipped"
elif dpkg-query -W -f='${Status}' flashpipe 2>/dev/null | grep -q installed || [ -e /usr/bin/flashpipe ]; then
  echo "note: flashpipe is installed on this machine already; real install skipped so as not to replace it"
else
  # dpkg waits for no lock: retry while another apt/dpkg holds it (shared machine).
  dpkg_do() {
    local i
    for i in $(seq 60); do
      if dpkg "$@" >dpkg.log 2>&1; then return 0; fi
      grep -q "lock" dpkg.log || { cat dpkg.log; return 1; }
      sleep 2
    done
    cat dpkg.log; return 1
  }
  dpkg_installed=1
  dpkg_do -i "$deb" || fail "dpkg -i"
  [ "$(/usr/bin/flashpipe --version)" = "flashpipe $version" ] || fail "installed /usr/bin/flashpipe --version"
  man -w flashpipe-write | grep -q '^/usr/share/man/man1/flashpipe-write.1' || fail "man flashpipe-write after dpkg -i"
  dpkg-query -W -f='${Conffiles}\n' flashpipe | grep -q '/etc/default/flashpipe-serve [0-9a-f]\{32\}' ||
    fail "dpkg does not treat /etc/default/flashpipe-serve as a conffile"
  if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify /usr/lib/systemd/system/flashpipe-serve.service || fail "installed unit"
  fi
  dpkg_do -r flashpipe || fail "dpkg -r"
  while read -r f; do
    [ -z "$f" ] || [ -d "$f" ] || [ "$f" = /etc/default/flashpipe-serve ] && continue
    [ ! -e "$f" ] && [ ! -L "$f" ] || fail "dpkg -r left $f"
  done <contents.txt
  [ -f /etc/default/flashpipe-serve ] || fail "dpkg -r removed the conffile (only purge should)"
  dpkg-query -W -f='${Status}' flashpipe | grep -q "config-files" || fail "status after remove"
  dpkg_do --purge flashpipe || fail "dpkg -P"
  dpkg_installed=0
  [ ! -e /etc/default/flashpipe-serve ] || fail "dpkg -P left the conffile"
  ! dpkg-query -W flashpipe >/dev/null 2>&1 || fail "flashpipe still known to dpkg after purge"
fi
echo "install e2e: all passed"
