import CCamera
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// One libcamera on the system, by its soname (`libcamera.so.0.7`).
public struct InstalledLibcamera: Sendable, Equatable {
    public let soname: String
    /// Where it was found.
    public let path: String

    public init(soname: String, path: String) {
        self.soname = soname
        self.path = path
    }

    /// The ABI version its soname names ("0.7", or "0.0.3" for Debian 12's).
    public var version: String { CameraLibrary.version(ofSoname: soname) }
}

/// A camera shim (Sources/CCameraShim, built per libcamera ABI) and the
/// libcamera soname it was linked against.
public struct CameraShimFile: Sendable, Equatable {
    public let path: String
    public let libcamera: String

    /// The ABI version of the libcamera it needs ("0.7").
    public var version: String { CameraLibrary.version(ofSoname: libcamera) }

    public init(path: String, libcamera: String) {
        self.path = path
        self.libcamera = libcamera
    }
}

/// The libcamera this process drives and the shim it drives it through.
public struct CameraLayer: Sendable, Equatable, CustomStringConvertible {
    public let libcamera: InstalledLibcamera
    public let shim: String
    /// A warning for the journal: the IPA modules installed belong to another libcamera.
    public let warning: String?

    public var description: String {
        "libcamera \(libcamera.version) (\(libcamera.path)) through the shim \(shim)"
    }
}

public enum CameraLibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    case noLibcamera(lookedIn: [String], shims: [String])
    case noShim(installed: [InstalledLibcamera], shims: [CameraShimFile], lookedIn: [String])
    case shimFailed(libcamera: String, message: String)

    public var description: String {
        switch self {
        case .noLibcamera(let folders, let shims):
            return "no libcamera is installed (no libcamera.so.* in \(folders.joined(separator: ", "))); "
                + "install one this build has a shim for: \(CameraLibrary.list(shims))"
        case .noShim(let installed, let shims, let folders):
            let found = installed.map { "\($0.version) (\($0.path))" }.joined(separator: ", ")
            let wanted = installed.map(\.version).joined(separator: " or ")
            guard !shims.isEmpty else {
                return "libcamera \(found) is installed; this build has no camera shim at all (looked in "
                    + "\(folders.joined(separator: ", "))): reinstall Obscura, or build one for \(wanted)"
            }
            return "libcamera \(found) is installed; this build has shims for \(CameraLibrary.list(shims.map(\.version))) "
                + "(in \(CameraLibrary.folders(of: shims).joined(separator: ", "))): install one of those libcamera "
                + "versions (with its libcamera-ipa), or an Obscura built for \(wanted)"
        case .shimFailed(let version, let message):
            return "the camera shim for libcamera \(version) could not be opened: \(message)"
        }
    }
}

/// Chooses the camera shim for the libcamera that is installed, and opens it.
///
/// libcamera has no stable ABI (each minor release a new soname) and its IPA
/// modules must match the libcamera that loads them. So the program links no
/// libcamera: at the first use of a camera it looks at what the system has
/// (libcamera's sonames, and the one the installed IPA modules were built
/// for), takes the newest libcamera whose IPA modules are installed (else the
/// newest there is) that a shim of this build was linked against, and opens
/// that shim. An upgrade that replaces libcamera is followed at the next
/// start; one this build has no shim for is named in the error.
public enum CameraLibrary {
    /// What the system has.
    public struct Survey: Sendable, Equatable {
        public var installed: [InstalledLibcamera]
        /// Sonames the installed IPA modules need.
        public var ipaLibcameras: Set<String>
        public var shims: [CameraShimFile]
        public var shimFolders: [String]
        public var libraryFolders: [String]

        public init(installed: [InstalledLibcamera], ipaLibcameras: Set<String>, shims: [CameraShimFile],
                    shimFolders: [String], libraryFolders: [String]) {
            self.installed = installed
            self.ipaLibcameras = ipaLibcameras
            self.shims = shims
            self.shimFolders = shimFolders
            self.libraryFolders = libraryFolders
        }
    }

    private static let opened = Mutex<CameraLayer?>(nil)

