import Foundation
import ObscuraAge
import ObscuraMuxing
import ObscuraSystem
import struct Synchronization.Atomic
import ObscuraFiles

/// A finished file on the device: it has a checksum file beside it.
public struct RemoteFile: Sendable, Equatable {
    public var folder: String
    public var name: String
    public var size: Int
    /// The SHA-256 from `<name>.sha256`, lowercase hex.
    public var sha256: String
    public var path: String { folder == "/" ? "/" + name : folder + "/" + name }
}

/// What `sftp -b` prints for `ls -ln FOLDER`: the regular files (their
/// paths, FOLDER/name) and their sizes.
public enum SFTPListing {
    public static func parse(_ output: String) -> [String: Int] {
        var files: [String: Int] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 9, fields[0].hasPrefix("-"), fields[0].count == 10, let size = Int(fields[4]) else { continue }
            // The name is what follows the date (a path when a folder was listed).
            guard let dateEnd = Self.nameStart(in: line) else { continue }
            files[String(line[dateEnd...])] = size
        }
        return files
    }

    /// The index where the name starts: after eight whitespace-separated fields.
    static func nameStart(in line: Substring) -> Substring.Index? {
        var index = line.startIndex
        for _ in 0..<8 {
            while index < line.endIndex, line[index] == " " { index = line.index(after: index) }
            guard index < line.endIndex else { return nil }
            while index < line.endIndex, line[index] != " " { index = line.index(after: index) }
        }
        while index < line.endIndex, line[index] == " " { index = line.index(after: index) }
        return index < line.endIndex ? index : nil
    }
}

/// One line of a checksum file: "<64 hex>  <name>" (sha256sum's format).
public enum ChecksumLine {
    public static func parse(_ text: String) -> (sha256: String, name: String)? {
        guard let line = text.split(separator: "\n").first else { return nil }
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2 else { return nil }
        let hex = parts[0].lowercased()
        guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else { return nil }
        var name = String(parts[1]).trimmingCharacters(in: .whitespaces)
        if name.hasPrefix("*") { name.removeFirst() }
        return (hex, name)
    }
}

public struct PullOptions: Sendable {
    /// `user@host` (or a Host from ~/.ssh/config).
    public var target: String
    public var destination: String
    public var port: Int?
    public var identity: String?
    public var knownHosts: String?
    public var acceptNewHostKey = false
    /// Extra `-o` options for ssh.
    public var sshOptions: [String] = []
    /// sftp's bandwidth limit in kbit/s.
    public var limitKbps: Int?
    /// Remove each file (and its checksum) on the device once the copy here is verified.
    public var deleteAfterVerify = false
    /// Folders on the device; the retrieval account's chroot shows these two.
    /// The device's folders as the retrieval account sees them: the SD
    /// card's recordings and photos, and the USB drive's recordings where
    /// docs/storage.md mounts it (absent: skipped).
    public var remoteFolders = ["/recordings", "/photos", "/media/obscura/obscura/recordings"]
    /// Age identities: each encrypted file (`.age`) is decrypted here once
    /// it is verified (`x.mp4.age` → `x.mp4`, the encrypted copy kept);
    /// empty: files are kept as they came.
    public var identities: [AgeIdentity] = []
    public var sftp = "sftp"
    /// Finished files (name, sha256) that are not wanted (a collector has
    /// them already): not fetched, counted in `PullSummary.skipped`.
    public var skip: (@Sendable (_ name: String, _ sha256: String) -> Bool)?
    /// sftp (and so its ssh) is killed when the caller dies, however it dies
    /// (util-linux's `setpriv --pdeathsig KILL`): a collector killed
    /// mid-run leaves no transfer running into the file its next run resumes.
    public var endsWithCaller = false

    public init(target: String, destination: String) {
        self.target = target
        self.destination = destination
    }
}

public struct PullProgress: Sendable, Equatable {
    public var name: String
    public var index: Int
    public var count: Int
    public var bytes: Int
    public var size: Int
    public var bytesPerSecond: Double
}

