import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// A card that stops answering: the recordings' filesystem on a
/// device-mapper target swapped, mid-recording, for `delay` (every read and
/// write held 10 s by the kernel). The recorder's writes and syncs wait; the
/// service's status, its control socket and its buttons must not.
@Suite struct BlockingStorageBoardTests {
    @Test func aStorageThatBlocksHoldsUpNeitherStatusNorSocketNorButtons() throws {
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            . board/virtual/waiting.sh
            modprobe loop 2>/dev/null; modprobe dm-mod 2>/dev/null; modprobe dm-delay 2>/dev/null
            truncate -s 256M /tmp/slow.img && loop=$(losetup -f --show /tmp/slow.img) && mkfs.ext4 -q "$loop" || exit 1
            sectors=$(blockdev --getsz "$loop")
            dmsetup create obscura-slow --table "0 $sectors linear $loop 0" || exit 1
            mkdir -p /mnt/slow && mount /dev/mapper/obscura-slow /mnt/slow || exit 1
            rm -rf /tmp/svc; mkdir -p /tmp/svc
            cat > /tmp/svc/obscura.toml <<'T'
            board = "virtual"
            [recording]
            folder = "/mnt/slow/rec"
            partial_folder = "/mnt/slow/incoming"
            size = "160x120"
            segment_seconds = 0
            fragment_seconds = 0.5
            min_free_space_mb = 16
            [photo]
            folder = "/tmp/svc/photos"
            [control]
            socket = "/tmp/svc/control.sock"
            T
            o=.build/debug/obscura
            $o run --config /tmp/svc/obscura.toml > /tmp/svc/log 2>&1 &
            p=$!
            said() { grep -q "$1" /tmp/svc/log; }
            wait_for 120 "the service to be ready" said ready
            now() { date +%s%N; }
            # Milliseconds for `obscura status`, `obscura ctl flash …` and a
            # flash-button press to show on the flash LED.
            measure() {
                a=$(now); $o status --socket /tmp/svc/control.sock > /dev/null || echo "status-failed"; b=$(now)
                echo "$1 status-ms=$(( (b - a) / 1000000 ))"
                a=$(now); $o ctl --socket /tmp/svc/control.sock flash on > /dev/null || echo "ctl-failed"; b=$(now)
                echo "$1 ctl-ms=$(( (b - a) / 1000000 ))"
                before=$(gpio-sim get flash-led)
                a=$(now); gpio-sim press flash-button
                n=0; while [ "$(gpio-sim get flash-led)" = "$before" ] && [ $n -lt 400 ]; do n=$((n + 1)); done
                b=$(now); gpio-sim release flash-button
                echo "$1 button-ms=$(( (b - a) / 1000000 )) led-changed=$([ $n -lt 400 ] && echo yes || echo no)"
            }
            for i in 1 2 3; do measure free; done
            gpio-sim press record-button; sleep 0.15; gpio-sim release record-button
            wait_for 120 "the recording's first packets" said "obscura: encoder "
            dmsetup suspend obscura-slow && dmsetup load obscura-slow --table "0 $sectors delay $loop 0 10000" \\
                && dmsetup resume obscura-slow && echo "card=slow"
            # The proof that the card blocks: a sync of its filesystem, beside
            # the measures, takes the delay's 10 s and more.
            ( a=$(now); sync -f /mnt/slow/rec; b=$(now); echo "probe-sync-ms=$(( (b - a) / 1000000 ))" > /tmp/svc/probe ) &
            probe=$!
            sleep 1
            for i in 1 2 3; do measure blocked; done
            kill -0 $probe 2>/dev/null && echo "probe-running-after-measures=yes" || echo "probe-running-after-measures=no"
            wait $probe; cat /tmp/svc/probe
            dmsetup suspend obscura-slow && dmsetup load obscura-slow --table "0 $sectors linear $loop 0" \\
                && dmsetup resume obscura-slow && echo "card=fast"
            gpio-sim press record-button; sleep 0.15; gpio-sim release record-button
            wait_for 180 "the recording to finish" said "recording finished"
            kill -TERM $p; wait $p
            grep -E "waited|answers again|recording finished|error" /tmp/svc/log | sed 's/^/log: /'
            for f in /mnt/slow/rec/*.mp4; do
                echo "frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 $f)"
            done
            umount /mnt/slow; dmsetup remove obscura-slow; losetup -d $loop
            """, timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("card=slow") && lines.contains("card=fast"), "\(out)\(result.stderr)")
        #expect(lines.contains("probe-running-after-measures=yes"), "the card blocked all through the measures: \(out)")
        let probe = lines.first { $0.hasPrefix("probe-sync-ms=") }.flatMap { Int($0.dropFirst(14)) } ?? 0
        #expect(probe >= 10_000, "a sync of the card's filesystem took \(probe) ms")
        #expect(!out.contains("-failed"), "\(out)")
        #expect(!out.contains("led-changed=no"), "the flash LED followed every press: \(out)")
        /// The longest of a measure, by phase.
        func longest(_ phase: String, _ what: String) -> Int {
            lines.filter { $0.hasPrefix(phase + " ") }.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix(what + "=") }.flatMap { Int($0.dropFirst(what.count + 1)) }
            }.max() ?? -1
        }
        // Each answer while the card blocks (its writes held 10 s each) comes
        // within 100 ms of the slowest the same command took with the card
        // answering, in this run: the start of a process and the shell's
        // polling are the board's, not the storage's.
        for what in ["status-ms", "ctl-ms", "button-ms"] {
            let free = longest("free", what), blocked = longest("blocked", what)
            #expect(free >= 0 && blocked >= 0, "\(what): \(out)")
            #expect(blocked <= free + 100, "\(what): \(blocked) ms with the card blocked, \(free) ms with it free")
            print("BlockingStorageBoardTests: \(what) \(free) ms free, \(blocked) ms blocked")
        }
        let frames = lines.compactMap { $0.hasPrefix("frames=") ? Int($0.dropFirst(7)) : nil }
        #expect(frames.count == 1 && frames[0] > 0, "the recording plays: \(out)")
    }
}
}
