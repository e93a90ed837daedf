import Foundation
import ObscuraPhoto

/// The control socket's language (`obscura ctl`): one command a line, one
/// JSON line back.
enum ControlCommand: Equatable, Sendable {
    case status
    case recordStart, recordStop, recordToggle
    case photo
    case flash(FlashMode)
    /// `camera NAME COMMAND`: one of a kiosk's cameras (`obscura ctl --camera NAME`).
    indirect case camera(String, ControlCommand)

    static let usage = "commands: status, record start|stop|toggle, photo, flash auto|on|off; each may follow camera NAME"

    /// The command a line says, or the reply that says what is allowed.
    static func parse(_ line: String) -> Result<ControlCommand, ControlReply> {
        let words = line.split(separator: " ").map(String.init)
        switch words {
        case ["status"]: return .success(.status)
        case ["record", "start"]: return .success(.recordStart)
        case ["record", "stop"]: return .success(.recordStop)
        case ["record", "toggle"]: return .success(.recordToggle)
        case ["photo"]: return .success(.photo)
        case let w where w.count > 2 && w[0] == "camera":
            return parse(w.dropFirst(2).joined(separator: " ")).map { .camera(w[1], $0) }
        case let w where w.count == 2 && w[0] == "flash":
            guard let mode = FlashMode(rawValue: w[1]) else { return .failure(ControlReply(false, "flash takes auto, on or off")) }
            return .success(.flash(mode))
        default:
            return .failure(ControlReply(false, "unknown command \"\(line)\"; \(usage)"))
        }
    }
}

/// A reply: `{"file":…,"message":…,"ok":…}`, keys sorted.
struct ControlReply: Error, Sendable, Equatable {
    let ok: Bool
    let message: String
    let file: String?

    init(_ ok: Bool, _ message: String, file: String? = nil) {
        self.ok = ok
        self.message = message
        self.file = file
    }

    var line: String {
        var object: [String: Any] = ["ok": ok, "message": message]
        if let file { object["file"] = file }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// `status`'s reply: the whole `ServiceStatus`.
    static func status(_ status: ServiceStatus) -> String {
        String(decoding: (try? JSONEncoder().encode(status)) ?? Data(), as: UTF8.self)
    }
}