public struct PullSummary: Sendable, Equatable {
    /// Fetched and verified now.
    public var pulled: [String] = []
    public var bytesPulled = 0
    /// Bytes a resumed transfer already had from an earlier run.
    public var bytesResumed = 0
    /// Already here and verified earlier.
    public var alreadyHere: [String] = []
    /// Failures, each naming the file and what went wrong.
    public var failed: [String] = []
    /// Removed on the device after verification.
    public var deleted: [String] = []
    /// Decrypted here (the plaintext's names), and what was said of each
    /// (an interrupted recording).
    public var decrypted: [String] = []
    public var decryptionNotes: [String] = []
    /// Left out because `PullOptions.skip` said so.
    public var skipped = 0
}

/// Fetches finished recordings with OpenSSH's sftp: lists the device's
/// folders, fetches the checksum files, fetches what is new with `reget`
/// (an interrupted pull resumes where it stopped), verifies every file
/// against its SHA-256 before giving it its name here, and — when asked —
/// removes on the device only what was verified. Files being written are
/// never in the folders it lists; a file without a checksum is not finished
/// and is left alone.
public final class Puller: Sendable {
    public let options: PullOptions
    private let running = Atomic<Int32>(0)
    private let cancelled = Atomic<Bool>(false)

    public init(options: PullOptions) { self.options = options }

