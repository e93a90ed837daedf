#if canImport(Glibc)
import Glibc
#endif
import ObscuraSystem

/// What a shared library says of itself in its dynamic section: its own
/// soname and the sonames it needs. How the camera layer tells which
/// libcamera a file belongs to (a shim, an IPA module, libcamera itself)
/// without loading it.
///
/// Reads 64-bit little-endian ELF (arm64, amd64), through the section
/// headers: the `SHT_DYNAMIC` section and the string table it links to.
public struct ELFDependencies: Sendable, Equatable {
    /// The ELF machine (`EM_AARCH64` 183, `EM_X86_64` 62).
    public let machine: UInt16
    public let soname: String?
    public let needed: [String]

    /// The machine this program runs on, to skip a library built for another.
    public static var hostMachine: UInt16 {
        #if arch(arm64)
        return 183
        #elseif arch(x86_64)
        return 62
        #else
        return 0
        #endif
    }

    /// The file's dependencies, or nil when it is not a 64-bit little-endian
    /// ELF shared object with a dynamic section.
    public static func read(_ path: String) throws(SystemError) -> ELFDependencies? {
        let fd = try Syscalls.open(path, O_RDONLY)
        defer { fd.close() }
        let file = ELFFile(fd: fd.rawValue, path: path)
        let header = try file.bytes(at: 0, count: 64)
        guard header.count == 64, header[0..<4] == [0x7F, 0x45, 0x4C, 0x46],
              header[4] == 2, header[5] == 1 else { return nil }  // ELFCLASS64, ELFDATA2LSB
        let machine = UInt16(header.int(at: 18, size: 2))
        let sectionsAt = header.int(at: 40, size: 8)
        let sectionSize = header.int(at: 58, size: 2)
        let sectionCount = header.int(at: 60, size: 2)
        guard sectionSize >= 64, sectionCount > 0, sectionCount < 4096 else { return nil }
        let table = try file.bytes(at: sectionsAt, count: sectionSize * sectionCount)
        guard table.count == sectionSize * sectionCount else { return nil }
        func section(_ index: Int) -> (type: Int, offset: Int, size: Int, link: Int) {
            let base = index * sectionSize
            return (table.int(at: base + 4, size: 4), table.int(at: base + 24, size: 8),
                    table.int(at: base + 32, size: 8), table.int(at: base + 40, size: 4))
        }
        guard let dynamic = (0..<sectionCount).map(section).first(where: { $0.type == 6 }),  // SHT_DYNAMIC
              dynamic.link < sectionCount, dynamic.size < 1 << 20 else { return nil }
        let strings = section(dynamic.link)
        guard strings.size < 1 << 24 else { return nil }
        let entries = try file.bytes(at: dynamic.offset, count: dynamic.size)
        let names = try file.bytes(at: strings.offset, count: strings.size)
        var soname: String?
        var needed: [String] = []
        for base in stride(from: 0, to: entries.count - 15, by: 16) {
            let tag = entries.int(at: base, size: 8)
            let value = entries.int(at: base + 8, size: 8)
            if tag == 0 { break }                                   // DT_NULL
            guard tag == 1 || tag == 14, value < names.count else { continue }  // DT_NEEDED, DT_SONAME
            let end = names[value...].firstIndex(of: 0) ?? names.count
            let name = String(decoding: names[value..<end], as: UTF8.self)
            if tag == 1 { needed.append(name) } else { soname = name }
        }
        return ELFDependencies(machine: machine, soname: soname, needed: needed)
    }
}

private struct ELFFile {
    let fd: Int32
    let path: String

    func bytes(at offset: Int, count: Int) throws(SystemError) -> [UInt8] {
        guard offset >= 0, count >= 0 else { return [] }
        return try Syscalls.readAt(fd, offset: Int64(offset), count: count, path: path)
    }
}

private extension [UInt8] {
    /// The little-endian unsigned integer of `size` bytes at `offset` (0 past the end).
    func int(at offset: Int, size: Int) -> Int {
        guard offset >= 0, offset + size <= count else { return 0 }
        var value: UInt64 = 0
        for i in (0..<size).reversed() { value = value << 8 | UInt64(self[offset + i]) }
        return Int(truncatingIfNeeded: value)
    }
}
