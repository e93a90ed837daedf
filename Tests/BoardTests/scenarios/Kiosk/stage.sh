# shellcheck shell=bash
# A stage taken away mid-recording and given back (sourced by the stage
# scenarios; board/virtual/waiting.sh sourced first):
#
#   taken_away_and_back DRIVER DEVICE FRAMES LEAST [MEANWHILE]
#
# DEVICE unbound from DRIVER ("unbind uptime="), the recording's end waited
# for and the state shown ("gone-state=… active=…"), the command MEANWHILE
# two seconds later, the device bound again ("bind uptime="), udev settled
# ("settled uptime="), the journal's "recording goes on" waited for and LEAST
# frames more (FRAMES: a command that prints the count), the recording
# stopped and its end waited for, systemd's view ("active=… restarts=…").
taken_away_and_back() {
    local driver=$1 device=$2 frames=$3 least=$4 meanwhile=${5:-}
    echo "unbind uptime=$(cut -d' ' -f1 /proc/uptime)"
    echo "$device" > "/sys/bus/platform/drivers/$driver/unbind"
    ended() { journalctl -u obscura | grep -q "recording finished"; }
    wait_for 60 "the recording to finish" ended
    echo "gone-state=$(obscura status | grep '^state:') active=$(systemctl is-active obscura)"
    sleep 2  # (the stage stays away two seconds: the stimulus)
    [ -z "$meanwhile" ] || "$meanwhile"
    echo "bind uptime=$(cut -d' ' -f1 /proc/uptime)"
    echo "$device" > "/sys/bus/platform/drivers/$driver/bind"
    udevadm settle --timeout 60
    echo "settled uptime=$(cut -d' ' -f1 /proc/uptime)"
    went_on() { journalctl -u obscura | grep -q "recording goes on after"; }
    wait_for 120 "the journal to say the recording goes on" went_on
    some() { [ "$("$frames")" -ge "$least" ] 2>/dev/null; }
    wait_for 120 "$least frames recorded" some
    obscura ctl record stop > /dev/null
    two_ended() { [ "$(journalctl -u obscura | grep -c 'recording finished')" -ge 2 ]; }
    wait_for 60 "the second recording to finish" two_ended
    echo "active=$(systemctl is-active obscura) restarts=$(systemctl show -p NRestarts --value obscura)"
}
