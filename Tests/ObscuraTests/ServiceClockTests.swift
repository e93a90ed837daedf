import Foundation
import Logging
import Testing
import TestSupport
@testable import ObscuraService
import ObscuraSystem

/// The service's time is its clock's: its housekeeping round, the metrics
/// interval and a recording's length follow a clock the test moves on by
/// hand, with no wait for real time.
@Suite(.serialized) struct ServiceClockTests {
    /// A started pattern service on `clock`, in a fresh folder named `name`
    /// (removed by `finish`).
    private func started(_ name: String, clock: ManualClock) async throws -> (RecorderService, folder: String) {
        let folder = scratchPath("service-clock", name)
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let service = try service(in: folder, clock: clock)
        try await service.start()
        return (service, folder)
    }

    private func finish(_ service: RecorderService, _ folder: String) async {
        await service.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func service(in folder: String, clock: ManualClock) throws -> RecorderService {
        let path = try PatternService.writeConfiguration(in: folder, metricsInterval: 10)
        let configuration = try ServiceConfiguration.load(path)
        let profile = try BoardProfile.load(configuration.board, from: configuration.file)
        return try RecorderService(configuration: configuration, profile: profile, logger: Logger(label: "clock"), clock: clock)
    }

    /// One housekeeping round: the clock moved past the round's interval,
    /// and the round over (its next wait begun).
    private func round(_ clock: ManualClock) async {
        #expect(await waitUntil { clock.sleeping >= 1 }, "the housekeeping never waited on the clock")
        clock.advance(by: .seconds(2))
        #expect(await waitUntil { clock.sleeping >= 1 }, "the housekeeping round did not end")
    }

    @Test func metricsAreWrittenAtTheirIntervalOnTheServicesClock() async throws {
        let clock = ManualClock()
        let (service, folder) = try await started("metrics", clock: clock)
        let metrics = folder + "/obscura.prom"
        #expect(FileManager.default.fileExists(atPath: metrics), "no metrics at the start")
        try FileManager.default.removeItem(atPath: metrics)
        // Four rounds of 2 s: 8 s on the clock, under the 10 s interval.
        for _ in 0..<4 { await round(clock) }
        #expect(!FileManager.default.fileExists(atPath: metrics), "metrics rewritten before their interval")
        await round(clock)
        #expect(FileManager.default.fileExists(atPath: metrics), "metrics not rewritten once 10 s passed on the clock since the start")
        await finish(service, folder)
    }

    @Test func aRecordingsLengthIsTheClocksTime() async throws {
        let clock = ManualClock()
        let (service, folder) = try await started("elapsed", clock: clock)
        #expect(await service.startRecording() != nil)
        clock.advance(by: .seconds(90))
        let status = await service.currentStatus()
        #expect(status.state == "recording")
        #expect(abs(status.elapsedSeconds - 90) < 0.001, "elapsed \(status.elapsedSeconds) s after 90 s on the clock")
        await service.stopRecording()
        await finish(service, folder)
    }
}
