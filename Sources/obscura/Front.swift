import ArgumentParser
import ObscuraCommandLine
import ObscuraSystem

/// `obscura`: the owner's one command. What only talks to the service or
/// reads small files (`status`, `ctl`, `keys`, `view-serve`, `config`, and
/// `doctor` but for its checks of the hardware), `--version` and `--help`
/// run here, in a process that
/// loads neither FFmpeg nor libcamera nor ICU; every other subcommand is
/// handed, as typed, to the engine (`obscura-engine`, EngineHandoff.swift).
@main
enum Front {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if EngineHandoff.belongsToEngine(arguments) { EngineHandoff.run(arguments) }
        do throws(SystemError) { try Syscalls.unblockAllSignals() } catch { Log.note("\(error)") }
        await FrontCommand.main()
    }
}

/// The command tree the front parses: its own subcommands, and the
/// engine's by name and abstract only (for `obscura --help`), in the
/// engine's order (Sources/obscura-engine/Obscura.swift).
struct FrontCommand: AsyncParsableCommand {
    static let configuration = ObscuraProgram.configuration(subcommands: [
        Devices.self, Record.self, Stream.self, GPIO.self, Run.self, StatusCommand.self,
        ControlCommand.self, ConfigCommand.self, DoctorCommand.self, Photo.self, DNG.self, Preview.self,
        Decode.self, KeysCommand.self, Pull.self, Collect.self, View.self, ViewServeCommand.self,
        Encrypt.self, Decrypt.self, Beep.self, Listen.self, Watch.self, TimeCodes.self,
    ])

    // The engine's subcommands, as its help lists them; never run here.
    struct Devices: ParsableCommand { static let configuration = CommandDescriptions.devices }
    struct Record: ParsableCommand { static let configuration = CommandDescriptions.record }
    struct Stream: ParsableCommand { static let configuration = CommandDescriptions.stream }
    struct GPIO: ParsableCommand { static let configuration = CommandDescriptions.gpio }
    struct Run: ParsableCommand { static let configuration = CommandDescriptions.run }
    struct Photo: ParsableCommand { static let configuration = CommandDescriptions.photo }
    struct DNG: ParsableCommand { static let configuration = CommandDescriptions.dng }
    struct Preview: ParsableCommand { static let configuration = CommandDescriptions.preview }
    struct Decode: ParsableCommand { static let configuration = CommandDescriptions.decode }
    struct Pull: ParsableCommand { static let configuration = CommandDescriptions.pull }
    struct Collect: ParsableCommand { static let configuration = CommandDescriptions.collect }
    struct View: ParsableCommand { static let configuration = CommandDescriptions.view }
    struct Encrypt: ParsableCommand { static let configuration = CommandDescriptions.encrypt }
    struct Decrypt: ParsableCommand { static let configuration = CommandDescriptions.decrypt }
    struct Beep: ParsableCommand { static let configuration = CommandDescriptions.beep }
    struct Listen: ParsableCommand { static let configuration = CommandDescriptions.listen }
    struct Watch: ParsableCommand { static let configuration = CommandDescriptions.watch }
    struct TimeCodes: ParsableCommand { static let configuration = CommandDescriptions.timeCodes }
}
