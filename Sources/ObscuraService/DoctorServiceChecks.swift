import Foundation
import ObscuraGPIO
import ObscuraSystem

/// The doctor's checks of the retrieval account, the GPIO lines and the
/// running service (see `Doctor`).
extension DoctorChecks {
    /// The retrieval account: sshd's drop-in, the account, its chroot and its bind mounts.
    static func retrieval(root: String) -> DoctorCheck {
        let fix = "reinstall the package (sudo apt install --reinstall obscura), then sudo systemctl reload ssh"
        let dropIn = root + "/etc/ssh/sshd_config.d/obscura-fetch.conf"
        guard let conf = try? String(contentsOfFile: dropIn, encoding: .utf8) else {
            return DoctorCheck("retrieval", .fail, "no \(dropIn)", fix: fix)
        }
        for needed in ["Match User obscura-fetch", "ChrootDirectory /srv/obscura", "ForceCommand internal-sftp"] where !conf.contains(needed) {
            return DoctorCheck("retrieval", .fail, "\(dropIn) lacks \"\(needed)\"", fix: fix)
        }
        let main = (try? String(contentsOfFile: root + "/etc/ssh/sshd_config", encoding: .utf8)) ?? ""
        guard main.split(separator: "\n").contains(where: { $0.hasPrefix("Include") && $0.contains("sshd_config.d") }) else {
            return DoctorCheck("retrieval", .fail, "/etc/ssh/sshd_config does not include sshd_config.d", fix: "add Include /etc/ssh/sshd_config.d/*.conf at its top")
        }
        guard Syscalls.userExists("obscura-fetch") else {
            return DoctorCheck("retrieval", .fail, "no obscura-fetch account", fix: fix)
        }
        guard let info = try? Syscalls.status(root + "/srv/obscura"), info.st_uid == 0, info.st_mode & 0o022 == 0 else {
            return DoctorCheck("retrieval", .fail, "/srv/obscura is missing, or not root's alone (sshd refuses such a chroot)", fix: fix)
        }
        let mounts = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let mounted = ["recordings", "photos"].filter { name in mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst(4).first == "/srv/obscura/\(name)" } }
        let keys = ((try? String(contentsOfFile: root + "/etc/obscura/fetch_authorized_keys", encoding: .utf8)) ?? "")
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }.count
        guard mounted.count == 2 else {
            return DoctorCheck("retrieval", .fail, "the recordings and photos are not both bind-mounted in /srv/obscura (mounted: \(mounted))",
                               fix: "sudo systemctl enable --now srv-obscura-recordings.mount srv-obscura-photos.mount")
        }
        return DoctorCheck("retrieval", .pass, "SFTP only, chrooted to /srv/obscura, \(keys) key(s)" + (keys == 0 ? " (add one: obscura keys add)" : ""))
    }

    /// The profile's GPIO lines: the chip by its label and each line by its name.
    static func gpio(profile: BoardProfile) -> [DoctorCheck] {
        guard let g = profile.gpio else { return [DoctorCheck("gpio", .skip, "the profile has no buttons or LEDs")] }
        let named = [("record button", g.recordButton), ("photo button", g.photoButton), ("flash button", g.flashButton),
                     ("record LED", g.recordLED), ("status LED", g.statusLED), ("flash LED", g.flashLED), ("flash output", g.flashOutput)]
        var found: [String] = [], missing: [(line: String, why: String)] = []
        for (role, line) in named {
            guard let name = g.line(line) else { continue }
            do {
                let (path, offset) = try GPIOLine.locate(name)
                found.append("\(role) \(name.line) (\(path) line \(offset))")
            } catch {
                missing.append(("\(role) \(name.line)", "\(error)"))
            }
        }
        guard missing.isEmpty else {
            // (One reason said once for the lines it stops: a chip not there stops them all.)
            let reasons = missing.reduce(into: [String]()) { if !$0.contains($1.why) { $0.append($1.why) } }
            let text = reasons.map { why in missing.filter { $0.why == why }.map(\.line).joined(separator: ", ") + ": " + why }
            return [DoctorCheck("gpio", .fail, text.joined(separator: "; "),
                                fix: "check the board profile's [gpio] (chip \"\(g.chip)\") against gpioinfo's chips and line names")]
        }
        return [DoctorCheck("gpio", .pass, "chip \"\(g.chip)\": " + found.joined(separator: ", "))]
    }

    /// The service: running and answering on its socket, not in error, and
    /// its last recording playable (ffprobe reads it, when installed).
    static func serviceStatus(configuration: ServiceConfiguration) -> Result<ServiceStatus, any Error> {
        Result {
            let reply = try ControlClient.send("status", to: configuration.controlSocket, timeout: .seconds(10))
            return try JSONDecoder().decode(ServiceStatus.self, from: Data(reply.utf8))
        }
    }

    /// (An error whose cause an earlier check failed on, the camera's or the
    /// storage's, is said here and failed there, once.)
    static func service(_ answer: Result<ServiceStatus, any Error>, configuration: ServiceConfiguration, before: [DoctorCheck]) -> [DoctorCheck] {
        let status: ServiceStatus
        do {
            status = try answer.get()
        } catch {
            return [DoctorCheck("service", .fail, "no answer on \(configuration.controlSocket): \(error)",
                                fix: "sudo systemctl start obscura, and read why it stopped: journalctl -u obscura -b")]
        }
        let failedBefore = before.filter { $0.outcome == .fail }.map(\.name)
        let covered = switch status.lastErrorReason {
        case "camera"?: failedBefore.contains("camera")
        case "storage"?: failedBefore.contains { $0.hasPrefix("storage") }
        default: false
        }
        var checks = [status.state != "error"
            ? DoctorCheck("service", .pass, "\(status.state), camera \(status.camera ?? "none"), \(status.recordings) recording(s) since it started")
            : covered ? DoctorCheck("service", .pass, "running, in error for the failure above: \(status.lastError ?? "?")")
            : DoctorCheck("service", .fail, "in error: \(status.lastError ?? "?")", fix: "journalctl -u obscura -b says more")]
        // (The service names a recording by its first file's stem; a segmented one's files are numbered.)
        let named = status.lastRecording.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
        checks.append(lastRecording(named ?? newestRecording(in: configuration.recordingsFolder)))
        return checks
    }

    static func newestRecording(in folder: String) -> String? {
        let names = (try? Syscalls.folderEntries(folder)) ?? []
        let movies = names.filter { name in [".mp4", ".mov", ".mkv", ".fwht"].contains { name.hasSuffix($0) } }
        let dated = movies.compactMap { name -> (String, Date)? in
            let path = folder + "/" + name
            guard let date = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else { return nil }
            return (path, date)
        }
        return dated.max { $0.1 < $1.1 }?.0
    }

    static func lastRecording(_ path: String?) -> DoctorCheck {
        guard let path else { return DoctorCheck("last recording", .skip, "none yet") }
        if path.hasSuffix(".age") { return DoctorCheck("last recording", .skip, "\(path): encrypted; the kiosk cannot read it back") }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]
        // One pipe for both streams, read to its end: a damaged file's many
        // error lines cannot fill a second pipe nobody reads yet.
        let out = Pipe()
        probe.standardOutput = out
        probe.standardError = out
        do { try probe.run() } catch {
            return DoctorCheck("last recording", .skip, "\(path): ffprobe is not installed to read it (apt install ffmpeg)")
        }
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        probe.waitUntilExit()
        // The duration is the last line; error lines come before it.
        guard probe.terminationStatus == 0, let seconds = said.last.flatMap(Double.init), seconds > 0 else {
            return DoctorCheck("last recording", .fail, "\(path): ffprobe cannot read it: \(said.prefix(3).joined(separator: "; "))",
                               fix: "see journalctl -u obscura -b around its time; the storage may be failing")
        }
        return DoctorCheck("last recording", .pass, String(format: "%@: plays, %.1f s", path, seconds))
    }
}
