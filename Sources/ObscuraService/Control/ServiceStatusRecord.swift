@_exported import ObscuraControl
import Foundation
import ObscuraControl
import ObscuraPhoto

public struct PhotoFailure: Error, Sendable {
    public let message: String
}

/// What kind of error the service met: the metrics' `reason` label, a fixed
/// set (the error's text, which names the file or device, stays in the
/// journal and `obscura status`).
public enum ErrorReason: String, Sendable, CaseIterable {
    case camera, encoder, storage, drive, gpio, photo, recording
}

extension ServiceStatus {
    mutating func noteError(_ message: String, reason: ErrorReason, at time: Date) {
        lastError = message
        lastErrorTime = time.timeIntervalSince1970
        lastErrorReason = reason.rawValue
        errors[reason.rawValue, default: 0] += 1
    }

    /// What `obscura status` shows: this record with the recording in
    /// progress (`file`, nil when none: its counters zero) and the totals of
    /// those finished added in.
    func snapshot(state: String, file: String?, elapsedSeconds: Double, finished: RecordingTotals, preview: String?) -> ServiceStatus {
        var s = self
        s.state = state
        s.file = file
        s.elapsedSeconds = elapsedSeconds
        if file == nil {
            s.bytes = 0
            s.droppedFrames = 0
            s.frames = 0
            s.framesPerSecond = 0
            s.framesInEncoder = 0
            s.skippedFramesTotal = 0
            s.pacedFrames = 0
        }
        s.framesTotal = finished.frames + s.frames
        s.bytesTotal = finished.bytes + s.bytes
        s.droppedFramesTotal = finished.dropped + s.droppedFrames
        s.skippedFramesTotal += finished.skipped
        s.pacedFramesTotal = finished.paced + s.pacedFrames
        s.freeBytes = storages.first { $0.name == "recordings" }?.freeBytes
        s.preview = preview
        return s
    }
}
