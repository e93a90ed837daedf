import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Honest time on a board that boots without network time: the service is
/// started with the clock in 1970, records, and the clock is then set (as
/// systemd-timesyncd does: a step, then its `synchronized` flag).
@Suite struct TimeBoardTests {
    @Test func aBoardBootedIn1970NamesNothingWithAWrongTimeAndRenamesOnceTheClockIsSet() throws {
        let result = try VirtualBoard.run("""
            rec=/var/lib/obscura/recordings
            frames() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null; }
            uptime_s() { cut -d' ' -f1 /proc/uptime; }
            systemctl stop obscura
            real=$(date +%s.%N); real_up=$(uptime_s)
            date -s @86400 > /dev/null          # 1970-01-02
            rm -f /run/systemd/timesync/synchronized
            systemctl start obscura
            obscura status | grep '^clock:' | sed 's/^/before: /'
            start_up=$(uptime_s)
            obscura ctl record start > /dev/null
            . board/virtual/waiting.sh
            five_frames() {
                p=$(ls /var/lib/obscura/incoming/*.partial 2>/dev/null | head -n 1)
                [ -n "$p" ] && [ "$(frames "$p")" -ge 5 ] 2>/dev/null
            }
            wait_for 180 "5 frames in the recording's file" five_frames
            echo "partial=$(basename "$p")"
            # The clock is set: a step of 56 years in the middle of the recording.
            now=$(echo "$real + $(uptime_s) - $real_up" | bc -l 2>/dev/null || awk "BEGIN { printf \\"%.3f\\", $real + $(uptime_s) - $real_up }")
            date -s "@$now" > /dev/null
            mkdir -p /run/systemd/timesync && touch /run/systemd/timesync/synchronized
            synchronised() { obscura status | grep -q '^clock: synchronised'; }; wait_for 60 "the service to see the clock synchronised" synchronised
            obscura status | grep '^clock:' | sed 's/^/after: /'
            # Where the clock now stands against the uptime (the uptime read
            # just before and just after the clock, the middle taken): the
            # step lands late by however long `date -s` took to start, which
            # a slowed board makes seconds; the service maps times with this.
            read -r u1 _ < /proc/uptime; wall=$(date +%s.%N); read -r u2 _ < /proc/uptime
            offset=$(awk "BEGIN { printf \\"%.3f\\", $wall - ($u1 + $u2) / 2 }")
            echo "read-within=$(awk "BEGIN { printf \\"%.3f\\", $u2 - $u1 }")"
            echo "offset=$offset intended=$(awk "BEGIN { printf \\"%.3f\\", $real - $real_up }")"
            sleep 2
            stop_up=$(uptime_s)
            obscura ctl record stop > /dev/null
            renamed() { ! ls $rec | grep -q '^obscura-boot-' && ls $rec | grep -q '\\.sha256$'; }
            wait_for 60 "the boot-named file renamed and finished" renamed
            # Where the boot name's second (when the service began the
            # recording) falls on the right clock.
            boot_s=$(echo "$p" | sed -E 's/.*obscura-boot-[0-9a-f]+-0*([0-9]+)-.*/\\1/')
            for d in -1 0 1; do
                echo "expected=$(date -u -d @$(awk "BEGIN { printf \\"%d\\", $offset + $boot_s + $d }") +obscura-%Y%m%d-%H%M%S)"
            done
            echo "started=$start_up stopped=$stop_up"
            for f in $rec/*.mp4; do
                echo "file=$(basename $f) frames=$(frames $f)"
                echo "pts=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 $f | sort -n | tr '\\n' ' ')"
                echo "created=$(ffprobe -v error -show_entries format_tags=creation_time -of csv=p=0 $f)"
            done
            (cd $rec && sha256sum -c *.sha256 | sed 's/^/sum: /')
            # A recording made once the clock is known: a wall-clock name and creation time.
            echo "asked=$(date -u +%s.%N)"
            obscura ctl record start > /dev/null
            sleep 3
            obscura ctl record stop > /dev/null
            echo "now=$(date -u +%s.%N)"
            for f in $rec/*.mp4; do echo "second=$(basename $f) created=$(ffprobe -v error -show_entries format_tags=creation_time -of csv=p=0 $f)"; done
            journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | sed 's/^/journal: /'
            # The same lines with their CLOCK_MONOTONIC seconds ("[  99.867006] host obscura[439]: …").
            journalctl -u obscura --no-pager -o short-monotonic | grep -v "thread priority" | sed 's/^/monotonic: /'
            """, timeout: 300, options: ["--systemd"])
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func values(_ prefix: String) -> [String] { lines.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(lines.contains("before: clock: not synchronised (adjtimex)"), "\(out)\(result.stderr)")
        #expect(lines.contains("after: clock: synchronised (systemd-timesyncd)"))
        // While the clock was not known: a boot-relative name, never 1970.
        let partial = values("partial=").first ?? ""
        #expect(partial.hasPrefix("obscura-boot-") && partial.hasSuffix(".mp4.partial"), "\(out)")
        #expect(!out.contains("obscura-1970"))
        // Renamed, once the clock was known, to the wall-clock time of its start.
        let files = values("file=")
        #expect(files.count == 1, "\(out)")
        let name = String(files.first?.split(separator: " ").first ?? "")
        let expected = values("expected=")
        // (the recording's first segment: "-0001" after the stem)
        #expect(expected.contains { name == $0 + "-0001.mp4" }, "\(name) not one of \(expected) (\(values("offset=")))")
        #expect(out.contains("journal: obscura: renamed /var/lib/obscura/recordings/\(partial.dropLast(".partial".count)) to \(name): the clock is now known"))
        #expect(values("sum: ").allSatisfy { $0.hasSuffix(": OK") } && values("sum: ").count == 1, "\(values("sum: "))")
        // The step moved no timestamp inside the file: it spans no more than
        // the service's own journal saw between beginning the recording and
        // finishing it (a step of 56 years would show), and reaches to where
        // the stop was asked, less one of its own frame gaps and the
        // recorder's backlog. The times are the service's and the script's
        // in the same run: a starved board answers late, not wrongly.
        let pts = (values("pts=").first ?? "").split(separator: " ").compactMap { Double($0) }
        let gaps = zip(pts.dropFirst(), pts).map { $0 - $1 }
        let stem = partial.components(separatedBy: "-0001.mp4").first ?? partial
        func journalSecond(_ text: String) -> Double? {
            values("monotonic: ").first { $0.contains(text) }.flatMap { line in
                line.split(separator: "]").first.flatMap { Double($0.dropFirst().trimmingCharacters(in: .whitespaces)) }
            }
        }
        let began = journalSecond("recording /var/lib/obscura/recordings/\(stem).mp4")
        let firstFrame = journalSecond("\(stem).mp4: first frame taken")
        let finished = journalSecond("recording finished: /var/lib/obscura/recordings/\(stem).mp4")
        let run = values("started=").first.map { $0.split(separator: " ").compactMap { Double($0.split(separator: "=").last ?? "") } } ?? []
        try #require(began != nil && firstFrame != nil && finished != nil && run.count == 2, "\(out)")
        let span = pts.last ?? 0
        #expect(pts.count >= 5, "\(pts.count) frames")
        #expect(span <= finished! - began!, "the file spans \(span) s; the service recorded from \(began!) to \(finished!) s")
        #expect(span >= run[1] - firstFrame! - (gaps.max() ?? 0) - 0.25,
                "the file spans \(span) s; its first frame was said at \(firstFrame!) s and the stop asked at \(run[1]) s")
        // Its header has no time: when it began, the clock was not known.
        #expect(values("created=").first == "", "\(values("created="))")
        // The next recording: a wall-clock name and its first frame's time in the header.
        let second = values("second=").filter { !$0.hasPrefix(name + " ") }
        #expect(second.count == 1, "\(second)")
        // Its creation time (whole seconds) is between the start being asked
        // and the stop being answered.
        let asked = Double(values("asked=").first ?? "") ?? 0
        let now = Double(values("now=").first ?? "") ?? 0
        let created = second.first.flatMap { $0.components(separatedBy: "created=").last }.flatMap {
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return f.date(from: $0)
        }
        #expect(created.map { $0.timeIntervalSince1970 >= asked.rounded(.down) && $0.timeIntervalSince1970 <= now } == true,
                "creation time \(String(describing: created)), asked at \(asked), stopped by \(now)")
        #expect(second.first?.hasPrefix("obscura-20") == true)
    }
}
}
