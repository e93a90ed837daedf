import Foundation
import TestSupport

/// `obscura run` on a test-pattern board: the synthetic camera at 320x240
/// and 30 fps, libx264, no sound, recordings, photos and the control socket
/// under `folder`.
struct PatternService {
    let process = Process()
    let standardError = Pipe()
    let socket: String

    /// The test-pattern board's profile and a configuration naming it in
    /// `folder`; returns the configuration's path.
    static func writeConfiguration(in folder: String, recording: String = "", metrics: String? = nil,
                                   metricsInterval: Int = 1, health: String? = nil, profile extra: String = "",
                                   tables: String = "", camera: String = "synthetic") throws -> String {
        let profile = folder + "/pattern.toml", config = folder + "/obscura.toml"
        try """
            [board]
            name = "Test pattern"
            [camera]
            id = "\(camera)"
            size = "320x240"
            frame_rate = 30
            pixel_format = "NV12"
            [encoder]
            preference = ["libx264"]
            preset = "ultrafast"
            bit_rate = 1000000
            [audio]
            device = "none"
            \(extra)
            """.write(toFile: profile, atomically: true, encoding: .utf8)
        try """
            board = "\(profile)"
            [recording]
            folder = "\(folder)/rec"
            min_free_space_mb = 1
            \(recording)
            [photo]
            folder = "\(folder)/photos"
            [control]
            socket = "\(folder)/control.sock"
            \(tables.contains("[live]") ? "" : "[live]\nsocket = \"\(folder)/live.sock\"")
            [metrics]
            file = "\(metrics ?? folder + "/obscura.prom")"
            interval_seconds = \(metricsInterval)
            \(health.map { "[health]\n" + $0 } ?? "")
            \(tables)
            """.write(toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    /// `recording` adds lines to the configuration's [recording] table;
    /// `metrics` is the metrics file (default: in `folder`).
    /// `camera` is the test pattern's id (`synthetic:stamped`: each frame's
    /// time in its picture).
    init(in folder: String, recording: String = "", metrics: String? = nil, tables: String = "", camera: String = "synthetic") throws {
        socket = folder + "/control.sock"
        let config = try Self.writeConfiguration(in: folder, recording: recording, metrics: metrics, tables: tables, camera: camera)
        process.executableURL = URL(fileURLWithPath: packageRoot + "/.build/debug/obscura")
        process.arguments = ["run", "--config", config]
        process.standardError = standardError
        try process.run()
    }
}
