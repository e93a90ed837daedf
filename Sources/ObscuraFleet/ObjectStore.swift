import Foundation
import ObscuraFiles
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// What a store says it holds under a key.
public struct StoredObject: Sendable, Equatable {
    public var size: Int
    /// The sha256 the object carries (its metadata, or its hash in a folder).
    public var sha256: String?
}

/// Where collected files go. Every put is whole or absent: a reader never
/// sees half an object, and an interrupted put leaves nothing behind once
/// `cleanUp` has run.
public protocol ObjectStore: Sendable {
    /// For messages: "s3://bucket at endpoint", "folder /srv/fleet".
    var place: String { get }
    /// What the store holds under `key`, or nil when it holds nothing there.
    func stat(_ key: String) throws(CollectError) -> StoredObject?
    /// Stores `file` under `key`, carrying `sha256`.
    func put(_ file: String, key: String, sha256: String) throws(CollectError)
    /// Ends what an interrupted earlier run left half-done under `prefix`
    /// (unfinished multipart uploads, temporaries). Says what it ended.
    func cleanUp(prefix: String) throws(CollectError) -> String?
}

/// A folder: each file copied to a temporary beside its place, fsynced, and
/// renamed; its sha256 is the file's own (hashed again to answer `stat`).
public struct FolderStore: ObjectStore {
    public let root: String
    public init(root: String) { self.root = root }
    public var place: String { "folder \(root)" }

    static let temporaryPrefix = ".collecting-"

    public func stat(_ key: String) throws(CollectError) -> StoredObject? {
        let path = root + "/" + key
        let size = FileSize.of(path)
        guard size >= 0 else {
            if errno == ENOENT { return nil }
            throw CollectError("stat \(path): \(String(cString: strerror(errno)))")
        }
        do { return StoredObject(size: size, sha256: try Checksum.sha256(of: path)) } catch {
            throw CollectError("reading \(path) back: \(error)")
        }
    }

    public func put(_ file: String, key: String, sha256: String) throws(CollectError) {
        let path = root + "/" + key
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = folder + "/" + Self.temporaryPrefix + (path as NSString).lastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: temporary)
            try FileManager.default.copyItem(atPath: file, toPath: temporary)
        } catch {
            throw CollectError("copying \(file) to \(temporary): \(error.localizedDescription)")
        }
        do throws(SystemError) {
            let fd = try Syscalls.open(temporary, O_RDONLY, 0)
            try Syscalls.fsync(fd.rawValue, path: temporary)
            fd.close()
            if rename(temporary, path) != 0 { throw SystemError.errno("rename", "\(temporary) → \(path)") }
            let dir = try Syscalls.open(folder, O_RDONLY | O_DIRECTORY, 0)
            try Syscalls.fsync(dir.rawValue, path: folder)
            dir.close()
        } catch {
            unlink(temporary)
            throw CollectError("storing \(key): \(error)")
        }
    }

    public func cleanUp(prefix: String) throws(CollectError) -> String? {
        let top = root + "/" + prefix
        guard let walker = FileManager.default.enumerator(atPath: top) else { return nil }
        var removed: [String] = []
        while let relative = walker.nextObject() as? String {
            guard (relative as NSString).lastPathComponent.hasPrefix(Self.temporaryPrefix) else { continue }
            if unlink(top + "/" + relative) == 0 { removed.append(relative) }
        }
        return removed.isEmpty ? nil : "removed \(removed.count) interrupted cop\(removed.count == 1 ? "y" : "ies")"
    }
}

/// An S3 bucket (AWS, Ceph's radosgw, MinIO, Garage…) through rclone, the
/// S3 client Debian packages. The credentials go to rclone in its
/// environment (never on its command line); nothing else of the
/// collector's environment does. Each object carries the kiosk's sha256 as
/// user metadata (`x-amz-meta-sha256`); rclone sends every part's MD5, which
/// the store checks as it receives it, and aborts a multipart upload that
/// fails.
public struct S3Store: ObjectStore {
    public let settings: S3Settings
    let secret: String?

