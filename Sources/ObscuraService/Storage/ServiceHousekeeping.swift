import Foundation
import Logging
import ObscuraAge
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraGPIO
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraPhoto
import ObscuraPreview
import ObscuraRecording
import ObscuraSystem

/// The coordinator's housekeeping round: the camera revived, the watchdog
/// kept (or not, for a wedged recording), health, pace, the drive, the
/// storages, the clock's renames and the metrics file.
extension RecorderService {
    /// Every two seconds: retry what failed, keep storage in bounds, tell
    /// systemd's watchdog the service is alive — unless a recording has
    /// stopped advancing while its camera goes on delivering (RecordingLiveness).
    func housekeeping() async {
        let interval = notifier.watchdogInterval.map { min($0, .seconds(2)) } ?? .seconds(2)
        while !stopping {
            try? await clock.sleep(for: interval)
            if stopping { break }
            await reviveCamera()
            await keepAlive()
            let health = await readHost()
            followPace()
            followPressure(health)
            await followDrive()
            await measureStorage()
            await followClock()
            await writeMetrics()
        }
    }

    /// The board's sensors and clock, read once (the status, the metrics and
    /// the pressure all take this one reading), from the profile's files.
    /// sysfs reads can block (a sensor on I²C): off the pool.
    @discardableResult
    func readHost() async -> HostHealth? {
        let files = profile.pressureTemperatureFiles, throttled = profile.pressureThrottledFile
        let health = try? await onFileThread { HostHealth.read(temperatureFiles: files, throttledFile: throttled) }
        if let health { status.host = health }
        return health
    }

    /// A camera gone for `cameraGiveUp` is opened afresh; out of the error
    /// state once a camera is there and the card has room.
    func reviveCamera() async {
        if let since = outages.cameraSince, opened?.session.isInterrupted == true, clock.now - since > cameraGiveUp {
            logger.warning("the camera has been gone for \(cameraGiveUp): opening it afresh")
            await dropCamera()
            if !state.isError { fail("camera lost", reason: .camera) }
        }
        guard state.isError, !outages.encoderDown else { return }
        if opened == nil { await openCamera() }
        // (A session waiting for its lost camera is not one to use yet.)
        guard let failure = state.failure, state.isError, opened.map({ !$0.session.isInterrupted }) == true else { return }
        let cameraError = failure.message.hasPrefix("camera")
        let free = status.storages.first { $0.name == "recordings" }?.freeBytes ?? Int.max
        if cameraError || free >= configuration.minFreeSpaceBytes { enter(.idle) }
    }

    /// The watchdog's keep-alive, unless the recording is wedged. A recording
    /// held up by a drive that does not answer, or inside a call into its
    /// storage that has not returned (a drive going away, a card that
    /// stalls), is not a wedged recorder until `driveHangGrace`: systemd
    /// then restarts the service, which records to the card.
    func keepAlive() async {
        let recording = state.isRecording && opened?.session.isRunning == true
        let onHungDrive = recording && self.recording?.onDrive == true
        let waitingOnDrive = onHungDrive ? await storage.driveHangsWithinGrace : false
        let wait = recording ? opened?.movie.storageWait : nil
        if let (warning, line) = watchdog.storageWait.look(wait) {
            if warning { logger.warning("\(line)") } else { logger.notice("\(line)") }
        }
        let waiting = waitingOnDrive || wait.map { $0 < StorageTargets.driveHangGrace } == true
        let wedge = watchdog.liveness.look(written: recording && !waiting ? opened?.movie.progress.frames ?? 0 : nil,
                                  delivered: opened?.session.deliveredFrameCount ?? 0, now: clock.now)
        wedged = wedge != nil
        if let wedge {
            logger.error("the recording has not advanced for \(wedge.stalled) while the camera delivered \(wedge.delivered) frames; no watchdog keep-alive")
        } else {
            notifier.notify("WATCHDOG=1\nSTATUS=\(statusLine)")
        }
    }

    func measureStorage() async {
        status.storages = await storage.measure()
    }

    /// Once the clock is known to be right: wall-clock names from now on, and
    /// this boot's files named before it renamed (also those finished later,
    /// e.g. the rest of a recording that began before).
    func followClock() async {
        let synchronized = status.host.clockSynchronized == true
        if synchronized != clockSynchronized {
            clockSynchronized = synchronized
            logger.notice(synchronized ? "the clock is synchronised (\(status.host.clockSource)): files get wall-clock names"
                          : "the clock is no longer known to be synchronised: files get boot-relative names")
        }
        guard synchronized else { return }
        let result = await storage.renameBootNamed()
        for (old, new) in result.renamed {
            logger.notice("renamed \(old) to \((new as NSString).lastPathComponent): the clock is now known")
            if status.lastRecording == old { status.lastRecording = new }
        }
        for problem in result.problems where said.first(problem) {
            logger.warning("\(problem)")
        }
    }

    /// The metrics file, every `metrics.interval_seconds`. A file that
    /// cannot be written is said once (naming the key), and recording goes on.
    func writeMetrics() async {
        guard let metricsFile = metrics?.file, metrics?.due(at: clock.now) == true else { return }
        let text = currentStatus().metricsText
        do {
            try await onFileThread { try metricsFile.write(text) }
            if status.metrics != metricsFile.path {
                logger.info("metrics every \(configuration.metricsInterval) s in \(metricsFile.path)")
                status.metrics = metricsFile.path
            }
        } catch {
            let problem = "metrics.file: cannot write \(metricsFile.path): \(error); no metrics, recording goes on"
            if status.metrics != problem {
                logger.error("\(problem)")
                status.metrics = problem
            }
        }
    }
}
