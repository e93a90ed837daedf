import Foundation
import ObscuraFormats

/// One kiosk of the fleet, as the fleet file names it.
public struct Kiosk: Sendable, Equatable {
    /// Its name: the first part of every key it is stored under.
    public var name: String
    /// `user@host` (or a Host from the collector's ~/.ssh/config).
    public var address: String
    public var port: Int?
    /// The collector's private SSH key for it.
    public var key: String?
    public var knownHosts: String?
    /// Age identity files: with `decrypt`, encrypted recordings are stored
    /// decrypted. Without, they are stored as the kiosk keeps them.
    public var identities: [String] = []
    public var decrypt = false
    public var limitKbps: Int?
    /// Folders on the kiosk (the retrieval account's view); nil: the pull's default.
    public var folders: [String]?
}

/// Where collected files go: an S3 bucket (through rclone) or a folder.
public enum StoreChoice: Sendable, Equatable {
    case s3(S3Settings)
    case folder(String)
}

public struct S3Settings: Sendable, Equatable {
    /// rclone's provider name: AWS, Ceph, Minio, Other (Garage)…
    public var provider = "Other"
    public var endpoint: String?
    public var region: String?
    public var bucket: String
    public var accessKeyID: String?
    /// The secret access key, read from this file (mode 0600, the collector's own).
    public var secretAccessKeyFile: String?
    /// A CA bundle to trust for the endpoint (rclone's --ca-cert).
    public var caCert: String?
    /// Files this big or bigger go up in parts of `partMiB` (multipart).
    public var multipartFromMiB = 64
    public var partMiB = 16
    public var rclone = "rclone"
    /// The uploads' bandwidth limit in kbit/s (the collector's uplink is shared).
    public var limitKbps: Int?
}

/// The fleet file (TOML): the collector's own settings, the store, and the
/// kiosks. Unknown keys are refused, naming file, line and key.
///
///     [collector]
///     spool = "/var/lib/obscura-collect"   # transfers in progress, what is stored
///     metrics = "/var/lib/prometheus/node-exporter/obscura-collect.prom"
///     parallel = 4                         # kiosks at once
///     connect_timeout_seconds = 15
///
///     [store.s3]                           # or: [store] folder = "/srv/fleet"
///     provider = "Ceph"
///     endpoint = "http://rgw.example:7480"
///     bucket = "kiosks"
///     access_key_id = "…"
///     secret_access_key_file = "/etc/obscura/collect-s3-secret"
///     limit_kbps = 50000                   # uploads' bandwidth (optional)
///
///     [ssh]                                # defaults for every kiosk
///     key = "/etc/obscura/collect_ed25519"
///     known_hosts = "/etc/obscura/collect_known_hosts"
///
///     [kiosks.shop-1]
///     address = "obscura-fetch@10.0.0.21"
public struct FleetFile: Sendable, Equatable {
    public var spool: String
    public var metrics: String?
    public var parallel = 4
    public var connectTimeoutSeconds = 15
    public var store: StoreChoice
    public var kiosks: [Kiosk]

    public static let nameCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

    public init(contentsOf path: String) throws(ConfigurationError) {
        try self.init(TOMLDocument(contentsOf: path))
    }

    public init(file: String, text: String) throws(ConfigurationError) {
        try self.init(TOMLDocument(file: file, text: text))
    }

    init(_ document: TOMLDocument) throws(ConfigurationError) {
        let r = TOMLReader(document)
        spool = try r.string("collector.spool") ?? "/var/lib/obscura-collect"
        metrics = try r.string("collector.metrics")
        parallel = try r.int("collector.parallel", range: 1...256) ?? 4
        connectTimeoutSeconds = try r.int("collector.connect_timeout_seconds", range: 1...3600) ?? 15
        store = try Self.readStore(r, file: document.file)
        kiosks = try Self.readKiosks(r, document: document)
        try r.rejectUnknownKeys()
    }