    /// Stops the transfer in progress (its partial file stays for a resume).
    /// SIGKILL: sftp inherits the caller's ignored SIGINT/SIGTERM. Its ssh
    /// then sees the pipe close and exits.
    public func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        let pid = running.load(ordering: .sequentiallyConsistent)
        if pid > 0 { try? Syscalls.signal(pid, SIGKILL) }  // (the run then ends and says it was interrupted)
    }

    var workspace: String { options.destination + "/.obscura-pull" }

    public func run(progress: @escaping @Sendable (PullProgress) -> Void = { _ in },
                    note: @escaping @Sendable (String) -> Void = { _ in }) throws(RetrievalError) -> PullSummary {
        // sftp may be gone (not installed, or exited at a refused
        // connection) before it reads its batch: the write must fail with
        // EPIPE, and sftp's status and words say why, instead of the
        // process dying silently of SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        var summary = PullSummary()
        let made = [options.destination, workspace].filter { !FileManager.default.fileExists(atPath: $0) }
        for folder in [options.destination, workspace] {
            do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
                throw RetrievalError("cannot create \(folder): \(error.localizedDescription)")
            }
        }
        let remote: [RemoteFile]
        do { remote = try listFinished(note: note) } catch {
            // Nothing came: the folders made for this run go again (rmdir
            // removes only empty ones, so nothing fetched earlier is touched).
            for folder in made.reversed() { try? Syscalls.removeFolder(folder) }
            throw error
        }

        // What is new, and what is here already (verified when it arrived).
        var wanted: [RemoteFile] = []
        var verifiedHere: [RemoteFile] = []
        for file in remote {
            if let skip = options.skip, skip(file.name, file.sha256) {
                summary.skipped += 1
                continue
            }
            let local = options.destination + "/" + file.name
            if FileManager.default.fileExists(atPath: local) {
                let recorded = (try? String(contentsOfFile: local + ".sha256", encoding: .utf8)).flatMap(ChecksumLine.parse)
                if recorded?.sha256 == file.sha256 {
                    summary.alreadyHere.append(file.name)
                    verifiedHere.append(file)
                } else {
                    summary.failed.append("\(file.name): \(local) exists and is not this recording; left as it is")
                }
                continue
            }
            wanted.append(file)
        }

        if !wanted.isEmpty { try fetch(wanted, summary: &summary, progress: progress, note: note) }
        if cancelled.load(ordering: .sequentiallyConsistent) { throw RetrievalError("interrupted; run it again to resume") }

        for file in wanted where !summary.failed.contains(where: { $0.hasPrefix(file.name + ":") }) {
            verifiedHere.append(file)
        }
        if !options.identities.isEmpty { decrypt(verifiedHere, summary: &summary) }
        if options.deleteAfterVerify, !verifiedHere.isEmpty {
            try delete(verifiedHere, summary: &summary, note: note)
        }
        return summary
    }

    // MARK: Steps

    /// Lists the folders and fetches every checksum file; files with a
    /// checksum are the finished ones.
    func listFinished(note: @Sendable (String) -> Void) throws(RetrievalError) -> [RemoteFile] {
        let sums = workspace + "/sums"
        try? FileManager.default.removeItem(atPath: sums)
        var batch: [String] = []
        for (i, folder) in options.remoteFolders.enumerated() {
            do { try FileManager.default.createDirectory(atPath: "\(sums)/\(i)", withIntermediateDirectories: true) } catch {
                throw RetrievalError("cannot create \(sums)/\(i): \(error.localizedDescription)")
            }
            batch.append("-ls -ln \(Self.quote(folder))")
            // Unquoted, so sftp expands the pattern (spaces escaped instead).
            batch.append("-get \(Self.escape(folder))/*.sha256 \(Self.quote("\(sums)/\(i)/"))")
        }
        defer { try? FileManager.default.removeItem(atPath: sums) }
        let output = try sftp(batch)
        var files: [RemoteFile] = []
        let listed = SFTPListing.parse(output)
        for (i, folder) in options.remoteFolders.enumerated() {
            for (path, size) in listed where (path as NSString).deletingLastPathComponent == folder {
                let name = (path as NSString).lastPathComponent
                if name.hasSuffix(".sha256") || name.hasPrefix(".") || name.hasSuffix(".partial") { continue }
                guard let text = try? String(contentsOfFile: "\(sums)/\(i)/\(name).sha256", encoding: .utf8) else {
                    note("\(path) has no checksum yet (not finished); left for later")
                    continue
                }
                guard let line = ChecksumLine.parse(text), line.name == name else {
                    note("\(path).sha256 is not a checksum of \(name); left alone")
                    continue
                }
                files.append(RemoteFile(folder: folder, name: name, size: size, sha256: line.sha256))
            }
        }
        return files.sorted { ($0.folder, $0.name) < ($1.folder, $1.name) }
    }

    /// Fetches into the workspace with reget (resuming what an earlier run
    /// left), then verifies and names each file.
    func fetch(_ files: [RemoteFile], summary: inout PullSummary, progress: @escaping @Sendable (PullProgress) -> Void,
               note: @Sendable (String) -> Void) throws(RetrievalError) {
        var batch: [String] = []
        var resumed: [String: Int] = [:]
        for file in files {
            let part = partPath(file)
            let have = Self.size(part) ?? 0
            if have > file.size { try? Syscalls.remove(part) } else if have > 0 { resumed[file.name] = have }
            batch.append("-reget \(Self.quote(file.path)) \(Self.quote(part))")
        }
        for (name, bytes) in resumed { note("resuming \(name) at \(bytes) bytes") }

        // Progress: the part files grow in order. Sampled twice a second on
        // a thread of its own, told to stop through a wakeup and joined
        // before the files are verified; it holds only what it reads.
        let stop: Wakeup
        do { stop = try Wakeup() } catch { throw RetrievalError("cannot watch the progress: \(error)") }
        let parts = files.map { (file: $0, part: partPath($0)) }
        let watcher: JoinableThread
        do {
            watcher = try JoinableThread(name: "pull progress") {
                var last: (index: Int, bytes: Int, time: ContinuousClock.Instant)?
                while !stop.isSignalled {
                    let index = parts.lastIndex { (Self.size($0.part) ?? 0) > 0 } ?? 0
                    let (file, part) = parts[index]
                    let bytes = Self.size(part) ?? 0
                    let now = ContinuousClock.now
                    var rate = 0.0
                    if let last, last.index == index, now > last.time {
                        let elapsed = (now - last.time) / .seconds(1)
                        rate = Double(bytes - last.bytes) / elapsed
                    }
                    last = (index, bytes, now)
                    // Nothing to show while connecting.
                    if bytes > 0 || index > 0 { progress(PullProgress(name: file.name, index: index + 1, count: parts.count, bytes: bytes, size: file.size,
                                          bytesPerSecond: rate)) }
                    _ = try? stop.wait(for: nil, timeout: .milliseconds(500))
                }
            }
        } catch { throw RetrievalError("cannot watch the progress: \(error)") }
        defer { stop.signal(); watcher.join() }
        let (_, said) = try sftpWithErrors(batch)
        stop.signal()
        watcher.join()
        for line in said.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            note("sftp: \(line.trimmingCharacters(in: .whitespacesAndNewlines))")
        }

        verify(files, resumed: resumed, summary: &summary)
    }

    /// Each fetched file checked against the device's checksum, given its
    /// own beside it, and named: a short or mismatched one is said and left.
    private func verify(_ files: [RemoteFile], resumed: [String: Int], summary: inout PullSummary) {
        for file in files {
            let part = partPath(file)
            let have = Self.size(part) ?? 0
            if have < file.size {
                summary.failed.append("\(file.name): \(have) of \(file.size) bytes arrived; run again to resume")
                continue
            }
            let hex: String
            do { hex = try Checksum.sha256(of: part) } catch {
                summary.failed.append("\(file.name): \(error)")
                continue
            }
            guard hex == file.sha256, have == file.size else {
                try? Syscalls.remove(part)  // (fetched again next time; the mismatch is what is said)
                summary.failed.append("\(file.name): checksum mismatch (device \(file.sha256.prefix(12))…, copy \(hex.prefix(12))…); the copy is dropped and the file stays on the device")
                continue
            }
            let final = options.destination + "/" + file.name
            // The checksum, then the file under its name, each synced with
            // its folder: what is said pulled survives a power cut.
            do {
                try Checksum.write(for: final, digest: hex)
                try Syscalls.syncAndPublish(part, as: final)
            } catch {
                summary.failed.append("\(file.name): \(error)")
                continue
            }
            summary.pulled.append(file.name)
            summary.bytesPulled += file.size - (resumed[file.name] ?? 0)
            summary.bytesResumed += resumed[file.name] ?? 0
        }
    }

    /// Decrypts the verified encrypted files that have no plaintext here yet
    /// (verified first: the checksum is the encrypted file's).
    func decrypt(_ files: [RemoteFile], summary: inout PullSummary) {
        for file in files {
            let local = options.destination + "/" + file.name
            guard let plain = Decryption.plainName(of: local), !FileManager.default.fileExists(atPath: plain) else { continue }
            do {
                let result = try Decryption.decrypt(local, identities: options.identities)
                summary.decrypted.append((plain as NSString).lastPathComponent)
                if result.decryption.truncated { summary.decryptionNotes.append(Decryption.describe(result)) }
            } catch {
                summary.failed.append("\(file.name): not decrypted: \(error)")
            }
        }
    }

    /// Removes verified files on the device: the checksum first (the file
    /// stops being "finished" to other pulls), then the file. Each copy here
    /// is hashed again right before.
    func delete(_ files: [RemoteFile], summary: inout PullSummary, note: @Sendable (String) -> Void) throws(RetrievalError) {
        var batch: [String] = []
        var names: [RemoteFile] = []
        for file in files {
            let local = options.destination + "/" + file.name
            guard Self.size(local) == file.size, (try? Checksum.sha256(of: local)) == file.sha256 else {
                note("\(file.name): the copy here does not match the device's checksum; not deleted on the device")
                continue
            }
            batch.append("-rm \(Self.quote(file.path + ".sha256"))")
            batch.append("-rm \(Self.quote(file.path))")
            names.append(file)
        }
        guard !batch.isEmpty else { return }
        // "-": one refusal does not stop the others; sftp names each one.
        let (_, errors) = try sftpWithErrors(batch)
        for file in names {
            if let refusal = errors.split(separator: "\n").first(where: { $0.contains("remote delete") && $0.contains(file.path + ":") }) {
                summary.failed.append("\(file.name): not deleted on the device: \(refusal.trimmingCharacters(in: .whitespacesAndNewlines))")
            } else {
                summary.deleted.append(file.name)
            }
        }
    }

    // MARK: sftp

    func partPath(_ file: RemoteFile) -> String { workspace + "/" + file.name + ".part" }

    /// The argument vector for `sftp -b -`. Host keys are checked strictly
    /// (`yes`, or `accept-new` when asked), first, so that neither an
    /// ssh_config nor an option loosens it. The user's `--ssh-option`s come
    /// next: ssh takes the first value given for an option, so they
    /// override the other defaults here (errors only, no prompt, a 15 s
    /// connect limit, a keepalive).
    public func sftpArguments() -> [String] {
        var args = ["-b", "-", "-o", "StrictHostKeyChecking=\(options.acceptNewHostKey ? "accept-new" : "yes")"]
        for option in options.sshOptions { args += ["-o", option] }
        args += ["-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=10"]
        if let port = options.port { args += ["-P", String(port)] }
        if let identity = options.identity { args += ["-i", identity, "-o", "IdentitiesOnly=yes"] }
        if let knownHosts = options.knownHosts { args += ["-o", "UserKnownHostsFile=\(knownHosts)"] }
        if let limit = options.limitKbps { args += ["-l", String(limit)] }
        return args + [options.target]
    }

    /// Runs one sftp batch; returns its standard output. Fails with sftp's
    /// own words when it cannot connect or a command without "-" fails.
    func sftp(_ commands: [String]) throws(RetrievalError) -> String { try sftpWithErrors(commands).output }

    func sftpWithErrors(_ commands: [String]) throws(RetrievalError) -> (output: String, errors: String) {
        if cancelled.load(ordering: .sequentiallyConsistent) { throw RetrievalError("interrupted; run it again to resume") }
        var executable = options.sftp.hasPrefix("/") ? options.sftp : "/usr/bin/env"
        var arguments = (options.sftp.hasPrefix("/") ? [] : [options.sftp]) + sftpArguments()
        if options.endsWithCaller {
            executable = Self.setpriv
            arguments = ["--pdeathsig", "KILL", "--", options.sftp] + sftpArguments()
        }
        let result: HelperProgram.Result
        do {
            result = try HelperProgram.run(executable, arguments, input: Data((commands.joined(separator: "\n") + "\n").utf8)) { pid in
                running.store(pid, ordering: .sequentiallyConsistent)
            }
        } catch {
            running.store(0, ordering: .sequentiallyConsistent)
            throw RetrievalError("cannot run \(options.sftp) (install openssh-client): \(error)")
        }
        running.store(0, ordering: .sequentiallyConsistent)
        let err = result.errors
        if cancelled.load(ordering: .sequentiallyConsistent) { throw RetrievalError("interrupted; run it again to resume") }
        if result.status == 127 && (!options.sftp.hasPrefix("/") || options.endsWithCaller) {
            // env's (or setpriv's) "not found": no sftp on the PATH.
            throw RetrievalError("cannot run \(options.sftp) (install openssh-client): \(err.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        guard result.status == 0 else {
            if let changed = HostKeyChange(sshErrors: err) { throw RetrievalError(changed.message(for: options.target)) }
            let said = err.split(separator: "\n").map(String.init).filter { !$0.isEmpty }.suffix(3).joined(separator: "; ")
            throw RetrievalError("sftp to \(options.target) failed (exit \(result.status)): \(said.isEmpty ? "no message" : said)")
        }
        return (String(decoding: result.output, as: UTF8.self), err)
    }

    /// util-linux's setpriv (in every Debian and Raspberry Pi OS).
    public static let setpriv = "/usr/bin/setpriv"

    /// sftp's batch syntax: double quotes with backslash escapes.
    static func quote(_ path: String) -> String {
        "\"" + path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// A path outside quotes: backslash before the characters sftp splits
    /// words on or expands.
    static func escape(_ path: String) -> String {
        var out = ""
        for c in path {
            if " \t\"'\\*?[]".contains(c) { out.append("\\") }
            out.append(c)
        }
        return out
    }

    static func size(_ path: String) -> Int? {
        (try? Syscalls.status(path)).map { Int($0.st_size) }
    }
}
