import Foundation
import ObscuraFormats
import ObscuraAge
import ObscuraFiles
import ObscuraRetrieval

import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// What one run did for one kiosk.
public struct KioskReport: Sendable, Equatable {
    public var kiosk: String
    /// Keys stored in this run, verified in the store.
    public var stored: [String] = []
    public var bytes = 0
    /// Bytes an earlier, interrupted run had already fetched.
    public var resumedBytes = 0
    /// Finished files the store already held (left out, or found there).
    public var alreadyStored = 0
    /// Files that failed, each naming itself and why; the next run retries.
    public var failures: [String] = []
    /// Why the kiosk could not be collected at all (unreachable, refused).
    public var unreachable: String?
    public var notes: [String] = []

    public var succeeded: Bool { unreachable == nil && failures.isEmpty }
}

/// Collects a fleet: each kiosk's finished files, pulled over SSH with the
/// verified, resumable pull, are stored under KIOSK/YYYY/MM/DD/NAME and
/// checked in the store before the collector forgets its copy. Several
/// kiosks at once (the fleet's `parallel`), each on a thread of its own: a
/// kiosk that does not answer holds only its own thread. One collector per
/// spool at a time (a lock); the helpers it starts (sftp, ssh, rclone) die
/// with it, so a run started after one was killed finds nothing of it
/// still running.
public final class Collector: Sendable {
    public let fleet: FleetFile
    let store: any ObjectStore
    let now: @Sendable () -> Date
    /// Every kiosk's totals (the metrics), updated as each finishes.
    private let totals = Mutex<[String: KioskTotals]>([:])

    public init(fleet: FleetFile, store: any ObjectStore, now: @escaping @Sendable () -> Date = { Date() }) {
        self.fleet = fleet
        self.store = store
        self.now = now
    }

    public static func store(for fleet: FleetFile) throws(CollectError) -> any ObjectStore {
        switch fleet.store {
        case .folder(let root): return FolderStore(root: root)
        case .s3(let settings): return try S3Store(settings: settings)
        }
    }

    func folder(_ kiosk: Kiosk) -> String { fleet.spool + "/" + kiosk.name }

    /// Collects `only` those kiosks (all when nil); `say` hears each step.
    public func run(only: Set<String>? = nil, say: @escaping @Sendable (String) -> Void = { _ in }) throws(CollectError) -> [KioskReport] {
        let kiosks = fleet.kiosks.filter { only?.contains($0.name) ?? true }
        if let only, let unknown = only.subtracting(fleet.kiosks.map(\.name)).sorted().first {
            throw CollectError("no kiosk named \(unknown) in the fleet file (it has: \(fleet.kiosks.map(\.name).joined(separator: ", ")))")
        }
        let lock = try SpoolLock(spool: fleet.spool, say: say)
        defer { withExtendedLifetime(lock) {} }
        totals.withLock { all in
            for kiosk in fleet.kiosks { all[kiosk.name] = KioskTotals.load(folder(kiosk) + "/state.json") }
        }
        writeMetrics(running: true, say: say)
        let next = Mutex(0)
        let reports = Mutex<[String: KioskReport]>([:])
        var workers: [JoinableThread] = []
        for n in 0..<min(fleet.parallel, kiosks.count) {
            do {
                workers.append(try JoinableThread(name: "collect \(n)") { [self] in
                    while true {
                        let i = next.withLock { i in defer { i += 1 }; return i }
                        guard i < kiosks.count else { return }
                        let report = collect(kiosks[i], say: say)
                        reports.withLock { $0[report.kiosk] = report }
                        finished(report, say: say)
                    }
                })
            } catch {
                say("cannot start collector thread \(n): \(error)")
                break
            }
        }
        guard !workers.isEmpty else { throw CollectError("no collector thread could start") }
        for worker in workers { worker.join() }
        writeMetrics(running: false, say: say)
        let done = reports.withLock { $0 }
        return kiosks.compactMap { done[$0.name] }
    }

    /// A kiosk's totals and the metrics file, after its run.
    func finished(_ report: KioskReport, say: @Sendable (String) -> Void) {
        let time = now().timeIntervalSince1970
        let updated = totals.withLock { all -> KioskTotals in
            var t = all[report.kiosk] ?? KioskTotals()
            t.files += report.stored.count
            t.bytes += report.bytes
            t.lastAttempt = time
            if report.succeeded {
                t.lastSuccess = time
                t.up = 1
            } else {
                t.failures += 1
                t.lastFailure = time
                t.up = 0
            }
            all[report.kiosk] = t
            return t
        }
        do { try updated.save(fleet.spool + "/" + report.kiosk + "/state.json") } catch { say("\(report.kiosk): \(error)") }
        writeMetrics(running: true, say: say)
    }

