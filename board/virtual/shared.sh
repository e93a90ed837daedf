# shellcheck shell=bash disable=SC2154,SC2034  # (board/virtual/run sources it: the variables are its own)
# A virtual board shared by the commands of one test run (sourced by
# board/virtual/run when OBSCURA_BOARD_SHARED names a folder and the command
# needs nothing a plain board lacks: no systemd, disk, USB stick, missing
# driver or other module parameter).
#
# The first such command boots the board in the background (guest-serve
# inside); each command is then handed to it as a job and run as on a board of
# its own: same environment, folder and bound, its own output and exit code,
# the slow mode's quota from its start to its end. A board that a command
# changed, that hung or that stopped is replaced by a fresh one for the next.
# One command at a time (a lock). `board/virtual/run --stop-shared` powers the
# boards off; one left idle powers itself off after ten minutes.

shared_root=$OBSCURA_BOARD_SHARED
shared_dir="$shared_root/$board_suite-$board_arch"

# True while the board in $shared_dir is up and takes commands.
shared_alive() {
    local pid
    pid=$(cat "$shared_dir/pid" 2>/dev/null) || return 1
    kill -0 "$pid" 2>/dev/null && [ ! -e "$shared_dir/run/retiring" ] && [ ! -e "$shared_dir/run/stop" ] \
        && [ "$(cat "$shared_dir/binary" 2>/dev/null)" = "$binary" ]
}

# Powers the board in $1 off: asks, waits up to 30 s, then kills qemu (and
# the timeout around it), found by its console file, which names the folder.
shared_stop() { # board folder
    local dir=$1 console=$1/run/console.log
    [ ! -d "$dir/run" ] || touch "$dir/run/stop"
    for _ in $(seq 300); do pgrep -f "file:$console" > /dev/null || break; sleep 0.1; done
    pkill -KILL -f "file:$console" 2>/dev/null || true
    for _ in $(seq 50); do pgrep -f "file:$console" > /dev/null || break; sleep 0.1; done
    [ ! -f "$dir/cgroup" ] || rmdir "$(cat "$dir/cgroup" 2>/dev/null)" 2>/dev/null || true
    rm -rf "$dir"
}

# Boots the shared board in the background and waits until it serves; a
# board that does not serve within $shared_boot_bound s is powered off and
# booted afresh, once. (A boot takes about 20 s here, a minute or two on a
# loaded machine; once in CI the guest's kernel stalled before init, with
# soft lockups reported from 27 s on, and a waiting command would have
# waited for the board's four-hour limit.)
shared_boot_bound=300
shared_start() {
    local attempt rc
    for attempt in 1 2; do
        rc=0
        shared_boot || rc=$?
        [ $rc = 2 ] || return $rc
        echo "run: the shared board did not serve within $shared_boot_bound s (boot $attempt of 2); last console lines:" >&2
        { tail -n 20 "$shared_dir/run/console.log"; echo; } >&2 || true
        shared_stop "$shared_dir"
        mkdir -p "$shared_dir"
    done
    return 1
}

# shared_start's one boot: 0 serving, 1 qemu ended, 2 not serving in time.
shared_boot() {
    local run=$shared_dir/run group="" deadline=$((SECONDS + shared_boot_bound))
    mkdir -p "$run/spec" "$run/jobs"
    write_env "$run" 0
    echo "export OBSCURA_BOARD_SERVE=1" >> "$run/spec/env"
    echo "$binary" > "$shared_dir/binary"
    slow_group="" slow_limit="" slow_unlimit=""
    if make_slow_group "obscura-board-shared-$$"; then
        group=$slow_group
        echo "$group" > "$shared_dir/cgroup"
        printf '%s\n%s\n' "$slow_limit" "$slow_unlimit" > "$shared_dir/quota"
    fi
    qemu_command "$run"
    # Detached from this command's output and lock; bounded by its own idle
    # limit in the guest, and by four hours here.
    # (Every descriptor beyond the three closed: one left open, such as the
    # lock or a test runner's pipe or socket, would keep its holder waiting.)
    (
        [ -z "$group" ] || echo $BASHPID > "$group/cgroup.procs"
        for fd in /proc/"$BASHPID"/fd/*; do
            fd=${fd##*/}
            [ "$fd" -le 2 ] || eval "exec $fd>&-"
        done
        exec setsid timeout --signal=KILL 14400 "${qemu_cmd[@]}"
    ) < /dev/null > "$run/qemu.log" 2>&1 &
    echo $! > "$shared_dir/pid"
    local pid=$!
    while [ ! -e "$run/serving" ]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "run: the shared board did not start; last console lines:" >&2
            tail -n 40 "$run/console.log" >&2 || true
            rm -rf "$shared_dir"
            return 1
        fi
        [ $SECONDS -lt $deadline ] || return 2
        sleep 0.1
    done
}

