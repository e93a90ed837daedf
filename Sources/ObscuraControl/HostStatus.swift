#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One storage the service records to: where, how full, its quota.
public struct StorageStatus: Sendable, Codable, Equatable {
    /// "recordings" for the configured folder.
    public var name: String
    public var path: String
    public var freeBytes: Int?
    /// Finished recordings and photos in it.
    public var usedBytes: Int
    /// 0: no quota.
    public var quotaBytes: Int
    /// Whether it is there to record to (a drive can be absent).
    public var present = true
    /// Where recordings go now.
    public var active = false
    /// How long a question to it (its free space) has gone unanswered:
    /// a drive that hangs rather than vanishes. Nil while it answers.
    public var silentSeconds: Double?

    public init(name: String, path: String, freeBytes: Int?, usedBytes: Int, quotaBytes: Int,
                present: Bool = true, active: Bool = false, silentSeconds: Double? = nil) {
        self.name = name
        self.path = path
        self.freeBytes = freeBytes
        self.usedBytes = usedBytes
        self.quotaBytes = quotaBytes
        self.present = present
        self.active = active
        self.silentSeconds = silentSeconds
    }
}

/// The board's own health, read from sysfs and the clock.
public struct HostHealth: Sendable, Codable, Equatable {
    /// Each thermal zone's temperature in °C, by the zone's type
    /// (`cpu-thermal` on a Raspberry Pi).
    public var temperatures: [String: Double] = [:]
    /// The Raspberry Pi firmware's throttled flags (as `vcgencmd
    /// get_throttled`), where its sysfs file exists.
    public var throttled: Int?
    /// Whether the system clock is known to be synchronised; nil when
    /// nothing here can tell.
    public var clockSynchronized: Bool?
    /// What told: "systemd-timesyncd", "adjtimex", or "unknown".
    public var clockSource = "unknown"

    public init() {}

    /// The firmware's flags, as Raspberry Pi's documentation names its bits.
    public static let throttledFlags: [(bit: Int, name: String)] = [
        (0, "under_voltage"), (1, "arm_frequency_capped"), (2, "throttled"), (3, "soft_temperature_limit"),
        (16, "under_voltage_occurred"), (17, "arm_frequency_capping_occurred"), (18, "throttling_occurred"),
        (19, "soft_temperature_limit_occurred"),
    ]
}
