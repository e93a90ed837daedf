import Foundation
import Testing
import TestSupport
@testable import ObscuraCapture
@testable import ObscuraMedia
@testable import ObscuraRecording

private func recordingSession(_ output: MovieFileOutput, camera: SyntheticCamera = SyntheticCamera()) throws -> CaptureSession {
    let session = CaptureSession()
    session.beginConfiguration()
    try session.addInput(CaptureDeviceInput(device: CaptureDevice(source: camera)))
    try session.addOutput(output)
    try session.setSessionPreset(.vga640x480)
    try session.commitConfiguration()
    return session
}

private func finish(_ events: AsyncStream<RecordingEvent>) async -> (RecordingFinishReason, RecordingProgress)? {
    for await event in events {
        if case .finished(_, let reason, let progress) = event { return (reason, progress) }
    }
    return nil
}

private func path(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-recording-\(getpid())")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent(name).path
}

@Suite(.serialized) struct MovieFileOutputTests {
    @Test func aMaximumDurationEndsTheRecordingWithThatReason() async throws {
        let output = MovieFileOutput()
        output.maxRecordedDuration = .seconds(2)
        let session = try recordingSession(output)
        let file = path("duration.mp4")
        let events = try output.startRecording(to: file)
        try session.startRunning()
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .maximumDurationReached)
        #expect(progress.copiesPerFrame == 0)  // NV12 straight into libx264
        let video = try ProbedVideo.read(file)
        #expect(video.codec == "h264" && video.width == 640 && video.height == 480)
        #expect(video.frameCount == progress.frames)  // every encoded frame is in the file
        #expect(video.isMonotonic)
        #expect(try #require(video.frameTimes.last) < 2.0)  // nothing at or past the limit
        #expect(try #require(video.frameTimes.last) > 1.5)
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
    }

    @Test func aMaximumSizeEndsTheRecordingWithThatReason() async throws {
        let output = MovieFileOutput()
        output.maxRecordedFileSize = 100_000
        let session = try recordingSession(output)
        let file = path("size.mp4")
        let events = try output.startRecording(to: file)
        try session.startRunning()
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .maximumFileSizeReached)
        #expect(progress.bytes >= 100_000)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
    }

    @Test func stoppingTheSessionEndsTheRecordingAndKeepsTheFile() async throws {
        let output = MovieFileOutput()
        let session = try recordingSession(output)
        let file = path("session.mp4")
        let events = try output.startRecording(to: file)
        try session.startRunning()
        try await Task.sleep(for: .seconds(1))
        try session.stopRunning()
        let (reason, progress) = try #require(await finish(events))
        #expect(reason == .sessionStopped)
        #expect(progress.frames > 0)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
    }

    @Test func stopRecordingFinishesAndASecondStartIsRefusedWhileRecording() async throws {
        let output = MovieFileOutput()
        let session = try recordingSession(output)
        let file = path("stop.mp4")
        let events = try output.startRecording(to: file)
        #expect(throws: RecordingError.alreadyRecording) { _ = try output.startRecording(to: path("other.mp4")) }
        try session.startRunning()
        try await Task.sleep(for: .milliseconds(700))
        output.stopRecording()
        let (reason, _) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .stopped)
        #expect(!output.isRecording)
        #expect(try ProbedVideo.read(file).frameCount > 5)
    }

    @Test func tooLittleFreeSpaceStopsWithDiskFull() async throws {
        let output = MovieFileOutput()
        output.minFreeDiskSpace = Int.max  // no disk has that much
        let session = try recordingSession(output)
        let file = path("full.mp4")
        let events = try output.startRecording(to: file)
        try session.startRunning()
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .diskFull)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
    }
}
