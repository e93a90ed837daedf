# Shared by the virtual board's scripts. Sourced, not run.
# Facts about the board come from here, from board/virtual/packages and from
# board/profiles/virtual.toml.

board_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$board_dir/../.." && pwd)
cache_root="$board_dir/cache"

# The Debian release and architecture the board's root is built from: the
# host's own, so that binaries built here find the same libraries there.
board_suite=bookworm
board_arch=amd64
board_cache="$cache_root/$board_suite-$board_arch"

say() { printf 'virtual board: %s\n' "$*" >&2; }
die() { printf 'virtual board: error: %s\n' "$*" >&2; exit 2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        die "need root for: $* (run as root or install sudo)"; fi
}

# Installs the host packages named, those not installed yet.
host_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    say "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# The version of a package installed in a root folder ("" when it is not).
root_package_version() { # root, package
    dpkg-query --admindir="$1/var/lib/dpkg" -W -f='${db:Status-Status} ${Version}' "$2" 2>/dev/null \
        | awk '$1 == "installed" { print $2 }'
}

# The Swift runtime the debug builds link (their RUNPATH names it); shared
# into the board read-only at the same path. Empty without a toolchain.
swift_runtime_dir() {
    local swiftc
    swiftc=$(command -v swiftc 2>/dev/null || true)
    [ -n "$swiftc" ] || { [ -x /opt/swift/usr/bin/swiftc ] && swiftc=/opt/swift/usr/bin/swiftc; }
    [ -n "$swiftc" ] || return 0
    (cd "$(dirname "$(readlink -f "$swiftc")")/../lib/swift/linux" 2>/dev/null && pwd) || true
}

# Out-of-tree drivers the board loads, in load order.
board_drivers=(v4l2-mem2mem vimc vicodec vkms gpio-sim snd-aloop)

# Module parameters per driver.
driver_params() {
    case "$1" in
        vkms) echo "enable_overlay=1 enable_writeback=1 enable_cursor=1" ;;
        *) echo "" ;;
    esac
}