    static func readStore(_ r: TOMLReader, file: String) throws(ConfigurationError) -> StoreChoice {
        let folder = try r.string("store.folder")
        let bucket = try r.string("store.s3.bucket")
        var s3 = S3Settings(bucket: bucket ?? "")
        s3.provider = try r.string("store.s3.provider") ?? "Other"
        s3.endpoint = try r.string("store.s3.endpoint")
        s3.region = try r.string("store.s3.region")
        s3.accessKeyID = try r.string("store.s3.access_key_id")
        s3.secretAccessKeyFile = try r.string("store.s3.secret_access_key_file")
        s3.caCert = try r.string("store.s3.ca_cert")
        s3.multipartFromMiB = try r.int("store.s3.multipart_from_mib", range: 5...5120) ?? 64
        s3.partMiB = try r.int("store.s3.part_mib", range: 5...5120) ?? 16
        s3.rclone = try r.string("store.s3.rclone") ?? "rclone"
        s3.limitKbps = try r.int("store.s3.limit_kbps", range: 8...100_000_000)
        switch (folder, bucket) {
        case (let folder?, nil): return .folder(folder)
        case (nil, let bucket?):
            guard !bucket.isEmpty, bucket.unicodeScalars.allSatisfy(nameCharacters.contains) else {
                throw ConfigurationError(file: file, line: r.document.values["store.s3.bucket"]?.line, key: "store.s3.bucket",
                                         message: "\"\(bucket)\" is not a bucket name (allowed: letters, digits, '.', '_' and '-')")
            }
            return .s3(s3)
        case (.some, .some):
            throw ConfigurationError(file: file, line: r.document.values["store.folder"]?.line, key: "store",
                                     message: "has both folder and s3.bucket; allowed: one of them")
        case (nil, nil):
            throw ConfigurationError(file: file, line: nil, key: "store",
                                     message: "is required: [store] folder = \"/srv/fleet\", or [store.s3] with bucket (and endpoint, keys)")
        }
    }

    static func readKiosks(_ r: TOMLReader, document: TOMLDocument) throws(ConfigurationError) -> [Kiosk] {
        let defaultKey = try r.string("ssh.key")
        let defaultKnownHosts = try r.string("ssh.known_hosts")
        let defaultPort = try r.int("ssh.port", range: 1...65535)
        let defaultIdentities = try r.strings("collector.age_identities") ?? []
        let names = Set(document.tables.keys.compactMap { table -> String? in
            guard table.hasPrefix("kiosks.") else { return nil }
            let name = String(table.dropFirst("kiosks.".count))
            return name.contains(".") ? nil : name
        }).sorted { (document.tables["kiosks.\($0)"] ?? 0, $0) < (document.tables["kiosks.\($1)"] ?? 0, $1) }
        var kiosks: [Kiosk] = []
        for name in names {
            let at = "kiosks.\(name)"
            let bare = name.hasPrefix("\"") ? String(name.dropFirst().dropLast()) : name
            guard !bare.isEmpty, bare.unicodeScalars.allSatisfy(nameCharacters.contains), bare != ".", bare != ".." else {
                throw ConfigurationError(file: document.file, line: document.tables[at], key: at,
                                         message: "\"\(bare)\" is not a kiosk name (allowed: letters, digits, '.', '_' and '-')")
            }
            var kiosk = Kiosk(name: bare, address: try r.require("\(at).address") { (k) throws(ConfigurationError) in try r.string(k) })
            kiosk.port = try r.int("\(at).port", range: 1...65535) ?? defaultPort
            kiosk.key = try r.string("\(at).key") ?? defaultKey
            kiosk.knownHosts = try r.string("\(at).known_hosts") ?? defaultKnownHosts
            kiosk.identities = try r.strings("\(at).age_identities") ?? defaultIdentities
            kiosk.decrypt = try r.bool("\(at).decrypt") ?? false
            kiosk.limitKbps = try r.int("\(at).limit_kbps", range: 1...10_000_000)
            kiosk.folders = try r.strings("\(at).folders")
            if kiosk.decrypt && kiosk.identities.isEmpty {
                throw ConfigurationError(file: document.file, line: document.values["\(at).decrypt"]?.line, key: "\(at).decrypt",
                                         message: "needs age_identities (here or in [collector]): the identity files that decrypt this kiosk's recordings")
            }
            kiosks.append(kiosk)
        }
        guard !kiosks.isEmpty else {
            throw ConfigurationError(file: document.file, line: nil, key: "kiosks",
                                     message: "no kiosk: add one as [kiosks.NAME] with address = \"obscura-fetch@HOST\"")
        }
        return kiosks
    }
}
