#!/usr/bin/env bash
# Bring up a local Docker engine and premath's offline base image, for tests and developers.
#
# No image registry is reachable here, so the base image is built from Debian's own packages
# (debootstrap from the mirror apt already uses, then `docker import`). Idempotent: an engine
# that already answers is used as it is, and an image already present is not rebuilt.
#
#   tools/docker/setup.sh          start (or reuse) the engine, build (or reuse) the image
#   tools/docker/setup.sh --stop   stop the engine this script started (pid file), if any
#
# Environment: PREMATH_DOCKER_STATE (default .premath-docker/ in the repo: pid file, log),
# PREMATH_BASE_IMAGE (default premath-base:bookworm).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
state="${PREMATH_DOCKER_STATE:-$repo/.premath-docker}"
image="${PREMATH_BASE_IMAGE:-premath-base:bookworm}"
packages="python3,python3-pip,python3-venv,ca-certificates"
# Bump when the recipe changes: an image built by an older recipe is rebuilt.
recipe="2:$packages"
pidfile="$state/dockerd.pid"
mkdir -p "$state"

engine_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if [[ "${1:-}" == "--stop" ]]; then
    if [[ -f "$pidfile" ]]; then
        pid="$(cat "$pidfile")"
        if kill "$pid" 2>/dev/null; then
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
        rm -f "$pidfile"
        echo "docker-setup: stopped dockerd (pid $pid)"
    fi
    exit 0
fi

need_packages=()
command -v dockerd >/dev/null 2>&1 || need_packages+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_packages+=(debootstrap)
if ((${#need_packages[@]})); then
    if [[ "$(id -u)" != 0 ]]; then
        echo "docker-setup: install ${need_packages[*]} first (needs root: apt-get install ${need_packages[*]})" >&2
        exit 1
    fi
    echo "docker-setup: installing ${need_packages[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

# Harbor's docker environment drives `docker compose` (v2) and builds with buildx. Bookworm ships
# neither, so the CLI plugins come from Debian trixie's packages (static binaries needing only
# libc6 >= 2.34), fetched through a private apt list that leaves this machine's sources alone.
if ! docker compose version >/dev/null 2>&1 || ! docker buildx version >/dev/null 2>&1; then
    echo "docker-setup: installing the docker compose and buildx plugins (Debian trixie packages)"
    apt_dir="$(mktemp -d)"
    mkdir -p "$apt_dir/lists/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
        >"$apt_dir/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt_dir/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
        -o APT::Sandbox::User=root)
    apt-get "${apt_opts[@]}" update -qq
    (cd "$apt_dir" && apt-get "${apt_opts[@]}" download -qq docker-compose docker-buildx)
    dpkg -i "$apt_dir"/docker-compose_*.deb "$apt_dir"/docker-buildx_*.deb >/dev/null
    rm -rf "$apt_dir"
fi

if ! engine_answers; then
    echo "docker-setup: starting dockerd (log: $state/dockerd.log)"
    nohup dockerd >"$state/dockerd.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    for _ in $(seq 1 300); do
        engine_answers && break
        if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
            echo "docker-setup: dockerd exited; its log:" >&2
            tail -20 "$state/dockerd.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    engine_answers || { echo "docker-setup: dockerd did not answer within 30 s" >&2; exit 1; }
fi

built="$(docker image inspect --format '{{index .Config.Labels "premath.base.recipe"}}' "$image" 2>/dev/null || true)"
if [[ "$built" != "$recipe" ]]; then
    mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)"
    mirror="${mirror:-http://deb.debian.org/debian}"
    rootfs="$(mktemp -d)"
    trap 'rm -rf "$rootfs"' EXIT
    echo "docker-setup: building $image with debootstrap from $mirror (about a minute)"
    debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$mirror" >"$state/debootstrap.log" 2>&1 \
        || { echo "docker-setup: debootstrap failed; see $state/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
    tar -C "$rootfs" -c . | docker import --change 'CMD ["/bin/bash"]' \
        --change "LABEL premath.base.recipe=\"$recipe\"" - "$image" >/dev/null
fi
echo "docker-setup: engine $(docker version --format '{{.Server.Version}}'), image $image ready"
