import Foundation
import ObscuraFormats
import ObscuraFleet
import Testing
import TestSupport
@testable import ObscuraRecording
@testable import ObscuraService

@Suite struct MetricsTests {
    @Test func theEncodersLatencyPairsTheNthPacketWithTheNthFrame() {
        var l = EncoderLatency()
        let t0 = ContinuousClock.now
        l.frameIn(at: t0)
        l.frameIn(at: t0 + .milliseconds(33))
        l.frameIn(at: t0 + .milliseconds(66))
        l.packetsOut(0, at: t0 + .milliseconds(70))
        #expect(l.framesInside == 3)
        #expect(l.oldestWait(now: t0 + .milliseconds(100)) == .milliseconds(100))
        l.packetsOut(2, at: t0 + .milliseconds(100))   // 100 and 67 ms
        l.closeWindow()
        #expect(l.mean == .microseconds(83_500))
        #expect(l.maximum == .milliseconds(100))
        #expect(l.framesInside == 1)
        // A window without packets keeps the last mean; the stuck frame's wait grows.
        l.closeWindow()
        #expect(l.mean == .microseconds(83_500))
        #expect(l.oldestWait(now: t0 + .seconds(2)) == .seconds(2) - .milliseconds(66))
        // More packets than frames (a drain) pair with nothing.
        l.packetsOut(5, at: t0 + .seconds(2))
        #expect(l.framesInside == 0 && l.oldestWait() == .zero)
        l.closeWindow()
        // Thousands of frames keep the array small.
        for i in 0..<5000 {
            l.frameIn(at: t0 + .milliseconds(i))
            l.packetsOut(1, at: t0 + .milliseconds(i + 5))
        }
        l.closeWindow()
        #expect(l.mean == .milliseconds(5) && l.framesInside == 0)
    }

    /// The delay from the camera is read from the frame's sensor timestamp
    /// (CLOCK_MONOTONIC): to the encoder when it goes in, to the file when its
    /// packet comes out; the longest of each window, zero after an empty one.
    @Test func theDelayFromTheCameraIsTheLongestOfTheWindow() {
        var l = EncoderLatency()
        let s: UInt64 = 10_000_000_000
        l.frameIn(sensorNanoseconds: s, monotonicNow: s + 40_000_000)                  // 40 ms to the encoder
        l.frameIn(sensorNanoseconds: s + 500_000_000, monotonicNow: s + 620_000_000)  // 120 ms
        l.packetsOut(1, monotonicNow: s + 300_000_000)                                 // 300 ms to the file
        l.packetsOut(1, monotonicNow: s + 700_000_000)                                 // 200 ms
        l.closeWindow()
        #expect(l.cameraToEncoderMax == .milliseconds(120))
        #expect(l.cameraToPacketMax == .milliseconds(300))
        // A frame without a timestamp says nothing; an empty window is zero.
        l.frameIn(sensorNanoseconds: 0, monotonicNow: s + 900_000_000)
        l.packetsOut(1, monotonicNow: s + 950_000_000)
        l.closeWindow()
        #expect(l.cameraToEncoderMax == .zero && l.cameraToPacketMax == .zero)
    }

