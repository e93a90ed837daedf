import Foundation
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// systemd's notification protocol (sd_notify) without libsystemd: datagrams
/// to $NOTIFY_SOCKET. Silent when not run by systemd.
public final class SystemdNotifier: Sendable {
    public let socketPath: String?
    /// Half of WatchdogSec= when systemd asked for keep-alives.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"]
        if let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0,
           environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    public var isActive: Bool { socketPath != nil }

    /// Sends "KEY=VALUE" lines, e.g. "READY=1\nSTATUS=idle".
    @discardableResult
    public func notify(_ message: String) -> Bool {
        guard let path = socketPath, !path.isEmpty else { return false }
        return (try? Syscalls.sendDatagram(Array(message.utf8), toUnix: path)) != nil
    }
}