    /// The layer opened by `load`, if any.
    public static var loaded: CameraLayer? { opened.withLock { $0 } }

    /// Opens the shim for the installed libcamera (once per process; a
    /// failure is looked at afresh on the next call, so installing the
    /// missing libcamera needs no more than a retry).
    public static func load() throws(CameraLibraryError) -> CameraLayer {
        let result = opened.withLock { current -> Result<CameraLayer, CameraLibraryError> in
            if let current { return .success(current) }
            let chosen = choose(survey())
            guard case .success(let layer) = chosen else { return chosen }
            var message = [UInt8](repeating: 0, count: 512)
            let status = message.withUnsafeMutableBufferPointer {
                oc_shim_open(layer.shim, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count)
            }
            guard status == 0 || status == -EALREADY else {
                let text = String(decoding: message.prefix { $0 != 0 }, as: UTF8.self)
                return .failure(.shimFailed(libcamera: layer.libcamera.version, message: text))
            }
            current = layer
            return .success(layer)
        }
        return try result.get()
    }

    /// The choice, from what the system has.
    public static func choose(_ survey: Survey) -> Result<CameraLayer, CameraLibraryError> {
        let shimVersions = survey.shims.map { version(ofSoname: $0.libcamera) }
        guard !survey.installed.isEmpty else {
            return .failure(.noLibcamera(lookedIn: survey.libraryFolders, shims: shimVersions))
        }
        let newestFirst = survey.installed.sorted { isNewer($0.soname, than: $1.soname) }
        let withIPA = newestFirst.filter { survey.ipaLibcameras.contains($0.soname) }
        let withoutIPA = newestFirst.filter { !survey.ipaLibcameras.contains($0.soname) }
        for candidate in withIPA + withoutIPA {
            guard let shim = survey.shims.first(where: { $0.libcamera == candidate.soname }) else { continue }
            var warning: String?
            if !survey.ipaLibcameras.contains(candidate.soname) {
                let others = survey.ipaLibcameras.map(version(ofSoname:)).sorted()
                warning = others.isEmpty
                    ? "no IPA modules are installed for libcamera \(candidate.version) (libcamera-ipa): cameras that need one (Raspberry Pi's, vimc) are not listed"
                    : "the IPA modules installed are libcamera \(others.joined(separator: ", "))'s, not \(candidate.version)'s, which this build has no shim for: cameras that need one (Raspberry Pi's, vimc) are not listed"
            }
            return .success(CameraLayer(libcamera: candidate, shim: shim.path, warning: warning))
        }
        return .failure(.noShim(installed: withIPA + withoutIPA, shims: survey.shims, lookedIn: survey.shimFolders))
    }

    /// Looks at the system: libcamera in the library folders, the IPA
    /// modules beside each, and the shims of this build.
    public static func survey(libraryFolders: [String] = defaultLibraryFolders,
                              shimFolders: [String] = defaultShimFolders) -> Survey {
        var installed: [InstalledLibcamera] = []
        for folder in libraryFolders {
            // The file named by its soname (the link the dynamic linker follows) first.
            for name in entries(folder).sorted(by: { $0.count < $1.count }) where name.hasPrefix("libcamera.so.") {
                let path = folder + "/" + name
                guard let elf = dependencies(path), let soname = elf.soname, soname.hasPrefix("libcamera.so."),
                      !installed.contains(where: { $0.soname == soname }) else { continue }
                installed.append(InstalledLibcamera(soname: soname, path: path))
            }
        }
        var ipa = Set<String>()
        var ipaFolders: [String] = []
        for folder in Set(installed.map { parent($0.path) }) {
            ipaFolders += [folder + "/libcamera", folder + "/libcamera/ipa"]
        }
        ipaFolders += environmentList("LIBCAMERA_IPA_MODULE_PATH")
        for folder in ipaFolders {
            for name in entries(folder) where name.hasPrefix("ipa_") && name.hasSuffix(".so") {
                dependencies(folder + "/" + name)?.needed.filter { $0.hasPrefix("libcamera.so.") }.forEach { ipa.insert($0) }
            }
        }
        var shims: [CameraShimFile] = []
        for folder in shimFolders {
            for name in entries(folder).sorted() where name.hasPrefix("libobscura-camera") && name.contains(".so") {
                let path = folder + "/" + name
                guard let libcamera = dependencies(path)?.needed.first(where: { $0.hasPrefix("libcamera.so.") }),
                      !shims.contains(where: { $0.libcamera == libcamera }) else { continue }
                shims.append(CameraShimFile(path: path, libcamera: libcamera))
            }
        }
        return Survey(installed: installed, ipaLibcameras: ipa, shims: shims,
                      shimFolders: shimFolders, libraryFolders: libraryFolders)
    }

