#!/bin/bash
# Several board scenarios on one boot (run on the board; TestSupport's
# BoardScenarios starts it):
#
#   bash Tests/BoardTests/scenarios/group.sh [--prelude SCRIPT] [--between SCRIPT] \
#       NAME SCRIPT COUNT [ARGUMENT...] [NAME SCRIPT COUNT [ARGUMENT...]]...
#
# SCRIPTs are paths under Tests/BoardTests/scenarios without ".sh". The
# prelude runs once before the first scenario, quietly; `between` (the
# state each scenario expects restored) before each one after the first.
# Each scenario runs in a bash of its own with its COUNT arguments, between
# marker lines ("=== scenario NAME ===" and "=== scenario NAME ended: CODE,
# after S s, COST ===", COST being what it cost the board:
# board/virtual/tally.sh); each marker on a line of its own, even after a
# background follower a scenario killed in the middle of a line.
here=Tests/BoardTests/scenarios
prelude="" between=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prelude) prelude=$2; shift 2 ;;
        --between) between=$2; shift 2 ;;
        *) break ;;
    esac
done
. board/virtual/tally.sh && tally_start
[ -z "$prelude" ] || bash "$here/$prelude.sh" > /dev/null 2>&1
first=1
while [ $# -ge 3 ]; do
    name=$1 script=$2 count=$3
    shift 3
    arguments=("${@:1:$count}")
    shift "$count"
    scenario_start=$SECONDS
    if [ $first = 0 ] && [ -n "$between" ]; then
        bash "$here/$between.sh" > /tmp/.between.out 2>&1
    fi
    echo; echo "=== scenario $name ==="
    # What went wrong restoring the state (a wait that gave up, a start that
    # failed) is the scenario's: its test fails saying so.
    if [ $first = 0 ] && [ -n "$between" ]; then
        grep -E '^(gave up after|gave-up journal: |between: )' /tmp/.between.out
    fi
    bash "$here/$script.sh" "${arguments[@]+"${arguments[@]}"}"
    scenario_rc=$?; tally_report
    echo; echo "=== scenario $name ended: $scenario_rc, after $((SECONDS - scenario_start)) s, $TALLY ==="
    first=0
done
