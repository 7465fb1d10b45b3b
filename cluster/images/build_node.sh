#!/usr/bin/env bash
# Build Silva's Ray node image without any registry: the image every head and worker of a
# cluster runs (cluster-launcher `docker:` section, KubeRay pod templates, the multi-node test).
#
#   usage: build_node.sh [--force] TAG [SILVA_SOURCE_DIR]
#   e.g.   SILVA_RAY_VERSION=2.60.0 build_node.sh silva-node:latest .
#
# Two steps, each skipped when its result is already there:
#   1. TAG's "-deps" sibling (silva-node-deps:latest): build_base.sh's debootstrap root (the
#      experiment image's, with bubblewrap for the local sandbox inside a node), then Ray
#      (pinned to the driver's version: Ray refuses to mix versions in one cluster) and Silva's
#      dependencies from PyPI. Slow the first time (about 300 MB of wheels), cached afterwards.
#   2. TAG: Silva itself, installed from a wheel of SILVA_SOURCE_DIR into a container of the
#      deps image and committed. Rebuilt in seconds when the source changes (label silva.source).
# Runs as root inside the image: Ray's raylet and the sandbox's uid leases need it; experiment
# code still runs as an unprivileged uid inside bubblewrap.
set -euo pipefail

force=()
if [[ "${1:-}" == "--force" ]]; then force=(--force); shift; fi
tag="${1:?usage: build_node.sh [--force] TAG [SILVA_SOURCE_DIR]}"
src="$(cd "${2:-$(dirname "$0")/../..}" && pwd)"
docker="${DOCKER:-docker}"
python="${PYTHON:-python3}"
here="$(cd "$(dirname "$0")" && pwd)"
ray_version="${SILVA_RAY_VERSION:?set SILVA_RAY_VERSION to the Ray version of your driver (python -c 'import ray; print(ray.__version__)')}"

repo="${tag%:*}"; version="latest"
[[ "$tag" == *:* ]] && version="${tag##*:}"
deps_tag="$repo-deps:$version"

# Silva's runtime dependencies, as pyproject.toml declares them, with Ray pinned; the head runs
# the driver, which writes and reviews papers, so the writeup and review extras come too.
mapfile -t packages < <("$python" - "$src/pyproject.toml" "$ray_version" <<'EOF'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project.get("optional-dependencies", {})
wanted = ("examples", "cluster", "writeup", "review")
for dep in dict.fromkeys(project["dependencies"] + [d for e in wanted for d in extras.get(e, [])]):
    if re.match(r"ray\b", dep):
        dep = f"ray[default]=={sys.argv[2]}"
    print(dep)
EOF
)

SILVA_IMAGE_USER="0:0" bash "$here/build_base.sh" "${force[@]}" "$deps_tag" "${packages[@]}"

# The source fingerprint: every file the wheel would carry (package dirs and pyproject.toml).
packages_dirs="silva engine sandbox search actors writeup review cluster"
fingerprint=$(cd "$src" && find $packages_dirs pyproject.toml \
    -type f ! -path '*__pycache__*' ! -name '*.pyc' -print0 2>/dev/null | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
deps_id=$($docker image inspect "$deps_tag" --format '{{.Id}}')
wanted="$fingerprint $deps_id"
if [[ ${#force[@]} -eq 0 ]] && current=$($docker image inspect "$tag" \
      --format '{{ index .Config.Labels "silva.source" }}' 2>/dev/null) && [[ "$current" == "$wanted" ]]; then
  echo "image $tag already built from this source"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/silva-node.XXXXXX")
cid=""
trap 'rm -rf "$work"; [[ -n "$cid" ]] && $docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
echo "building the Silva wheel from $src ..."
# From a copy: setuptools writes build/ and *.egg-info next to the sources it builds.
mkdir "$work/src" "$work/wheel"
(cd "$src" && tar -c --exclude=__pycache__ --exclude='*.pyc' $packages_dirs pyproject.toml README.md) | tar -C "$work/src" -x
"$python" -m pip wheel -q --no-deps -w "$work/wheel" "$work/src" >/dev/null
cid=$($docker create --network none -v "$work/wheel:/wheel:ro" "$deps_tag" \
  sh -c 'python3 -m pip install -q --no-deps --no-index --break-system-packages /wheel/silva-*.whl')
$docker start -a "$cid"
$docker commit \
  --change "LABEL silva.source=\"$wanted\"" \
  --change 'WORKDIR /' \
  --change 'CMD ["bash"]' \
  "$cid" "$tag" >/dev/null
echo "built $tag"