    public init(settings: S3Settings) throws(CollectError) {
        self.settings = settings
        if let file = settings.secretAccessKeyFile {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CollectError("cannot read the secret access key file \(file) (store.s3.secret_access_key_file)")
            }
            secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            secret = nil
        }
    }

    public var place: String { "s3://\(settings.bucket)" + (settings.endpoint.map { " at \($0)" } ?? "") }

    /// rclone's remote, configured only by environment variables.
    static let remote = "OBSCURASTORE"

    var environment: [String: String] {
        let prefix = "RCLONE_CONFIG_\(Self.remote)_"
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                   "HOME": ProcessInfo.processInfo.environment["HOME"] ?? "/",
                   "RCLONE_CONFIG": "/dev/null",
                   prefix + "TYPE": "s3", prefix + "PROVIDER": settings.provider]
        if let endpoint = settings.endpoint { env[prefix + "ENDPOINT"] = endpoint }
        if let region = settings.region { env[prefix + "REGION"] = region }
        if let id = settings.accessKeyID, let secret {
            env[prefix + "ACCESS_KEY_ID"] = id
            env[prefix + "SECRET_ACCESS_KEY"] = secret
        } else {
            // No keys in the fleet file: the machine's own (an instance role,
            // AWS_ACCESS_KEY_ID in the unit's environment).
            env[prefix + "ENV_AUTH"] = "true"
            for (k, v) in ProcessInfo.processInfo.environment where k.hasPrefix("AWS_") && k != "AWS_CA_BUNDLE" { env[k] = v }
        }
        return env
    }

    var commonArguments: [String] {
        var args = ["--s3-no-check-bucket", "--low-level-retries", "3"]
        if let ca = settings.caCert { args += ["--ca-cert", ca] }
        // rclone's unit is KiB/s.
        if let kbps = settings.limitKbps { args += ["--bwlimit", "\(max(1, kbps * 1000 / 8 / 1024))k"] }
        return args
    }

    func path(_ key: String) -> String { "\(Self.remote):\(settings.bucket)/\(key)" }

    func rclone(_ arguments: [String], doing what: String) throws(CollectError) -> String {
        let result = try ChildProgram.run(settings.rclone, arguments + commonArguments, environment: environment)
        guard result.status == 0 else {
            throw CollectError("\(what): rclone \(arguments.first ?? "") failed (exit \(result.status)): \(ChildProgram.said(result.errors))")
        }
        return result.output
    }

    public func stat(_ key: String) throws(CollectError) -> StoredObject? {
        let output = try rclone(["lsjson", "--stat", "--metadata", path(key)], doing: "asking \(place) for \(key)")
        struct Entry: Decodable {
            var Size: Int
            var IsDir: Bool
            var Metadata: [String: String]?
        }
        guard let entry = try? JSONDecoder().decode(Entry.self, from: Data(output.utf8)) else {
            throw CollectError("asking \(place) for \(key): rclone lsjson said what is not an object's description: \(output.prefix(200))")
        }
        // A key with nothing under it reads as an empty folder.
        guard !entry.IsDir else { return nil }
        return StoredObject(size: entry.Size, sha256: entry.Metadata?["sha256"])
    }

    public func put(_ file: String, key: String, sha256: String) throws(CollectError) {
        _ = try rclone(["copyto", "--metadata", "--metadata-set", "sha256=\(sha256)",
                        "--s3-upload-cutoff", "\(settings.multipartFromMiB)Mi", "--s3-chunk-size", "\(settings.partMiB)Mi",
                        file, path(key)], doing: "uploading \(key) to \(place)")
    }

    public func cleanUp(prefix: String) throws(CollectError) -> String? {
        let said = try rclone(["backend", "cleanup", path(prefix), "-o", "max-age=0s"], doing: "ending unfinished uploads under \(prefix)")
        return said.isEmpty ? nil : said
    }
}
