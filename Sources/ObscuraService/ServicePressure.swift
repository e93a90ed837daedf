import Foundation
import ObscuraHealth

/// The coordinator's system pressure: the board profile's sources (thermal
/// zones, the firmware's `get_throttled`) and the recorder's own backlog,
/// read each housekeeping round (`readHost`), become one level (`SystemPressure`). Each
/// level steps the recording down before the board does it for us: fair
/// caps the frame rate at two thirds of the configured one, serious at half
/// and pauses the preview, critical also halves the bit rate of recordings
/// started from then on. They step back up as the level returns, one level
/// at a time after `settle_seconds`. Each step goes to the journal, the
/// status, the metrics and the recording's marks.
extension RecorderService {
    func followPressure(_ health: HostHealth?) {
        var reading = health?.pressureReading ?? PressureReading()
        reading.encoderBehind = pace?.behind ?? false
        guard let change = pressure.read(reading, at: clock.nanoseconds) else { return }
        status.pressureLevel = change.to.name
        status.pressureReason = change.to == .nominal ? nil : change.why
        status.pressureSteps[change.to > change.from ? "up" : "down", default: 0] += 1
        let done = applyPressure()
        let said = "system pressure \(change.to.name) (was \(change.from.name); \(change.why))" + (done.isEmpty ? "" : ": " + done)
        if change.to > change.from { logger.warning("\(said)") } else { logger.notice("\(said)") }
        opened?.movie.mark(said, sensorTime: clock.nanoseconds)
    }

    /// The current level's steps applied to the open camera; what they are.
    @discardableResult
    func applyPressure() -> String {
        let level = pressure.level
        guard configuration.pressure.stepsDown, let opened, var follower = pace else {
            return configuration.pressure.stepsDown ? "" : "nothing steps down ([pressure] enabled = false)"
        }
        var done: [String] = []
        let ceiling: Double? = switch level {
        case .nominal: nil
        case .fair: follower.nominal * 2 / 3
        case .serious, .critical: follower.nominal / 2
        }
        do {
            try follower.cap(ceiling, device: opened.device, movie: opened.movie)
            pace = follower
            status.cameraFrameRate = follower.rate
            done.append(ceiling == nil ? "frame rate back to \(RecordingPace.fps(follower.rate)) fps" : "frame rate \(RecordingPace.fps(follower.rate)) fps")
        } catch {
            logger.warning("camera \(opened.device.uniqueID): cannot set another frame rate: \(error)")
        }
        if let preview = opened.preview, let connection = opened.session.connections.first(where: { $0.output === preview }) {
            let shown = level < .serious
            if connection.isEnabled != shown {
                connection.isEnabled = shown
                done.append(shown ? "preview back" : "preview paused")
            }
            previewPaused = !shown
        }
        if level == .critical {
            done.append(camera.movieSettings(opened.device, frameRate: opened.frameRate).averageBitRate == nil
                        ? "the bit rate left to the encoder (none configured to halve)" : "new recordings at half the bit rate")
        }
        return done.joined(separator: ", ")
    }

    /// The bit rate for a recording started now: halved while critical.
    func pressedBitRate(_ rate: Int?) -> Int? {
        guard configuration.pressure.stepsDown, pressure.level == .critical else { return rate }
        return rate.map { $0 / 2 }
    }
}
