import Foundation
import Logging
import Testing
import TestSupport
@testable import ObscuraService
import ObscuraCapture
import ObscuraSoftwareCamera

/// The service's picture watch on the test-pattern camera: a picture frozen
/// (the synthetic camera draws one frame while its timestamps run on) or
/// darkened (its Brightness control) is declared within the hold time plus
/// 2 s, said in the status and the metrics, marked in the recording's text
/// track (read back by ffmpeg), and cleared; the recording goes on.
@Suite(.serialized) struct ServicePictureTests {
    static let hold = 1.0, clear = 0.5

    private func started(_ name: String, health: String) async throws -> (RecorderService, folder: String) {
        let folder = scratchPath("service-picture", name)
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try PatternService.writeConfiguration(in: folder, health: health)
        let configuration = try ServiceConfiguration.load(path)
        let profile = try BoardProfile.load(configuration.board, from: configuration.file)
        let service = try RecorderService(configuration: configuration, profile: profile, logger: Logger(label: "picture"))
        try await service.start()
        return (service, folder)
    }

    private var health: String {
        "hold_seconds = \(Self.hold)\nclear_seconds = \(Self.clear)\nconditions = [\"dark\", \"no_detail\", \"frozen\"]"
    }

    /// The test-pattern camera behind the service's session.
    private func camera(_ service: RecorderService) async throws -> (SyntheticCamera, CaptureDevice) {
        let device = try #require(await service.opened?.device)
        return (try #require(device.source as? SyntheticCamera), device)
    }

    /// Waits for `condition` to be declared (true) or cleared (false); the
    /// seconds it took.
    private func wait(_ service: RecorderService, _ condition: String, declared: Bool, within: Double) async -> Double? {
        let start = ContinuousClock.now
        let seen = await waitUntil(within: .seconds(within)) {
            (await service.currentStatus().pictureConditions ?? []).contains(condition) == declared
        }
        return seen ? (ContinuousClock.now - start).seconds : nil
    }

    @Test func aFrozenPictureIsDeclaredMarkedAndClearedWhileTheRecordingGoesOn() async throws {
        let (service, folder) = try await started("frozen", health: health)
        #expect(await service.currentStatus().pictureWatched == ["dark", "frozen", "no_detail"])
        // The moving pattern is none of them.
        #expect(await waitUntil { await service.currentStatus().pictureMean != nil }, "no measure of the picture")
        #expect(await service.currentStatus().pictureConditions ?? [] == [])
        #expect(await service.startRecording() != nil)
        #expect(await waitUntil { await service.currentStatus().frames > 0 })
        let (camera, _) = try await camera(service)
        camera.setFrozen(true)
        let declared = await wait(service, "frozen", declared: true, within: Self.hold + 2)
        #expect(declared != nil, "frozen not declared within the \(Self.hold) s hold + 2 s")
        let status = await service.currentStatus()
        #expect(status.pictureEpisodes["frozen"] == 1)
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"frozen\"} 1"))
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"dark\"} 0"))
        #expect(status.metricsText.contains("obscura_picture_condition_episodes_total{condition=\"frozen\"} 1"))
        camera.setFrozen(false)
        #expect(await wait(service, "frozen", declared: false, within: Self.clear + 2) != nil, "frozen not cleared")
        #expect(await service.currentStatus().state == "recording", "the recording stopped for a condition")
        // Two more seconds of the recording, counted in its own frames.
        let after = await service.currentStatus()
        let twoSeconds = after.frames + Int((2 * after.framesPerSecond).rounded(.up))
        #expect(await waitUntil { await service.currentStatus().frames >= twoSeconds }, "the recording does not go on")
        await service.stopRecording()
        #expect(await waitForFinished(service) != nil)
        // The service's files are segments: "<name>-0001.mp4".
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/rec")) ?? []
        let file = folder + "/rec/" + (try #require(names.first { $0.hasSuffix(".mp4") }, "no recording in \(names)"))
        let read = try marks(in: file)
        #expect(read.count == 2, "marks: \(read)")
        #expect(read.first?.text.hasPrefix("picture: frozen (") == true, "marks: \(read)")
        #expect(read.last?.text.hasPrefix("picture: frozen cleared after") == true, "marks: \(read)")
        let video = try ProbedVideo.read(file)
        let last = try #require(video.frameTimes.max())
        #expect(read.allSatisfy { $0.seconds >= 0 && $0.seconds <= last }, "marks outside the file's frames (to \(last) s): \(read)")
        #expect(read.map(\.seconds) == read.map(\.seconds).sorted())
        await service.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    @Test func aDarkPictureIsDeclaredAndClears() async throws {
        let (service, folder) = try await started("dark", health: health)
        let (_, device) = try await camera(service)
        try device.withConfigurationLock { try $0.setImageAdjustment(.brightness, -1) }
        #expect(await wait(service, "dark", declared: true, within: Self.hold + 2) != nil, "dark not declared")
        let mean = try #require(await service.currentStatus().pictureMean)
        #expect(mean <= 24, "declared dark at mean luma \(mean)")
        try device.withConfigurationLock { try $0.setImageAdjustment(.brightness, 0) }
        #expect(await wait(service, "dark", declared: false, within: Self.clear + 2) != nil, "dark not cleared")
        #expect(await service.currentStatus().state == "idle")
        await service.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Tampering through the service: the test pattern held still is the
    /// scene learned (150 looks: at 30 looks a second, 5 s), and set moving
    /// again it is another scene: redirected, in the status and the metrics.
    @Test func aSceneReplacedAfterItWasLearnedIsRedirected() async throws {
        let conditions = "conditions = [\"covered\", \"partly_covered\", \"defocused\", \"redirected\"]"
        let (service, folder) = try await started("tamper", health: "hold_seconds = \(Self.hold)\nclear_seconds = \(Self.clear)\nframes_per_second = 30\n\(conditions)")
        #expect(await service.currentStatus().pictureWatched == ["covered", "defocused", "partly_covered", "redirected"])
        let (camera, _) = try await camera(service)
        camera.setFrozen(true)
        let learned = await waitUntil(within: .seconds(30)) { await service.currentStatus().sceneLearned == true }
        #expect(learned, "the still scene not learned within 30 s")
        #expect(await service.currentStatus().pictureConditions ?? [] == [], "the learned scene itself alarmed")
        let likeness = try #require(await service.currentStatus().sceneLikeness)
        #expect(likeness > 0.9, "the learned scene's likeness \(likeness)")
        camera.setFrozen(false)
        #expect(await wait(service, "redirected", declared: true, within: Self.hold + 2) != nil, "redirected not declared")
        let status = await service.currentStatus()
        #expect(status.pictureEpisodes["redirected"] == 1)
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"redirected\"} 1"))
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"covered\"} 0"))
        await service.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    @Test func healthTurnedOffWatchesNothingAndMarksNothing() async throws {
        let (service, folder) = try await started("off", health: "enabled = false")
        #expect(await service.currentStatus().pictureWatched == nil)
        #expect(!(await service.currentStatus().metricsText.contains("obscura_picture_condition")))
        await service.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The recording finished after a stop: its path.
    private func waitForFinished(_ service: RecorderService) async -> String? {
        _ = await waitUntil {
            let status = await service.currentStatus()
            return status.state == "idle" && status.lastRecording != nil
        }
        return await service.currentStatus().lastRecording
    }
}
