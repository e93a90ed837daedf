# Shared by the virtual board's scripts. Sourced, not run.
# Facts about the board come from here and from board/profiles/virtual.toml.

board_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$board_dir/../.." && pwd)
cache_root="$board_dir/cache"

say() { printf 'virtual board: %s\n' "$*" >&2; }
die() { printf 'virtual board: error: %s\n' "$*" >&2; exit 2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        die "need root for: $* (run as root or install sudo)"; fi
}

# The kernel the board boots: Debian's linux-image-amd64 meta-package names it.
board_kernel_version() {
    local dep
    dep=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null) || return 1
    dep=${dep%% *}
    dep=${dep#linux-image-}
    [ -n "$dep" ] && printf '%s\n' "$dep"
}

# Out-of-tree drivers the board loads, in load order.
board_drivers=(v4l2-mem2mem vimc vicodec vkms gpio-sim snd-aloop)

# Module parameters per driver.
driver_params() {
    case "$1" in
        vkms) echo "enable_overlay=1 enable_writeback=1 enable_cursor=1" ;;
        vimc) echo "" ;;
        *) echo "" ;;
    esac
}
