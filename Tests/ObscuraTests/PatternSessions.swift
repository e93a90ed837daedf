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

/// The `obscura` this package built, for tests that run it.
let builtObscura = packageRoot + "/.build/debug/obscura"

/// A scratch folder (removed when let go) for a test that runs the built
/// `obscura`, which must exist.
func scratchForBuiltObscura(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TemporaryDirectory {
    try #require(FileManager.default.isExecutableFile(atPath: builtObscura), "build first: swift build", sourceLocation: sourceLocation)
    return try TemporaryDirectory(label)
}
