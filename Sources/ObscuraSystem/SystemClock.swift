#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CSystem

/// The system's wall clock, and whether it can be believed.
///
/// A board without a real-time clock boots at the time it last saved (or in
/// 1970) and is right only once NTP has set it. Until then a wall-clock time
/// may be wrong: what needs one asks `synchronization()` first. Camera
/// timestamps are on CLOCK_MONOTONIC, which a clock step never moves; a
/// moment on it becomes wall-clock time by the offset between the two clocks
/// now.
public enum SystemClock {
    public enum Source: String, Sendable, Codable { case timesyncd = "systemd-timesyncd", adjtimex, unknown }

    /// Whether the clock is known to be synchronised, and what said so.
    /// systemd-timesyncd touches /run/systemd/timesync/synchronized once it
    /// has synchronised; otherwise the kernel's NTP state (adjtimex, read
    /// only: chrony and ntpd keep it) says. nil: nothing here can tell (a
    /// seccomp filter denying adjtimex). `root` prefixes the file (tests).
    public static func synchronization(root: String = "") -> (synchronized: Bool?, source: Source) {
        if FileManager.default.fileExists(atPath: root + "/run/systemd/timesync/synchronized") { return (true, .timesyncd) }
        guard root.isEmpty else { return (nil, .unknown) }
        let state = obscura_clock_synchronized()
        return state < 0 ? (nil, .unknown) : (state == 1, .adjtimex)
    }

    public static var isSynchronized: Bool { synchronization().synchronized == true }

    /// The wall-clock time of `monotonic` (CLOCK_MONOTONIC, ns), by the
    /// offset between the clocks now: the wall clock read between two reads
    /// of the monotonic one, the tightest pair of up to five (a thread
    /// preempted between two reads would put its wait into the offset: 6 ms
    /// was seen on a busy machine).
    public static func wallClock(ofMonotonic monotonic: UInt64) -> Date {
        func seconds(_ t: timespec) -> Double { Double(t.tv_sec) + Double(t.tv_nsec) / 1e9 }
        var best: (gap: Double, offset: Double)?
        for _ in 0..<5 {
            var before = timespec(), real = timespec(), after = timespec()
            clock_gettime(CLOCK_MONOTONIC, &before)
            clock_gettime(CLOCK_REALTIME, &real)
            clock_gettime(CLOCK_MONOTONIC, &after)
            let gap = seconds(after) - seconds(before)
            if best == nil || gap < best!.gap { best = (gap, seconds(real) - (seconds(before) + seconds(after)) / 2) }
            if gap < 20e-6 { break }
        }
        return Date(timeIntervalSince1970: best!.offset + Double(monotonic) / 1e9)
    }

    /// This boot's identity: the first 8 hex digits of the kernel's boot id
    /// ($OBSCURA_BOOT_ID, which the unit sets from systemd's %b where /proc/sys
    /// is hidden, else /proc/sys/kernel/random/boot_id).
    public static let bootID: String = {
        let text = ProcessInfo.processInfo.environment["OBSCURA_BOOT_ID"]
            ?? (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let hex = text.filter(\.isHexDigit)
        return hex.count >= 8 ? String(hex.prefix(8)).lowercased() : "00000000"
    }()
}
