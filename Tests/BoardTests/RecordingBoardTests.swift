import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Movie recording against real limits on the board.
@Suite struct RecordingBoardTests {
    let obscura = ".build/debug/obscura"

    @Test func aFullDiskStopsTheRecordingCleanlyAndTheFilePlays() throws {
        // A 1 MiB filesystem, and no free-space margin: the writes hit ENOSPC.
        let result = try VirtualBoard.run("""
            mkdir -p /mnt/small && mount -t tmpfs -o size=1m tmpfs /mnt/small
            \(obscura) record --camera synthetic --size 640x480 --duration 60 --min-free-space 0 --output /mnt/small/full.mp4
            echo "status=$?"
            ls /mnt/small
            ffprobe -v error -count_frames -show_entries stream=codec_name,nb_read_frames -of default=nw=1 /mnt/small/full.mp4
            """)
        #expect(result.status == 0, "\(result.stderr)")
        let out = result.stdout
        #expect(out.contains("finished: disk full"), "\(out)\(result.stderr)")
        #expect(out.contains("status=3"))
        #expect(out.contains("full.mp4\n"))           // given its final name
        #expect(!out.contains("full.mp4.partial"))
        #expect(out.contains("codec_name=h264"))
        let frames = out.split(separator: "\n").first { $0.hasPrefix("nb_read_frames=") }
            .flatMap { Int($0.dropFirst("nb_read_frames=".count)) } ?? 0
        // Every frame the summary counts (read back from the file) plays.
        let summary = try #require(RecordingSummary.find(in: out), "\(out)")
        #expect(frames >= 5 && frames == summary.frames, "the file plays \(frames) frames; \(summary.line)")
    }

