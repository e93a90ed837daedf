import Foundation
import Testing
import TestSupport

/// The module graph as docs/architecture.md draws it ("## Layers"): every
/// dependency in Package.swift points to a lower layer, and every target
/// declares exactly the modules its sources import.
@Suite struct ModuleGraphTests {
    struct Target {
        var name: String
        var kind: String
        var dependencies: Set<String>
        var path: String
    }

    /// The targets of Package.swift: their names, kinds and dependencies (a
    /// product by its name; `logging` as the module it gives, Logging).
    static func targets() throws -> [Target] {
        let manifest = try String(contentsOfFile: packageRoot + "/Package.swift", encoding: .utf8)
        let target = try NSRegularExpression(pattern: #"\.(target|executableTarget|testTarget)\(name: "([\w-]+)"(?:, dependencies: \[([^\]]*)\])?(?:, path: "([^"]+)")?"#)
        let quoted = try NSRegularExpression(pattern: #"(?:\.product\(name: )?"([\w-]+)"(?:, package: "[\w-]+"\))?|\blogging\b"#)
        return target.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)).map { match in
            func group(_ i: Int) -> String? {
                Range(match.range(at: i), in: manifest).map { String(manifest[$0]) }
            }
            let kind = group(1)!, name = group(2)!, list = group(3) ?? ""
            let names = quoted.matches(in: list, range: NSRange(list.startIndex..., in: list)).map { m -> String in
                Range(m.range(at: 1), in: list).map { String(list[$0]) } ?? "Logging"
            }
            let folder = group(4) ?? (kind == "testTarget" ? "Tests/" : "Sources/") + name
            return Target(name: name, kind: kind, dependencies: Set(names), path: folder)
        }
    }

    /// docs/architecture.md's layers: module → its layer (1 is the bottom).
    static func layers() throws -> [String: Int] {
        let text = try String(contentsOfFile: packageRoot + "/docs/architecture.md", encoding: .utf8)
        guard let heading = text.range(of: "## Layers"), let open = text.range(of: "```\n", range: heading.upperBound..<text.endIndex),
              let close = text.range(of: "```", range: open.upperBound..<text.endIndex) else { return [:] }
        var layers: [String: Int] = [:]
        for line in text[open.upperBound..<close.lowerBound].split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let layer = words.first.flatMap(Int.init) else { continue }
            for module in words.dropFirst() { layers[module] = layer }
        }
        return layers
    }

    @Test func everyDependencyPointsDown() throws {
        let layers = try Self.layers()
        try #require(!layers.isEmpty, "docs/architecture.md has no \"## Layers\" block")
        var found: [String] = []
        for target in try Self.targets() where layers[target.name] != nil || target.name.hasPrefix("Obscura") && target.kind != "testTarget" {
            guard let own = layers[target.name] else {
                found.append("\(target.name) is in no layer of docs/architecture.md")
                continue
            }
            for dependency in target.dependencies.sorted() {
                guard let below = layers[dependency] else { continue }  // C shims, system libraries, packages
                if below >= own { found.append("\(target.name) (layer \(own)) depends on \(dependency) (layer \(below))") }
            }
        }
        #expect(found.isEmpty, "upward or sideways edges:\n\(found.joined(separator: "\n"))")
        // The collector no longer pulls in the kiosk's stack.
        let fleet = try #require(try Self.targets().first { $0.name == "ObscuraFleet" })
        #expect(!fleet.dependencies.contains("ObscuraService"))
    }

    @Test func everyImportIsDeclaredAndEveryDependencyImported() throws {
        let platform: Set<String> = ["Foundation", "FoundationEssentials", "Glibc", "Darwin", "Dispatch", "Synchronization",
                                     "Testing", "XCTest", "_Concurrency"]
        let importLine = try NSRegularExpression(pattern: #"^\s*(?:@testable\s+|@_exported\s+)?import\s+(?:(?:struct|class|enum|func|protocol|typealias)\s+)?(\w+)"#,
                                                 options: .anchorsMatchLines)
        var found: [String] = []
        for target in try Self.targets() {
            let folder = packageRoot + "/" + target.path
            let files = (FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []).filter { $0.hasSuffix(".swift") }
            guard !files.isEmpty else { continue }  // a C target
            var imports = Set<String>()
            for file in files {
                let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
                for m in importLine.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    if let r = Range(m.range(at: 1), in: text) { imports.insert(String(text[r])) }
                }
            }
            let undeclared = imports.subtracting(target.dependencies).subtracting(platform).subtracting([target.name])
            let unused = target.dependencies.subtracting(imports)
            if !undeclared.isEmpty { found.append("\(target.name) imports \(undeclared.sorted()) without declaring them") }
            if !unused.isEmpty { found.append("\(target.name) declares \(unused.sorted()) and imports none of them") }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
