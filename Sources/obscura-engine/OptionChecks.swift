import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraAge
import ObscuraMedia
import ObscuraSystem

/// Checks of option values that are not plain numbers, made in `validate()`
/// (before anything starts): each error names the option, the value given and
/// what is allowed. Numbers are checked against `Limits` (ObscuraSystem), the
/// table the service's configuration shares.
enum Options {
    /// Runs a command's checks; a refused value becomes a usage error.
    static func check(_ body: () throws -> Void) throws {
        do { try body() } catch let error as LimitError {
            throw ValidationError(error.description)
        } catch let error as UserFacingError {
            throw ValidationError(error.description)
        }
    }

    /// One of `allowed`.
    @discardableResult
    static func choice(_ value: String, _ allowed: [String], _ name: String) throws -> String {
        guard allowed.contains(value) else {
            throw UserFacingError("\(name): \"\(value)\" is not allowed; allowed: \(allowed.joined(separator: ", "))")
        }
        return value
    }

    /// WIDTHxHEIGHT, each side within `Limits.pictureSide` (and even when asked).
    static func size(_ text: String, _ name: String, even: Bool = false) throws -> PixelSize {
        guard let size = PixelSize(parsing: text) else {
            throw UserFacingError("\(name): cannot read \"\(text)\"; write WIDTHxHEIGHT, e.g. 1280x720")
        }
        try Limits.pictureSide.check(size.width, "\(name) width")
        try Limits.pictureSide.check(size.height, "\(name) height")
        if even, size.width % 2 != 0 || size.height % 2 != 0 {
            throw UserFacingError("\(name): \(text) has an odd side; a Bayer picture's sides are even")
        }
        return size
    }

    /// A pixel format Obscura knows, by its name or fourcc (BGR888 or BG24).
    static func fourcc(_ text: String, _ name: String) throws -> PixelFormat {
        guard let format = PixelFormat.named(text) else {
            throw UserFacingError("\(name): \"\(text)\" is not a pixel format this program knows; allowed (by name or fourcc): \(PixelFormat.knownNames)")
        }
        return format
    }

    /// A file to be read: it exists and is not a folder.
    static func inputFile(_ path: String, _ name: String) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue else {
            throw UserFacingError("\(name): there is no file \"\(path)\"")
        }
    }

    /// A file to be written: a name ending in one of `extensions`, not a
    /// folder, in a folder that exists and may be written.
    static func outputFile(_ path: String, _ name: String, extensions: [String]?) throws {
        guard !path.isEmpty else { throw UserFacingError("\(name): no file named") }
        let ext = (path as NSString).pathExtension.lowercased()
        if let extensions, !extensions.contains(ext) {
            throw UserFacingError("\(name): \"\(path)\" must end in \(extensions.map { "." + $0 }.joined(separator: ", ")) for what is written there")
        }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw UserFacingError("\(name): \(path) is a folder; name a file in it")
        }
        // The folder it goes in ("." for a bare name; NSString's
        // deletingLastPathComponent traps on a one-character name here).
        let parent = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard FileManager.default.fileExists(atPath: parent, isDirectory: &isFolder), isFolder.boolValue else {
            throw UserFacingError("\(name): the folder \(parent) does not exist")
        }
        do { try Syscalls.checkAccess(parent, W_OK) } catch {
            throw UserFacingError("\(name): the folder \(parent) cannot be written (\(error))")
        }
    }

    /// Age recipients from `--recipient` (each `age1…`) and a
    /// `--recipients-file` (one per line, as `age -R` reads it); empty: none.
    static func recipients(_ given: [String], file: String?) throws -> [AgeRecipient] {
        var recipients: [AgeRecipient] = []
        for text in given {
            do { recipients.append(try AgeRecipient(text)) } catch {
                throw UserFacingError("--recipient: \(error)")
            }
        }
        if let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw UserFacingError("--recipients-file: cannot read \(file) (\(String(cString: strerror(errno))))")
            }
            do { recipients += try AgeRecipient.parseFile(text, name: file) } catch {
                throw UserFacingError("--recipients-file: \(error)")
            }
        }
        return recipients
    }

    /// An output named for encryption (`.age` at the end) exactly when there
    /// are recipients; gives the name without `.age`.
    static func encryptedName(_ path: String, _ name: String, encrypted: Bool) throws -> String {
        let sealed = path.lowercased().hasSuffix(".age")
        if encrypted, !sealed {
            throw UserFacingError("\(name): an encrypted file's name ends in .age (\(path).age), not \"\(path)\"")
        }
        if !encrypted, sealed {
            throw UserFacingError("\(name): \"\(path)\" names an encrypted file (.age); give --recipient or --recipients-file to encrypt to")
        }
        return sealed ? String(path.dropLast(4)) : path
    }
}
