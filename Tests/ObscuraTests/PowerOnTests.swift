import Foundation
import Logging
import Testing
import TestSupport
@testable import ObscuraService
import ObscuraSystem

/// `recording.start = "power-on"`: the service records from its start, the
/// record button still stops and starts it, and a wrong value is named with
/// its line. The service runs in-process on the test pattern.
@Suite(.serialized) struct PowerOnTests {
    /// An empty scratch folder `name` (the test removes it).
    private func fresh(_ name: String) throws -> String {
        let folder = scratchPath("power-on", name)
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    private func service(in folder: String, start: String) throws -> RecorderService {
        let path = try PatternService.writeConfiguration(in: folder, recording: "start = \"\(start)\"\nsegment_seconds = 0", metricsInterval: 10)
        let configuration = try ServiceConfiguration.load(path)
        #expect(configuration.recordingStart == (start == "power-on" ? .powerOn : .button))
        let profile = try BoardProfile.load(configuration.board, from: configuration.file)
        return try RecorderService(configuration: configuration, profile: profile, logger: Logger(label: "power-on"))
    }

    @Test func aPowerOnServiceRecordsFromItsStartAndTheButtonStillStopsAndStartsIt() async throws {
        let folder = try fresh("records")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let service = try service(in: folder, start: "power-on")
        try await service.start()
        // Recording by the time the service says it is ready: no press.
        #expect(await service.currentStatus().state == "recording")
        // Its first frames reach the storage (the sync of its first whole
        // fragment), after the first was taken.
        #expect(await waitUntil(within: .seconds(30)) { await service.opened?.movie.progress.firstFramesDurableNanoseconds != nil })
        let progress = try #require(await service.opened?.movie.progress)
        let durable = try #require(progress.firstFramesDurableNanoseconds), zero = try #require(progress.timeZeroNanoseconds)
        #expect(durable > zero, "on the storage at \(durable) ns, taken at \(zero) ns")
        // The button stops it: one finished file, with frames.
        await service.toggleRecording()
        #expect(await service.currentStatus().state == "idle")
        let first = try FileManager.default.contentsOfDirectory(atPath: folder + "/rec").filter { $0.hasSuffix(".mp4") }
        try #require(first.count == 1, "\(first)")
        #expect(try ProbedVideo.read(folder + "/rec/" + first[0]).frameCount > 0)
        // And starts it again; a photo works meanwhile.
        await service.toggleRecording()
        #expect(await service.currentStatus().state == "recording")
        if case .failure(let failure) = await service.takePhoto() { Issue.record("a photo while recording: \(failure.message)") }
        // (Frames in it before the service stops: a file with none is removed.)
        #expect(await waitUntil(within: .seconds(30)) { await service.currentStatus().frames > 0 })
        await service.shutdown()
        let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/rec").filter { $0.hasSuffix(".mp4") }
        #expect(files.count == 2, "\(files)")
    }

    @Test func aButtonServiceWaitsForThePress() async throws {
        let folder = try fresh("button")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let service = try service(in: folder, start: "button")
        try await service.start()
        #expect(await service.currentStatus().state == "idle")
        await service.shutdown()
    }

    @Test func aWrongStartIsNamedWithItsLineAndWhatIsAllowed() throws {
        let folder = try fresh("wrong")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try PatternService.writeConfiguration(in: folder, recording: "start = \"boot\"")
        let line = try #require(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("start = \"boot\"") }) + 1
        #expect {
            _ = try ServiceConfiguration.load(path)
        } throws: { error in
            let text = "\(error)"
            return text.contains(":\(line)") && text.contains("recording.start") && text.contains("\"boot\" is not allowed; allowed: button, power-on")
        }
    }
}
