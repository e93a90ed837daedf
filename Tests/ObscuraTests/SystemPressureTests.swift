import Foundation
import ObscuraFormats
import Logging
import Testing
import TestSupport
import ObscuraHealth
import ObscuraSoftwareCamera
import ObscuraCapture
@testable import ObscuraService

/// The system's pressure: readings to one level, up at once, down a level
/// at a time after the settle time and under the hysteresis.
@Suite struct SystemPressureTests {
    static let second: UInt64 = 1_000_000_000

    static func pressure(settle: Duration = .seconds(30)) -> SystemPressure {
        var s = PressureSettings()
        s.settle = settle
        return SystemPressure(settings: s)
    }

    @Test func eachSourceNamesItsLevel() {
        let p = Self.pressure()
        #expect(p.demanded(by: PressureReading(celsius: 50)).level == .nominal)
        #expect(p.demanded(by: PressureReading(celsius: 72)).level == .fair)
        #expect(p.demanded(by: PressureReading(celsius: 81)) == (.serious, "temperature 81.0 °C"))
        #expect(p.demanded(by: PressureReading(celsius: 90)).level == .critical)
        #expect(p.demanded(by: PressureReading(throttled: 0x1)) == (.serious, "under-voltage"))
        #expect(p.demanded(by: PressureReading(throttled: 0x8)).level == .fair)
        // Only the bits of now: what occurred since boot (bits 16–19) is history.
        #expect(p.demanded(by: PressureReading(throttled: 0x50000)).level == .nominal)
        #expect(p.demanded(by: PressureReading(throttled: 0x5)) == (.critical, "under-voltage and throttled"))
        #expect(p.demanded(by: PressureReading(encoderBehind: true)).level == .fair)
        #expect(p.demanded(by: PressureReading(celsius: 72, throttled: 0x1)).level == .serious)
        var withoutBacklog = PressureSettings()
        withoutBacklog.countsBacklog = false
        #expect(SystemPressure(settings: withoutBacklog).demanded(by: PressureReading(encoderBehind: true)).level == .nominal)
    }

    @Test func upAtOnceDownOneLevelAtATimeAfterSettlingAndUnderTheHysteresis() {
        var p = Self.pressure(settle: .seconds(30))
        var t: UInt64 = 0
        #expect(p.read(PressureReading(celsius: 86), at: t) == SystemPressure.Change(from: .nominal, to: .critical, why: "temperature 86.0 °C"))
        // Just under the critical threshold, but not by the hysteresis: stays.
        t += 60 * Self.second
        #expect(p.read(PressureReading(celsius: 83), at: t) == nil)
        #expect(p.level == .critical)
        // Well under: one level down once 30 s have allowed it.
        t += Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t) == nil)
        t += 29 * Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t) == nil)
        t += Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t)?.to == .serious)
        // The next level needs its own 30 s.
        t += 10 * Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t) == nil)
        t += 20 * Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t) == nil)
        t += 10 * Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t)?.to == .fair)
        // A reading that does not allow it (68 °C: not 5 °C under fair's 70) starts the wait again.
        t += 20 * Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t) == nil)
        t += 5 * Self.second
        #expect(p.read(PressureReading(celsius: 68), at: t) == nil)
        t += 20 * Self.second
        #expect(p.read(PressureReading(celsius: 50), at: t) == nil)
        t += 30 * Self.second
        let last = p.read(PressureReading(celsius: 50), at: t)
        #expect(last == SystemPressure.Change(from: .fair, to: .nominal, why: "back under every threshold"))
    }

    @Test func theProfileNamesTheSourcesAndTheThresholds() throws {
        let document = try TOMLDocument(file: "board.toml", text: """
            [pressure]
            temperature_files = ["/tmp/a/temp"]
            throttled_file = "/tmp/a/get_throttled"
            fair_celsius = 60
            serious_celsius = 70
            critical_celsius = 75
            backlog = false
            """)
        var profile = BoardProfile()
        try profile.readPressure(TOMLReader(document))
        #expect(profile.pressureTemperatureFiles == ["/tmp/a/temp"] && profile.pressureThrottledFile == "/tmp/a/get_throttled")
        #expect(profile.pressure.fairCelsius == 60 && profile.pressure.criticalCelsius == 75 && !profile.pressure.countsBacklog)
        let backwards = try TOMLDocument(file: "board.toml", text: "[pressure]\nfair_celsius = 90")
        #expect { try profile.readPressure(TOMLReader(backwards)) } throws: { "\($0)".contains("fair_celsius (90.0) ≤ serious_celsius (80.0)") }
    }
}

