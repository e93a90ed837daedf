import Foundation
import ObscuraCamera
import ObscuraEncoding
import ObscuraFiles
import ObscuraGPIO
import ObscuraSystem

/// The doctor's checks, each reading one part of the kiosk (see `Doctor`).
enum DoctorChecks {
    /// The camera layer (libcamera and the shim for it) and the profile's
    /// camera: listed here, or open in the running service (which holds it).
    static func camera(profile: BoardProfile, service: ServiceStatus?) -> [DoctorCheck] {
        let manager: CameraManager
        do {
            manager = try CameraManager.start()
        } catch {
            return [DoctorCheck("camera layer", .fail, "\(error)",
                                fix: "install a libcamera this package has a shim for, or build the package on this machine against its own libcamera-dev (/usr/share/doc/obscura/docs/install.md)")]
        }
        var checks: [DoctorCheck] = []
        if let layer = CameraLibrary.loaded {
            let warning = layer.warning.map { "; warning: \($0)" } ?? ""
            checks.append(DoctorCheck("camera layer", layer.warning == nil ? .pass : .fail, "\(layer)\(warning)",
                                      fix: layer.warning == nil ? nil : "install the libcamera-ipa of the libcamera in use"))
        }
        let cameras = manager.cameras.map(\.id)
        let wanted = profile.cameraID.isEmpty ? cameras.first : cameras.first { $0 == profile.cameraID }
        if let wanted {
            checks.append(DoctorCheck("camera", .pass, "\(wanted) listed" + (cameras.count > 1 ? " (of \(cameras.count))" : "")))
        } else if let service, let open = service.camera, service.cameraDown == false {
            checks.append(DoctorCheck("camera", .pass, "\(open) open in the service"))
        } else {
            let asked = profile.cameraID.isEmpty ? "no camera listed" : "\(profile.cameraID) not listed"
            checks.append(DoctorCheck("camera", .fail, asked + (cameras.isEmpty ? "" : "; listed: \(cameras.joined(separator: ", "))"),
                                      fix: "check the camera's cable and that the firmware detects it (camera_auto_detect=1 in config.txt), then obscura devices"))
        }
        return checks
    }

    /// Which encoder the recordings get: the profile's preference, the first that is here.
    static func encoder(configuration: ServiceConfiguration, profile: BoardProfile) -> DoctorCheck {
        let codec = configuration.codec
        var declined: [String] = []
        for name in profile.encoders {
            if EncoderKind(name: name) == .hardware {
                do {
                    let node = try V4L2MemoryToMemoryEncoder.findNode(codec: codec, input: profile.pixelFormat ?? .nv12)
                    return DoctorCheck("encoder", .pass, "\(codec) in hardware: \(node)")
                } catch {
                    declined.append("hardware: \(error)")
                }
            } else {
                let software = name == "v4l2m2m" || EncoderKind(name: name) == nil ? LibavVideoEncoder.encoderName(for: codec) : name
                if LibavVideoEncoder.availableEncoders().contains(software) {
                    let why = declined.isEmpty ? "" : " (\(declined.joined(separator: "; ")))"
                    return DoctorCheck("encoder", .pass, "\(codec) in software: \(software)\(why)")
                }
                declined.append("\(software): not in this libavcodec")
            }
        }
        return DoctorCheck("encoder", .fail, "nothing here encodes \(codec): \(declined.joined(separator: "; "))",
                           fix: "install libavcodec's full build (Debian's libavcodec has libx264), or choose another recording.codec")
    }

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
            guard let free = StorageKeeper.freeBytes(folder) else { return DoctorCheck(check, .fail, "\(folder): statvfs failed", fix: fix) }
            let text = "\(folder): writable, a synced write, \(free >> 20) MiB free"
            return free >= keep ? DoctorCheck(check, .pass, text)
                : DoctorCheck(check, .fail, text + ", under the \(keep >> 20) MiB it keeps", fix: "free space, or lower min_free_space_mb")
        }
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
}
