#!/bin/sh
# The board's side of BlockingStorageBoardTests.aStorageThatBlocksHoldsUpNeitherStatusNorSocketNorButtons: it prints what the test reads.
. Tests/BoardTests/scenarios/BlockingStorage/serviceOnCard.sh
now() { date +%s%N; }
# gpio-sim's sysfs node for a line (as board/virtual/gpio-sim finds it).
node() {
    g=/sys/kernel/config/gpio-sim/obscura
    for d in "$g"/bank0/line*; do [ "$(cat "$d/name")" = "$1" ] && off=${d##*line}; done
    echo "/sys/devices/platform/$(cat "$g/dev_name")/$(cat "$g/bank0/chip_name")/sim_gpio$off"
}
# Milliseconds for the control socket's `status` and `flash on`,
# and for a flash-button press to show on the flash LED (on →
# off), five times each; measured in one process (perl), so the
# start of a program is not counted.
cat > /tmp/svc/measure.pl <<'P'
use strict; use IO::Socket::UNIX; use Time::HiRes qw(time sleep);
my ($phase, $sock, $button, $led) = @ARGV;
sub ask { my $t = time; my $s = IO::Socket::UNIX->new(Peer => $sock) or return -1;
          print $s "$_[0]\n"; my $r = <$s>; close $s; return defined $r ? int((time - $t) * 1000) : -1; }
sub put { open(my $f, '>', $_[0]) or die "$_[0]: $!"; print $f $_[1]; close $f; }
sub get { open(my $f, '<', $_[0]) or die "$_[0]: $!"; my $v = <$f>; close $f; chomp $v; return $v; }
sub until_led { my ($want, $t) = (@_, time); while (time - $t < 10) { return 1 if get("$led/value") eq $want } return 0; }
for my $i (1 .. 5) {
    printf "%s status-ms=%d\n", $phase, ask("status");
    printf "%s ctl-ms=%d\n", $phase, ask("flash on");
    until_led("1") or print "$phase led-never-on\n";
    # A press acts as the button goes down (pull-up: gpio-sim's
    # lines are active-high); held 0.15 s, then let go for 0.15 s,
    # well past the debounce, as a hand does, before the next.
    my $t = time; put("$button/pull", "pull-up");
    my $changed = until_led("0", $t);
    printf "%s button-ms=%d led-changed=%s\n", $phase, int((time - $t) * 1000), $changed ? "yes" : "no";
    sleep 0.15; put("$button/pull", "pull-down"); sleep 0.15;
}
P
measure() { perl /tmp/svc/measure.pl "$1" /tmp/svc/control.sock "$(node flash-button)" "$(node flash-led)"; }
measure free
gpio-sim press record-button; sleep 0.15; gpio-sim release record-button  # (a press holds the button 0.15 s: the stimulus)
wait_for 120 "the recording's first packets" said "obscura: encoder "
dm-card delay obscura-card 10000 && echo "card=slow"
# The proof that the card blocks: a sync of its filesystem, beside
# the measures, takes the delay's 10 s and more.
( a=$(now); sync -f /mnt/card/rec; b=$(now); echo "probe-sync-ms=$(( (b - a) / 1000000 ))" > /tmp/svc/probe ) &
probe=$!
sleep 1  # (the probe's sync a second under way, blocked, before the measures: nothing says it has begun)
measure blocked
kill -0 $probe 2>/dev/null && echo "probe-running-after-measures=yes" || echo "probe-running-after-measures=no"
wait $probe; cat /tmp/svc/probe
dm-card linear obscura-card && echo "card=fast"
gpio-sim press record-button; sleep 0.15; gpio-sim release record-button  # (a press holds the button 0.15 s: the stimulus)
wait_for 180 "the recording to finish" said "recording finished"
kill -TERM $p; wait $p
grep -E "waited|answers again|recording finished|error" /tmp/svc/log | sed 's/^/log: /'
for f in /mnt/card/rec/*.mp4; do
    echo "frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done