/// The service under pressure on the test-pattern camera: the profile's
/// thermal zone and get_throttled are files this test writes (the service
/// reads them as it reads sysfs). The recording steps down (the camera's
/// rate), and back up a level at a time, each step in the status, the
/// metrics and the recording's marks; the recording goes on.
@Suite(.serialized) struct ServicePressureTests {
    @Test func theRecordingStepsDownUnderPressureAndBackUpWhenItEases() async throws {
        let folder = scratchPath("service-pressure", "steps")
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let temp = folder + "/temp", throttled = folder + "/get_throttled"
        func write(_ celsius: Int, _ flags: String) throws {
            try "\(celsius * 1000)\n".write(toFile: temp, atomically: true, encoding: .utf8)
            try "\(flags)\n".write(toFile: throttled, atomically: true, encoding: .utf8)
        }
        try write(45, "0x0")
        let path = try PatternService.writeConfiguration(in: folder, recording: "segment_seconds = 0", profile: """
            [pressure]
            temperature_files = ["\(temp)"]
            throttled_file = "\(throttled)"
            """, tables: "[pressure]\nsettle_seconds = 1", camera: CaptureDevice.clockedTestPattern)
        let configuration = try ServiceConfiguration.load(path)
        let profile = try BoardProfile.load(configuration.board, from: configuration.file)
        // The service and its camera on a clock moved on a frame interval
        // every 4 ms: its pressure rounds, settling and frame rates are
        // that clock's.
        let clock = ManualClock()
        let driving = clock.drive(by: .nanoseconds(33_333_333), every: .milliseconds(4))
        defer { driving.cancel() }
        let service = try RecorderService(configuration: configuration, profile: profile, logger: Logger(label: "pressure"), clock: clock)
        try await service.start()
        #expect(await service.startRecording() != nil)
        #expect(await waitUntil { await service.currentStatus().frames > 0 })
        func level(_ name: String, rate: Double) async -> Bool {
            await waitUntil(within: .seconds(20)) {
                let s = await service.currentStatus()
                return s.pressureLevel == name && s.cameraFrameRate == rate
            }
        }
        #expect(await level("nominal", rate: 30))
        try write(72, "0x0")
        let seenFair = await level("fair", rate: 20)
        let now = await service.currentStatus()
        #expect(seenFair, "\(now)")
        let inMetrics = await waitUntil { ((try? String(contentsOfFile: folder + "/obscura.prom", encoding: .utf8)) ?? "").contains("obscura_system_pressure{level=\"fair\"} 1") }
        #expect(inMetrics, "\((try? String(contentsOfFile: folder + "/obscura.prom", encoding: .utf8)) ?? "")")
        try write(72, "0x5")
        #expect(await level("critical", rate: 15))
        #expect(await service.currentStatus().pressureReason == "under-voltage and throttled")
        // A recording started now is made at half the bit rate.
        let first = try #require(await service.currentStatus().file)
        await service.stopRecording()
        #expect(await service.startRecording() != nil)
        #expect(await service.currentStatus().bitRate == 500_000)
        try write(40, "0x0")
        #expect(await level("serious", rate: 15))
        #expect(await level("fair", rate: 20))
        #expect(await level("nominal", rate: 30))
        let status = await service.currentStatus()
        #expect(status.pressureSteps == ["up": 2, "down": 3], "\(status.pressureSteps)")
        let file = try #require(status.file)
        let frames = status.frames
        #expect(await waitUntil { await service.currentStatus().frames > frames + 10 }, "the recording goes on")
        await service.stopRecording()
        await service.shutdown()
        let kept = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/rec")) ?? []
        func steps(_ file: String) throws -> [String] {
            guard FileManager.default.fileExists(atPath: file) else { Issue.record("\(file) is not there; the folder holds \(kept)"); return [] }
            return try marks(in: file).map(\.text)
        }
        let before = try steps(first), after = try steps(file)
        #expect(before.map { $0.components(separatedBy: " (").first ?? "" } == ["system pressure fair", "system pressure critical"], "\(before)")
        #expect(before.last?.hasSuffix("frame rate 15 fps, new recordings at half the bit rate") == true, "\(before)")
        #expect(after.map { $0.components(separatedBy: " (").first ?? "" } == ["system pressure serious", "system pressure fair", "system pressure nominal"], "\(after)")
        #expect(after.last?.hasSuffix("frame rate back to 30 fps") == true, "\(after)")
    }
}