    @Test func theTextFormatEscapesLabelsAndSpellsNumbersAsPrometheusReadsThem() {
        var m = MetricsText()
        m.add("x_total", .counter, "A help\nwith a newline and a \\.", [([("error", "cannot open \"/dev/video0\"\nC:\\path")], 3)])
        m.add("y", .gauge, "Y.", 0.25)
        m.add("z", .gauge, "Left out: no samples.", [])
        m.add("w", .gauge, "W.", [([("a", "1")], .nan), ([("a", "2")], .infinity)])
        #expect(m.text == """
            # HELP x_total A help\\nwith a newline and a \\\\.
            # TYPE x_total counter
            x_total{error="cannot open \\"/dev/video0\\"\\nC:\\\\path"} 3
            # HELP y Y.
            # TYPE y gauge
            y 0.25
            # HELP w W.
            # TYPE w gauge
            w{a="1"} NaN
            w{a="2"} +Inf

            """)
    }

    @Test func theStatusBecomesMetricsNamedInTheDocs() throws {
        var s = ServiceStatus()
        s.state = "recording"
        s.frames = 90
        s.framesTotal = 390
        s.framesPerSecond = 29.97
        s.encoderLatencySeconds = 0.05
        s.lastError = "camera: gone"
        s.lastErrorTime = 1_700_000_000
        s.lastErrorReason = "camera"
        s.errors = ["camera": 2]
        s.stageRestarts = ["camera": 2]
        s.stageGapSeconds = ["camera": 1.5]
        s.storages = [StorageStatus(name: "recordings", path: "/var/lib/obscura/recordings", freeBytes: 1 << 30, usedBytes: 5, quotaBytes: 0)]
        s.host.temperatures = ["cpu-thermal": 51.6]
        s.host.throttled = 0x50005
        s.host.clockSynchronized = true
        s.host.clockSource = "systemd-timesyncd"
        s.cameraFrameRate = 20
        s.configuredFrameRate = 30
        s.rateStepsDown = 1
        s.pictureWatched = ["dark", "frozen", "no_detail"]
        s.pictureConditions = ["no_detail"]
        s.pictureEpisodes = ["no_detail": 2]
        s.soundWatched = ["clipping", "silent"]
        s.soundConditions = ["silent"]
        s.soundEpisodes = ["silent": 1]
        s.pressureLevel = "serious"
        s.pressureSteps = ["up": 2, "down": 1]
        let text = s.metricsText
        for line in ["obscura_state{state=\"recording\"} 1", "obscura_state{state=\"idle\"} 0", "obscura_frames_total 390",
                     "obscura_recording_frames 90", "obscura_recording_frames_per_second 29.97", "obscura_encoder_latency_seconds 0.05",
                     "obscura_last_error_timestamp_seconds{reason=\"camera\"} 1700000000",
                     "obscura_errors_total{reason=\"camera\"} 2", "obscura_errors_total{reason=\"storage\"} 0",
                     "obscura_stage_restarts_total{stage=\"camera\"} 2", "obscura_stage_gap_seconds_total{stage=\"camera\"} 1.5",
                     "obscura_storage_free_bytes{storage=\"recordings\",path=\"/var/lib/obscura/recordings\"} 1073741824",
                     "obscura_soc_temperature_celsius{zone=\"cpu-thermal\"} 51.6",
                     "obscura_throttled{condition=\"under_voltage\"} 1", "obscura_throttled{condition=\"throttled\"} 1",
                     "obscura_throttled{condition=\"arm_frequency_capped\"} 0", "obscura_throttled{condition=\"throttling_occurred\"} 1",
                     "obscura_clock_synchronized{source=\"systemd-timesyncd\"} 1",
                     "obscura_camera_frame_rate 20", "obscura_configured_frame_rate 30",
                     "obscura_frame_rate_steps_total{direction=\"down\"} 1", "obscura_frame_rate_steps_total{direction=\"up\"} 0",
                     "obscura_picture_condition{condition=\"no_detail\"} 1", "obscura_picture_condition{condition=\"dark\"} 0",
                     "obscura_picture_condition_episodes_total{condition=\"no_detail\"} 2",
                     "obscura_picture_condition_episodes_total{condition=\"frozen\"} 0",
                     "obscura_sound_condition{condition=\"silent\"} 1", "obscura_sound_condition{condition=\"clipping\"} 0",
                     "obscura_sound_condition_episodes_total{condition=\"silent\"} 1",
                     "obscura_system_pressure{level=\"serious\"} 1", "obscura_system_pressure{level=\"nominal\"} 0",
                     "obscura_system_pressure_steps_total{direction=\"up\"} 2", "obscura_system_pressure_steps_total{direction=\"down\"} 1"] {
            #expect(text.split(separator: "\n").contains(Substring(line)), "\(line) not in:\n\(text)")
        }
        // Every metric docs/metrics.md (the service's) and docs/fleet.md (the collector's) list is one the
        // service or the fleet's collector writes, and the other way round.
        let readme = try ["metrics.md", "fleet.md"].map { try String(contentsOfFile: packageRoot + "/docs/" + $0, encoding: .utf8) }
            .joined(separator: "\n")
        var totals = KioskTotals()
        totals.lastAttempt = 1
        totals.lastSuccess = 1
        totals.lastFailure = 1
        let fleet = FleetMetrics.text([("k", totals)], running: false)
        let written = Set((text + fleet).split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
        let documented = Set(readme.split(separator: "`").filter { $0.hasPrefix("obscura_") && !$0.contains(" ") && !$0.contains("{") }.map(String.init))
        #expect(written.subtracting(documented).isEmpty, "written, in neither docs/metrics.md nor docs/fleet.md: \(written.subtracting(documented))")
        #expect(documented.subtracting(written).isEmpty, "in docs/metrics.md or docs/fleet.md, not written: \(documented.subtracting(written))")
    }

    @Test func theBoardsHealthIsReadFromSysfsAndTheClockFromTimesyncd() throws {
        let dir = try TemporaryDirectory()
        let fm = FileManager.default
        for (zone, type, milli) in [("thermal_zone0", "cpu-thermal", "48312"), ("thermal_zone1", "cpu-thermal", "50000")] {
            try fm.createDirectory(atPath: "\(dir.path)/sys/class/thermal/\(zone)", withIntermediateDirectories: true)
            try "\(type)\n".write(toFile: "\(dir.path)/sys/class/thermal/\(zone)/type", atomically: true, encoding: .utf8)
            try "\(milli)\n".write(toFile: "\(dir.path)/sys/class/thermal/\(zone)/temp", atomically: true, encoding: .utf8)
        }
        try fm.createDirectory(atPath: "\(dir.path)/sys/devices/platform/soc/soc:firmware", withIntermediateDirectories: true)
        try "0x50000\n".write(toFile: "\(dir.path)/sys/devices/platform/soc/soc:firmware/get_throttled", atomically: true, encoding: .utf8)
        var h = HostHealth.read(root: dir.path)
        #expect(h.temperatures == ["cpu-thermal": 48.312, "cpu-thermal-thermal_zone1": 50])
        #expect(h.throttled == 0x50000)
        #expect(h.clockSynchronized == nil && h.clockSource == "unknown")
        try fm.createDirectory(atPath: "\(dir.path)/run/systemd/timesync", withIntermediateDirectories: true)
        _ = fm.createFile(atPath: "\(dir.path)/run/systemd/timesync/synchronized", contents: nil)
        h = HostHealth.read(root: dir.path)
        #expect(h.clockSynchronized == true && h.clockSource == "systemd-timesyncd")
    }

    /// The service writes the file every interval, whole (never a half file),
    /// readable by node_exporter's user; a folder it cannot write is said
    /// once, naming the key, and the recording goes on.
    @Test(arguments: [true, false])
    func theServiceWritesItsMetricsOrSaysWhyNotAndRecordsOn(writable: Bool) throws {
        let obscura = packageRoot + "/.build/debug/obscura"
        let dir = try TemporaryDirectory()
        let metrics = writable ? "\(dir.path)/metrics/obscura.prom" : "\(dir.path)/missing/obscura.prom"
        if writable { try FileManager.default.createDirectory(atPath: "\(dir.path)/metrics", withIntermediateDirectories: true) }
        // (The fast pattern: its frames' times are 30 a second of camera
        // time whatever this machine's load, as a camera's are.)
        let service = try PatternService(in: dir.path, metrics: metrics, camera: "synthetic:fast")
        let process = service.process, err = service.standardError
        defer { if process.isRunning { process.terminate() } }
        _ = waitUntilBlocking { FileManager.default.fileExists(atPath: service.socket) }
        let start = try runProgram(obscura, ["ctl", "--socket", service.socket, "record", "start"])
        #expect(start.status == 0, "\(start.stdout)\(start.stderr)")
        // Until the file shows frames (written every second here).
        var text = ""
        var status = ServiceStatus()
        _ = try waitUntilBlocking(every: .milliseconds(100)) {
            status = try JSONDecoder().decode(ServiceStatus.self, from: Data(try ControlClient.send("status", to: service.socket).utf8))
            text = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
            return status.frames > 30 && (!writable || (Self.sample("obscura_recording_frames", in: text) ?? 0) > 30)
        }
        let stop = try runProgram(obscura, ["ctl", "--socket", service.socket, "record", "stop"])
        #expect(stop.status == 0)
        process.terminate()
        process.waitUntilExit()
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status.frames > 30, "\(status)")
        if writable {
            #expect(text.contains("obscura_state{state=\"recording\"} 1\n"), "\(text)")
            // The camera's 30 fps, from its timestamps.
            #expect(abs((Self.sample("obscura_recording_frames_per_second", in: text) ?? 0) - 30) < 1, "\(text)")
            #expect(text.contains("# TYPE obscura_frames_total counter\n"))
            var st = stat()
            #expect(stat(metrics, &st) == 0 && st.st_mode & 0o777 == 0o644)
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(dir.path)/metrics") == ["obscura.prom"])
            #expect(status.metrics == metrics)
            #expect(log.contains("metrics every 1 s in \(metrics)"), "\(log)")
        } else {
            let said = log.split(separator: "\n").filter { $0.contains("metrics.file: cannot write \(metrics)") }
            #expect(said.count == 1, "\(log)")
            #expect(said.first?.contains("recording goes on") == true)
            #expect(status.metrics?.hasPrefix("metrics.file: cannot write") == true)
            #expect(status.state == "recording")
        }
    }

    static func sample(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }
}
