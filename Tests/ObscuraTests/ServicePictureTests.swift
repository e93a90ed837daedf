import Foundation
import Logging
import Testing
import TestSupport
@testable import ObscuraService
import ObscuraCapture
import ObscuraSoftwareCamera
import Synchronization

/// The service's picture watch on the test-pattern camera: a picture frozen
/// (the synthetic camera draws one frame while its timestamps run on) or
/// darkened (its Brightness control) is declared within the hold time plus
/// 2 s, said in the status and the metrics, marked in the recording's text
/// track (read back by ffmpeg), and cleared; the recording goes on.
/// The service runs on a clock the test moves on (a frame interval every
/// 4 ms), and its camera on that clock (`synthetic:clocked`): holds,
/// clears and the learning of a scene are measured in that clock's time,
/// and take a fraction of it in real time.
@Suite(.serialized) struct ServicePictureTests {
    static let hold = 1.0, clear = 0.5

    /// The service, its clock (driven until `stop`), its folder.
    private struct Started {
        let service: RecorderService
        let clock: ManualClock
        let folder: String
        let driving: Task<Void, Never>
        func stop() async {
            await service.shutdown()
            driving.cancel()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    private func started(_ name: String, health: String) async throws -> Started {
        let folder = scratchPath("service-picture", name)
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try PatternService.writeConfiguration(in: folder, health: health, camera: CaptureDevice.clockedTestPattern)
        let configuration = try ServiceConfiguration.load(path)
        let profile = try BoardProfile.load(configuration.board, from: configuration.file)
        let clock = ManualClock()
        let service = try RecorderService(configuration: configuration, profile: profile, logger: Logger(label: "picture"), clock: clock)
        let driving = clock.drive(by: .nanoseconds(33_333_333), every: .milliseconds(4))
        try await service.start()
        return Started(service: service, clock: clock, folder: folder, driving: driving)
    }

    private var health: String {
        "hold_seconds = \(Self.hold)\nclear_seconds = \(Self.clear)\nconditions = [\"dark\", \"no_detail\", \"frozen\"]"
    }

    /// The test-pattern camera behind the service's session.
    private func camera(_ service: RecorderService) async throws -> (SyntheticCamera, CaptureDevice) {
        let device = try #require(await service.opened?.device)
        return (try #require(device.source as? SyntheticCamera), device)
    }

    /// Waits for `condition` to be declared (true) or cleared (false) within
    /// `within` seconds of the service's clock; the seconds it took there.
    private func wait(_ started: Started, _ condition: String, declared: Bool, within: Double) async -> Double? {
        let clock = started.clock, start = clock.nanoseconds, bound = start + UInt64(within * 1e9)
        let seen = Atomic<Bool>(false)
        _ = await waitUntil(within: .seconds(120)) {
            let now = (await started.service.currentStatus().pictureConditions ?? []).contains(condition) == declared
            seen.store(now, ordering: .relaxed)
            return now || clock.nanoseconds > bound
        }
        return seen.load(ordering: .relaxed) ? Double(clock.nanoseconds - start) / 1e9 : nil
    }

    @Test func aFrozenPictureIsDeclaredMarkedAndClearedWhileTheRecordingGoesOn() async throws {
        let run = try await started("frozen", health: health)
        let service = run.service, folder = run.folder
        #expect(await service.currentStatus().pictureWatched == ["dark", "frozen", "no_detail"])
        // The moving pattern is none of them.
        #expect(await waitUntil { await service.currentStatus().pictureMean != nil }, "no measure of the picture")
        #expect(await service.currentStatus().pictureConditions ?? [] == [])
        #expect(await service.startRecording() != nil)
        #expect(await waitUntil { await service.currentStatus().frames > 0 })
        let (camera, _) = try await camera(service)
        camera.setFrozen(true)
        let declared = await wait(run, "frozen", declared: true, within: Self.hold + 2)
        #expect(declared != nil, "frozen not declared within the \(Self.hold) s hold + 2 s")
        let status = await service.currentStatus()
        #expect(status.pictureEpisodes["frozen"] == 1)
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"frozen\"} 1"))
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"dark\"} 0"))
        #expect(status.metricsText.contains("obscura_picture_condition_episodes_total{condition=\"frozen\"} 1"))
        camera.setFrozen(false)
        #expect(await wait(run, "frozen", declared: false, within: Self.clear + 2) != nil, "frozen not cleared")
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
        await run.stop()
    }

    @Test func aDarkPictureIsDeclaredAndClears() async throws {
        let run = try await started("dark", health: health)
        let service = run.service
        let (_, device) = try await camera(service)
        try device.withConfigurationLock { try $0.setImageAdjustment(.brightness, -1) }
        #expect(await wait(run, "dark", declared: true, within: Self.hold + 2) != nil, "dark not declared")
        let mean = try #require(await service.currentStatus().pictureMean)
        #expect(mean <= 24, "declared dark at mean luma \(mean)")
        try device.withConfigurationLock { try $0.setImageAdjustment(.brightness, 0) }
        #expect(await wait(run, "dark", declared: false, within: Self.clear + 2) != nil, "dark not cleared")
        #expect(await service.currentStatus().state == "idle")
        await run.stop()
    }

    /// Tampering through the service: the test pattern held still is the
    /// scene learned (150 looks: at 30 looks a second, 5 s), and set moving
    /// again it is another scene: redirected, in the status and the metrics.
    @Test func aSceneReplacedAfterItWasLearnedIsRedirected() async throws {
        let conditions = "conditions = [\"covered\", \"partly_covered\", \"defocused\", \"redirected\"]"
        let run = try await started("tamper", health: "hold_seconds = \(Self.hold)\nclear_seconds = \(Self.clear)\nframes_per_second = 30\n\(conditions)")
        let service = run.service
        #expect(await service.currentStatus().pictureWatched == ["covered", "defocused", "partly_covered", "redirected"])
        let (camera, _) = try await camera(service)
        camera.setFrozen(true)
        let start = run.clock.nanoseconds
        let learned = Atomic<Bool>(false)
        _ = await waitUntil(within: .seconds(120)) {
            learned.store(await service.currentStatus().sceneLearned == true, ordering: .relaxed)
            return learned.load(ordering: .relaxed) || run.clock.nanoseconds > start + 30_000_000_000
        }
        let wasLearned = learned.load(ordering: .relaxed)
        #expect(wasLearned, "the still scene not learned within 30 s of the service's clock")
        #expect(await service.currentStatus().pictureConditions ?? [] == [], "the learned scene itself alarmed")
        let likeness = try #require(await service.currentStatus().sceneLikeness)
        #expect(likeness > 0.9, "the learned scene's likeness \(likeness)")
        camera.setFrozen(false)
        #expect(await wait(run, "redirected", declared: true, within: Self.hold + 2) != nil, "redirected not declared")
        let status = await service.currentStatus()
        #expect(status.pictureEpisodes["redirected"] == 1)
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"redirected\"} 1"))
        #expect(status.metricsText.contains("obscura_picture_condition{condition=\"covered\"} 0"))
        await run.stop()
    }

    @Test func healthTurnedOffWatchesNothingAndMarksNothing() async throws {
        let run = try await started("off", health: "enabled = false")
        #expect(await run.service.currentStatus().pictureWatched == nil)
        #expect(!(await run.service.currentStatus().metricsText.contains("obscura_picture_condition")))
        await run.stop()
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
