import Foundation
import ObscuraHealth

/// The system's pressure and its steps: the board profile's sources (thermal
/// zones, the firmware's `get_throttled`) and the recorder's own backlog,
/// read each housekeeping round, become one level (`SystemPressure`). Each
/// level steps the recording down before the board does it for us: fair
/// caps the frame rate at two thirds of the configured one, serious at half
/// and pauses the preview, critical also halves the bit rate of recordings
/// started from then on. They step back up as the level returns, one level
/// at a time after `settle_seconds`.
struct PressureSteps: Sendable {
    private(set) var pressure: SystemPressure
    /// Whether anything steps down (`[pressure] enabled`).
    let stepsDown: Bool

    init(settings: PressureSettings, stepsDown: Bool) {
        pressure = SystemPressure(settings: settings)
        self.stepsDown = stepsDown
    }

    var level: PressureLevel { pressure.level }

    /// One round's reading; the change of level, if any.
    mutating func read(_ health: HostHealth?, encoderBehind: Bool, at time: UInt64) -> SystemPressure.Change? {
        var reading = health?.pressureReading ?? PressureReading()
        reading.encoderBehind = encoderBehind
        return pressure.read(reading, at: time)
    }

    /// What the current level's steps did to `camera`, in words, and what
    /// could not be done.
    struct Applied {
        var done: [String] = []
        var problem: String?
    }

    /// The current level's steps applied to the open camera (its frame rate
    /// cap, its preview). `bitRate`: the configured one, to say what
    /// critical does to it.
    func apply(to camera: inout OpenCamera, configuredBitRate: Int?) -> Applied {
        var applied = Applied()
        guard stepsDown else { return applied }
        let opened = camera.opened, level = pressure.level
        let ceiling: Double? = switch level {
        case .nominal: nil
        case .fair: camera.pace.nominal * 2 / 3
        case .serious, .critical: camera.pace.nominal / 2
        }
        do {
            try camera.pace.cap(ceiling, device: opened.device, movie: opened.movie)
            let fps = RecordingPace.fps(camera.pace.rate)
            applied.done.append(ceiling == nil ? "frame rate back to \(fps) fps" : "frame rate \(fps) fps")
        } catch {
            applied.problem = "camera \(opened.device.uniqueID): cannot set another frame rate: \(error)"
        }
        if let preview = opened.preview, let connection = opened.session.connections.first(where: { $0.output === preview }) {
            let shown = level < .serious
            if connection.isEnabled != shown {
                connection.isEnabled = shown
                applied.done.append(shown ? "preview back" : "preview paused")
            }
            camera.previewPaused = !shown
        }
        if level == .critical {
            applied.done.append(configuredBitRate == nil ? "the bit rate left to the encoder (none configured to halve)"
                                : "new recordings at half the bit rate")
        }
        return applied
    }

    /// The bit rate for a recording started now: halved while critical.
    func bitRate(_ rate: Int?) -> Int? {
        guard stepsDown, pressure.level == .critical else { return rate }
        return rate.map { $0 / 2 }
    }
}

/// The coordinator's side: each step goes to the journal, the status, the
/// metrics and the recording's marks.
extension RecorderService {
    func followPressure(_ health: HostHealth?) {
        guard let change = pressure.read(health, encoderBehind: camera.open?.pace.behind ?? false, at: clock.nanoseconds) else { return }
        status.pressureLevel = change.to.name
        status.pressureReason = change.to == .nominal ? nil : change.why
        status.pressureSteps[change.to > change.from ? "up" : "down", default: 0] += 1
        let done = applyPressure()
        let said = "system pressure \(change.to.name) (was \(change.from.name); \(change.why))" + (done.isEmpty ? "" : ": " + done)
        if change.to > change.from { logger.warning("\(said)") } else { logger.notice("\(said)") }
        camera.opened?.movie.mark(said, sensorTime: clock.nanoseconds)
    }

    /// The current level's steps applied to the open camera; what they are.
    @discardableResult
    func applyPressure() -> String {
        guard pressure.stepsDown else { return "nothing steps down ([pressure] enabled = false)" }
        guard let opened = camera.opened else { return "" }
        let configured = setup.movieSettings(opened.device, frameRate: opened.frameRate).averageBitRate
        var applied = PressureSteps.Applied()
        camera.update { [pressure] open in applied = pressure.apply(to: &open, configuredBitRate: configured) }
        if let problem = applied.problem { logger.warning("\(problem)") }
        status.cameraFrameRate = camera.open?.pace.rate ?? status.cameraFrameRate
        return applied.done.joined(separator: ", ")
    }
}
