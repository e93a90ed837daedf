import Foundation
import TestSupport
import Testing
import ObscuraSystem
@testable import ObscuraCapture
@testable import ObscuraSoftwareCamera

/// A session on a test-pattern camera with `outputs`, configured at `preset`.
func patternSession(_ outputs: [any CaptureOutput], camera: SyntheticCamera = SyntheticCamera(),
                    preset: CaptureSession.Preset = .vga640x480,
                    clock: any WaitingClock = SystemWaitingClock()) throws -> CaptureSession {
    let session = CaptureSession(clock: clock)
    session.beginConfiguration()
    try session.addInput(CaptureDeviceInput(device: CaptureDevice(source: camera)))
    for output in outputs { try session.addOutput(output) }
    try session.setSessionPreset(preset)
    try session.commitConfiguration()
    return session
}

/// A test-pattern camera whose frames come as fast as the pipeline gives
/// its buffers back, stamped on a virtual clock at the frame rate: for a
/// test of what a recording makes of camera time (its length, segments,
/// pre-record, marks), which then takes no more real time than the work.
func fastPatternCamera() -> SyntheticCamera { SyntheticCamera(pacing: .asFastAsBuffersReturn) }

/// A session on a test-pattern camera paced by `clock`: its frames come
/// only as the test moves that clock on (`CaptureSession.frames(_:on:)`),
/// and the session judges silences on the same clock.
func pacedSession(_ outputs: [any CaptureOutput], clock: ManualClock, preset: CaptureSession.Preset = .vga640x480) throws
    -> (SyntheticCamera, CaptureSession) {
    let camera = SyntheticCamera(pacing: .clock(clock))
    return (camera, try patternSession(outputs, camera: camera, preset: preset, clock: clock))
}

/// `name` in a folder of this test process's own under the temporary
/// folder (`obscura-KIND-PID`), made when missing.
func scratchPath(_ kind: String, _ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-\(kind)-\(getpid())")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent(name).path
}

extension CaptureSession {
    /// Waits until the camera has delivered `count` more frames than now:
    /// a stretch of recording measured in the camera's frames, not in time.
    func delivers(_ count: Int) async -> Bool {
        let base = deliveredFrameCount
        return await waitUntil(within: .seconds(60)) { self.deliveredFrameCount >= base + count }
    }
}

extension CaptureSession {
    /// Moves `clock`, which paces the camera, on a frame interval at a time
    /// until the camera has delivered `count` more frames; false if they
    /// did not come within 30 s of real time. (A step taken while the
    /// camera's pacer was between two waits brings no frame; the next does.)
    func frames(_ count: Int, on clock: ManualClock, interval: Duration = .nanoseconds(33_333_333)) async -> Bool {
        let target = deliveredFrameCount + count
        let deadline = ContinuousClock.now + .seconds(30)
        while deliveredFrameCount < target {
            guard ContinuousClock.now < deadline else { return false }
            let before = deliveredFrameCount
            _ = await waitUntil(within: .seconds(1), every: .milliseconds(1)) { clock.sleeping > 0 }
            clock.advance(by: interval)
            _ = await waitUntil(within: .milliseconds(200), every: .milliseconds(1)) { self.deliveredFrameCount > before }
        }
        return true
    }

    /// Moves `clock` on by `duration` at once, then waits until the stall
    /// watchdog has judged the silence twice since (it looks every 100 ms of
    /// real time): what it makes of the time passed is then done.
    func pass(_ duration: Duration, on clock: ManualClock) async -> Bool {
        clock.advance(by: duration)
        let checks = stallChecks
        return await waitUntil(within: .seconds(10), every: .milliseconds(5)) { self.stallChecks >= checks + 2 }
    }
}

/// The `obscura` this package built, for tests that run it.
let builtObscura = packageRoot + "/.build/debug/obscura"

/// A scratch folder (removed when let go) for a test that runs the built
/// `obscura`, which must exist.
func scratchForBuiltObscura(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TemporaryDirectory {
    try #require(FileManager.default.isExecutableFile(atPath: builtObscura), "build first: swift build", sourceLocation: sourceLocation)
    return try TemporaryDirectory(label)
}
