import Foundation
import Testing
import TestSupport

/// deploy/install into an image being prepared (`--root`): nothing may depend
/// on a service having run before, on the host's accounts or on its /run.
/// (Installing on a first boot is proven on the virtual board, whose own root
/// has never run sshd: ServiceBoardTests.)
@Suite(.serialized) struct InstallTests {
    private func install(_ repo: String, into root: String, _ extra: [String] = []) throws -> ProcessResult {
        try runProgram(repo + "/deploy/install",
                       ["--binary", packageRoot + "/.build/debug/obscura", "--board", "virtual", "--root", root, "--no-start"] + extra)
    }

    private func owner(_ path: String) throws -> (uid: Int, gid: Int, mode: Int) {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return ((attributes[.ownerAccountID] as? NSNumber)?.intValue ?? -1,
                (attributes[.groupOwnerAccountID] as? NSNumber)?.intValue ?? -1,
                (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1)
    }

    @Test func anImageGetsTheServiceItsAccountsAndStateFoldersOwnedByItsOwnUsers() throws {
        let image = try TemporaryDirectory("obscura-image")
        // An image's own user database, with ids the host does not use.
        try FileManager.default.createDirectory(atPath: image.path + "/etc", withIntermediateDirectories: true)
        try "root:x:0:0:root:/root:/bin/bash\n".write(toFile: image.path + "/etc/passwd", atomically: true, encoding: .utf8)
        try "root:x:0:\n".write(toFile: image.path + "/etc/group", atomically: true, encoding: .utf8)
        let result = try install(packageRoot, into: image.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")

        let passwd = try String(contentsOfFile: image.path + "/etc/passwd", encoding: .utf8)
        let account = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("obscura:") }, "\(passwd)")
        let fields = account.split(separator: ":", omittingEmptySubsequences: false)
        let uid = try #require(Int(fields[2])), gid = try #require(Int(fields[3]))
        #expect(passwd.contains("obscura-fetch:"))
        for folder in ["", "/recordings", "/photos", "/incoming"] {
            let state = try owner(image.path + "/var/lib/obscura" + folder)
            #expect(state.uid == uid && state.gid == gid && state.mode == 0o750, "/var/lib/obscura\(folder): \(state)")
        }
        let fm = FileManager.default
        // The owner's command, and the engine it hands the heavy commands to where it looks for it.
        let front = image.path + "/usr/bin/obscura"
        #expect(fm.isExecutableFile(atPath: front) && fm.isExecutableFile(atPath: image.path + "/usr/lib/obscura/obscura-engine"))
        let heavy = try runProgram(front, ["devices", "--help"])  // (the engine's own help: its options)
        #expect(heavy.status == 0 && heavy.stdout.contains("--controls"), "\(heavy.stdout)\(heavy.stderr)")
        for link in ["obscura.service", "srv-obscura-recordings.mount", "srv-obscura-photos.mount", "srv-obscura-media.mount"] {
            let wants = image.path + "/etc/systemd/system/multi-user.target.wants/" + link
            #expect((try? fm.destinationOfSymbolicLink(atPath: wants)) == "/etc/systemd/system/" + link, "\(link) enabled")
        }
        #expect(fm.fileExists(atPath: image.path + "/etc/ssh/sshd_config.d/obscura-fetch.conf"))
        #expect(try String(contentsOfFile: image.path + "/etc/obscura/obscura.toml", encoding: .utf8).contains("board = \"virtual\""))
        #expect(try owner(image.path + "/etc/obscura/fetch_authorized_keys").mode == 0o644)
        // The live view account: a shell only to start its forced command, and the service in its group.
        #expect(passwd.split(separator: "\n").contains { $0.hasPrefix("obscura-view:") && $0.hasSuffix(":/bin/sh") }, "\(passwd)")
        let group = try String(contentsOfFile: image.path + "/etc/group", encoding: .utf8)
        #expect(group.split(separator: "\n").contains { $0.hasPrefix("obscura-view:") && $0.hasSuffix(":obscura") }, "\(group)")
        let viewDropIn = try String(contentsOfFile: image.path + "/etc/ssh/sshd_config.d/obscura-view.conf", encoding: .utf8)
        #expect(viewDropIn.contains("ForceCommand /usr/bin/obscura view-serve --ssh-forced"))
        #expect(try owner(image.path + "/etc/obscura/view_authorized_keys").mode == 0o644)
        // Twice is the same as once: the configuration and the accounts stay.
        let again = try install(packageRoot, into: image.path)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try String(contentsOfFile: image.path + "/etc/passwd", encoding: .utf8) == passwd)
    }

    @Test func aDropInSshdRejectsIsRefusedWithSshdsOwnWordsAndRemoved() throws {
        // A copy of the deploy files whose drop-in has an option sshd does not know.
        let repo = try TemporaryDirectory("obscura-repo")
        let fm = FileManager.default
        try fm.createDirectory(atPath: repo.path + "/board", withIntermediateDirectories: true)
        for folder in ["deploy", "board/profiles"] {
            let copied = try runProgram("/bin/cp", ["-a", packageRoot + "/" + folder, repo.path + "/" + folder])
            try #require(copied.status == 0, "\(copied.stderr)")
        }
        try fm.copyItem(atPath: packageRoot + "/README.md", toPath: repo.path + "/README.md")
        let dropIn = repo.path + "/deploy/sshd-obscura-fetch.conf"
        try (try String(contentsOfFile: dropIn, encoding: .utf8) + "    NoSuchOption yes\n")
            .write(toFile: dropIn, atomically: true, encoding: .utf8)
        let image = try TemporaryDirectory("obscura-image")
        let result = try install(repo.path, into: image.path)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        // sshd's own message names the line and the option.
        #expect(result.stderr.contains("install: sshd rejects its configuration"), "\(result.stderr)")
        #expect(result.stderr.contains("line 21: Bad configuration option: NoSuchOption"), "\(result.stderr)")
        #expect(!fm.fileExists(atPath: image.path + "/etc/ssh/sshd_config.d/obscura-fetch.conf"))
        #expect(!fm.fileExists(atPath: image.path + "/etc/systemd/system/multi-user.target.wants/obscura.service"),
                "nothing is enabled after a refusal")
    }
}
