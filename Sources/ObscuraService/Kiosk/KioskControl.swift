import Foundation
import ObscuraFormats
import ObscuraPhoto
import ObscuraSystem

/// The control socket's commands for a kiosk of cameras: `camera NAME …`
/// goes to that camera; the others to every camera, answered together.
extension Kiosk {
    public func command(_ line: String) async -> String {
        switch ControlCommand.parse(line) {
        case .failure(let reply): return reply.line
        case .success(.camera(let name, let inner)):
            guard let member = members.first(where: { $0.name == name }) else {
                return ControlReply(false, "no camera \"\(name)\"; this kiosk's cameras: \(members.map(\.name).joined(separator: ", "))").line
            }
            if case .camera = inner { return ControlReply(false, "one camera at a time: camera NAME COMMAND").line }
            if case .recordStart = inner { await pressedAlone() }
            return await member.service.command(line.split(separator: " ").dropFirst(2).joined(separator: " "))
        case .success(.status): return ControlReply.status(await currentStatus())
        case .success(.recordStart):
            let files = await startAll()
            let started = files.compactMap { $0.1 }
            let said = files.map { "\($0.0): " + ($0.1.map { ($0 as NSString).lastPathComponent } ?? "not recording") }
            return ControlReply(!started.isEmpty, "recording " + said.joined(separator: ", "), file: started.first).line
        case .success(.recordStop):
            await stopAll()
            return ControlReply(true, "stopped").line
        case .success(.recordToggle):
            await toggleRecording()
            return ControlReply(true, (await currentStatus()).state).line
        case .success(.photo):
            let taken = await takePhotos()
            let paths = taken.compactMap { try? $0.1.get() }
            let said = taken.map { name, result in
                switch result {
                case .success(let path): "\(name): \((path as NSString).lastPathComponent)"
                case .failure(let f): "\(name): \(f.message)"
                }
            }
            return ControlReply(!paths.isEmpty, "photo " + said.joined(separator: ", "), file: paths.first).line
        case .success(.flash(let mode)):
            await setFlash(mode)
            return ControlReply(true, "flash \(mode.rawValue)").line
        }
    }

    /// What `obscura status` shows: the first camera's status as the
    /// kiosk's, with every camera's own under `cameras`, the kiosk's state
    /// (recording while any camera records), and how far apart the
    /// recording cameras' first frames were.
    public func currentStatus() async -> ServiceStatus {
        var each: [CameraStatus] = []
        for member in members { each.append(CameraStatus(name: member.name, status: await member.service.currentStatus())) }
        var kiosk = each[0].status
        let states = each.map(\.status.state)
        kiosk.state = ["stopping", "recording", "error", "photo", "idle"].first { states.contains($0) } ?? kiosk.state
        kiosk.camera = each.map { "\($0.name) (\($0.status.camera ?? "none"))" }.joined(separator: ", ")
        kiosk.cameras = each
        let zeros = each.compactMap(\.status.recordingTimeZero)
        if zeros.count > 1, let first = zeros.min(), let last = zeros.max() { kiosk.startSkewMilliseconds = (last - first) * 1000 }
        kiosk.recordPressed = pressed.map { Double($0) / 1e9 }
        kiosk.flash = flashMode.rawValue
        kiosk.metrics = metricsNote ?? kiosk.metrics
        return kiosk
    }

    /// The metrics file: every camera's families under its `camera` label.
    func writeMetrics() async {
        guard let file = metrics?.file, metrics?.due(at: clock.now) == true else { return }
        var m = MetricsText()
        for member in members {
            m.labels = [("camera", member.name)]
            await member.service.currentStatus().addMetrics(to: &m)
        }
        let text = m.text
        do {
            try await Task.detached(executorPreference: fileWork) { try file.write(text) }.value
            if metricsNote != file.path { logger.info("metrics every \(configuration.metricsInterval) s in \(file.path)") }
            metricsNote = file.path
        } catch {
            let problem = "metrics.file: cannot write \(file.path): \(error); no metrics, recording goes on"
            if metricsNote != problem { logger.error("\(problem)") }
            metricsNote = problem
        }
    }
}