    func writeMetrics(running: Bool, say: @Sendable (String) -> Void) {
        guard let path = fleet.metrics else { return }
        // Under the lock, so two kiosks finishing at once write in turn.
        totals.withLock { all in
            let text = FleetMetrics.text(fleet.kiosks.map { ($0.name, all[$0.name] ?? KioskTotals()) }, running: running)
            do { try MetricsFile(path: path).write(text) } catch { say("metrics: \(error)") }
        }
    }

    // MARK: One kiosk

    func collect(_ kiosk: Kiosk, say: @escaping @Sendable (String) -> Void) -> KioskReport {
        var report = KioskReport(kiosk: kiosk.name)
        let spool = folder(kiosk)
        let ledger: Ledger
        let options: PullOptions
        do {
            try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
            ledger = try Ledger(path: spool + "/stored")
            options = try pullOptions(kiosk, known: ledger.hashes)
        } catch {
            report.unreachable = "\(error)"
            return report
        }
        do {
            if let said = try store.cleanUp(prefix: kiosk.name + "/") { report.notes.append(said) }
        } catch {
            report.unreachable = "the store: \(error)"
            return report
        }
        let summary: PullSummary
        do {
            summary = try Puller(options: options).run(note: { say("\(kiosk.name): \($0)") })
        } catch {
            report.unreachable = "\(error)"
            return report
        }
        report.failures += summary.failed
        report.resumedBytes = summary.bytesResumed
        report.alreadyStored += summary.skipped
        report.notes += summary.decryptionNotes
        let failedNames = Set(summary.failed.compactMap { $0.split(separator: ":").first.map(String.init) })
        var batch: [Fetched] = []
        for name in (summary.pulled + summary.alreadyHere).sorted() where !failedNames.contains(name) {
            do { batch.append(try fetched(name, of: kiosk, in: options.destination)) } catch {
                report.failures.append("\(name): \(error)")
            }
        }
        store(batch, of: kiosk, ledger: ledger, report: &report, say: say)
        return report
    }

    func pullOptions(_ kiosk: Kiosk, known: Set<String>) throws(CollectError) -> PullOptions {
        var options = PullOptions(target: kiosk.address, destination: folder(kiosk) + "/files")
        options.port = kiosk.port
        options.identity = kiosk.key
        options.knownHosts = kiosk.knownHosts
        options.limitKbps = kiosk.limitKbps
        options.sshOptions = ["ConnectTimeout=\(fleet.connectTimeoutSeconds)"]
        if let folders = kiosk.folders { options.remoteFolders = folders }
        if kiosk.decrypt {
            for file in kiosk.identities {
                do { options.identities += try Decryption.identities(file: file) } catch {
                    throw CollectError("\(kiosk.name): age identity \(file): \(error)")
                }
            }
        }
        options.skip = { _, sha256 in known.contains(sha256) }
        options.endsWithCaller = true
        return options
    }

    /// A verified file here and what goes into the store for it.
    struct Fetched {
        var name: String
        /// The file and its .sha256 as pulled, and what is uploaded (the
        /// plaintext when the kiosk is decrypted).
        var paths: Set<String>
        /// The kiosk's sha256, which the ledger records.
        var kioskSHA256: String
        var upload: Upload
    }

    func fetched(_ name: String, of kiosk: Kiosk, in folder: String) throws(CollectError) -> Fetched {
        let fetched = folder + "/" + name
        guard let line = (try? String(contentsOfFile: fetched + ".sha256", encoding: .utf8)).flatMap(ChecksumLine.parse) else {
            throw CollectError("its checksum file \(fetched).sha256 is missing or unreadable")
        }
        var upload = fetched, uploadName = name, sha256 = line.sha256
        if kiosk.decrypt, let plain = Decryption.plainName(of: fetched), FileManager.default.fileExists(atPath: plain) {
            upload = plain
            uploadName = (plain as NSString).lastPathComponent
            do { sha256 = try Checksum.sha256(of: plain) } catch { throw CollectError("hashing \(plain): \(error)") }
        }
        let found: Int?
        do { found = try FileSize.of(upload) } catch { throw CollectError("\(error)") }
        guard let size = found else { throw CollectError("\(upload) is gone") }
        return Fetched(name: name, paths: [fetched, fetched + ".sha256", upload], kioskSHA256: line.sha256,
                       upload: Upload(file: upload, key: StoreKey.key(kiosk: kiosk.name, name: uploadName),
                                      sha256: sha256, size: size))
    }

