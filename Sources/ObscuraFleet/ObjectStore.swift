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

/// One file to store: where it is here, the key it goes under, and the
/// sha256 it carries there.
public struct Upload: Sendable, Equatable {
    public var file: String
    public var key: String
    public var sha256: String
    public var size: Int

    public init(file: String, key: String, sha256: String, size: Int) {
        self.file = file
        self.key = key
        self.sha256 = sha256
        self.size = size
    }
}

/// Where collected files go. Every put is whole or absent: a reader never
/// sees half an object, and an interrupted put leaves nothing behind once
/// `cleanUp` has run. A kiosk's files are asked about, stored and checked
/// a batch at a time: a helper started per file would cost more than the
/// file (rclone takes about 0.2 s to start).
public protocol ObjectStore: Sendable {
    /// For messages: "s3://bucket at endpoint", "folder /srv/fleet".
    var place: String { get }
    /// What the store holds under those of `keys` it holds anything under.
    func holdings(_ keys: [String]) throws(CollectError) -> [String: StoredObject]
    /// Stores each upload under its key, carrying its sha256, never over an
    /// object already there. `staging`: a folder of the collector's own, on
    /// the uploads' filesystem, the store may lay them out in (emptied
    /// after). When it throws, some may be stored: `holdings` says which.
    func put(_ uploads: [Upload], staging: String) throws(CollectError)
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

    public func holdings(_ keys: [String]) throws(CollectError) -> [String: StoredObject] {
        var held: [String: StoredObject] = [:]
        for key in keys { held[key] = try stat(key) }
        return held
    }

    public func put(_ uploads: [Upload], staging: String) throws(CollectError) {
        var failed: [String] = []
        for upload in uploads {
            do throws(CollectError) { try put(upload.file, key: upload.key) } catch { failed.append(error.description) }
        }
        guard failed.isEmpty else {
            throw CollectError("\(failed.count) of \(uploads.count) not stored: \(failed.prefix(3).joined(separator: "; "))")
        }
    }

    func stat(_ key: String) throws(CollectError) -> StoredObject? {
        let path = root + "/" + key
        let found: Int?
        do { found = try FileSize.of(path) } catch { throw CollectError("\(error)") }
        guard let size = found else { return nil }
        do { return StoredObject(size: size, sha256: try Checksum.sha256(of: path)) } catch {
            throw CollectError("reading \(path) back: \(error)")
        }
    }

    func put(_ file: String, key: String) throws(CollectError) {
        let path = root + "/" + key
        let existing: Int?
        do { existing = try FileSize.of(path) } catch { throw CollectError("\(error)") }
        guard existing == nil else { throw CollectError("\(path) is there already; not overwritten") }
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
            try Syscalls.syncAndPublish(temporary, as: path)
        } catch {
            try? Syscalls.remove(temporary)  // (the store's own error is the one said)
            throw CollectError("storing \(key): \(error)")
        }
    }

    public func cleanUp(prefix: String) throws(CollectError) -> String? {
        let top = root + "/" + prefix
        guard let walker = FileManager.default.enumerator(atPath: top) else { return nil }
        var removed: [String] = []
        while let relative = walker.nextObject() as? String {
            guard (relative as NSString).lastPathComponent.hasPrefix(Self.temporaryPrefix) else { continue }
            if (try? Syscalls.remove(top + "/" + relative, missingIsFine: false)) != nil { removed.append(relative) }
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

    func rclone(_ arguments: [String], doing what: String, input: Data? = nil) throws(CollectError) -> String {
        let result = try ChildProgram.run(settings.rclone, arguments + commonArguments, environment: environment, input: input)
        guard result.status == 0 else {
            throw CollectError("\(what): rclone \(arguments.first ?? "") failed (exit \(result.status)): \(ChildProgram.said(result.errors))")
        }
        return result.output
    }

    /// One question for all of them: rclone looks each key up (a HEAD each,
    /// in one process; a listing would not carry their metadata), and says
    /// nothing of a key with nothing under it.
    public func holdings(_ keys: [String]) throws(CollectError) -> [String: StoredObject] {
        guard !keys.isEmpty else { return [:] }
        let output = try rclone(["lsjson", "--recursive", "--files-only", "--metadata", "--files-from-raw", "-", path("")],
                                doing: "asking \(place) for \(keys.count) key\(keys.count == 1 ? "" : "s")",
                                input: Data(keys.map { $0 + "\n" }.joined().utf8))
        struct Entry: Decodable {
            var Path: String
            var Size: Int
            var Metadata: [String: String]?
        }
        guard let entries = try? JSONDecoder().decode([Entry].self, from: Data(output.utf8)) else {
            throw CollectError("asking \(place) for \(keys.count) keys: rclone lsjson said what is not a list of objects: \(output.prefix(200))")
        }
        var held: [String: StoredObject] = [:]
        for entry in entries { held[entry.Path] = StoredObject(size: entry.Size, sha256: entry.Metadata?["sha256"]) }
        return held
    }

    /// One rclone for the batch: each file linked into `staging` under its
    /// key, its sha256 in a user extended attribute (which rclone's
    /// --metadata sends as the object's x-amz-meta-sha256), then copied up
    /// in parallel, nothing over an object already there. Where the
    /// staging folder keeps no extended attributes, a file at a time.
    public func put(_ uploads: [Upload], staging: String) throws(CollectError) {
        guard !uploads.isEmpty else { return }
        defer { try? FileManager.default.removeItem(atPath: staging) }
        do throws(SystemError) {
            try stage(uploads, in: staging)
        } catch where error.code == EOPNOTSUPP || error.code == ENOTSUP {
            for upload in uploads { try putOne(upload) }
            return
        } catch {
            throw CollectError("laying out the uploads in \(staging): \(error)")
        }
        _ = try rclone(["copy", "--metadata", "--ignore-existing", "--no-traverse", "--files-from-raw", "-"]
                       + partArguments + [staging, path("")],
                       doing: "uploading \(uploads.count) file\(uploads.count == 1 ? "" : "s") to \(place)",
                       input: Data(uploads.map { $0.key + "\n" }.joined().utf8))
    }

    func stage(_ uploads: [Upload], in staging: String) throws(SystemError) {
        try? FileManager.default.removeItem(atPath: staging)
        for upload in uploads {
            let staged = staging + "/" + upload.key
            do {
                try FileManager.default.createDirectory(atPath: (staged as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
            } catch {
                throw SystemError(call: "mkdir", code: EIO, detail: "\(staged): \(error.localizedDescription)")
            }
            try Syscalls.link(upload.file, staged)
            try Syscalls.setAttribute(staged, name: "user.sha256", value: upload.sha256)
        }
    }

    func putOne(_ upload: Upload) throws(CollectError) {
        _ = try rclone(["copyto", "--metadata", "--metadata-set", "sha256=\(upload.sha256)", "--ignore-existing"]
                       + partArguments + [upload.file, path(upload.key)], doing: "uploading \(upload.key) to \(place)")
    }

    var partArguments: [String] {
        ["--s3-upload-cutoff", "\(settings.multipartFromMiB)Mi", "--s3-chunk-size", "\(settings.partMiB)Mi"]
    }

    public func cleanUp(prefix: String) throws(CollectError) -> String? {
        let said = try rclone(["backend", "cleanup", path(prefix), "-o", "max-age=0s"], doing: "ending unfinished uploads under \(prefix)")
        return said.isEmpty ? nil : said
    }
}
