import Foundation
import ObscuraFormats
import ObscuraFiles

import ObscuraSystem

/// One kiosk's totals across runs, kept in the spool (`KIOSK/state.json`)
/// so that the counters count from the first run, as Prometheus expects.
public struct KioskTotals: Codable, Sendable, Equatable {
    public var files = 0
    public var bytes = 0
    public var failures = 0
    public var lastAttempt: Double?
    public var lastSuccess: Double?
    public var lastFailure: Double?
    /// 1 when the last run reached the kiosk and stored all it had.
    public var up = 0

    public init() {}

    static func load(_ path: String) -> KioskTotals {
        guard let data = FileManager.default.contents(atPath: path),
              let totals = try? JSONDecoder().decode(KioskTotals.self, from: data) else { return KioskTotals() }
        return totals
    }

    func save(_ path: String) throws(CollectError) {
        let folder = (path as NSString).deletingLastPathComponent
        do throws(SystemError) {
            let data = (try? JSONEncoder().encode(self)) ?? Data()
            try DurableFile.write(Array(data), to: path, via: folder + "/.state.json.tmp")
        } catch {
            throw CollectError("saving \(path): \(error)")
        }
    }
}

/// The collector's metrics for node_exporter's textfile collector, one
/// series per kiosk, written whole (a temporary renamed) each time a kiosk
/// is done, so a long run shows its progress.
public enum FleetMetrics {
    public static func text(_ kiosks: [(name: String, totals: KioskTotals)], running: Bool) -> String {
        var m = MetricsText()
        func each(_ value: (KioskTotals) -> Double?) -> [([(String, String)], Double)] {
            kiosks.compactMap { k in value(k.totals).map { ([("kiosk", k.name)], $0) } }
        }
        m.add("obscura_collect_files_total", .counter, "Files stored from the kiosk, verified in the store.", each { Double($0.files) })
        m.add("obscura_collect_bytes_total", .counter, "Bytes stored from the kiosk, verified in the store.", each { Double($0.bytes) })
        m.add("obscura_collect_failures_total", .counter, "Runs that could not reach the kiosk or store all it had.", each { Double($0.failures) })
        m.add("obscura_collect_up", .gauge, "1 when the last run reached the kiosk and stored everything it had finished.", each { Double($0.up) })
        m.add("obscura_collect_last_attempt_timestamp_seconds", .gauge, "When the last run for the kiosk ended.", each { $0.lastAttempt })
        m.add("obscura_collect_last_success_timestamp_seconds", .gauge, "When a run last stored everything the kiosk had.", each { $0.lastSuccess })
        m.add("obscura_collect_last_failure_timestamp_seconds", .gauge, "When a run for the kiosk last failed.", each { $0.lastFailure })
        m.add("obscura_collect_running", .gauge, "1 while a collection runs.", running ? 1 : 0)
        return m.text
    }
}
