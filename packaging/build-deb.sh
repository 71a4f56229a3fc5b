#!/usr/bin/env bash
# Build ringdl_VERSION_ARCH.deb from this crate with cargo and dpkg-deb (no cargo-deb needed).
#
#   packaging/build-deb.sh [--out DIR] [--version DEBVERSION] [--no-build]
#
# --out DIR        where the .deb goes (default: the current directory)
# --version V      package version (default: the crate's version from Cargo.toml, plus the
#                  Debian revision "-1"); check-deb.sh uses it to build an older package for the
#                  upgrade test
# --no-build       reuse the release binary already in $CARGO_TARGET_DIR (default target/)
#
# Needs: cargo, dpkg-deb, dpkg-shlibdeps (dpkg-dev), binutils (strip, objdump), gzip, python3.
# Reproducible: mtimes are SOURCE_DATE_EPOCH (default: the last git commit), paths of the build
# machine are remapped out of the binary, gzip -n, files sorted by dpkg-deb.
set -euo pipefail
export LC_ALL=C TZ=UTC
umask 022

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
out=$PWD
version=
build=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --version) version=$2; shift 2 ;;
    --version=*) version=${1#--version=}; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "build-deb: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$src"
upstream=$(sed -n '/^\[package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$upstream" ] || { echo "build-deb: no version in Cargo.toml" >&2; exit 1; }
version=${version:-$upstream-1}
arch=$(dpkg --print-architecture)
maintainer="ringdl maintainers <maintainers@users.noreply.a-seed-f968c223.example>"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null || stat -c %Y Cargo.toml)
fi
export SOURCE_DATE_EPOCH
target_dir=${CARGO_TARGET_DIR:-$src/target}
cargo_home=${CARGO_HOME:-$HOME/.cargo}

# 1. The release binary, without the build machine's paths in it (panic locations, C __FILE__).
if [ "$build" = 1 ]; then
  echo "build-deb: cargo build --release (target dir $target_dir)"
  remap="--remap-path-prefix=$src=/usr/src/ringdl-$upstream --remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$target_dir=/target"
  export RUSTFLAGS="${RUSTFLAGS:-} $remap"
  prefix_map="-ffile-prefix-map=$src=/usr/src/ringdl-$upstream -ffile-prefix-map=$cargo_home=/cargo -ffile-prefix-map=$target_dir=/target"
  # _FORTIFY_SOURCE for the C parts (ring's): lintian's hardening-no-fortify-functions.
  export CFLAGS="${CFLAGS:-} $prefix_map -D_FORTIFY_SOURCE=2" CXXFLAGS="${CXXFLAGS:-} $prefix_map"
  CARGO_TARGET_DIR=$target_dir cargo build --release --locked --bin ringdl
fi
bin=$target_dir/release/ringdl
[ -x "$bin" ] || { echo "build-deb: $bin missing (run without --no-build)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ringdl-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/ringdl"

# 2. The docs the package ships are the committed ones; they must be what this binary generates.
for t in man:man/ringdl.1 bash:completions/ringdl.bash zsh:completions/_ringdl fish:completions/ringdl.fish; do
  if ! "$bin" --generate="${t%%:*}" | cmp -s - "${t#*:}"; then
    echo "build-deb: ${t#*:} is stale: it differs from 'ringdl --generate=${t%%:*}'" >&2
    echo "           (RINGDL_REGENERATE=1 cargo test --test tests generated::committed rewrites it)" >&2
    exit 1
  fi
done

install -m 0755 "$bin" "$root/usr/bin/ringdl"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/ringdl"
if strings "$root/usr/bin/ringdl" | grep -qF -e "$src/" -e "$target_dir/" -e "$cargo_home/"; then
  echo "build-deb: warning: the binary still contains build paths (built with --no-build?)" >&2
fi
gzip -9n -c man/ringdl.1 >"$root/usr/share/man/man1/ringdl.1.gz"
install -m 0644 completions/ringdl.bash "$root/usr/share/bash-completion/completions/ringdl"
# bash-completion looks up completions/aria2c, then aria2c.bash: aria2's own file wins when it is
# installed; otherwise `alias aria2c=ringdl` gets ringdl's completion (the file guards for this).
ln -s ringdl "$root/usr/share/bash-completion/completions/aria2c.bash"
install -m 0644 completions/_ringdl "$root/usr/share/zsh/vendor-completions/_ringdl"
install -m 0644 completions/ringdl.fish "$root/usr/share/fish/vendor_completions.d/ringdl.fish"

# 3. copyright: ringdl's licence and those of the crates linked into the release binary.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo metadata --format-version 1 --locked --filter-platform "$host" >"$work/metadata.json"
cargo tree --locked -e normal,no-proc-macro --target "$host" --prefix none -f '{p}' \
  | sed 's/ (.*//' | sort -u >"$work/linked.txt"
python3 "$here/gen-copyright.py" "$work/metadata.json" "$work/linked.txt" "$here/debian/licenses" \
  >"$root/usr/share/doc/ringdl/copyright"
chmod 0644 "$root/usr/share/doc/ringdl/copyright"

gzip -9n -c CHANGELOG.md >"$root/usr/share/doc/ringdl/changelog.gz"
date_rfc2822=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s/@VERSION@/$version/g" -e "s/@UPSTREAM_VERSION@/$upstream/g" \
    -e "s/@MAINTAINER@/$maintainer/g" -e "s/@DATE@/$date_rfc2822/g" \
    "$here/debian/changelog.in" | gzip -9n >"$root/usr/share/doc/ringdl/changelog.Debian.gz"

# 4. Depends from the binary's shared libraries (dpkg-shlibdeps wants a debian/control around it).
mkdir -p "$work/shlibs/debian"
printf 'Source: ringdl\n\nPackage: ringdl\nArchitecture: any\n' >"$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$root/usr/bin/ringdl" 2>"$work/shlibdeps.err" \
  | sed -n 's/^shlibs:Depends=//p') || true
if [ -z "$depends" ]; then
  cat "$work/shlibdeps.err" >&2
  echo "build-deb: dpkg-shlibdeps gave no Depends" >&2
  exit 1
fi

installed_size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@MAINTAINER@/$maintainer/" \
    -e "s/@INSTALLED_SIZE@/$installed_size/" -e "s/@DEPENDS@/$depends/" \
    "$here/debian/control.in" >"$root/DEBIAN/control"
(cd "$root" && find usr -type f | sort | xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

find "$root" -type d -exec chmod 0755 {} +
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

deb=$out/ringdl_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "build-deb: $deb"