# Hands "$@" to the shared board: prints its output, returns its exit code
# (200: the board went down before it started the command). shared_booted
# says whether it booted the board for it.
shared_booted=0
shared_submit() {
    mkdir -p "$shared_dir"
    exec 9> "$shared_root/lock.$board_suite-$board_arch"
    flock 9
    if ! shared_alive; then
        shared_stop "$shared_dir"
        mkdir -p "$shared_dir"
        shared_booted=1
        shared_start || return 125
    fi
    local run=$shared_dir/run pid n job
    pid=$(cat "$shared_dir/pid")
    n=$(( $(cat "$shared_dir/next" 2>/dev/null || echo 0) + 1 ))
    echo "$n" > "$shared_dir/next"
    job=$run/jobs/$n
    mkdir -p "$job.new"
    {
        printf 'export OBSCURA_BOARD_TIMEOUT=%q\n' "$timeout"
        printf 'export OBSCURA_BOARD_CWD=%q\n' "$cwd"
        printf 'export OBSCURA_BOARD_SLOW=%q\n' "$slow"
        printf 'export OBSCURA_WAIT_FACTOR=%q\n' "$wait_factor"
        for v in LANG CI LIBCAMERA_LOG_LEVELS; do
            [ -z "${!v:-}" ] || printf 'export %s=%q\n' "$v" "${!v}"
        done
    } > "$job.new/env"
    printf '%q ' "$@" > "$job.new/command"
    echo >> "$job.new/command"
    mv "$job.new" "$job"
    shared_wait "$pid" "$job"
}

# Runs "$@" on the shared board, on a fresh one if the board went down
# before it started the command (a stop or a retirement it had not yet said).
shared_run() {
    local rc=0
    shared_submit "$@" || rc=$?
    if [ $rc = 200 ]; then
        rc=0; shared_submit "$@" || rc=$?
    fi
    return $rc
}

# Waits for job $2 on the board whose qemu is $1 (the slow quota applied from
# its start to its end), then reports it as a plain board would.
shared_wait() { # qemu pid, job folder
    local pid=$1 job=$2 limited=0 deadline=$((SECONDS + timeout + 60)) quota=() rc
    if [ "$slow" = 1 ] && [ -f "$shared_dir/quota" ]; then mapfile -t quota < "$shared_dir/quota"; fi
    if [ "$slow" = 1 ] && [ ${#quota[@]} = 0 ]; then
        echo "run: --slow needs a CPU cgroup it may write (/sys/fs/cgroup/cpu or cgroup v2 with the cpu controller); run as root" >&2
        return 125
    fi
    while [ ! -f "$job/rc" ] && kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
        if [ "$slow" = 1 ] && [ $limited = 0 ] && [ -e "$job/started" ]; then sh -c "${quota[0]}"; limited=1; fi
        sleep 0.1
    done
    [ $limited = 0 ] || sh -c "${quota[1]}"
    [ -f "$job/stderr" ] && cat "$job/stderr" >&2
    [ -f "$job/stdout" ] && cat "$job/stdout"
    if [ -f "$job/rc" ]; then
        rc=$(cat "$job/rc")
        board_tally=$(cat "$job/tally" 2>/dev/null || true)
        if [ "$rc" = 124 ] && [ -f "$job/hung" ]; then
            echo "run: the command timed out after $timeout s; tasks and what they wait on:" >&2
            cat "$job/hung" >&2
        fi
        rm -rf "$job"
        return "$rc"
    fi
    if [ ! -e "$job/started" ] && ! kill -0 "$pid" 2>/dev/null; then
        shared_stop "$shared_dir"
        return 200
    fi
    if kill -0 "$pid" 2>/dev/null; then
        echo "run: the shared board did not finish the command in $((timeout + 60)) s; stopping it" >&2
    else
        echo "run: the shared board went down without a result; last console lines:" >&2
    fi
    tail -n 40 "$shared_dir/run/console.log" >&2 || true
    shared_stop "$shared_dir"
    return 125
}
