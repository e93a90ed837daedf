import ArgumentParser

/// The `obscura` command itself: what its help says, its version, and which
/// subcommands the front runs itself (the light ones: no FFmpeg, libcamera
/// or ICU in their process) rather than handing them to the engine.
public enum ObscuraProgram {
    /// The version `obscura --version` prints (and the package's, before
    /// its build suffix).
    public static let version = "0.1.0"

    /// The subcommands the front runs itself.
    public static let lightCommands: Set<String> = ["status", "ctl", "keys", "view-serve", "config", "doctor"]

    /// The root command's configuration, with the subcommands an executable holds.
    public static func configuration(subcommands: [any ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "obscura",
            abstract: "A camera recorder for single-board Linux computers.",
            discussion: """
            On a kiosk, `obscura run` is the recorder service (obscura.service, started at boot): \
            the record, photo and flash buttons, the LEDs, loop recording to the card or a USB drive, \
            the health of the picture and the microphone, and a control socket. `obscura status` \
            shows what it is doing and `obscura ctl` tells it what to do. Its configuration is \
            /etc/obscura/obscura.toml (every key: `obscura config`, or obscura.toml(5)). \
            Recordings are fetched over SSH by the obscura-fetch account (`obscura keys`, `obscura pull`, \
            `obscura collect`). The other subcommands work on their own: record a clip, take a photo, \
            list the cameras, preview, watch the GPIO lines. The documents in /usr/share/doc/obscura \
            say more.
            """,
            version: version,
            subcommands: subcommands)
    }
}
