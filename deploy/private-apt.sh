# shellcheck shell=bash
# Debian's archive through apt with a private state: its own sources, lists
# and cache under one folder, nothing on this system read or changed. Sourced
# by the scripts that fetch Debian packages as files (deploy/build-camera-shims,
# Tests/check-library-versions, board/virtual/libcamera-packages,
# board/virtual/libcamera-ipa-deb).
#
#   private_apt WORK ARCH STATUS RELEASE...
#
# Writes WORK/sources.list with each release (bookworm, trixie-backports, …)
# for ARCH, sets the array apt_opts for `apt-get "${apt_opts[@]}" …`, and
# updates the lists. STATUS is the dpkg status file apt takes to be what is
# installed: /dev/null for none, or a board root's var/lib/dpkg/status so
# that apt names what installing there would bring in.

private_apt() {
    local work=$1 arch=$2 status=$3 release
    shift 3
    mkdir -p "$work"/{lists/partial,cache/archives/partial}
    for release in "$@"; do
        echo "deb [arch=$arch] http://deb.debian.org/debian $release main"
    done > "$work/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Get::List-Cleanup=0
              -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o "Dir::State::status=$status"
              -o APT::Architecture="$arch" -o APT::Architectures="$arch" -o APT::Install-Recommends=0)
    apt-get "${apt_opts[@]}" update -qq >/dev/null
}
