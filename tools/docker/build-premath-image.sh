#!/usr/bin/env bash
# Build an image with this checkout's premath on PATH, for `bench run --sandbox-backend docker`
# (the harness calls `premath bench tool` from inside its container).
#
#   tools/docker/build-premath-image.sh [TAG=premath-runtime:local]
#
# Wheels of premath and its dependencies are built here (pip, from the package index or its
# cache) and copied in; the image build itself needs no network. Needs `mise run docker-setup`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
tag="${1:-premath-runtime:local}"
base="${PREMATH_BASE_IMAGE:-premath-base:bookworm}"
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
cp "$repo/tools/docker/premath-image/Dockerfile" "$context/"
python3 -m pip wheel --quiet --wheel-dir "$context/wheels" "$repo"
docker build --quiet --build-arg "BASE=$base" -t "$tag" "$context" >/dev/null 2>"$context/build.log" \
    || { cat "$context/build.log" >&2; exit 1; }
echo "premath image $tag ready (base $base)"
