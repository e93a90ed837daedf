import ObscuraCommandLine
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Which command lines the engine runs, and handing them over: the engine
/// replaces this process (execv: the same process id, so systemd's
/// `Type=notify` and its watchdog see the service they started).
enum EngineHandoff {
    /// All but the front's own subcommands, `--version`, and help about the
    /// front's own (`obscura`, `obscura --help`, `obscura help status`).
    /// Unknown words go to the engine too, which says what is allowed; so do
    /// ArgumentParser's own requests (completions, `--experimental-dump-help`).
    static func belongsToEngine(_ arguments: [String]) -> Bool {
        guard let first = arguments.first else { return false }
        if ObscuraProgram.lightCommands.contains(first) || first == "--version" { return false }
        if ["help", "-h", "--help"].contains(first) {
            return arguments.count > 1 && !ObscuraProgram.lightCommands.contains(arguments[1])
        }
        return true
    }

    /// Where the engine is: beside this program (a build's folder), or as
    /// installed (`/usr/bin/obscura` → `/usr/lib/obscura/obscura-engine`).
    static func candidates() -> [String] {
        guard let program = try? Syscalls.resolvedPath("/proc/self/exe") else { return [] }
        let folder = parent(program)
        return [folder + "/obscura-engine", parent(folder) + "/lib/obscura/obscura-engine"]
    }

    static func run(_ arguments: [String]) -> Never {
        let name = CommandLine.arguments.first ?? "obscura"
        let paths = candidates()
        for path in paths where (try? Syscalls.checkAccess(path, X_OK)) != nil {
            do throws(SystemError) {
                try Syscalls.execute(path, [name] + arguments)
            } catch {
                Log.note("error: cannot start the engine for `obscura \(arguments[0])`: \(error)")
                exit(EXIT_FAILURE)
            }
        }
        Log.note("error: `obscura \(arguments[0])` runs in obscura-engine, which is not installed: looked for "
                 + paths.joined(separator: " and ") + " (reinstall the obscura package)")
        exit(EXIT_FAILURE)
    }

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
