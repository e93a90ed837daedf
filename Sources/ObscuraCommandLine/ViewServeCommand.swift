import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraAccess
import ObscuraControl
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// The kiosk's end of a live view: what the SSH server runs for a view key.
public struct ViewServeCommand: ParsableCommand {
    public static let configuration = CommandDescriptions.viewServe

    @Option(help: "Who watches, for the journal (a view key's comment).") var name = "(unnamed)"
    @Option(help: "The recorder's live socket (live.socket).") var socket = "/run/obscura-live/live.sock"
    @Option(help: "One of the kiosk's cameras ([cameras.NAME]): its live socket, live-NAME.sock beside --socket.") var camera: String?
    @Flag(help: "Run as the live view account's forced command (sshd's ForceCommand): refuse anything but a view, and name the viewer by the SSH key's comment.")
    var sshForced = false

    public init() {}

    public func run() throws {
        signal(SIGPIPE, SIG_IGN)
        var name = name, camera = camera
        if sshForced {
            let environment = ProcessInfo.processInfo.environment
            if let refusal = ViewAccount.refusal(originalCommand: environment["SSH_ORIGINAL_COMMAND"]) {
                Log.note(refusal)
                throw ExitCode.failure
            }
            // The camera the viewer asked for (`obscura view KIOSK --camera NAME`).
            let asked = (environment["SSH_ORIGINAL_COMMAND"] ?? "").split(separator: " ").map(String.init)
            camera = asked.firstIndex(of: "--camera").flatMap { $0 + 1 < asked.count ? asked[$0 + 1] : nil }
            let authInfo = environment["SSH_USER_AUTH"].flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            let keys = (try? AuthorizedKeys.load(AuthorizedKeys.Purpose.view.path, purpose: .view)) ?? AuthorizedKeys()
            name = ViewAccount.viewerName(authInfo: authInfo, keys: keys)
        }
        var socket = socket
        if let camera {
            guard CameraName.isValid(camera) else {
                throw ValidationError("\"\(camera.prefix(40))\" is not a camera's name (a-z, 0-9, _ as its [cameras.NAME] table gives it)")
            }
            socket = CameraName.liveSocket(camera, beside: socket)
        }
        do {
            let connection = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
            do {
                try Syscalls.connect(connection.rawValue, unixPath: socket)
            } catch {
                throw ValidationError("the recorder's live view is not reachable at \(socket) (\(error)); is the obscura service running, with live.socket set?")
            }
            var printable = String.UnicodeScalarView()
            for scalar in name.unicodeScalars.prefix(200) where scalar.value >= 32 && scalar.value != 127 { printable.append(scalar) }
            try Syscalls.sendAll(connection.rawValue, Array("view \(String(printable))\n".utf8), flags: Int32(MSG_NOSIGNAL), what: socket)
            try Self.copy(from: connection.rawValue, to: STDOUT_FILENO)
        } catch let error as ValidationError {
            Log.note("error: \(error.message)")
            throw ExitCode.failure
        } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
    }

    /// Copies until the source ends or the destination goes (the viewer left: no error).
    static func copy(from source: Int32, to destination: Int32) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.read(source, into: b, path: "the live socket") }
            if n == 0 { return }
            guard try Syscalls.writeAllUnlessGone(destination, buffer[0..<n], path: "standard output") else { return }
        }
    }
}
