import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraFleet
import ObscuraService

struct CollectCommand: ParsableCommand {
    static let configuration = CommandDescriptions.collect

    @Option(help: "The fleet file.") var fleet = "/etc/obscura/fleet.toml"
    @Option(name: .customLong("kiosk"), help: "Collect only this kiosk (repeatable).") var kiosks: [String] = []
    @Option(help: "Run again this many seconds after each run ends (a service); without it, once.") var every: Int?

    func validate() throws {
        if let every, every < 1 { throw ValidationError("--every \(every): must be at least 1 second") }
    }

    func run() throws {
        Log.keepGoingWithoutReaders()
        let fleetFile: FleetFile
        let collector: Collector
        do {
            fleetFile = try FleetFile(contentsOf: fleet)
            collector = Collector(fleet: fleetFile, store: try Collector.store(for: fleetFile))
        } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
        while true {
            let ok = runOnce(collector)
            guard let every else {
                if !ok { throw ExitCode.failure }
                return
            }
            sleep(UInt32(every))
        }
    }

    func runOnce(_ collector: Collector) -> Bool {
        let reports: [KioskReport]
        do {
            reports = try collector.run(only: kiosks.isEmpty ? nil : Set(kiosks), say: { Log.note($0) })
        } catch {
            Log.note("error: \(error)")
            return false
        }
        for r in reports {
            for key in r.stored { Log.output("stored \(key)") }
            for line in r.failures { Log.note("\(r.kiosk): failed: \(line)") }
            for line in r.notes { Log.note("\(r.kiosk): \(line)") }
            if let why = r.unreachable {
                Log.note("\(r.kiosk): not collected: \(why)")
                continue
            }
            var line = "\(r.kiosk): \(r.stored.count) stored (\(PullCommand.megabytes(r.bytes))"
                + (r.resumedBytes > 0 ? ", \(PullCommand.megabytes(r.resumedBytes)) resumed" : "") + "), \(r.alreadyStored) already stored"
            if !r.failures.isEmpty { line += ", \(r.failures.count) failed" }
            Log.note(line)
        }
        let failed = reports.filter { !$0.succeeded }.map(\.kiosk)
        Log.note("\(reports.count - failed.count) of \(reports.count) kiosks collected" + (failed.isEmpty ? "" : "; not: \(failed.joined(separator: ", "))"))
        return failed.isEmpty
    }
}
