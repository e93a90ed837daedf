import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The capture core (CaptureSession, CaptureDevice) on vimc through libcamera.
@Suite struct CaptureBoardTests {
    let obscura = ".build/debug/obscura"

    private func frames(_ output: String) -> [(sequence: UInt64, timestamp: UInt64)] {
        output.split(separator: "\n").filter { $0.hasPrefix("frame ") }.compactMap { line in
            var seq: UInt64?, ts: UInt64?
            for field in line.split(separator: " ") {
                if field.hasPrefix("seq=") { seq = UInt64(field.dropFirst(4)) }
                if field.hasPrefix("ts=") { ts = UInt64(field.dropFirst(3)) }
            }
            guard let seq, let ts else { return nil }
            return (seq, ts)
        }
    }

    @Test func sizesAreConfiguredAndAdjustmentsReported() throws {
        let result = try VirtualBoard.run(scenario: "Capture/sizesAreConfiguredAndAdjustmentsReported")
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        #expect(text.contains("the camera adjusted the configuration: stream 0 size 640x480 → 636x480"))
        #expect(text.contains("stream BGR888 636x480"))
        // vimc's widths step by 6: 1280 is adjusted too, 1920 is taken as asked.
        #expect(text.contains("stream 0 size 1280x720 → 1278x720"))
        #expect(text.contains("stream BGR888 1278x720"))
        #expect(text.contains("stream BGR888 1920x1080"))
        #expect(!text.contains("size 1920x1080 →"))
        // Each size: three frames delivered and every one given back. (A
        // frame the output dropped while behind, on a slow board, is counted
        // as dropped and given back too; it proves nothing wrong.)
        let summaries = text.split(separator: "\n").filter { $0.hasPrefix("delivered 3 frames, dropped ") && $0.hasSuffix(", still held 0") }
        #expect(summaries.count == 3, "\(text)")
    }

    @Test func sixtyFramesInOrderAndEveryOneReleased() throws {
        let result = try VirtualBoard.run("\(obscura) stream --frames 60 --preset vga640x480")
        #expect(result.status == 0, "\(result.stderr)")
        let seen = frames(result.stdout)
        #expect(seen.count == 60)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.sequence < $1.sequence && $0.timestamp < $1.timestamp })
        #expect(result.stdout.contains("delivered 60 frames"))
        #expect(result.stdout.contains("still held 0"))
        #expect(result.stdout.contains("event didStartRunning"))
        #expect(result.stdout.contains("event didStopRunning"))
    }

    /// Frames held while the running session adds an output and changes its
    /// preset keep their pixels (libcamera's buffers are reallocated under
    /// them), and the camera keeps delivering.
    @Test func framesHeldAcrossReconfigurationsKeepTheirPixels() throws {
        let result = try VirtualBoard.run("\(obscura) stream --frames 80 --preset vga640x480 --quiet --hold-across-reconfiguration 2")
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        #expect(text.contains("added an output while running"))
        #expect(text.contains("preset vga640x480 → hd1280x720 while running"))
        let reports = text.split(separator: "\n").filter { $0.hasPrefix("held 2 frames") }
        #expect(reports.count == 2, "\(text)")
        #expect(reports.allSatisfy { $0.hasSuffix(": 2 intact") }, "\(reports)")
        #expect(text.contains("delivered 80 frames"))
        #expect(text.contains("still held 0"))
        #expect(!text.contains("event wasInterrupted"))
        #expect(!text.contains("did not finish"))
    }

    @Test func brightnessAndContrastReachTheSensor() throws {
        let result = try VirtualBoard.run(scenario: "Capture/brightnessAndContrastReachTheSensor")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("frame ") }
        #expect(lines.count == 6)
        // The request that carried the controls reports them in its metadata.
        #expect(lines.first?.contains("requested: Brightness=0.8") == true)
        #expect(lines.first?.contains("Contrast=1.5") == true)
        // And the sensor's pattern is brighter with them than with -0.8.
        let means = lines.compactMap { $0.split(separator: " ").last.flatMap { Double($0.dropFirst(5)) } }
        #expect(means.count == 6)
        #expect(means[2] > means[5] + 40, "means \(means)")
    }

    @Test func anUnsupportedControlIsAClearError() throws {
        let result = try VirtualBoard.run("\(obscura) stream --frames 1 --set ExposureValue=1")
        #expect(result.status != 0)
        #expect(result.stderr.contains("camera \"platform/vimc.0 Sensor B\" does not support exposure target bias: the camera has no ExposureValue control"))
    }

    @Test func unbindingIsReportedWithinASecondAndTheSessionRecoversAfterBind() throws {
        let result = try VirtualBoard.run(scenario: "Capture/unbindingIsReportedWithinASecondAndTheSessionRecoversAfterBind")
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        /// The uptime of the first line with this prefix at or after `since`.
        func uptime(of prefix: String, since: Double = 0) -> Double? {
            lines.filter { $0.hasPrefix(prefix) }
                .compactMap { $0.split(separator: "=").last.flatMap { Double($0) } }
                .first { $0 >= since }
        }
        let unbound = try #require(uptime(of: "unbind"))
        let bound = try #require(uptime(of: "bind"))
        // A board starved for a moment may show a stall before the unbind
        // (an interruption that ends by itself); the unbind's is the first after it.
        let interrupted = try #require(uptime(of: "event wasInterrupted", since: unbound), "no interruption: \(result.stdout)")
        let ended = try #require(uptime(of: "event interruptionEnded", since: interrupted), "no recovery: \(result.stdout)")
        // (An upper bound, read from after the unbind had returned.)
        let afterUnbind = try #require(uptime(of: "unbound"))
        #expect(interrupted - afterUnbind < 1.0, "interruption reported \(interrupted - afterUnbind) s after the unbind had returned")
        #expect(ended > bound, "recovered before the camera was back?")
        // Frames flow again after the recovery, in order, with new timestamps.
        let frameTimes = lines.filter { $0.hasPrefix("frame ") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("ts=") }.flatMap { UInt64($0.dropFirst(3)) }
        }
        let after = frameTimes.filter { Double($0) / 1e9 > ended }
        #expect(after.count >= 10, "\(after.count) frames after recovery")
        #expect(result.stdout.contains("event didStopRunning"))
    }
}
}
