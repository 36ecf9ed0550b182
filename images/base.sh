#!/usr/bin/env bash
# Builds the Debian base image every Tessera image starts from, without any registry:
# `debootstrap --variant=minbase` of Debian bookworm from the machine's own Debian mirror,
# slimmed (no docs, man pages, locales, apt lists), imported into podman as
# localhost/debian:bookworm (override with BASE_TAG).
#
# Cached under $HOME/.cache/tessera/images/ as a root file system tarball named by a key:
# the sha256 of this script and its inputs (suite, variant, mirrors). Re-running is a no-op
# while podman holds an image with that key (label io.tessera.base.key), re-imports the
# cached tarball when podman lost it, and only runs debootstrap (minutes) when an input
# changed. The mirror is a moving target: a cached base keeps the packages of the day it was
# built until this script or a mirror changes (the Dockerfile's apt-get then takes the newest).
#
# Needs root (debootstrap chroots), debootstrap and podman. Usage: images/base.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}

suite=bookworm
variant=minbase
tag=${BASE_TAG:-localhost/debian:$suite}
cache=${TESSERA_CACHE:-$HOME/.cache/tessera}/images

# The mirrors this machine's apt uses (deb822 or one-line sources), unless given.
sources() { cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true; }
first_uri() { sources | grep -Eo '(URIs:[[:space:]]*|^deb[[:space:]]+)https?://[^[:space:]]+' | grep -Eo 'https?://[^[:space:]]+' | grep "$1" | grep -v "$2" | head -n1; }
mirror=${DEBIAN_MIRROR:-$(first_uri debian security)}
security_mirror=${DEBIAN_SECURITY_MIRROR:-$(first_uri debian-security '^$')}
mirror=${mirror:-http://deb.debian.org/debian}
security_mirror=${security_mirror:-http://deb.debian.org/debian-security}

key=$( { sha256sum "$0" | cut -d' ' -f1; echo "$suite $variant $mirror $security_mirror"; } | sha256sum | cut -c1-16)
tarball=$cache/debian-$suite-$variant-$key.tar

if [[ "$(podman image inspect --format '{{index .Labels "io.tessera.base.key"}}' "$tag" 2>/dev/null || true)" == "$key" ]]; then
  echo "base: $tag is up to date (key $key)"
  exit 0
fi

if [[ ! -f $tarball ]]; then
  command -v debootstrap >/dev/null || { echo "base: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
  mkdir -p "$cache"
  rootfs=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$rootfs" "$tarball.partial"' EXIT
  echo "base: debootstrap --variant=$variant $suite from $mirror (a few minutes)"
  debootstrap --variant="$variant" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -n 30 "$rootfs.log" >&2; echo "base: debootstrap failed (log above)" >&2; exit 1; }
  rm -f "$rootfs.log"

  # Package sources inside the image: the same mirrors, with updates and security.
  cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
SOURCES
  # Like Debian's slim images: later `apt-get install`s in image builds skip documentation,
  # man pages and translations (copyright files stay), and apt keeps no downloaded packages.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/tessera-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
DPKG
  cat >"$rootfs/etc/apt/apt.conf.d/tessera-slim" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{man,info,locale,lintian}/* "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log \
    "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old
  : >"$rootfs/etc/machine-id"

  tar -C "$rootfs" --numeric-owner --xattrs -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
  rm -rf "$rootfs"
  trap - EXIT
  # Older keys' tarballs are stale now.
  find "$cache" -maxdepth 1 -name "debian-$suite-$variant-*.tar" -not -name "$(basename "$tarball")" -delete
fi

echo "base: importing $tarball as $tag"
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  --change "LABEL io.tessera.base.key=$key" \
  --change "LABEL org.opencontainers.image.description=debootstrap --variant=$variant $suite (images/base.sh)" \
  "$tarball" "$tag" >/dev/null
echo "base: $tag ready (key $key)"
