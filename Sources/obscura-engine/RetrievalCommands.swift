import ArgumentParser
import ObscuraCommandLine
import Dispatch
import Foundation
import ObscuraAge
import ObscuraSystem
import ObscuraRetrieval

struct PullCommand: ParsableCommand {
    static let configuration = CommandDescriptions.pull

    @Argument(help: "The device, as user@host (or a Host from ~/.ssh/config).") var target: String
    @Argument(help: "Where recordings go (created if missing).") var destination = "."
    @Option(name: .shortAndLong, help: "SSH port.") var port: Int?
    @Option(name: .shortAndLong, help: "Private key file.") var identity: String?
    @Option(help: "known_hosts file to check the device's host key against.") var knownHosts: String?
    @Flag(help: "Trust and remember the device's host key on first contact (ssh's accept-new).") var acceptNewHostKey = false
    @Option(name: .customLong("ssh-option"), help: "An extra ssh -o option, e.g. ProxyJump=gateway (repeatable).") var sshOptions: [String] = []
    @Option(help: "Bandwidth limit in kbit/s.") var limitKbps: Int?
    @Flag(help: "Remove files on the device once their copies here are verified (needs deploy/install --allow-delete on the device).")
    var delete = false
    @Option(name: .customLong("remote-folder"), help: "A folder on the device (repeatable; default /recordings, /photos and /media/obscura/obscura/recordings, the retrieval account's view).")
    var remoteFolders: [String] = []
    @Option(help: "An age identity file (age-keygen's): encrypted files (.age) are decrypted here after they are verified.")
    var identityFile: String?

    func validate() throws {
        try Options.check {
            if let identityFile {
                do { _ = try Decryption.identities(file: identityFile) } catch { throw UserFacingError("--identity-file: \(error)") }
            }
            try Limits.port.check(ifGiven: port, "--port")
            try Limits.kilobitsPerSecond.check(ifGiven: limitKbps, "--limit-kbps")
        }
        for folder in remoteFolders where !folder.hasPrefix("/") {
            throw ValidationError("--remote-folder \(folder) must be an absolute path on the device")
        }
    }

    func run() throws {
        var options = PullOptions(target: target, destination: destination)
        options.port = port
        options.identity = identity
        options.knownHosts = knownHosts
        options.acceptNewHostKey = acceptNewHostKey
        options.sshOptions = sshOptions
        options.limitKbps = limitKbps
        options.deleteAfterVerify = delete
        if let identityFile { options.identities = (try? Decryption.identities(file: identityFile)) ?? [] }
        if !remoteFolders.isEmpty { options.remoteFolders = remoteFolders.map { $0.count > 1 && $0.hasSuffix("/") ? String($0.dropLast()) : $0 } }
        let puller = Puller(options: options)
        var sources: [any DispatchSourceSignal] = []
        for signal in [SIGINT, SIGTERM] {
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { puller.cancel() }
            source.resume()
            sources.append(source)
        }
        defer { sources.forEach { $0.cancel() } }
        let summary: PullSummary
        do {
            summary = try puller.run(progress: { p in
                let percent = p.size > 0 ? 100 * p.bytes / p.size : 100
                Log.status(String(format: "pulling %@ (%d of %d) %3d%% %@ of %@ %@/s", p.name, p.index, p.count, percent,
                                  Self.megabytes(p.bytes), Self.megabytes(p.size), Self.megabytes(Int(p.bytesPerSecond))))
            }, note: { Log.note($0) })
        } catch {
            Log.endStatus()
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
        Log.endStatus()
        for name in summary.pulled { Log.output("pulled \(destination)/\(name) (sha256 verified)") }
        for line in summary.failed { Log.note("failed: \(line)") }
        for name in summary.deleted { Log.output("deleted on the device: \(name)") }
        for name in summary.decrypted { Log.output("decrypted \(destination)/\(name)") }
        for line in summary.decryptionNotes { Log.note(line) }
        var parts = ["\(summary.pulled.count) pulled (\(Self.megabytes(summary.bytesPulled)) transferred"
                     + (summary.bytesResumed > 0 ? ", \(Self.megabytes(summary.bytesResumed)) resumed" : "") + ")",
                     "\(summary.alreadyHere.count) already here"]
        if delete { parts.append("\(summary.deleted.count) deleted on the device") }
        if identityFile != nil { parts.append("\(summary.decrypted.count) decrypted") }
        if !summary.failed.isEmpty { parts.append("\(summary.failed.count) failed") }
        Log.note(parts.joined(separator: ", "))
        if !summary.failed.isEmpty { throw ExitCode.failure }
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
}

struct DecryptCommand: ParsableCommand {
    static let configuration = CommandDescriptions.decrypt

    @Option(help: "An age identity file (age-keygen's).") var identityFile: String
    @Argument(help: "Encrypted files (.age, or .age.partial: an interrupted recording as it was left).") var files: [String]

    func validate() throws {
        try Options.check {
            do { _ = try Decryption.identities(file: identityFile) } catch { throw UserFacingError("--identity-file: \(error)") }
            for file in files where Decryption.plainName(of: file) == nil {
                throw UserFacingError("\(file): not an encrypted file (the name ends in neither .age nor .age.partial)")
            }
            if files.isEmpty { throw UserFacingError("name at least one .age file") }
        }
    }

    func run() throws {
        let identities = try Decryption.identities(file: identityFile)
        var failed = false
        for file in files {
            do {
                let result = try Decryption.decrypt(file, identities: identities)
                Log.output(Decryption.describe(result))
            } catch {
                Log.note("error: \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }
}

struct EncryptCommand: ParsableCommand {
    static let configuration = CommandDescriptions.encrypt

    @Option(help: "An age recipient (age1…); repeatable.") var recipient: [String] = []
    @Option(help: "A file of age recipients, one per line.") var recipientsFile: String?
    @Argument(help: "Files to encrypt.") var files: [String]

    func validate() throws {
        try Options.check {
            if try Options.recipients(recipient, file: recipientsFile).isEmpty {
                throw UserFacingError("give --recipient or --recipients-file: the age1… keys to encrypt to")
            }
            if files.isEmpty { throw UserFacingError("name at least one file") }
        }
    }

    func run() throws {
        let recipients = try Options.recipients(recipient, file: recipientsFile)
        var failed = false
        for file in files {
            do { Log.output("encrypted \(try Encryption.encrypt(file, to: recipients))") } catch {
                Log.note("error: \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }
}
