import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Movie recording against real limits on the board.
@Suite struct RecordingBoardTests {
    let obscura = ".build/debug/obscura"

    @Test func aFullDiskStopsTheRecordingCleanlyAndTheFilePlays() throws {
        // A 1 MiB filesystem, and no free-space margin: the writes hit ENOSPC.
        let result = try VirtualBoard.run(scenario: "Recording/aFullDiskStopsTheRecordingCleanlyAndTheFilePlays")
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
        let result = try VirtualBoard.run(scenario: "Recording/aStorageThatFailsItsSyncsEndsTheRecordingAsAStorageFailure", timeout: 400)
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
        let result = try VirtualBoard.run(scenario: "Recording/preRecordingFromVimcBeginsBeforeTheTrigger")
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
        let result = try VirtualBoard.run(scenario: "Recording/unbindingTheCameraFinalizesTheRecordingAsCameraLost")
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
        let result = try VirtualBoard.run(scenario: "Recording/aKilledVimcRecordingPlays")
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
        let result = try VirtualBoard.run(scenario: "Recording/aPhotoFromVimcIsAJPEGWithEXIFTakenWithinAFrame")
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
        let result = try VirtualBoard.run(scenario: "Recording/aBayerFrameFromVimcBecomesADNGThatLibrawAndExiftoolRead")
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
