#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraTOML

/// Where the control socket is: the configuration's `control.socket`, read
/// the same way by the service (which listens there) and by the commands
/// that talk to it (which read nothing else of the file).
public enum ControlSocketSetting {
    public static let key = "control.socket"
    public static let defaultSocket = "/run/obscura/control.sock"
    /// The service's configuration when no other is named.
    public static let configurationFile = "/etc/obscura/obscura.toml"

    /// The key's value in `reader`, an absolute path; nil when not set.
    public static func read(_ reader: TOMLReader) throws(ConfigurationError) -> String? {
        guard let socket = try reader.string(key) else { return nil }
        guard socket.hasPrefix("/") else {
            throw ConfigurationError(file: reader.document.file, line: reader.document.values[key]?.line, key: key,
                                     message: "\"\(socket)\" must be an absolute path")
        }
        return socket
    }

    /// The socket named by the configuration at `path` if given, else by
    /// /etc/obscura/obscura.toml when it exists, else the default.
    public static func socket(configuration path: String?) throws(ConfigurationError) -> String {
        let file = path ?? (FileManager.default.fileExists(atPath: configurationFile) ? configurationFile : nil)
        guard let file else { return defaultSocket }
        return try read(TOMLReader(TOMLDocument(contentsOf: file))) ?? defaultSocket
    }
}
