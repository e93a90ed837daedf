# shellcheck shell=bash disable=SC2034  # (its variables are read by the scripts that source it)
# Shared by the virtual board's scripts. Sourced, not run.
# Facts about the board come from here, from board/virtual/packages and from
# board/profiles/virtual.toml.

board_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$board_dir/../.." && pwd)
cache_root="$board_dir/cache"

# A script's text without its comment lines: what a stamp is made of, so
# that a comment (a ShellCheck directive too) rebuilds nothing.
code_of() { grep -hv '^[[:space:]]*#' "$@"; }

# The Debian release and architecture the board's root is built from. The
# default is the host's own (Debian 12, amd64), so that binaries built here
# find the same libraries there; board_select picks another (setup and run
# take --suite and --arch; OBSCURA_BOARD_SUITE and OBSCURA_BOARD_ARCH too).
host_arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
host_suite=bookworm
board_select() { # suite, arch
    case "$1" in bookworm|trixie) ;; *) die "unknown suite $1; allowed: bookworm (Debian 12), trixie (Debian 13)" ;; esac
    case "$2" in amd64|arm64) ;; *) die "unknown architecture $2; allowed: amd64, arm64" ;; esac
    board_suite=$1 board_arch=$2
    board_cache="$cache_root/$board_suite-$board_arch"
    # The package list: board/virtual/packages for Debian 12, packages-<suite> for others.
    board_packages="$board_dir/packages"
    [ "$board_suite" = bookworm ] || board_packages="$board_dir/packages-$board_suite"
    # The board's binaries are the host's own build only on the host's suite
    # and architecture; elsewhere they come from Tests/check-debian-swift.
    board_native=0
    [ "$board_suite" = "$host_suite" ] && [ "$board_arch" = "$host_arch" ] && board_native=1
    case "$board_arch" in
        amd64) board_qemu=qemu-system-x86_64 board_console=ttyS0 ;;
        arm64) board_qemu=qemu-system-aarch64 board_console=ttyAMA0 ;;
    esac
    export OBSCURA_BOARD_SUITE=$board_suite OBSCURA_BOARD_ARCH=$board_arch
}

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

# The drivers the board loads, in load order: built out of tree where the
# kernel lacks them (setup), v4l2-mem2mem and snd-aloop taken from the kernel
# where it has them.
board_drivers=(v4l2-mem2mem vimc vicodec vkms gpio-sim snd-aloop)

# Module parameters per driver.
driver_params() {
    case "$1" in
        vkms) echo "enable_overlay=1 enable_writeback=1 enable_cursor=1" ;;
        *) echo "" ;;
    esac
}

board_select "${OBSCURA_BOARD_SUITE:-$host_suite}" "${OBSCURA_BOARD_ARCH:-$host_arch}"
