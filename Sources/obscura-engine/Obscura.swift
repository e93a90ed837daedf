import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraCamera
import ObscuraSystem

@main
struct Obscura: AsyncParsableCommand {
    /// Every subcommand, in the order the front's help lists them (its
    /// own and this engine's: Sources/obscura/Front.swift).
    static let configuration = ObscuraProgram.configuration(subcommands: [
        DevicesCommand.self, RecordCommand.self, StreamCommand.self, GPIOCommand.self, RunCommand.self, StatusCommand.self,
        ControlCommand.self, ConfigCommand.self, DoctorCommand.self, PhotoCommand.self, DNGCommand.self, PreviewCommand.self,
        DecodeCommand.self, KeysCommand.self, PullCommand.self, CollectCommand.self, ViewCommand.self, ViewServeCommand.self,
        EncryptCommand.self, DecryptCommand.self, BeepCommand.self, ListenCommand.self, WatchCommand.self, TimeCodesCommand.self,
    ])

    /// ArgumentParser's main, with the signal mask and the environment set
    /// first, while the program has no other thread: signals unblocked
    /// whatever the parent's thread blocked (SIGTERM and Ctrl-C must work).
    /// The process is named `obscura` as the front that started it was
    /// (ps, pgrep, the journal), not after the engine's file.
    static func main() async {
        do throws(SystemError) { try Syscalls.unblockAllSignals() } catch { Log.note("\(error)") }
        Syscalls.nameProcess("obscura")
        CameraManager.quietLibcameraByDefault()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