    /// Stores a kiosk's verified files (asking the store once what it holds
    /// of them, uploading the rest at once, and asking again), records each
    /// one the store then holds with its size and sha256, and drops the copy
    /// here. A key the store holds with another file is never overwritten.
    func store(_ batch: [Fetched], of kiosk: Kiosk, ledger: Ledger, report: inout KioskReport,
               say: @Sendable (String) -> Void) {
        guard !batch.isEmpty else { return }
        let before: [String: StoredObject]
        do { before = try store.holdings(batch.map(\.upload.key)) } catch {
            report.failures.append("\(batch.count) files not stored: \(error)")
            return
        }
        var toUpload: [Fetched] = []
        for file in batch {
            guard let held = before[file.upload.key] else { toUpload.append(file); continue }
            guard held.size == file.upload.size, held.sha256 == file.upload.sha256 else {
                report.failures.append("\(file.name): \(file.upload.key) in the store is another file (\(held.size) bytes, sha256 \(held.sha256?.prefix(12) ?? "none")…); not overwritten, kept here")
                continue
            }
            // Stored by a run that ended before it could record it: counted now.
            say("\(kiosk.name): \(file.upload.key) is in the store already (sha256 checked), from an interrupted run")
            recorded(file, ledger: ledger, report: &report)
        }
        guard !toUpload.isEmpty else { return }
        var putError: CollectError?
        do { try store.put(toUpload.map(\.upload), staging: folder(kiosk) + "/outgoing") } catch { putError = error }
        let after: [String: StoredObject]
        do { after = try store.holdings(toUpload.map(\.upload.key)) } catch {
            report.failures.append("\(toUpload.count) files not checked in the store after the upload: \(putError.map { "\($0); " } ?? "")\(error)")
            return
        }
        for file in toUpload {
            let upload = file.upload
            guard let held = after[upload.key], held.size == upload.size, held.sha256 == upload.sha256 else {
                let holds = after[upload.key].map { "\($0.size) bytes, sha256 \($0.sha256?.prefix(12) ?? "none")…" } ?? "nothing"
                report.failures.append("\(file.name): after the upload the store holds \(holds) for \(upload.key), not \(upload.size) bytes with \(upload.sha256.prefix(12))…; kept here, tried again next run\(putError.map { " (\($0))" } ?? "")")
                continue
            }
            say("\(kiosk.name): stored \(upload.key) (\(upload.size) bytes, sha256 checked in the store)")
            recorded(file, ledger: ledger, report: &report)
        }
    }

    /// A file the store holds whole: counted, in the ledger, gone from here.
    func recorded(_ file: Fetched, ledger: Ledger, report: inout KioskReport) {
        do { try ledger.record(file.kioskSHA256, key: file.upload.key) } catch {
            report.failures.append("\(file.name): stored, but not recorded: \(error)")
            return
        }
        report.stored.append(file.upload.key)
        report.bytes += file.upload.size
        for path in file.paths {
            do throws(SystemError) { try Syscalls.remove(path) } catch {
                report.failures.append("\(file.name): stored, but its spool copy stays: \(error)")
            }
        }
    }
}

enum FileSize {
    /// The size of the file at `path`, or nil when there is none; any other
    /// failure is thrown.
    static func of(_ path: String) throws(SystemError) -> Int? {
        do throws(SystemError) { return Int(try Syscalls.status(path).st_size) } catch {
            if error.code == ENOENT { return nil }
            throw error
        }
    }
}

/// One collector per spool: an flock on SPOOL/.lock, held for the run; a
/// second run waits for the first to end.
final class SpoolLock {
    private let fd: OwnedFileDescriptor

    init(spool: String, say: @Sendable (String) -> Void) throws(CollectError) {
        do { try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true) } catch {
            throw CollectError("cannot create the spool \(spool): \(error.localizedDescription)")
        }
        let path = spool + "/.lock"
        do { fd = try Syscalls.open(path, O_RDWR | O_CREAT, 0o644) } catch { throw CollectError("\(error)") }
        do throws(SystemError) {
            if try !Syscalls.lock(fd.rawValue, wait: false, path: path) {
                say("another collector holds \(path); waiting for it to end")
                _ = try Syscalls.lock(fd.rawValue, wait: true, path: path)
            }
        } catch {
            throw CollectError("\(error)")
        }
    }

    /// The lock goes with the descriptor (closed when this is released).
    deinit { Syscalls.unlock(fd.rawValue) }
}
