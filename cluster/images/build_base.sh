#!/usr/bin/env bash
# Build Silva's base experiment image without any registry:
#   debootstrap a minimal Debian root with python3, pip-install the experiment packages into
#   it, then `docker import` the tree as an image.
#
#   usage: build_base.sh [--force] TAG [PIP_PACKAGE ...]
#   e.g.   build_base.sh silva-base:py311 numpy scipy scikit-learn matplotlib pandas
#
# Skips the build when TAG exists with the same package list (image label silva.packages).
# The debootstrapped root and pip's download cache live under ${SILVA_CACHE:-~/.cache/silva},
# so a rebuild after a package change takes seconds for the OS part. Needs root, debootstrap,
# bubblewrap (used instead of chroot so no mount can leak) and a Docker-compatible CLI.
#
# Every image shares one OS layer, so a machine debootstraps once: it carries the node image's
# sandbox tools (bubblewrap, procps; under 2 MB) for build_node.sh too. SILVA_DEBIAN_INCLUDE adds
# Debian packages to it (its own cached tarball per list), SILVA_IMAGE_USER sets the image's user.
set -euo pipefail

force=0
if [[ "${1:-}" == "--force" ]]; then force=1; shift; fi
tag="${1:?usage: build_base.sh [--force] TAG [PIP_PACKAGE ...]}"; shift
packages=("$@")
if [[ ${#packages[@]} -eq 0 ]]; then
  packages=(numpy scipy scikit-learn matplotlib pandas)
fi
suite="${SILVA_DEBIAN_SUITE:-bookworm}"
mirror="${SILVA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
docker="${DOCKER:-docker}"
cache="${SILVA_CACHE:-$HOME/.cache/silva}/images"
wanted="${packages[*]}"
os_packages="bubblewrap,util-linux,procps${SILVA_DEBIAN_INCLUDE:+,$SILVA_DEBIAN_INCLUDE}"
include="python3,python3-pip,ca-certificates,$os_packages"
image_user="${SILVA_IMAGE_USER:-65534:65534}"

# One build at a time per machine: two builders of the same tag (parallel test workers, two runs)
# would debootstrap into the same cached root; the second waits, then finds the image built.
mkdir -p "$cache"
exec 9>"$cache/.build.lock"
flock 9

if [[ $force -eq 0 ]] && current=$($docker image inspect "$tag" \
      --format '{{ index .Config.Labels "silva.packages" }}' 2>/dev/null); then
  if [[ "$current" == "$wanted" ]]; then
    echo "image $tag already built with: $wanted"
    exit 0
  fi
  echo "image $tag has packages [$current], wanted [$wanted]: rebuilding"
fi

for tool in debootstrap bwrap tar; do
  command -v "$tool" >/dev/null || { echo "build_base.sh: $tool is missing (make system-deps)" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "build_base.sh: debootstrap needs root" >&2; exit 1; }

mkdir -p "$cache/pip"
os_tar="$cache/$suite-minbase-python3-$(echo "$os_packages" | tr , -).tar"
work=$(mktemp -d "${TMPDIR:-/tmp}/silva-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"

# 1. The OS layer: minbase + python3 + pip, cached as a tarball (the slow, stable part).
if [[ ! -s "$os_tar" ]]; then
  echo "debootstrap $suite (minbase, $include) from $mirror ..."
  debootstrap --variant=minbase --include="$include" \
    "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" --numeric-owner -cf "$os_tar.partial" .
  mv "$os_tar.partial" "$os_tar"
else
  echo "reusing cached OS layer $os_tar"
  mkdir -p "$root"
  tar -C "$root" --numeric-owner -xf "$os_tar"
fi

# 2. The Python packages, installed by the image's own pip so wheels match its python.
# bwrap instead of chroot: /dev and /proc exist for pip and nothing stays mounted afterwards.
# The host's CA bundle is used so a TLS-intercepting proxy the host trusts works here too.
echo "pip install into the image: $wanted"
host_ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
ca_args=()
if [[ -s "$host_ca" ]]; then
  # Debian's pip ignores --cert/PIP_CERT but honours REQUESTS_CA_BUNDLE.
  ca_args=(--ro-bind "$host_ca" /etc/silva-host-ca.crt --setenv REQUESTS_CA_BUNDLE /etc/silva-host-ca.crt)
fi
bwrap --bind "$root" / --dev /dev --proc /proc --tmpfs /tmp \
  --ro-bind /etc/resolv.conf /etc/resolv.conf "${ca_args[@]}" \
  --bind "$cache/pip" /var/cache/silva-pip \
  --setenv PIP_CACHE_DIR /var/cache/silva-pip --unsetenv PIP_FIND_LINKS \
  --setenv PIP_DISABLE_PIP_VERSION_CHECK 1 --setenv PIP_ROOT_USER_ACTION ignore \
  python3 -m pip install -q --no-warn-script-location --break-system-packages "${packages[@]}"

# 3. Trim what experiments never need, add the sandbox's mount point, import.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/var/cache/silva-pip "$root"/var/log/*
mkdir -p "$root/workspace"
chmod 1777 "$root/workspace"
echo "docker import $tag ..."
tar -C "$root" --numeric-owner -c . | $docker import \
  --change "LABEL silva.packages=\"$wanted\"" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 PYTHONUNBUFFERED=1 MPLBACKEND=Agg HOME=/tmp' \
  --change 'WORKDIR /workspace' \
  --change "USER $image_user" \
  --change 'CMD ["python3"]' \
  - "$tag" >/dev/null
echo "built $tag"
