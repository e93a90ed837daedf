import Foundation
import Testing
import TestSupport
@testable import ObscuraCapture
@testable import ObscuraRecording
import ObscuraSystem
import ObscuraMuxing

/// A recording's marks (its timed text track) read back by ffmpeg: each
/// where it was made on the camera's clock, in MP4 (3GPP timed text) and
/// Matroska (SubRip), never before the one before it.
@Suite(.serialized) struct MarkTrackTests {
    /// Records on the test pattern, marking `count` frames spaced `apart`
    /// of the camera's own time; the marks as ffmpeg reads them, the
    /// camera times they were made at, and the file's frame times.
    private func marked(_ name: String, count: Int, apart: Double) async throws
        -> (read: [Mark], made: [Double], frames: [Double], unwritten: Int) {
        let output = MovieFileOutput()
        let frames = VideoDataOutput(alwaysDiscardsLateVideoFrames: true, queueDepth: 1)
        let session = try patternSession([output, frames], camera: fastPatternCamera())
        let file = scratchPath("marks", name)
        try? FileManager.default.removeItem(atPath: file)
        var settings = MovieSettings()
        settings.marked = true
        let events = try output.startRecording(to: file, settings: settings)
        try session.startRunning()
        var made: [UInt64] = []
        var first: UInt64?
        for await frame in frames.frames {
            let t = frame.timestampNanoseconds
            first = first ?? t
            guard output.progress.frames > 0 else { continue }
            if made.count < count, made.isEmpty ? t >= first! + 300_000_000 : t >= made.last! + UInt64(apart * 1e9) {
                made.append(t)
                output.mark("mark \(made.count)", sensorTime: t)
            }
            if made.count == count, t >= made.last! + 1_500_000_000 { break }
        }
        // What a power cut now would lose: the frames recorded and not yet
        // in the file (the marks' track must not hold the video back).
        let recorded = output.progress.frames
        let inFile = MovieReader.countPackets(file + ".partial")?.video ?? 0
        output.stopRecording()
        for await event in events { if case .finished = event { break } }
        try session.stopRunning()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let times = made.map { Double($0 - made[0]) / 1e9 }
        return (try marks(in: file), times, try ProbedVideo.read(file).frameTimes, recorded - inFile)
    }

    /// How late a mark may land: the track is filled a quarter second
    /// ahead, and covers two frames past the newest (measured here).
    private func lateness(_ frames: [Double]) -> Double {
        let gaps = zip(frames.dropFirst(), frames).map { $0 - $1 }
        return 0.25 + 3 * (gaps.max() ?? 0.1) + 0.002
    }

    @Test(arguments: ["marks.mp4", "marks.mkv", "marks.mov"])
    func marksAreWhereTheyWereMade(_ name: String) async throws {
        let (read, made, frames, unwritten) = try await marked(name, count: 3, apart: 1.5)
        // A fragment (half a second of frames, at the rate measured in the
        // file) and the frames inside the encoder at most.
        let fps = Double(frames.count - 1) / ((frames.max() ?? 1) - (frames.min() ?? 0))
        #expect(Double(unwritten) <= (0.5 * fps).rounded(.up) + 3, "\(unwritten) frames recorded and not in the file at \(fps) fps")
        try #require(read.count == 3, "ffmpeg read \(read)")
        #expect(read.map(\.text) == ["mark 1", "mark 2", "mark 3"])
        let late = lateness(frames)
        // Each after the first is as far from it as on the camera's clock,
        // give or take how late a mark may land.
        for (r, m) in zip(read, made) {
            let offset = (r.seconds - read[0].seconds) - m
            #expect(abs(offset) <= late, "\(r.text) at \(r.seconds) s, made \(m) s after the first (\(late) s allowed)")
        }
        let last = try #require(frames.max())
        #expect(read.allSatisfy { $0.seconds >= 0 && $0.seconds <= last }, "marks \(read) outside the frames (to \(last) s)")
    }

    @Test func marksOfOneInstantAreOneCueAndACueNeverOverlapsTheLast() async throws {
        let output = MovieFileOutput()
        let frames = VideoDataOutput(alwaysDiscardsLateVideoFrames: true, queueDepth: 1)
        let session = try patternSession([output, frames], camera: fastPatternCamera())
        let file = scratchPath("marks", "instant.mp4")
        var settings = MovieSettings()
        settings.marked = true
        let events = try output.startRecording(to: file, settings: settings)
        try session.startRunning()
        var marked = false
        var markedAt: UInt64 = 0
        for await frame in frames.frames where output.progress.frames > 0 {
            let t = frame.timestampNanoseconds
            if !marked {
                output.mark("dark", sensorTime: t)
                output.mark("no detail", sensorTime: t)
                output.mark("frozen", sensorTime: t + 1_000_000)
                marked = true
                markedAt = t
            } else if t > markedAt + 2_500_000_000 {
                break
            }
        }
        output.stopRecording()
        for await event in events { if case .finished = event { break } }
        try session.stopRunning()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let read = try marks(in: file)
        #expect(read.map(\.text) == ["dark · no detail", "frozen"], "\(read)")
        if read.count == 2 { #expect(read[1].seconds - read[0].seconds >= 0.999, "\(read)") }
    }
    /// An FFmpeg without the text encoder: the file is recorded without the
    /// marks' track, plays whole, and its notes name the call that failed.
    @Test func withoutTheTextEncoderTheFileIsRecordedWithoutMarksAndSaysSo() async throws {
        let output = MovieFileOutput()
        let frames = VideoDataOutput(alwaysDiscardsLateVideoFrames: true, queueDepth: 1)
        let session = try patternSession([output, frames], camera: fastPatternCamera())
        let file = scratchPath("marks", "no-encoder.mp4")
        var settings = MovieSettings()
        settings.marked = true
        settings.markEncoder = "no-such-text-encoder"
        let events = try output.startRecording(to: file, settings: settings)
        try session.startRunning()
        var markedAt: UInt64?
        for await frame in frames.frames where output.progress.frames > 0 {
            let t = frame.timestampNanoseconds
            if markedAt == nil {
                output.mark("dark", sensorTime: t)
                markedAt = t
            } else if let markedAt, t > markedAt + 1_000_000_000 {
                break
            }
        }
        output.stopRecording()
        var progress: RecordingProgress?
        for await event in events { if case .finished(_, _, let p) = event { progress = p; break } }
        try session.stopRunning()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let p = try #require(progress)
        #expect(p.fileNotes.contains { $0.contains("recorded without its marks' track (avcodec_find_encoder_by_name (no-such-text-encoder)") }, "\(p.fileNotes)")
        let streams = try runProgram("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", file])
        #expect(streams.stdout.split(separator: "\n").map(String.init) == ["video"], "\(streams.stdout)")
        #expect(try ProbedVideo.read(file).frameTimes.count == p.frames)
    }
}
