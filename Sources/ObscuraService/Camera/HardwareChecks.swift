import Foundation
import ObscuraCamera
import ObscuraControl
import ObscuraDoctor
import ObscuraEncoding
import ObscuraGPIO
import ObscuraSystem

/// The doctor's checks of the hardware, which need libcamera, FFmpeg and
/// libgpiod: the camera layer and the camera, the encoder, the GPIO lines
/// (see `Doctor`, which runs the rest in the light front).
public enum HardwareChecks {
    /// Every one, in the doctor's order (it says the GPIO lines later).
    public static func all(configuration: ServiceConfiguration, profile: BoardProfile, service: ServiceStatus?) -> [DoctorCheck] {
        camera(configuration: configuration, profile: profile, service: service)
            + [encoder(configuration: configuration, profile: profile)] + gpio(profile: profile)
    }

    /// The camera layer (libcamera and the shim for it) and the profile's
    /// camera: listed here, or open in the running service (which holds it).
    static func camera(configuration: ServiceConfiguration, profile: BoardProfile, service: ServiceStatus?) -> [DoctorCheck] {
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
        let listed = manager.cameras.map(\.id)
        if configuration.cameras.isEmpty { return checks + [camera("camera", id: profile.cameraID, service: service, listed: listed)] }
        // A kiosk of several: each camera by its name, each as its own part of the service sees it.
        return checks + configuration.cameras.map { c in
            camera("camera \(c.name)", id: c.id, service: service?.cameras?.first { $0.name == c.name }?.status, listed: listed)
        }
    }

    /// One camera (`id`, "" for the first listed): listed here, or open in
    /// the running service.
    static func camera(_ check: String, id: String, service: ServiceStatus?, listed cameras: [String]) -> DoctorCheck {
        let wanted = id.isEmpty ? cameras.first : cameras.first { $0 == id }
        if let wanted {
            return DoctorCheck(check, .pass, "\(wanted) listed" + (cameras.count > 1 ? " (of \(cameras.count))" : ""))
        } else if let service, let open = service.camera, service.cameraDown == false {
            return DoctorCheck(check, .pass, "\(open) open in the service")
        }
        let asked = id.isEmpty ? "no camera listed" : "\(id) not listed"
        return DoctorCheck(check, .fail, asked + (cameras.isEmpty ? "" : "; listed: \(cameras.joined(separator: ", "))"),
                           fix: "check the camera's cable and that the firmware detects it (camera_auto_detect=1 in config.txt), then obscura devices")
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
}
