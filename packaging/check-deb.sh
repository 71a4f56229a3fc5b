#!/usr/bin/env bash
# Install a ringdl .deb on this machine (as root) and check that it works and goes away cleanly.
#
#   packaging/check-deb.sh path/to/ringdl_VERSION_ARCH.deb
#
# Steps: the committed man page renders without groff warnings; the package installs into and is
# removed from an empty dpkg root (a machine without zsh, fish or bash-completion); an older ringdl
# package (the same .deb repacked with version 0.0.1-1) installs and the given .deb upgrades it; the installed
# binary runs and downloads from a local web server; man finds the page; bash (bash-completion),
# zsh and fish (when installed) load the completions; `dpkg -r` leaves nothing of the package.
# Stops with a non-zero exit at the first failure. Needs: dpkg, python3, groff, man-db,
# bash-completion; zsh and fish are checked when installed.
set -euo pipefail
export LC_ALL=C.UTF-8

[ $# -eq 1 ] || { echo "usage: $0 ringdl_VERSION_ARCH.deb" >&2; exit 2; }
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$deb" ] || { echo "check-deb: $deb: no such file" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "check-deb: must run as root (dpkg -i)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ringdl-check.XXXXXX")
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

n=0
step() { n=$((n + 1)); printf '[%2d] %s ... ' "$n" "$*"; }
ok() { echo "ok${1:+ ($1)}"; }
fail() {
  echo "FAILED"
  printf '     %s\n' "$@" >&2
  exit 1
}

version=$(dpkg-deb -f "$deb" Version)
upstream=${version%-*}

step "man/ringdl.1 renders with groff -ww -z -man without warnings"
msgs=$(groff -ww -z -man "$src/man/ringdl.1" 2>&1) || fail "groff failed" "$msgs"
[ -z "$msgs" ] || fail "groff warnings:" "$msgs"
ok

step "no ringdl package installed before the test"
if dpkg-query -W -f '${db:Status-Status}' ringdl 2>/dev/null | grep -qx installed; then
  dpkg -P ringdl >/dev/null || fail "could not remove the installed ringdl"
  ok "removed the one that was installed"
else
  ok
fi

step "in an empty dpkg root (no zsh, fish or bash-completion) the package installs and dpkg -r leaves nothing"
# A second dpkg database that knows no other package stands for a machine without the shells whose
# vendor directories the package writes into. libc6 is not in it either, hence --force-depends.
root=$work/bare
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-script-chrootless -i "$deb" >"$work/bare.log" 2>&1 ||
  fail "$(cat "$work/bare.log")"
for f in usr/bin/ringdl usr/share/zsh/vendor-completions/_ringdl usr/share/fish/vendor_completions.d/ringdl.fish; do
  [ -f "$root/$f" ] || fail "$f was not installed under the empty root"
done
dpkg --root="$root" -r ringdl >"$work/bare.log" 2>&1 || fail "$(cat "$work/bare.log")"
left=$(cd "$root" && find . -path ./var/lib/dpkg -prune -o \( -type f -o -type l \) -print)
[ -z "$left" ] || fail "dpkg -r left files behind:" "$left"
ok

step "an older ringdl (0.0.1-1, repacked from $(basename "$deb")) installs with dpkg -i"
dpkg-deb -R "$deb" "$work/old"
sed -i 's/^Version: .*/Version: 0.0.1-1/' "$work/old/DEBIAN/control"
dpkg-deb --root-owner-group --build "$work/old" "$work/ringdl_0.0.1-1.deb" >/dev/null
dpkg -i "$work/ringdl_0.0.1-1.deb" >"$work/dpkg.log" 2>&1 || fail "$(cat "$work/dpkg.log")"
[ "$(dpkg-query -W -f '${Version}' ringdl)" = 0.0.1-1 ] || fail "dpkg does not list 0.0.1-1 as installed"
ok

step "dpkg -i $(basename "$deb") upgrades it to $version"
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || fail "$(cat "$work/dpkg.log")"
grep -q "over (0.0.1-1)" "$work/dpkg.log" || fail "dpkg did not unpack over 0.0.1-1:" "$(cat "$work/dpkg.log")"
[ "$(dpkg-query -W -f '${db:Status-Abbrev}${Version}' ringdl)" = "ii $version" ] ||
  fail "ringdl is not installed at $version: $(dpkg-query -W -f '${db:Status-Abbrev}${Version}' ringdl)"
ok

step "the package's files are all on disk (dpkg --verify)"
out=$(dpkg --verify ringdl 2>&1) || fail "$out"
[ -z "$out" ] || fail "$out"
ok

step "ringdl --version is the installed /usr/bin/ringdl and names version $upstream"
[ "$(command -v ringdl)" = /usr/bin/ringdl ] || fail "ringdl on PATH is $(command -v ringdl)"
out=$(/usr/bin/ringdl --version) || fail "ringdl --version exited non-zero" "$out"
printf '%s\n' "$out" | head -1 | grep -qF "ringdl version $upstream" || fail "unexpected first line:" "$out"
printf '%s\n' "$out" | grep -q 'Enabled Features' || fail "no 'Enabled Features' line:" "$out"
ok "$(printf '%s\n' "$out" | head -1)"

step "man -w ringdl finds the installed page, and it formats"
page=$(man -w ringdl) || fail "man -w ringdl failed"
[ "$page" = /usr/share/man/man1/ringdl.1.gz ] || fail "man -w ringdl gave $page"
man -P cat ringdl 2>/dev/null | grep -q 'SYNOPSIS' || fail "man ringdl shows no SYNOPSIS"
ok "$page"

bc=/usr/share/bash-completion/bash_completion
step "bash -ic 'complete -p ringdl' (bash-completion loads completions/ringdl on demand)"
[ -r "$bc" ] || fail "$bc missing: apt-get install bash-completion"
# Interactive bash sources bash_completion from /etc/bash.bashrc, but completions are loaded lazily,
# on the first Tab: _completion_loader does what that Tab would.
out=$(bash -ic ". $bc; _completion_loader ringdl; complete -p ringdl" 2>"$work/bash.err") ||
  fail "complete -p ringdl failed: $(cat "$work/bash.err")"
printf '%s\n' "$out" | grep -q -- '-F _ringdl.* ringdl$' || fail "unexpected: $out"
grep -v -e 'no job control' -e 'cannot set terminal process group' -e '^$' "$work/bash.err" >"$work/bash.err2" || true
[ ! -s "$work/bash.err2" ] || fail "bash printed errors:" "$(cat "$work/bash.err2")"
ok "$out"

step "bash: after 'alias aria2c=ringdl' the aria2c name is completed too"
out=$(bash -ic "alias aria2c=ringdl; . $bc; _completion_loader aria2c; complete -p aria2c" 2>/dev/null) ||
  fail "complete -p aria2c failed"
if [ -e /usr/share/bash-completion/completions/aria2c ]; then
  ok "aria2's own completion is installed and wins: $out"
else
  printf '%s\n' "$out" | grep -q -- '-F _ringdl.* aria2c$' || fail "unexpected: $out"
  ok "$out"
fi

step "bash: completing 'ringdl --max-conn' offers --max-connection-per-server"
out=$(bash -ic ". $bc; _completion_loader ringdl
  COMP_WORDS=(ringdl --max-conn); COMP_CWORD=1; COMP_LINE='ringdl --max-conn'; COMP_POINT=\${#COMP_LINE}
  fn=\$(complete -p ringdl | sed 's/.*-F \\([^ ]*\\).*/\\1/'); \$fn ringdl --max-conn ringdl
  printf '%s\n' \"\${COMPREPLY[@]}\"" 2>/dev/null) || true
printf '%s\n' "$out" | grep -q -- '--max-connection-per-server' || fail "no candidate, got: $out"
ok

if command -v zsh >/dev/null; then
  step "zsh: compinit finds _ringdl in vendor-completions and it loads without error"
  out=$(zsh -fc 'autoload -Uz compinit && compinit -u -D && print -r -- ${_comps[ringdl]} &&
    autoload +X -Uz _ringdl && print -r -- ${functions_source[_ringdl]:-loaded}' 2>&1) ||
    fail "zsh failed:" "$out"
  [ "$(printf '%s\n' "$out" | head -1)" = _ringdl ] || fail "_comps[ringdl] is not _ringdl:" "$out"
  [ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || fail "zsh printed more than expected:" "$out"
  ok
else
  step "zsh: not installed, skipped"; ok
fi

if command -v fish >/dev/null; then
  step "fish: the vendor completion loads without error and completes 'ringdl --max-conn'"
  # A fresh HOME: no user config, but fish's default completion path (--no-config would empty it).
  mkdir -p "$work/fishhome"
  out=$(env HOME="$work/fishhome" XDG_CONFIG_HOME="$work/fishhome/.config" XDG_DATA_HOME="$work/fishhome/.local/share" \
    fish -c 'complete -C "ringdl --max-conn"' 2>"$work/fish.err") || fail "fish failed: $(cat "$work/fish.err")"
  [ ! -s "$work/fish.err" ] || fail "fish printed errors:" "$(cat "$work/fish.err")"
  printf '%s\n' "$out" | grep -q -- '--max-connection-per-server' || fail "no candidate, got: $out"
  ok
else
  step "fish: not installed, skipped"; ok
fi

step "/usr/bin/ringdl -x4 downloads a 3 MiB file from python3 -m http.server on 127.0.0.1"
mkdir -p "$work/www" "$work/dl"
head -c 3145728 /dev/urandom >"$work/www/blob.bin"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" >"$work/http.log" 2>&1 &
server=$!
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.1
done
cd "$work/dl"
/usr/bin/ringdl -x4 -s4 -k1M --console-log-level=warn --summary-interval=0 \
  -d "$work/dl" "http://127.0.0.1:$port/blob.bin" >"$work/ringdl.log" 2>&1 ||
  fail "ringdl exited $?:" "$(cat "$work/ringdl.log")"
cd /
cmp -s "$work/www/blob.bin" "$work/dl/blob.bin" || fail "downloaded file differs from the served one"
[ ! -e "$work/dl/blob.bin.aria2" ] || fail "control file left after a complete download"
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
server=
ok "$(sha256sum "$work/dl/blob.bin" | cut -c1-16)…"

step "dpkg -r ringdl removes every file dpkg -L lists"
dpkg -L ringdl >"$work/files"
dpkg -r ringdl >"$work/dpkg.log" 2>&1 || fail "$(cat "$work/dpkg.log")"
left=()
while IFS= read -r f; do
  [ "$f" = /. ] && continue
  if [ -L "$f" ] || { [ -e "$f" ] && [ ! -d "$f" ]; }; then
    left+=("$f")
  elif [ -d "$f" ] && ! dpkg-query -S "$f" >/dev/null 2>&1; then
    left+=("$f/ (directory no other package owns)")
  fi
done <"$work/files"
[ ${#left[@]} -eq 0 ] || fail "left behind:" "${left[@]}"
status=$(dpkg-query -W -f '${db:Status-Status}' ringdl 2>/dev/null || echo not-installed)
[ "$status" = not-installed ] || fail "dpkg status after removal: $status (expected not-installed)"
ok "$(wc -l <"$work/files") paths checked"

echo "check-deb: all $n checks passed for $(basename "$deb")"
