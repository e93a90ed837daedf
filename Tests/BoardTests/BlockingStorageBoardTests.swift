import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// A card that stops answering: the recordings' filesystem on a
/// device-mapper target swapped, mid-recording, for `delay` (every read and
/// write held 10 s by the kernel). The recorder's writes and syncs wait; the
/// service's status, its control socket and its buttons must not.
@Suite struct BlockingStorageBoardTests {
    /// The service (`obscura run`, the virtual board's profile) with its
    /// recordings on a card made by board/virtual/dm-card at /mnt/card,
    /// photos, control socket and metrics in /tmp/svc; `$o` is obscura,
    /// `$p` the service, `said PATTERN` whether its log has it. Ready when
    /// this returns.
    static let serviceOnCard = """
        export PATH=$PATH:$(pwd)/board/virtual
        . board/virtual/waiting.sh
        dm-card make obscura-card /mnt/card || exit 1
        rm -rf /tmp/svc; mkdir -p /tmp/svc
        \(BoardService.started(board: "virtual", recording: """
            folder = "/mnt/card/rec"
            partial_folder = "/mnt/card/incoming"
            size = "160x120"
            segment_seconds = 0
            fragment_seconds = 0.5
            min_free_space_mb = 16
            """))
        """

    @Test func aStorageThatBlocksHoldsUpNeitherStatusNorSocketNorButtons() throws {
        let result = try VirtualBoard.run("""
            \(Self.serviceOnCard)
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
                      print $s "$_[0]\\n"; my $r = <$s>; close $s; return defined $r ? int((time - $t) * 1000) : -1; }
            sub put { open(my $f, '>', $_[0]) or die "$_[0]: $!"; print $f $_[1]; close $f; }
            sub get { open(my $f, '<', $_[0]) or die "$_[0]: $!"; my $v = <$f>; close $f; chomp $v; return $v; }
            sub until_led { my ($want, $t) = (@_, time); while (time - $t < 10) { return 1 if get("$led/value") eq $want } return 0; }
            for my $i (1 .. 5) {
                printf "%s status-ms=%d\\n", $phase, ask("status");
                printf "%s ctl-ms=%d\\n", $phase, ask("flash on");
                until_led("1") or print "$phase led-never-on\\n";
                # A press acts as the button goes down (pull-up: gpio-sim's
                # lines are active-high); held 0.15 s, then let go for 0.15 s,
                # well past the debounce, as a hand does, before the next.
                my $t = time; put("$button/pull", "pull-up");
                my $changed = until_led("0", $t);
                printf "%s button-ms=%d led-changed=%s\\n", $phase, int((time - $t) * 1000), $changed ? "yes" : "no";
                sleep 0.15; put("$button/pull", "pull-down"); sleep 0.15;
            }
            P
            measure() { perl /tmp/svc/measure.pl "$1" /tmp/svc/control.sock "$(node flash-button)" "$(node flash-led)"; }
            measure free
            gpio-sim press record-button; sleep 0.15; gpio-sim release record-button
            wait_for 120 "the recording's first packets" said "obscura: encoder "
            dm-card delay obscura-card 10000 && echo "card=slow"
            # The proof that the card blocks: a sync of its filesystem, beside
            # the measures, takes the delay's 10 s and more.
            ( a=$(now); sync -f /mnt/card/rec; b=$(now); echo "probe-sync-ms=$(( (b - a) / 1000000 ))" > /tmp/svc/probe ) &
            probe=$!
            sleep 1
            measure blocked
            kill -0 $probe 2>/dev/null && echo "probe-running-after-measures=yes" || echo "probe-running-after-measures=no"
            wait $probe; cat /tmp/svc/probe
            dm-card linear obscura-card && echo "card=fast"
            gpio-sim press record-button; sleep 0.15; gpio-sim release record-button
            wait_for 180 "the recording to finish" said "recording finished"
            kill -TERM $p; wait $p
            grep -E "waited|answers again|recording finished|error" /tmp/svc/log | sed 's/^/log: /'
            for f in /mnt/card/rec/*.mp4; do
                echo "frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 $f)"
            done
            """, timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("card=slow") && lines.contains("card=fast"), "\(out)\(result.stderr)")
        #expect(lines.contains("probe-running-after-measures=yes"), "the card blocked all through the measures: \(out)")
        let probe = lines.first { $0.hasPrefix("probe-sync-ms=") }.flatMap { Int($0.dropFirst(14)) } ?? 0
        #expect(probe >= 10_000, "a sync of the card's filesystem took \(probe) ms")
        #expect(!out.contains("-failed"), "\(out)")
        #expect(!out.contains("led-changed=no") && !out.contains("led-never-on"), "the flash LED followed every command and press: \(out)")
        /// The longest of a measure, by phase.
        func longest(_ phase: String, _ what: String) -> Int {
            lines.filter { $0.hasPrefix(phase + " ") }.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix(what + "=") }.flatMap { Int($0.dropFirst(what.count + 1)) }
            }.max() ?? -1
        }
        // Each answer while the card blocks (its writes held 10 s each) comes
        // within 100 ms of the slowest the same question took with the card
        // answering, in this run (the board's own pace, not an assumed one).
        for what in ["status-ms", "ctl-ms", "button-ms"] {
            let free = longest("free", what), blocked = longest("blocked", what)
            #expect(free >= 0 && blocked >= 0, "\(what): \(out)")
            #expect(blocked <= free + 100, "\(what): \(blocked) ms with the card blocked, \(free) ms with it free")
            print("BlockingStorageBoardTests: \(what) \(free) ms free, \(blocked) ms blocked")
        }
        let frames = lines.compactMap { $0.hasPrefix("frames=") ? Int($0.dropFirst(7)) : nil }
        #expect(frames.count == 1 && frames[0] > 0, "the recording plays: \(out)")
    }


    /// The card's syncs fail (the target swapped for `error`) under the
    /// service: the recording ends as a storage failure, said in the
    /// journal, `obscura status` and the metrics (reason "storage"), and
    /// the service goes on.
    @Test func aStorageThatFailsItsSyncsIsAStorageFailureOfTheService() throws {
        let result = try VirtualBoard.run("""
            \(Self.serviceOnCard)
            $o ctl --socket /tmp/svc/control.sock record start
            grown() { [ "$(cat /mnt/card/incoming/*.partial 2>/dev/null | wc -c)" -gt 20000 ]; }
            wait_for 120 "the recording to have fragments on the card" grown
            dm-card error obscura-card && echo "card=dead"
            wait_for 120 "the recording to end" said "storage failed"
            counted() { grep -q 'obscura_errors_total{reason="storage"} [1-9]' /tmp/svc/obscura.prom; }
            wait_for 30 "the metrics to count it" counted
            $o status --socket /tmp/svc/control.sock | sed 's/^/status: /'
            grep -E '^obscura_errors_total|^obscura_last_error' /tmp/svc/obscura.prom | sed 's/^/metric: /'
            echo "alive=$(kill -0 $p 2>/dev/null && echo yes || echo no)"
            grep -E "storage failed|recording finished" /tmp/svc/log | sed 's/^/log: /'
            kill -TERM $p; wait $p
            """, timeout: 400)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("card=dead"), "\(out)\(result.stderr)")
        #expect(lines.contains { $0.hasPrefix("log: ") && $0.contains("storage failed: ") && $0.contains("failed") }, "the journal says it: \(out)")
        #expect(lines.contains { $0.hasPrefix("status: ") && $0.contains("storage failed") }, "status shows it: \(out)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_errors_total{reason=\"storage\"} ") && !$0.hasSuffix(" 0") }, "the metrics count it: \(out)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_last_error_timestamp_seconds{reason=\"storage\"}") }, "\(out)")
        #expect(lines.contains("alive=yes"), "the service goes on: \(out)")
        print("BlockingStorageBoardTests: \(lines.first { $0.hasPrefix("log: ") && $0.contains("storage failed") } ?? "no storage failure said")")
    }
}
}