    /// A storage that stops taking writes mid-recording (a device-mapper
    /// target swapped for `error` under a mounted ext4, as a card that dies
    /// does): the next sync of the file fails, and the recording ends at
    /// once as a storage failure that names the call and errno, rather than
    /// recording on into a file nothing reaches.
    @Test func aStorageThatFailsItsSyncsEndsTheRecordingAsAStorageFailure() throws {
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            . board/virtual/waiting.sh
            dm-card make obscura-card /mnt/card 128 || exit 1
            \(obscura) record --camera synthetic --size 640x480 --duration 120 --fragment 0.5 --output /mnt/card/rec.mp4 > /tmp/rec.out 2>&1 &
            pid=$!
            grown() { [ "$(stat -c %s /mnt/card/rec.mp4.partial 2>/dev/null || echo 0)" -gt 200000 ]; }
            wait_for 120 "the recording to have fragments on the card" grown
            read -r cut _ < /proc/uptime
            dm-card error obscura-card && echo "card=dead"
            ended() { ! kill -0 $pid 2>/dev/null; }
            wait_for 120 "the recording to end" ended
            read -r end _ < /proc/uptime
            wait $pid; echo "status=$?"
            echo "after=$(awk -v a="$cut" -v b="$end" 'BEGIN { printf "%.2f", b - a }')"
            tail -n 3 /tmp/rec.out | sed 's/^/out: /'
            """, timeout: 400)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("card=dead"), "\(out)\(result.stderr)")
        #expect(lines.contains("status=3"), "the recording failed: \(out)")
        #expect(out.contains("finished: storage failed: ") && (out.contains("fdatasync failed") || out.contains("fsync failed") || out.contains("pwrite failed")),
                "the summary names the storage's failed call: \(out)")
        #expect(out.contains("Input/output error") || out.contains("Read-only file system"), "and its errno: \(out)")
        let after = lines.first { $0.hasPrefix("after=") }.map { String($0.dropFirst(6)) } ?? "?"
        print("RecordingBoardTests: the recording ended \(after) s after the card died: \(lines.last { $0.hasPrefix("out: ") } ?? "")")
    }

    /// ffprobe's packet times and flags of a file, as "0.000000,K_" lines.
    private static let packets = "ffprobe -v error -select_streams v:0 -show_entries packet=flags,pts_time -of csv=p=0"

    @Test func preRecordingFromVimcBeginsBeforeTheTrigger() throws {
        let result = try VirtualBoard.run("""
            \(obscura) record --size 640x480 --pre-record 2 --trigger-after 3.5 --duration 1 --output pre.mp4 || exit 1
            echo "--packets"
            \(Self.packets) pre.mp4; rm -f pre.mp4 pre.mp4.sha256
            """)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("recorded ") }, "\(result.stderr)")
        let preRoll = try #require(summary.split(separator: ",").first { $0.contains("pre-roll") }
            .flatMap { Double($0.split(separator: " ")[1]) })
        #expect(preRoll >= 2.0, "pre-roll \(preRoll) s")
        let packets = result.stdout.components(separatedBy: "--packets\n").last!.split(separator: "\n")
        // The file starts at the LAST keyframe at or before the trigger − 2 s:
        // its next keyframe, if it has one (a keyframe interval of the nominal
        // rate's frames can outlast the file when the camera is slow), comes
        // after that moment.
        let keyframes = packets.filter { $0.split(separator: ",").last?.hasPrefix("K") == true }
            .compactMap { $0.split(separator: ",").first.flatMap { Double($0) } }
        #expect(!keyframes.isEmpty)
        if keyframes.count >= 2 {
            #expect(keyframes[1] > preRoll - 2.0, "keyframe at \(keyframes[1]) s is at or before the trigger − 2 s (\(preRoll - 2.0) s)")
        }
        #expect(packets.first?.split(separator: ",").last?.hasPrefix("K") == true, "the file must start with a keyframe: \(packets.prefix(2))")
        // It ends 1 s after the trigger, to within the longest interval between
        // its frames (the camera's own pace in this run).
        let times = packets.compactMap { $0.split(separator: ",").first.flatMap { Double($0) } }.sorted()
        let last = try #require(times.last)
        let longest = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        #expect(abs(last - (preRoll + 1)) < max(0.2, longest + 0.05), "file ends at \(last) s; pre-roll \(preRoll) s + 1 s recorded; frames up to \(longest) s apart")
    }

    @Test func unbindingTheCameraFinalizesTheRecordingAsCameraLost() throws {
        let result = try VirtualBoard.run("""
            \(obscura) record --size 640x480 --duration 30 --output lost.mp4 > r.out 2> r.err &
            p=$!
            . board/virtual/waiting.sh
            encoding() { grep -q "encoder" r.err; }; wait_for 60 "the recorder to name its encoder" encoding
            sleep 2
            echo vimc.0 > /sys/bus/platform/drivers/vimc/unbind
            wait $p; echo "status=$?"
            cat r.out; ls lost.mp4*
            ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of default=nw=1 lost.mp4
            echo vimc.0 > /sys/bus/platform/drivers/vimc/bind
            rm -f lost.mp4* r.out r.err
            """)
        let out = result.stdout
        #expect(out.contains("finished: camera lost"), "\(out)\(result.stderr)")
        #expect(out.contains("status=3"))
        #expect(out.contains("lost.mp4\n") && !out.contains("lost.mp4.partial"))
        let frames = out.split(separator: "\n").first { $0.hasPrefix("nb_read_frames=") }
            .flatMap { Int($0.dropFirst("nb_read_frames=".count)) } ?? 0
        // Two seconds and more of the camera's frames, all of them in the file.
        let summary = try #require(RecordingSummary.find(in: out), "\(out)")
        #expect(frames >= 5 && frames == summary.frames, "the file plays \(frames) frames; \(summary.line)")
        #expect(summary.seconds >= 2, "\(summary.line)")
    }

    @Test func aKilledVimcRecordingPlays() throws {
        let result = try VirtualBoard.run("""
            \(obscura) record --size 640x480 --duration 30 --output killed.mp4 >/dev/null 2> r.err &
            p=$!
            . board/virtual/waiting.sh
            # Killed once three seconds and four frames are recorded (the
            # progress line says so), whatever the camera's pace in this run.
            enough() { tail -n 1 r.err | tr -d , | awk '$2 == "recording" && $3 >= 3 && $5 >= 4 { ok = 1 } END { exit !ok }'; }
            wait_for 120 "three seconds and four frames recorded" enough
            kill -9 $p; wait $p
            ls killed.mp4*
            ffprobe -v error -count_frames -show_entries stream=codec_name,nb_read_frames -of default=nw=1 killed.mp4.partial
            ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 killed.mp4.partial | sed 's/^/pts=/'
            rm -f killed.mp4* r.err
            """)
        let out = result.stdout
        #expect(out.contains("killed.mp4.partial") && !out.contains("killed.mp4\n"), "\(out)\(result.stderr)")
        #expect(out.contains("codec_name=h264"))
        let frames = out.split(separator: "\n").first { $0.hasPrefix("nb_read_frames=") }
            .flatMap { Int($0.dropFirst("nb_read_frames=".count)) } ?? 0
        // Three seconds and more were recorded; at most one second is lost,
        // and the last frame's interval (the camera's own, as the file shows it).
        let times = out.split(separator: "\n").filter { $0.hasPrefix("pts=") }.compactMap { Double($0.dropFirst(4)) }.sorted()
        #expect(frames >= 2 && times.count == frames, "the killed file plays \(frames) frames\n\(out)")
        if let first = times.first, let last = times.last, times.count >= 2 {
            let interval = (last - first) / Double(times.count - 1)
            let held = last - first + interval
            #expect(held >= 2 - interval, "the killed file holds \(held) s of frames \(interval) s apart")
        }
    }
}
}

extension VirtualBoardTests {
/// Photos from vimc (BGR888 frames through libcamera).
@Suite struct PhotoBoardTests {
    @Test func aPhotoFromVimcIsAJPEGWithEXIFTakenWithinAFrame() throws {
        let result = try VirtualBoard.run("""
            .build/debug/obscura stream --size 640x480 --frames 12 | grep '^frame ' | sed 's/^/measure /'
            .build/debug/obscura photo --size 640x480 --thumbnail 160x120 --output v.jpg || exit 1
            exiftool -s -s -s -Make -Model -ImageSize -ThumbnailLength v.jpg
            echo "validate: $(exiftool -validate -warning -a -s -s -s v.jpg | tr '\\n' ' ')"
            djpeg v.jpg | head -c 15 | head -2 | tr '\\n' ' '; echo
            rm -f v.jpg
            # vimc has no raw stream through libcamera: RAW is refused by name, nothing written.
            .build/debug/obscura photo --size 640x480 --raw --output r.jpg; echo "raw-exit=$?"
            ls r.jpg r.dng 2>/dev/null | sed 's/^/leftover: /'
            """)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let summary = try #require(lines.first { $0.hasPrefix("photo v.jpg") }, "\(result.stdout)")
        #expect(summary.contains("636x480 JPEG"))
        let lag = summary.split(separator: ",").first { $0.contains("shutter lag") }
            .flatMap { Double($0.split(separator: " ")[2]) }
        // Within one of the camera's frame intervals, as measured in this
        // boot from its own timestamps (the slowest of eleven).
        let stamps = lines.filter { $0.hasPrefix("measure frame ") }
            .compactMap { $0.split(separator: " ").first { $0.hasPrefix("ts=") }.flatMap { Double($0.dropFirst(3)) } }
        let intervals = zip(stamps, stamps.dropFirst()).map { ($1 - $0) / 1e6 }
        let slowest = try #require(intervals.max(), "\(result.stdout)")
        #expect(lag.map { abs($0) < slowest + 5 } == true, "\(summary); the camera's frames came \(intervals) ms apart")
        #expect(lines.contains("Obscura"))
        #expect(lines.contains("platform/vimc.0 Sensor B") || lines.contains { $0.contains("Sensor B") })
        #expect(lines.contains("636x480"))
        #expect(lines.contains("P6 636 480 "))
        #expect(lines.contains("validate: OK "), "\(result.stdout)")
        #expect(lines.contains("raw-exit=1"), "\(result.stdout)")
        #expect(result.stderr.contains("has no raw stream"), "\(result.stderr)")
        #expect(!lines.contains { $0.hasPrefix("leftover: ") })
    }
}
}

extension VirtualBoardTests {
/// RAW: vimc through libcamera has no raw stream, so the DNG writer is proven
/// on real Bayer frames from vimc's "Raw Capture 0" V4L2 node.
@Suite struct RawBoardTests {
    @Test func aBayerFrameFromVimcBecomesADNGThatLibrawAndExiftoolRead() throws {
        let result = try VirtualBoard.run("""
            for m in /dev/media*; do media-ctl -d $m -p 2>/dev/null | grep -q '"Sensor A"' && dev=$m; done
            media-ctl -d $dev -V '"Sensor A":0[fmt:SGRBG8_1X8/640x480]' || exit 1
            media-ctl -d $dev -l '"Sensor A":0->"Raw Capture 0":0[1]' 2>/dev/null
            .build/debug/obscura dng --node "Raw Capture 0" --pattern GRBG --size 640x480 --output v.dng || exit 1
            raw-identify -v v.dng | grep -E "^(Camera|Full size|Filter pattern)"
            exiftool -s -s -s -SubIFD:BitsPerSample -CFAPattern -SubIFD:WhiteLevel v.dng
            echo "validate: $(exiftool -validate -warning -a -s -s -s v.dng | tr '\\n' ' ')"
            dcraw_emu -w -Z v.ppm v.dng && head -c 15 v.ppm | tr '\\n' ' '; echo
            rm -f v.dng v.ppm
            """)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let out = result.stdout
        #expect(out.contains("dng v.dng: 640x480 GRBG 8-bit"), "\(out)\(result.stderr)")
        #expect(out.contains("Camera: Obscura Raw Capture 0"))
        #expect(out.contains("Full size:    640 x 480"))
        #expect(out.contains("Filter pattern: GRBG"))
        #expect(out.contains("[Green,Red][Blue,Green]"))
        #expect(out.split(separator: "\n").contains("255"))   // white level, 8 bits
        #expect(out.contains("P6 640 480 "))                   // libraw developed it
        #expect(out.split(separator: "\n").contains("validate: OK "), "\(out)")
    }
}
}