    /// Where the dynamic linker looks on Debian and Raspberry Pi OS, in its
    /// order: LD_LIBRARY_PATH, /usr/local (a libcamera built by hand), the
    /// multiarch folders, then the plain ones; each folder once.
    public static var defaultLibraryFolders: [String] {
        let triplet = multiarchTriplet
        let folders = environmentList("LD_LIBRARY_PATH") + ["/usr/local/lib/\(triplet)", "/usr/local/lib", "/usr/lib/\(triplet)",
                                         "/lib/\(triplet)", "/usr/lib", "/lib"]
        var seen = Set<String>()
        return folders.filter { folder in
            guard let real = try? Syscalls.resolvedPath(folder) else { return false }
            return seen.insert(real).inserted
        }
    }

    /// The shims of this build. OBSCURA_CAMERA_SHIMS (folders, colon-separated)
    /// replaces the search; otherwise the installed layout's (the engine,
    /// `/usr/lib/obscura/obscura-engine` → `/usr/lib/obscura/camera`; a
    /// program in `/usr/bin` → `/usr/lib/obscura/camera`), then the program's
    /// own folder (a `swift build`'s libobscura-camera.so).
    public static var defaultShimFolders: [String] {
        if getenv("OBSCURA_CAMERA_SHIMS") != nil { return environmentList("OBSCURA_CAMERA_SHIMS") }
        guard let program = try? Syscalls.resolvedPath("/proc/self/exe") else { return [] }
        let folder = parent(program)
        return [folder + "/camera", parent(folder) + "/lib/obscura/camera", folder]
    }

    static var multiarchTriplet: String {
        #if arch(arm64)
        return "aarch64-linux-gnu"
        #elseif arch(x86_64)
        return "x86_64-linux-gnu"
        #else
        return ""
        #endif
    }

    /// The folders holding `shims`, in their order.
    static func folders(of shims: [CameraShimFile]) -> [String] {
        var seen: [String] = []
        for folder in shims.map({ parent($0.path) }) where !seen.contains(folder) { seen.append(folder) }
        return seen
    }

    /// "libcamera.so.0.7" → "0.7".
    static func version(ofSoname soname: String) -> String {
        String(soname.dropFirst("libcamera.so.".count))
    }

    static func list(_ versions: [String]) -> String {
        versions.isEmpty ? "none" : versions.sorted { isNewer("libcamera.so." + $1, than: "libcamera.so." + $0) }
            .joined(separator: ", ")
    }

    /// Compares sonames by their version numbers (0.10 is newer than 0.7).
    static func isNewer(_ a: String, than b: String) -> Bool {
        let numbers = { (s: String) in version(ofSoname: s).split(separator: ".").map { Int($0) ?? 0 } }
        return numbers(b).lexicographicallyPrecedes(numbers(a))
    }

    /// A colon-separated list of folders from the environment.
    private static func environmentList(_ name: String) -> [String] {
        guard let value = getenv(name) else { return [] }
        return String(cString: value).split(separator: ":").map(String.init)
    }

    private static func entries(_ folder: String) -> [String] {
        (try? Syscalls.folderEntries(folder)) ?? []
    }

    private static func dependencies(_ path: String) -> ELFDependencies? {
        guard let elf = try? ELFDependencies.read(path), elf.machine == ELFDependencies.hostMachine else { return nil }
        return elf
    }

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
