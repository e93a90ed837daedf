#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraControl
import ObscuraFiles
import ObscuraSettings
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// The doctor's checks that need no camera: the storage, the clock, the
/// retrieval account and the running service (see `Doctor`).
enum LightChecks {
    /// Each folder the service writes: there, writable (a file written,
    /// synced and removed), and with the free space it keeps.
    static func storage(configuration: ServiceConfiguration) -> [DoctorCheck] {
        var folders = [("recordings", configuration.recordingsFolder, configuration.minFreeSpaceBytes),
                       ("photos", configuration.photosFolder, configuration.minFreeSpaceBytes),
                       ("files being written", configuration.resolvedPartialFolder, configuration.minFreeSpaceBytes)]
        if let drive = configuration.drive, case .mountPoint(let point) = drive.identity {
            folders.append(("USB drive", point + "/" + drive.folder, drive.minFreeSpaceBytes))
        }
        return folders.map { name, folder, keep in
            let check = "storage \(name)"
            let fix = "mount the storage read-write and give the obscura user the folder (sudo install -d -o obscura -g obscura \(folder))"
            let probe = folder + "/.obscura-doctor-\(getpid())"
            do {
                let fd = try Syscalls.open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                defer { try? Syscalls.remove(probe) }
                try Syscalls.writeAll(fd.rawValue, Array("obscura doctor\n".utf8), path: probe)
                try Syscalls.fsync(fd.rawValue, path: probe)
            } catch {
                return DoctorCheck(check, .fail, "\(folder): \(error)", fix: fix)
            }
            guard let free = try? Syscalls.freeBytes(folder) else { return DoctorCheck(check, .fail, "\(folder): statvfs failed", fix: fix) }
            let text = "\(folder): writable, a synced write, \(free >> 20) MiB free"
            return free >= keep ? DoctorCheck(check, .pass, text)
                : DoctorCheck(check, .fail, text + ", under the \(keep >> 20) MiB it keeps", fix: "free space, or lower min_free_space_mb")
        }
    }

    /// What the configuration costs on the board, against the profile's
    /// budget (`obscura config --check` says the same, line by line).
    static func budget(configuration: ServiceConfiguration, profile: BoardProfile) -> DoctorCheck {
        guard let cost = profile.cost(of: configuration) else {
            return DoctorCheck("budget", .skip, "the profile (\(profile.name)) gives no [budget] to predict against")
        }
        let total = cost.lines.last ?? ""
        if cost.fits { return DoctorCheck("budget", .pass, total) }
        guard cost.budget.enforced else {
            return DoctorCheck("budget", .skip, "\(cost.refusal) (not enforced on this board)")
        }
        return DoctorCheck("budget", .fail, "\(cost.refusal): the service refuses to start",
                           fix: "change the configuration to one that fits (obscura config --check)")
    }

    static func clock(root: String) -> DoctorCheck {
        let (synchronized, source) = SystemClock.synchronization(root: root)
        switch synchronized {
        case true?: return DoctorCheck("clock", .pass, "synchronised (\(source.rawValue))")
        case false?:
            return DoctorCheck("clock", .fail, "not synchronised (\(source.rawValue)): recordings get boot-relative names until it is",
                               fix: "give the kiosk a network with NTP and enable systemd-timesyncd (sudo timedatectl set-ntp true)")
        case nil: return DoctorCheck("clock", .skip, "cannot tell (adjtimex refused)")
        }
    }

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
        // (Read to the end: a /proc file's size says 0.)
        let mounts = ((try? Syscalls.readFile("/proc/self/mountinfo")).map { String(decoding: $0, as: UTF8.self) }) ?? ""
        let mounted = ["recordings", "photos"].filter { name in mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst(4).first == "/srv/obscura/\(name)" } }
        let keys = ((try? String(contentsOfFile: root + "/etc/obscura/fetch_authorized_keys", encoding: .utf8)) ?? "")
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.trimmingWhitespace.isEmpty }.count
        guard mounted.count == 2 else {
            return DoctorCheck("retrieval", .fail, "the recordings and photos are not both bind-mounted in /srv/obscura (mounted: \(mounted))",
                               fix: "sudo systemctl enable --now srv-obscura-recordings.mount srv-obscura-photos.mount")
        }
        return DoctorCheck("retrieval", .pass, "SFTP only, chrooted to /srv/obscura, \(keys) key(s)" + (keys == 0 ? " (add one: obscura keys add)" : ""))
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
        let dated = movies.compactMap { name -> (String, Int)? in
            let path = folder + "/" + name
            guard let info = try? Syscalls.status(path) else { return nil }
            return (path, info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec)
        }
        return dated.max { $0.1 < $1.1 }?.0
    }

    static func lastRecording(_ path: String?) -> DoctorCheck {
        guard let path else { return DoctorCheck("last recording", .skip, "none yet") }
        if path.hasSuffix(".age") { return DoctorCheck("last recording", .skip, "\(path): encrypted; the kiosk cannot read it back") }
        let probe: ChildProcess
        do {
            probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        } catch {
            return DoctorCheck("last recording", .skip, "\(path): ffprobe is not installed to read it (apt install ffmpeg)")
        }
        let said = probe.text.split(separator: "\n").map(\.trimmingWhitespace).filter { !$0.isEmpty }
        // The duration is the last line; error lines come before it.
        guard probe.status == 0, let seconds = said.last.flatMap(Double.init), seconds > 0 else {
            return DoctorCheck("last recording", .fail, "\(path): ffprobe cannot read it: \(said.prefix(3).joined(separator: "; "))",
                               fix: "see journalctl -u obscura -b around its time; the storage may be failing")
        }
        return DoctorCheck("last recording", .pass, path + String(printf: ": plays, %.1f s", seconds))
    }
}
